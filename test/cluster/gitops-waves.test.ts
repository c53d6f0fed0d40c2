import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ArgoCdCli, startArgoCdCli } from './argocd-cli';
import { bootTwin, printedCommands, rootSees, stopTwin, untilOnTwin } from './twin-file';
import { NAMESPACES, NODE_LABELS } from '../../src/model/names';
import { readTreeObjects, removedObjects } from '../../src/render/deletions';
import { ApplicationState, formatTimeline } from '../../src/twin/applications';
import { KubeObject } from '../../src/twin/kube-client';
import { sleep } from '../../src/twin/poll';
import { TwinCluster } from '../../src/twin/twin-cluster';
import { crdOf, editYamlFile } from '../helpers';
import { REFERENCE_FILE } from '../paths';

/*
 * Issue 49 on the real Argo CD (v3.5.1, the twin of the reference cluster: test/cluster/README.md): a later commit
 * that adds a tenant orders its queue before its namespace; a failed sync is Degraded with the API server's message,
 * the root shows it and retries with the later waves held, and the fix commit recovers by itself; a wave that stays
 * Progressing (a GPU Operator operand whose roll hangs: the stand-in's DaemonSet asks more than a node has) holds a
 * later commit for gitops.waveWait (and the resync that notices it) at most, and the revert of both reaches it; a held queue holds no wave; a revert that only drops fields is applied
 * (every child applies server-side); the escape hatches the cluster's README prints, run with the argocd CLI (the
 * root's terminate-op, the root's sync by hand and of one Application with --resource, a child's terminate-op of a
 * sync held by its hook, confirm-deletion, sync --prune); automated prune off; a CRD and its custom resources changed
 * in one commit (a wave apart, then in one Application, with a new version of the CRD); last, a GPU node NotReady (its kubelet gone) under operands that tolerate every taint keeps the GPU
 * Operator's wave Progressing, holds a later commit for gitops.waveWait at most, and the node back lets it turn
 * Healthy. One twin, the scenarios in order, each
 * ending converged; what each shows is in its name. Self-heal off; the samples synced by hand.
 *
 * The twin runs with the node lifecycle controller (a NotReady Node's pods turn not ready, as on a cluster) and the
 * controller's resync at 10 s (its default, 120 s plus up to 60 s of jitter, is the period a bound is noticed in:
 * docs/components/gitops-and-fleet.md states it), and the description's gitops.waveWait at 30 s.
 */

type Json = Record<string, any>;

/** gitops.waveWait of the twin, in seconds. */
const WAIT = 30;
/** The controller's resync period (and its jitter), in seconds: how soon it looks at a running sync again. */
const RESYNC = 10;
const CONTROLLER_ARGS = [`--app-resync=${RESYNC}`, '--app-resync-jitter=2'];
/** A child's retries (CHILD_RETRY: 5, 5 s doubling, at most 1 minute: 135 s) and the root's backoff (at most 2 minutes). */
const FIX_REACHES_MS = (135 + 120 + 120) * 1000;

let twin: TwinCluster;
let cli: ArgoCdCli;
let ns: string;
let head: string;
const clock = { t0: 0 };

const app = (folder: string) => `${twin.name}-${folder}`;
const state = (name: string): ApplicationState => twin.watch.state(name) ?? ({ name } as ApplicationState);

/** Reads until `done` holds, or fails saying `what` did not happen, with every Application's state. */
function until(what: string, done: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  return untilOnTwin(twin, what, done, ms);
}

const converged = (sha: string) => (s: ApplicationState) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === sha;

/** Waits until every Application (the samples' aside) is Synced and Healthy at `sha` and the root's sync Succeeded. */
async function convergedAt(sha: string, ms = 10 * 60_000): Promise<number> {
  return until(`every Application Synced and Healthy at ${sha.slice(0, 7)}`, () => {
    const all = twin.watch.states().filter((s) => s.name !== app('samples'));
    return all.length > 1 && all.every(converged(sha)) && state(twin.name).phase === 'Succeeded';
  }, ms);
}

/** An Application of the Argo CD namespace as it is now. */
async function application(name: string): Promise<Json> {
  return (await twin.cp.client().get(`/apis/argoproj.io/v1alpha1/namespaces/${ns}/applications/${name}`)) as Json;
}

/** Pushes the work tree (after `edit` of the description), and answers the commit. */
async function commit(message: string, edit?: (d: Json) => void): Promise<string> {
  if (edit) twin.render(edit);
  clock.t0 = Date.now();
  head = await twin.push(message);
  return head;
}

/** A rendered file of the cluster's folder, edited by hand (what a hand edit of dist/ commits). */
function editRendered(file: string, edit: (o: Json) => void): void {
  editYamlFile(path.join(twin.clusterDir, file), edit);
}

/** A new object in a folder of the cluster (its file and its line in the folder's kustomization), by hand. */
function addRendered(folder: string, file: string, object: Json): void {
  writeFileSync(path.join(twin.clusterDir, folder, file), stringify(object));
  editYamlFile(path.join(twin.clusterDir, folder, 'kustomization.yaml'), (k) => { k.resources = [...(k.resources as string[]).filter((r) => r !== file), file]; });
}

/** An object's file removed from a folder of the cluster, and its line from the folder's kustomization, by hand. */
function removeRendered(folder: string, file: string): void {
  editYamlFile(path.join(twin.clusterDir, folder, 'kustomization.yaml'), (k) => { k.resources = (k.resources as string[]).filter((r) => r !== file); });
  rmSync(path.join(twin.clusterDir, folder, file));
}

/** A kubectl command as the README prints it (the twin's kubectl, the admin kubeconfig, from the work tree). */
async function kubectl(args: readonly string[]): Promise<string> {
  const r = await cli.kubectl(args);
  if (r.code !== 0) throw new Error(`${r.command}: exit ${r.code}\n${r.output}`);
  return r.output;
}

/** Commits a change of gitops.automated, applies the root again as the docs say (nothing syncs the root), and waits until it converges. */
async function setAutomated(message: string, automated: Json): Promise<string> {
  const c = await commit(message, (d) => { d.gitops = { ...d.gitops, automated: { ...d.gitops.automated, ...automated } }; });
  await kubectl(['apply', '-f', twin.applicationFile(twin.name)]);
  await convergedAt(c);
  return c;
}

/** The escape hatches dist/<cluster>/README.md prints ("When a sync wave holds"). */
const printedHatches = () => printedCommands(twin, 'argocd', 'When a sync wave holds');

/**
 * Runs an escape hatch as the README prints it, with the cluster's names, as the operator would (argocd-cli.ts: the
 * twin's API server in place of a login); answers its output, failing on an error exit.
 */
async function hatch(printed: string): Promise<string> {
  if (!printedHatches().includes(printed)) throw new Error(`the README prints no "${printed}"; it prints:\n${printedHatches().join('\n')}`);
  const run = await cli.shell(printed);
  console.log(`${run.command}: exit ${run.code}`);
  if (run.code !== 0) throw new Error(`${run.command}: exit ${run.code}\n${run.output}\n${readFileSync(cli.log, 'utf8').split('\n').slice(-20).join('\n')}`);
  return run.output;
}

/**
 * Reverts the last `count` commits in one commit, as `git revert --no-commit HEAD~<count>..HEAD` and a commit do (their
 * diff applied in reverse to the work tree, the description read back from it), and pushes the revert.
 */
async function revertLast(count = 1): Promise<string> {
  const reverted = head;
  const diff = spawnSync('git', ['--git-dir', twin.bare, 'diff', '--binary', `${reverted}~${count}`, reverted], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (diff.status !== 0) throw new Error(`git diff of ${reverted}~${count}..${reverted}: ${diff.stderr}`);
  const apply = spawnSync('git', ['apply', '-R', '--whitespace=nowarn'], { cwd: twin.workTree, input: diff.stdout, encoding: 'utf8' });
  if (apply.status !== 0) throw new Error(`git apply -R of ${reverted}~${count}..${reverted}: ${apply.stderr}`);
  const d = parse(readFileSync(twin.descriptionFile, 'utf8')) as Json;
  for (const k of Object.keys(twin.description)) delete twin.description[k];
  Object.assign(twin.description, d);
  const log = spawnSync('git', ['--git-dir', twin.bare, 'log', `-${count}`, '--format=%s', reverted], { encoding: 'utf8' }).stdout.trim().split('\n');
  return commit(log.map((l) => `Revert "${l}"`).join('; '));
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

beforeAll(async () => {
  ({ twin, head } = await bootTwin({
    description: REFERENCE_FILE,
    edit: (d) => { d.gitops = { ...d.gitops, waveWait: `${WAIT}s` }; },
    // the node lifecycle controller too: a NotReady Node's pods turn not ready, as on a cluster
    controllers: ['*'],
    controllerArgs: CONTROLLER_ARGS,
  }));
  ns = twin.model.description.gitops.namespace;
  await convergedAt(head);
  cli = await startArgoCdCli(twin.twin, twin.cp.identity('admin').kubeconfig, twin.workTree, ns);
}, 40 * 60_000);

afterAll(async () => {
  await cli?.stop();
  await stopTwin(twin);
});

describe('GitOps that never freezes, on the real Argo CD', () => {
  it('a later commit that adds a tenant applies its ClusterQueue before its namespace and LocalQueue (the waves order queues before tenants)', async () => {
    const c = await commit('a tenant', (d) => { d.tenants.push({ name: 'audio', gpus: 8, borrowingOnly: true }); });
    const took = await convergedAt(c);
    const timeline = twin.watch.timeline(clock.t0, () => c);
    console.log(`a tenant added: converged in ${seconds(took)}\n${formatTimeline(timeline)}`);
    const at = (name: string) => timeline.find((e) => e.application === name)!;
    expect(at(app('tenants')).syncedAt!).toBeGreaterThanOrEqual(at(app('kueue')).healthyAt!);
    const lq = await twin.cp.client().get('/apis/kueue.x-k8s.io/v1beta2/namespaces/audio/localqueues/audio');
    expect(((lq?.status as Json)?.conditions ?? []).find((x: Json) => x.type === 'Active')?.status).toBe('True');
  }, 15 * 60_000);

  it('a refused object: its Application is Degraded with the API server\'s message, the root shows it and retries with the later waves held, and the fix commit recovers by itself', async () => {
    const before = state(app('tenants')).revision;
    twin.render((d) => { d.tenants[0].labels = { 'issue-49': 'refused' }; });
    editRendered('kueue/clusterqueue.research.yaml', (o) => { o.spec.queueingStrategy = 'Fifo'; });
    const broken = await commit('a ClusterQueue Kueue\'s CRD refuses');
    await until('the root sees the kueue Application Degraded with the API server\'s message', async () => {
      const seen = await rootSees(twin, app('kueue'));
      return seen.health === 'Degraded' && /Unsupported value: "Fifo"/.test(seen.message ?? '');
    }, 4 * 60_000);
    const root = await application(twin.name);
    expect(root.status.health.status).toBe('Degraded');
    await until('the root retries', async () => /Retrying attempt #\d+/.test((await application(twin.name)).status.operationState.message ?? ''), 3 * 60_000);
    // the waves after it do not get the broken commit
    expect(state(app('tenants')).revision).toBe(before);
    // what an operator looks at first
    const get = await hatch(`argocd app get ${twin.name}`);
    expect(get).toContain(app('kueue'));

    const fix = await commit('the ClusterQueue as the toolkit renders it', () => {});
    expect(fix).not.toBe(broken);
    const took = await convergedAt(fix, FIX_REACHES_MS + 5 * 60_000);
    console.log(`the fix commit converged by itself ${seconds(took)} after its push`);
  }, 25 * 60_000);

  it('a wave that stays Progressing (an operand roll that hangs) holds a later commit from the Applications it does not concern for no longer than gitops.waveWait, and the revert of both reaches it', async () => {
    const gpu = app('gpu-operator');
    const tenants = app('tenants');
    // a device plugin that fits no GPU worker: the GPU Operator rolls its DaemonSet, the new pod stays Pending, the
    // ClusterPolicy stays notReady and its Application Progressing (a hand edit of dist/, as the other cases here)
    const hang = (memory: string) => editRendered('gpu-operator/clusterpolicy.cluster-policy.yaml', (o) => {
      o.spec.devicePlugin = { ...o.spec.devicePlugin, resources: { requests: { memory } } };
    });
    twin.render();
    hang('64Ti');
    const stuck = await commit('a device plugin no GPU worker can hold');
    await until('the gpu-operator Application Progressing at the commit', () => state(gpu).revision === stuck && state(gpu).health === 'Progressing', 4 * 60_000);
    await until('the root\'s sync of the commit ended', () => state(twin.name).operationRevision === stuck && state(twin.name).phase === 'Succeeded', BEHIND_ONE_WAVE_MS);
    const pending = (await twin.cp.client().list(`/api/v1/namespaces/${NAMESPACES.gpuOperator}/pods`)).filter((p) => (p.status as Json)?.phase === 'Pending');
    expect(pending.length).toBeGreaterThan(0);

    // a later commit that changes it again (its roll still hangs) and a tenant two waves on: the root waits on it for
    // the bound, then goes ahead saying what it is, and the tenant's change arrives
    twin.render((d) => { d.tenants[0].labels = { 'issue-49': 'progressing' }; });
    hang('65Ti');
    const later = await commit('the device plugin changed again, still hanging, and a tenant\'s label');
    const reached = await until('the tenants Application synced the later commit, behind the Progressing wave', () => state(tenants).revision === later && state(tenants).sync === 'Synced', BEHIND_ONE_WAVE_MS);
    console.log(`behind a Progressing wave: the tenants Application synced the commit ${seconds(reached)} after the push (gitops.waveWait ${WAIT} s)`);
    expect([state(gpu).revision, state(gpu).sync, state(gpu).health]).toEqual([later, 'Synced', 'Progressing']);
    expect(reached).toBeGreaterThanOrEqual(WAIT * 1000);
    await until('the root shows it going ahead of the Progressing Application', async () => {
      const seen = await rootSees(twin, gpu);
      return seen.health === 'Healthy' && new RegExp(`^Progressing more than ${WAIT}s after its last sync .*: the waves after it go ahead$`).test(seen.message ?? '');
    }, (RESYNC + 30) * 1000);
    await until('the root\'s sync of the later commit Succeeded', () => state(twin.name).operationRevision === later && state(twin.name).phase === 'Succeeded', 2 * 60_000);

    // the revert of both commits reaches the Application that stays Progressing (its own held wave does not hold it
    // back), drops the field (every child applies server-side), and everything converges
    const revert = await revertLast(2);
    const fixed = await until('the gpu-operator Application synced the revert', () => state(gpu).revision === revert && state(gpu).sync === 'Synced', BEHIND_ONE_WAVE_MS);
    console.log(`the revert reached the Progressing Application ${seconds(fixed)} after its push`);
    const policy = await twin.cp.client().get('/apis/nvidia.com/v1/clusterpolicies/cluster-policy');
    expect((policy?.spec as Json)?.devicePlugin?.resources).toBeUndefined();
    const took = await convergedAt(revert);
    console.log(`converged ${seconds(took)} after the revert's push`);
  }, 20 * 60_000);

  it('a queue held in the description is Suspended and does not hold the waves; a hold made by hand is drift that self-heal lifts', async () => {
    const [held, other] = twin.model.tenants;
    const cq = (name: string) => `/apis/kueue.x-k8s.io/v1beta2/clusterqueues/${name}`;
    const c = await commit('hold a queue, and a label on another tenant', (d) => {
      d.tenants[0].stopPolicy = 'Hold';
      d.tenants[1].labels = { 'issue-49': 'held' };
    });
    const took = await until('the root\'s sync of the hold Succeeded, the tenants Application synced it', () => state(twin.name).operationRevision === c && state(twin.name).phase === 'Succeeded'
      && state(app('tenants')).revision === c && state(app('tenants')).sync === 'Synced', BEHIND_ONE_WAVE_MS);
    console.log(`a queue held: the root's sync of the commit Succeeded ${seconds(took)} after its push`);
    expect(((await twin.cp.client().get(cq(held.clusterQueue)))?.spec as Json).stopPolicy).toBe('Hold');
    expect(state(app('kueue')).health).toBe('Suspended');
    // held on purpose: the root went ahead of it at once, not after the bound
    expect((await rootSees(twin, app('kueue'))).message).toMatch(/held on purpose, the waves after it go ahead$/);

    // a hold by hand on another queue: drift from the description, lifted by self-heal (its next comparison, then
    // Argo CD's self-heal backoff: minutes on a loaded machine, where a comparison alone takes half a minute)
    await twin.cp.client().call('PATCH', cq(other.clusterQueue), { body: { spec: { stopPolicy: 'HoldAndDrain' } }, contentType: 'application/merge-patch+json' });
    const lifted = await until('self-heal lifted the hold made by hand', async () => ((await twin.cp.client().get(cq(other.clusterQueue)))?.spec as Json)?.stopPolicy === 'None', 5 * 60_000)
      .then(() => undefined, (e: unknown) => e);
    // released whether or not self-heal came: a queue left held would hold every later scenario's convergence
    const released = await commit('release the queue', (d) => { d.tenants[0].stopPolicy = 'None'; });
    await convergedAt(released);
    if (lifted) throw lifted;
  }, 20 * 60_000);
  it('a commit that adds fields and its revert that drops them: the fields are gone from the cluster after the revert (every child applies server-side, as it diffs)', async () => {
    const gpu = app('gpu-operator');
    const tenant = twin.model.tenants[0].name;
    const env = { name: 'ISSUE_49', value: 'revert' };
    twin.render((d) => { d.tenants[0].labels = { ...d.tenants[0].labels, 'issue-49-revert': 'added' }; });
    editRendered('gpu-operator/clusterpolicy.cluster-policy.yaml', (o) => { o.spec.devicePlugin = { ...o.spec.devicePlugin, env: [env] }; });
    const added = await commit('a label on a tenant namespace and an environment variable of the device plugin');
    await convergedAt(added);
    const policy = async () => (await twin.cp.client().get('/apis/nvidia.com/v1/clusterpolicies/cluster-policy'))?.spec as Json;
    const labels = async () => ((await twin.cp.client().get(`/api/v1/namespaces/${tenant}`))?.metadata as Json).labels as Json;
    expect((await policy()).devicePlugin.env).toEqual([env]);
    expect((await labels())['issue-49-revert']).toBe('added');

    const revert = await revertLast();
    const took = await convergedAt(revert);
    console.log(`a revert that only drops fields converged ${seconds(took)} after its push`);
    expect([state(gpu).sync, state(app('tenants')).sync]).toEqual(['Synced', 'Synced']);
    // applied, not only compared: the API server has the objects as Git has them again
    expect((await policy()).devicePlugin.env).toBeUndefined();
    expect((await labels())['issue-49-revert']).toBeUndefined();
  }, 15 * 60_000);

  it('a field that a client-side apply of Argo CD left (an earlier release of the toolkit) and Git does not have is taken over at the next sync and removed (client-side-apply-migration-manager)', async () => {
    const p = '/apis/nvidia.com/v1/clusterpolicies/cluster-policy';
    const env = { name: 'ISSUE_49', value: 'client-side' };
    const client = twin.cp.client();
    // what Argo CD's client-side apply writes: the field as an Update of argocd-controller (gitops-engine's kubectl apply)
    await client.call('PATCH', p, { body: { spec: { devicePlugin: { env: [env] } } }, contentType: 'application/merge-patch+json', query: { fieldManager: 'argocd-controller' } });
    const updates = (o: Json | undefined) => ((o?.metadata as Json)?.managedFields as Json[]).filter((f) => f.manager === 'argocd-controller' && f.operation === 'Update');
    expect(updates(await client.get(p))).toHaveLength(1);
    // Git never had it: the server-side diff does not see it (the Application stays Synced), the next sync takes it over
    twin.render();
    editRendered('gpu-operator/clusterpolicy.cluster-policy.yaml', (o) => { o.metadata.labels = { ...o.metadata.labels, 'issue-49': 'migrated' }; });
    const c = await commit('a label on the ClusterPolicy');
    await convergedAt(c);
    const live = await client.get(p);
    expect(((live?.metadata as Json).labels as Json)['issue-49']).toBe('migrated');
    expect(updates(live)).toEqual([]);
    expect((live?.spec as Json).devicePlugin.env).toBeUndefined();
  }, 15 * 60_000);

  it('the escape hatches of a held wave, as the README prints them: terminate-op ends the root\'s sync, a sync by hand retries it as the automated one does, and terminate-op again lets a revert through before the bound', async () => {
    const gpu = app('gpu-operator');
    // a device plugin that fits no GPU worker, under a bound (10 minutes) that the test does not wait out
    twin.render((d) => { d.gitops = { ...d.gitops, waveWait: '10m' }; });
    editRendered('gpu-operator/clusterpolicy.cluster-policy.yaml', (o) => { o.spec.devicePlugin = { ...o.spec.devicePlugin, resources: { requests: { memory: '64Ti' } } }; });
    const stuck = await commit('a device plugin no GPU worker can hold, and gitops.waveWait 10m');
    const rootWaits = () => state(gpu).revision === stuck && state(gpu).health === 'Progressing' && state(twin.name).phase === 'Running';
    await until('the root\'s sync of the commit waits on the Progressing gpu-operator Application', () => rootWaits() && state(twin.name).operationRevision === stuck, 4 * 60_000);

    const terminated = await hatch(`argocd app terminate-op ${twin.name}`);
    console.log(`terminate-op: ${terminated.trim()}`);
    await until('the root\'s sync ended by terminate-op', async () => {
      const op = (await application(twin.name)).status?.operationState ?? {};
      return op.phase === 'Failed' && /terminated/i.test(op.message ?? '');
    }, 60_000);
    // no newer commit: the automated sync never retries a revision whose last sync failed; the sync by hand does
    const synced = await hatch(`argocd app sync ${twin.name} --async --retry-limit -1 --retry-refresh`);
    console.log(`sync --async: ${synced.trim()}`);
    await until('the root\'s sync by hand runs, retrying as the automated one does, and waits on the Progressing Application', async () => {
      const op = (await application(twin.name)).status?.operationState ?? {};
      return op.phase === 'Running' && op.operation?.retry?.limit === -1 && op.operation?.retry?.refresh === true && rootWaits();
    }, 2 * 60_000);

    // the revert: the root's sync (held by the Progressing wave for up to 10 minutes) ended again, it reaches the
    // Progressing Application at once
    const revert = await revertLast();
    await hatch(`argocd app terminate-op ${twin.name}`);
    const reached = await until('the gpu-operator Application synced the revert', () => state(gpu).revision === revert && state(gpu).sync === 'Synced', 4 * 60_000);
    console.log(`after terminate-op, the revert reached the Progressing Application ${seconds(reached)} later (${seconds(Date.now() - clock.t0)} after its push)`);
    const inGit = (parse(readFileSync(path.join(twin.clusterDir, 'gpu-operator/clusterpolicy.cluster-policy.yaml'), 'utf8')) as Json).spec.devicePlugin.resources;
    const policy = await twin.cp.client().get('/apis/nvidia.com/v1/clusterpolicies/cluster-policy');
    expect((policy?.spec as Json)?.devicePlugin?.resources).toEqual(inGit);
    await convergedAt(revert);
  }, 20 * 60_000);

  it('one Application rolled out ahead of a held wave, as the README prints it: terminate-op of the root, then argocd app sync <cluster> --resource argoproj.io:Application:<application>; a revert then converges', async () => {
    const gpu = app('gpu-operator');
    const tenants = app('tenants');
    const tenant = twin.model.tenants[0].name;
    const terminateRoot = async () => {
      await hatch(`argocd app terminate-op ${twin.name}`);
      await until('the root\'s sync ended by terminate-op', async () => {
        const op = (await application(twin.name)).status?.operationState ?? {};
        return op.phase === 'Failed' && /terminated/i.test(op.message ?? '');
      }, 60_000);
    };
    // the GPU Operator's wave held (a device plugin that fits no GPU worker, under a bound of 10 minutes) and a
    // tenant's change a wave later
    twin.render((d) => { d.gitops = { ...d.gitops, waveWait: '10m' }; });
    editRendered('gpu-operator/clusterpolicy.cluster-policy.yaml', (o) => { o.spec.devicePlugin = { ...o.spec.devicePlugin, resources: { requests: { memory: '64Ti' } } }; });
    editRendered(`tenants/namespace.${tenant}.yaml`, (o) => { o.metadata.labels = { ...o.metadata.labels, 'issue-49-resource': 'ahead' }; });
    const held = await commit('a device plugin no GPU worker can hold, gitops.waveWait 10m, and a label on a tenant a wave later');
    await until('the root\'s sync of the commit waits on the Progressing gpu-operator Application', () => state(gpu).revision === held && state(gpu).health === 'Progressing'
      && state(twin.name).phase === 'Running' && state(twin.name).operationRevision === held, 4 * 60_000);
    expect(state(tenants).targetRevision).not.toBe(held);

    await terminateRoot();
    const synced = await hatch(`argocd app sync ${twin.name} --resource argoproj.io:Application:${tenants}`);
    console.log(`sync --resource: ${synced.split('\n').slice(-3).join(' | ')}`);
    const reached = await until('the tenants Application synced the commit ahead of the held wave', () => state(tenants).revision === held && state(tenants).sync === 'Synced', 3 * 60_000);
    console.log(`sync --resource: the tenants Application synced the commit ${seconds(Date.now() - clock.t0)} after its push (${seconds(reached)} after the sync by hand)`);
    expect(((await twin.cp.client().get(`/api/v1/namespaces/${tenant}`))?.metadata as Json).labels['issue-49-resource']).toBe('ahead');
    expect([state(gpu).revision, state(gpu).health]).toEqual([held, 'Progressing']);

    // the revert: the root's self-heal may have started the held commit's sync again (its Applications were left
    // OutOfSync by the sync of one): terminate-op lets the revert through, as the README says
    const revert = await revertLast();
    await until('the root syncs the revert', async () => {
      if (state(twin.name).phase === 'Running' && state(twin.name).operationRevision !== revert) await terminateRoot();
      return state(twin.name).operationRevision === revert;
    }, 4 * 60_000);
    const took = await convergedAt(revert);
    console.log(`the revert converged ${seconds(took)} after the root took it`);
    expect(((await twin.cp.client().get(`/api/v1/namespaces/${tenant}`))?.metadata as Json).labels['issue-49-resource']).toBeUndefined();
  }, 25 * 60_000);

  it('an Application\'s own sync that hangs (a hook that never completes): the root goes ahead of it after the bound, a fix waits behind that sync, and argocd app terminate-op <application>, as the README prints it, ends it (its hook deleted) so that the fix reaches it', async () => {
    const dashboard = app('dashboard');
    const pod = '/api/v1/namespaces/kubernetes-dashboard/pods/issue-49-hook';
    const hookFile = 'pod.kubernetes-dashboard.issue-49-hook.yaml';
    const account = 'dashboard/serviceaccount.kubernetes-dashboard.dashboard-viewer.yaml';
    const label = async () => (((await twin.cp.client().get('/api/v1/namespaces/kubernetes-dashboard/serviceaccounts/dashboard-viewer'))?.metadata as Json)?.labels ?? {})['issue-49-hook'];
    // a PreSync hook whose Pod fits no node: it stays Pending, the hook never completes, the sync never ends (with a
    // change of an object of the folder: a commit that only adds a hook leaves the Application Synced, and nothing syncs)
    twin.render();
    editRendered(account, (o) => { o.metadata.labels = { ...o.metadata.labels, 'issue-49-hook': 'hung' }; });
    addRendered('dashboard', hookFile, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'issue-49-hook', namespace: 'kubernetes-dashboard', annotations: { 'argocd.argoproj.io/hook': 'PreSync' } },
      spec: { restartPolicy: 'Never', nodeSelector: { 'issue-49': 'no-such-node' }, containers: [{ name: 'hook', image: 'registry.k8s.io/pause:3.10' }] },
    });
    const hung = await commit('a PreSync hook that never completes');
    await until('the dashboard Application\'s sync waits for its hook', () => state(dashboard).phase === 'Running' && state(dashboard).operationRevision === hung
      && /hook/i.test(state(dashboard).operationMessage), 4 * 60_000);
    await until('the root goes ahead of the sync that hangs after the bound, and its sync Succeeds', async () => {
      const seen = await rootSees(twin, dashboard);
      return seen.health === 'Healthy' && new RegExp(`^Its sync has run for more than ${WAIT}s .*argocd app terminate-op ${dashboard} ends it\\): the waves after it go ahead$`).test(seen.message ?? '')
        && state(twin.name).operationRevision === hung && state(twin.name).phase === 'Succeeded';
    }, BEHIND_ONE_WAVE_MS);

    // the fix: the hook removed and the label changed again. Not a revert: the hook held back the Sync phase, so the
    // label was never applied, and a revert leaves the Application nothing to sync (Synced at it once terminated).
    // The root gives the fix to the dashboard Application, whose own sync still runs: Argo CD starts no automated
    // sync while an operation runs
    editRendered(account, (o) => { o.metadata.labels['issue-49-hook'] = 'fixed'; });
    removeRendered('dashboard', hookFile);
    const fix = await commit('the hook removed, and the label changed again');
    await until('the root\'s sync of the fix Succeeded, the dashboard Application given the fix', () => state(twin.name).operationRevision === fix
      && state(twin.name).phase === 'Succeeded' && state(dashboard).targetRevision === fix, BEHIND_ONE_WAVE_MS);
    await sleep(2 * RESYNC * 1000);
    expect([state(dashboard).phase, state(dashboard).operationRevision]).toEqual(['Running', hung]);
    expect(await label()).toBeUndefined();

    const terminated = await hatch(`argocd app terminate-op ${dashboard}`);
    console.log(`terminate-op ${dashboard}: ${terminated.trim()}`);
    const reached = await until('the dashboard Application synced the fix', () => state(dashboard).revision === fix && state(dashboard).sync === 'Synced'
      && state(dashboard).operationRevision === fix && state(dashboard).phase === 'Succeeded', 3 * 60_000);
    console.log(`after terminate-op, the fix reached the dashboard Application ${seconds(reached)} later (${seconds(Date.now() - clock.t0)} after its push)`);
    expect(await label()).toBe('fixed');
    // terminate-op deletes the running hook (gitops-engine sync_context.go Terminate: terminateHooksPreemptively)
    const left = await twin.cp.client().get(pod);
    expect(left === undefined || (left.metadata as Json).deletionTimestamp !== undefined).toBe(true);
    const took = await convergedAt(fix);
    console.log(`the fix converged ${seconds(took)} after the dashboard Application synced it`);
  }, 15 * 60_000);

  it('a later commit that changes a CRD and its custom resources together (the CRD a wave before them, where the render puts an install\'s CRDs) converges with no failed sync: the CRD\'s new field is served before a custom resource uses it; in one Application, a CRD with a custom resource, then a new version of it with one of that version, converge with no step by hand', async () => {
    const storage = app('storage');
    const tenants = app('tenants');
    // the render puts an operator's CRDs in the Application of its install and its custom resources in one of a later
    // wave (check's crd-before-cr: strictly earlier). Here by hand in dist/: a CRD in storage (wave 1), a custom
    // resource of it in tenants (wave 2)
    const group = 'issue-49.example.com';
    const crd = (fields: Json) => crdOf(group, 'Widget', 'Namespaced', { type: 'object', properties: { spec: { type: 'object', properties: fields } } });
    const widget = (spec: Json) => ({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec });
    const crdFile = `customresourcedefinition.widgets.${group}.yaml`;
    const widgetFile = 'widget.default.w.yaml';
    const live = async () => (await twin.cp.client().get(`/apis/${group}/v1/namespaces/default/widgets/w`))?.spec as Json | undefined;
    /** Waits until every Application converged at `sha`, noting on the way every failed sync, retry, comparison or sync error and Degraded health of an Application. */
    const watched = async (sha: string): Promise<{ took: number; failures: string[] }> => {
      const failures = new Set<string>();
      const took = await until(`every Application Synced and Healthy at ${sha.slice(0, 7)}`, () => {
        const all = twin.watch.states().filter((s) => s.name !== app('samples'));
        for (const s of all) {
          const at = s.operationRevision === sha;
          if (at && (s.phase === 'Failed' || s.phase === 'Error')) failures.add(`${s.name}: sync ${s.phase}: ${s.operationMessage}`);
          if (at && /Retrying attempt/.test(s.operationMessage)) failures.add(`${s.name}: ${s.operationMessage}`);
          for (const c of s.conditions.filter((x) => /^(ComparisonError|SyncError|InvalidSpecError)/.test(x))) failures.add(`${s.name}: ${c}`);
          if (s.health === 'Degraded') failures.add(`${s.name}: Degraded: ${s.healthMessage}`);
        }
        return all.length > 1 && all.every(converged(sha)) && state(twin.name).phase === 'Succeeded';
      }, 10 * 60_000);
      // and no retry of the sync of the commit, by any Application or the root, between two reads
      for (const s of twin.watch.states().filter((x) => x.name !== app('samples'))) {
        const op = (await application(s.name)).status?.operationState ?? {};
        if (op.syncResult?.revision === sha && (op.retryCount ?? 0) > 0) failures.add(`${s.name}: its sync of the commit retried ${op.retryCount} time(s)`);
      }
      return { took, failures: [...failures] };
    };

    twin.render();
    addRendered('storage', crdFile, crd({ size: { type: 'string' } }));
    addRendered('tenants', widgetFile, widget({ size: 'small' }));
    const added = await commit('a CRD and a custom resource of it, a wave later');
    const first = await watched(added);
    console.log(`a CRD and a custom resource of it added: converged in ${seconds(first.took)}${first.failures.length > 0 ? `; on the way: ${first.failures.join('; ')}` : ''}`);
    expect(await live()).toEqual({ size: 'small' });

    // the CRD gains a field and the custom resource uses it, in one commit: applied before the CRD, the field would be
    // refused (strict field validation) or dropped
    addRendered('storage', crdFile, crd({ size: { type: 'string' }, color: { type: 'string', enum: ['red', 'blue'] } }));
    addRendered('tenants', widgetFile, widget({ size: 'small', color: 'blue' }));
    const changed = await commit('the CRD gains a field, and the custom resource uses it');
    const second = await watched(changed);
    const timeline = twin.watch.timeline(clock.t0, () => changed);
    console.log(`a CRD and its custom resource changed together: converged in ${seconds(second.took)}\n${formatTimeline(timeline)}`);
    expect(second.failures).toEqual([]);
    expect(await live()).toEqual({ size: 'small', color: 'blue' });
    const at = (name: string) => timeline.find((e) => e.application === name)!;
    expect(at(tenants).syncedAt!).toBeGreaterThanOrEqual(at(storage).healthyAt!);

    // Issue 49 item 2: a CRD and a custom resource of it in ONE Application (no wave between them), in one commit; then
    // a new version of the CRD (v2 served and storage, v1 still served) and a custom resource of v2, in one commit.
    // gitops-engine skips the dry run of a custom resource whose CRD is in the same sync (sync_context.go:1066-1085
    // hasCRDOfGroupKind), applies CRDs first and waits for a CRD to be Established after applying it (:1444-1449
    // ensureCRDReady); what it does with a new version is printed (the failures on the way, if any)
    const gadgetFile = `customresourcedefinition.gadgets.${group}.yaml`;
    const schema = (fields: Json) => ({ openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: fields } } } });
    const v1 = { name: 'v1', served: true, storage: true, schema: schema({ size: { type: 'string' } }) };
    const gadgetCrd = (versions: Json[]) => { const c = crdOf(group, 'Gadget', 'Namespaced'); c.spec.versions = versions; return c; };
    const gadget = (version: string, name: string, spec: Json) => ({ apiVersion: `${group}/${version}`, kind: 'Gadget', metadata: { name, namespace: 'default' }, spec });
    const liveGadget = async (version: string, name: string) => (await twin.cp.client().get(`/apis/${group}/${version}/namespaces/default/gadgets/${name}`))?.spec as Json | undefined;
    addRendered('storage', gadgetFile, gadgetCrd([v1]));
    addRendered('storage', 'gadget.default.g1.yaml', gadget('v1', 'g1', { size: 'small' }));
    const together = await commit('a CRD and a custom resource of it in one Application');
    const third = await watched(together);
    console.log(`a CRD and a custom resource of it in one Application: converged in ${seconds(third.took)}; on the way: ${third.failures.join('; ') || 'no failed sync, no retry'}`);
    expect(third.failures).toEqual([]);
    expect(await liveGadget('v1', 'g1')).toEqual({ size: 'small' });
    addRendered('storage', gadgetFile, gadgetCrd([{ ...v1, storage: false }, { name: 'v2', served: true, storage: true, schema: schema({ size: { type: 'string' }, color: { type: 'string' } }) }]));
    addRendered('storage', 'gadget.default.g2.yaml', gadget('v2', 'g2', { size: 'large', color: 'red' }));
    const versioned = await commit('a new version of the CRD (served and storage) and a custom resource of it, in one Application');
    const fourth = await watched(versioned);
    console.log(`a new CRD version and a custom resource of it in one Application: converged in ${seconds(fourth.took)}; on the way: ${fourth.failures.join('; ') || 'no failed sync, no retry'}`);
    expect(await liveGadget('v2', 'g2')).toEqual({ size: 'large', color: 'red' });
    expect(await liveGadget('v1', 'g1')).toEqual({ size: 'small' });
    const gadgets = (await twin.cp.client().get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${group}`))!;
    expect((gadgets.status as Json).storedVersions).toContain('v2');

    // both gone from Git in one commit: the custom resource is pruned; the CRD stays, as Argo CD puts no tracking
    // annotation on a CRD it applies (v3.5.1), so it never prunes one. Deleted by hand with the command synth prints
    const dist = path.dirname(twin.clusterDir);
    const before = readTreeObjects(dist, [twin.name]);
    twin.render();
    const removed = await commit('the CRD and its custom resource removed');
    await convergedAt(removed);
    expect(await live()).toBeUndefined();
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${group}`;
    const definition = (await twin.cp.client().get(crdPath))!;
    expect((definition.metadata as Json).annotations?.['argocd.argoproj.io/tracking-id']).toBeUndefined();
    const note = removedObjects(before, readTreeObjects(dist, [twin.name])).find((d) => d.object === `CustomResourceDefinition widgets.${group}`)?.stays ?? '';
    const printed = /kubectl delete crd \S+/.exec(note)?.[0];
    expect(printed, note).toBe(`kubectl delete crd widgets.${group}`);
    const deleted = await cli.shell(printed!);
    console.log(`${printed}: exit ${deleted.code}: ${deleted.output.trim()}`);
    expect(deleted.code, deleted.output).toBe(0);
    expect(await twin.cp.client().get(crdPath)).toBeUndefined();
    expect(await liveGadget('v2', 'g2')).toBeUndefined();
    expect((await cli.shell(`kubectl delete crd gadgets.${group}`)).code).toBe(0);
  }, 35 * 60_000);

  it('a commit that removes a tenant: its Application waits for pruning confirmation, and argocd app confirm-deletion, as the README prints it, lets it converge', async () => {
    const tenants = app('tenants');
    const gone = twin.model.tenants[twin.model.tenants.length - 1].name;
    const c = await commit(`remove tenant ${gone}`, (d) => { d.tenants = d.tenants.filter((t: Json) => t.name !== gone); });
    await until('the tenants Application waits for pruning confirmation', () => state(tenants).phase === 'Running'
      && new RegExp(`waiting for pruning confirmation of /Namespace/${gone}`).test(state(tenants).operationMessage ?? ''), 6 * 60_000);
    expect((await twin.cp.client().get(`/api/v1/namespaces/${gone}`))?.metadata?.deletionTimestamp).toBeUndefined();
    const confirmed = await hatch(`argocd app confirm-deletion ${tenants}`);
    console.log(`confirm-deletion: ${confirmed.trim()}`);
    const took = await convergedAt(c);
    console.log(`the tenant's removal converged ${seconds(took)} after the confirmation (${seconds(Date.now() - clock.t0)} after its push)`);
    const left = await twin.cp.client().get(`/api/v1/namespaces/${gone}`);
    expect(left === undefined || (left.metadata as Json).deletionTimestamp !== undefined).toBe(true);
  }, 15 * 60_000);

  it('gitops.automated.prune: false: a commit that only removes objects converges (nothing waits for a sync that never comes), the objects stay, and argocd app sync --prune, as the README prints it, removes them', async () => {
    const tenants = app('tenants');
    await setAutomated('automated prune off', { prune: false });
    expect((await application(tenants)).spec.syncPolicy.automated.prune).toBe(false);
    expect(printedHatches()).toContain(`argocd app sync ${tenants} --prune`);

    const policy = '/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/allow-same-namespace';
    removeRendered('tenants', 'networkpolicy.default.allow-same-namespace.yaml');
    const removed = await commit('a commit that only removes an object');
    // converged: the root's sync of it Succeeded and every Application is Healthy at it; the tenants Application is
    // OutOfSync only by the object it would prune
    const took = await until('the root\'s sync of the prune-only commit Succeeded, every Application at it', () => state(twin.name).operationRevision === removed
      && state(twin.name).phase === 'Succeeded' && twin.watch.states().filter((s) => s.name !== app('samples')).every((s) => s.revision === removed && s.health === 'Healthy'), BEHIND_ONE_WAVE_MS + 2 * 60_000);
    console.log(`a prune-only commit under automated.prune: false converged ${seconds(took)} after its push`);
    expect(state(tenants).sync).toBe('OutOfSync');
    const pending = ((await application(tenants)).status.resources as Json[]).filter((r) => r.requiresPruning).map((r) => `${r.kind}/${r.namespace}/${r.name}`);
    expect(pending).toEqual(['NetworkPolicy/default/allow-same-namespace']);
    expect(await twin.cp.client().get(policy)).toBeDefined();

    const pruned = await hatch(`argocd app sync ${tenants} --prune`);
    console.log(`sync --prune: ${pruned.split('\n').slice(-3).join(' | ')}`);
    await until('the object pruned and the tenants Application Synced', async () => (await twin.cp.client().get(policy)) === undefined && state(tenants).sync === 'Synced', 3 * 60_000);

    await setAutomated('automated prune on again', { prune: true });
  }, 20 * 60_000);

  it('gitops.automated.selfHeal: false: the commit converges; a hand edit made before an Application synced the commit goes with that sync, one made after stays, its Application OutOfSync and still Healthy (no wave waits on it), and argocd app sync, as the README prints it, puts Git back', async () => {
    const kueue = app('kueue');
    const off = await setAutomated('self-heal off', { selfHeal: false });
    expect((await application(kueue)).spec.syncPolicy.automated.selfHeal).not.toBe(true);
    expect((await application(twin.name)).spec.syncPolicy.automated.selfHeal).not.toBe(true);

    const cq = '/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research';
    const rendered = (await twin.cp.client().get(cq) as Json).spec.queueingStrategy;
    const edited = rendered === 'StrictFIFO' ? 'BestEffortFIFO' : 'StrictFIFO';
    const handEdit = () => twin.cp.client().call('PATCH', cq, { body: { spec: { queueingStrategy: edited } }, contentType: 'application/merge-patch+json', query: { fieldManager: 'kubectl-edit' } });
    // the commit changed nothing of the kueue folder, so its Application needed no sync of it: its last sync is of an
    // earlier commit, and a first drift is synced as that commit (autoSync: alreadyAttemptedSync compares revisions)
    expect((await application(kueue)).status.operationState.syncResult.revision).not.toBe(off);
    await handEdit();
    await until('the first hand edit replaced by the automated sync of the commit', async () => (await twin.cp.client().get(cq) as Json).spec.queueingStrategy === rendered
      && (await application(kueue)).status.operationState?.syncResult?.revision === off && state(kueue).sync === 'Synced', 2 * 60_000);
    // synced at the commit, a hand edit is drift that self-heal would lift, and nothing lifts it now
    await handEdit();
    await until('the kueue Application OutOfSync by the hand edit', () => state(kueue).sync === 'OutOfSync', 2 * 60_000);
    // three resyncs later the edit is still there, and the Application still holds no wave: the root sees it Healthy
    await sleep(3 * RESYNC * 1000);
    expect((await twin.cp.client().get(cq) as Json).spec.queueingStrategy).toBe(edited);
    expect(state(kueue).sync).toBe('OutOfSync');
    const seen = await rootSees(twin, kueue);
    expect(seen.health, JSON.stringify(seen)).toBe('Healthy');
    expect(state(twin.name).phase).toBe('Succeeded');

    const synced = await hatch(`argocd app sync ${kueue}`);
    console.log(`sync: ${synced.split('\n').slice(-3).join(' | ')}`);
    await until('the hand edit replaced by Git and the kueue Application Synced', async () => (await twin.cp.client().get(cq) as Json).spec.queueingStrategy === rendered
      && state(kueue).sync === 'Synced', 3 * 60_000);

    await setAutomated('self-heal on again', { selfHeal: true });
  }, 20 * 60_000);

  it('the samples, synced by hand as the README says (apply their Application, argocd app sync): the sync Succeeds at the branch, nothing else moves, and deleting the Application removes what it created', async () => {
    const samples = app('samples');
    const file = twin.applicationFile(samples);
    const readme = readFileSync(path.join(twin.clusterDir, 'README.md'), 'utf8');
    expect(readme).toContain(`\`kubectl apply -f ${file}\` then \`argocd app sync ${samples}\``);
    const before = head;
    await kubectl(['apply', '-f', file]);
    const run = await cli.run(['app', 'sync', samples, '--timeout', '240'], 300_000);
    console.log(`argocd app sync ${samples}: exit ${run.code}\n${run.output.split('\n').slice(-12).join('\n')}`);
    expect(run.code, run.output).toBe(0);
    const synced = await application(samples);
    expect(synced.status.operationState.phase).toBe('Succeeded');
    expect(synced.status.sync.revision).toBe(head);
    const created = (synced.status.resources as Json[]).map((r) => `${r.kind}/${r.namespace ?? ''}/${r.name}`);
    expect(created.length).toBeGreaterThan(0);
    // the root and its Applications did not move: the samples are no wave of the root
    expect(twin.watch.states().filter((s) => s.name !== samples).every(converged(before))).toBe(true);

    await kubectl(['delete', '-f', file, '--wait=true', '--timeout=180s']);
    for (const r of synced.status.resources as Json[]) {
      const admin = twin.cp.client();
      const at = await admin.pathOf({ apiVersion: r.group ? `${r.group}/${r.version}` : r.version, kind: r.kind, metadata: { name: r.name, namespace: r.namespace } });
      const gone = await admin.get(at) as Json | undefined;
      expect(gone === undefined || gone.metadata?.deletionTimestamp !== undefined, `${r.kind} ${r.namespace}/${r.name} stays`).toBe(true);
    }
  }, 10 * 60_000);

  it('a wave that stays Progressing (a GPU node NotReady, its kubelet gone, under operands that tolerate every taint) holds a later commit from the Applications it does not concern for no longer than gitops.waveWait, and the node Ready again lets it turn Healthy', async () => {
    const gpu = app('gpu-operator');
    const tenants = app('tenants');
    const tenant = twin.model.tenants[0].name;
    const client = twin.cp.client();
    const worker = (await client.list('/api/v1/nodes')).find((n) => ((n.metadata.labels ?? {}) as Json)[NODE_LABELS.nvidiaPci] === 'true')!.metadata.name;
    const lease = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${worker}`;
    const micro = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');
    const setLease = (spec: Json) => client.call('PATCH', lease, { body: { spec }, contentType: 'application/merge-patch+json' });
    const ready = async () => ((((await client.get(`/api/v1/nodes/${worker}`))?.status as Json)?.conditions ?? []) as Json[]).find((c) => c.type === 'Ready')?.status;
    const daemonSets = () => client.list(`/apis/apps/v1/namespaces/${NAMESPACES.gpuOperator}/daemonsets`);
    const unavailable = async () => (await daemonSets()).filter((d) => ((d.status as Json)?.numberUnavailable ?? 0) > 0).map((d) => d.metadata.name);
    const policyState = async () => ((await client.get('/apis/nvidia.com/v1/clusterpolicies/cluster-policy'))?.status as Json)?.state;
    // what the Node, the operand DaemonSets (desired/available/unavailable/misscheduled) and the ClusterPolicy go through, printed as it changes
    const t0 = Date.now();
    let last = '';
    const changes = setInterval(() => {
      void (async () => {
        const ds = (await daemonSets()).map((d) => {
          const st = (d.status ?? {}) as Json;
          return `${d.metadata.name} ${st.desiredNumberScheduled ?? 0}/${st.numberAvailable ?? 0}/${st.numberUnavailable ?? 0}/${st.numberMisscheduled ?? 0}`;
        }).join(', ');
        const taints = ((((await client.get(`/api/v1/nodes/${worker}`))?.spec as Json)?.taints ?? []) as Json[]).map((t) => `${t.key}:${t.effect}`).join(',');
        const line = `${worker} Ready ${await ready()}, taints [${taints}]; ClusterPolicy ${await policyState()}; ${gpu} ${state(gpu).health}; ${ds}`;
        if (line !== last) console.log(`+${seconds(Date.now() - t0)} ${line}`);
        last = line;
      })().catch(() => {});
    }, 1000);
    try {
      // The rendered operands tolerate nvidia.com/gpu only: a NotReady Node's node.kubernetes.io/unreachable NoSchedule
      // taint takes it out of their DaemonSets' desired pods (its pod counted misscheduled, none unavailable: kubernetes
      // v1.36.3 pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod), and the ClusterPolicy stays ready
      // (seen on this twin). Operands that tolerate every taint (daemonsets.tolerations with operator Exists, as an admin
      // may set it) keep the Node desired, and its pods, marked not ready, unavailable: the trigger of issue 49
      editRendered('gpu-operator/clusterpolicy.cluster-policy.yaml', (o) => { o.spec.daemonsets.tolerations = [...o.spec.daemonsets.tolerations, { operator: 'Exists' }]; });
      await convergedAt(await commit('GPU Operator operands that tolerate every taint'));

      // the kubelet gone: its Lease taken by another holder for an hour, so KWOK neither renews it nor plays the Node's
      // stages; the node lifecycle controller sets Ready Unknown after its grace period and marks the Node's pods not ready
      const gone = Date.now();
      await setLease({ holderIdentity: 'issue-49-kubelet-gone', leaseDurationSeconds: 3600, renewTime: micro(Date.now()) });
      const notReady = await until(`${worker} NotReady, an operand DaemonSet unavailable, the ClusterPolicy notReady and the gpu-operator Application Progressing`, async () => (await ready()) !== 'True'
        && (await unavailable()).length > 0 && (await policyState()) === 'notReady' && state(gpu).health === 'Progressing', 4 * 60_000);
      console.log(`${worker} NotReady: the gpu-operator Application Progressing ${seconds(notReady)} after its Lease was taken (unavailable: ${(await unavailable()).join(', ')})`);

      // a later commit that changes a tenant two waves on: the root waits on the Progressing wave for the bound, then
      // goes ahead, and the tenant's change arrives
      editRendered(`tenants/namespace.${tenant}.yaml`, (o) => { o.metadata.labels = { ...o.metadata.labels, 'issue-49-node': 'not-ready' }; });
      const later = await commit('a label on a tenant, while a GPU node is NotReady');
      const reached = await until('the tenants Application synced the later commit, behind the Progressing wave', () => state(tenants).revision === later && state(tenants).sync === 'Synced', BEHIND_ONE_WAVE_MS);
      console.log(`behind a NotReady GPU node: the tenants Application synced the commit ${seconds(reached)} after the push (gitops.waveWait ${WAIT} s)`);
      // no sooner than the bound after the Application's last sync: a commit that leaves its folder alone is no sync of
      // it (Synced at the commit once compared), so that is the tolerations' sync, and the bound may have passed before
      // the push (the later waves then go ahead at once)
      expect([state(gpu).revision, state(gpu).sync, state(gpu).health]).toEqual([later, 'Synced', 'Progressing']);
      const lastSync = Date.parse((await application(gpu)).status.operationState.finishedAt);
      expect(Date.now() - lastSync).toBeGreaterThanOrEqual(WAIT * 1000);
      expect((await rootSees(twin, gpu)).message).toMatch(new RegExp(`^Progressing more than ${WAIT}s after its last sync .*: the waves after it go ahead$`));
      expect(((await client.get(`/api/v1/namespaces/${tenant}`))?.metadata as Json).labels['issue-49-node']).toBe('not-ready');

      // the kubelet back: the Lease expired, KWOK takes it again and the Node is Ready; the kubelet writes its pods'
      // status again (kubernetes v1.36.3 pkg/kubelet/status/status_manager.go syncBatch, needsReconcile: a status in the
      // API that differs from its own), so the pods the node lifecycle controller marked not ready (MarkPodsNotReady:
      // Ready False, nothing else) are Ready again. KWOK plays no stage for a Running pod: this test writes what that
      // kubelet writes (a stage doing it in the twin raced the controller's marks while the Node was away)
      await setLease({ leaseDurationSeconds: 40, renewTime: micro(Date.now() - 3600_000) });
      await until(`${worker} Ready again`, async () => (await ready()) === 'True', 4 * 60_000);
      const condition = (p: KubeObject, type: string) => ((((p.status as Json)?.conditions ?? []) as Json[]).find((c) => c.type === type))?.status;
      const marked = (await client.list(`/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${worker}`)}`))
        .filter((p) => (p.status as Json)?.phase === 'Running' && condition(p, 'Ready') === 'False' && condition(p, 'ContainersReady') === 'True');
      expect(marked.length).toBeGreaterThan(0);
      for (const p of marked) {
        await client.call('PATCH', `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}/status`, {
          body: { status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } },
          contentType: 'application/strategic-merge-patch+json',
        });
      }
      const back = await until('the gpu-operator Application Healthy', () => state(gpu).health === 'Healthy', 4 * 60_000);
      console.log(`${worker} back: the gpu-operator Application Healthy ${seconds(back)} later`);
      expect(await unavailable()).toEqual([]);
      expect(await policyState()).toBe('ready');
      await convergedAt(later);
      console.log(`a GPU node NotReady and back: ${seconds(Date.now() - gone)} from the Lease taken to converged (${seconds(Date.now() - t0)} with the tolerations' commit)`);
    } finally {
      clearInterval(changes);
    }
  }, 20 * 60_000);
});

/**
 * How long a commit may take to reach an Application behind one wave that does not get Healthy: the wave wait, the
 * resync that notices it, and the syncs of the later waves.
 */
const BEHIND_ONE_WAVE_MS = (WAIT + RESYNC + 2 + 90) * 1000;
