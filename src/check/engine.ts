import { ADOPTION_RULES } from './adoption';
import { ClusterIndex } from './cluster-index';
import { DATA_SAFETY_RULES } from './data-safety';
import { GITOPS_RULES } from './gitops';
import { KUEUE_RULES } from './kueue';
import { METADATA_RULES } from './metadata';
import { MPI_RULES } from './mpi';
import { NETWORK_RULES } from './network';
import { NODE_RESERVE_RULES } from './node-reserve';
import { PLACEMENT_RULES } from './placement/rule';
import { Finding, Rule, ClusterView, ScopeOf } from './rule';
import { SECURITY_RULES } from './security';
import { SERVICE_RULES } from './services';
import { STORAGE_RULES } from './storage';
import { TENANCY_RULES } from './tenancy';
import { UPSTREAM_RULES } from './upstream';
import { DEFAULT_UPSTREAM } from '../paths';
import { describeObject } from '../render/manifest';
import { Upstream } from '../upstream/upstream';

/** Every cross-object rule, by family. */
export const RULES: readonly Rule[] = [
  ...KUEUE_RULES, ...NODE_RESERVE_RULES, ...MPI_RULES, ...NETWORK_RULES, ...STORAGE_RULES, ...GITOPS_RULES, ...SECURITY_RULES, ...TENANCY_RULES,
  ...METADATA_RULES, ...SERVICE_RULES, ...ADOPTION_RULES, ...DATA_SAFETY_RULES, ...UPSTREAM_RULES, ...PLACEMENT_RULES,
];

export interface CheckOptions {
  /** Scope of kinds (from the schema store); without it, only rendered CRDs tell. */
  readonly scopeOf?: ScopeOf;
  /** The rules to run (default: all). */
  readonly rules?: readonly Rule[];
  /**
   * Folder of the vendored upstream installs (Helm charts, kustomize manifests) that the
   * upstream rules compare with; when it does not exist those rules report nothing.
   * @default DEFAULT_UPSTREAM (../shared/upstream-installs beside the repository)
   */
  readonly upstream?: string;
}

/** Runs the rules over one cluster; findings in rule order, then object order. */
export function checkCluster(view: ClusterView, opts: CheckOptions = {}): Finding[] {
  const index = new ClusterIndex(view, opts.scopeOf, Upstream.open(opts.upstream ?? DEFAULT_UPSTREAM));
  return (opts.rules ?? RULES).flatMap((rule) => rule.check(index).map((v) => ({
    rule: rule.id,
    severity: rule.severity,
    cluster: view.name,
    message: `${v.objects.length > 0 ? `${describeObject(v.objects[0])}: ` : ''}${v.message}`,
    objects: v.objects.map(describeObject),
  })));
}

/** Runs the rules over several clusters (each its own API server). */
export function checkClusters(views: readonly ClusterView[], opts: CheckOptions = {}): Finding[] {
  return views.flatMap((v) => checkCluster(v, opts));
}

/** One line per finding: `error [rule] cluster: Kind ns/name: message`. */
export function formatFinding(f: Finding): string {
  return `${f.severity} [${f.rule}] ${f.cluster}: ${f.message}`;
}

/** Rendered objects that break cross-object rules. Exit code 1; nothing is written. */
export class CheckFailed extends Error {
  constructor(readonly findings: readonly Finding[]) {
    super(`${findings.filter((f) => f.severity === 'error').length} cross-object check error(s)`);
    this.name = 'CheckFailed';
  }
}
