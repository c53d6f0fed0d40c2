import { code, table } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { policiesRefusing } from '../check/tenancy';
import { KUEUE_DEFAULT_LOCAL_QUEUE, LABELS, RESOURCES, TENANCY } from '../model/names';
import { Manifest, RenderedCluster } from '../render/manifest';

const clusterQueueOf = (lq: Manifest) => (lq.spec as { clusterQueue?: string } | undefined)?.clusterQueue ?? '';

/** Flavors of a ClusterQueue with the node labels Kueue gives what it admits on each (`cpu-only`: `node-role...=`). */
function flavorPlacement(index: ClusterIndex, clusterQueue: string): string {
  const cq = index.find('ClusterQueue', clusterQueue);
  const groups = ((cq?.spec as { resourceGroups?: { flavors?: { name: string }[] }[] } | undefined)?.resourceGroups) ?? [];
  const names = [...new Set(groups.flatMap((g) => (g.flavors ?? []).map((f) => f.name)))];
  return names.map((name) => {
    const labels = (index.find('ResourceFlavor', name)?.spec as { nodeLabels?: Record<string, string> } | undefined)?.nodeLabels ?? {};
    const selector = Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',');
    return selector ? `${code(name)} (${code(selector)})` : code(name);
  }).join(' or ') || 'its flavor';
}

/** A tenant's user, as the guardrails see requesters that are neither controllers nor administrators. */
const TENANT_USER = 'tenant-user@example.com';

/** A pod as a tenant creates it without a queue label: one container asking for `resources`, at `priorityClassName` if given. */
function unlabelledPod(namespace: string, resources: Record<string, string>, priorityClassName?: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'debug', namespace },
    spec: {
      ...(priorityClassName ? { priorityClassName } : {}),
      containers: [{ name: 'main', image: 'busybox:1.37', resources: { requests: resources, limits: resources } }],
    },
  };
}

/** `4 CPU, 16Gi memory, 10 pods` from a ResourceQuota's hard requests. */
function quotaText(quota: Manifest | undefined): string | undefined {
  const hard = (quota?.spec as { hard?: Record<string, string | number> } | undefined)?.hard;
  if (!hard) return undefined;
  return [`${hard['requests.cpu'] ?? '?'} CPU`, `${hard['requests.memory'] ?? '?'} memory`, `${hard.pods ?? '?'} pods`].join(', ');
}

/**
 * What happens to a pod or job created without a queue label, per namespace with a LocalQueue: Kueue's LocalQueue
 * defaulting (always on since v0.17) queues it where the namespace has a LocalQueue named "default"; elsewhere it is
 * not queued, and the tenant guardrails refuse it when it asks for GPUs or the RDMA device.
 */
export function queueDefaultingSection(c: RenderedCluster, index: ClusterIndex): string {
  const localQueues = index.ofKind('LocalQueue');
  if (localQueues.length === 0) return '';
  const byNamespace = new Map<string, Manifest[]>();
  for (const lq of localQueues) {
    const list = byNamespace.get(lq.metadata.namespace ?? '') ?? [];
    list.push(lq);
    byNamespace.set(lq.metadata.namespace ?? '', list);
  }
  const namespaces = [...byNamespace.keys()];
  const accelerators = [RESOURCES.gpu, ...(c.model.rdma ? [c.model.rdma.resourceName] : [])].map(code).join(' or ');
  const refusingIn = policiesRefusing(index);
  const unqueuedQuotas = new Map(index.ofKind('ResourceQuota').filter((q) => q.metadata.name === TENANCY.unqueuedQuota).map((q) => [q.metadata.namespace, q]));
  const rows = namespaces.map((ns) => {
    const here = byNamespace.get(ns)!;
    const queues = here.map((lq) => `${code(lq.metadata.name)} -> ${code(clusterQueueOf(lq))}`).join(', ');
    const defaultQueue = here.find((lq) => lq.metadata.name === KUEUE_DEFAULT_LOCAL_QUEUE);
    if (defaultQueue) {
      return [code(ns), queues, `**queued** to ${code(KUEUE_DEFAULT_LOCAL_QUEUE)}, CPU-only debug pods and the pods of a Deployment included: `
        + `held (a pod gated, a job suspended) until ClusterQueue ${code(clusterQueueOf(defaultQueue))} admits it, its requests charged to that quota, then `
        + (c.model.multiKueue?.role === 'manager' ? 'dispatched to the MultiKueue worker that admits it ([the fleet page](../fleet/README.md))'
          : `placed on the nodes of the flavor it is admitted on: ${flavorPlacement(index, clusterQueueOf(defaultQueue))}`)];
    }
    const refusing = (resources: Record<string, string>, priorityClassName?: string) => (
      refusingIn(ns, unlabelledPod(ns, resources, priorityClassName), TENANT_USER));
    const cpuOnly = refusing({ cpu: '1' });
    const accelerated = [...new Set([RESOURCES.gpu, ...(c.model.rdma ? [c.model.rdma.resourceName] : [])].flatMap((r) => refusing({ cpu: '1', [r]: '1' })))];
    const unqueuedQuota = quotaText(unqueuedQuotas.get(ns));
    const atUnqueued = cpuOnly.length > 0 && refusing({ cpu: '1' }, TENANCY.unqueuedPriorityClass).length === 0;
    const cpu = cpuOnly.length === 0 ? 'a CPU-only pod runs at once, outside the quota'
      : atUnqueued ? `a CPU-only pod runs at once, outside the quota, when it names ${code(`priorityClassName: ${TENANCY.unqueuedPriorityClass}`)} (the lowest `
        + `priority, never preempting${unqueuedQuota ? `; ResourceQuota ${code(TENANCY.unqueuedQuota)} holds such pods to ${unqueuedQuota}` : ''}), and is refused by `
        + `${cpuOnly.map(code).join(', ')} without it`
        : `a CPU-only pod is refused by ${cpuOnly.map(code).join(', ')}`;
    if (accelerated.length > 0) return [code(ns), queues, `**not queued**: ${cpu}; one requesting ${accelerators} is refused by ${accelerated.map(code).join(', ')}`];
    return [code(ns), queues, cpuOnly.length === 0
      ? `**not queued**: it runs at once, outside the quota, GPUs included (no admission policy refuses a pod requesting ${accelerators})`
      : `**not queued**: ${cpu}; one requesting ${accelerators} is not refused and runs outside the quota`];
  });
  return [
    '### Pods and jobs without a queue label',
    '',
    'Kueue\'s LocalQueue defaulting (always on since Kueue v0.17) gives every pod and job created without a queue label the label '
      + `${code(`${LABELS.queueName}: ${KUEUE_DEFAULT_LOCAL_QUEUE}`)} in a namespace that has a LocalQueue named ${code(KUEUE_DEFAULT_LOCAL_QUEUE)} `
      + `(for plain pods with its ${code('pod')} integration on: the managed configuration's and the Kueue chart's default). `
      + 'A tenant namespace whose LocalQueue has another name (`tenants[].queue`, default: the tenant name) is left alone.',
    '',
    table(['Namespace', 'LocalQueue -> ClusterQueue', 'A pod or job created without a queue label'], rows),
  ].join('\n');
}
