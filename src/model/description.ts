import { z } from 'zod';
import { DASHBOARD, KUEUE_DEFAULT_LOCAL_QUEUE, LABELS, NAMESPACES, SINGLETONS, STORAGE_CLASSES, TENANCY } from './names';
import { formatBytes, formatMillis, parseQuantity } from './quantity';
import { carriedReleases, RELEASE_KEYS, RELEASE_NAMES, ReleaseKey, releaseForm, previousEntry } from './releases';
import { VERSIONS } from '../versions';
import {
  absolutePath, dnsLabel, dnsSubdomain, envVar, exactMemoryTotal, gitRepoUrl, gitRevision, gpuCount, gpusPerNode, installMode, intRange,
  labelKey, labels, labelValue, nodeCount, nonEmptyString, nonNegativeInt, pinnedImage, positiveInt, promDuration, quantity, repoPath,
  repositoryUrl, taint, waitDuration, withoutCredentials,
} from './schema-types';

/**
 * The cluster description: the one input of the toolkit. Every field of
 * ../shared/reference/instant-cluster.yaml keeps its name and meaning; the other fields have
 * defaults, so the reference file is a complete description as it stands.
 *
 * Field docs here are the user documentation: they end up in the exported JSON Schema
 * (`.describe()`), which editors show on hover.
 */

/** The API server of the cluster Argo CD runs in, as Argo CD names it. */
export const IN_CLUSTER_SERVER = 'https://kubernetes.default.svc';

const gitops = z.strictObject({
  repoURL: gitRepoUrl().describe('Git repository Argo CD reads the rendered manifests from (https://, ssh:// or user@host:path).'),
  targetRevision: gitRevision().default('HEAD').describe('Branch, tag or commit Argo CD syncs.'),
  path: repoPath().describe('Folder of this cluster\'s rendered manifests in the repository (dist/<name>), relative to its top.'),
  namespace: dnsLabel().default('argocd').describe('Namespace Argo CD runs in (Applications and the AppProject live there).'),
  project: dnsLabel().optional().describe('AppProject name. Default: the cluster name.'),
  destinationServer: withoutCredentials(nonEmptyString('a Kubernetes API server URL')).default(IN_CLUSTER_SERVER).describe('API server the Applications deploy to.'),
  argocd: z.enum(['managed', 'external'], { error: 'expected "managed" or "external"' }).optional()
    .describe('Who runs the Argo CD that syncs this cluster. "managed": the toolkit renders it into dist/<name>/argocd/ (the pinned Argo CD release, '
      + 'every pod on the service node, argocd-cm with the health checks the sync waves wait on), applied once by hand at bootstrap and managed by '
      + 'Argo CD itself afterwards. "external": an Argo CD installed otherwise (a fleet hub, or one the cluster already runs) syncs it, and its argocd-cm '
      + `needs the same health checks (dist/fleet/). Default: "managed" when destinationServer is the cluster itself (${IN_CLUSTER_SERVER}), else "external".`),
  argocdInstall: z.enum(['upstream', 'vendored'], { error: 'expected "upstream" or "vendored"' }).default('upstream')
    .describe('Where the argocd folder (gitops.argocd: managed) takes Argo CD\'s install from, at the bootstrap and when Argo CD syncs itself. "upstream": '
      + 'the release\'s kustomize remote base on GitHub (https://github.com/argoproj/argo-cd//manifests/cluster-install?ref=<tag>, or its mirrors.git mirror). '
      + '"vendored": the copy of that tree the toolkit package ships, written into dist/<name>/argocd/upstream/ and built from there, so that neither '
      + 'the bootstrap nor Argo CD needs anything but this repository (air-gapped sites).'),
  automated: z.strictObject({
    prune: z.boolean().default(true).describe('Delete objects that disappeared from dist/ at the automated sync. false: the automated sync prunes '
      + 'nothing (Argo CD does not even start one for a commit that only removes objects): they stay, OutOfSync, until a sync with prune '
      + '(argocd app sync <application> --prune); synth and diff say so on each line.'),
    selfHeal: z.boolean().default(true).describe('Revert changes made in the cluster by hand.'),
  }).prefault({}).describe('Automated sync of configuration (samples never auto-sync).'),
  waveWait: waitDuration(10, 24 * 3600).default('10m')
    .describe('The longest the root Application\'s sync waves wait on an Application that does not get Healthy: one whose own sync has run this long, '
      + 'or that is still Progressing, Degraded or Missing this long after its last sync finished (an operand roll that hangs, or a GPU node NotReady '
      + 'where the GPU Operator\'s operands tolerate its taints, keeps the ClusterPolicy not ready), no longer holds the waves after it, so every commit reaches every Application. A failed sync of the commit an Application was given '
      + 'is never waited past (the root retries until a commit fixes it), and a Suspended one (a held queue) never holds the waves. '
      + 'Argo CD notices the bound at its next refresh of the root (timeout.reconciliation, 3 minutes by default).'),
}).describe('Where Argo CD finds this cluster\'s manifests.');

/**
 * An image registry, a registry and a path in it, or a whole repository (`nvcr.io`, `harbor.lab:5000/nvcr`,
 * `nvcr.io/nvidia/gpu-operator`): what an image reference starts with.
 */
const registryPrefix = () => z.string({ error: 'expected an image registry such as "nvcr.io" or "harbor.lab/nvcr"' })
  .regex(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/, { error: 'expected an image registry such as "nvcr.io" or "harbor.lab/nvcr" (no scheme, no tag)' });

const mirrors = z.strictObject({
  charts: z.record(repositoryUrl(), repositoryUrl()).default({})
    .describe('Helm chart repositories of the managed installs, by URL prefix (the longest wins): upstream -> mirror, which serves the same charts at the '
      + 'same versions. Example: "oci://registry.k8s.io/kueue/charts": "oci://harbor.lab/kueue/charts". The AppProject permits the mirrors.'),
  git: z.record(repositoryUrl(), repositoryUrl()).default({})
    .describe('Git repositories, by URL prefix: upstream -> mirror at the same tags, for the managed installs\' kustomize overlays and Argo CD\'s own '
      + 'install base (gitops.argocdInstall: upstream). Example: "https://github.com/": "https://git.lab/github/".'),
  images: z.record(registryPrefix(), registryPrefix()).default({})
    .describe('Image registries, by prefix (a registry, a path in it or a whole repository; the longest wins): upstream -> mirror, rewritten in every image reference the toolkit renders (containers, the operators\' image '
      + 'coordinates in ClusterPolicy and NicClusterPolicy), in Argo CD\'s install (kustomize images) and in the managed installs: each chart\'s image '
      + 'values (read from its pinned default values, subcharts included) and each overlay\'s kustomize images. Images an operator pulls by itself are '
      + 'not in any render: check lists what remains (image-mirror); mirror those in the nodes\' container runtime. '
      + 'Example: "nvcr.io": "harbor.lab/nvcr".'),
}).prefault({}).describe('Mirrors of the upstream chart repositories, Git repositories and image registries, for a site that cannot reach them.');

const serviceNode = z.strictObject({
  taints: z.array(taint()).default([{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }])
    .describe('Taints of the service node; add-on management and monitoring tolerate them.'),
  labels: labels().default({ 'node-role.kubernetes.io/control-plane': '' })
    .describe('Labels selecting the service node (control plane, add-on management, monitoring).'),
});

/**
 * What the DaemonSets of an Instant Cluster GPU worker use. Of their upstream defaults only Node Feature Discovery's
 * worker requests anything (5m, 64Mi); the others (Cilium, node exporter, the GPU Operator's device plugin, GPU
 * Feature Discovery, DCGM exporter, MIG manager and validator, the RDMA shared device plugin) request nothing but use
 * CPU and memory all the same. Quotas that hand out all of the allocatable let Kueue admit pods the scheduler then
 * cannot place beside a DaemonSet that does request, and leave the agents nothing. The default keeps 2 cores and
 * 4 GiB per GPU worker (1 and 2 GiB per CPU worker); `kubectl top pods -A` on a busy node tells what yours use.
 * test/kueue/quota.test.ts checks the default against the requests of the vendored charts.
 */
export const GPU_WORKER_DAEMONSETS = 'Cilium, node exporter, Node Feature Discovery, the GPU Operator\'s operands, the RDMA device plugin';
export const GPU_WORKER_RESERVE = { cpu: '2', memory: '4Gi' } as const;
export const CPU_WORKER_RESERVE = { cpu: '1', memory: '2Gi' } as const;

const nodeReserve = (defaults: { readonly cpu: string; readonly memory: string }) => z.strictObject({
  cpu: quantity('cpu', { zero: true }).default(defaults.cpu).describe('CPU per node kept out of the quotas.'),
  memory: quantity('memory', { zero: true }).default(defaults.memory).describe('Memory per node kept out of the quotas.'),
}).prefault({});

/** A node type's reserve must leave something for the quotas. */
function reserveFits(nodes: { cpu: string; memory: string; reserved: { cpu: string; memory: string } }, ctx: z.RefinementCtx): void {
  for (const r of ['cpu', 'memory'] as const) {
    let reserved: number;
    let allocatable: number;
    try {
      reserved = parseQuantity(nodes.reserved[r]);
      allocatable = parseQuantity(nodes[r]);
    } catch {
      continue; // the fields' own checks report it
    }
    if (reserved >= allocatable) {
      ctx.addIssue({ code: 'custom', path: ['reserved', r], message: `reserves ${nodes.reserved[r]} of the ${nodes[r]} ${r} a node has: nothing would be left for the quotas` });
    }
  }
}

const gpuWorkers = z.strictObject({
  count: nodeCount().describe('Number of GPU worker nodes.'),
  gpusPerNode: gpusPerNode().describe('nvidia.com/gpu allocatable per node.'),
  gpuProduct: labelValue().describe('Value of the nvidia.com/gpu.product node label (set by GPU Feature Discovery).'),
  cpu: quantity('cpu').describe('Allocatable CPU per node.'),
  memory: quantity('memory').describe('Allocatable memory per node.'),
  localDisk: z.strictObject({
    path: absolutePath().describe('Node-local NVMe mount; backs the local-disk StorageClass.'),
  }).describe('Node-local disk of every GPU worker.'),
  reserved: nodeReserve(GPU_WORKER_RESERVE).describe(`CPU and memory of each GPU worker kept out of the Kueue quotas for the DaemonSets and system pods that run there (${GPU_WORKER_DAEMONSETS}); the quotas share the rest.`),
  taints: z.array(taint()).default([]).describe('Taints of the GPU workers (Instant Cluster: none); jobs and agents tolerate them.'),
}).superRefine(exactMemoryTotal).superRefine(reserveFits);

const cpuWorkers = z.strictObject({
  count: nodeCount().describe('Number of CPU-only worker nodes.'),
  cpu: quantity('cpu').describe('Allocatable CPU per node.'),
  memory: quantity('memory').describe('Allocatable memory per node.'),
  labels: labels().default({ 'node-role.kubernetes.io/cpu-worker': '' }).describe('Labels selecting the CPU workers.'),
  reserved: nodeReserve(CPU_WORKER_RESERVE).describe('CPU and memory of each CPU worker kept out of the Kueue quotas for its DaemonSets (Cilium, node exporter, Node Feature Discovery).'),
  taints: z.array(taint()).default([]).describe('Taints of the CPU workers.'),
}).superRefine(exactMemoryTotal).superRefine(reserveFits);

const rdmaSharedDevice = z.strictObject({
  // k8s-rdma-shared-dev-plugin accepts resource names of [a-zA-Z0-9_]+ only.
  name: z.string().regex(/^[a-z0-9_]+$/, { error: 'expected a resource name of lower-case letters, digits and "_" (the RDMA device plugin accepts no other)' })
    .max(63).describe('RDMA shared device resource name; pods request rdma/<name>.'),
  // k8s-rdma-shared-dev-plugin rejects only a negative rdmaHcaMax ("Invalid value for rdmaHcaMax < 0") and reads it
  // into a Go int. 0 passes upstream but advertises no device, so no pod could ever get one: rejected here.
  hcaMax: intRange(1, 2147483647).default(63).describe('rdmaHcaMax: pods that may share the HCAs of a node at a time (at least 1).'),
  vendors: z.array(z.string().regex(/^[0-9a-f]{4}$/, { error: 'expected a 4-digit lower-case hex PCI vendor id such as "15b3"' })).default(['15b3'])
    .describe('PCI vendor ids selecting the HCAs (Mellanox/NVIDIA: 15b3).'),
  deviceIDs: z.array(z.string().regex(/^[0-9a-f]{4}$/, { error: 'expected a 4-digit lower-case hex PCI device id' })).default([])
    .describe('PCI device ids selecting the HCAs.'),
  drivers: z.array(nonEmptyString('a kernel driver name')).default([]).describe('Kernel drivers selecting the HCAs (e.g. mlx5_core).'),
  ifNames: z.array(nonEmptyString('an interface name')).default([]).describe('Network interface names selecting the HCAs.'),
  linkTypes: z.array(z.enum(['infiniband', 'ether'], { error: 'expected "infiniband" or "ether"' })).default([])
    .describe('Link types selecting the HCAs.'),
});

const infiniband = z.strictObject({
  hcas: z.array(nonEmptyString('an HCA name such as mlx5_0'), { error: 'expected a list of HCA names' })
    .min(1, { error: 'expected at least one HCA (an InfiniBand cluster without HCAs cannot run RDMA)' })
    .describe('InfiniBand HCAs of each GPU worker; NCCL_IB_HCA names them.'),
  rdmaSharedDevice: rdmaSharedDevice.describe('The RDMA shared device plugin\'s one device (NicClusterPolicy config).'),
  required: z.boolean().default(true).describe('Multi-node jobs must use InfiniBand (NCCL_IB_DISABLE=0 and the RDMA device).'),
});

const network = z.strictObject({
  podInterface: nonEmptyString('an interface name').default('eth0').describe('Pod network interface (Cilium); NCCL_SOCKET_IFNAME.'),
  infiniband: infiniband.optional().describe('InfiniBand fabric; omit for clusters without RDMA.'),
  secondaryNetwork: z.strictObject({
    multus: z.boolean().default(false).describe('Deploy Multus through the Network Operator.'),
    ipoib: z.boolean().default(false).describe('Deploy the IPoIB CNI through the Network Operator.'),
    nvIpam: z.boolean().default(false).describe('Deploy nv-ipam through the Network Operator.'),
  }).prefault({}).describe('Secondary networks (off for the Instant Cluster: RDMA shared device only).'),
});

const STORAGE_CLASS_NAMES = [STORAGE_CLASSES.localPath, STORAGE_CLASSES.sharedPath, STORAGE_CLASSES.localDisk] as const;

const reclaimPolicyValue = () => z.enum(['Delete', 'Retain'], { error: 'expected "Delete" or "Retain"' });
/** A pre-installed cluster may keep one class's volumes (local-disk: Retain) and delete the others': a reclaim policy per class. */
const reclaimPolicy = z.union([
  reclaimPolicyValue(),
  z.strictObject({
    [STORAGE_CLASSES.localPath]: reclaimPolicyValue().optional(),
    [STORAGE_CLASSES.sharedPath]: reclaimPolicyValue().optional(),
    [STORAGE_CLASSES.localDisk]: reclaimPolicyValue().optional(),
  }),
], { error: `expected "Delete", "Retain", or a mapping of the StorageClasses (${STORAGE_CLASS_NAMES.join(', ')}) to them` });

const storage = z.strictObject({
  defaultClass: z.enum(STORAGE_CLASS_NAMES, { error: `expected one of the rendered StorageClasses: ${STORAGE_CLASS_NAMES.join(', ')}` })
    .default('local-path').describe('The one StorageClass marked default.'),
  localPath: z.strictObject({
    path: absolutePath().default('/opt/local-path-provisioner').describe('Node path of the local-path StorageClass.'),
  }).prefault({}).describe('The default local-path StorageClass.'),
  sharedFilesystem: z.strictObject({
    path: absolutePath().describe('Folder on the shared filesystem (/home) backing the shared-path RWX StorageClass.'),
  }).describe('The shared filesystem mounted on every node.'),
  reclaimPolicy: reclaimPolicy.default('Delete')
    .describe('Reclaim policy of the StorageClasses: one for all ("Delete", "Retain"), or one per class ({local-disk: Retain}; a class left out: Delete). The field is immutable in a live StorageClass: init writes what each pre-installed class has.'),
});

const priority = z.strictObject({
  name: dnsSubdomain().describe('WorkloadPriorityClass (and PriorityClass) name.'),
  // Kubernetes reserves values above 1e9 for system-cluster-critical / system-node-critical.
  value: z.int({ error: 'expected an integer priority' })
    .min(-2147483648, { error: 'expected a priority from -2147483648 to 1000000000' })
    .max(1_000_000_000, { error: 'expected a priority of at most 1000000000 (higher values are reserved for system priority classes)' })
    .describe('Priority value; higher is admitted and scheduled first.'),
  default: z.boolean().default(false).describe('The priority of the queued work rendered for this cluster (samples, tutorials) that names none: its kueue.x-k8s.io/priority-class label and its pods\' priorityClassName (at most one). No PriorityClass is made globalDefault: workloads of others without a priority label get their pods\' priority (0 unless the cluster has a globalDefault PriorityClass).'),
});

const quotaLimit = z.union([gpuCount(), z.null()]);

/**
 * A hold of a ClusterQueue, Kueue's stopPolicy. A field of the description because the ClusterQueue is Argo CD's: a
 * hold made by hand (kubectl patch) is reverted by self-heal, or by the next sync.
 */
const stopPolicy = () => z.enum(['None', 'Hold', 'HoldAndDrain'], { error: 'expected "None", "Hold" or "HoldAndDrain"' }).default('None')
  .describe('Hold the tenant\'s ClusterQueue (Kueue\'s stopPolicy): "Hold" admits no new workload and lets the admitted ones run, "HoldAndDrain" also '
    + 'evicts the admitted ones; "None" admits. A held queue is Suspended in Argo CD, and so are its LocalQueues: the sync waves do not wait on it.');

const queueing = z.strictObject({
  defaultQueue: dnsLabel().default(KUEUE_DEFAULT_LOCAL_QUEUE).describe('LocalQueue pre-wired in namespace "default". Named "default" (the Instant Cluster\'s), Kueue queues to it every pod and job created in that namespace without a queue label (LocalQueue defaulting, always on since Kueue v0.17).'),
  priorities: z.array(priority).default([{ name: 'normal', value: 500, default: true }]).describe('Workload priorities.'),
  cohort: dnsLabel().default('gpu-cohort').describe('Cohort of all ClusterQueues; idle GPUs are shared inside it.'),
  defaultClusterQueue: dnsLabel().default('default').describe('ClusterQueue behind the default LocalQueue; gets the GPUs tenants do not claim.'),
  defaultStopPolicy: stopPolicy().describe('Hold the default ClusterQueue (its stopPolicy), like tenants[].stopPolicy.'),
  rdma: z.enum(['covered', 'excluded'], { error: 'expected "covered" or "excluded"' }).default('covered')
    .describe('RDMA in Kueue: "covered" quotas rdma/<name> in every ClusterQueue; "excluded" makes Kueue ignore the rdma/ prefix (managed Kueue only).'),
  borrowingLimit: quotaLimit.default(null).describe('GPUs a ClusterQueue may borrow from the cohort (null: unlimited).'),
  lendingLimit: quotaLimit.default(null).describe('GPUs a ClusterQueue may lend to the cohort (null: all idle GPUs).'),
  preemption: z.strictObject({
    withinClusterQueue: z.enum(['Never', 'LowerPriority', 'LowerOrNewerEqualPriority']).default('LowerPriority')
      .describe('Preempt workloads of the same ClusterQueue.'),
    reclaimWithinCohort: z.enum(['Never', 'LowerPriority', 'Any']).default('Any')
      .describe('Reclaim nominal quota lent to other ClusterQueues of the cohort.'),
  }).prefault({}).describe('Preemption policy of every ClusterQueue.'),
  fairSharing: z.boolean().default(false).describe('Fair sharing of idle GPUs by ClusterQueue weight (tenants[].fairSharingWeight) instead of classical preemption; needs installs.kueue: managed.'),
  podPriorityClasses: z.boolean().default(true)
    .describe('Render a Kubernetes PriorityClass per priority (none globalDefault); the rendered queued jobs\' pods name the one of their priority, so pod preemption agrees with queue order. Off: their pods keep the cluster\'s default pod priority.'),
  topology: z.strictObject({
    name: dnsLabel().default('gpu-topology').describe('Topology object name.'),
    levels: z.array(labelKey()).min(1, { error: 'expected at least one topology level' })
      .default([LABELS.hostname]).describe('Node labels from the widest level to the node (e.g. block, rack, kubernetes.io/hostname).'),
  }).optional().describe('Topology-aware scheduling: when set, GPU flavors reference this Topology.'),
});

/**
 * Tenants per cluster. Every tenant's objects are one folder that Argo CD builds with one kustomize run, and
 * kustomize compares each resource with every one it holds already: 2,800 objects (400 tenants) take 20 s of CPU,
 * 7,000 (1,000 tenants) over two minutes, beyond Argo CD's default manifest generation timeout (90 s; 60 s for the
 * controller's call to the repo server).
 */
export const MAX_TENANTS = 500;

/**
 * Node taints no tenant pod may tolerate besides the service node's (nodes.reservedTaints): the node lifecycle
 * controller's for a cordoned node and for nodes under memory, disk or PID pressure, which only DaemonSet pods
 * tolerate (their controller adds it). Kubernetes' DefaultTolerationSeconds admission gives every pod a toleration
 * of node.kubernetes.io/not-ready and unreachable (NoExecute, 300 s): those stay allowed.
 */
export const DEFAULT_RESERVED_TAINTS = ['unschedulable', 'memory-pressure', 'disk-pressure', 'pid-pressure']
  .map((c) => ({ key: `node.kubernetes.io/${c}`, effect: 'NoSchedule' as const }));

/** What a tenant may run outside Kueue, and the requests a container without any gets. */
export const UNQUEUED_DEFAULTS = { cpu: '4', memory: '16Gi', pods: 10 } as const;
export const CONTAINER_DEFAULT_REQUEST = { cpu: '250m', memory: '256Mi' } as const;

const tenant = z.strictObject({
  name: dnsLabel().describe('Tenant name; names its ClusterQueue.'),
  gpus: gpuCount().describe('Nominal GPU quota; may borrow idle GPUs from the cohort. On a MultiKueue manager (fleet.yaml): 0, its ClusterQueue holds the sum of its workers\' queues of the same namespace and name.'),
  namespace: dnsLabel().optional().describe('Tenant namespace. Default: the tenant name.'),
  queue: dnsLabel().optional().describe('LocalQueue of the tenant namespace (its jobs name it in kueue.x-k8s.io/queue-name). Default: the tenant name. '
    + '"default" opts the namespace into Kueue\'s LocalQueue defaulting (always on since v0.17): every pod and job created there without a queue label is queued to it, '
    + 'CPU-only debug pods included (gated until admitted, charged to the tenant\'s quota, placed on its flavor\'s nodes). Any other name leaves such pods alone: '
    + 'a CPU-only pod runs outside the quota, a GPU or RDMA pod is refused by the guardrails.'),
  group: nonEmptyString('a group name').optional().describe('Group bound to the tenant role (OIDC/Kanidm). Default: tenant-<name>.'),
  borrowingOnly: z.boolean().default(false).describe('The quota is a share of borrowed GPUs, not reserved capacity (allowed to exceed the cluster).'),
  stopPolicy: stopPolicy(),
  borrowingLimit: quotaLimit.optional().describe('Overrides queueing.borrowingLimit for this tenant.'),
  lendingLimit: quotaLimit.optional().describe('Overrides queueing.lendingLimit for this tenant.'),
  labels: labels().default({}).describe('Extra labels of the tenant namespace.'),
  fairSharingWeight: z.number({ error: 'expected a fair-sharing weight from 0 to 1000' }).min(0, { error: 'expected a fair-sharing weight from 0 to 1000' })
    .max(1000, { error: 'expected a fair-sharing weight from 0 to 1000' }).default(1)
    .describe('Weight of the tenant\'s ClusterQueue when queueing.fairSharing is on (0: always last).'),
  priorities: z.array(dnsSubdomain()).optional()
    .describe('Names of queueing.priorities the tenant\'s queued work may use, as a pod\'s priorityClassName or a kueue.x-k8s.io/priority-class label (the guardrails refuse any other class, system-* included). Default: all of them.'),
  unqueued: z.strictObject({
    cpu: quantity('cpu', { zero: true }).default(UNQUEUED_DEFAULTS.cpu).describe('CPU requests of all its pods outside Kueue together.'),
    memory: quantity('memory', { zero: true }).default(UNQUEUED_DEFAULTS.memory).describe('Memory requests of all its pods outside Kueue together.'),
    pods: nonNegativeInt().default(UNQUEUED_DEFAULTS.pods).describe('Pods outside Kueue at a time.'),
  }).prefault({}).describe(`What the tenant may run outside Kueue (a debug or data-preparation pod without a queue label): such a pod must set priorityClassName: ${TENANCY.unqueuedPriorityClass} (the lowest priority, never preempting), and the namespace's ResourceQuota ${TENANCY.unqueuedQuota} holds them to these amounts. The amounts of all tenants come out of what the Kueue quotas share (like nodes.gpuWorkers.reserved), so the workers' reserve stays with the DaemonSets and Kueue never promises what unqueued pods hold.`),
  defaultRequest: z.strictObject({
    cpu: quantity('cpu').default(CONTAINER_DEFAULT_REQUEST.cpu).describe('CPU request.'),
    memory: quantity('memory').default(CONTAINER_DEFAULT_REQUEST.memory).describe('Memory request.'),
  }).prefault({}).describe('Requests a container of the tenant\'s namespace gets when it sets none (LimitRange container-defaults): Kueue and the ResourceQuota count them. No default limits: a limit the tenant did not ask for would throttle its jobs.'),
});

const installs = z.strictObject({
  gpuOperator: installMode().default('preinstalled').describe('NVIDIA GPU Operator (Helm chart).'),
  networkOperator: installMode().default('preinstalled').describe('NVIDIA Network Operator (Helm chart).'),
  kueue: installMode().default('preinstalled').describe('Kueue (OCI Helm chart).'),
  mpiOperator: installMode().default('preinstalled').describe('MPI Operator (kustomize overlay at the release tag).'),
  // The Instant Cluster ships the MPI Operator only (product page): no PyTorchJob CRD until a Training Operator is installed.
  trainingOperator: z.enum(['none', 'preinstalled', 'managed'], { error: 'expected "none", "preinstalled" or "managed"' }).default('none')
    .describe('Kubeflow Training Operator (kustomize overlay at the release tag): "none" (the Instant Cluster has none; the PyTorchJob sample is not rendered), "preinstalled" (the cluster already runs one), "managed" (installed here).'),
  localPathProvisioner: installMode().default('preinstalled').describe('local-path-provisioner (rendered in storage/).'),
  monitoring: installMode().default('preinstalled').describe('VictoriaMetrics + Grafana (victoria-metrics-k8s-stack chart).'),
  dynamo: z.enum(['none', 'preinstalled', 'managed'], { error: 'expected "none", "preinstalled" or "managed"' }).default('none')
    .describe('NVIDIA Dynamo platform (dynamo-platform chart): "none" (not used), "preinstalled" (the cluster already runs it), "managed" (installed here through Argo CD). Its serving samples render with tutorials.dynamo.enabled.'),
}).prefault({}).describe('Who installs each add-on: "preinstalled" (the Instant Cluster image) or "managed" (rendered here, synced by Argo CD).');

const carried = (key: ReleaseKey) => carriedReleases(key).map((r) => r.version).join(', ');

/** The release a pre-installed operator runs: its tag or chart version. */
const operatorRelease = (key: ReleaseKey, what: string) => z.string({ error: 'expected a release such as "v26.3.3" or "26.1.2"' })
  .optional()
  .describe(`The ${RELEASE_NAMES[key]} release the cluster runs (installs.${key}: preinstalled), as init reads it: ${what}. Its CRs are rendered in the form that `
    + `release's CRD accepts, with that release's images: this toolkit carries ${carried(key)} (a patch release renders as its minor release). Unset: the pinned `
    + `release (${carriedReleases(key).find((r) => r.pinned)!.version}), whose CRs a cluster still running an older one refuses (preflight compares it with the `
    + 'cluster; upgrade-plan plans the upgrade to the pinned release).');

const releases = z.strictObject({
  gpuOperator: operatorRelease('gpuOperator', 'the tag of its Deployment\'s image (gpu-operator), else the ClusterPolicy CRD the cluster serves'),
  networkOperator: operatorRelease('networkOperator', 'the tag of its Deployment\'s image, else the NicClusterPolicy CRD the cluster serves'),
  kueue: operatorRelease('kueue', 'the tag of its controller manager\'s image'),
}).prefault({}).describe('The releases of the pre-installed operators (init writes them from the cluster): the adopted ClusterPolicy and NicClusterPolicy are '
  + 'rendered in the form each release accepts.');

const gpuOperator = z.strictObject({
  driver: installMode().default('preinstalled').describe('"preinstalled": the node image ships the driver (driver.enabled=false); "managed": the operator runs driver containers.'),
  toolkit: installMode().default('preinstalled').describe('"preinstalled": the node image ships the container toolkit (toolkit.enabled=false); "managed": the operator installs it.'),
  devicePlugin: z.boolean().default(true).describe('Run the NVIDIA device plugin (advertises nvidia.com/gpu).'),
  gfd: z.boolean().default(true).describe('Run GPU Feature Discovery (sets the nvidia.com/gpu.* node labels).'),
  dcgmExporter: z.boolean().default(true).describe('Run the DCGM exporter (GPU metrics).'),
  dcgm: z.boolean().default(false).describe('Run the standalone DCGM host engine (off: the exporter embeds its own).'),
  migManager: z.boolean().default(true).describe('Run the MIG manager.'),
  migStrategy: z.enum(['none', 'single', 'mixed'], { error: 'expected "none", "single" or "mixed"' }).default('single').describe('MIG strategy ("mixed" needs the MIG manager).'),
  nodeStatusExporter: z.boolean().default(false).describe('Run the node status exporter (operator health metrics per node).'),
  cdi: z.boolean().default(true).describe('Use CDI for device injection (cdi.enabled; cdi.default stays false).'),
  acceptVisibleDevicesEnvvarWhenUnprivileged: z.boolean().optional()
    .describe('Managed toolkit only: the toolkit\'s accept-nvidia-visible-devices-envvar-when-unprivileged. Default false: an unprivileged container gets only the GPUs the device plugin allocated '
      + '(rendered as toolkit.env, and with cdi off the device plugin\'s volume-mounts list strategy). true lets any container name GPUs in NVIDIA_VISIBLE_DEVICES, or inherit "all" from a CUDA image, '
      + 'without a GPU request. A preinstalled toolkit reads it from the node image\'s /etc/nvidia-container-runtime/config.toml.'),
  devicePluginEnv: z.array(envVar()).default([]).describe('Extra env of the device plugin.'),
  toolkitEnv: z.array(envVar()).default([]).describe('Extra env of the container toolkit.'),
}).prefault({}).describe('The ClusterPolicy cluster-policy (the operator validator always runs: the ClusterPolicy has no switch for it).');

const networkOperator = z.strictObject({
  nicClusterPolicyName: z.string().default(SINGLETONS.nicClusterPolicy).describe(`Must stay "${SINGLETONS.nicClusterPolicy}": the operator reconciles no other name.`),
  docaDriver: z.boolean().default(false).describe('Run DOCA/OFED driver containers (off: the node image ships the driver).'),
}).prefault({}).describe('The NicClusterPolicy nic-cluster-policy (rendered only with network.infiniband).');

const nodeFeatureDiscovery = z.strictObject({
  deployedBy: z.enum(['gpu-operator', 'network-operator', 'external'], { error: 'expected "gpu-operator", "network-operator" or "external"' })
    .default('gpu-operator').describe('The one component that deploys Node Feature Discovery (a preinstalled GPU Operator already deploys one).'),
}).prefault({}).describe('Node Feature Discovery runs exactly once.');

// nccl-tests parses message sizes as a count with an optional K, M or G (powers of 1024).
const ncclBytes = () =>
  z.string({ error: 'expected a message size such as "512M" or "8G"' })
    .regex(/^[1-9][0-9]*[KMG]?$/, { error: 'expected a message size such as "512M" or "8G" (a count with an optional K, M or G)' });

/** The DCGM of the pinned GPU Operator release: diagnostics match the host engine the exporter uses. */
const DCGM_IMAGE = `${VERSIONS.gpuOperator.images.dcgm.repository}/${VERSIONS.gpuOperator.images.dcgm.image}:${VERSIONS.gpuOperator.images.dcgm.version}`;

const ncclTests = z.strictObject({
  image: pinnedImage().describe('nccl-tests image, pinned.'),
  binaryDir: absolutePath().default('/opt/nccl_tests/build').describe('Folder of the nccl-tests binaries in the image.'),
  benchmark: z.enum(['all_reduce_perf', 'all_gather_perf', 'reduce_scatter_perf', 'alltoall_perf', 'sendrecv_perf'], {
    error: 'expected one of all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf',
  }).default('all_reduce_perf').describe('nccl-tests binary of the multi-node test.'),
  minBytes: ncclBytes().default('512M').describe('Smallest message size (-b).'),
  maxBytes: ncclBytes().default('8G').describe('Largest message size (-e).'),
  stepFactor: intRange(2, 1024).default(2).describe('Message size multiplication factor (-f).'),
  iterations: intRange(1, 100000).default(20).describe('Iterations per message size (-n).'),
  shmSize: quantity('memory').default('64Gi').describe('Size of the memory-backed /dev/shm.'),
  ncclDebug: z.enum(['VERSION', 'WARN', 'INFO', 'TRACE'], { error: 'expected VERSION, WARN, INFO or TRACE' }).default('INFO').describe('NCCL_DEBUG.'),
});

const samples = z.strictObject({
  namespace: dnsLabel().default('default').describe('Namespace of the samples: "default" or a tenant namespace (a LocalQueue must exist there). '
    + 'The DCGM diagnostic stays in "default" (queueing.defaultQueue) either way: it needs SYS_ADMIN, which a tenant namespace refuses.'),
  queue: dnsLabel().optional().describe('LocalQueue of the samples. Default: the LocalQueue of samples.namespace (queueing.defaultQueue in "default", tenants[].queue in a tenant namespace).'),
  priority: dnsSubdomain().optional().describe('Kueue priority class of the samples. Default: the default entry of queueing.priorities.'),
  nodeNames: z.array(dnsSubdomain()).default([])
    .describe('GPU worker node names: per-node health checks render one object per name. Empty: one object per check, pinned to a placeholder node name replaced at launch.'),
  ttlSecondsAfterFinished: nonNegativeInt().default(86400).describe('Seconds a finished sample (and its logs) stays before it is deleted.'),
  ncclTests: ncclTests.describe('The NCCL test MPIJobs (multi-node fabric test and per-node NVLink check).'),
  pytorch: z.strictObject({
    image: pinnedImage().default('nvcr.io/nvidia/pytorch:25.01-py3').describe('PyTorch image of the PyTorchJob sample, pinned.'),
    steps: positiveInt().default(200).describe('Training steps of the DDP sample.'),
  }).prefault({}).describe('The PyTorchJob (DDP) sample, rendered where a Training Operator is (installs.trainingOperator not "none").'),
  dcgmDiag: z.strictObject({
    image: pinnedImage().default(DCGM_IMAGE).describe('DCGM image of the diagnostic Job, pinned (default: the GPU Operator release\'s DCGM).'),
    level: intRange(1, 4).default(2).describe('dcgmi diag run level (1 quick .. 4 extended).'),
  }).prefault({}).describe('The per-node DCGM diagnostic Job.'),
}).describe('Sample workloads in dist/<cluster>/samples/ (applied by hand, never auto-synced).');

const tutorials = z.strictObject({
  skypilot: z.strictObject({
    enabled: z.boolean().default(false)
      .describe('Render the SkyPilot tutorial: per queue namespace a launcher and a workload identity (ServiceAccount, Role; the launcher also a read-only ClusterRole), admission policies that keep them with SkyPilot, and client files for SkyPilot v0.10 in dist/<cluster>/tutorials/skypilot/. Off by default: a tutorial\'s RBAC has no place on a production cluster unless someone follows it.'),
    context: nonEmptyString('a kubeconfig context name').optional()
      .describe('kubeconfig context SkyPilot may use (kubernetes.allowed_contexts); it names the namespace. Default: the cluster name.'),
    image: pinnedImage().optional().describe('Image of the multi-node torchrun task, pinned. Default: samples.pytorch.image.'),
  }).prefault({}).describe('Gang-scheduled multi-node training submitted with SkyPilot through Kueue.'),
  dynamo: z.strictObject({
    enabled: z.boolean().default(false)
      .describe('Render the Dynamo serving samples (dist/<cluster>/dynamo/, applied by hand); needs the Dynamo platform (installs.dynamo "preinstalled" or "managed"). Off by default.'),
    tenant: dnsLabel().optional()
      .describe('Tenant whose namespace and quota the Dynamo samples use. Default: the tenant named "inference" when there is one, else namespace "default".'),
    model: nonEmptyString('a Hugging Face model id').default('Qwen/Qwen3-0.6B').describe('Model the vLLM workers serve (Hugging Face id).'),
    image: pinnedImage().default(VERSIONS.dynamo.vllmRuntimeImage)
      .describe(`Dynamo vLLM runtime image of the frontend and the workers, pinned; an image of ${VERSIONS.dynamo.registry} must carry a tag published with the Dynamo platform's release (check: dynamo-image-release; default: the vllm-runtime of Dynamo ${VERSIONS.dynamo.release}).`),
  }).prefault({}).describe('NVIDIA Dynamo serving samples (tutorials.dynamo.enabled, with installs.dynamo "preinstalled" or "managed").'),
}).prefault({}).describe('Worked examples rendered from the description, each opt-in (tutorials.*.enabled, default false).');

const monitoring = z.strictObject({
  namespace: dnsLabel().default('monitoring').describe('Namespace of the monitoring stack and its scrape objects.'),
  scraperServiceAccount: dnsSubdomain().optional()
    .describe('ServiceAccount of the VMAgent in monitoring.namespace: the only subject allowed to read /metrics endpoints that authorise callers (Kueue). '
      + 'Default: vmagent-vm-victoria-metrics-k8s-stack, what the victoria-metrics-k8s-stack chart creates for release "vm" (installs.monitoring: managed); '
      + 'for a pre-installed stack, vmagent-<name of its VMAgent> (kubectl get vmagent -A).'),
  serviceMonitorCrd: z.boolean().default(false)
    .describe('The cluster serves the prometheus-operator ServiceMonitor CRD (monitoring.coreos.com/v1: kubectl get crd servicemonitors.monitoring.coreos.com). '
      + 'Then the GPU Operator (v26.7.0) creates ServiceMonitors for itself and its node status exporter, and the VictoriaMetrics operator converts them '
      + 'into scrapes (its default): no scrape of the toolkit\'s own is rendered for those two (each would be scraped twice). Charts render what they render '
      + 'when the API exists (Argo CD passes it to helm). init sets it from the cluster\'s CRDs; preflight warns when it differs from them (drift-service-monitor-crd).'),
  grafanaAdminSecret: dnsSubdomain().default('grafana-admin')
    .describe('installs.monitoring: managed: the Secret in monitoring.namespace with Grafana\'s admin credentials (keys admin-user and admin-password), '
      + 'created once by hand (the cluster report gives the command) and never rendered: without it the chart would generate a new random password on every '
      + 'render (helm template cannot look the old one up), which Argo CD would apply on every refresh.'),
  controlPlaneScrapes: z.boolean().default(false)
    .describe('installs.monitoring: managed: scrape kube-scheduler, kube-controller-manager and etcd (and keep the stack\'s alerts on them). Off by default: '
      + 'kubeadm binds the scheduler and controller manager to 127.0.0.1 and serves etcd\'s metrics on 127.0.0.1:2381 only, so the scrapes fail and '
      + 'KubeSchedulerDown / KubeControllerManagerDown fire from day one. On: first set bind-address 0.0.0.0 for both and etcd listen-metrics-urls '
      + 'http://0.0.0.0:2381 in the kubeadm ClusterConfiguration (docs/components/gitops-and-fleet.md, managed installs).'),
  grafanaDashboardLabel: z.strictObject({
    key: labelKey().default('grafana_dashboard').describe('Label key.'),
    value: labelValue().default('1').describe('Label value.'),
  }).prefault({}).describe('Label the Grafana sidecar watches for dashboard ConfigMaps.'),
  dashboard: z.strictObject({
    enabled: z.boolean().default(true).describe('Render the Dashboard access objects (the Service chosen by "service" and the read-only viewer ServiceAccount).'),
    namespace: dnsLabel().default('kubernetes-dashboard').describe('Namespace of the Kubernetes Dashboard (Helm chart v7).'),
    release: dnsLabel().default('kubernetes-dashboard').describe('Helm release name of the Dashboard (app.kubernetes.io/instance of its Kong proxy pods; its Service is <release>-kong-proxy).'),
    service: z.enum(['preinstalled', 'adopt', 'own'], { error: 'expected "preinstalled", "adopt" or "own"' }).default('preinstalled')
      .describe(`Who serves the node port: "preinstalled" (the Instant Cluster's <release>-kong-proxy Service already serves NodePort ${DASHBOARD.preinstalledNodePort}; no Service rendered), "adopt" (render that Service with the chart's name, selector and ports and nodePort, taking it over; never pruned or deleted by Argo CD), "own" (a separate <release>-nodeport Service on nodePort, which must be free).`),
    nodePort: z.int({ error: 'expected a NodePort number' }).min(30000, { error: 'expected a NodePort from 30000 to 32767' })
      .max(32767, { error: 'expected a NodePort from 30000 to 32767' }).default(DASHBOARD.preinstalledNodePort)
      .describe(`NodePort the Dashboard is reached on: the pre-installed Service's ("preinstalled"), the adopted Service's ("adopt"), or the separate Service's ("own": not ${DASHBOARD.preinstalledNodePort}, which the pre-installed Dashboard holds).`),
  }).prefault({}).describe('Kubernetes Dashboard access (the NodePort Service, a read-only viewer).'),
  scrape: z.strictObject({
    interval: promDuration().default('30s').describe('Scrape interval of every scrape object.'),
    nodeExporter: z.boolean().default(false)
      .describe('Also scrape node exporter on every node (port 9100). Off: the monitoring stack scrapes it already, pre-installed or managed alike (victoria-metrics-k8s-stack deploys node exporter with its own scrape by default), and a second scrape doubles every series. Turn on only for a stack that does not.'),
    kubeStateMetrics: z.boolean().default(false)
      .describe('Also scrape kube-state-metrics. Off: the monitoring stack scrapes it already, pre-installed or managed alike (victoria-metrics-k8s-stack default). Turn on only for a stack that does not.'),
    networkOperator: z.boolean().default(true)
      .describe('Scrape the Network Operator (a VMPodScrape; with network.infiniband only). Off for a pre-installed VictoriaMetrics operator that serves no VMPodScrape (init sets it from the cluster\'s CRDs): the other scrapes do not need it, the alert on the operator\'s reconcile errors then has no data.'),
  }).prefault({}).describe('What the VictoriaMetrics scrape objects collect (the DCGM exporter, operators and Kueue always; the GPU Operator\'s own DCGM ServiceMonitor is switched off, so it is scraped once).'),
  alerts: z.strictObject({
    for: promDuration().default('5m').describe('Default "for" duration of alerts.'),
    gpuTemperatureCelsius: positiveInt().default(85).describe('GPU temperature alert threshold.'),
    gpuMemoryTemperatureCelsius: positiveInt().default(95).describe('GPU memory (HBM) temperature alert threshold.'),
    ignoredXids: z.array(positiveInt('an XID number')).default([13, 31, 43, 45])
      .describe('XIDs that do not alert (default: the ones NVIDIA attributes to application faults: 13, 31, 43, 45).'),
    pendingWorkloadsFor: promDuration().default('30m').describe('How long Kueue workloads may pend before an alert.'),
    quotaUsageRatio: z.number({ error: 'expected a ratio such as 1' }).positive({ error: 'expected a ratio above 0' })
      .max(10, { error: 'expected a ratio of at most 10' }).default(1).describe('ClusterQueue usage / nominal quota above which an alert fires.'),
    runbookBaseUrl: withoutCredentials(z.url({ error: 'expected a URL such as https://wiki.example.com/runbooks' })).optional()
      .describe('Base URL of the runbooks; each alert links <base>#<alert name in lower case> (runbook_url).'),
  }).prefault({}).describe('Alert thresholds and durations.'),
}).prefault({}).describe('Scrapes, alerts and dashboards for the pre-installed VictoriaMetrics + Grafana.');

/**
 * The tenants' allowances outside Kueue come out of what the quotas share on the GPU workers (their allocatable less
 * nodes.gpuWorkers.reserved): they must leave something. The issue names the first tenant that tips it over.
 */
const show = (r: 'cpu' | 'memory', n: number) => (r === 'cpu' ? formatMillis(Math.round(n * 1000)) : formatBytes(n));

interface Requests {
  readonly cpu: string;
  readonly memory: string;
}
interface UnqueuedInput {
  readonly nodes: { readonly gpuWorkers: { readonly count: number; readonly cpu: string; readonly memory: string; readonly reserved: Requests } };
  readonly tenants: readonly { readonly unqueued: Requests }[];
}

function unqueuedFits(d: UnqueuedInput, ctx: z.RefinementCtx): void {
  const w = d.nodes.gpuWorkers;
  for (const r of ['cpu', 'memory'] as const) {
    let shared: number;
    let taken = 0;
    try {
      shared = w.count * (parseQuantity(w[r]) - parseQuantity(w.reserved[r]));
    } catch {
      return; // the fields' own checks report it
    }
    if (shared <= 0) continue; // the reserve's own check reports it
    for (let i = 0; i < d.tenants.length; i++) {
      try {
        taken += parseQuantity(d.tenants[i].unqueued[r]);
      } catch {
        return;
      }
      if (taken >= shared) {
        ctx.addIssue({
          code: 'custom',
          path: ['tenants', i, 'unqueued', r],
          message: `the tenants' ${r} outside Kueue adds up to ${show(r, taken)} here, and the GPU workers keep ${show(r, shared)} for the quotas `
            + `(${w.count} x (${w[r]} - reserved ${w.reserved[r]})): nothing would be left for Kueue; lower tenants[].unqueued.${r}`,
        });
        return;
      }
    }
  }
}

/** Namespaces a tenant may never take (besides kube-* and the monitoring, dashboard and Argo CD namespaces of the description). */
const SYSTEM_NAMESPACES: ReadonlySet<string> = new Set([...Object.values(NAMESPACES), 'cilium']);

export const ClusterDescriptionSchema = z.strictObject({
  name: dnsLabel().describe('Cluster name (DNS-1123 label); names dist/<name>/.'),
  kubernetesVersion: z.string({ error: 'expected a Kubernetes minor version such as "1.31" (quoted)' }).regex(/^1\.[0-9]+$/, { error: 'expected a Kubernetes minor version such as "1.31"' }).describe('Kubernetes minor version.'),
  gitops,
  nodes: z.strictObject({
    service: serviceNode.prefault({}).describe('The tainted service node: control plane, add-on management, monitoring.'),
    gpuWorkers: gpuWorkers.describe('The GPU workers (all of one type).'),
    cpuWorkers: cpuWorkers.optional().describe('CPU-only workers, if any (a cpu-only Kueue flavor).'),
    reservedTaints: z.array(taint()).default(DEFAULT_RESERVED_TAINTS)
      .describe('Taints no tenant pod may tolerate, besides the service node\'s (nodes.service.taints, always reserved): by default the node lifecycle taints of a cordoned node and of nodes under memory, disk or PID pressure. Add a taint you put on nodes kept from tenants (maintenance, a reserved pool).'),
  }).describe('The nodes of the cluster.'),
  network: network.describe('Pod network and InfiniBand fabric.'),
  storage: storage.describe('StorageClasses served by local-path-provisioner.'),
  queueing: queueing.prefault({}).describe('Kueue: cohort, default queue, priorities, preemption.'),
  tenants: z.array(tenant).max(MAX_TENANTS, {
    error: `expected at most ${MAX_TENANTS} tenants: Argo CD builds the tenants folder with one kustomize run, whose time grows with the square of its `
      + 'objects (500 tenants: some 3,500 objects, about 25 s of CPU; Argo CD stops a manifest generation after 60 to 90 s by default); '
      + 'share the teams out to more clusters',
  }).default([]).describe(`Teams sharing the GPUs: a namespace, a ClusterQueue with GPU quota and namespaced RBAC each; at most ${MAX_TENANTS}.`),
  samples,
  tutorials,
  installs,
  releases,
  gpuOperator,
  networkOperator,
  nodeFeatureDiscovery,
  monitoring,
  mirrors,
}).superRefine((d, ctx) => {
  // Cross-field rules: each names the field that has to change.
  const seen = new Map<string, number>();
  d.tenants.forEach((t, i) => {
    if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: ['tenants', i, 'name'], message: `duplicate tenant name "${t.name}" (also tenants[${seen.get(t.name)}].name)` });
    seen.set(t.name, i);
  });
  const namespaces = new Map<string, number>();
  d.tenants.forEach((t, i) => {
    const ns = t.namespace ?? t.name;
    if (SYSTEM_NAMESPACES.has(ns) || ns.startsWith('kube-') || [d.monitoring.namespace, d.monitoring.dashboard.namespace, d.gitops.namespace].includes(ns)) {
      ctx.addIssue({ code: 'custom', path: ['tenants', i, t.namespace ? 'namespace' : 'name'], message: `tenant namespace "${ns}" collides with a system namespace` });
    }
    if (namespaces.has(ns)) ctx.addIssue({ code: 'custom', path: ['tenants', i, 'namespace'], message: `tenant namespace "${ns}" is already used by tenants[${namespaces.get(ns)}]` });
    namespaces.set(ns, i);
  });
  const capacity = d.nodes.gpuWorkers.count * d.nodes.gpuWorkers.gpusPerNode;
  let claimed = 0;
  let overflow: number | undefined;
  d.tenants.forEach((t, i) => {
    if (t.borrowingOnly) return;
    claimed += t.gpus;
    if (claimed > capacity && overflow === undefined) overflow = i;
  });
  if (overflow !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['tenants', overflow, 'gpus'],
      message: `tenants claim ${claimed} GPUs but the cluster has ${capacity} (${d.nodes.gpuWorkers.count} x ${d.nodes.gpuWorkers.gpusPerNode}); lower the quotas or mark tenants borrowingOnly`,
    });
  }
  d.tenants.forEach((t, i) => {
    if (t.name === d.queueing.defaultClusterQueue) {
      ctx.addIssue({ code: 'custom', path: ['tenants', i, 'name'], message: `tenant name "${t.name}" is the default ClusterQueue's name (queueing.defaultClusterQueue); rename the tenant` });
    }
    if (t.borrowingOnly && t.borrowingLimit !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['tenants', i, 'borrowingLimit'], message: 'a borrowingOnly tenant borrows up to its "gpus"; drop borrowingLimit' });
    }
    const nominal = t.borrowingOnly ? 0 : t.gpus;
    if (t.lendingLimit !== undefined && t.lendingLimit !== null && t.lendingLimit > nominal) {
      ctx.addIssue({ code: 'custom', path: ['tenants', i, 'lendingLimit'], message: `lendingLimit ${t.lendingLimit} exceeds the tenant's nominal quota of ${nominal} GPUs (Kueue rejects it)` });
    }
  });
  const priorityNames = new Set(d.queueing.priorities.map((p) => p.name));
  d.tenants.forEach((t, i) => {
    (t.priorities ?? []).forEach((p, j) => {
      if (!priorityNames.has(p)) {
        ctx.addIssue({ code: 'custom', path: ['tenants', i, 'priorities', j], message: `unknown priority "${p}"; queueing.priorities has ${[...priorityNames].join(', ')}` });
      }
    });
    for (const key of Object.keys(t.labels)) {
      if (key.startsWith(TENANCY.priorityLabelPrefix)) {
        ctx.addIssue({ code: 'custom', path: ['tenants', i, 'labels', key], message: `the label "${key}" is the toolkit's (the guardrails read it); use tenants[${i}].priorities for priorities` });
      }
    }
  });
  if (d.tenants.length > 0) {
    d.queueing.priorities.forEach((p, i) => {
      if (p.name === TENANCY.unqueuedPriorityClass) {
        ctx.addIssue({ code: 'custom', path: ['queueing', 'priorities', i, 'name'], message: `"${p.name}" is the PriorityClass of the tenants' pods outside Kueue; choose another name` });
      } else if (p.name.length > 63) {
        // the guardrails read a tenant's priorities from namespace labels named after them
        ctx.addIssue({ code: 'custom', path: ['queueing', 'priorities', i, 'name'], message: `expected at most 63 characters (a label name) with tenants, got ${p.name.length}` });
      }
    });
  }
  unqueuedFits(d, ctx);
  const defaults = d.queueing.priorities.filter((p) => p.default);
  if (defaults.length > 1) {
    ctx.addIssue({ code: 'custom', path: ['queueing', 'priorities'], message: `at most one priority may be the default, got ${defaults.map((p) => p.name).join(', ')}` });
  }
  const prioNames = new Map<string, number>();
  d.queueing.priorities.forEach((p, i) => {
    if (prioNames.has(p.name)) ctx.addIssue({ code: 'custom', path: ['queueing', 'priorities', i, 'name'], message: `duplicate priority name "${p.name}"` });
    prioNames.set(p.name, i);
    if (p.name.startsWith('system-')) {
      ctx.addIssue({ code: 'custom', path: ['queueing', 'priorities', i, 'name'], message: `priority name "${p.name}" starts with "system-", which Kubernetes reserves for its own PriorityClasses` });
    }
  });
  if (d.queueing.fairSharing && d.installs.kueue !== 'managed') {
    ctx.addIssue({ code: 'custom', path: ['queueing', 'fairSharing'], message: 'fair sharing is switched on in the Kueue manager configuration, which is rendered only with installs.kueue: managed' });
  }
  const levels = d.queueing.topology?.levels ?? [];
  levels.forEach((level, i) => {
    if (levels.indexOf(level) !== i) ctx.addIssue({ code: 'custom', path: ['queueing', 'topology', 'levels', i], message: `duplicate topology level "${level}"` });
  });
  if (levels.length > 0 && d.nodes.gpuWorkers.taints.length > 0 && levels[levels.length - 1] !== LABELS.hostname) {
    ctx.addIssue({
      code: 'custom',
      path: ['queueing', 'topology', 'levels', levels.length - 1],
      message: `the GPU workers are tainted, and Kueue respects node taints only when the lowest topology level is "${LABELS.hostname}", got "${levels[levels.length - 1]}"`,
    });
  }
  if (d.queueing.rdma === 'excluded' && d.installs.kueue !== 'managed') {
    ctx.addIssue({ code: 'custom', path: ['queueing', 'rdma'], message: '"excluded" needs the Kueue manager configuration, which is rendered only with installs.kueue: managed' });
  }
  if (d.gitops.argocd === 'managed' && d.gitops.destinationServer !== IN_CLUSTER_SERVER) {
    ctx.addIssue({
      code: 'custom',
      path: ['gitops', 'argocd'],
      message: `"managed" installs Argo CD into this cluster, but gitops.destinationServer names another API server (${d.gitops.destinationServer}); `
        + `use "external" for a cluster synced by an Argo CD elsewhere, or set destinationServer to ${IN_CLUSTER_SERVER}`,
    });
  }
  const argocd = d.gitops.argocd ?? (d.gitops.destinationServer === IN_CLUSTER_SERVER ? 'managed' : 'external');
  if (d.gitops.argocdInstall === 'vendored' && argocd !== 'managed') {
    ctx.addIssue({
      code: 'custom',
      path: ['gitops', 'argocdInstall'],
      message: '"vendored" writes Argo CD\'s install into the argocd folder, which only gitops.argocd: managed renders; an external Argo CD is installed otherwise',
    });
  }
  if (d.monitoring.controlPlaneScrapes && d.installs.monitoring !== 'managed') {
    ctx.addIssue({
      code: 'custom',
      path: ['monitoring', 'controlPlaneScrapes'],
      message: 'the control-plane scrapes are values of the managed monitoring stack: set installs.monitoring: managed, or configure the pre-installed stack itself',
    });
  }
  const dash = d.monitoring.dashboard;
  if (dash.enabled && dash.service === 'own' && dash.nodePort === DASHBOARD.preinstalledNodePort) {
    ctx.addIssue({
      code: 'custom',
      path: ['monitoring', 'dashboard', 'nodePort'],
      message: `node port ${dash.nodePort} is already allocated to the pre-installed Dashboard's Service ${dash.namespace}/${DASHBOARD.kongProxyService(dash.release)}; `
        + 'with service "own" choose a free port, or use service "adopt" to take that Service over',
    });
  }
  if (d.gpuOperator.migStrategy === 'mixed' && !d.gpuOperator.migManager) {
    ctx.addIssue({ code: 'custom', path: ['gpuOperator', 'migStrategy'], message: 'MIG strategy "mixed" needs the MIG manager (gpuOperator.migManager: true)' });
  }
  if (d.gpuOperator.acceptVisibleDevicesEnvvarWhenUnprivileged !== undefined && d.gpuOperator.toolkit !== 'managed') {
    ctx.addIssue({
      code: 'custom',
      path: ['gpuOperator', 'acceptVisibleDevicesEnvvarWhenUnprivileged'],
      message: 'the node image ships the container toolkit (gpuOperator.toolkit: preinstalled): set accept-nvidia-visible-devices-envvar-when-unprivileged '
        + 'in its /etc/nvidia-container-runtime/config.toml, or set gpuOperator.toolkit: managed',
    });
  }
  const hardenedEnv = ['ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED', 'ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS', 'DEVICE_LIST_STRATEGY'];
  if (d.gpuOperator.toolkit === 'managed' && d.gpuOperator.acceptVisibleDevicesEnvvarWhenUnprivileged !== true) {
    for (const field of ['toolkitEnv', 'devicePluginEnv'] as const) {
      d.gpuOperator[field].forEach((e, i) => {
        if (hardenedEnv.includes(e.name)) {
          ctx.addIssue({ code: 'custom', path: ['gpuOperator', field, i, 'name'], message: `${e.name} follows gpuOperator.acceptVisibleDevicesEnvvarWhenUnprivileged with a managed toolkit; set that instead` });
        }
      });
    }
  }
  for (const key of RELEASE_KEYS) {
    const given = d.releases[key];
    if (given === undefined) continue;
    if (d.installs[key] === 'managed') {
      ctx.addIssue({ code: 'custom', path: ['releases', key], message: `installs.${key} is "managed": this toolkit installs the pinned ${RELEASE_NAMES[key]} release; leave releases.${key} out` });
      continue;
    }
    const form = releaseForm(key, given);
    if (!form.ok) ctx.addIssue({ code: 'custom', path: ['releases', key], message: form.message });
  }
  const nicRelease = d.releases.networkOperator === undefined ? undefined : releaseForm('networkOperator', d.releases.networkOperator);
  if (d.networkOperator.docaDriver && nicRelease?.ok && !nicRelease.release.pinned
    && !previousEntry<{ docaDriver: object }>('networkOperator', nicRelease.release.version)?.docaDriver) {
    ctx.addIssue({
      code: 'custom',
      path: ['networkOperator', 'docaDriver'],
      message: `this toolkit does not carry the DOCA driver release that Network Operator ${nicRelease.release.version} (releases.networkOperator) runs: `
        + 'upgrade the operator first (upgrade-plan --component network-operator), or keep the driver on the node image',
    });
  }
  if (d.networkOperator.nicClusterPolicyName !== SINGLETONS.nicClusterPolicy) {
    ctx.addIssue({
      code: 'custom',
      path: ['networkOperator', 'nicClusterPolicyName'],
      message: `the Network Operator reconciles only a NicClusterPolicy named "${SINGLETONS.nicClusterPolicy}", got "${d.networkOperator.nicClusterPolicyName}"`,
    });
  }
  const localQueues = new Map<string, string>([
    [NAMESPACES.default, d.queueing.defaultQueue],
    ...d.tenants.map((t) => [t.namespace ?? t.name, t.queue ?? t.name] as [string, string]),
  ]);
  const samplesQueue = localQueues.get(d.samples.namespace);
  if (samplesQueue === undefined) {
    ctx.addIssue({ code: 'custom', path: ['samples', 'namespace'], message: `namespace "${d.samples.namespace}" has no LocalQueue; use one of ${[...localQueues.keys()].join(', ')}` });
  } else if (d.samples.queue !== undefined && d.samples.queue !== samplesQueue) {
    ctx.addIssue({ code: 'custom', path: ['samples', 'queue'], message: `no LocalQueue "${d.samples.queue}" in namespace "${d.samples.namespace}": its LocalQueue is "${samplesQueue}"` });
  }
  if (d.samples.priority !== undefined && !prioNames.has(d.samples.priority)) {
    ctx.addIssue({ code: 'custom', path: ['samples', 'priority'], message: `unknown priority "${d.samples.priority}"; queueing.priorities has ${[...prioNames.keys()].join(', ')}` });
  }
  if (d.samples.nodeNames.length > d.nodes.gpuWorkers.count) {
    ctx.addIssue({ code: 'custom', path: ['samples', 'nodeNames'], message: `${d.samples.nodeNames.length} node names but nodes.gpuWorkers.count is ${d.nodes.gpuWorkers.count}` });
  }
  const seenNodeNames = new Set<string>();
  d.samples.nodeNames.forEach((n, i) => {
    if (seenNodeNames.has(n)) ctx.addIssue({ code: 'custom', path: ['samples', 'nodeNames', i], message: `duplicate node name "${n}"` });
    seenNodeNames.add(n);
  });
  const rdma = d.network.infiniband?.rdmaSharedDevice;
  if (rdma && rdma.vendors.length + rdma.deviceIDs.length + rdma.drivers.length + rdma.ifNames.length + rdma.linkTypes.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['network', 'infiniband', 'rdmaSharedDevice', 'vendors'], message: 'the RDMA shared device selects no HCA: give vendors, deviceIDs, drivers, ifNames or linkTypes' });
  }
  const secondary = d.network.secondaryNetwork;
  const secondaryOn = (['multus', 'ipoib', 'nvIpam'] as const).filter((k) => secondary[k]);
  if (!d.network.infiniband && secondaryOn.length > 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['network', 'secondaryNetwork', secondaryOn[0]],
      message: `secondary networks are deployed by the NicClusterPolicy, which exists only with network.infiniband; remove ${secondaryOn.join(', ')} or describe the fabric`,
    });
  }
  if (secondary.ipoib && !secondary.multus) {
    ctx.addIssue({ code: 'custom', path: ['network', 'secondaryNetwork', 'ipoib'], message: 'IPoIB networks attach through Multus: set network.secondaryNetwork.multus: true' });
  }
  if (d.tutorials.dynamo.enabled && d.installs.dynamo === 'none') {
    ctx.addIssue({
      code: 'custom',
      path: ['tutorials', 'dynamo', 'enabled'],
      message: 'the Dynamo samples need the Dynamo platform: set installs.dynamo to "preinstalled" (the cluster runs it) or "managed" (installed here)',
    });
  }
  const dynamoTenant = d.tutorials.dynamo.tenant;
  if (dynamoTenant !== undefined && !d.tenants.some((t) => t.name === dynamoTenant)) {
    ctx.addIssue({
      code: 'custom',
      path: ['tutorials', 'dynamo', 'tenant'],
      message: `no tenant is named "${dynamoTenant}"; tenants: ${d.tenants.map((t) => t.name).join(', ') || 'none'}`,
    });
  }
  // Exactly one Node Feature Discovery: the image's GPU Operator runs one, a managed operator runs one only when told to.
  const nfd = d.nodeFeatureDiscovery.deployedBy;
  if (nfd !== 'gpu-operator' && d.installs.gpuOperator === 'preinstalled') {
    ctx.addIssue({
      code: 'custom',
      path: ['nodeFeatureDiscovery', 'deployedBy'],
      message: `"${nfd}" makes two Node Feature Discovery deployments: the preinstalled GPU Operator already runs one (installs.gpuOperator: preinstalled); use "gpu-operator" or set installs.gpuOperator: managed`,
    });
  }
  if (nfd === 'network-operator' && d.installs.networkOperator !== 'managed') {
    ctx.addIssue({
      code: 'custom',
      path: ['nodeFeatureDiscovery', 'deployedBy'],
      message: '"network-operator" needs installs.networkOperator: managed (only a Network Operator installed here is told to deploy Node Feature Discovery)',
    });
  }
});


/** The description as written (before defaults). */
export type ClusterDescriptionInput = z.input<typeof ClusterDescriptionSchema>;
/** The description with every default applied. */
export type ClusterDescription = z.output<typeof ClusterDescriptionSchema>;
export type TenantDescription = ClusterDescription['tenants'][number];
export type Taint = ClusterDescription['nodes']['service']['taints'][number];
export type { ZodError } from 'zod';
