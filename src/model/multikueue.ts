import { ClusterModel, QueueModel } from './model';
import { DispatchGroup, QueueDispatch } from './multikueue-role';
import { RESOURCES } from './names';
import { formatBytes, formatMillis, parseMillis, parseQuantity } from './quantity';

/** The resources every ClusterQueue of a cluster covers: cpu, memory, GPUs, and the RDMA device unless Kueue ignores it. */
export function coveredResources(model: ClusterModel): string[] {
  const rdmaCovered = model.rdma !== undefined && model.description.queueing.rdma === 'covered';
  return [RESOURCES.cpu, RESOURCES.memory, RESOURCES.gpu, ...(rdmaCovered ? [model.rdma!.resourceName] : [])];
}

/** Nominal quota per covered resource of one queue over all its flavors (the GPU flavor and the CPU-only one), in base units. */
function queueTotals(model: ClusterModel, queue: QueueModel): Map<string, number> {
  const q = queue.quota;
  const totals = new Map<string, number>();
  for (const r of coveredResources(model)) {
    switch (r) {
      case RESOURCES.cpu: totals.set(r, parseMillis(q.cpu) + (q.cpuOnly ? parseMillis(q.cpuOnly.cpu) : 0)); break;
      case RESOURCES.memory: totals.set(r, parseQuantity(q.memory) + (q.cpuOnly ? parseQuantity(q.cpuOnly.memory) : 0)); break;
      case RESOURCES.gpu: totals.set(r, q.gpus); break;
      default: totals.set(r, q.rdma);
    }
  }
  return totals;
}

/** The queue of a worker that mirrors the manager's queue (same namespace and LocalQueue name), as MultiKueue needs. */
export function mirroredQueue(worker: ClusterModel, queue: { readonly namespace: string; readonly localQueue: string }): QueueModel | undefined {
  return worker.queueing.queues.find((q) => q.namespace === queue.namespace && q.localQueue === queue.localQueue);
}

const RESOURCE_ORDER: readonly string[] = [RESOURCES.cpu, RESOURCES.memory, RESOURCES.gpu];

/**
 * What one ClusterQueue of the manager holds: per resource, the sum of the nominal quotas of the ClusterQueues behind
 * the mirrored LocalQueue on each of its workers, over all their flavors (what Kueue's own MultiKueue quota automation
 * sums, KEP 9988). A worker without the mirrored queue adds nothing (the check multikueue-queue-mirrored names it).
 */
export function dispatchedQueue(managerQueue: QueueModel, group: DispatchGroup, workers: ReadonlyMap<string, ClusterModel>): QueueDispatch {
  const sums = new Map<string, number>([[RESOURCES.cpu, 0], [RESOURCES.memory, 0], [RESOURCES.gpu, 0]]);
  const levels: (readonly string[] | undefined)[] = [];
  for (const name of group.workers) {
    const w = workers.get(name);
    const mirror = w && mirroredQueue(w, managerQueue);
    if (!w || !mirror) continue;
    for (const [r, v] of queueTotals(w, mirror)) sums.set(r, (sums.get(r) ?? 0) + v);
    levels.push(w.description.queueing.topology?.levels);
  }
  const resources = [...sums.keys()].sort((a, b) => {
    const ia = RESOURCE_ORDER.indexOf(a);
    const ib = RESOURCE_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : a > b ? 1 : 0);
  }).map((name) => {
    const v = sums.get(name)!;
    if (!Number.isSafeInteger(v)) throw new Error(`the workers of ClusterQueue ${managerQueue.clusterQueue} hold more ${name} than the quota arithmetic keeps exact`);
    return { name, nominalQuota: name === RESOURCES.cpu ? formatMillis(v) : name === RESOURCES.memory ? formatBytes(v) : String(v) };
  });
  const first = levels[0];
  const sameTopology = first !== undefined && levels.every((l) => l !== undefined && l.join('\n') === first.join('\n'));
  return { clusterQueue: managerQueue.clusterQueue, group: group.name, resources, ...(sameTopology ? { topologyLevels: [...first] } : {}) };
}
