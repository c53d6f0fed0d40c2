import { ADOPTION_RULES } from './adoption';
import { APPLIED_SIZE_RULES } from './applied-size';
import { ClusterIndex } from './cluster-index';
import { ClusterView, SchemaOf, ScopeOf } from './cluster-view';
import { CRD_ORDER_RULES } from './crd-order';
import { DATA_SAFETY_RULES } from './data-safety';
import { DETERMINISM_RULES, RENDER_DETERMINISTIC } from './determinism';
import { DYNAMO_RULES } from './dynamo';
import { GITOPS_RULES } from './gitops';
import { HEALTH_RULES } from './health';
import { KUEUE_RULES } from './kueue';
import { METADATA_RULES } from './metadata';
import { MPI_RULES } from './mpi';
import { MULTIKUEUE_RULES } from './multikueue';
import { NETWORK_RULES } from './network';
import { NODE_RESERVE_RULES } from './node-reserve';
import { PLACEMENT_RULES } from './placement/rule';
import { renderClusterSources, RenderOptions } from './renders';
import { Finding, Rule } from './rule';
import { SECURITY_RULES } from './security';
import { SERVICE_RULES } from './services';
import { STORAGE_RULES } from './storage';
import { TENANCY_RULES } from './tenancy';
import { UPSTREAM_RULES } from './upstream';
import { printable } from '../errors';
import { describeObject } from '../render/manifest';
import { ClusterRenders } from '../upstream/render';

/** Every cross-object rule, by family. */
export const RULES: readonly Rule[] = [
  ...KUEUE_RULES, ...MULTIKUEUE_RULES,
  ...NODE_RESERVE_RULES, ...MPI_RULES, ...NETWORK_RULES, ...STORAGE_RULES, ...GITOPS_RULES, ...SECURITY_RULES, ...TENANCY_RULES,
  ...METADATA_RULES, ...SERVICE_RULES, ...ADOPTION_RULES, ...DATA_SAFETY_RULES, ...DYNAMO_RULES,
  ...UPSTREAM_RULES, ...CRD_ORDER_RULES, ...APPLIED_SIZE_RULES, ...PLACEMENT_RULES, ...HEALTH_RULES, ...DETERMINISM_RULES,
];

export interface CheckOptions {
  /** Scope of kinds (from the schema store); without it, only rendered CRDs tell. */
  readonly scopeOf?: ScopeOf;
  /** The rules to run (default: all). */
  readonly rules?: readonly Rule[];
  /**
   * What the engines render for the cluster's Applications (renderClusterSources). Without it, the rules
   * that need the rendered charts and overlays report nothing and the others check the rendered tree alone.
   */
  readonly renders?: ClusterRenders;
  /** Schemas of kinds (from the schema store), for the rules that read a CRD's status (wave-health). */
  readonly schemaOf?: SchemaOf;
}

/** Runs the rules over one cluster; findings in rule order, then object order. */
export function checkCluster(view: ClusterView, opts: CheckOptions = {}): Finding[] {
  const rules = opts.rules ?? RULES;
  // renders made without their second renders cannot show a chart renders the same twice: never a silent pass
  if (opts.renders && opts.renders.reruns === undefined && rules.some((r) => r.id === RENDER_DETERMINISTIC)) {
    throw new Error(`${RENDER_DETERMINISTIC} reads the second render of each Helm source: render with reruns, or leave the rule out`);
  }
  const index = new ClusterIndex(view, opts.scopeOf, opts.renders, opts.schemaOf);
  return rules.flatMap((rule) => rule.check(index).map((v) => ({
    rule: rule.id,
    severity: rule.severity,
    cluster: view.name,
    message: `${v.objects.length > 0 ? `${describeObject(v.objects[0])}: ` : ''}${v.message}`,
    objects: v.objects.map(describeObject),
  })));
}

/**
 * Renders what Argo CD renders for every Application of the cluster with the real engines (helm, kustomize),
 * then runs the rules over the tree and those renders. The second, fresh render of each Helm source is made only
 * when render-deterministic, the rule that reads it, is among the rules (unless `reruns` says otherwise).
 */
export async function checkClusterRendered(view: ClusterView, opts: Omit<CheckOptions, 'renders'> & RenderOptions = {}): Promise<{ findings: Finding[]; renders: ClusterRenders }> {
  const reruns = opts.reruns ?? (opts.rules === undefined || opts.rules.some((r) => r.id === RENDER_DETERMINISTIC));
  const renders = await renderClusterSources(view, { ...opts, reruns });
  return { findings: checkCluster(view, { ...opts, renders }), renders };
}

/** Runs the rules over several clusters (each its own API server). */
export function checkClusters(views: readonly ClusterView[], opts: CheckOptions = {}): Finding[] {
  return views.flatMap((v) => checkCluster(v, opts));
}

/**
 * One line per finding: `error [rule] cluster: Kind ns/name: message`. What a tree or an engine put in it
 * (a name, a path) is printed with its control characters escaped: it cannot forge a line or reach the terminal raw.
 */
export function formatFinding(f: Finding): string {
  return printable(`${f.severity} [${f.rule}] ${f.cluster}: ${f.message}`);
}

/** Rendered objects that break cross-object rules. Exit code 1; nothing is written. */
export class CheckFailed extends Error {
  constructor(readonly findings: readonly Finding[]) {
    super(`${findings.filter((f) => f.severity === 'error').length} cross-object check error(s)`);
    this.name = 'CheckFailed';
  }

  /** What every command prints of it: one line per finding (formatFinding), before its summary. */
  lines(): string[] {
    return this.findings.map(formatFinding);
  }
}
