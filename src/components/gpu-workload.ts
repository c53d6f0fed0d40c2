import { isDnsSubdomain } from '../model/k8s-syntax';
import { ClusterModel, TolerationSpec } from '../model/model';
import { LABELS, RESOURCES } from '../model/names';
import { formatBytes, formatCpu, parseQuantity } from '../model/quantity';
import { pinnedImage } from '../model/schema-types';

/**
 * What the sample constructs share: checks of their props against the cluster model, the Kueue
 * labels, the size of a GPU pod and the NCCL plumbing. Plain data, typed by the core API shapes,
 * so that each construct can hand it to its own imported CRD types.
 */

/**
 * Part of a GPU node's allocatable CPU and memory a full-node pod claims. The rest stays free for
 * the per-node agents (device plugin, exporters, CNI) and for an MPI launcher, which lands on a
 * GPU worker when the cluster has no CPU workers.
 */
export const GPU_NODE_SHARE = 0.9;

/**
 * How NCCL moves data between ranks: over InfiniBand, over the pod network, over NVLink only (one node,
 * GPUs on an NVLink fabric), or within one node by whatever it finds (NVLink, PCIe peer to peer, shared memory).
 */
export type NcclFabric = 'infiniband' | 'socket' | 'nvlink' | 'node';

/** What every sample job has: the cluster, a name, an image and its place in Kueue. */
export interface QueuedJobProps {
  /** The cluster the job runs on; sizes, fabric, placement and queues come from it. */
  readonly model: ClusterModel;
  /** Job name. */
  readonly name: string;
  /** Container image, pinned (a tag other than `latest`, or a digest). */
  readonly image: string;
  /** @default "default" */
  readonly namespace?: string;
  /** Kueue LocalQueue (must exist in the namespace). @default the namespace's LocalQueue */
  readonly queue?: string;
  /** Kueue WorkloadPriorityClass. @default the description's default priority */
  readonly priority?: string;
  /** Seconds a finished job (and its logs) is kept. @default 86400 */
  readonly ttlSecondsAfterFinished?: number;
}

export interface WorkloadEnvVar {
  readonly name: string;
  readonly value: string;
}

/** The description schema's image check, built once (a zod schema costs more to build than to run). */
let pinnedImageSchema: ReturnType<typeof pinnedImage> | undefined;

/** Throws unless `image` is pinned (a tag other than `latest`, or a digest). */
export function assertPinnedImage(prop: string, image: string): void {
  const result = (pinnedImageSchema ??= pinnedImage()).safeParse(image);
  if (!result.success) throw new Error(`${prop}: ${result.error.issues[0].message}, got "${image}"`);
}

/** Throws unless `nodes` GPU nodes exist in the cluster. */
export function assertNodeCount(model: ClusterModel, prop: string, nodes: number): void {
  if (!Number.isInteger(nodes) || nodes < 1) throw new Error(`${prop}: expected a positive number of nodes, got ${nodes}`);
  if (nodes > model.capacity.gpuNodes) {
    throw new Error(`${prop}: ${nodes} nodes requested but the cluster has ${model.capacity.gpuNodes} GPU workers (nodes.gpuWorkers.count)`);
  }
}

/** Throws unless one node has `gpus` GPUs. */
export function assertGpusPerNode(model: ClusterModel, prop: string, gpus: number): void {
  if (!Number.isInteger(gpus) || gpus < 1) throw new Error(`${prop}: expected a positive number of GPUs, got ${gpus}`);
  if (gpus > model.capacity.gpusPerNode) {
    throw new Error(`${prop}: ${gpus} GPUs per node requested but a node has ${model.capacity.gpusPerNode} (nodes.gpuWorkers.gpusPerNode)`);
  }
}

/** Throws unless `node` is a node name (DNS-1123 subdomain). */
export function assertNodeName(prop: string, node: string): void {
  if (!isDnsSubdomain(node)) {
    throw new Error(`${prop}: expected a node name (DNS-1123 subdomain), got "${node}"`);
  }
}

/**
 * The Kueue labels of a job. The LocalQueue (default: the namespace's) must exist in the job's
 * namespace and the priority class in the description; without a priority the description's
 * default priority applies (the cluster has no globalDefault PriorityClass to fall back on).
 */
export function kueueLabels(model: ClusterModel, namespace: string, queue: string | undefined, priority?: string): Record<string, string> {
  const queues = model.queueing.queues.filter((q) => q.namespace === namespace);
  if (queues.length === 0) {
    const namespaces = [...new Set(model.queueing.queues.map((q) => q.namespace))];
    throw new Error(`namespace: "${namespace}" has no LocalQueue; use one of ${namespaces.join(', ')}`);
  }
  const localQueue = queue ?? queues[0].localQueue;
  if (!queues.some((q) => q.localQueue === localQueue)) {
    throw new Error(`queue: no LocalQueue "${localQueue}" in namespace "${namespace}" (it has ${queues.map((q) => q.localQueue).join(', ')})`);
  }
  const labels: Record<string, string> = { [LABELS.queueName]: localQueue };
  const priorityClass = priority ?? model.queueing.defaultPriority?.name;
  if (priorityClass !== undefined) {
    if (!model.queueing.priorities.some((p) => p.name === priorityClass)) {
      throw new Error(`priority: unknown priority class "${priorityClass}"; queueing.priorities has ${model.queueing.priorities.map((p) => p.name).join(', ')}`);
    }
    labels[LABELS.priorityClass] = priorityClass;
  }
  return labels;
}

/**
 * The Kubernetes PriorityClass of a job's pods: the one named like its Kueue priority, when the
 * cluster renders them (queueing.podPriorityClasses), so pod preemption agrees with queue order.
 */
export function podPriorityClassName(model: ClusterModel, labels: Record<string, string>): string | undefined {
  return model.description.queueing.podPriorityClasses ? labels[LABELS.priorityClass] : undefined;
}

/**
 * CPU and memory of a pod that uses `gpus` GPUs of a node: the same share of GPU_NODE_SHARE of the
 * node's allocatable CPU and memory, never more than what the node's quota holds (allocatable less
 * nodes.gpuWorkers.reserved), in canonical quantities (whole cores, whole GiB).
 */
export function gpuPodSize(model: ClusterModel, gpus: number): { readonly cpu: string; readonly memory: string } {
  const node = model.description.nodes.gpuWorkers;
  const fraction = gpus / model.capacity.gpusPerNode;
  const usable = (r: 'cpu' | 'memory') => Math.min(GPU_NODE_SHARE * parseQuantity(node[r]), parseQuantity(node[r]) - parseQuantity(node.reserved[r]));
  const gib = 2 ** 30;
  return {
    cpu: formatCpu(Math.max(1, Math.floor(usable('cpu') * fraction))),
    memory: formatBytes(Math.max(1, Math.floor((usable('memory') * fraction) / gib)) * gib),
  };
}

/**
 * Requests (= limits, so the pod is Guaranteed and NCCL's pinned memory is never reclaimed) of a
 * pod using `gpus` GPUs, and one unit of the RDMA shared device when `rdma` is set.
 */
export function gpuPodResources(model: ClusterModel, gpus: number, rdma: boolean): Record<string, string> {
  const size = gpuPodSize(model, gpus);
  const resources: Record<string, string> = {
    [RESOURCES.cpu]: size.cpu,
    [RESOURCES.memory]: size.memory,
    [RESOURCES.gpu]: String(gpus),
  };
  if (rdma) {
    if (!model.rdma) throw new Error('the cluster has no InfiniBand (network.infiniband): no RDMA device to request');
    resources[model.rdma.resourceName] = '1';
  }
  return resources;
}

/** Throws unless the /dev/shm size fits in the memory of a pod using `gpus` GPUs (memory-backed volumes count against it). */
export function assertShmFits(model: ClusterModel, prop: string, shmSize: string, gpus: number): void {
  let bytes: number;
  try {
    bytes = parseQuantity(shmSize);
  } catch {
    throw new Error(`${prop}: expected a memory quantity such as "64Gi", got "${shmSize}"`);
  }
  const memory = gpuPodSize(model, gpus).memory;
  if (bytes <= 0 || bytes >= parseQuantity(memory)) {
    throw new Error(`${prop}: /dev/shm of ${shmSize} must be positive and smaller than the pod's memory limit ${memory} (a memory-backed volume counts against it)`);
  }
}

/**
 * Throws unless the fabric exists on this cluster and suits the job: InfiniBand needs the RDMA
 * device, NVLink does not span nodes, and a multi-node job must use InfiniBand when the
 * description requires it.
 */
export function assertFabric(model: ClusterModel, fabric: NcclFabric, nodes: number): void {
  if (fabric === 'infiniband' && !model.rdma) {
    throw new Error('fabric: "infiniband" needs network.infiniband in the description (this cluster has no RDMA device)');
  }
  if ((fabric === 'nvlink' || fabric === 'node') && nodes > 1) {
    throw new Error(`fabric: "${fabric}" connects the GPUs of one node only, got ${nodes} nodes`);
  }
  if (fabric === 'nvlink' && !model.gpuProduct.nvlink) {
    throw new Error(`fabric: "nvlink" needs GPUs on an NVLink fabric, and ${model.gpuProduct.product} (nodes.gpuWorkers.gpuProduct) ${model.gpuProduct.family ? `is ${model.gpuProduct.family}, without one` : 'is not known to have one'}: NCCL would fall back to sockets`);
  }
  if (fabric === 'socket' && nodes > 1 && model.description.network.infiniband?.required) {
    throw new Error('fabric: a multi-node NCCL job without InfiniBand, but network.infiniband.required is true');
  }
}

/** NCCL's environment for a fabric: the HCAs, the bootstrap interface and the debug level. */
export function ncclEnv(model: ClusterModel, fabric: NcclFabric, debug: string): WorkloadEnvVar[] {
  const env: WorkloadEnvVar[] = [
    { name: 'NCCL_DEBUG', value: debug },
    { name: 'NCCL_SOCKET_IFNAME', value: model.description.network.podInterface },
  ];
  if (fabric === 'infiniband') {
    // "=" makes the list exact: mlx5_1 would otherwise also match mlx5_10, mlx5_11, ...
    env.push({ name: 'NCCL_IB_HCA', value: `=${model.rdma!.hcas.join(',')}` }, { name: 'NCCL_IB_DISABLE', value: '0' });
  } else if (fabric === 'socket' || fabric === 'node') {
    // One node ("node"): no network; NCCL picks NVLink, PCIe peer to peer or shared memory itself.
    env.push({ name: 'NCCL_IB_DISABLE', value: '1' });
  } else {
    // NVLink only: peer-to-peer over NVLink, no network and no host shared memory to fall back on.
    env.push(
      { name: 'NCCL_IB_DISABLE', value: '1' },
      { name: 'NCCL_P2P_LEVEL', value: 'NVL' },
      { name: 'NCCL_SHM_DISABLE', value: '1' },
    );
  }
  return env;
}

/** Node selector onto the GPU workers (one named node when `nodeName` is set). */
export function gpuNodeSelector(model: ClusterModel, nodeName?: string): Record<string, string> {
  return nodeName === undefined ? { ...model.gpuWorkers.selector } : { ...model.gpuWorkers.selector, [LABELS.hostname]: nodeName };
}

/** Tolerations of the GPU workers' taints (a fresh copy: constructs must not share the model's objects). */
export function gpuTolerations(model: ClusterModel): TolerationSpec[] {
  return model.gpuWorkers.tolerations.map((t) => ({ ...t }));
}

/** Required anti-affinity: no two pods matching `matchLabels` on one node. */
export function onePodPerNode(matchLabels: Record<string, string>) {
  return {
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels }, topologyKey: LABELS.hostname }],
    },
  };
}

/**
 * Security context of a GPU workload container: no privilege escalation, and over InfiniBand the
 * IPC_LOCK capability RDMA memory registration needs (unlimited locked memory), never privileged.
 */
export function workloadSecurityContext(fabric: NcclFabric) {
  return fabric === 'infiniband'
    ? { allowPrivilegeEscalation: false, capabilities: { add: ['IPC_LOCK'] } }
    : { allowPrivilegeEscalation: false };
}

/** Wraps quantity strings in a CRD import's own quantity class (each import has its own). */
export function quantitiesOf<Q>(values: Record<string, string>, of: (value: string) => Q): Record<string, Q> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, of(v)]));
}

/** Name of the memory-backed /dev/shm volume. */
export const SHM_VOLUME = 'dshm';
export const SHM_PATH = '/dev/shm';
