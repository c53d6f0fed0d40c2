import { Document, isMap, isScalar, isSeq, Node as YamlNode } from 'yaml';
import { KUEUE_FRAMEWORKS } from '../components/kueue/manager-config';
import { Taint } from '../model/description';
import { LABELS, NAMESPACES, RESOURCES, STORAGE_CLASSES } from '../model/names';
import { liveKueueConfig } from '../preflight/foreign-config';
import { allocatable, allocatableAmount, gpuProduct, nicClusterPolicyDevices, nodeRoles, rdmaResources, taintKey, taintsOf } from '../preflight/nodes';
import { crdFacts } from '../preflight/reads';
import { ClusterState } from '../preflight/state';
import { get } from '../preflight/util';
import { Manifest } from '../render/manifest';

/** What init is told rather than what it observes. */
export interface InitOptions {
  readonly name?: string;
  readonly repo?: string;
  readonly path?: string;
}

/** Placeholders for what a cluster does not show; each is written with a `# TODO(init): ...` comment. */
export const PLACEHOLDERS = {
  name: 'my-cluster',
  repo: 'https://git.example.com/platform/clusters.git',
  kubernetesVersion: '1.31',
  gpuProduct: 'NVIDIA-H100-80GB-HBM3',
  localDisk: '/mnt/nvme',
  sharedFilesystem: '/home/k8s-volumes',
  podInterface: 'eth0',
  ncclTestsImage: 'ghcr.io/coreweave/nccl-tests:12.9.1-devel-ubuntu22.04-nccl2.28.3-1-8b67957',
} as const;

/** The service node's role label (kubeadm). */
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/** A description as plain data plus comments by field path (dotted). */
export interface InitResult {
  readonly description: Record<string, unknown>;
  readonly comments: ReadonlyMap<string, string>;
}

function minBy<T>(xs: readonly T[], f: (x: T) => number): T {
  return xs.reduce((a, b) => (f(b) < f(a) ? b : a));
}

/** Taints every node of the list carries. */
function commonTaints(nodes: readonly Manifest[]): Taint[] {
  if (nodes.length === 0) return [];
  const first = taintsOf(nodes[0]);
  return first.filter((t) => nodes.every((n) => taintsOf(n).some((u) => taintKey(u) === taintKey(t))));
}

/** Builds a description from what the cluster shows; unobservable facts get placeholders and TODO comments. */
export function describeCluster(state: ClusterState, opts: InitOptions): InitResult {
  const comments = new Map<string, string>();
  const todo = (path: string, why: string) => comments.set(path, `TODO(init): ${why}`);
  const seen = (path: string, what: string) => comments.set(path, `from ${what}`);

  const name = opts.name ?? PLACEHOLDERS.name;
  if (!opts.name) todo('name', 'the cluster name (DNS label); or pass --name');

  const roles = nodeRoles(state, { [CONTROL_PLANE_LABEL]: '' });
  const nodes = [...roles.service, ...roles.gpu, ...roles.other];
  const minors = nodes.map((n) => /^v?1\.(\d+)/.exec(String(get(n, ['status', 'nodeInfo', 'kubeletVersion']) ?? ''))?.[1]).filter((m): m is string => m !== undefined).map(Number);
  const kubernetesVersion = minors.length > 0 ? `1.${Math.min(...minors)}` : PLACEHOLDERS.kubernetesVersion;
  if (minors.length > 0) seen('kubernetesVersion', 'the oldest kubelet');
  else todo('kubernetesVersion', 'no node shows its kubelet version');

  const gitops: Record<string, unknown> = {
    repoURL: opts.repo ?? PLACEHOLDERS.repo,
    path: opts.path ?? `dist/${name}`,
  };
  if (!opts.repo) todo('gitops.repoURL', 'the Git repository Argo CD reads; or pass --repo');

  // Service node
  const service: Record<string, unknown> = {};
  if (roles.service.length > 0) {
    service.taints = commonTaints(roles.service);
    seen('nodes.service', `node ${roles.service.map((n) => n.metadata.name).join(', ')}`);
  } else {
    todo('nodes.service', `no node carries ${CONTROL_PLANE_LABEL}: describe the service node's labels and taints`);
  }

  // GPU workers
  const gpu = roles.gpu;
  const gpuWorkers: Record<string, unknown> = {};
  if (gpu.length > 0) {
    const small = (r: string) => minBy(gpu, (n) => allocatableAmount(n, r));
    const product = gpu.map(gpuProduct).find((p) => p !== undefined);
    Object.assign(gpuWorkers, {
      count: gpu.length,
      gpusPerNode: Math.min(...gpu.map((n) => allocatableAmount(n, RESOURCES.gpu))),
      gpuProduct: product ?? PLACEHOLDERS.gpuProduct,
      cpu: allocatable(small('cpu'), 'cpu'),
      memory: allocatable(small('memory'), 'memory'),
      localDisk: { path: PLACEHOLDERS.localDisk },
    });
    const taints = commonTaints(gpu);
    if (taints.length > 0) gpuWorkers.taints = taints;
    seen('nodes.gpuWorkers', `nodes ${gpu.map((n) => n.metadata.name).join(', ')} (allocatable: the smallest node)`);
    if (!product) todo('nodes.gpuWorkers.gpuProduct', `no ${LABELS.gpuProduct} label (GPU Feature Discovery not running?)`);
  } else {
    Object.assign(gpuWorkers, { count: 1, gpusPerNode: 8, gpuProduct: PLACEHOLDERS.gpuProduct, cpu: '1', memory: '1Gi', localDisk: { path: PLACEHOLDERS.localDisk } });
    todo('nodes.gpuWorkers', `no node advertises ${RESOURCES.gpu}: describe the GPU workers`);
  }
  todo('nodes.gpuWorkers.localDisk.path', 'the node-local NVMe mount of the GPU workers (not visible through the API)');

  // Network
  const network: Record<string, unknown> = { podInterface: PLACEHOLDERS.podInterface };
  todo('network.podInterface', 'the pod network interface (Cilium); eth0 on the Instant Cluster');
  const advertised = gpu.flatMap((n) => [...rdmaResources(n).entries()]);
  const policyDevices = nicClusterPolicyDevices(state);
  const fromNodes = advertised[0];
  const policy = policyDevices.find((p) => fromNodes === undefined || `${RESOURCES.rdmaPrefix}${p.resourceName}` === fromNodes[0]) ?? policyDevices[0];
  if (fromNodes || policy) {
    const deviceName = fromNodes ? fromNodes[0].slice(RESOURCES.rdmaPrefix.length) : policy!.resourceName;
    const hcaMax = fromNodes ? Math.min(...advertised.filter(([k]) => k === fromNodes[0]).map(([, v]) => v)) : policy!.rdmaHcaMax ?? 63;
    const selectors = policy?.selectors ?? {};
    const list = (k: string) => (Array.isArray(selectors[k]) ? (selectors[k] as unknown[]).map(String) : undefined);
    const device: Record<string, unknown> = { name: deviceName, hcaMax };
    for (const k of ['vendors', 'deviceIDs', 'drivers', 'ifNames', 'linkTypes']) if (list(k)?.length) device[k] = list(k);
    if (!device.vendors && !device.deviceIDs && !device.drivers && !device.ifNames) device.vendors = ['15b3'];
    const gpusPerNode = gpuWorkers.gpusPerNode as number;
    network.infiniband = {
      hcas: Array.from({ length: Math.max(1, gpusPerNode) }, (_, i) => `mlx5_${i}`),
      rdmaSharedDevice: device,
    };
    seen('network.infiniband.rdmaSharedDevice', fromNodes ? `${fromNodes[0]} on the GPU workers${policy ? ' and the NicClusterPolicy selectors' : ''}` : 'the NicClusterPolicy');
    todo('network.infiniband.hcas', 'the InfiniBand HCAs of a GPU worker (ibv_devices on a node); one per GPU assumed');
  }

  // Storage
  const classes = state.list('storage.k8s.io', 'StorageClass');
  const ours = Object.values(STORAGE_CLASSES) as string[];
  const liveDefault = classes.find((c) => c.metadata.annotations?.[LABELS.defaultStorageClass] === 'true' && ours.includes(c.metadata.name));
  const storage: Record<string, unknown> = {};
  if (liveDefault) {
    storage.defaultClass = liveDefault.metadata.name;
    seen('storage.defaultClass', `the default StorageClass ${liveDefault.metadata.name}`);
  }
  storage.sharedFilesystem = { path: PLACEHOLDERS.sharedFilesystem };
  todo('storage.sharedFilesystem.path', 'the folder on /home that backs shared-path (local-path-config in local-path-storage shows it)');
  const policies = [...new Set(classes.filter((c) => ours.includes(c.metadata.name)).map((c) => c.reclaimPolicy ?? 'Delete'))];
  if (policies.length === 1) storage.reclaimPolicy = policies[0];

  // Queueing: the pre-wired LocalQueue in "default" and its ClusterQueue
  const queueing: Record<string, unknown> = {};
  const lqs = state.list('kueue.x-k8s.io', 'LocalQueue').filter((q) => q.metadata.namespace === NAMESPACES.default);
  const lq = lqs.find((q) => q.metadata.name === 'default') ?? lqs[0];
  if (lq) {
    queueing.defaultQueue = lq.metadata.name;
    const cq = get(lq, ['spec', 'clusterQueue']);
    if (typeof cq === 'string') queueing.defaultClusterQueue = cq;
    seen('queueing', `the pre-wired LocalQueue default/${lq.metadata.name}`);
  }

  // Installs: what the cluster lacks for the rendered samples
  const installs: Record<string, unknown> = {};
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition').map(crdFacts);
  // The Instant Cluster ships no Training Operator (the default "none"); a cluster serving PyTorchJob has one.
  if (crds.some((c) => c?.group === 'kubeflow.org' && c.kind === 'PyTorchJob')) {
    installs.trainingOperator = 'preinstalled';
    comments.set('installs.trainingOperator', 'the cluster serves PyTorchJob: a Training Operator is already installed');
  }
  const kueue = liveKueueConfig(state);
  if (kueue) {
    const frameworks = kueue.config ? get(kueue.config, ['integrations', 'frameworks']) : undefined;
    const have = Array.isArray(frameworks) ? frameworks.map(String) : [];
    // the frameworks the rendered jobs need (the pod integration only the tutorials do)
    const lacking = KUEUE_FRAMEWORKS.filter((f) => f !== 'pod' && !have.includes(f));
    if (lacking.length > 0) {
      installs.kueue = 'managed';
      comments.set('installs.kueue', `the pre-installed Kueue lacks the integrations ${lacking.join(', ')}: the toolkit owns its configuration`);
    }
  }

  const description: Record<string, unknown> = {
    name,
    kubernetesVersion,
    gitops,
    nodes: { service, gpuWorkers },
    network,
    storage,
    ...(Object.keys(queueing).length > 0 ? { queueing } : {}),
    samples: { ncclTests: { image: PLACEHOLDERS.ncclTestsImage } },
    ...(Object.keys(installs).length > 0 ? { installs } : {}),
  };
  todo('samples.ncclTests.image', 'a pinned nccl-tests image your nodes can pull');
  return { description, comments };
}

/** The description as YAML, with the schema line, a header and the comments. */
export function descriptionYaml(result: InitResult, source: string): string {
  const doc = new Document(result.description);
  for (const [path, text] of result.comments) {
    const keys = path.split('.');
    const parent = keys.length === 1 ? doc.contents : doc.getIn(keys.slice(0, -1), true);
    if (!isMap(parent)) continue;
    const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === keys[keys.length - 1]);
    if (!pair) continue;
    const value = pair.value as YamlNode | null;
    if (value && (isScalar(value) || (isSeq(value) && value.flow))) value.comment = ` ${text}`;
    else if (isScalar(pair.key)) pair.key.commentBefore = ` ${text}`;
  }
  const header = [
    '# yaml-language-server: $schema=./cluster-description.schema.json',
    `# Written by \`gpu-cluster-manifests init\` from ${source}.`,
    '# Check every TODO(init) line (facts the cluster does not show), then: npm run preflight -- --config <this file> ...',
  ].join('\n');
  return `${header}\n${doc.toString({ lineWidth: 0 })}`;
}
