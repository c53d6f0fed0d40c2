import { code, table } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { podPoliciesGuarding } from '../check/tenancy';
import { KUEUE_DEFAULT_LOCAL_QUEUE, LABELS, RESOURCES } from '../model/names';
import { Manifest } from '../render/manifest';
import { RenderedCluster } from '../render/render';

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

/**
 * What happens to a pod or job created without a queue label, per namespace with a LocalQueue: Kueue's LocalQueue
 * defaulting (always on since v0.17) queues it where the namespace has a LocalQueue named "default"; elsewhere it is
 * not queued, and the tenant guardrails refuse it when it asks for GPUs or the RDMA device.
 */
export function queueDefaultingSection(c: RenderedCluster, index: ClusterIndex): string {
  const localQueues = index.ofKind('LocalQueue');
  if (localQueues.length === 0) return '';
  const namespaces = [...new Set(localQueues.map((lq) => lq.metadata.namespace ?? ''))];
  const accelerators = [RESOURCES.gpu, ...(c.model.rdma ? [c.model.rdma.resourceName] : [])].map(code).join(' or ');
  const rows = namespaces.map((ns) => {
    const here = localQueues.filter((lq) => lq.metadata.namespace === ns);
    const queues = here.map((lq) => `${code(lq.metadata.name)} -> ${code(clusterQueueOf(lq))}`).join(', ');
    const defaultQueue = here.find((lq) => lq.metadata.name === KUEUE_DEFAULT_LOCAL_QUEUE);
    if (defaultQueue) {
      return [code(ns), queues, `**queued** to ${code(KUEUE_DEFAULT_LOCAL_QUEUE)}, CPU-only debug pods and the pods of a Deployment included: `
        + `held (a pod gated, a job suspended) until ClusterQueue ${code(clusterQueueOf(defaultQueue))} admits it, its requests charged to that quota, then placed on the nodes of `
        + `the flavor it is admitted on: ${flavorPlacement(index, clusterQueueOf(defaultQueue))}`];
    }
    const guards = podPoliciesGuarding(index, ns);
    return [code(ns), queues, guards.length > 0
      ? `**not queued**: a CPU-only pod runs at once, outside the quota; one requesting ${accelerators} is refused by ${guards.map(code).join(', ')}`
      : '**not queued**: it runs at once, outside the quota, GPUs included (no admission policy guards this namespace)'];
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
