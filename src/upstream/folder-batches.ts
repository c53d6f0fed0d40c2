import { lstatSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { readYamlInput } from '../input/read';
import { isJsonObject } from '../json';
import { apiGroup } from '../render/manifest';
import { ReadFile } from '../render/tree';

/**
 * How the folders of a tree are shared out to kustomize runs. kustomize's build time grows with the square of
 * the objects it holds (it compares each resource's id with every one it holds already: the 2,800 objects of a
 * 400-tenant folder take 20 s of CPU in one run), and each run costs some 80 ms to start: measured on two cores,
 * a run costs 2 ms per object at 50 objects, 1.05-1.15 ms at 200-400, 1.8 ms at 600 and 2.9 ms at 900. So a run
 * builds about BATCH_OBJECTS objects: several small folders together, a large folder in parts.
 *
 * A folder is built in parts only when its kustomization is nothing but a list of the folder's own files (what
 * synth writes): then its build is the union of the builds of any partition of that list, as long as no two
 * objects kustomize could take for the same resource are in different parts (there kustomize itself refuses
 * the duplicate). Each part is a copy of its files, the bytes the check read, with a kustomization of the same
 * apiVersion and kind listing them. Any other kustomization is built whole.
 */

/** About the cheapest number of objects per kustomize run (start-up against the quadratic part). */
export const BATCH_OBJECTS = 250;

/** The file names kustomize reads a folder's kustomization from (it refuses a folder with more than one). */
const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

/** A list entry synth writes: a file of the folder itself, by name. */
const PLAIN_ENTRY = /^[A-Za-z0-9][A-Za-z0-9._-]*\.ya?ml$/;

/** Built-in kinds that are namespaced in every Kubernetes version kustomize knows. */
const NAMESPACED_BUILTIN = new Set([
  'ConfigMap', 'Secret', 'Service', 'ServiceAccount', 'Pod', 'PodTemplate', 'PersistentVolumeClaim', 'ResourceQuota', 'LimitRange',
  'Endpoints', 'EndpointSlice', 'ReplicationController', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'ControllerRevision',
  'Job', 'CronJob', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'Role', 'RoleBinding', 'NetworkPolicy', 'Ingress', 'Lease',
]);

/** The API groups of Kubernetes' own kinds (kustomize knows their scope); any other group is a custom resource's. */
const BUILTIN_GROUP = /^(|apps|batch|policy|autoscaling|extensions|k8s\.io|.+\.k8s\.io)$/;

/**
 * What kustomize could take for the same resource as another object: a kind that is namespaced for certain
 * (kustomize treats the kinds it does not know, custom resources, as namespaced), by kind, namespace ("" is
 * "default") and name; any other (cluster-scoped, or a built-in kind of uncertain scope) by kind and name, in
 * whichever namespace. Two objects with the same key are built in the same part.
 */
function resourceKey(doc: Record<string, unknown>): string | undefined {
  const { apiVersion, kind, metadata } = doc;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !isJsonObject(metadata) || typeof metadata.name !== 'string') return undefined;
  // a List is expanded into items whose names this does not see
  if (kind.endsWith('List')) return undefined;
  const namespaced = BUILTIN_GROUP.test(apiGroup(apiVersion)) ? NAMESPACED_BUILTIN.has(kind) : true;
  if (!namespaced) return `${kind}\0\0${metadata.name}`;
  const ns = typeof metadata.namespace === 'string' && metadata.namespace !== '' ? metadata.namespace : 'default';
  return `${kind}\0${ns}\0${metadata.name}`;
}

/** One part of a folder built on its own: its files by name (as listed) with their bytes. */
export interface FolderPart {
  readonly files: readonly { readonly name: string; readonly bytes: Buffer }[];
  readonly objects: number;
}

/** How one folder is built: whole (its own kustomization), or in parts (a kustomization of the same apiVersion and kind per part). */
export type FolderPlan =
  | { readonly kind: 'whole'; readonly objects: number }
  | { readonly kind: 'parts'; readonly header: Readonly<Record<string, unknown>>; readonly parts: readonly FolderPart[] };

/**
 * The plan of one folder whose manifest files the caller read (`files`, by path relative to the folder): in
 * parts when it is larger than BATCH_OBJECTS and its kustomization lists only its own files, each once, whole
 * otherwise (and whenever anything is unusual: kustomize then says what it thinks of it).
 */
export function planFolder(dir: string, files: ReadonlyMap<string, ReadFile>): FolderPlan {
  const objects = [...files.values()].reduce((n, f) => n + f.inputs.length, 0);
  const whole: FolderPlan = { kind: 'whole', objects };
  if (objects <= BATCH_OBJECTS) return whole;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return whole;
  }
  const found = KUSTOMIZATION_FILES.filter((k) => names.includes(k));
  if (found.length !== 1) return whole;
  let doc: unknown;
  try {
    [doc] = readYamlInput(path.join(dir, found[0]), 'tree', false);
  } catch {
    return whole;
  }
  if (!isJsonObject(doc) || Object.keys(doc).some((k) => !['apiVersion', 'kind', 'resources'].includes(k))) return whole;
  const { apiVersion, kind, resources } = doc;
  if ((apiVersion !== undefined && apiVersion !== 'kustomize.config.k8s.io/v1beta1') || (kind !== undefined && kind !== 'Kustomization')) return whole;
  if (!Array.isArray(resources) || resources.length === 0) return whole;
  const listed = resources.filter((r): r is string => typeof r === 'string' && PLAIN_ENTRY.test(r) && !KUSTOMIZATION_FILES.includes(r));
  if (listed.length !== resources.length || new Set(listed).size !== listed.length) return whole;
  const read = listed.map((name) => files.get(name));
  if (read.some((f) => f === undefined || f.inputs.length === 0)) return whole;
  // a link, even one inside the folder, is left to kustomize's own rules about where it may read
  try {
    if (listed.some((name) => !lstatSync(path.join(dir, name)).isFile())) return whole;
  } catch {
    return whole;
  }

  // files that hold objects kustomize could take for one another stay together (union-find over their keys)
  const parent = listed.map((_, i) => i);
  const root = (i: number): number => (parent[i] === i ? i : (parent[i] = root(parent[i])));
  const owner = new Map<string, number>();
  for (let i = 0; i < read.length; i++) {
    for (const input of read[i]!.inputs) {
      const key = isJsonObject(input.manifest) ? resourceKey(input.manifest as unknown as Record<string, unknown>) : undefined;
      if (key === undefined) return whole;
      const first = owner.get(key);
      if (first === undefined) owner.set(key, i);
      else parent[root(i)] = root(first);
    }
  }
  const groups = new Map<number, number[]>();
  for (let i = 0; i < listed.length; i++) groups.set(root(i), [...(groups.get(root(i)) ?? []), i]);
  const parts: FolderPart[] = [];
  let current: number[] = [];
  let count = 0;
  const close = () => {
    if (current.length === 0) return;
    current.sort((a, b) => a - b);
    parts.push({ files: current.map((i) => ({ name: listed[i], bytes: read[i]!.bytes })), objects: count });
    current = [];
    count = 0;
  };
  for (const members of groups.values()) {
    const size = members.reduce((n, i) => n + read[i]!.inputs.length, 0);
    if (count > 0 && count + size > BATCH_OBJECTS) close();
    current.push(...members);
    count += size;
  }
  close();
  if (parts.length < 2) return whole;
  return { kind: 'parts', header: { ...(apiVersion !== undefined ? { apiVersion } : {}), ...(kind !== undefined ? { kind } : {}) }, parts };
}

/** One piece of a kustomize run: a folder built whole, or one part of a folder. */
export interface Piece {
  readonly dir: string;
  readonly part?: FolderPart;
  readonly objects: number;
}

/** The pieces of the planned folders shared out to runs of about BATCH_OBJECTS objects each, in order. */
export function batchPieces(plans: ReadonlyArray<{ readonly dir: string; readonly plan: FolderPlan }>): Piece[][] {
  const pieces: Piece[] = plans.flatMap(({ dir, plan }) => (plan.kind === 'whole'
    ? [{ dir, objects: plan.objects }]
    : plan.parts.map((part) => ({ dir, part, objects: part.objects }))));
  const batches: Piece[][] = [];
  let current: Piece[] = [];
  let count = 0;
  for (const p of pieces) {
    if (current.length > 0 && count + p.objects > BATCH_OBJECTS) {
      batches.push(current);
      current = [];
      count = 0;
    }
    current.push(p);
    count += p.objects;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
