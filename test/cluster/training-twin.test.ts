import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { bootTwin, stopTwin } from './twin-file';
import { ApplicationState, describeState, formatTimeline } from '../../src/twin/applications';
import { poll } from '../../src/twin/poll';
import { TwinCluster } from '../../src/twin/twin-cluster';
import { TRAINING_FILE } from '../paths';

/**
 * The training cluster (every add-on managed: the GPU and Network Operators', Kueue's and Dynamo's charts, the MPI and
 * Training Operators' kustomize overlays) bootstrapped as its README says on a twin, synced by the real Argo CD v3.5.1:
 * every managed install's source is read from loopback (the chart mirror of the vendored charts, the Git mirror of the
 * vendored overlays), so each wave-0 install compares and syncs instead of ending in a ComparisonError.
 */

/** How long the bootstrap may take, from the root's apply to its end state. */
const BOOTSTRAP_BOUND_MS = 8 * 60 * 1000;

let twin: TwinCluster;
let pushed: string;

beforeAll(async () => {
  ({ twin, head: pushed } = await bootTwin({ description: TRAINING_FILE }));
}, 30 * 60 * 1000);

afterAll(() => stopTwin(twin));

/** The managed installs' Applications as Argo CD reports them. */
const installs = () => twin.watch.states().filter((s) => s.name.endsWith('-install'));
const compared = (s: ApplicationState) => (s.sync === 'Synced' || s.sync === 'OutOfSync') && s.conditions.every((c) => !/ComparisonError/.test(c));
/** The managed installs' Applications track their upstream sources' releases (a chart version, a tag); the root and every other child the pushed commit. */
const isInstall = (s: ApplicationState) => s.name.endsWith('-install');
/** The revision each is at once synced: the pushed commit, or an install's own source revision. */
const revisionOf = (s: ApplicationState) => (isInstall(s) ? s.revision : pushed);
/** Converged: Synced and Healthy, at the pushed commit but for the installs. */
const converged = (s: ApplicationState) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === revisionOf(s);
/** The managed installs of wave 0 (network-operator-install is of wave 1: its NodeFeatureRule needs gpu-operator-install's NFD CRD). */
const WAVE_ZERO = ['dynamo-platform-install', 'gpu-operator-install', 'kueue-install', 'mpi-operator-install', 'training-operator-install'];

describe('the training cluster (managed installs) on the twin', () => {
  it('every managed install of wave 0 is read from loopback (the chart mirror, the Git mirror): each compares, none ends in a ComparisonError, and each turns Synced and Healthy', async () => {
    const names = WAVE_ZERO.map((n) => `${twin.name}-${n}`);
    const waveZero = (states: ApplicationState[]) => states.filter((s) => names.includes(s.name));
    const done = await twin.watch.waitFor((states) => waveZero(states).length === names.length && waveZero(states).every((s) => s.sync === 'Synced' && s.health === 'Healthy'), BOOTSTRAP_BOUND_MS);
    console.log(`${twin.name}: the installs\n${installs().map(describeState).join('\n')}`);
    // wave 0's installs: network-operator-install (wave 1) is created once wave 0 is Healthy, and may not be compared yet
    expect(waveZero(installs()).filter((s) => !compared(s)).map(describeState)).toEqual([]);
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
    const networkInstall = parse(readFileSync(path.join(twin.workTree, twin.applicationFile(`${twin.name}-network-operator-install`)), 'utf8'));
    expect(networkInstall.metadata.annotations['argocd.argoproj.io/sync-wave']).toBe('1');
  }, BOOTSTRAP_BOUND_MS + 60_000);

  it('the bootstrap converges: every Application is Synced and Healthy at the pushed commit and the root\'s sync Succeeded, within the bound; the timeline is printed', async () => {
    const root = twin.name;
    const done = await twin.watch.waitFor((states) => states.every(converged) && twin.watch.state(root)?.phase === 'Succeeded', BOOTSTRAP_BOUND_MS);
    console.log(`${root}: bootstrap timeline (from the root's apply)\n${formatTimeline(twin.watch.timeline(twin.rootAppliedAt!, revisionOf))}\n${done.states.map(describeState).join('\n')}\nCPU seconds: ${JSON.stringify(twin.cpuSeconds())}`);
    expect(done.states.filter((s) => !converged(s)).map(describeState), 'not converged').toEqual([]);
    expect(done.ok).toBe(true);
    // the root and every Application its folder's kustomization lists
    const listed = (parse(readFileSync(path.join(twin.clusterDir, 'gitops', 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources;
    const expected = listed.filter((f) => f.startsWith('application.')).map((f) => (parse(readFileSync(path.join(twin.clusterDir, 'gitops', f), 'utf8')) as { metadata: { name: string } }).metadata.name);
    expect(done.states.map((s) => s.name).sort()).toEqual([root, ...expected].sort());
    for (const s of done.states.filter((x) => x.name !== root && !isInstall(x))) expect(s.targetRevision, s.name).toBe(pushed);
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
    // kueue folder's, synced once the bootstrap converged)
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
  }, 180_000);
});
