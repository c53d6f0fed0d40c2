import { ClientFile } from './client-files';
import { ClusterModel } from '../model/model';

/** A rendered Kubernetes object, as plain JSON. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly [key: string]: unknown;
  };
  readonly [key: string]: unknown;
}

/** The API group of an apiVersion (`""` for core). */
export function apiGroup(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i < 0 ? '' : apiVersion.slice(0, i);
}

/** Identity of an object in a cluster: group, kind, namespace, name (the version does not matter). */
export function objectId(m: Manifest): string {
  const ns = m.metadata?.namespace;
  return `${apiGroup(m.apiVersion)}/${m.kind}/${ns ? `${ns}/` : ''}${m.metadata?.name}`;
}

/** Human-readable reference for messages: `ClusterQueue research`, `LocalQueue default/research`. */
export function describeObject(m: Manifest): string {
  const ns = m.metadata?.namespace;
  return `${m.kind} ${ns ? `${ns}/` : ''}${m.metadata?.name}`;
}

/**
 * Apply order: what others depend on first (the order kustomize and kubectl users expect);
 * everything else after, by kind name.
 */
const KIND_ORDER = [
  'Namespace', 'CustomResourceDefinition', 'PriorityClass', 'StorageClass', 'ServiceAccount', 'ClusterRole',
  'ClusterRoleBinding', 'Role', 'RoleBinding', 'ConfigMap', 'Secret', 'Service', 'Deployment', 'DaemonSet', 'StatefulSet',
  'Job', 'CronJob',
];

function kindRank(kind: string): number {
  const i = KIND_ORDER.indexOf(kind);
  return i < 0 ? KIND_ORDER.length : i;
}

/** Deterministic order of objects: apply order of kinds, then kind, namespace, name. */
export function compareManifests(a: Manifest, b: Manifest): number {
  return kindRank(a.kind) - kindRank(b.kind)
    || cmp(a.kind, b.kind)
    || cmp(a.metadata.namespace ?? '', b.metadata.namespace ?? '')
    || cmp(a.metadata.name, b.metadata.name)
    || cmp(a.apiVersion, b.apiVersion);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * File name of an object inside its component folder: `<kind>.<name>.yaml`, or
 * `<kind>.<namespace>.<name>.yaml` for namespaced objects (namespaces never contain dots).
 */
export function manifestFileName(m: Manifest): string {
  const kind = m.kind.toLowerCase();
  const ns = m.metadata.namespace;
  return ns ? `${kind}.${ns}.${m.metadata.name}.yaml` : `${kind}.${m.metadata.name}.yaml`;
}

/** The objects of one component folder of a cluster, in deterministic order. */
export interface RenderedFolder {
  readonly folder: string;
  readonly description: string;
  readonly objects: readonly Manifest[];
}

/** One cluster, rendered in memory. */
export interface RenderedCluster {
  readonly name: string;
  readonly model: ClusterModel;
  readonly folders: readonly RenderedFolder[];
  /** Files for the user's machine under dist/<cluster>/tutorials/, sorted by path (absent: none). */
  readonly clientFiles?: readonly ClientFile[];
}

/** An object to validate, with where it came from. */
export interface ValidationInput {
  readonly manifest: Manifest;
  readonly source?: string;
}
