import { apiGroup, definedKind, FolderKustomization, Manifest } from '../../render/manifest';

/**
 * Bytes an object may have when Argo CD applies it client-side: kubectl stores the whole object in the
 * `kubectl.kubernetes.io/last-applied-configuration` annotation, and annotations are limited to 256 KiB.
 */
export const CLIENT_SIDE_APPLY_LIMIT = 262144;

/** A kind of an API group, as AppProject whitelists spell it. */
export interface GroupKind {
  readonly group: string;
  readonly kind: string;
}

/** `group/Kind` (`/Namespace` for the core group): one key per kind. */
export function groupKindKey(gk: GroupKind): string {
  return `${gk.group}/${gk.kind}`;
}

export function groupKindOf(m: Manifest): GroupKind {
  return { group: apiGroup(m.apiVersion), kind: m.kind };
}

/**
 * Kinds Kubernetes itself serves: dotless groups (core, apps, batch, ...) and `*.k8s.io`. Everything else
 * comes from a CRD, whose defaulting shows up as drift in a client-side diff.
 */
export function isBuiltInGroup(group: string): boolean {
  return !group.includes('.') || group.endsWith('.k8s.io');
}

/** Size of an object as kubectl would store it in the last-applied annotation (compact JSON, UTF-8). */
export function appliedSize(m: Manifest): number {
  return Buffer.byteLength(JSON.stringify(m), 'utf8');
}

/** Parses the `gpu-cluster.dev/provides` annotation: `group/Kind` entries, `group/*` for a whole group. */
export function parseProvides(value: string | undefined): GroupKind[] {
  if (!value) return [];
  return value.split(',').map((s) => s.trim()).filter((s) => s.length > 0).map((s) => {
    const i = s.lastIndexOf('/');
    if (i < 0) throw new Error(`provides: "${s}" is not group/Kind`);
    return { group: s.slice(0, i), kind: s.slice(i + 1) };
  });
}

export function formatProvides(kinds: readonly GroupKind[]): string {
  return kinds.map(groupKindKey).join(',');
}

/** Whether `gk` is one of `provided` (a `*` kind covers the whole group). */
export function isProvided(gk: GroupKind, provided: readonly GroupKind[]): boolean {
  return provided.some((p) => p.group === gk.group && (p.kind === '*' || p.kind === gk.kind));
}

/** The kinds the CustomResourceDefinitions among `objects` define. */
export function kindsDefinedBy(objects: readonly Manifest[]): GroupKind[] {
  return objects.flatMap((m) => definedKind(m) ?? []);
}

/**
 * The kinds the upstream bases of the folders' kustomizations define (their footprint): a managed Argo CD's, whose
 * folder the bootstrap applies before anything else.
 */
export function kindsDefinedByBases(folders: readonly { readonly kustomization?: FolderKustomization }[]): GroupKind[] {
  return folders.flatMap((f) => f.kustomization?.footprint.definedKinds ?? []);
}
