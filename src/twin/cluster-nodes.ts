import { NodeObject } from './control-plane';
import { HermeticNode } from './placement';
import { SimNode, simulatedNodes } from '../check/placement/nodes';
import { InputError, printable } from '../errors';
import { isTransientTaint } from '../init/describe';
import { isJsonObject } from '../json';
import { ClusterModel } from '../model/model';
import { LABELS } from '../model/names';
import { rolesFor, taintsOf } from '../preflight/nodes';
import { ClusterState } from '../preflight/state';

/**
 * The twin's Nodes taken from the cluster itself (`rehearse --snapshot FILE` or `--kubeconfig`, read as `init` reads
 * it: src/preflight/command.ts readClusterState): each Node's name, labels, taints and allocatable as the cluster shows
 * them, in place of the nodes the description implies. The taints Kubernetes puts on a node in trouble (a NotReady
 * node's, init/describe.ts) are left off: the twin's Nodes are Ready, and the rehearsal asks what the cluster does when
 * they are. Each Node stands for the description's node kind of its role (the service node by the description's
 * service labels, a GPU worker by its nvidia.com/gpu, any other as a CPU worker), which the change report names.
 * Bad input (exit 2): no Node at all, a Node without allocatable (the reader refuses an amount that is no quantity).
 */
export function nodesFromCluster(state: ClusterState, model: ClusterModel): HermeticNode[] {
  const roles = rolesFor(model, state);
  const kinds = simulatedNodes(model).filter((k) => !k.migEnabled);
  const kindOf = (role: SimNode['role']): SimNode => kinds.find((k) => k.role === role)
    ?? { name: 'CPU worker', role, labels: {}, hostnames: [], taints: [], allocatable: {}, migEnabled: false };
  const label = state.live ? state.source : `--snapshot ${state.source}`;
  const out: HermeticNode[] = [];
  for (const [role, nodes] of [['service', roles.service], ['gpu', roles.gpu], ['cpu', roles.other]] as const) {
    for (const n of nodes) {
      const name = n.metadata.name;
      const status = (n as { status?: unknown }).status;
      const given = isJsonObject(status) ? status.allocatable : undefined;
      if (!isJsonObject(given) || Object.keys(given).length === 0) {
        throw new InputError(`${label}: Node ${printable(name)}: status.allocatable: missing (rehearse runs each Node with what it can hold: \`kubectl get nodes -o yaml\` shows it)`);
      }
      // the reader checked every amount is a quantity (preflight/objects.ts asStateObject)
      const allocatable = Object.fromEntries(Object.entries(given).map(([resource, v]) => [resource, String(v)]));
      const labels: Record<string, string> = {};
      for (const [k, v] of Object.entries(n.metadata.labels ?? {})) labels[k] = String(v);
      labels[LABELS.hostname] ??= name;
      const taints = taintsOf(n).filter((t) => !isTransientTaint(t))
        .map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect }));
      const node: NodeObject = { metadata: { name, labels }, spec: { taints }, status: { capacity: allocatable, allocatable } };
      out.push({ kind: kindOf(role), node });
    }
  }
  if (out.length === 0) throw new InputError(`${label}: no Node (rehearse runs the cluster's Nodes: \`kubectl get nodes -o yaml\` is what it reads)`);
  return out;
}
