import { simulatedNodes } from '../../src/check/placement/nodes';
import { ClusterModel } from '../../src/model/model';
import { ControlPlane } from '../../src/twin/control-plane';

/** A Node as a kubelet registers it: what a control plane test creates (createNode). */
export interface DescribedNode {
  readonly metadata: { name: string; labels: Record<string, string> };
  readonly spec: object;
  readonly status: { capacity: Record<string, string> };
}

/** The Nodes of the described cluster as their kubelets would register them: the service node and every GPU worker. */
export function describedNodes(m: ClusterModel): DescribedNode[] {
  const quantity = (resource: string, v: number) => (resource === 'memory' ? `${Math.floor(v / 1024)}Ki` : String(v));
  const capacity = (a: Readonly<Record<string, number>>) => Object.fromEntries(Object.entries(a)
    .filter(([, v]) => v > 0).map(([k, v]) => [k, quantity(k, v)]));
  const out = [];
  for (const n of simulatedNodes(m).filter((x) => !x.migEnabled && x.role !== 'cpu')) {
    const count = n.role === 'gpu' ? m.description.nodes.gpuWorkers.count : 1;
    for (let i = 0; i < count; i++) {
      const name = n.role === 'gpu' ? `gpu-worker-${i}` : n.hostnames[0];
      out.push({
        metadata: { name, labels: { ...n.labels, 'kubernetes.io/hostname': name } },
        spec: { taints: n.taints.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect })) },
        status: { capacity: { pods: '110', ...(n.role === 'service' ? { cpu: '16', memory: '65536Mi' } : capacity(n.allocatable)) } },
      });
    }
  }
  return out;
}


/** Creates the Nodes, Ready as a cluster whose kubelets run shows them. */
export async function registerNodes(cp: ControlPlane, nodes: readonly DescribedNode[]): Promise<void> {
  for (const n of nodes) {
    await cp.createNode(n);
    // the admission plugin TaintNodesByCondition taints a new Node not-ready until its kubelet reports Ready, and
    // the node lifecycle controller that lifts it does not run here: the Node as a ready cluster shows it
    await cp.client().request('PATCH', `/api/v1/nodes/${n.metadata.name}`, { body: { spec: n.spec }, contentType: 'application/merge-patch+json' });
  }
}
