import { AdoptedObject, adoptedObjects, AllocatedNodePort, allocatedNodePorts } from './adoption';
import { ClusterDescription, IN_CLUSTER_SERVER, Taint } from './description';
import { GpuProductFacts, gpuProductFacts } from './gpu-products';
import { MultiKueueRole } from './multikueue-role';
import { KUEUE_DEFAULT_LOCAL_QUEUE, LABELS, MANAGED_BY, NAMESPACES, RESOURCES, SERVICE_MONITOR_API } from './names';
import { floorToMebibytes, formatBytes, formatMillis, parseMillis, parseQuantity } from './quantity';
import { CarriedRelease, pinnedRelease, RELEASE_KEYS, ReleaseKey, releaseForm } from './releases';

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

/** A placement as pod specs and Helm charts spell it (fresh copies: constructs must not share the model's objects). */
export interface PodPlacement {
  readonly nodeSelector: Record<string, string>;
  readonly tolerations: TolerationSpec[];
}

export function podPlacement(p: NodePlacement): PodPlacement {
  return { nodeSelector: { ...p.selector }, tolerations: p.tolerations.map((t) => ({ ...t })) };
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

/** Amounts of the resources a ClusterQueue covers on the GPU flavor, in canonical quantities. */
export interface ResourceAmounts {
  readonly gpus: number;
  /** Canonical CPU quantity (`"96"`, `"1500m"`, `"2k"`). */
  readonly cpu: string;
  /** Canonical memory quantity (`"900Gi"`). */
  readonly memory: string;
  /** Units of the RDMA resource; 0 without InfiniBand. */
  readonly rdma: number;
}

/** CPU and memory on the CPU-only workers' flavor, in canonical quantities. */
export interface CpuOnlyAmounts {
  readonly cpu: string;
  readonly memory: string;
}

/**
 * Quota of one ClusterQueue, in canonical quantities. GPUs are as described; CPU, memory and RDMA
 * follow the GPUs in proportion (rounded down), and the default queue gets what the tenants leave,
 * so every resource adds up to the cluster's capacity over the cohort.
 */
export interface QueueQuota extends ResourceAmounts {
  /** What the queue may borrow from the cohort, the GPU limit and the rest in proportion (undefined: unlimited). */
  readonly borrowingLimit?: ResourceAmounts;
  /** What the queue may lend to the cohort, at most its nominal quota (undefined: all of it). */
  readonly lendingLimit?: ResourceAmounts;
  /** Quota on the CPU-only workers (same proportions); undefined without CPU workers. */
  readonly cpuOnly?: CpuOnlyAmounts;
}

export interface QueueModel {
  /** ClusterQueue name. */
  readonly clusterQueue: string;
  /** LocalQueue name (queueing.defaultQueue in "default", tenants[].queue in a tenant namespace). */
  readonly localQueue: string;
  /** Namespace of the LocalQueue. */
  readonly namespace: string;
  /**
   * The LocalQueue is named "default": Kueue's LocalQueue defaulting queues to it every pod and job created in the
   * namespace without a queue label (see KUEUE_DEFAULT_LOCAL_QUEUE).
   */
  readonly defaulting: boolean;
  /** Fair-sharing weight of the ClusterQueue (used when queueing.fairSharing is on). */
  readonly fairSharingWeight: number;
  readonly quota: QueueQuota;
  /** The ClusterQueue's hold (Kueue's stopPolicy: "None" admits). */
  readonly stopPolicy: 'None' | 'Hold' | 'HoldAndDrain';
}

/** CPU and memory requests (canonical quantities) and a pod count. */
export interface PodAllowance {
  readonly cpu: string;
  readonly memory: string;
  readonly pods: number;
}

export interface TenantModel extends QueueModel {
  readonly name: string;
  /** Group bound to the tenant role. */
  readonly group: string;
  readonly borrowingOnly: boolean;
  /** Extra namespace labels from the description. */
  readonly labels: Readonly<Record<string, string>>;
  /** Priorities (queueing.priorities names) its queued work may use. */
  readonly priorities: readonly string[];
  /** What it may run outside Kueue (ResourceQuota of TENANCY.unqueuedQuota); subtracted from the quotas' totals. */
  readonly unqueued: PodAllowance;
  /** Requests a container of its namespace gets when it sets none (LimitRange). */
  readonly defaultRequest: { readonly cpu: string; readonly memory: string };
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
  /** The GPU workers' product (nodes.gpuWorkers.gpuProduct): whether its GPUs share an NVLink fabric. */
  readonly gpuProduct: GpuProductFacts;
  readonly serviceNode: NodePlacement;
  readonly cpuWorkers?: NodePlacement;
  /** Taints no tenant pod may tolerate: the service node's, then nodes.reservedTaints (without repeats). */
  readonly reservedTaints: readonly Taint[];
  readonly queueing: {
    readonly cohort: string;
    readonly defaultQueue: QueueModel;
    /** The default queue first, then one per tenant, in description order. */
    readonly queues: readonly QueueModel[];
    readonly priorities: readonly PriorityModel[];
    readonly defaultPriority?: PriorityModel;
  };
  readonly tenants: readonly TenantModel[];
  /**
   * The release each operator's CRs are rendered for: the pinned one for a managed install and where releases.<key> is
   * unset, else the carried release of the one the description names (releases.ts).
   */
  readonly releases: Readonly<Record<ReleaseKey, CarriedRelease>>;
  /** Objects the cluster already runs that rendered objects of the same name take over (see adoption.ts). */
  readonly adopted: readonly AdoptedObject[];
  /** Node ports held by objects outside the rendered tree (the pre-installed Dashboard's). */
  readonly allocatedNodePorts: readonly AllocatedNodePort[];
  /**
   * Who runs the Argo CD that syncs the cluster (gitops.argocd, its default resolved): "managed" renders it into the
   * argocd folder, "external" leaves it to a fleet hub or an Argo CD the cluster already runs.
   */
  readonly argocd: 'managed' | 'external';
  /** Labels carried by every rendered object. */
  readonly commonLabels: Readonly<Record<string, string>>;
  /**
   * API versions the cluster serves besides the built-in ones and the CRDs of the rendered objects, as far as
   * the description tells (`monitoring.coreos.com/v1` with monitoring.serviceMonitorCrd): Argo CD passes what the
   * cluster serves to helm, and charts render more when an API is there.
   */
  readonly servedApiVersions: readonly string[];
  /**
   * Whether the cluster serves ValidatingAdmissionPolicy as GA (`admissionregistration.k8s.io/v1`, Kubernetes
   * ADMISSION_POLICY_MINOR and later): the tenant guardrails and the SkyPilot identity policies render only then.
   */
  readonly admissionPolicies: boolean;
  /**
   * The cluster's part in a MultiKueue fleet (fleet.yaml beside its description): the manager, whose ClusterQueues
   * dispatch to workers, or a worker; undefined outside a fleet. Set by the loader (withMultiKueue), never by buildModel.
   */
  readonly multiKueue?: MultiKueueRole;
}

/** The model with its part in a MultiKueue fleet (undefined: none). */
export function withMultiKueue(model: ClusterModel, role: MultiKueueRole | undefined): ClusterModel {
  return role === undefined ? model : { ...model, multiKueue: role };
}

/** The Kubernetes minor version from which ValidatingAdmissionPolicy is GA (1.30). */
export const ADMISSION_POLICY_MINOR = 30;

/**
 * Whether a toleration tolerates a taint, as the scheduler decides it: an empty key with `Exists`
 * tolerates every taint, an empty effect every effect.
 */
export function tolerates(
  t: { readonly key?: string; readonly operator?: string; readonly value?: string; readonly effect?: string },
  taint: { readonly key: string; readonly value?: string; readonly effect: string },
): boolean {
  if (t.effect !== undefined && t.effect !== '' && t.effect !== taint.effect) return false;
  if (t.key === undefined || t.key === '') return t.operator === 'Exists';
  if (t.key !== taint.key) return false;
  return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
}

/** Tolerations matching the given node taints. */
export function tolerationsFor(taints: readonly Taint[]): TolerationSpec[] {
  return taints.map((t) => (t.value === undefined
    ? { key: t.key, operator: 'Exists' as const, effect: t.effect }
    : { key: t.key, operator: 'Equal' as const, value: t.value, effect: t.effect }));
}

/**
 * Share of `total` proportional to `part / whole`, rounded down. BigInt, so that byte counts of
 * large clusters times GPU counts never lose precision.
 */
export function proportionalShare(total: number, part: number, whole: number): number {
  if (![total, part, whole].every((n) => Number.isSafeInteger(n) && n >= 0)) {
    throw new Error(`proportionalShare expects non-negative safe integers, got ${total}, ${part}, ${whole}`);
  }
  return whole === 0 ? 0 : Number((BigInt(total) * BigInt(part)) / BigInt(whole));
}

/** What the quota arithmetic divides: the GPU workers' (and CPU workers') totals in integer units. */
export interface QuotaTotals {
  readonly gpus: number;
  readonly cpuMillis: number;
  readonly memoryBytes: number;
  readonly rdma: number;
  /** Present when the cluster has CPU-only workers. */
  readonly cpuOnly?: { readonly cpuMillis: number; readonly memoryBytes: number };
}

/** One queue's claim on the totals, in GPUs. */
export interface QueueClaim {
  /** Nominal GPUs (0 for a borrowing-only tenant). */
  readonly gpus: number;
  /** GPUs it may borrow (undefined: unlimited). */
  readonly borrowingLimit?: number;
  /** GPUs it may lend (undefined: all); clamped to the nominal GPUs, as Kueue requires. */
  readonly lendingLimit?: number;
}

function amountsFor(totals: QuotaTotals, gpus: number): ResourceAmounts {
  return {
    gpus,
    cpu: formatMillis(proportionalShare(totals.cpuMillis, gpus, totals.gpus)),
    memory: formatBytes(floorToMebibytes(proportionalShare(totals.memoryBytes, gpus, totals.gpus))),
    rdma: proportionalShare(totals.rdma, gpus, totals.gpus),
  };
}

/**
 * Quotas of the default queue and the tenants' queues (in that order). Tenants get their claim and
 * CPU, memory and RDMA in proportion, rounded down (memory to whole MiB); the default queue gets
 * the rest of every resource, so each resource sums to its total over the cohort. Throws when the
 * tenants claim more GPUs than the totals hold (the description rejects that earlier, by field).
 */
export function queueQuotas(totals: QuotaTotals, defaultClaim: Omit<QueueClaim, 'gpus'>, tenants: readonly QueueClaim[]): QueueQuota[] {
  const claimed = tenants.reduce((s, t) => s + t.gpus, 0);
  if (claimed > totals.gpus) throw new Error(`tenants claim ${claimed} GPUs but the cluster has ${totals.gpus}`);
  const limits = (claim: QueueClaim) => ({
    borrowingLimit: claim.borrowingLimit === undefined ? undefined : amountsFor(totals, claim.borrowingLimit),
    lendingLimit: claim.lendingLimit === undefined ? undefined : amountsFor(totals, Math.min(claim.lendingLimit, claim.gpus)),
  });
  const cpuOnlyFor = (gpus: number): CpuOnlyAmounts | undefined => totals.cpuOnly && {
    cpu: formatMillis(proportionalShare(totals.cpuOnly.cpuMillis, gpus, totals.gpus)),
    memory: formatBytes(floorToMebibytes(proportionalShare(totals.cpuOnly.memoryBytes, gpus, totals.gpus))),
  };
  const tenantQuotas: QueueQuota[] = tenants.map((t) => ({ ...amountsFor(totals, t.gpus), ...limits(t), cpuOnly: cpuOnlyFor(t.gpus) }));

  const sum = (pick: (q: QueueQuota) => number) => tenantQuotas.reduce((s, q) => s + pick(q), 0);
  const defaultGpus = totals.gpus - claimed;
  const cpuOnlyRest: CpuOnlyAmounts | undefined = totals.cpuOnly && {
    cpu: formatMillis(totals.cpuOnly.cpuMillis - sum((q) => parseMillis(q.cpuOnly!.cpu))),
    memory: formatBytes(totals.cpuOnly.memoryBytes - sum((q) => parseQuantity(q.cpuOnly!.memory))),
  };
  const defaultQuota: QueueQuota = {
    gpus: defaultGpus,
    cpu: formatMillis(totals.cpuMillis - sum((q) => parseMillis(q.cpu))),
    memory: formatBytes(totals.memoryBytes - sum((q) => parseQuantity(q.memory))),
    rdma: totals.rdma - sum((q) => q.rdma),
    ...limits({ ...defaultClaim, gpus: defaultGpus }),
    cpuOnly: cpuOnlyRest,
  };
  return [defaultQuota, ...tenantQuotas];
}

/** The reclaim policy of one StorageClass: storage.reclaimPolicy, for all classes or per class (a class left out: Delete). */
export function reclaimPolicyOf(storage: ClusterDescription['storage'], className: string): 'Delete' | 'Retain' {
  const p = storage.reclaimPolicy;
  return typeof p === 'string' ? p : p[className as keyof typeof p] ?? 'Delete';
}

/** The queue of a namespace (undefined: the namespace has no LocalQueue). */
export function queueOfNamespace(model: ClusterModel, namespace: string): QueueModel | undefined {
  return model.queueing.queues.find((q) => q.namespace === namespace);
}

/** CPU and memory as canonical quantities (memory rounded up to whole bytes). */
function canonicalRequests(r: { readonly cpu: string; readonly memory: string }): { cpu: string; memory: string } {
  return { cpu: formatMillis(parseMillis(r.cpu)), memory: formatBytes(Math.ceil(parseQuantity(r.memory))) };
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
    // Not nvidia.com/gpu.product: GPU Feature Discovery rewrites it to <product>-MIG-<profile> on a node whose GPUs
    // run MIG under the strategy "single". The GPU Operator labels every GPU node gpu.present=true, MIG or not, and
    // the GPU workers are all of one type (nodes.gpuWorkers), so this label selects exactly them.
    selector: { [LABELS.gpuPresent]: 'true' },
    // The GPU taint is tolerated even when the workers do not carry it (yet): the GPU Operator may add it.
    tolerations: w.taints.some((t) => t.key === RESOURCES.gpu && t.effect === 'NoSchedule' && t.value === undefined)
      ? tolerationsFor(w.taints)
      : [...tolerationsFor(w.taints), { key: RESOURCES.gpu, operator: 'Exists', effect: 'NoSchedule' }],
  };
  const serviceNode: NodePlacement = {
    selector: d.nodes.service.labels,
    tolerations: tolerationsFor(d.nodes.service.taints),
  };
  const cpuWorkers: NodePlacement | undefined = d.nodes.cpuWorkers && {
    selector: d.nodes.cpuWorkers.labels,
    tolerations: tolerationsFor(d.nodes.cpuWorkers.taints),
  };

  // Quotas: see queueQuotas(); the nominal quotas over the cohort add up to what the nodes have for workloads:
  // their allocatable less what each node keeps for its DaemonSets and system pods (nodes.*.reserved).
  const q = d.queueing;
  const limit = (v: number | null | undefined) => (v === null || v === undefined ? undefined : v);
  const cpuOnlyNodes = d.nodes.cpuWorkers;
  const forWorkloads = (n: { cpu: string; memory: string; reserved: { cpu: string; memory: string } }) => ({
    cpuMillis: parseMillis(n.cpu) - parseMillis(n.reserved.cpu),
    memoryBytes: Math.floor(parseQuantity(n.memory)) - Math.ceil(parseQuantity(n.reserved.memory)),
  });
  const gpuNode = forWorkloads(w);
  const cpuNode = cpuOnlyNodes && forWorkloads(cpuOnlyNodes);
  // What tenants may run outside Kueue is kept out of the quotas too (the description checks that something is left).
  const unqueuedCpuMillis = d.tenants.reduce((n, t) => n + parseMillis(t.unqueued.cpu), 0);
  const unqueuedMemoryBytes = d.tenants.reduce((n, t) => n + Math.ceil(parseQuantity(t.unqueued.memory)), 0);
  const totals: QuotaTotals = {
    gpus,
    cpuMillis: w.count * gpuNode.cpuMillis - unqueuedCpuMillis,
    memoryBytes: w.count * gpuNode.memoryBytes - unqueuedMemoryBytes,
    rdma: rdmaDevices,
    cpuOnly: cpuOnlyNodes && cpuNode && {
      cpuMillis: cpuOnlyNodes.count * cpuNode.cpuMillis,
      memoryBytes: cpuOnlyNodes.count * cpuNode.memoryBytes,
    },
  };
  const claims: QueueClaim[] = d.tenants.map((t) => ({
    gpus: t.borrowingOnly ? 0 : t.gpus,
    // A borrowing-only tenant's "gpus" is how much it may borrow.
    borrowingLimit: t.borrowingOnly ? t.gpus : limit(t.borrowingLimit === undefined ? q.borrowingLimit : t.borrowingLimit),
    lendingLimit: limit(t.lendingLimit === undefined ? q.lendingLimit : t.lendingLimit),
  }));
  const defaultClaim = { borrowingLimit: limit(q.borrowingLimit), lendingLimit: limit(q.lendingLimit) };
  const [defaultQuota, ...tenantQuotas] = queueQuotas(totals, defaultClaim, claims);
  const tenants: TenantModel[] = d.tenants.map((t, i) => ({
    name: t.name,
    clusterQueue: t.name,
    localQueue: t.queue ?? t.name,
    namespace: t.namespace ?? t.name,
    defaulting: (t.queue ?? t.name) === KUEUE_DEFAULT_LOCAL_QUEUE,
    group: t.group ?? `tenant-${t.name}`,
    borrowingOnly: t.borrowingOnly,
    fairSharingWeight: t.fairSharingWeight,
    stopPolicy: t.stopPolicy,
    labels: t.labels,
    quota: tenantQuotas[i],
    priorities: t.priorities ?? q.priorities.map((p) => p.name),
    unqueued: { ...canonicalRequests(t.unqueued), pods: t.unqueued.pods },
    defaultRequest: canonicalRequests(t.defaultRequest),
  }));
  const defaultQueue: QueueModel = {
    clusterQueue: q.defaultClusterQueue,
    localQueue: q.defaultQueue,
    namespace: NAMESPACES.default,
    defaulting: q.defaultQueue === KUEUE_DEFAULT_LOCAL_QUEUE,
    fairSharingWeight: 1,
    quota: defaultQuota,
    stopPolicy: q.defaultStopPolicy,
  };

  const priorities: PriorityModel[] = q.priorities.map((p) => ({ name: p.name, value: p.value, default: p.default }));

  return {
    name: d.name,
    description: d,
    capacity,
    rdma,
    gpuWorkers,
    gpuProduct: gpuProductFacts(w.gpuProduct),
    serviceNode,
    cpuWorkers,
    reservedTaints: [...d.nodes.service.taints, ...d.nodes.reservedTaints]
      .filter((t, i, all) => all.findIndex((u) => u.key === t.key && u.value === t.value && u.effect === t.effect) === i),
    queueing: {
      cohort: q.cohort,
      defaultQueue,
      queues: [defaultQueue, ...tenants],
      priorities,
      defaultPriority: priorities.find((p) => p.default),
    },
    tenants,
    releases: Object.fromEntries(RELEASE_KEYS.map((key) => [key, renderedRelease(d, key)])) as Record<ReleaseKey, CarriedRelease>,
    adopted: adoptedObjects(d),
    allocatedNodePorts: allocatedNodePorts(d),
    argocd: d.gitops.argocd ?? (d.gitops.destinationServer === IN_CLUSTER_SERVER ? 'managed' : 'external'),
    commonLabels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.partOf]: d.name },
    servedApiVersions: d.monitoring.serviceMonitorCrd ? [`${SERVICE_MONITOR_API.group}/${SERVICE_MONITOR_API.version}`] : [],
    admissionPolicies: Number(d.kubernetesVersion.split('.')[1]) >= ADMISSION_POLICY_MINOR,
  };
}

/** The release an operator's CRs are rendered for (the description validated it). */
function renderedRelease(d: ClusterDescription, key: ReleaseKey): CarriedRelease {
  const given = d.releases[key];
  if (given === undefined || d.installs[key] === 'managed') return pinnedRelease(key);
  const form = releaseForm(key, given);
  if (!form.ok) throw new Error(`releases.${key}: ${form.message}`);
  return form.release;
}
