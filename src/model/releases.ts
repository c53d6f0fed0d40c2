import { VERSIONS } from '../versions';

/**
 * The releases of the pre-installed operators whose CRs the toolkit renders (releases.<key> of the description): each
 * is rendered in the form of a release this toolkit carries (the pinned one, or a previous one src/versions.ts
 * declares with its vendored chart and CRDs), never in a form no vendored CRD shows.
 */

/** The operators a description may name the running release of, by their key in VERSIONS and `installs`. */
export const RELEASE_KEYS = ['gpuOperator', 'networkOperator', 'kueue'] as const;
export type ReleaseKey = (typeof RELEASE_KEYS)[number];

/** How people name each operator. */
export const RELEASE_NAMES: Readonly<Record<ReleaseKey, string>> = {
  gpuOperator: 'GPU Operator',
  networkOperator: 'Network Operator',
  kueue: 'Kueue',
};

/** A release as its tag or chart version spells it: `v26.3.3`, `26.1.2`, `v0.18.6`. */
export const RELEASE_PATTERN = /^v?(\d+)\.(\d+)\.(\d+)$/;

/** A release the toolkit renders for: its version as src/versions.ts writes it, and whether it is the pinned one. */
export interface CarriedRelease {
  readonly version: string;
  readonly pinned: boolean;
}

interface Previous {
  readonly version: string;
}

/** The releases of an operator this toolkit renders for, oldest first (the pinned one last). */
export function carriedReleases(key: ReleaseKey): CarriedRelease[] {
  const entry = VERSIONS[key] as { readonly version: string; readonly previous?: readonly Previous[] };
  const all = [...(entry.previous ?? []).map((p) => ({ version: p.version, pinned: false })), { version: entry.version, pinned: true }];
  return all.sort((a, b) => compareReleases(a.version, b.version));
}

/** The numbers of a release, or undefined when it is none (a pre-release, a build, a name). */
export function releaseNumbers(v: string): [number, number, number] | undefined {
  const m = RELEASE_PATTERN.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** Orders two releases by their numbers (one that is none sorts first). */
export function compareReleases(a: string, b: string): number {
  const x = releaseNumbers(a) ?? [-1, -1, -1];
  const y = releaseNumbers(b) ?? [-1, -1, -1];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** Whether two spellings name one release (`26.1.2`, `v26.1.2`). */
export function sameRelease(a: string, b: string): boolean {
  const x = releaseNumbers(a);
  const y = releaseNumbers(b);
  return x !== undefined && y !== undefined && x.join('.') === y.join('.');
}

/** The release a given one renders as: a carried release of the same minor (its patch releases share its CRDs). */
export type ReleaseForm =
  | { readonly ok: true; readonly release: CarriedRelease; readonly exact: boolean }
  | { readonly ok: false; readonly message: string; readonly nearest: readonly string[] };

/**
 * The carried release whose form renders `given`: the same release, or one of the same major and minor (a patch
 * release: the operators change their CRDs between minor releases). Anything else is none, with the nearest carried
 * releases (the closest below and above) for the message.
 */
export function releaseForm(key: ReleaseKey, given: string): ReleaseForm {
  const carried = carriedReleases(key);
  const list = carried.map((r) => r.version).join(', ');
  const n = releaseNumbers(given);
  if (!n) {
    return { ok: false, message: `"${given}" is no release (expected major.minor.patch, such as ${carried[carried.length - 1].version}; a pre-release has no vendored CRDs)`, nearest: [] };
  }
  const exact = carried.find((r) => sameRelease(r.version, given));
  if (exact) return { ok: true, release: exact, exact: true };
  const line = carried.find((r) => {
    const c = releaseNumbers(r.version)!;
    return c[0] === n[0] && c[1] === n[1];
  });
  if (line) return { ok: true, release: line, exact: false };
  const below = [...carried].reverse().find((r) => compareReleases(r.version, given) < 0);
  const above = carried.find((r) => compareReleases(r.version, given) > 0);
  const nearest = [below, above].filter((r): r is CarriedRelease => r !== undefined).map((r) => r.version);
  const newer = above === undefined;
  return {
    ok: false,
    nearest,
    message: `${RELEASE_NAMES[key]} ${given} is neither a release this toolkit carries (${list}) nor a patch release of one, so no vendored CRD `
      + `says which form its CRs take; nearest supported: ${nearest.join(', ')}`
      + (newer ? ' (a newer release needs a newer gpu-cluster-manifests)' : ` (upgrade it to ${above!.version} first: upgrade-plan plans it)`),
  };
}

/** The form of the pinned release. */
export function pinnedRelease(key: ReleaseKey): CarriedRelease {
  return carriedReleases(key).find((r) => r.pinned)!;
}

/** What a previous release declares in src/versions.ts beside its version (its operand images, its CRDs' shape). */
export function previousEntry<T extends object>(key: ReleaseKey, version: string): (Previous & Partial<T>) | undefined {
  const entry = VERSIONS[key] as unknown as { readonly previous?: readonly (Previous & Partial<T>)[] };
  return entry.previous?.find((p) => sameRelease(p.version, version));
}
