import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { bootTwin, stopTwin, userOfKubeconfig } from './twin-file';
import { ApplicationState, describeState } from '../../src/twin/applications';
import { KubeObject } from '../../src/twin/kube-client';
import { conditionOf, workloadOwnedBy } from '../../src/twin/kueue';
import { lockNamespace } from '../../src/twin/mpi-operator';
import { poll } from '../../src/twin/poll';
import { TwinCluster, twinNodes } from '../../src/twin/twin-cluster';
import { TRAINING_FILE } from '../paths';

/**
 * The training cluster (every add-on managed: the GPU and Network Operators', Kueue's and Dynamo's charts, the MPI and
 * Training Operators' kustomize overlays) bootstrapped as its README says on a twin, synced by the real Argo CD v3.5.1,
 * for what only the twin's insides show: the wave-0 installs' sources read from loopback (the chart mirror of the vendored
 * charts; NFD's CRDs from the GPU Operator's package) and the managed Kueue reached through the cluster network. That
 * the whole bootstrap converges, wave after wave (every Application Synced and Healthy, the root's sync Succeeded, the
 * timeline), is the example's rehearsal through the CLI: test/cluster/rehearse-training.test.ts.
 */

/** How long a PyTorchJob may take from its create to its pods running (Kueue admits it, the operator makes its pods, KWOK runs them). */
const PYTORCHJOB_BOUND_MS = 120_000;

/** How long wave 0 (and the kueue folder of wave 1) may take, from the root's apply (wave 0 took 552 s at load 13-26). */
const BOOTSTRAP_BOUND_MS = 12 * 60 * 1000;

let twin: TwinCluster;

beforeAll(async () => {
  // the GPU workers carry the description's topology levels, as the cluster's do (queueing.topology.levels: set by its
  // operators or its topology discovery): Kueue's topology-aware flavor admits a workload only onto Nodes that carry
  // every level (twinNodes sets kubernetes.io/hostname only)
  ({ twin } = await bootTwin({
    description: TRAINING_FILE,
    nodes: (model) => twinNodes(model).map((n) => (n.kind.role !== 'gpu' ? n : {
      ...n,
      node: { ...n.node, metadata: { ...n.node.metadata, labels: { ...Object.fromEntries((model.description.queueing.topology?.levels ?? []).map((l) => [l, 'block-1'])), ...n.node.metadata.labels } } },
    })),
  }));
}, 30 * 60 * 1000);

afterAll(() => stopTwin(twin));

/** The managed installs' Applications as Argo CD reports them. */
const installs = () => twin.watch.states().filter((s) => s.name.endsWith('-install'));
/** The managed installs of wave 0 (network-operator-install is of wave 1: its NodeFeatureRule needs gpu-operator-install's NFD CRD). */
const WAVE_ZERO = ['dynamo-platform-install', 'gpu-operator-install', 'kueue-install', 'mpi-operator-install', 'training-operator-install'];

describe('the training cluster (managed installs) on the twin', () => {
  it('every managed install of wave 0 is read from loopback (the chart mirror, the Git mirror) and turns Synced and Healthy; NFD\'s CRDs come with the GPU Operator\'s package', async () => {
    const names = WAVE_ZERO.map((n) => `${twin.name}-${n}`);
    const waveZero = (states: ApplicationState[]) => states.filter((s) => names.includes(s.name));
    const done = await twin.watch.waitFor((states) => waveZero(states).length === names.length && waveZero(states).every((s) => s.sync === 'Synced' && s.health === 'Healthy'), BOOTSTRAP_BOUND_MS);
    console.log(`${twin.name}: the installs\n${installs().map(describeState).join('\n')}`);
    expect(waveZero(done.states).map((s) => s.name).sort()).toEqual(names);
    expect(done.ok, waveZero(done.states).map(describeState).join('\n')).toBe(true);
    // every chart of wave 0 came from the mirror: the two Helm repository archives and Kueue's OCI manifest
    const pulled = twin.chartMirror!.requests.filter((r) => r.status === 200).map((r) => r.path);
    for (const chart of [/gpu-operator-v[\d.]+\.tgz$/, /dynamo-platform-[\d.]+\.tgz$/, /\/v2\/.*kueue\/manifests\//]) expect(pulled.some((p) => chart.test(p)), String(chart)).toBe(true);
    // the GPU Operator's package carries NFD's CRDs as published (chart-crds.ts): served once gpu-operator-install synced,
    // before network-operator-install's NodeFeatureRule (wave 1) needs one
    for (const crd of ['nodefeatures', 'nodefeaturegroups', 'nodefeaturerules']) {
      expect(await twin.cp.client().get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}.nfd.k8s-sigs.io`), crd).toBeDefined();
    }
  }, BOOTSTRAP_BOUND_MS + 60_000);

  it('the managed Kueue runs against the install Argo CD synced: its webhooks and its visibility API are reached at their Services\' ClusterIPs, and both visibility APIServices are Available', async () => {
    const kueue = await twin.managedKueue!;
    expect(kueue.exited, kueue.log()).toBe(false);
    const admin = twin.cp.client();
    const apiServices = ['v1beta1', 'v1beta2'].map((v) => `/apis/apiregistration.k8s.io/v1/apiservices/${v}.visibility.kueue.x-k8s.io`);
    const available = (a?: Record<string, any>) => ((a?.status?.conditions ?? []) as Record<string, any>[]).some((c) => c.type === 'Available' && c.status === 'True');
    const live = await poll(() => Promise.all(apiServices.map((u) => admin.get(u))), (all) => all.every(available), 120_000);
    const seen = live.map((a) => ({ name: a?.metadata.name, available: available(a) }));
    expect(seen, JSON.stringify(live.map((a) => a?.status))).toEqual(seen.map((a) => ({ ...a, available: true })));
    // the visibility API answers through the aggregator: the pending workloads of one of the render's ClusterQueues (the
    // kueue folder's: its Application is of wave 1, synced once wave 0 is Healthy)
    const kueueFolder = await twin.watch.waitFor((states) => states.some((x) => x.name === `${twin.name}-kueue` && x.sync === 'Synced' && x.health === 'Healthy'), BOOTSTRAP_BOUND_MS);
    expect(kueueFolder.ok, kueueFolder.states.map(describeState).join('\n')).toBe(true);
    const queue = (await admin.list('/apis/kueue.x-k8s.io/v1beta2/clusterqueues'))[0];
    expect(queue, 'a ClusterQueue of the render').toBeDefined();
    const pending = await admin.get(`/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/${queue.metadata.name}/pendingworkloads`);
    expect(pending?.kind).toBe('PendingWorkloadsSummary');
    // the API server dialed both Services at their ClusterIPs (the cluster network's stand-in for kube-proxy)
    const ns = kueue.loopback.install.namespace;
    for (const name of [kueue.loopback.install.webhookService, (live[0]!.spec as Record<string, any>).service.name as string]) {
      const svc = await admin.get(`/api/v1/namespaces/${ns}/services/${name}`) as Record<string, any>;
      expect(twin.network!.connects.some((c) => c.startsWith(`${svc.spec.clusterIP}:`)), `${name} (${svc.spec.clusterIP})`).toBe(true);
    }
  }, BOOTSTRAP_BOUND_MS + 180_000);

  it('the managed MPI Operator runs against the install Argo CD synced, with its ServiceAccount\'s rights: it holds its leader lease', async () => {
    // started by bootstrap once Argo CD synced mpi-operator-install's ServiceAccount and bindings (mpi-operator.ts); an
    // MPIJob it answers is asserted on the reference cluster's twin (argocd-twin.test.ts): no sample of this cluster is
    // admitted on a twin (its topology levels are labels the twin's Nodes do not carry)
    const operator = await twin.mpiOperator!;
    expect(operator.exited, operator.log()).toBe(false);
    const install = operator.install;
    const lease = await twin.cp.client().get(`/apis/coordination.k8s.io/v1/namespaces/${lockNamespace(install.args)}/leases/mpi-operator`);
    expect((lease?.spec as Record<string, any> | undefined)?.holderIdentity, operator.log()).toEqual(expect.any(String));
    expect(await userOfKubeconfig(twin, operator.kubeconfig), 'the operator\'s token').toBe(`system:serviceaccount:${install.namespace}:${install.serviceAccount}`);
  });

  it('a PyTorchJob Kueue admits gets its master and worker pods from the real Training Operator (its webhook reached at its Service\'s ClusterIP): bound to GPU workers, run by KWOK, its status as the operator writes it', async () => {
    type Json = Record<string, any>;
    const operator = await twin.trainingOperator!;
    expect(operator.exited, operator.log()).toBe(false);
    const install = operator.install;
    expect(await userOfKubeconfig(twin, path.join(operator.dir, 'training-operator.kubeconfig')), 'the operator\'s token').toBe(`system:serviceaccount:${install.namespace}:${install.serviceAccount}`);
    const queues = await twin.watch.waitFor((states) => states.some((x) => x.name === `${twin.name}-kueue` && x.sync === 'Synced' && x.health === 'Healthy'), BOOTSTRAP_BOUND_MS);
    expect(queues.ok, queues.states.map(describeState).join('\n')).toBe(true);
    const admin = twin.cp.client();
    // the rendered sample, one master and one worker of 8 GPUs (its 16 replicas take the whole cluster, beyond its
    // queue's quota): it queues to the default ClusterQueue, which admits it
    const sample = parse(readFileSync(path.join(twin.clusterDir, 'samples', 'pytorchjob.default.pytorch-ddp.yaml'), 'utf8')) as KubeObject;
    const specs = (sample.spec as Json).pytorchReplicaSpecs as Record<string, { replicas: number }>;
    specs.Worker.replicas = 1;
    // created through the operator's validating webhook: the API server dials its Service's ClusterIP
    const job = await admin.create(sample);
    const svc = await admin.get(install.service) as Json;
    expect(twin.network!.connects.some((c) => c.startsWith(`${svc.spec.clusterIP}:`)), `the webhook Service (${svc.spec.clusterIP}): ${twin.network!.connects.join(', ')}`).toBe(true);
    const uid = job.metadata.uid as string;
    const ns = job.metadata.namespace!;
    const gpuWorkers = new Set(twin.nodes.filter((n) => n.kind.role === 'gpu').map((n) => n.node.metadata.name));
    const running = (p: KubeObject) => (p.status as Json | undefined)?.phase === 'Running' && (p.spec as Json).nodeName !== undefined;
    let admitted = false;
    let pods: KubeObject[] = [];
    const now = await poll(async () => {
      const live = await admin.get(await admin.pathOf(job));
      admitted ||= conditionOf(await workloadOwnedBy(admin, job), 'Admitted')?.status === 'True';
      pods = (await admin.list(`/api/v1/namespaces/${ns}/pods`)).filter((p) => ((p.metadata.ownerReferences ?? []) as Json[]).some((r) => r.uid === uid && r.controller === true));
      return live;
    }, (live) => pods.length === 2 && pods.every(running) && conditionOf(live, 'Running')?.status === 'True', PYTORCHJOB_BOUND_MS, 1000);
    const detail = `${JSON.stringify(now?.status)}\n${pods.map((p) => `${p.metadata.name} on ${(p.spec as Json).nodeName ?? '(not bound)'} ${(p.status as Json | undefined)?.phase}`).join('\n')}\n${operator.log(20)}`;
    console.log(`${twin.name}: PyTorchJob ${ns}/${job.metadata.name}\n${detail}`);
    expect(admitted, detail).toBe(true);
    expect(pods.map((p) => p.metadata.name).sort(), detail).toEqual([`${job.metadata.name}-master-0`, `${job.metadata.name}-worker-0`]);
    for (const p of pods) expect(gpuWorkers.has((p.spec as Json).nodeName as string), `${p.metadata.name}: ${detail}`).toBe(true);
    // the status as the operator writes it (pkg/controller.v1/pytorch at v1.9.4): created, then running
    expect(conditionOf(now, 'Created'), detail).toMatchObject({ status: 'True', reason: 'PyTorchJobCreated' });
    expect(conditionOf(now, 'Running'), detail).toMatchObject({ status: 'True', reason: 'PyTorchJobRunning' });
    expect((now?.status as Json).replicaStatuses, detail).toMatchObject({ Master: { active: 1 }, Worker: { active: 1 } });
    await admin.delete(job);
    const left = await poll(async () => (await admin.list(`/api/v1/namespaces/${ns}/pods`)).filter((p) => pods.some((q) => q.metadata.name === p.metadata.name)), (l) => l.length === 0, 60_000, 1000);
    expect(left.map((p) => p.metadata.name)).toEqual([]);
  }, BOOTSTRAP_BOUND_MS + PYTORCHJOB_BOUND_MS + 120_000);
});
