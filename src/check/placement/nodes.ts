import { Taint } from '../../model/description';
import { ClusterModel } from '../../model/model';
import { LABELS, NODE_LABELS, NODE_NAME_PLACEHOLDER, RESOURCES } from '../../model/names';
import { parseQuantity } from '../../model/quantity';

/**
 * The GPU Operator's operands and the `nvidia.com/gpu.deploy.<operand>` label each one's DaemonSet selects
 * (operator v26.7.0: `assets/*` DaemonSets and `gpuStateLabels` in controllers/state_manager.go). The operator
 * puts every one of these labels on each GPU node of the container workload type (the default); the MIG manager's
 * label only on MIG-capable nodes.
 */
export const GPU_OPERATOR_OPERANDS = [
  { field: 'driver', daemonSet: 'nvidia-driver-daemonset', deploy: 'driver' },
  { field: 'toolkit', daemonSet: 'nvidia-container-toolkit-daemonset', deploy: 'container-toolkit' },
  { field: 'devicePlugin', daemonSet: 'nvidia-device-plugin-daemonset', deploy: 'device-plugin' },
  { field: 'gfd', daemonSet: 'gpu-feature-discovery', deploy: 'gpu-feature-discovery' },
  { field: 'dcgm', daemonSet: 'nvidia-dcgm', deploy: 'dcgm' },
  { field: 'dcgmExporter', daemonSet: 'nvidia-dcgm-exporter', deploy: 'dcgm-exporter' },
  { field: 'nodeStatusExporter', daemonSet: 'nvidia-node-status-exporter', deploy: 'node-status-exporter', defaultOff: true },
  { field: 'validator', daemonSet: 'nvidia-operator-validator', deploy: 'operator-validator', always: true },
  { field: 'migManager', daemonSet: 'nvidia-mig-manager', deploy: 'mig-manager', migCapableOnly: true },
] as const;

/** The GPU Operator's client label, set with the operand labels (no DaemonSet of its own selects it). */
const GPU_DEPLOY_CLIENT = 'client';

/** A MIG profile for the simulated MIG-enabled worker (any profile renames the product label the same way). */
export const MIG_PROFILE_EXAMPLE = '1g.10gb';

export type NodeRole = 'service' | 'gpu' | 'cpu';

/**
 * One kind of node of the described cluster as the scheduler sees it. Nodes of one kind are identical but for
 * their host names: `hostnames` holds one per described node name (GPU workers without a described name share
 * the sample placeholder name, which per-node sample templates select until it is replaced at launch).
 */
export interface SimNode {
  /** What the node is, in findings (`GPU worker`, `GPU worker with MIG enabled`). */
  readonly name: string;
  readonly role: NodeRole;
  /** Labels, without kubernetes.io/hostname (see hostnames). */
  readonly labels: Readonly<Record<string, string>>;
  readonly hostnames: readonly string[];
  readonly taints: readonly Taint[];
  /**
   * Allocatable amounts the description gives (cores for cpu, bytes for memory, units otherwise); 0 for the
   * GPU and RDMA resources on nodes without them. A resource missing here is unknown and never compared:
   * the service node's cpu and memory, ephemeral storage, and device plugins the description does not name.
   */
  readonly allocatable: Readonly<Record<string, number>>;
  /** The GPUs run MIG (the variant of a GPU worker after MIG is switched on under the strategy `single`). */
  readonly migEnabled: boolean;
}

/** Labels of a GPU worker: GPU Feature Discovery, Node Feature Discovery and the GPU and Network Operators. */
function gpuWorkerLabels(model: ClusterModel, mig: boolean): Record<string, string> {
  const d = model.description;
  const strategy = d.gpuOperator.migStrategy;
  const labels: Record<string, string> = {
    [NODE_LABELS.os]: 'linux',
    [NODE_LABELS.nvidiaPci]: 'true',
    [LABELS.gpuPresent]: 'true',
    [LABELS.gpuProduct]: mig ? `${d.nodes.gpuWorkers.gpuProduct}-MIG-${MIG_PROFILE_EXAMPLE}` : d.nodes.gpuWorkers.gpuProduct,
  };
  if (strategy !== 'none') labels[NODE_LABELS.migStrategy] = strategy;
  if (mig) labels[NODE_LABELS.migCapable] = 'true';
  for (const o of GPU_OPERATOR_OPERANDS) {
    if (!('migCapableOnly' in o) || mig) labels[`${NODE_LABELS.gpuDeployPrefix}${o.deploy}`] = 'true';
  }
  labels[`${NODE_LABELS.gpuDeployPrefix}${GPU_DEPLOY_CLIENT}`] = 'true';
  if (model.rdma) {
    labels[NODE_LABELS.mellanoxPci] = 'true';
    labels[NODE_LABELS.mofedWait] = 'false';
  }
  return labels;
}

/**
 * The nodes of the described cluster, for the placement simulation: the service node (its labels and
 * taints; allocatable unknown), the GPU workers (labels as the GPU stack sets them, allocatable from the
 * description), a GPU worker with MIG enabled when the MIG strategy is `single` (GFD renames its product
 * label), and the CPU workers.
 */
export function simulatedNodes(model: ClusterModel): SimNode[] {
  const d = model.description;
  const w = d.nodes.gpuWorkers;
  const named = d.samples.nodeNames;
  const gpuHostnames = named.length < w.count ? [...named, NODE_NAME_PLACEHOLDER] : [...named];
  const gpuAllocatable: Record<string, number> = {
    [RESOURCES.cpu]: parseQuantity(w.cpu),
    [RESOURCES.memory]: parseQuantity(w.memory),
    [RESOURCES.gpu]: w.gpusPerNode,
    ...(model.rdma ? { [model.rdma.resourceName]: model.rdma.hcaMax } : {}),
  };
  const gpuWorker = (mig: boolean): SimNode => ({
    name: mig ? 'GPU worker with MIG enabled' : 'GPU worker',
    role: 'gpu',
    labels: gpuWorkerLabels(model, mig),
    hostnames: gpuHostnames,
    taints: w.taints,
    // Under MIG single a node advertises one nvidia.com/gpu per MIG device: at least one per GPU.
    allocatable: gpuAllocatable,
    migEnabled: mig,
  });
  // Nodes without GPUs or HCAs have none of those resources; their cpu and memory come from the description or are unknown.
  const none: Record<string, number> = { [RESOURCES.gpu]: 0, ...(model.rdma ? { [model.rdma.resourceName]: 0 } : {}) };
  const nodes: SimNode[] = [
    {
      name: 'service node',
      role: 'service',
      labels: { [NODE_LABELS.os]: 'linux', ...d.nodes.service.labels },
      hostnames: ['service-node'],
      taints: d.nodes.service.taints,
      allocatable: none,
      migEnabled: false,
    },
    gpuWorker(false),
  ];
  if (d.gpuOperator.migStrategy === 'single') nodes.push(gpuWorker(true));
  const c = d.nodes.cpuWorkers;
  if (c) {
    nodes.push({
      name: 'CPU worker',
      role: 'cpu',
      labels: { [NODE_LABELS.os]: 'linux', ...c.labels },
      hostnames: ['cpu-worker'],
      taints: c.taints,
      allocatable: { ...none, [RESOURCES.cpu]: parseQuantity(c.cpu), [RESOURCES.memory]: parseQuantity(c.memory) },
      migEnabled: false,
    });
  }
  return nodes;
}
