import { ClusterIndex } from './cluster-index';
import { dispatchesToWorkers } from './kueue';
import { simulatedNodes, SimNode } from './placement/nodes';
import { clusterPolicyOperands } from './placement/operands';
import { fitOn, podRequests, SchedulingSpec } from './placement/scheduling';
import { Rule, Violation } from './rule';
import { RESOURCES } from '../model/names';
import { formatBytes, formatMillis, parseMillis, parseQuantity } from '../model/quantity';
import { Manifest } from '../render/manifest';

type Json = Record<string, unknown>;

/** One kind of worker as the quotas see it: how many, what each has, what each keeps for its DaemonSets. */
interface WorkerKind {
  readonly node: SimNode;
  readonly field: 'nodes.gpuWorkers' | 'nodes.cpuWorkers';
  readonly count: number;
  readonly allocatable: { readonly cpuMillis: number; readonly memoryBytes: number };
  readonly reserved: { readonly cpuMillis: number; readonly memoryBytes: number };
}


function workerKinds(index: ClusterIndex): WorkerKind[] {
  const model = index.model;
  if (!model) return [];
  const nodes = simulatedNodes(model).filter((n) => !n.migEnabled);
  const d = model.description.nodes;
  const amounts = (cpu: string | number, memory: string | number) => ({ cpuMillis: parseMillis(cpu), memoryBytes: parseQuantity(memory) });
  const described = [
    { role: 'gpu', field: 'nodes.gpuWorkers', workers: d.gpuWorkers },
    { role: 'cpu', field: 'nodes.cpuWorkers', workers: d.cpuWorkers },
  ] as const;
  return described.flatMap(({ role, field, workers }) => {
    const node = nodes.find((n) => n.role === role);
    if (!node || !workers) return [];
    return [{
      node,
      field,
      count: workers.count,
      allocatable: amounts(workers.cpu, workers.memory),
      reserved: amounts(workers.reserved.cpu, workers.reserved.memory),
    }];
  });
}

/** Every DaemonSet pod the tree runs, with the object it comes from: rendered DaemonSets and the GPU Operator's operands. */
function daemonPods(index: ClusterIndex): { readonly object: Manifest; readonly what: string; readonly spec: SchedulingSpec }[] {
  const out: { object: Manifest; what: string; spec: SchedulingSpec }[] = [];
  for (const ds of index.ofKind('DaemonSet')) {
    for (const t of index.podTemplates(ds)) out.push({ object: ds, what: `DaemonSet ${ds.metadata.namespace}/${ds.metadata.name}`, spec: t.spec as unknown as SchedulingSpec });
  }
  for (const cp of index.ofKind('ClusterPolicy', 'nvidia.com')) {
    for (const o of clusterPolicyOperands(cp)) {
      // the operator gives every container of the operand the resources of its ClusterPolicy section
      const section = ((cp.spec ?? {}) as Json)[o.field.replace(/^spec\./, '')] as { resources?: Json } | undefined;
      const containers = section?.resources ? [{ resources: section.resources }] : [];
      out.push({ object: cp, what: `operand ${o.name}`, spec: { ...o.spec, containers } as SchedulingSpec });
    }
  }
  return out;
}

interface FlavorQuota {
  readonly name: string;
  readonly resources?: readonly { readonly name: string; readonly nominalQuota?: string | number }[];
}

/**
 * Quotas that hand out a node's whole allocatable let Kueue admit pods the scheduler cannot place beside the
 * DaemonSets that request CPU or memory there, and leave the agents that request nothing (Cilium, exporters,
 * device plugins) nothing to run on. The description keeps a reserve per node (nodes.*.reserved): the nominal CPU
 * and memory of a flavor over all ClusterQueues must fit what its nodes keep for workloads, and the reserve must
 * cover what the DaemonSets the tree runs there request.
 */
const quotaNodeReserve: Rule = {
  id: 'quota-node-reserve',
  severity: 'error',
  summary: 'CPU and memory quotas leave every worker its reserve for DaemonSets (nodes.*.reserved), which covers what the rendered DaemonSets request there',
  check(index) {
    const kinds = workerKinds(index);
    const out: Violation[] = [];
    const daemons = daemonPods(index);
    for (const k of kinds) {
      const here = daemons.filter((p) => fitOn(p.spec, k.node, { resources: false }).fits > 0);
      const requested = here.reduce((s, p) => {
        const r = podRequests(p.spec);
        const cpuMillis = s.cpuMillis + Math.round((r.get(RESOURCES.cpu) ?? 0) * 1000);
        return { cpuMillis, memoryBytes: s.memoryBytes + (r.get(RESOURCES.memory) ?? 0) };
      }, { cpuMillis: 0, memoryBytes: 0 });
      if (requested.cpuMillis > k.reserved.cpuMillis || requested.memoryBytes > k.reserved.memoryBytes) {
        const objects = [...new Set(here.filter((p) => podRequests(p.spec).size > 0).map((p) => p.object))];
        out.push({
          message: `the DaemonSet pods on every ${k.node.name} (${here.filter((p) => podRequests(p.spec).size > 0).map((p) => p.what).join(', ')}) request `
            + `${formatMillis(requested.cpuMillis)} CPU and ${formatBytes(requested.memoryBytes)} memory, more than ${k.field}.reserved keeps out of the quotas `
            + `(${formatMillis(k.reserved.cpuMillis)} CPU, ${formatBytes(k.reserved.memoryBytes)}): raise the reserve`,
          objects,
        });
      }
    }
    // Nominal CPU and memory per flavor over every ClusterQueue, against the workers the flavor's node labels select.
    // a MultiKueue manager's queues hold their workers' CPU and memory, not this cluster's
    const queues = index.ofKind('ClusterQueue', 'kueue.x-k8s.io').filter((cq) => !dispatchesToWorkers(index, cq));
    const flavors = new Map<string, { cpuMillis: number; memoryBytes: number; queues: Manifest[] }>();
    for (const cq of queues) {
      const groups = ((cq.spec as { resourceGroups?: { flavors?: FlavorQuota[] }[] } | undefined)?.resourceGroups) ?? [];
      for (const f of groups.flatMap((g) => g.flavors ?? [])) {
        const sum = flavors.get(f.name) ?? { cpuMillis: 0, memoryBytes: 0, queues: [] };
        for (const r of f.resources ?? []) {
          if (r.nominalQuota === undefined) continue;
          if (r.name === RESOURCES.cpu) sum.cpuMillis += parseMillis(r.nominalQuota);
          if (r.name === RESOURCES.memory) sum.memoryBytes += parseQuantity(r.nominalQuota);
        }
        if (!sum.queues.includes(cq)) sum.queues.push(cq);
        flavors.set(f.name, sum);
      }
    }
    for (const [name, sum] of flavors) {
      const flavor = index.find('ResourceFlavor', name);
      const labels = ((flavor?.spec as { nodeLabels?: Record<string, string> } | undefined)?.nodeLabels) ?? {};
      const selected = kinds.filter((k) => Object.entries(labels).every(([key, v]) => k.node.labels[key] === v));
      if (!flavor || selected.length === 0) continue; // placement reports a flavor that selects no node
      const left = (pick: (x: WorkerKind['allocatable']) => number) => selected.reduce((s, k) => s + k.count * (pick(k.allocatable) - pick(k.reserved)), 0);
      const what = selected.map((k) => `${k.count} x (${formatMillis(k.allocatable.cpuMillis)} - ${formatMillis(k.reserved.cpuMillis)}) CPU, `
        + `${k.count} x (${formatBytes(k.allocatable.memoryBytes)} - ${formatBytes(k.reserved.memoryBytes)}) memory on the ${k.node.name}s (${k.field}.reserved)`).join('; ');
      const over = [
        ...(sum.cpuMillis > left((x) => x.cpuMillis) ? [`${formatMillis(sum.cpuMillis)} CPU`] : []),
        ...(sum.memoryBytes > left((x) => x.memoryBytes) ? [`${formatBytes(sum.memoryBytes)} memory`] : []),
      ];
      if (over.length === 0) continue;
      out.push({
        message: `the nominal quotas of ${sum.queues.map((cq) => `ClusterQueue ${cq.metadata.name}`).join(', ')} on this flavor add up to ${over.join(' and ')}, `
          + `more than its nodes keep for workloads (${what}): Kueue would admit pods the scheduler cannot place beside the DaemonSets`,
        objects: [flavor, ...sum.queues],
      });
    }
    return out;
  },
};

export const NODE_RESERVE_RULES: readonly Rule[] = [quotaNodeReserve];
