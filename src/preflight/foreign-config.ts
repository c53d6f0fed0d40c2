import { parse } from 'yaml';
import { KUEUE_CONFIG_NAMESPACE } from './reads';
import { renderWithout } from './remedies';
import { PreflightContext, PreflightFinding, PreflightRule, rulesOf } from './rule';
import { ClusterState } from './state';
import { describeObject } from './util';
import { valueAt } from '../json';
import { KUEUE_DEFAULT_LOCAL_QUEUE, LABELS } from '../model/names';
import { apiGroup, Manifest } from '../render/manifest';

/** The key of the Kueue manager configuration in its ConfigMap (Kueue's Helm chart and kustomize install). */
export const KUEUE_CONFIG_KEY = 'controller_manager_config.yaml';

/** The metrics the quota alert and dashboard read, published only with metrics.enableClusterQueueResources. */
const CLUSTER_QUEUE_RESOURCE_METRICS = ['kueue_cluster_queue_resource_usage', 'kueue_cluster_queue_nominal_quota'];

/** Kueue's integration (framework) name for a queued kind, as integrations.frameworks spells it. */
export function kueueFramework(m: Manifest): string {
  const group = apiGroup(m.apiVersion);
  if (group === '') return m.kind.toLowerCase();
  if (group === 'apps') return m.kind.toLowerCase();
  return `${group}/${m.kind.toLowerCase()}`;
}

/** The rendered objects that carry a queue label, and the Kueue integrations (frameworks) they need, sorted. */
export function queuedFrameworks(rendered: readonly Manifest[]): { readonly queued: Manifest[]; readonly needed: string[] } {
  const queued = rendered.filter((m) => m.metadata.labels?.[LABELS.queueName] !== undefined);
  return { queued, needed: [...new Set(queued.map(kueueFramework))].sort() };
}

/** The frameworks of a live Kueue configuration (integrations.frameworks). */
export function liveFrameworks(config: Record<string, unknown>): Set<string> {
  const frameworks = valueAt(config, ['integrations', 'frameworks']);
  return new Set(Array.isArray(frameworks) ? frameworks.map(String) : []);
}

/** The Kueue manager ConfigMap of a cluster state, and its Configuration when it parses as a mapping. */
export function liveKueueConfig(state: ClusterState): { configMap: Manifest; config?: Record<string, unknown> } | undefined {
  const cm = state.list('', 'ConfigMap').find((c) => c.metadata.namespace === KUEUE_CONFIG_NAMESPACE && typeof valueAt(c, ['data', KUEUE_CONFIG_KEY]) === 'string');
  if (!cm) return undefined;
  try {
    const config = parse(valueAt(cm, ['data', KUEUE_CONFIG_KEY]) as string) as unknown;
    return { configMap: cm, config: config && typeof config === 'object' ? config as Record<string, unknown> : undefined };
  } catch {
    return { configMap: cm };
  }
}

/** The live Kueue manager configuration: the ConfigMap and its parsed Configuration. */
function kueueConfig(ctx: PreflightContext): { configMap: Manifest; config: Record<string, unknown> } | undefined {
  const live = liveKueueConfig(ctx.state);
  return live?.config ? { configMap: live.configMap, config: live.config } : undefined;
}

const RESTART = `kubectl -n ${KUEUE_CONFIG_NAMESPACE} rollout restart deployment kueue-controller-manager`;

function configFindings(ctx: PreflightContext): PreflightFinding[] {
  if (ctx.model.description.installs.kueue === 'managed') return []; // the rendered configuration is ours
  const { queued, needed } = queuedFrameworks(ctx.rendered.map((r) => r.manifest));
  const alerts = ctx.rendered.some((r) => r.manifest.kind === 'VMRule' && CLUSTER_QUEUE_RESOURCE_METRICS.some((s) => JSON.stringify(r.manifest.spec).includes(s)));
  if (needed.length === 0 && !alerts) return [];
  const live = kueueConfig(ctx);
  if (!live) {
    return [{
      rule: 'kueue-config-unread',
      severity: 'warning',
      object: `ConfigMap ${KUEUE_CONFIG_NAMESPACE}/kueue-manager-config`,
      message: `the cluster state has no Kueue manager configuration (a ConfigMap in ${KUEUE_CONFIG_NAMESPACE} with ${KUEUE_CONFIG_KEY}); the integrations ${needed.join(', ')} cannot be checked`,
      fix: ctx.state.live
        ? `the cluster's Kueue reads its configuration from elsewhere (another namespace or a flag): check its integrations.frameworks by hand for ${needed.join(', ')}, or install Kueue with the description (installs.kueue: managed)`
        : `add kubectl -n ${KUEUE_CONFIG_NAMESPACE} get configmaps -o yaml to the snapshot`,
    }];
  }
  const out: PreflightFinding[] = [];
  const have = liveFrameworks(live.config);
  const missing = needed.filter((f) => !have.has(f));
  if (missing.length > 0) {
    const users = (f: string) => queued.filter((m) => kueueFramework(m) === f).map(describeObject);
    // least invasive first: render without what needs the integration, then add it to the running Kueue, a Kueue of ours last
    const kinds = [...new Map(queued.filter((m) => missing.includes(kueueFramework(m))).map((m) => [`${apiGroup(m.apiVersion)}/${m.kind}`, m])).values()];
    const without = kinds.map((m) => renderWithout(ctx.model.description, { group: apiGroup(m.apiVersion), kind: m.kind }));
    const fixes = [
      ...(without.every((w) => w !== undefined) ? [`${without.map((w) => w.text).join(' and ')} (the cluster then lacks ${without.map((w) => w.loses).join(' and ')})`] : []),
      `add ${missing.join(', ')} to integrations.frameworks: kubectl -n ${KUEUE_CONFIG_NAMESPACE} edit configmap ${live.configMap.metadata.name} && ${RESTART}`,
      'set installs.kueue: managed in the description (the toolkit then renders the manager configuration; a second Kueue beside the pre-installed one, so remove that first)',
    ];
    out.push({
      rule: 'kueue-integrations',
      severity: 'error',
      object: describeObject(live.configMap),
      message: `integrations.frameworks lacks ${missing.join(', ')}; Kueue ignores ${missing.flatMap(users).join(', ')}, which then run outside the quotas (or never start)`,
      fix: fixes.join('; or '),
    });
  }
  if (alerts && valueAt(live.config, ['metrics', 'enableClusterQueueResources']) !== true) {
    out.push({
      rule: 'kueue-clusterqueue-metrics',
      severity: 'warning',
      object: describeObject(live.configMap),
      message: 'metrics.enableClusterQueueResources is not true: Kueue publishes no per-queue quota metrics, so the ClusterQueue quota alert and the queue dashboard stay empty',
      fix: `set installs.kueue: managed in the description, or set metrics.enableClusterQueueResources: true: kubectl -n ${KUEUE_CONFIG_NAMESPACE} edit configmap ${live.configMap.metadata.name} && ${RESTART}`,
    });
  }
  return out;
}

/**
 * A LocalQueue named "default" that the render does not have, in a namespace the render gives another LocalQueue: while
 * it exists, Kueue's LocalQueue defaulting queues every pod and job created there without a queue label to it.
 */
const localQueueDefaulting: PreflightRule = {
  id: 'localqueue-defaulting',
  family: 'foreign-config',
  summary: `a LocalQueue named "${KUEUE_DEFAULT_LOCAL_QUEUE}" the render does not have: Kueue queues every unlabelled pod and job of its namespace to it`,
  check: ({ model, rendered, state }) => model.queueing.queues.filter((q) => !q.defaulting).flatMap((q): PreflightFinding[] => {
    const live = state.get('kueue.x-k8s.io', 'LocalQueue', KUEUE_DEFAULT_LOCAL_QUEUE, q.namespace);
    const ours = rendered.some(({ manifest: m }) => m.kind === 'LocalQueue' && m.metadata.name === KUEUE_DEFAULT_LOCAL_QUEUE && m.metadata.namespace === q.namespace);
    if (!live || ours) return [];
    const tenant = model.description.tenants.findIndex((t) => (t.namespace ?? t.name) === q.namespace);
    const field = tenant >= 0 ? `tenants[${tenant}].queue` : 'queueing.defaultQueue';
    return [{
      rule: 'localqueue-defaulting',
      severity: 'warning',
      object: describeObject(live),
      message: `Kueue's LocalQueue defaulting queues every pod and job created in namespace ${q.namespace} without a queue label to this queue `
        + `(ClusterQueue ${String(valueAt(live, ['spec', 'clusterQueue']) ?? '?')}), CPU-only pods included, not to the rendered LocalQueue ${q.localQueue}`,
      fix: `kubectl -n ${q.namespace} delete localqueue ${KUEUE_DEFAULT_LOCAL_QUEUE} once no workload uses it, or set ${field}: ${KUEUE_DEFAULT_LOCAL_QUEUE} to keep queueing everything there`,
    }];
  }),
};

export const FOREIGN_CONFIG_RULES: readonly PreflightRule[] = [...rulesOf('foreign-config', configFindings, {
  'kueue-integrations': 'the pre-installed Kueue\'s integrations.frameworks lacks a framework the rendered queued objects need (batch/job, kubeflow.org/mpijob, kubeflow.org/pytorchjob, pod, ...)',
  'kueue-clusterqueue-metrics': 'the pre-installed Kueue does not publish ClusterQueue quota metrics the rendered alerts read (metrics.enableClusterQueueResources)',
  'kueue-config-unread': 'the cluster state lacks the Kueue manager configuration, so the integrations cannot be checked',
}), localQueueDefaulting];
