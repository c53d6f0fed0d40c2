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

/** Whether an object is a CustomResourceDefinition (of any version of apiextensions.k8s.io). */
export const isCrd = (m: { readonly apiVersion?: unknown; readonly kind?: unknown }): boolean =>
  m.kind === 'CustomResourceDefinition' && apiGroup(String(m.apiVersion)) === 'apiextensions.k8s.io';

/** The kind a CustomResourceDefinition defines (spec.group, spec.names.kind; '' when absent); undefined for any other object. */
export function definedKind(m: Manifest): { readonly group: string; readonly kind: string } | undefined {
  if (!isCrd(m)) return undefined;
  const spec = m.spec as { group?: unknown; names?: { kind?: unknown } } | undefined;
  return { group: typeof spec?.group === 'string' ? spec.group : '', kind: typeof spec?.names?.kind === 'string' ? spec.names.kind : '' };
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

/** A kustomize patch with a target selector (`patches:` entry of a kustomization). */
export interface KustomizePatch {
  readonly target: Readonly<Record<string, string>>;
  /** A JSON 6902 patch (JSON) or a strategic-merge patch (YAML). */
  readonly patch: string;
}

/**
 * What a folder's kustomization.yaml holds besides its own object files: upstream bases it builds on, and patches
 * of their objects (the argocd folder: Argo CD's install at its release tag, placed on the service node). Synth runs
 * no engine, so what the bases create that the folder's files do not show is declared here (`footprint`) for the
 * Argo CD wiring; `check` builds the folder with kustomize over the vendored bases and compares.
 */
export interface FolderKustomization {
  /**
   * Bases, listed before the folder's object files: remote (`https://github.com/<org>/<repo>//<path>?ref=<tag>`, or a
   * mirror's URL), or a folder of the vendored copy (`vendored`).
   */
  readonly bases: readonly string[];
  /** The namespace kustomize gives every namespaced object (the bases' objects name none). */
  readonly namespace?: string;
  /**
   * The folder's objects that are strategic-merge patches of the bases' objects, not resources: their file names and
   * the object each patches (a target: kustomize patches before it sets the namespace, which the bases' objects lack).
   */
  readonly patchFiles: readonly { readonly file: string; readonly target: Readonly<Record<string, string>> }[];
  /** Patches with a target selector. */
  readonly patches: readonly KustomizePatch[];
  /**
   * A verbatim copy of an upstream tree written into the folder (its bases are in it): `into`, relative to the folder
   * (under VENDORED_FOLDER), gets every file of `from`, the package's copy of the release.
   */
  readonly vendored?: { readonly into: string; readonly from: string };
  /** Images the kustomization renames (kustomize `images`: a mirror's registry for the bases' images). */
  readonly images?: readonly { readonly name: string; readonly newName: string }[];
  /** What the bases create besides the folder's objects. */
  readonly footprint: {
    /** Cluster-scoped kinds (`group`, `kind`; core group ""). */
    readonly clusterKinds: readonly { readonly group: string; readonly kind: string }[];
    /** Compact JSON size of the largest object the build applies. */
    readonly largestObjectBytes: number;
    /** The kinds its CustomResourceDefinitions define (`group`, `kind`): served once the folder is applied. */
    readonly definedKinds?: readonly { readonly group: string; readonly kind: string }[];
  };
}

/**
 * A kustomize replacement (`replacements:` entry of a kustomization): the value at `fieldPath` of the one source object
 * copied to `fieldPaths` of every selected target.
 */
export interface KustomizeReplacement {
  readonly source: Readonly<Record<string, string>> & { readonly fieldPath: string };
  readonly targets: readonly { readonly select: Readonly<Record<string, string>>; readonly fieldPaths: readonly string[] }[];
}

/** The objects of one component folder of a cluster, in deterministic order. */
export interface RenderedFolder {
  readonly folder: string;
  readonly description: string;
  readonly objects: readonly Manifest[];
  /** Bases and patches of the folder's kustomization (absent: it lists the folder's object files only). */
  readonly kustomization?: FolderKustomization;
  /** Replacements of the folder's kustomization (the gitops folder: children pinned to the root's revision). */
  readonly replacements?: readonly KustomizeReplacement[];
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
