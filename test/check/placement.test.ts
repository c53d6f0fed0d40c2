import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkCluster, checkClusterRendered, ClusterView, PLACEMENT_RULES, simulatedNodes } from '../../src/check';
import { SimNode } from '../../src/check/placement/nodes';
import { fitOn } from '../../src/check/placement/scheduling';
import { loadDescription } from '../../src/model/load';
import { buildModel, ClusterModel } from '../../src/model/model';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { modelOf, TRAINING_FILE } from '../helpers';

/** The vendored upstream installs; the tests that read them are skipped (and reported so) without them. */
const HAS_UPSTREAM = existsSync(DEFAULT_UPSTREAM);

const TRAINING = buildModel(loadDescription(TRAINING_FILE));

/** A rendered cluster as a mutable check view (a deep copy: edits never reach the renderer's objects). */
function viewOf(model: ClusterModel): ClusterView & { all: Manifest[] } {
  const c = renderCluster(model);
  const folders = c.folders.map((f) => ({ folder: f.folder, objects: JSON.parse(JSON.stringify(f.objects)) as Manifest[] }));
  return { name: c.name, model, folders, all: folders.flatMap((f) => f.objects) };
}

function placementMessages(view: ClusterView): string[] {
  return checkCluster(view, { rules: PLACEMENT_RULES }).map((f) => f.message);
}

function find(view: { all: Manifest[] }, kind: string, nameEnd: string): any {
  const m = view.all.find((o) => o.kind === kind && o.metadata.name.endsWith(nameEnd));
  if (!m) throw new Error(`no ${kind} *${nameEnd}`);
  return m;
}

describe('simulated nodes', () => {
  it('the reference cluster: a service node, the GPU workers and, under MIG single, a MIG-enabled GPU worker', () => {
    const nodes = simulatedNodes(modelOf());
    expect(nodes.map((n) => n.name)).toEqual(['service node', 'GPU worker', 'GPU worker with MIG enabled']);
    const [service, gpu, mig] = nodes;
    // the service node's cpu and memory are not described: never compared
    expect(service.allocatable).toEqual({ 'nvidia.com/gpu': 0, 'rdma/rdma_shared_device_a': 0 });
    expect(gpu.allocatable).toMatchObject({ 'cpu': 192, 'nvidia.com/gpu': 8, 'rdma/rdma_shared_device_a': 63 });
    expect(gpu.labels).toMatchObject({
      'nvidia.com/gpu.present': 'true',
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'feature.node.kubernetes.io/pci-10de.present': 'true',
      'feature.node.kubernetes.io/pci-15b3.present': 'true',
      'nvidia.com/gpu.deploy.device-plugin': 'true',
    });
    expect(gpu.labels['nvidia.com/gpu.deploy.mig-manager']).toBeUndefined();
    expect(mig.labels['nvidia.com/gpu.product']).toMatch(/^NVIDIA-H100-80GB-HBM3-MIG-/);
    expect(mig.labels['nvidia.com/gpu.deploy.mig-manager']).toBe('true');
    expect(gpu.hostnames).toEqual(['replace-with-node-name']);
  });

  it('no MIG-enabled variant without the strategy that renames the product; CPU workers and named GPU workers', () => {
    const nodes = simulatedNodes(modelOf((d) => {
      d.gpuOperator = { migStrategy: 'mixed' };
      d.nodes.cpuWorkers = { count: 2, cpu: '64', memory: '256Gi' };
      d.samples.nodeNames = ['gpu-1', 'gpu-2'];
      delete d.network.infiniband;
    }));
    expect(nodes.map((n) => n.name)).toEqual(['service node', 'GPU worker', 'CPU worker']);
    expect(nodes[1].hostnames).toEqual(['gpu-1', 'gpu-2']);
    expect(nodes[1].labels['feature.node.kubernetes.io/pci-15b3.present']).toBeUndefined();
    expect(nodes[2].allocatable).toEqual({ 'nvidia.com/gpu': 0, 'cpu': 64, 'memory': 256 * 2 ** 30 });
  });
});

describe('placement work grows with the nodes, not with nodes x templates', () => {
  /** A GPU worker kind of `n` host names whose element reads are counted. */
  function countedNode(n: number): { node: SimNode; reads: () => number } {
    const names = Array.from({ length: n }, (_, i) => `gpu-${i}`);
    let reads = 0;
    const hostnames = new Proxy(names, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    const node: SimNode = { name: 'GPU worker', role: 'gpu', labels: { 'nvidia.com/gpu.present': 'true' }, hostnames, taints: [], allocatable: { 'nvidia.com/gpu': 8 }, migEnabled: false };
    return { node, reads: () => reads };
  }

  it('one pinned pod per host name reads each host name a bounded number of times (was once per pod and host name)', () => {
    const n = 2000;
    const { node, reads } = countedNode(n);
    for (let i = 0; i < n; i++) {
      const fit = fitOn({ nodeName: `gpu-${i}`, containers: [{ resources: { limits: { 'nvidia.com/gpu': 8 } } }] }, node);
      expect(fit.fits).toBe(1);
      expect(fit.of).toBe(n);
    }
    // a linear budget: building the host set once, then a few reads per pod (quadratic would be n * n = 4,000,000)
    expect(reads()).toBeLessThanOrEqual(4 * n);
  });

  it('the host names a spec names are told apart, every other one gets the answer of one of them', () => {
    const { node } = countedNode(10);
    expect(fitOn({}, node)).toEqual({ fits: 10, of: 10, reasons: [] });
    expect(fitOn({ nodeSelector: { 'kubernetes.io/hostname': 'gpu-3' } }, node).fits).toBe(1);
    expect(fitOn({ nodeSelector: { 'kubernetes.io/hostname': 'elsewhere' } }, node)).toEqual({
      fits: 0, of: 10, reasons: ['nodeSelector kubernetes.io/hostname=elsewhere (node: kubernetes.io/hostname=gpu-0)'],
    });
    const notIn = (values: string[]) => ({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values }] }] } } } });
    expect(fitOn(notIn(['gpu-1', 'gpu-2', 'nowhere']), node).fits).toBe(8);
    const byField = { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-4', 'gpu-5'] }] }] } } } };
    expect(fitOn(byField, node).fits).toBe(2);
    // host names compared as numbers: each one is tried
    const numeric = { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'Gt', values: ['1'] }] }] } } } };
    expect(fitOn(numeric, node).fits).toBe(0);
    // requests over allocatable miss every host name
    expect(fitOn({ containers: [{ resources: { requests: { 'nvidia.com/gpu': 9 } } }] }, node)).toMatchObject({ fits: 0, reasons: ['requests 9 nvidia.com/gpu, allocatable 8'] });
  });

  it('a cluster with 300 named GPU workers: every per-node sample placed; an operand that misses one names the count', () => {
    const names = Array.from({ length: 300 }, (_, i) => `gpu-worker-${i}`);
    const model = modelOf((d) => {
      d.nodes.gpuWorkers.count = names.length;
      d.samples.nodeNames = names;
    });
    const view = viewOf(model);
    expect(view.all.filter((m) => m.kind === 'Job' && m.metadata.name.startsWith('dcgm-diag-'))).toHaveLength(300);
    expect(placementMessages(view)).toEqual([]);
    const ncp = find(view, 'NicClusterPolicy', 'nic-cluster-policy');
    ncp.spec.nodeAffinity = { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: ['gpu-worker-7'] }] }] } };
    const messages = placementMessages(view);
    expect(messages.length).toBeGreaterThan(0);
    for (const m of messages) expect(m).toMatch(/must run on every GPU worker but not on the GPU worker( with MIG enabled)? \(fits 299 of 300 host names\): required node affinity \(kubernetes.io\/hostname NotIn \[gpu-worker-7\]\)/);
  });
});

describe('placement of the rendered clusters', () => {
  it('every rendered cluster places every pod template', () => {
    expect(placementMessages(viewOf(modelOf()))).toEqual([]);
    expect(placementMessages(viewOf(TRAINING))).toEqual([]);
    // tainted CPU workers and their cpu-only flavor (which lists nvidia.com/gpu without quota), no InfiniBand
    expect(placementMessages(viewOf(modelOf((d) => {
      d.nodes.cpuWorkers = { count: 2, cpu: '64', memory: '256Gi', taints: [{ key: 'cpu', effect: 'NoSchedule' }] };
      delete d.network.infiniband;
    })))).toEqual([]);
  });

  it('without the model there is nothing to simulate', () => {
    const { model: _model, ...view } = viewOf(TRAINING);
    expect(placementMessages(view)).toEqual([]);
  });

  it('a shared-path helper pod without the nodes\' tolerations never schedules when every node is tainted', () => {
    const view = viewOf(TRAINING);
    const cm = find(view, 'ConfigMap', 'local-path-config');
    const helper = parse(cm.data['helperPod.yaml']);
    helper.spec.tolerations = helper.spec.tolerations.filter((t: { key: string }) => t.key === 'node.kubernetes.io/disk-pressure');
    cm.data['helperPod.yaml'] = JSON.stringify(helper);
    expect(placementMessages(view)).toEqual([expect.stringMatching(
      /ConfigMap local-path-storage\/local-path-config: data\["helperPod.yaml"\] \(helper pod of shared-path, scheduled\) fits no node.*service node: taint node-role.kubernetes.io\/control-plane:NoSchedule not tolerated; GPU worker: taint nvidia.com\/gpu:NoSchedule not tolerated/,
    )]);
  });

  it('GPU operands that do not tolerate the GPU workers\' taint miss every GPU worker', () => {
    const view = viewOf(TRAINING);
    find(view, 'ClusterPolicy', 'cluster-policy').spec.daemonsets.tolerations = [{ key: 'example.com/other', operator: 'Exists' }];
    const messages = placementMessages(view);
    expect(messages).toContainEqual(expect.stringMatching(/ClusterPolicy cluster-policy: operand DaemonSet nvidia-device-plugin-daemonset \(spec.devicePlugin\) must run on every GPU worker but not on the GPU worker: taint nvidia.com\/gpu:NoSchedule not tolerated/));
    expect(messages.every((m) => m.startsWith('ClusterPolicy cluster-policy: operand DaemonSet'))).toBe(true);
  });

  it('MIG: selectors on nvidia.com/gpu.product miss a GPU worker with MIG enabled (NicClusterPolicy, Kueue flavor)', () => {
    const view = viewOf(TRAINING);
    const product = { key: 'nvidia.com/gpu.product', operator: 'In', values: ['NVIDIA-H200'] };
    find(view, 'NicClusterPolicy', 'nic-cluster-policy').spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms = [{ matchExpressions: [product] }];
    find(view, 'ResourceFlavor', 'nvidia-h200').spec.nodeLabels = { 'nvidia.com/gpu.product': 'NVIDIA-H200' };
    expect(placementMessages(view)).toEqual([
      expect.stringMatching(/NicClusterPolicy nic-cluster-policy: operand DaemonSet rdma-shared-dp-ds \(spec.rdmaSharedDevicePlugin\) must run on every GPU worker but not on the GPU worker with MIG enabled: required node affinity \(nvidia.com\/gpu.product In \[NVIDIA-H200\]\)/),
      expect.stringMatching(/ResourceFlavor nvidia-h200: its nodeLabels .* select no GPU worker with MIG enabled: nodeSelector nvidia.com\/gpu.product=NVIDIA-H200 \(node: nvidia.com\/gpu.product=NVIDIA-H200-MIG-1g.10gb\)/),
    ]);
  });

  it('a queued job gets its flavor\'s node labels and tolerations from Kueue; the same job unqueued fits no tainted node', () => {
    const job = (labels: Record<string, string>): Manifest => ({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'train', namespace: 'research', labels },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'train', image: 'busybox:1.37.0', resources: { limits: { 'nvidia.com/gpu': 8 } } }] } } },
    });
    const rendered = viewOf(TRAINING);
    const withJob = (m: Manifest): ClusterView => ({ ...rendered, folders: [...rendered.folders, { folder: 'jobs', objects: [m] }] });
    expect(placementMessages(withJob(job({ 'kueue.x-k8s.io/queue-name': 'research' })))).toEqual([]);
    expect(placementMessages(withJob(job({})))).toEqual([expect.stringMatching(/Job research\/train: spec.template.spec fits no node.*GPU worker: taint nvidia.com\/gpu:NoSchedule not tolerated/)]);
  });

  it('the rendered selectors survive MIG: the NicClusterPolicy and the GPU flavor select nvidia.com/gpu.present', () => {
    const view = viewOf(TRAINING);
    expect(find(view, 'ResourceFlavor', 'nvidia-h200').spec.nodeLabels).toEqual({ 'nvidia.com/gpu.present': 'true' });
    expect(find(view, 'NicClusterPolicy', 'nic-cluster-policy').spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms)
      .toEqual([{ matchExpressions: [{ key: 'nvidia.com/gpu.present', operator: 'In', values: ['true'] }] }]);
  });
});

describe.skipIf(!HAS_UPSTREAM)('managed installs, as the engines render them', () => {
  /** Placement findings of a view, its Applications rendered by helm and kustomize. */
  async function rendered(view: ClusterView, upstream = DEFAULT_UPSTREAM): Promise<string[]> {
    return (await checkClusterRendered(view, { rules: PLACEMENT_RULES, upstream })).findings.map((f) => f.message);
  }

  it('the MPI and Training Operator Deployments never schedule on the training cluster without our kustomize patches', async () => {
    const view = viewOf(TRAINING);
    for (const app of view.all.filter((o) => o.kind === 'Application' && /(mpi|training)-operator-install$/.test(o.metadata.name))) {
      const source = (app.spec as any).source;
      source.kustomize.patches = source.kustomize.patches.filter((p: { patch: string }) => !p.patch.includes('/spec/template/spec/tolerations'));
    }
    expect(await rendered(view)).toEqual([
      expect.stringMatching(/^Application argocd\/training-cluster-mpi-operator-install: kubeflow\/mpi-operator\/manifests\/overlays\/standalone v0.8.2: Deployment mpi-operator\/mpi-operator spec.template.spec fits no node.*service node: taint node-role.kubernetes.io\/control-plane:NoSchedule not tolerated; GPU worker: taint nvidia.com\/gpu:NoSchedule not tolerated/),
      expect.stringMatching(/^Application argocd\/training-cluster-training-operator-install: kubeflow\/trainer\/manifests\/overlays\/standalone v1.9.4: Deployment kubeflow\/training-operator .* fits no node/),
    ]);
  });

  it('simulates every workload the charts render with the Application\'s values, and the pods of the VictoriaMetrics CRs', async () => {
    const model = modelOf((d) => {
      d.installs = { gpuOperator: 'managed', kueue: 'managed', monitoring: 'managed' };
      d.nodes.gpuWorkers.taints = [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }];
    });
    expect(await rendered(viewOf(model))).toEqual([]);
    // without our values the stack's workloads and the pods its operator runs for its CRs fit no node
    const view = viewOf(model);
    const stack = view.all.find((o) => o.kind === 'Application' && o.metadata.name.endsWith('monitoring-stack-install')) as any;
    stack.spec.source.helm.valuesObject = { grafana: stack.spec.source.helm.valuesObject.grafana };
    delete stack.spec.source.helm.valuesObject.grafana.tolerations;
    delete stack.spec.source.helm.valuesObject.grafana.nodeSelector;
    const messages = await rendered(view);
    const misplaced = messages.map((m) => /chart victoria-metrics-k8s-stack 0.54.0: (\w+ [\w/-]+)/.exec(m)?.[1]).sort();
    expect(misplaced).toEqual([
      'Deployment monitoring/vm-grafana', 'Deployment monitoring/vm-kube-state-metrics', 'Deployment monitoring/vm-victoria-metrics-operator',
      'Job monitoring/vm-victoria-metrics-operator-cleanup-hook', 'VMAgent monitoring/vm-victoria-metrics-k8s-stack', 'VMAlert monitoring/vm-victoria-metrics-k8s-stack',
      'VMAlertmanager monitoring/vm-victoria-metrics-k8s-stack', 'VMSingle monitoring/vm-victoria-metrics-k8s-stack',
    ]);
    expect(messages[0]).toMatch(/fits no node of the cluster: service node: taint node-role.kubernetes.io\/control-plane:NoSchedule not tolerated/);
  });

  it('an absent upstream folder leaves the managed installs out', async () => {
    const view = viewOf(TRAINING);
    for (const app of view.all.filter((o) => o.kind === 'Application' && o.metadata.name.endsWith('operator-install'))) delete (app.spec as any).source.kustomize;
    expect(await rendered(view, path.join(DEFAULT_UPSTREAM, 'missing'))).toEqual([]);
  });
});
