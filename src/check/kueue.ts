import { ClusterIndex, requestedResources } from './cluster-index';
import { Rule, Violation } from './rule';
import { KUEUE_DEFAULT_LOCAL_QUEUE, LABELS, MULTIKUEUE, RESOURCES } from '../model/names';
import { parseQuantity } from '../model/quantity';
import { Manifest } from '../render/manifest';

const KUEUE = 'kueue.x-k8s.io';

/** Kueue's own objects carry no queue-name label of interest. */
const KUEUE_KINDS = new Set(['LocalQueue', 'ClusterQueue', 'Workload', 'ResourceFlavor', 'Cohort', 'Topology']);

interface FlavorQuotas {
  readonly name: string;
  readonly resources?: readonly { readonly name: string; readonly nominalQuota?: string | number }[];
}

interface ResourceGroup {
  readonly coveredResources?: readonly string[];
  readonly flavors?: readonly FlavorQuotas[];
}

function resourceGroups(cq: Manifest): readonly ResourceGroup[] {
  return ((cq.spec as { resourceGroups?: ResourceGroup[] } | undefined)?.resourceGroups) ?? [];
}

/** Resources a ClusterQueue covers, sorted. */
export function coveredResources(cq: Manifest): string[] {
  return [...new Set(resourceGroups(cq).flatMap((g) => g.coveredResources ?? []))].sort();
}

/** A ClusterQueue's nominal quotas of one resource as written, one per flavor that gives one (of `flavor` alone when given). */
export function nominalQuotasAsWritten(cq: Manifest, resource: string, flavor?: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const g of resourceGroups(cq)) {
    for (const f of (g.flavors ?? []).filter((x) => flavor === undefined || x.name === flavor)) {
      for (const r of f.resources ?? []) if (r.name === resource && r.nominalQuota !== undefined) out.push(r.nominalQuota);
    }
  }
  return out;
}

/** Sum of a ClusterQueue's nominal quota of one resource over all its flavors (over `flavor` alone when given). */
export function nominalQuota(cq: Manifest, resource: string, flavor?: string): number {
  return nominalQuotasAsWritten(cq, resource, flavor).reduce((total: number, q) => total + parseQuantity(q), 0);
}

/** AdmissionChecks a ClusterQueue names (spec.admissionChecksStrategy, v1beta2). */
export function admissionChecksOf(cq: Manifest): string[] {
  type Spec = { admissionChecksStrategy?: { admissionChecks?: { name?: string }[] } };
  const rules = (cq.spec as Spec | undefined)?.admissionChecksStrategy?.admissionChecks ?? [];
  return rules.flatMap((r) => (typeof r.name === 'string' ? [r.name] : []));
}

/**
 * Whether a ClusterQueue dispatches through MultiKueue (one of its AdmissionChecks is MultiKueue's): its Workloads run
 * on other clusters, so its quota is theirs, not this cluster's nodes'.
 */
export function dispatchesToWorkers(index: ClusterIndex, cq: Manifest): boolean {
  return admissionChecksOf(cq).some((name) => (index.find('AdmissionCheck', name)?.spec as { controllerName?: string } | undefined)?.controllerName === MULTIKUEUE.controllerName);
}

/** Cohort of a ClusterQueue (undefined: none). */
export function cohortOf(cq: Manifest): string | undefined {
  return (cq.spec as { cohortName?: string } | undefined)?.cohortName;
}

/** Every queue-name label an object carries: on itself and on each pod template, with where it is. */
export function queueLabels(index: ClusterIndex, m: Manifest): { readonly queue: string; readonly at: string }[] {
  if (KUEUE_KINDS.has(m.kind)) return [];
  const found: { queue: string; at: string }[] = [];
  const own = m.metadata.labels?.[LABELS.queueName];
  if (own !== undefined) found.push({ queue: own, at: 'metadata.labels' });
  if (m.kind !== 'Pod') {
    for (const t of index.podTemplates(m)) {
      const q = t.labels[LABELS.queueName];
      if (q !== undefined) found.push({ queue: q, at: `${t.path.replace(/\.spec$/, '')}.metadata.labels` });
    }
  }
  return found;
}

/**
 * The queue Kueue's LocalQueue defaulting gives a workload that names none: "default" when its namespace has a
 * LocalQueue of that name (KUEUE_DEFAULT_LOCAL_QUEUE). Its webhooks label every pod and job created there without a
 * queue label, a CPU-only pod and the pods of a Deployment or DaemonSet included, as long as the namespace is one
 * Kueue manages and the kind's integration (for plain pods: `pod`) is on.
 */
export function defaultedQueue(index: ClusterIndex, m: Manifest): string | undefined {
  const namespace = m.metadata.namespace;
  if (namespace === undefined || KUEUE_KINDS.has(m.kind) || queueLabels(index, m).length > 0 || index.podTemplates(m).length === 0) return undefined;
  return index.find('LocalQueue', KUEUE_DEFAULT_LOCAL_QUEUE, namespace) ? KUEUE_DEFAULT_LOCAL_QUEUE : undefined;
}

/**
 * The LocalQueue and ClusterQueue a queued object is admitted through (undefined when unresolved): the one its
 * queue label names, else the one LocalQueue defaulting gives it.
 */
export function queueOf(index: ClusterIndex, m: Manifest): { readonly localQueue: Manifest; readonly clusterQueue: Manifest } | undefined {
  const queue = queueLabels(index, m)[0]?.queue ?? defaultedQueue(index, m);
  if (queue === undefined) return undefined;
  const localQueue = index.find('LocalQueue', queue, m.metadata.namespace ?? '');
  const cqName = (localQueue?.spec as { clusterQueue?: string } | undefined)?.clusterQueue;
  const clusterQueue = cqName === undefined ? undefined : index.find('ClusterQueue', cqName);
  return localQueue && clusterQueue ? { localQueue, clusterQueue } : undefined;
}

const queueLabelTarget: Rule = {
  id: 'queue-label-target',
  severity: 'error',
  summary: `every ${LABELS.queueName} label names a LocalQueue in the object's namespace`,
  check(index) {
    const out: Violation[] = [];
    for (const m of index.objects) {
      for (const { queue, at } of queueLabels(index, m)) {
        const ns = m.metadata.namespace;
        if (ns !== undefined && index.find('LocalQueue', queue, ns)) continue;
        const there = index.ofKind('LocalQueue', KUEUE).filter((q) => q.metadata.namespace === ns).map((q) => q.metadata.name);
        out.push({
          message: `${at} ${LABELS.queueName}: "${queue}" names no LocalQueue in namespace "${ns ?? '(none)'}" `
            + `(LocalQueues there: ${there.length > 0 ? there.join(', ') : 'none'}); the job is never admitted`,
          objects: [m],
        });
      }
    }
    return out;
  },
};

const localQueueTarget: Rule = {
  id: 'localqueue-clusterqueue',
  severity: 'error',
  summary: 'every LocalQueue points at a ClusterQueue that exists',
  check(index) {
    return index.ofKind('LocalQueue', KUEUE).flatMap((lq) => {
      const cq = (lq.spec as { clusterQueue?: string } | undefined)?.clusterQueue;
      if (cq !== undefined && index.find('ClusterQueue', cq)) return [];
      const known = index.ofKind('ClusterQueue', KUEUE).map((q) => q.metadata.name);
      return [{
        message: `spec.clusterQueue: "${cq ?? ''}" is no rendered ClusterQueue (ClusterQueues: ${known.join(', ') || 'none'})`,
        objects: [lq],
      }];
    });
  },
};

/** Names of the namespaces a ClusterQueue's namespaceSelector names by `kubernetes.io/metadata.name` (how the toolkit scopes them). */
function selectedNamespaceNames(cq: Manifest): string[] {
  type Selector = { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };
  const selector = (cq.spec as { namespaceSelector?: Selector } | undefined)?.namespaceSelector;
  const byLabel = selector?.matchLabels?.[LABELS.namespaceName];
  const byExpression = (selector?.matchExpressions ?? []).filter((e) => e.key === LABELS.namespaceName && e.operator === 'In').flatMap((e) => e.values ?? []);
  return [...(byLabel === undefined ? [] : [byLabel]), ...byExpression];
}

/**
 * A tenant namespace without a LocalQueue has no way into its quota: its jobs can name no queue (the guardrails
 * then refuse every GPU job) and its ClusterQueue admits nothing.
 */
const tenantLocalQueue: Rule = {
  id: 'tenant-localqueue',
  severity: 'error',
  summary: 'every tenant namespace has a LocalQueue',
  check(index) {
    const localQueues = index.ofKind('LocalQueue', KUEUE);
    const out: Violation[] = [];
    for (const ns of index.ofKind('Namespace').filter((n) => n.metadata.labels?.[LABELS.tenant] !== undefined)) {
      if (localQueues.some((lq) => lq.metadata.namespace === ns.metadata.name)) continue;
      const queues = index.ofKind('ClusterQueue', KUEUE).filter((cq) => selectedNamespaceNames(cq).includes(ns.metadata.name));
      out.push({
        message: `tenant namespace of "${ns.metadata.labels?.[LABELS.tenant]}" has no LocalQueue: its jobs and pods can name no queue `
          + `(${LABELS.queueName}), so none of its GPU work is ever admitted`
          + (queues.length > 0 ? ` and the quota of ${queues.map((cq) => `ClusterQueue ${cq.metadata.name}`).join(', ')} goes unused` : ''),
        objects: [ns, ...queues],
      });
    }
    return out;
  },
};

const clusterQueueFlavor: Rule = {
  id: 'clusterqueue-flavor',
  severity: 'error',
  summary: 'every flavor a ClusterQueue names is a rendered ResourceFlavor',
  check(index) {
    const out: Violation[] = [];
    for (const cq of index.ofKind('ClusterQueue', KUEUE)) {
      resourceGroups(cq).forEach((g, gi) => (g.flavors ?? []).forEach((f, fi) => {
        if (index.find('ResourceFlavor', f.name)) return;
        const known = index.ofKind('ResourceFlavor', KUEUE).map((rf) => rf.metadata.name);
        out.push({
          message: `spec.resourceGroups[${gi}].flavors[${fi}].name: "${f.name}" is no rendered ResourceFlavor (ResourceFlavors: ${known.join(', ') || 'none'})`,
          objects: [cq],
        });
      }));
    }
    return out;
  },
};

const resourceCoverage: Rule = {
  id: 'queue-resource-coverage',
  severity: 'error',
  summary: 'every resource a queued job requests is covered by its ClusterQueue or excluded by the Kueue configuration',
  check(index) {
    const excluded = index.excludedResourcePrefixes();
    const out: Violation[] = [];
    for (const m of index.objects) {
      const q = queueOf(index, m);
      if (!q) continue;
      const covered = coveredResources(q.clusterQueue);
      for (const t of index.podTemplates(m)) {
        for (const r of requestedResources(t.spec)) {
          if (covered.includes(r) || excluded.some((p) => r.startsWith(p))) continue;
          out.push({
            message: `${t.path} requests ${r}, which ClusterQueue ${q.clusterQueue.metadata.name} (behind LocalQueue `
              + `${q.localQueue.metadata.namespace}/${q.localQueue.metadata.name}) does not cover (it covers ${covered.join(', ') || 'nothing'}) `
              + `and no Kueue configuration excludes (excludeResourcePrefixes: ${excluded.join(', ') || 'none'}); the job is never admitted`,
            objects: [m, q.clusterQueue],
          });
        }
      }
    }
    return out;
  },
};

const quotaCapacity: Rule = {
  id: 'quota-capacity',
  severity: 'error',
  summary: `the nominal ${RESOURCES.gpu} quota of the ClusterQueues of a cohort fits the cluster's GPUs`,
  check(index) {
    const capacity = index.model?.capacity.gpus;
    if (capacity === undefined) return [];
    const groups = new Map<string, Manifest[]>();
    // a MultiKueue manager's queues hold their workers' GPUs (multikueue-quota-sum checks those)
    for (const cq of index.ofKind('ClusterQueue', KUEUE).filter((q) => !dispatchesToWorkers(index, q))) {
      const key = cohortOf(cq) ?? `\0${cq.metadata.name}`;
      groups.set(key, [...(groups.get(key) ?? []), cq]);
    }
    const out: Violation[] = [];
    for (const [key, queues] of groups) {
      const total = queues.reduce((s, cq) => s + nominalQuota(cq, RESOURCES.gpu), 0);
      if (total <= capacity) continue;
      const parts = queues.map((cq) => `${cq.metadata.name} ${nominalQuota(cq, RESOURCES.gpu)}`).join(', ');
      const what = key.startsWith('\0') ? `ClusterQueue ${key.slice(1)}` : `cohort ${key}`;
      out.push({
        message: `${what}: nominal ${RESOURCES.gpu} quota ${total} (${parts}) exceeds the cluster's ${capacity} GPUs`,
        objects: queues,
      });
    }
    return out;
  },
};

/**
 * A globalDefault PriorityClass is the priority of every pod of the cluster that names none, in every namespace:
 * the pre-installed stack's DaemonSets and operators too, which a higher class could then preempt. The API server
 * refuses a second one, so rendering one also fails on a cluster that has its own.
 */
const noGlobalDefaultPriority: Rule = {
  id: 'priorityclass-no-global-default',
  severity: 'error',
  summary: 'no rendered PriorityClass is globalDefault (it would set the priority of every pod of the cluster)',
  check(index) {
    return index.ofKind('PriorityClass', 'scheduling.k8s.io').filter((pc) => (pc as { globalDefault?: unknown }).globalDefault === true).map((pc) => ({
      message: 'globalDefault: true gives its priority to every pod of the cluster without a priorityClassName (the pre-installed '
        + 'operators and DaemonSets included, which higher classes may then preempt), and the API server refuses a second '
        + 'global default; name the class in the queued work instead (priorityClassName, kueue.x-k8s.io/priority-class)',
      objects: [pc],
    }));
  },
};

export const KUEUE_RULES: readonly Rule[] = [
  queueLabelTarget, localQueueTarget, tenantLocalQueue, clusterQueueFlavor, resourceCoverage, quotaCapacity, noGlobalDefaultPriority,
];
