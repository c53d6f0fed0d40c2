import { crdFacts, BUILT_IN_RESOURCES } from './reads';
import { Application } from '../../imports/argocd-application-argoproj.io';
import { ClusterPolicy } from '../../imports/gpu-operator-nvidia.com';
import { ClusterQueue, ClusterQueueV1Beta2 } from '../../imports/kueue-clusterqueue-kueue.x-k8s.io';
import { LocalQueue, LocalQueueV1Beta2 } from '../../imports/kueue-localqueue-kueue.x-k8s.io';
import { ResourceFlavor, ResourceFlavorV1Beta2 } from '../../imports/kueue-resourceflavor-kueue.x-k8s.io';
import { WorkloadPriorityClass, WorkloadPriorityClassV1Beta2 } from '../../imports/kueue-workloadpriorityclass-kueue.x-k8s.io';
import { NicClusterPolicy } from '../../imports/network-operator-mellanox.com';
import { InputError, printable } from '../errors';
import { isJsonObject } from '../json';
import { parseQuantity } from '../model/quantity';
import { MAX_NODES } from '../model/schema-types';
import { apiGroup, describeObject, Manifest } from '../render/manifest';

/*
 * What a cluster state may hold: Kubernetes objects the rules can read as they are. A snapshot is
 * a file anyone can edit and a server may answer anything; what the rules would misread (an API
 * version they do not know, a node field of the wrong type, the same object twice) is bad input.
 */

/**
 * A cluster state with more Nodes than a reader takes (init: MAX_NODES, the most a description describes and the
 * largest cluster Kubernetes supports), found while it is read: refused before anything looks at the nodes (init's
 * work grows with them), whatever the size limit of the snapshot lets through.
 */
export function nodeLimitExceeded(where: string, max: number): InputError {
  const what = max === MAX_NODES ? `${MAX_NODES} Nodes, the largest cluster Kubernetes supports and a description describes` : `${max} Nodes`;
  return new InputError(`${where}: more than ${what}: is this one cluster? Read it in parts (kubectl get nodes -l ... -o yaml) or check the snapshot`);
}

/** An object with where it was read (`snapshot.yaml: document 2, items[3]`), for messages. */
export interface ReadObject {
  readonly object: Manifest;
  readonly where: string;
}

/** `group/version` or `version`, as Kubernetes spells them. */
const API_VERSION = /^(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?v[1-9][0-9]*(?:(?:alpha|beta)[1-9][0-9]*)?$/;

function quoted(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return printable(s.length > 60 ? `${s.slice(0, 57)}...` : s);
}

/** What is wrong with a map of strings (labels, annotations), or undefined. */
function stringMapProblem(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isJsonObject(v)) return `${field}: expected a mapping of strings, got ${quoted(v)}`;
  const bad = Object.entries(v).find(([, x]) => typeof x !== 'string');
  return bad ? `${field}.${printable(bad[0])}: expected a string, got ${quoted(bad[1])}` : undefined;
}

/** What the node rules read of a Node: taints and allocatable quantities. */
function nodeProblem(o: Record<string, unknown>): string | undefined {
  const spec = o.spec;
  const taints = isJsonObject(spec) ? spec.taints : undefined;
  if (taints !== undefined && taints !== null) {
    if (!Array.isArray(taints)) return `spec.taints: expected a list, got ${quoted(taints)}`;
    const i = taints.findIndex((t) => !isJsonObject(t) || typeof t.key !== 'string' || typeof t.effect !== 'string' || !(t.value === undefined || typeof t.value === 'string'));
    if (i >= 0) return `spec.taints[${i}]: expected key, effect (and value) strings, got ${quoted(taints[i])}`;
  }
  const status = o.status;
  const alloc = isJsonObject(status) ? status.allocatable : undefined;
  if (alloc !== undefined && alloc !== null) {
    if (!isJsonObject(alloc)) return `status.allocatable: expected a mapping of quantities, got ${quoted(alloc)}`;
    for (const [k, v] of Object.entries(alloc)) {
      let ok = typeof v === 'string' || typeof v === 'number';
      try {
        if (ok) ok = parseQuantity(v as string | number) >= 0;
      } catch {
        ok = false;
      }
      if (!ok) return `status.allocatable.${printable(k)}: expected a quantity such as "8" or "1800Gi", got ${quoted(v)}`;
    }
  }
  return undefined;
}

/**
 * A value read from a cluster state as a Kubernetes object: apiVersion, kind and metadata.name
 * strings, labels and annotations of strings, and for Nodes the fields the rules compute with.
 * Throws bad input naming `where` and the field.
 */
export function asStateObject(v: unknown, where: string): Manifest {
  if (!isJsonObject(v)) throw new InputError(`${where}: not a Kubernetes object (expected a mapping, got ${quoted(v)})`);
  const meta = v.metadata;
  if (typeof v.apiVersion !== 'string' || typeof v.kind !== 'string' || !isJsonObject(meta) || typeof meta.name !== 'string') {
    throw new InputError(`${where}: not a Kubernetes object (apiVersion, kind and metadata.name are required)`);
  }
  if (!API_VERSION.test(v.apiVersion)) throw new InputError(`${where}: apiVersion ${quoted(v.apiVersion)} is not a Kubernetes API version (group/version, e.g. apps/v1)`);
  const what = `${where} (${printable(v.kind)} ${printable(meta.name)})`;
  if (meta.namespace !== undefined && typeof meta.namespace !== 'string') throw new InputError(`${what}: metadata.namespace: expected a string, got ${quoted(meta.namespace)}`);
  const problem = stringMapProblem(meta.labels, 'metadata.labels') ?? stringMapProblem(meta.annotations, 'metadata.annotations')
    ?? (v.kind === 'Node' && v.apiVersion === 'v1' ? nodeProblem(v) : undefined);
  if (problem) throw new InputError(`${what}: ${problem}`);
  return v as unknown as Manifest;
}

/**
 * API versions of the custom kinds the rules interpret, from the typed imports of the pinned CRDs:
 * without the CRD in the state, an object of another version is not read as if it were one of these.
 */
const INTERPRETED_CUSTOM_VERSIONS: ReadonlyMap<string, readonly string[]> = (() => {
  const out = new Map<string, string[]>();
  for (const t of [ClusterQueue, ClusterQueueV1Beta2, LocalQueue, LocalQueueV1Beta2, ResourceFlavor, ResourceFlavorV1Beta2,
    WorkloadPriorityClass, WorkloadPriorityClassV1Beta2, ClusterPolicy, NicClusterPolicy, Application]) {
    const key = `${apiGroup(t.GVK.apiVersion)}/${t.GVK.kind}`;
    out.set(key, [...(out.get(key) ?? []), t.GVK.apiVersion]);
  }
  return out;
})();

/**
 * Refuses objects whose API version the state's API does not serve: a custom kind in a version its
 * CRD (in the same state) does not serve, a built-in kind in another version than Kubernetes serves
 * (`v2` Nodes), an interpreted custom kind without its CRD in a version the pinned CRDs lack.
 */
export function checkApiVersions(objects: readonly ReadObject[]): void {
  const crds = new Map<string, { name: string; served: readonly string[] }>();
  for (const { object } of objects) {
    if (object.kind !== 'CustomResourceDefinition' || apiGroup(object.apiVersion) !== 'apiextensions.k8s.io') continue;
    const f = crdFacts(object);
    if (f) crds.set(`${f.group}/${f.kind}`, { name: object.metadata.name, served: f.served.map((v) => `${f.group}/${v}`) });
  }
  for (const { object, where } of objects) {
    const group = apiGroup(object.apiVersion);
    const key = `${group}/${object.kind}`;
    const crd = crds.get(key);
    const builtIn = BUILT_IN_RESOURCES.find((b) => b.group === group && b.kind === object.kind);
    const known = crd ? crd.served
      : builtIn ? [builtIn.group === '' ? builtIn.version : `${builtIn.group}/${builtIn.version}`]
        : group === '' ? ['v1']
          : INTERPRETED_CUSTOM_VERSIONS.get(key);
    if (!known || known.includes(object.apiVersion)) continue;
    const servedBy = crd ? `the CRD ${printable(crd.name)} in the same state serves ${known.join(', ') || 'no version'}` : `Kubernetes serves ${printable(object.kind)} as ${known.join(', ')}`;
    throw new InputError(`${where}: ${printable(describeObject(object))} has apiVersion ${printable(object.apiVersion)}, but ${servedBy}; `
      + 'take the snapshot again with kubectl (it writes the served version) instead of editing it');
  }
}

/** Refuses an object given twice (same group, kind, namespace and name): which of the two is the cluster's? */
export function checkDuplicates(objects: readonly ReadObject[]): void {
  const first = new Map<string, string>();
  for (const { object, where } of objects) {
    const id = `${apiGroup(object.apiVersion)}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    const seen = first.get(id);
    if (seen !== undefined) {
      throw new InputError(`${where}: ${printable(describeObject(object))} is given twice (first at ${seen}): `
        + 'a snapshot holds each object once; take it again into an empty file (kubectl get ... -o yaml > snapshot.yaml)');
    }
    first.set(id, where);
  }
}
