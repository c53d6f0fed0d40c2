import { ClusterDescription, Taint } from './description';
import { LABELS, MANAGED_BY, NAMESPACES, RESOURCES } from './names';
import { floorToMebibytes, formatBytes, formatCpu, parseQuantity } from './quantity';

/** A Kubernetes toleration, in the shape of the core API (plain data, usable by every construct). */
export interface TolerationSpec {
  readonly key?: string;
  readonly operator: 'Exists' | 'Equal';
  readonly value?: string;
  readonly effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/** Where a kind of node is, and how to get a pod onto it. */
export interface NodePlacement {
  /** nodeSelector / node affinity labels that select these nodes. */
  readonly selector: Readonly<Record<string, string>>;
  /** Tolerations for these nodes' taints. */
  readonly tolerations: readonly TolerationSpec[];
}

/** What the cluster has in total, derived once from the description. */
export interface Capacity {
  readonly gpuNodes: number;
  readonly gpusPerNode: number;
  readonly gpus: number;
  /** CPU cores of the GPU workers (allocatable). */
  readonly cpuCores: number;
  /** Memory bytes of the GPU workers (allocatable). */
  readonly memoryBytes: number;
  /** Units of the RDMA shared device (rdmaHcaMax per GPU node); 0 without InfiniBand. */
  readonly rdmaDevices: number;
  readonly cpuNodes: number;
  readonly cpuOnlyCores: number;
  readonly cpuOnlyMemoryBytes: number;
}

/** The RDMA shared device, when the cluster has InfiniBand. */
export interface RdmaFacts {
  /** Extended resource name pods request (`rdma/rdma_shared_device_a`). */
  readonly resourceName: string;
  /** Name inside the device plugin config (`rdma_shared_device_a`). */
  readonly deviceName: string;
  readonly hcaMax: number;
  readonly hcas: readonly string[];
}

/** Quota of one ClusterQueue on the GPU flavor, in canonical quantities. */
export interface QueueQuota {
  readonly gpus: number;
  readonly cpu: string;
  readonly memory: string;
  /** Units of the RDMA resource; 0 without InfiniBand. */
  readonly rdma: number;
  /** GPUs this queue may borrow (undefined: unlimited). */
  readonly borrowingLimit?: number;
  /** GPUs this queue may lend (undefined: all). */
  readonly lendingLimit?: number;
}

export interface QueueModel {
  /** ClusterQueue name. */
  readonly clusterQueue: string;
  /** LocalQueue name (the same in every namespace: queueing.defaultQueue). */
  readonly localQueue: string;
  /** Namespace of the LocalQueue. */
  readonly namespace: string;
  readonly quota: QueueQuota;
}

export interface TenantModel extends QueueModel {
  readonly name: string;
  /** Group bound to the tenant role. */
  readonly group: string;
  readonly borrowingOnly: boolean;
  /** Extra namespace labels from the description. */
  readonly labels: Readonly<Record<string, string>>;
}

export interface PriorityModel {
  readonly name: string;
  readonly value: number;
  readonly default: boolean;
}

/**
 * The validated description plus every derived fact the components share. Built once by
 * buildModel(); read-only for components.
 */
export interface ClusterModel {
  readonly name: string;
  readonly description: ClusterDescription;
  readonly capacity: Capacity;
  /** undefined when the cluster has no InfiniBand. */
  readonly rdma?: RdmaFacts;
  readonly gpuWorkers: NodePlacement;
  readonly serviceNode: NodePlacement;
  readonly cpuWorkers?: NodePlacement;
  readonly queueing: {
    readonly cohort: string;
    readonly defaultQueue: QueueModel;
    /** The default queue first, then one per tenant, in description order. */
    readonly queues: readonly QueueModel[];
    readonly priorities: readonly PriorityModel[];
    readonly defaultPriority?: PriorityModel;
  };
  readonly tenants: readonly TenantModel[];
  /** Labels carried by every rendered object. */
  readonly commonLabels: Readonly<Record<string, string>>;
}

function tolerationsFor(taints: readonly Taint[]): TolerationSpec[] {
  return taints.map((t) => (t.value === undefined
    ? { key: t.key, operator: 'Exists' as const, effect: t.effect }
    : { key: t.key, operator: 'Equal' as const, value: t.value, effect: t.effect }));
}

/** Share of `total` proportional to `part / whole`, rounded down. */
function share(total: number, part: number, whole: number): number {
  return whole === 0 ? 0 : Math.floor((total * part) / whole);
}

export function buildModel(d: ClusterDescription): ClusterModel {
  const w = d.nodes.gpuWorkers;
  const gpus = w.count * w.gpusPerNode;
  const cpuCores = w.count * parseQuantity(w.cpu);
  const memoryBytes = w.count * parseQuantity(w.memory);
  const ib = d.network.infiniband;
  const rdmaDevices = ib ? w.count * ib.rdmaSharedDevice.hcaMax : 0;
  const cpuNodes = d.nodes.cpuWorkers?.count ?? 0;

  const capacity: Capacity = {
    gpuNodes: w.count,
    gpusPerNode: w.gpusPerNode,
    gpus,
    cpuCores,
    memoryBytes,
    rdmaDevices,
    cpuNodes,
    cpuOnlyCores: cpuNodes * parseQuantity(d.nodes.cpuWorkers?.cpu ?? 0),
    cpuOnlyMemoryBytes: cpuNodes * parseQuantity(d.nodes.cpuWorkers?.memory ?? 0),
  };

  const rdma: RdmaFacts | undefined = ib && {
    resourceName: `${RESOURCES.rdmaPrefix}${ib.rdmaSharedDevice.name}`,
    deviceName: ib.rdmaSharedDevice.name,
    hcaMax: ib.rdmaSharedDevice.hcaMax,
    hcas: ib.hcas,
  };

  const gpuWorkers: NodePlacement = {
    selector: { [LABELS.gpuProduct]: w.gpuProduct },
    tolerations: [
      ...tolerationsFor(w.taints),
      { key: RESOURCES.gpu, operator: 'Exists', effect: 'NoSchedule' },
    ],
  };
  const serviceNode: NodePlacement = {
    selector: d.nodes.service.labels,
    tolerations: tolerationsFor(d.nodes.service.taints),
  };
  const cpuWorkers: NodePlacement | undefined = d.nodes.cpuWorkers && {
    selector: d.nodes.cpuWorkers.labels,
    tolerations: tolerationsFor(d.nodes.cpuWorkers.taints),
  };

  // Quotas: tenants get their GPUs and CPU/memory/RDMA in proportion; the default queue gets the rest,
  // so the nominal quotas over the cohort add up to exactly the cluster's capacity.
  const q = d.queueing;
  const limit = (v: number | null | undefined) => (v === null || v === undefined ? undefined : v);
  const tenants: TenantModel[] = d.tenants.map((t) => {
    const nominal = t.borrowingOnly ? 0 : t.gpus;
    const borrowing = t.borrowingOnly ? t.gpus : limit(t.borrowingLimit === undefined ? q.borrowingLimit : t.borrowingLimit);
    return {
      name: t.name,
      clusterQueue: t.name,
      localQueue: q.defaultQueue,
      namespace: t.namespace ?? t.name,
      group: t.group ?? `tenant-${t.name}`,
      borrowingOnly: t.borrowingOnly,
      labels: t.labels,
      quota: {
        gpus: nominal,
        cpu: formatCpu(share(cpuCores * 1000, nominal, gpus) / 1000),
        memory: formatBytes(floorToMebibytes(share(memoryBytes, nominal, gpus))),
        rdma: share(rdmaDevices, nominal, gpus),
        borrowingLimit: borrowing,
        lendingLimit: limit(t.lendingLimit === undefined ? q.lendingLimit : t.lendingLimit),
      },
    };
  });
  const claimedGpus = tenants.reduce((s, t) => s + t.quota.gpus, 0);
  const claimedMillicores = tenants.reduce((s, t) => s + Math.round(parseQuantity(t.quota.cpu) * 1000), 0);
  const claimedBytes = tenants.reduce((s, t) => s + parseQuantity(t.quota.memory), 0);
  const claimedRdma = tenants.reduce((s, t) => s + t.quota.rdma, 0);
  const defaultQueue: QueueModel = {
    clusterQueue: q.defaultClusterQueue,
    localQueue: q.defaultQueue,
    namespace: NAMESPACES.default,
    quota: {
      gpus: gpus - claimedGpus,
      cpu: formatCpu((Math.round(cpuCores * 1000) - claimedMillicores) / 1000),
      memory: formatBytes(memoryBytes - claimedBytes),
      rdma: rdmaDevices - claimedRdma,
      borrowingLimit: limit(q.borrowingLimit),
      lendingLimit: limit(q.lendingLimit),
    },
  };

  const priorities: PriorityModel[] = q.priorities.map((p) => ({ name: p.name, value: p.value, default: p.default }));

  return {
    name: d.name,
    description: d,
    capacity,
    rdma,
    gpuWorkers,
    serviceNode,
    cpuWorkers,
    queueing: {
      cohort: q.cohort,
      defaultQueue,
      queues: [defaultQueue, ...tenants],
      priorities,
      defaultPriority: priorities.find((p) => p.default),
    },
    tenants,
    commonLabels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.partOf]: d.name },
  };
}
