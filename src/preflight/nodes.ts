import { ClusterState, nodesOf } from './state';

import { valueAt } from '../json';
import { Taint } from '../model/description';
import { ClusterModel } from '../model/model';
import { LABELS, RESOURCES } from '../model/names';
import { formatBytes, formatCpu, parseQuantity } from '../model/quantity';
import { Manifest } from '../render/manifest';

/** The nodes of a cluster by role, as the description sees them. */
export interface NodeRoles {
  /** Nodes carrying every label of the service node selector (e.g. the control-plane role label). */
  readonly service: Manifest[];
  /** Nodes advertising nvidia.com/gpu (and not service nodes). */
  readonly gpu: Manifest[];
  readonly other: Manifest[];
}

export function allocatable(node: Manifest, resource: string): string | undefined {
  const v = valueAt(node, ['status', 'allocatable', resource]);
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

export function allocatableAmount(node: Manifest, resource: string): number {
  const v = allocatable(node, resource);
  return v === undefined ? 0 : parseQuantity(v);
}

/**
 * A node's allocatable amount as a description writes it: canonical, and readable. Memory is
 * rounded down (never promising what the node lacks) to whole GiB from 64 GiB up, else to whole
 * MiB: 1932735284Ki becomes 1843Gi. CPU keeps its canonical form ("188", "191500m").
 */
export function readableAllocatable(resource: 'cpu' | 'memory', amount: number): string {
  if (resource === 'cpu') return formatCpu(amount);
  const unit = amount >= 64 * 2 ** 30 ? 2 ** 30 : 2 ** 20;
  return formatBytes(Math.floor(amount / unit) * unit);
}

export function taintsOf(node: Manifest): Taint[] {
  const t = valueAt(node, ['spec', 'taints']);
  if (!Array.isArray(t)) return [];
  return t.map((x: { key: string; value?: string; effect: Taint['effect'] }) => (x.value === undefined || x.value === '' ? { key: x.key, effect: x.effect } : { key: x.key, value: x.value, effect: x.effect }));
}

export function taintKey(t: Taint): string {
  return `${t.key}${t.value === undefined ? '' : `=${t.value}`}:${t.effect}`;
}

export function nodeRoles(state: ClusterState, serviceSelector: Readonly<Record<string, string>>): NodeRoles {
  const nodes = nodesOf(state);
  const labels = (n: Manifest) => n.metadata.labels ?? {};
  const isService = (n: Manifest) => Object.entries(serviceSelector).every(([k, v]) => labels(n)[k] === v);
  const service = nodes.filter(isService);
  const gpu = nodes.filter((n) => !isService(n) && allocatableAmount(n, RESOURCES.gpu) > 0);
  const placed = new Set([...service, ...gpu]);
  return { service, gpu, other: nodes.filter((n) => !placed.has(n)) };
}

/** RDMA resources a node advertises: `rdma/<name>` -> units. */
export function rdmaResources(node: Manifest): Map<string, number> {
  const alloc = valueAt(node, ['status', 'allocatable']) as Record<string, string> | undefined;
  return new Map(Object.entries(alloc ?? {}).filter(([k]) => k.startsWith(RESOURCES.rdmaPrefix)).map(([k, v]) => [k, parseQuantity(v)]));
}

/** The RDMA shared device plugin's devices from a NicClusterPolicy (spec.rdmaSharedDevicePlugin.config JSON). */
export function nicClusterPolicyDevices(state: ClusterState): { resourceName: string; rdmaHcaMax?: number; selectors?: Record<string, unknown> }[] {
  const out: { resourceName: string; rdmaHcaMax?: number; selectors?: Record<string, unknown> }[] = [];
  for (const p of state.list('mellanox.com', 'NicClusterPolicy')) {
    const config = valueAt(p, ['spec', 'rdmaSharedDevicePlugin', 'config']);
    if (typeof config !== 'string') continue;
    try {
      const parsed = JSON.parse(config) as { configList?: { resourceName?: unknown; rdmaHcaMax?: unknown; selectors?: unknown }[] };
      for (const c of parsed.configList ?? []) {
        if (typeof c.resourceName !== 'string') continue;
        out.push({
          resourceName: c.resourceName,
          rdmaHcaMax: typeof c.rdmaHcaMax === 'number' ? c.rdmaHcaMax : undefined,
          selectors: c.selectors && typeof c.selectors === 'object' ? c.selectors as Record<string, unknown> : undefined,
        });
      }
    } catch {
      // an unreadable config advertises nothing; the nodes tell what is advertised
    }
  }
  return out;
}

/** Label of the GPU product on a node (set by GPU Feature Discovery). */
export function gpuProduct(node: Manifest): string | undefined {
  return node.metadata.labels?.[LABELS.gpuProduct];
}

/** The model's roles for the description's service node. */
export function rolesFor(model: ClusterModel, state: ClusterState): NodeRoles {
  return nodeRoles(state, model.serviceNode.selector);
}
