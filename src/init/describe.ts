import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Document, isMap, isScalar, isSeq, Node as YamlNode } from 'yaml';
import { judgeAddOns } from './add-ons';
import { InputError, maskCredentials, printable } from '../errors';
import { valueAt } from '../json';
import { Taint } from '../model/description';
import { INIT_TODO, OPEN_TODO } from '../model/init-todos';
import { KUEUE_DEFAULT_LOCAL_QUEUE, LABELS, NAMESPACES, RESOURCES, SERVICE_MONITOR_API, STORAGE_CLASSES } from '../model/names';
import { pinnedRelease, RELEASE_KEYS, RELEASE_NAMES, releaseForm } from '../model/releases';
import { MAX_GPUS_PER_NODE } from '../model/schema-types';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM, PACKAGE_NAME, PACKAGE_ROOT } from '../paths';
import { allocatableAmount, gpuProduct, nicClusterPolicyDevices, nodeRoles, rdmaResources, readableAllocatable, taintKey, taintsOf } from '../preflight/nodes';
import { runningReleases } from '../preflight/operator-releases';
import { crdFacts, servesServiceMonitors } from '../preflight/reads';
import { ClusterState } from '../preflight/state';
import { summarize } from '../preflight/util';
import { Manifest } from '../render/manifest';

/** What init is told rather than what it observes. */
export interface InitOptions {
  readonly name?: string;
  readonly repo?: string;
  /** The repo is the checkout's remote origin, not a --repo given. */
  readonly repoFromOrigin?: boolean;
  readonly path?: string;
  /** Where the vendored CRDs of the carried releases are (default: the toolkit's schemas and upstream installs). */
  readonly roots?: { readonly schemas: string; readonly upstream: string };
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

/** A description as plain data plus comments by field path (dotted), and what needs a change of the cluster. */
export interface InitResult {
  readonly description: Record<string, unknown>;
  readonly comments: ReadonlyMap<string, string>;
  /** Changes the cluster needs before the description fits it, written as TODO(init) lines of the header. */
  readonly todos?: readonly string[];
}

function minBy<T>(xs: readonly T[], f: (x: T) => number): T {
  return xs.reduce((a, b) => (f(b) < f(a) ? b : a));
}

function groupBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    const group = out.get(k);
    if (group) group.push(x);
    else out.set(k, [x]);
  }
  return out;
}

/** Node names for a comment, summarised on a large cluster. */
function nodeNames(nodes: readonly Manifest[]): string {
  return summarize(nodes.map((n) => n.metadata.name));
}

/**
 * Taints Kubernetes itself puts on a node in trouble and lifts when it recovers (the node lifecycle controller, the
 * kubelet, the cloud controller; `out-of-service` an administrator's, for a node that is down): the state of the
 * moment of the read, never a fact to describe. A description with them would make the operands tolerate a node that
 * is not ready (and refuse as the service node's taints when every node is down).
 */
const TRANSIENT_TAINTS: ReadonlySet<string> = new Set([
  'node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable', 'node.kubernetes.io/memory-pressure', 'node.kubernetes.io/disk-pressure',
  'node.kubernetes.io/pid-pressure', 'node.kubernetes.io/network-unavailable', 'node.kubernetes.io/unschedulable', 'node.kubernetes.io/out-of-service',
  'node.cloudprovider.kubernetes.io/uninitialized', 'node.cloudprovider.kubernetes.io/shutdown',
]);

/** A taint of a node in trouble (TRANSIENT_TAINTS), never a fact of the node. */
export const isTransientTaint = (t: Taint) => TRANSIENT_TAINTS.has(t.key);

/** Taints every node of the list carries, those of a node in trouble aside (TRANSIENT_TAINTS). */
function commonTaints(nodes: readonly Manifest[]): Taint[] {
  if (nodes.length === 0) return [];
  const first = taintsOf(nodes[0]).filter((t) => !isTransientTaint(t));
  return first.filter((t) => nodes.every((n) => taintsOf(n).some((u) => taintKey(u) === taintKey(t))));
}

/** Builds a description from what the cluster shows; unobservable facts get placeholders and TODO comments. */
export function describeCluster(state: ClusterState, opts: InitOptions): InitResult {
  const comments = new Map<string, string>();
  const todo = (path: string, why: string) => comments.set(path, `${OPEN_TODO} ${why}`);
  const seen = (path: string, what: string) => comments.set(path, `from ${what}`);

  const name = opts.name ?? PLACEHOLDERS.name;
  if (!opts.name) todo('name', 'the cluster name (DNS label); or pass --name');

  const roles = nodeRoles(state, { [CONTROL_PLANE_LABEL]: '' });
  const nodes = [...roles.service, ...roles.gpu, ...roles.other];
  const minors = nodes.map((n) => /^v?1\.(\d+)/.exec(String(valueAt(n, ['status', 'nodeInfo', 'kubeletVersion']) ?? ''))?.[1]).filter((m): m is string => m !== undefined).map(Number);
  const kubernetesVersion = minors.length > 0 ? `1.${Math.min(...minors)}` : PLACEHOLDERS.kubernetesVersion;
  if (minors.length > 0) seen('kubernetesVersion', 'the oldest kubelet');
  else todo('kubernetesVersion', 'no node shows its kubelet version');

  const gitops: Record<string, unknown> = {
    repoURL: opts.repo ?? PLACEHOLDERS.repo,
    path: opts.path ?? `dist/${name}`,
  };
  if (!opts.repo) todo('gitops.repoURL', 'the Git repository Argo CD reads; or pass --repo (the default: the checkout\'s remote origin, when it has one)');
  else if (opts.repoFromOrigin) seen('gitops.repoURL', 'the remote origin of this Git checkout');

  // Service node
  const service: Record<string, unknown> = {};
  if (roles.service.length > 0) {
    service.taints = commonTaints(roles.service);
    seen('nodes.service', `node ${nodeNames(roles.service)}`);
  } else {
    todo('nodes.service', `no node carries ${CONTROL_PLANE_LABEL}: describe the service node's labels and taints`);
  }

  // GPU workers: a description has one GPU node group; what does not fit it is marked, never guessed silently
  if (nodes.length === 0) {
    throw new InputError(`${state.source} holds no Node: init describes the nodes it sees; add the output of kubectl get nodes -o yaml to the snapshot`);
  }
  if (roles.gpu.length === 0) {
    throw new InputError(`${state.source}: no node advertises ${RESOURCES.gpu} (${nodes.length} node(s): ${nodeNames(nodes)}), so there are no GPU workers to describe: `
      + 'is the GPU Operator\'s device plugin running (kubectl -n gpu-operator get pods)? Run init again once they advertise GPUs, '
      + `or start from the example of ${relative(process.cwd(), join(PACKAGE_ROOT, 'docs', 'description.md'))} (its Example section)`);
  }
  const groups = groupBy(roles.gpu, (n) => gpuProduct(n) ?? '');
  // the largest group; on a tie a labelled product, then the first by name
  const [product, gpu] = [...groups.entries()].sort(([pa, a], [pb, b]) => b.length - a.length || Number(pa === '') - Number(pb === '') || (pa < pb ? -1 : 1))[0];
  const productName = (p: string) => p || '(no product label)';
  const counts = groupBy(gpu, (n) => String(allocatableAmount(n, RESOURCES.gpu)));
  const gpusPerNode = Math.min(...[...counts.keys()].map(Number));
  const small = (r: 'cpu' | 'memory') => minBy(gpu, (n) => allocatableAmount(n, r));
  const gpuWorkers: Record<string, unknown> = {
    count: gpu.length,
    gpusPerNode,
    gpuProduct: product || PLACEHOLDERS.gpuProduct,
    cpu: readableAllocatable('cpu', allocatableAmount(small('cpu'), 'cpu')),
    memory: readableAllocatable('memory', allocatableAmount(small('memory'), 'memory')),
    localDisk: { path: PLACEHOLDERS.localDisk },
  };
  const taints = commonTaints(gpu);
  if (taints.length > 0) gpuWorkers.taints = taints;
  seen('nodes.gpuWorkers', `nodes ${nodeNames(gpu)} (allocatable: the smallest node, memory rounded down)`);
  if (groups.size > 1) {
    const alternatives = [...groups.entries()].map(([p, ns]) => `${productName(p)} on ${ns.length} node(s) (${nodeNames(ns)})`).join('; ');
    todo('nodes.gpuWorkers.gpuProduct', `the GPU workers carry different products: ${alternatives}. A description has one GPU node group: `
      + `the ${gpu.length} node(s) of ${productName(product)} are described (count, GPUs, allocatable); preflight reports the others`);
  } else if (!product) {
    todo('nodes.gpuWorkers.gpuProduct', `no ${LABELS.gpuProduct} label (GPU Feature Discovery not running?)`);
  }
  if (counts.size > 1) {
    const alternatives = [...counts.entries()].sort(([a], [b]) => Number(b) - Number(a)).map(([c, ns]) => `${c} on ${nodeNames(ns)}`).join('; ');
    todo('nodes.gpuWorkers.gpusPerNode', `the nodes advertise different ${RESOURCES.gpu} counts: ${alternatives}. The smallest is taken so that quotas never `
      + 'promise GPUs a node lacks: repair the others (kubectl describe node NAME) or keep it');
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
    network.infiniband = {
      hcas: Array.from({ length: Math.min(Math.max(1, gpusPerNode), MAX_GPUS_PER_NODE) }, (_, i) => `mlx5_${i}`),
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
  // reclaimPolicy is immutable in a live StorageClass: each class keeps what it has (local-disk Retain beside local-path Delete)
  const policies = Object.fromEntries(classes.filter((c) => ours.includes(c.metadata.name))
    .sort((a, b) => ours.indexOf(a.metadata.name) - ours.indexOf(b.metadata.name))
    .map((c) => [c.metadata.name, String(c.reclaimPolicy ?? 'Delete')]));
  const distinct = [...new Set(Object.values(policies))];
  if (distinct.length === 1) {
    storage.reclaimPolicy = distinct[0];
    seen('storage.reclaimPolicy', `the StorageClasses ${Object.keys(policies).join(', ')}`);
  } else if (distinct.length > 1) {
    storage.reclaimPolicy = policies;
    seen('storage.reclaimPolicy', 'each StorageClass (the field is immutable: every class keeps its own)');
  }

  // Queueing: the pre-wired LocalQueue in "default" and its ClusterQueue
  const queueing: Record<string, unknown> = {};
  const lqs = state.list('kueue.x-k8s.io', 'LocalQueue').filter((q) => q.metadata.namespace === NAMESPACES.default);
  const lq = lqs.find((q) => q.metadata.name === KUEUE_DEFAULT_LOCAL_QUEUE) ?? lqs[0];
  if (lq) {
    queueing.defaultQueue = lq.metadata.name;
    const cq = valueAt(lq, ['spec', 'clusterQueue']);
    if (typeof cq === 'string') queueing.defaultClusterQueue = cq;
    seen('queueing', `the pre-wired LocalQueue ${NAMESPACES.default}/${lq.metadata.name}`);
  }

  // Installs: what the cluster lacks for the rendered samples
  const installs: Record<string, unknown> = {};
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition').map(crdFacts);
  // The Instant Cluster ships no Training Operator (the default "none"); a cluster serving PyTorchJob has one.
  if (crds.some((c) => c?.group === 'kubeflow.org' && c.kind === 'PyTorchJob')) {
    installs.trainingOperator = 'preinstalled';
    comments.set('installs.trainingOperator', 'the cluster serves PyTorchJob: a Training Operator is already installed');
  }

  // Monitoring: with the ServiceMonitor API the GPU Operator scrapes itself, and the toolkit must not (a second scrape)
  const serviceMonitors = servesServiceMonitors(state);
  const monitoring = { serviceMonitorCrd: serviceMonitors ?? false };
  if (serviceMonitors === undefined) {
    todo('monitoring.serviceMonitorCrd', `the state holds no CustomResourceDefinition: true if kubectl get crd ${SERVICE_MONITOR_API.crd} finds it`);
  } else {
    seen('monitoring.serviceMonitorCrd', `the CRDs (${SERVICE_MONITOR_API.crd} ${serviceMonitors ? 'served' : 'absent'})`);
  }

  const description: Record<string, unknown> = {
    name,
    kubernetesVersion,
    gitops,
    nodes: { service, gpuWorkers },
    network,
    storage,
    ...(Object.keys(queueing).length > 0 ? { queueing } : {}),
    monitoring,
    samples: { ncclTests: { image: PLACEHOLDERS.ncclTestsImage } },
    ...(Object.keys(installs).length > 0 ? { installs } : {}),
  };
  todo('samples.ncclTests.image', 'a pinned nccl-tests image your nodes can pull');
  // Every pre-installed add-on judged against what this description renders (never a second copy of one the cluster runs).
  const judged = judgeAddOns(state, description);
  for (const [path, text] of judged.comments) comments.set(path, text);
  // Then the release each operator still pre-installed runs: its CRs are rendered in that release's form.
  const releases = operatorReleases(state, description, opts.roots ?? defaultRoots());
  if (Object.keys(releases.values).length > 0) description.releases = releases.values;
  for (const [path, text] of releases.comments) comments.set(path, text);
  // nodes in trouble at the time of the read: described as they are when well, and named
  const troubled = nodes.filter((n) => taintsOf(n).some(isTransientTaint));
  const transient = [...new Set(troubled.flatMap((n) => taintsOf(n).filter(isTransientTaint).map((t) => `${t.key}:${t.effect}`)))].sort();
  const inTrouble = troubled.length === 0 ? [] : [`node(s) ${nodeNames(troubled)} carry ${transient.join(', ')}, taints Kubernetes sets on a node in trouble `
    + 'and lifts when it recovers: described without them; see why (kubectl describe node) and run preflight once they are gone'];
  return { description, comments, todos: [...inTrouble, ...judged.todos] };
}

/** The toolkit's schemas and upstream installs (the vendored CRDs of every carried release), when they are there. */
function defaultRoots(): { schemas: string; upstream: string } | undefined {
  return existsSync(DEFAULT_SCHEMAS) ? { schemas: DEFAULT_SCHEMAS, upstream: DEFAULT_UPSTREAM } : undefined;
}

/**
 * releases.<operator> of the operators the description leaves pre-installed: the release each runs, where its
 * Deployment or its CRD tells (the evidence as the comment); the pinned release with a TODO where nothing tells or
 * the cluster runs a release no carried form fits (preflight then says the same, blocking).
 */
function operatorReleases(state: ClusterState, description: Record<string, unknown>, roots: { schemas: string; upstream: string } | undefined): {
  values: Record<string, string>; comments: Map<string, string>;
} {
  const values: Record<string, string> = {};
  const comments = new Map<string, string>();
  const running = runningReleases(state, roots);
  const installs = (description.installs ?? {}) as Record<string, unknown>;
  const infiniband = valueAt(description, 'network.infiniband') !== undefined;
  for (const key of RELEASE_KEYS) {
    if ((installs[key] ?? 'preinstalled') !== 'preinstalled') continue;
    const r = running[key];
    const name = RELEASE_NAMES[key];
    const pinned = pinnedRelease(key).version;
    const field = `releases.${key}`;
    // a Network Operator whose NicClusterPolicy is not rendered (no InfiniBand): its release changes nothing
    if (key === 'networkOperator' && !infiniband && r.version === undefined) continue;
    const form = r.version === undefined ? undefined : releaseForm(key, r.version);
    if (r.version !== undefined && form?.ok) {
      values[key] = r.version;
      comments.set(field, `from ${r.evidence}`);
    } else if (r.version !== undefined && form && !form.ok) {
      values[key] = pinned;
      comments.set(field, `${OPEN_TODO} the cluster runs ${name} ${r.version} (${r.evidence}): ${form.message}. The pinned ${pinned} is written; `
        + 'preflight blocks until the cluster runs a release this toolkit carries');
    } else {
      values[key] = pinned;
      comments.set(field, `${OPEN_TODO} the ${name} release the cluster runs (${r.evidence}; its Deployment's image tag says it: kubectl get deployments -A -o wide); `
        + `the pinned ${pinned} is assumed`);
    }
  }
  return { values, comments };
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
    // names from the cluster are in it: never a raw line break or control character in a comment
    const comment = ` ${printable(text)}`;
    if (value && (isScalar(value) || (isSeq(value) && value.flow))) value.comment = comment;
    else if (isScalar(pair.key)) pair.key.commentBefore = comment;
  }
  const header = [
    '# yaml-language-server: $schema=./cluster-description.schema.json',
    `# Written by \`gpu-cluster-manifests init\` from ${printable(maskCredentials(source))}.`,
    `# Check every ${INIT_TODO} line (facts the cluster does not show) and delete its marker, then: npx ${PACKAGE_NAME} preflight --config <this file> ...`,
    ...(result.todos ?? []).map((t) => `# ${OPEN_TODO} ${printable(t)}`),
  ].join('\n');
  return `${header}\n${doc.toString({ lineWidth: 0 })}`;
}
