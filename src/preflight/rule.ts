import type { CrdFileOf } from './remedies';
import { ClusterState } from './state';
import { ClusterModel } from '../model/model';
import { Manifest } from '../render/manifest';

/** error: Argo CD's first sync would fail or do harm (exit 1); warning: worth reading, not blocking. */
export type PreflightSeverity = 'error' | 'warning';

/** One difference between what synth renders and what the cluster holds. */
export interface PreflightFinding {
  /** Stable rule id, e.g. `immutable-field`. */
  readonly rule: string;
  readonly severity: PreflightSeverity;
  /** The object concerned, `Kind namespace/name` (the live one, or the rendered one when absent). */
  readonly object: string;
  /** What conflicts. */
  readonly message: string;
  /** How to resolve it: a description field to set, or a kubectl command. */
  readonly fix: string;
  /**
   * The fields it changes (argocd-takeover): each path with the live and the rendered value, and, where the
   * description decides it, the field and value that keep the live one.
   */
  readonly changes?: readonly {
    readonly path: string;
    readonly from?: unknown;
    readonly to: unknown;
    readonly keep?: { readonly field: string; readonly value: unknown };
  }[];
}

/** A rendered object with the folder (Argo CD Application) it belongs to. */
export interface RenderedObject {
  readonly folder: string;
  readonly manifest: Manifest;
}

/** What every rule reads: the description's model, the render, the cluster. */
export interface PreflightContext {
  readonly model: ClusterModel;
  readonly rendered: readonly RenderedObject[];
  readonly state: ClusterState;
  /** The Argo CD Application name of each rendered folder. */
  readonly applications: ReadonlyMap<string, string>;
  /** The CRD file of a kind in the toolkit's schema folder, for a fix that installs one CRD (absent: no such fix). */
  readonly crdFileOf?: CrdFileOf;
  /**
   * The toolkit's schema folder and upstream installs: the vendored CRDs of every release it carries, which tell an
   * operator's release from the CRD a cluster serves, and the core definitions a custom resource is validated with
   * (absent: the release rules read the cluster's Deployments only, and no rendered CR is validated).
   */
  readonly roots?: { readonly schemas: string; readonly upstream: string };
  /** The cache folder of compiled validators (absent: compiled in memory). */
  readonly cacheDir?: string;
}

export type PreflightFamily = 'state' | 'immutable' | 'quota' | 'api' | 'release' | 'drift' | 'foreign-config' | 'takeover';

/** A preflight rule: an id, its family, what it looks for, and the check. */
export interface PreflightRule {
  readonly id: string;
  readonly family: PreflightFamily;
  readonly summary: string;
  check(ctx: PreflightContext): PreflightFinding[];
}

/** Rules of one family computed together (one pass over the objects), each reporting its own findings. */
export function rulesOf(
  family: PreflightFamily,
  findings: (ctx: PreflightContext) => PreflightFinding[],
  rules: Readonly<Record<string, string>>,
): PreflightRule[] {
  return Object.entries(rules).map(([id, summary]) => ({ id, family, summary, check: (ctx) => findings(ctx).filter((f) => f.rule === id) }));
}
