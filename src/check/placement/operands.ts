import { GPU_OPERATOR_OPERANDS } from './nodes';
import { SchedulingSpec, TolerationLike } from './scheduling';
import { isJsonObject } from '../../json';
import { NODE_LABELS, RESOURCES } from '../../model/names';
import { Manifest } from '../../render/manifest';

/** A DaemonSet an operator creates from a custom resource, as the scheduler will see its pods. */
export interface OperandDaemonSet {
  /** The DaemonSet's name (as the operator names it). */
  readonly name: string;
  /** The CR field that switches it on. */
  readonly field: string;
  readonly spec: SchedulingSpec;
  /** Runs on MIG-capable GPU nodes only (the MIG manager). */
  readonly migCapableOnly: boolean;
}

type Json = Record<string, unknown>;

function section(spec: Json, field: string): Json | undefined {
  const v = spec[field];
  return isJsonObject(v) ? v : undefined;
}

/** Every operand asset tolerates this taint; the ClusterPolicy's daemonsets.tolerations replace the asset's list. */
const GPU_TAINT_TOLERATION: TolerationLike = { key: RESOURCES.gpu, operator: 'Exists', effect: 'NoSchedule' };

/**
 * The operand DaemonSets the GPU Operator (v26.7.0) creates from a ClusterPolicy: nodeSelector
 * `nvidia.com/gpu.deploy.<operand>: "true"` (assets), tolerations from `spec.daemonsets.tolerations` when
 * given (they replace the asset's own, `applyCommonDaemonsetConfig`), else the asset's `nvidia.com/gpu`
 * toleration. Enabled as the operator reads `enabled` (unset: on, but the node status exporter; the
 * validator always runs).
 */
export function clusterPolicyOperands(cp: Manifest): OperandDaemonSet[] {
  const spec = (cp.spec ?? {}) as Json;
  const daemonsets = section(spec, 'daemonsets') ?? {};
  const given = Array.isArray(daemonsets.tolerations) ? daemonsets.tolerations as TolerationLike[] : [];
  const tolerations = given.length > 0 ? given : [GPU_TAINT_TOLERATION];
  const out: OperandDaemonSet[] = [];
  for (const o of GPU_OPERATOR_OPERANDS) {
    const enabled = section(spec, o.field)?.enabled;
    const on = 'always' in o || (typeof enabled === 'boolean' ? enabled : !('defaultOff' in o));
    if (!on) continue;
    out.push({
      name: o.daemonSet,
      field: `spec.${o.field}`,
      spec: { nodeSelector: { [`${NODE_LABELS.gpuDeployPrefix}${o.deploy}`]: 'true' }, tolerations },
      migCapableOnly: 'migCapableOnly' in o,
    });
  }
  return out;
}

/**
 * The DaemonSets the Network Operator (v26.4.1, `manifests/state-*`) creates from a NicClusterPolicy: each gets
 * `spec.nodeAffinity` and `spec.tolerations` plus its own `nvidia.com/gpu` toleration; the RDMA shared device
 * plugin and the DOCA driver also select Mellanox NIC nodes (the driver further selects the node's OS and kernel
 * labels, which the simulation does not model), and the device plugin waits for the NIC driver.
 */
export function nicClusterPolicyOperands(ncp: Manifest): OperandDaemonSet[] {
  const spec = (ncp.spec ?? {}) as Json;
  const base: SchedulingSpec = {
    tolerations: [...(Array.isArray(spec.tolerations) ? spec.tolerations as TolerationLike[] : []), GPU_TAINT_TOLERATION],
    affinity: section(spec, 'nodeAffinity') ? { nodeAffinity: section(spec, 'nodeAffinity') as never } : undefined,
  };
  const nic = { [NODE_LABELS.mellanoxPci]: 'true' };
  const secondary = section(spec, 'secondaryNetwork') ?? {};
  const candidates: { field: string; name: string; present: boolean; nodeSelector?: Record<string, string> }[] = [
    { field: 'spec.rdmaSharedDevicePlugin', name: 'rdma-shared-dp-ds', present: !!section(spec, 'rdmaSharedDevicePlugin'), nodeSelector: { ...nic, [NODE_LABELS.mofedWait]: 'false' } },
    { field: 'spec.ofedDriver', name: 'mofed', present: !!section(spec, 'ofedDriver'), nodeSelector: nic },
    { field: 'spec.secondaryNetwork.multus', name: 'kube-multus-ds', present: !!section(secondary, 'multus') },
    { field: 'spec.secondaryNetwork.cniPlugins', name: 'cni-plugins-ds', present: !!section(secondary, 'cniPlugins') },
    { field: 'spec.secondaryNetwork.ipoib', name: 'kube-ipoib-cni-ds', present: !!section(secondary, 'ipoib') },
    { field: 'spec.nvIpam', name: 'nv-ipam-node', present: !!section(spec, 'nvIpam') },
  ];
  return candidates.filter((c) => c.present).map((c) => ({
    name: c.name,
    field: c.field,
    spec: { ...base, nodeSelector: c.nodeSelector },
    migCapableOnly: false,
  }));
}
