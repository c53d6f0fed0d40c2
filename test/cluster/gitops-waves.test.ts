import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ApplicationState, describeState, formatTimeline } from './applications';
import { ArgoCdCli, startArgoCdServer } from './argocd-cli';
import { twinBinary } from './binary';
import { sleep } from './poll';
import { startTwinCluster, TwinCluster } from './twin-cluster';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { unpackedLayer } from '../../src/engines/packaged';
import { REFERENCE_FILE } from '../paths';

/*
 * Issue 49 on the real Argo CD (v3.5.1, the twin of the reference cluster: test/cluster/README.md): a later commit
 * that adds a tenant orders its queue before its namespace; a failed sync is Degraded with the API server's message,
 * the root shows it and retries with the later waves held, and the fix commit recovers by itself. One twin, the
 * scenarios in order, each ending converged; what each shows is in its name. (Still to come on the twin: a wave that
 * stays Progressing, prune and self-heal off, a held queue, the samples synced by hand, the other escape hatches.)
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
const report = () => twin.watch.states().map(describeState).join('\n');

/** Reads until `done` holds, or fails saying `what` did not happen, with every Application's state. */
async function until(what: string, done: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (await done()) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms / 1000} s. The Applications:\n${report()}\n${twin.twin.logs(5)}`);
    await sleep(1000);
  }
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

/** What the root reports of one of its Applications (status.resources[]: its sync status and its health as the check says). */
async function rootSees(child: string): Promise<{ status?: string; health?: string; message?: string }> {
  const r = ((await application(twin.name)).status?.resources ?? []).find((x: Json) => x.kind === 'Application' && x.name === child) ?? {};
  return { status: r.status, health: r.health?.status, message: r.health?.message };
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
  const p = path.join(twin.clusterDir, file);
  const o = parse(readFileSync(p, 'utf8')) as Json;
  edit(o);
  writeFileSync(p, stringify(o));
}

/** A kubectl command as the README prints it (the toolkit's kubectl, the admin kubeconfig, from the work tree). */
async function kubectl(args: readonly string[]): Promise<string> {
  const bin = (await unpackedLayer(defaultCacheDir() || undefined)).kubectl;
  const r = spawnSync(bin, args, { cwd: twin.workTree, env: twin.twin.env({ KUBECONFIG: twin.cp.identity('admin').kubeconfig }), encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** The escape hatches dist/<cluster>/README.md prints ("When a sync wave holds"), comments cut. */
function printedHatches(): string[] {
  const readme = readFileSync(path.join(twin.clusterDir, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## When a sync wave holds'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l.startsWith('argocd '));
}

/** Runs a printed escape hatch (`<application>` filled in) as the operator would; answers its output, failing on an error exit. */
async function hatch(printed: string, target?: string): Promise<string> {
  const line = printedHatches().find((l) => l === printed);
  if (!line) throw new Error(`the README prints no "${printed}"; it prints:\n${printedHatches().join('\n')}`);
  const args = line.replace(/<application>/g, target ?? '<application>').split(/\s+/).slice(1);
  const run = await cli.run(args);
  if (run.code !== 0) throw new Error(`${run.command}: exit ${run.code}\n${run.output}\n${readFileSync(cli.log, 'utf8').split('\n').slice(-20).join('\n')}`);
  return run.output;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

beforeAll(async () => {
  await twinBinary();
  twin = await startTwinCluster({
    description: REFERENCE_FILE,
    edit: (d) => { d.gitops = { ...d.gitops, waveWait: `${WAIT}s` }; },
    // the node lifecycle controller too: a NotReady Node's pods turn not ready, as on a cluster
    controllers: ['*'],
  });
  ns = twin.model.description.gitops.namespace;
  head = await twin.push(`${twin.name}: the bootstrap commit`);
  await twin.bootstrap({ controllerArgs: CONTROLLER_ARGS });
  await convergedAt(head);
  cli = await startArgoCdServer(twin.twin, ns);
}, 40 * 60_000);

afterAll(async () => {
  await cli?.stop();
  await twin?.stop();
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
      const seen = await rootSees(app('kueue'));
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
});
