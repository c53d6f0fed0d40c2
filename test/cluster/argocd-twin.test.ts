import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ArgoCdCli, CliRun, startArgoCdCli } from './argocd-cli';
import { bootTwin, printedCommands, rootSees, stopTwin, userOfKubeconfig } from './twin-file';
import { LABELS, ownSyncOptions, syncOptionValue } from '../../src/model/names';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { readTreeObjects, removedObjects } from '../../src/render/deletions';
import { definedKind, objectId } from '../../src/render/manifest';
import { loadModels } from '../../src/synth/pipeline';
import { ApplicationState, describeState, formatTimeline, TimelineEntry } from '../../src/twin/applications';
import { vendoredCrds } from '../../src/twin/argocd-sync';
import { KubeObject } from '../../src/twin/kube-client';
import { conditionOf, workloadOwnedBy } from '../../src/twin/kueue';
import { poll } from '../../src/twin/poll';
import { renderInto, startTwinCluster, TwinCluster } from '../../src/twin/twin-cluster';
import { REFERENCE_FILE, TRAINING_FILE } from '../paths';

/**
 * The bootstrap of the reference cluster synced by a real Argo CD (v3.5.1, out of cluster) on a twin of the cluster
 * (twin-cluster.ts: a hermetic control plane, the described Nodes run by KWOK, Kueue running for real, the GPU and
 * Network Operator stand-ins), from a loopback Git repository holding the render: exactly the README's commands, then
 * every Application Synced and Healthy in wave order within a bound, with the timeline printed.
 */

/** How long the whole bootstrap may take, from the root's apply to every Application Synced and Healthy. */
const BOOTSTRAP_BOUND_MS = 6 * 60 * 1000;
/** How long a later commit may take, from its push to every Application Synced and Healthy at it. */
const COMMIT_BOUND_MS = 4 * 60 * 1000;

let twin: TwinCluster;
let pushed: string;

beforeAll(async () => {
  ({ twin, head: pushed } = await bootTwin({ description: REFERENCE_FILE }));
}, 30 * 60 * 1000);

afterAll(() => stopTwin(twin));

/** The revision an Application is at when the bootstrap has converged: the root at the pushed commit, each child pinned to it. */
const converged = (s: ApplicationState) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === pushed;

/**
 * Pushes the work tree (after `change`), then waits until every Application is Synced and Healthy at the new commit
 * and the root's sync of it Succeeded; prints the timeline from the push; answers the commit and the states.
 */
async function pushAndConverge(
  what: string, change: () => void | Promise<void>, boundMs = COMMIT_BOUND_MS,
): Promise<{ sha: string; states: ApplicationState[] }> {
  const before = usage();
  await change();
  const t0 = Date.now();
  const sha = await twin.push(what);
  const at = (s: ApplicationState) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === sha;
  const done = await twin.watch.waitFor((states) => states.every(at) && twin.watch.state(twin.name)?.phase === 'Succeeded' && twin.watch.state(twin.name)?.operationRevision === sha, boundMs);
  const cost = commitCost(what, Date.now() - t0, before, usage());
  console.log(`${twin.name}: ${what} (${sha.slice(0, 7)}), from the push\n${formatTimeline(twin.watch.timeline(t0, () => sha))}\n${costLine(cost)}`);
  expect(done.states.filter((s) => !at(s)).map(describeState), `${what}: not converged within ${boundMs / 1000} s`).toEqual([]);
  expect(done.ok, what).toBe(true);
  pushed = sha;
  return { sha, states: done.states };
}

/** CPU seconds so far of every process of the twin and of this test process (the render and push of each commit run here); peak MiB of Argo CD's, KWOK's and Redis's. */
function usage(): { cpu: Record<string, number>; peakMiB: Record<string, number> } {
  const self = process.cpuUsage();
  const cpu = { ...twin.cpuSeconds(), 'test process': (self.user + self.system) / 1e6 };
  const peakMiB = Object.fromEntries(Object.entries(twin.twin.resources()).map(([k, v]) => [k, v!.peakMiB]));
  return { cpu, peakMiB };
}

/** What one day-two commit cost, from its edit to every Application converged at it: CPU seconds per process, peak memory after it. */
interface CommitCost {
  readonly what: string;
  readonly seconds: number;
  readonly cpu: Record<string, number>;
  readonly peakMiB: Record<string, number>;
}
const costs: CommitCost[] = [];

function commitCost(what: string, ms: number, before: ReturnType<typeof usage>, after: ReturnType<typeof usage>): CommitCost {
  const cpu = Object.fromEntries(Object.entries(after.cpu).map(([k, v]) => [k, Math.round((v - (before.cpu[k] ?? 0)) * 10) / 10]));
  const cost = { what, seconds: Math.round(ms / 100) / 10, cpu, peakMiB: after.peakMiB };
  costs.push(cost);
  return cost;
}

const costLine = (c: CommitCost) => `${c.what}: ${c.seconds} s from the push; CPU s ${Object.values(c.cpu).reduce((a, b) => a + b, 0).toFixed(1)} ${JSON.stringify(c.cpu)}; peak MiB so far ${JSON.stringify(c.peakMiB)}`;

afterAll(() => {
  if (costs.length > 0) console.log(`${twin?.name}: the day-two commits, CPU seconds each (from the edit to converged) and peak memory so far (load ${loadavg().map((l) => l.toFixed(1)).join(' ')})\n${costs.map(costLine).join('\n')}`);
});

/** The operator's CLIs (argocd-cli.ts: argocd against the twin's API server, kubectl with the admin's kubeconfig), at first use. */
let cli: ArgoCdCli | undefined;
afterAll(() => cli?.stop());

/** Runs a command line as the README or synth prints it, with the operator's CLIs; prints what it did. */
async function operatorShell(line: string): Promise<CliRun> {
  cli ??= await startArgoCdCli(twin.twin, twin.cp.identity('admin').kubeconfig, twin.workTree, twin.model.description.gitops.namespace);
  const run = await cli.shell(line, 10 * 60_000);
  console.log(`${twin.name}: ${line}: exit ${run.code}\n${run.output.trim().split('\n').slice(-15).join('\n')}`);
  return run;
}

/** The line of dist/<cluster>/README.md that runs `kubectl` and names `what` and `application`. */
function printedKubectl(what: string, application: string): string {
  const line = printedCommands(twin, 'kubectl').find((l) => l.includes(what) && l.split(/\s+/).includes(application));
  if (!line) throw new Error(`dist/${twin.name}/README.md prints no kubectl line of ${what} for ${application}`);
  return line;
}

/** The live object at an API path, or undefined. */
const live = (p: string) => twin.cp.client().get(p);

describe('the reference cluster, bootstrapped as its README says, synced by the real Argo CD', () => {
  it('every Application is Synced and Healthy at the pushed commit, and the root\'s sync Succeeded, within the bound; the timeline is printed', async () => {
    const t0 = twin.rootAppliedAt!;
    const root = twin.name;
    const done = await twin.watch.waitFor((states) => states.every(converged) && twin.watch.state(root)?.phase === 'Succeeded', BOOTSTRAP_BOUND_MS);
    const timeline = twin.watch.timeline(t0, () => pushed);
    console.log(`${root}: bootstrap timeline (from the root's apply; Argo CD ${twin.twin.binary.versions['github.com/argoproj/argo-cd/v3']})\n${formatTimeline(timeline)}\nCPU seconds: ${JSON.stringify(twin.cpuSeconds())}\npeak MiB: ${JSON.stringify(Object.fromEntries(Object.entries(twin.twin.resources()).map(([k, v]) => [k, v!.peakMiB])))}`);
    expect(done.states.filter((s) => !converged(s)).map(describeState), 'not converged').toEqual([]);
    expect(done.ok).toBe(true);
    // the root and every Application its folder's kustomization lists (not the samples: applied by hand), each pinned
    const listed = (parse(readFileSync(path.join(twin.clusterDir, 'gitops', 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources;
    const expected = listed.filter((f) => f.startsWith('application.')).map((f) => (parse(readFileSync(path.join(twin.clusterDir, 'gitops', f), 'utf8')) as { metadata: { name: string } }).metadata.name);
    expect(done.states.map((s) => s.name).sort()).toEqual([root, ...expected].sort());
    for (const s of done.states.filter((x) => x.name !== root)) expect(s.targetRevision, s.name).toBe(pushed);
  }, BOOTSTRAP_BOUND_MS + 60_000);

  it('the waves ran in order: no Application of a wave synced before every Application of the waves before it was Healthy', () => {
    const timeline: TimelineEntry[] = twin.watch.timeline(twin.rootAppliedAt!, () => pushed).filter((e) => e.application !== twin.name);
    const waves = [...new Set(timeline.map((e) => e.wave))].sort((a, b) => a - b);
    const late: string[] = [];
    for (let i = 1; i < waves.length; i++) {
      const before = timeline.filter((e) => e.wave < waves[i]);
      const lastHealthy = Math.max(...before.map((e) => e.healthyAt ?? Infinity));
      for (const e of timeline.filter((x) => x.wave === waves[i])) if ((e.syncedAt ?? -Infinity) < lastHealthy) late.push(`${e.application} (wave ${e.wave}) synced at ${e.syncedAt} ms, before wave < ${waves[i]} was Healthy (${lastHealthy} ms)`);
    }
    expect(late).toEqual([]);
    expect(waves.length).toBeGreaterThan(1);
  });
});

describe('the operator stand-ins once the bootstrap converged', () => {
  it('write no status while nothing changes: three passes after the bootstrap converged write nothing (an operator writes a status only when it changes)', async () => {
    const { standIns } = twin;
    const writes = standIns.writes.length;
    const from = standIns.passes;
    await poll(async () => standIns.passes, (n) => n >= from + 3, 120_000, 250);
    expect(standIns.passes, 'passes of the stand-ins within 120 s').toBeGreaterThanOrEqual(from + 3);
    expect(standIns.writes.slice(writes).map((w) => `${w.kind} ${w.name}: ${w.state}`)).toEqual([]);
  });
});

describe('the pre-installed MPI Operator, running for real', () => {
  type Json = Record<string, any>;
  /** How long the sample may take from its creation to launcher and workers running (Kueue's admission, the operator, the scheduler, KWOK). */
  const MPIJOB_BOUND_MS = 180_000;

  it('an MPIJob Kueue admits gets its worker pods and launcher Job from the real MPI Operator (with its ServiceAccount\'s rights): bound to GPU workers, run by KWOK, and its status as the operator writes it', async () => {
    const operator = await twin.mpiOperator!;
    expect(operator.exited, operator.log()).toBe(false);
    const install = operator.install;
    expect(await userOfKubeconfig(twin, operator.kubeconfig), 'the operator\'s token').toBe(`system:serviceaccount:${install.namespace}:${install.serviceAccount}`);
    // the queues come with the kueue Application (its wave synced once the installs are Healthy)
    const queues = await twin.watch.waitFor((states) => states.some((x) => x.name === `${twin.name}-kueue` && x.sync === 'Synced' && x.health === 'Healthy'), BOOTSTRAP_BOUND_MS);
    expect(queues.ok, queues.states.map(describeState).join('\n')).toBe(true);
    const admin = twin.cp.client();
    // the rendered sample (two workers of 8 GPUs): it queues to the default ClusterQueue, which admits it
    const sample = parse(readFileSync(path.join(twin.clusterDir, 'samples', 'mpijob.default.nccl-all-reduce.yaml'), 'utf8')) as KubeObject;
    const job = await admin.create(sample);
    const uid = job.metadata.uid as string;
    const ns = job.metadata.namespace!;
    const ownedBy = (o: KubeObject, owner: string) => ((o.metadata.ownerReferences ?? []) as Json[])
      .some((r) => r.uid === owner && r.controller === true);
    const specs = (sample.spec as Json).mpiReplicaSpecs as Record<string, { replicas: number }>;
    const gpuWorkers = new Set(twin.nodes.filter((n) => n.kind.role === 'gpu').map((n) => n.node.metadata.name));
    // what the operator made for it, as seen over the reads: its worker pods, its launcher Job and the Job
    // controller's pod of it
    const workers = new Map<string, KubeObject>();
    const launcherPods = new Map<string, KubeObject>();
    let launcher: KubeObject | undefined;
    let admitted = false;
    const running = (p: KubeObject) => (p.status as Json | undefined)?.phase === 'Running' && (p.spec as Json).nodeName !== undefined;
    const keep = (into: Map<string, KubeObject>, pods: KubeObject[]) => {
      for (const p of pods) if (!into.has(p.metadata.name) || running(p)) into.set(p.metadata.name, p);
    };
    const mpiJob = await poll(async () => {
      const [now, jobs, pods] = await Promise.all([admin.get(await admin.pathOf(job)), admin.list(`/apis/batch/v1/namespaces/${ns}/jobs`), admin.list(`/api/v1/namespaces/${ns}/pods`)]);
      launcher = jobs.find((j) => ownedBy(j, uid)) ?? launcher;
      admitted ||= conditionOf(await workloadOwnedBy(admin, job), 'Admitted')?.status === 'True';
      keep(workers, pods.filter((p) => ownedBy(p, uid)));
      if (launcher) keep(launcherPods, pods.filter((p) => ownedBy(p, launcher!.metadata.uid as string)));
      return now;
    }, (now) => [...workers.values()].filter(running).length === specs.Worker.replicas && [...launcherPods.values()].some(running)
      && conditionOf(now, 'Running')?.status === 'True', MPIJOB_BOUND_MS, 1000);
    const where = (pods: KubeObject[]) => pods.map((p) => `${p.metadata.name} on ${(p.spec as Json).nodeName ?? '(not bound)'} ${(p.status as Json | undefined)?.phase}`);
    const detail = `${JSON.stringify(mpiJob?.status)}\n${where([...workers.values(), ...launcherPods.values()]).join('\n')}\n${operator.log(20)}`;
    console.log(`${twin.name}: MPIJob ${ns}/${job.metadata.name}\n${detail}`);
    // admitted by Kueue (its Workload), which unsuspends it: the operator creates nothing for a suspended MPIJob
    expect(admitted, detail).toBe(true);
    expect(launcher?.metadata.name, detail).toBe(`${job.metadata.name}-launcher`);
    expect([...workers.keys()].sort(), detail).toEqual(Array.from({ length: specs.Worker.replicas }, (_, i) => `${job.metadata.name}-worker-${i}`).sort());
    expect([...launcherPods.values()].length, detail).toBeGreaterThan(0);
    for (const p of [...workers.values(), ...launcherPods.values()]) expect(gpuWorkers.has((p.spec as Json).nodeName as string), `${p.metadata.name}: ${detail}`).toBe(true);
    expect([...workers.values(), ...launcherPods.values()].every(running), detail).toBe(true);
    // the status as the operator writes it (pkg/controller/mpi_job_controller.go at v0.8.2): created, then running once
    // the launcher's pod and every worker run (the launcher runs until the MPIJob goes: kwok-stages.ts
    // podCompleteButMpiLaunchers)
    expect(conditionOf(mpiJob, 'Created'), detail).toMatchObject({ status: 'True', reason: 'MPIJobCreated' });
    expect(conditionOf(mpiJob, 'Running'), detail).toMatchObject({ status: 'True', reason: 'MPIJobRunning' });
    expect((mpiJob?.status as Json).replicaStatuses, detail).toMatchObject({ Launcher: { active: 1 }, Worker: { active: specs.Worker.replicas } });
    // gone again, with what it owned, before the day-two commits (they read the queues' usage)
    await admin.delete(job);
    const left = await poll(async () => (await admin.list(`/api/v1/namespaces/${ns}/pods`)).filter((p) => workers.has(p.metadata.name) || launcherPods.has(p.metadata.name)), (pods) => pods.length === 0, 60_000, 1000);
    expect(left.map((p) => p.metadata.name)).toEqual([]);
  }, BOOTSTRAP_BOUND_MS + MPIJOB_BOUND_MS + 120_000);
});

describe('Argo CD\'s own install after the bootstrap', () => {
  it('is the argocd Application\'s alone: the README\'s first command applies it under Argo CD\'s field manager, so no field of it stays kubectl\'s (one a later commit drops is removed)', async () => {
    const cm = parse(readFileSync(path.join(twin.clusterDir, 'argocd', 'configmap.argocd.argocd-cm.yaml'), 'utf8')) as { metadata: { namespace: string } };
    const ns = cm.metadata.namespace;
    for (const p of [`/api/v1/namespaces/${ns}/configmaps/argocd-cm`, `/apis/apps/v1/namespaces/${ns}/deployments/argocd-server`]) {
      const o = await live(p) as { metadata?: { managedFields?: { manager: string; operation: string }[] } } | undefined;
      const appliers = [...new Set((o?.metadata?.managedFields ?? []).filter((f) => f.operation === 'Apply').map((f) => f.manager))];
      expect(appliers, p).toEqual(['argocd-controller']);
    }
  });
});

describe('day two: each commit converges again on the real Argo CD', () => {
  type Json = Record<string, any>;
  const gpusOf = (cq: Json | undefined) => ((cq?.spec?.resourceGroups ?? []) as Json[])
    .flatMap((g) => g.flavors as Json[]).flatMap((f) => f.resources as Json[])
    .find((r) => r.name === 'nvidia.com/gpu')?.nominalQuota;

  it('a commit that adds a tenant: its namespace, LocalQueue and ClusterQueue are there', async () => {
    await pushAndConverge('add tenant vision', () => twin.render((d) => { d.tenants.push({ name: 'vision', gpus: 2 }); }));
    expect((await live('/api/v1/namespaces/vision'))?.metadata.name).toBe('vision');
    expect(String(gpusOf(await live('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/vision')))).toBe('2');
    expect((await live('/apis/kueue.x-k8s.io/v1beta2/namespaces/vision/localqueues/vision'))?.metadata.name).toBe('vision');
  }, COMMIT_BOUND_MS + 60_000);

  it('a commit that changes a quota: the ClusterQueue has the new nominal quota', async () => {
    await pushAndConverge('research quota 8 -> 6', () => twin.render((d) => { d.tenants.find((t: Json) => t.name === 'research').gpus = 6; }));
    expect(String(gpusOf(await live('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research')))).toBe('6');
  }, COMMIT_BOUND_MS + 60_000);

  it('a commit that touches only another cluster\'s folder: every Application moves to it and converges', async () => {
    const before = (await live('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research'))?.metadata.generation;
    await pushAndConverge('render cluster lab-b beside it', () => {
      const other = { ...structuredClone(twin.description), name: 'lab-b', gitops: { ...twin.description.gitops, path: 'dist/lab-b' } };
      const file = path.join(twin.workTree, 'clusters', 'lab-b.yaml');
      writeFileSync(file, stringify(other));
      renderInto(file, path.join(twin.workTree, 'dist'));
    });
    // nothing of this cluster changed: its objects were applied again as they were
    expect((await live('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research'))?.metadata.generation).toBe(before);
  }, COMMIT_BOUND_MS + 60_000);

  it('a manual edit of a managed field is reverted by self-heal', async () => {
    const p = '/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research';
    const kueueApp = `/apis/argoproj.io/v1alpha1/namespaces/${twin.model.description.gitops.namespace}/applications/${twin.name}-kueue`;
    // twice: a commit that changed nothing of the kueue folder left its Application unsynced at that commit, and the
    // first drift is synced as the commit (no self-heal needed); the second can only be lifted by self-heal
    for (const round of ['first', 'second']) {
      await twin.cp.client().call('PATCH', p, { body: { spec: { queueingStrategy: 'StrictFIFO' } }, contentType: 'application/merge-patch+json', query: { fieldManager: 'kubectl-edit' } });
      const t0 = Date.now();
      const reverted = await poll(() => live(p), (cq) => (cq?.spec as Json | undefined)?.queueingStrategy === 'BestEffortFIFO', 120_000, 500);
      console.log(`${twin.name}: the ${round} manual edit of ClusterQueue research reverted in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      expect((reverted?.spec as Json).queueingStrategy).toBe('BestEffortFIFO');
    }
    const op = ((await live(kueueApp))?.status as Json).operationState as Json;
    // autoSync counts self-heal attempts in the operation it starts (SyncOperation.SelfHealAttemptsCount, "autoHealAttemptsCount")
    expect(op.operation.sync.autoHealAttemptsCount ?? 0, JSON.stringify(op.operation)).toBeGreaterThan(0);
  }, 300_000);
});

describe('day two: what a commit removes', () => {
  type Json = Record<string, any>;

  it('a commit that removes a tenant: nothing of its namespace goes before someone confirms (a PersistentVolumeClaim in it stays); once confirmed as the docs say, its objects are pruned', async () => {
    const admin = twin.cp.client();
    const pvc = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'checkpoints', namespace: 'inference' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
    await admin.apply(pvc, { fieldManager: 'tenant-inference' });
    const before = usage();
    twin.render((d) => { d.tenants = d.tenants.filter((t: Json) => t.name !== 'inference'); });
    const sha = await twin.push('remove tenant inference');
    const t0 = Date.now();
    const tenantsApp = `${twin.name}-tenants`;
    const waiting = await twin.watch.waitFor((states) => {
      const s = states.find((x) => x.name === tenantsApp);
      return s?.phase === 'Running' && /waiting for pruning confirmation of \/Namespace\/inference/.test(s.operationMessage);
    }, COMMIT_BOUND_MS);
    expect(waiting.states.filter((s) => s.name === tenantsApp).map(describeState)).toEqual([expect.stringMatching(/waiting for pruning confirmation of \/Namespace\/inference/)]);
    // the kueue folder's ClusterQueue of the tenant (no data) is pruned; the namespace and the claim in it stay
    expect(await live('/apis/kueue.x-k8s.io/v1beta2/clusterqueues/inference')).toBeUndefined();
    expect((await live('/api/v1/namespaces/inference/persistentvolumeclaims/checkpoints'))?.metadata.name).toBe('checkpoints');
    expect((await live('/api/v1/namespaces/inference'))?.metadata.deletionTimestamp).toBeUndefined();
    // the README's `kubectl annotate application -n argocd <the tenants Application> argocd.argoproj.io/deletion-approved=$(date ...)`, as printed
    const approved = await operatorShell(printedKubectl('deletion-approved', tenantsApp));
    expect(approved.code, approved.output).toBe(0);
    // the same commit converges (the root's sync of it, waiting on the tenants, goes on)
    const done = await twin.watch.waitFor((states) => states.every((s) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === sha)
      && twin.watch.state(twin.name)?.phase === 'Succeeded', COMMIT_BOUND_MS);
    expect(done.states.filter((s) => !(s.sync === 'Synced' && s.health === 'Healthy' && s.revision === sha)).map(describeState)).toEqual([]);
    pushed = sha;
    const cost = commitCost('remove tenant inference (confirmed)', Date.now() - t0, before, usage());
    console.log(`${twin.name}: remove tenant inference (${sha.slice(0, 7)}), confirmed, from the push\n${formatTimeline(twin.watch.timeline(t0, () => sha))}\n${costLine(cost)}`);
    const ns = await live('/api/v1/namespaces/inference');
    expect(ns === undefined || ns.metadata.deletionTimestamp !== undefined).toBe(true);
    // Argo CD's CRDs and the adopted operator resources never leave with a prune
    for (const crd of ['applications.argoproj.io', 'appprojects.argoproj.io', 'applicationsets.argoproj.io']) expect((await live(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`))?.metadata.name).toBe(crd);
  }, 2 * COMMIT_BOUND_MS + 60_000);

  it('a commit that removes a folder with an adopted operator resource: its Application goes, the adopted NicClusterPolicy stays; an object of it that says Prune=false and no Delete=false goes in the cascade, as its deletion line says', async () => {
    // a ConfigMap of the folder's, by hand in dist/, that says Prune=false only: synced first
    const folder = path.join(twin.clusterDir, 'network-operator');
    const file = 'configmap.default.issue-49-prune-false.yaml';
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'issue-49-prune-false', namespace: 'default', annotations: { [LABELS.syncOptions]: 'Prune=false' } }, data: { issue: '49' } };
    await pushAndConverge('a ConfigMap that says Prune=false in the network-operator folder', () => {
      writeFileSync(path.join(folder, file), stringify(configMap));
      const k = path.join(folder, 'kustomization.yaml');
      const kustomization = parse(readFileSync(k, 'utf8')) as { resources: string[] };
      writeFileSync(k, stringify({ ...kustomization, resources: [...kustomization.resources, file] }));
    });
    const cm = '/api/v1/namespaces/default/configmaps/issue-49-prune-false';
    expect((await live(cm))?.metadata.name).toBe('issue-49-prune-false');
    const dist = path.dirname(twin.clusterDir);
    const before = readTreeObjects(dist, [twin.name]);
    await pushAndConverge('no InfiniBand: the network-operator folder goes', () => twin.render((d) => { delete d.network.infiniband; }));
    // what synth and diff say of it: deleted in the cascade, Prune=false notwithstanding
    const line = removedObjects(before, readTreeObjects(dist, [twin.name])).find((d) => d.object === 'ConfigMap default/issue-49-prune-false');
    expect(line?.stays).toBeUndefined();
    expect(line?.note).toMatch(/^deleted with its Application .*-network-operator, which leaves too: its resources finalizer deletes what it applied \(Prune=false does not spare it/);
    expect(await poll(() => live(cm), (o) => o === undefined, 60_000, 500)).toBeUndefined();
    expect(twin.watch.state(`${twin.name}-network-operator`)).toBeUndefined();
    const app = `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/${twin.name}-network-operator`;
    expect(await poll(() => live(app), (a) => a === undefined, 60_000, 500)).toBeUndefined();
    // the cascade of its deletion is over and skipped the adopted object (its Delete=false, src/model/adoption.ts)
    const ncp = await live(`/apis/mellanox.com/v1alpha1/nicclusterpolicies/${twin.model.description.networkOperator.nicClusterPolicyName}`);
    expect(ncp?.metadata.name).toBe(twin.model.description.networkOperator.nicClusterPolicyName);
    expect(ncp?.metadata.deletionTimestamp).toBeUndefined();
    expect((ncp?.metadata.annotations as Json | undefined)?.[LABELS.adopted]).toBe('true');
  }, COMMIT_BOUND_MS + 60_000);
});

describe('failure: a commit with an object the API server refuses', () => {
  it('fails its child\'s sync with the API server\'s message, the root shows it, and the fixed commit recovers with no command by hand', async () => {
    const file = path.join(twin.clusterDir, 'kueue', 'clusterqueue.research.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('queueingStrategy: BestEffortFIFO', 'queueingStrategy: Sideways'));
    await twin.push('a ClusterQueue the API server refuses');
    const kueueApp = `${twin.name}-kueue`;
    const refused = /Unsupported value: "Sideways"/;
    const shown = await twin.watch.waitFor((states) => {
      const child = states.find((s) => s.name === kueueApp);
      const root = states.find((s) => s.name === twin.name);
      return child !== undefined && root !== undefined && refused.test(describeState(child)) && refused.test(describeState(root));
    }, COMMIT_BOUND_MS);
    console.log(`${twin.name}: a refused object\n${shown.states.map(describeState).join('\n')}`);
    expect(shown.ok).toBe(true);
    await pushAndConverge('the fix: the ClusterQueue rendered again', () => twin.render(), 2 * COMMIT_BOUND_MS);
  }, 3 * COMMIT_BOUND_MS + 60_000);
});

/**
 * Deliberately broken renders of the reference cluster (the render of the last commit plus the least mutation that
 * breaks it, committed as a hand edit of dist/ would be), each of which the real Argo CD must not let through: within a
 * bound, the Application that holds it reports what is wrong, the root does not claim success and the later waves keep
 * the last good commit. Each ends with the render as the toolkit renders it, pushed, converging again with the same
 * predicates: so what each asserts of the broken commit is what tells it from a good one.
 */
describe('broken renders that must fail on the real Argo CD', () => {
  type Json = Record<string, any>;
  /** How long the failure may take to show, from the push (well inside gitops.waveWait, 10 minutes by default). */
  const SHOWN_BOUND_MS = 4 * 60 * 1000;
  /** How long the root is watched once the failure shows, to see that it does not turn to success after all. */
  const HOLD_MS = 20 * 1000;
  /** How long a child's failing sync may retry before it ends Failed: CHILD_RETRY's backoff (5 retries, 2 min 15 s in all), each retry's few seconds, and a margin. */
  const RETRIES_SPENT_MS = 5 * 60 * 1000;
  const app = (folder: string) => `${twin.name}-${folder}`;
  const state = (name: string) => twin.watch.state(name);

  /** Adds a manifest to a folder of the rendered cluster (the file, and its line in the folder's kustomization.yaml). */
  function addToFolder(folder: string, file: string, object: Json): string {
    const p = path.join(twin.clusterDir, folder, file);
    writeFileSync(p, stringify(object));
    const k = path.join(twin.clusterDir, folder, 'kustomization.yaml');
    const kustomization = parse(readFileSync(k, 'utf8')) as Json;
    kustomization.resources = [...kustomization.resources, file];
    writeFileSync(k, stringify(kustomization));
    return p;
  }

  /** Watches the root for `ms`: answers the first moment its sync of `sha` Succeeded or it was Healthy at `sha`, if any. */
  async function rootClaimsSuccess(sha: string, ms: number): Promise<string | undefined> {
    const t0 = Date.now();
    while (Date.now() - t0 < ms) {
      const root = state(twin.name);
      if (root && root.operationRevision === sha && root.phase === 'Succeeded') return describeState(root);
      if (root && root.revision === sha && root.sync === 'Synced' && root.health === 'Healthy') return describeState(root);
      await new Promise((r) => setTimeout(r, 1000));
    }
    return undefined;
  }

  beforeAll(async () => {
    // on their own (vitest -t) they start from the converged bootstrap, as after the tests above
    const done = await twin.watch.waitFor((states) => states.every((s) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === pushed)
      && twin.watch.state(twin.name)?.phase === 'Succeeded', BOOTSTRAP_BOUND_MS);
    expect(done.states.filter((s) => !(s.sync === 'Synced' && s.health === 'Healthy' && s.revision === pushed)).map(describeState)).toEqual([]);
  }, BOOTSTRAP_BOUND_MS + 60_000);

  it('a health check that never turns Healthy (a ClusterQueue of a flavor no ResourceFlavor names: Kueue keeps it inactive): its Application stays Degraded with the check\'s message, the root does not succeed, the later waves keep the last commit; the render as rendered converges again', async () => {
    const kueueApp = app('kueue');
    const later = twin.watch.states().filter((s) => s.wave > (state(kueueApp)?.wave ?? 0) && s.name !== twin.name).map((s) => s.name);
    const good = pushed;
    // the least mutation: the research ClusterQueue's flavor renamed to one nothing defines (the API server and Kueue's
    // webhook accept it; Kueue reports the queue inactive, FlavorNotFound, and the toolkit's health check says so)
    const file = path.join(twin.clusterDir, 'kueue', 'clusterqueue.research.yaml');
    const cq = parse(readFileSync(file, 'utf8')) as Json;
    const flavors = (cq.spec.resourceGroups as Json[]).flatMap((g) => g.flavors as Json[]);
    expect(flavors.length).toBeGreaterThan(0);
    for (const f of flavors) f.name = 'no-such-flavor';
    writeFileSync(file, stringify(cq));
    const broken = await twin.push('a ClusterQueue of a flavor that does not exist');
    const t0 = Date.now();
    const flavorMissing = /FlavorNotFound/;
    const shown = await twin.watch.waitFor(() => {
      const s = state(kueueApp);
      return s !== undefined && s.revision === broken && s.sync === 'Synced' && ['Degraded', 'Progressing'].includes(s.health)
        && s.waitingOn.some((w) => /^ClusterQueue research: /.test(w) && flavorMissing.test(w));
    }, SHOWN_BOUND_MS);
    console.log(`${twin.name}: a health check that never turns Healthy, ${((Date.now() - t0) / 1000).toFixed(1)} s after the push\n${shown.states.map(describeState).join('\n')}`);
    expect(shown.ok, `the kueue Application did not report the ClusterQueue's FlavorNotFound within ${SHOWN_BOUND_MS / 1000} s:\n${shown.states.map(describeState).join('\n')}`).toBe(true);
    // the root sees the Application not Healthy, with the check's message, and its sync of the commit does not succeed
    const seen = await poll(() => rootSees(twin, kueueApp), (r) => r.health !== undefined && r.health !== 'Healthy', 60_000, 1000);
    console.log(`${twin.name}: the root sees ${kueueApp}: ${JSON.stringify(seen)}`);
    expect(['Degraded', 'Progressing']).toContain(seen.health);
    expect(seen.message ?? '').not.toBe('');
    expect(await rootClaimsSuccess(broken, HOLD_MS)).toBeUndefined();
    console.log(`${twin.name}: ${((Date.now() - t0) / 1000).toFixed(1)} s after the push, the root: ${describeState(state(twin.name)!)}`);
    expect(state(twin.name)?.health).not.toBe('Healthy');
    // the waves after it keep the last good commit
    for (const name of later) expect(state(name)?.targetRevision, name).toBe(good);

    // the render as the toolkit renders it: the same predicates now hold
    await pushAndConverge('the ClusterQueue as rendered', () => twin.render(), 2 * COMMIT_BOUND_MS);
  }, SHOWN_BOUND_MS + HOLD_MS + 3 * COMMIT_BOUND_MS + 60_000);

  it('a wave order that applies a CR before its CRD (a PyTorchJob in wave 1, the Training Operator\'s CRD in wave 2): the sync fails with the API server\'s message, the CRD\'s wave never comes, nothing converges by luck; once its retries are spent its old objects read Healthy and the root still shows it Degraded; the render as rendered converges again', async () => {
    // the CR: the training cluster's rendered PyTorchJob sample; its CRD: the one the training cluster's Training
    // Operator install brings (the vendored copy planSync applies for it)
    const out = mkdtempSync(path.join(tmpdir(), 'training-render-'));
    let job: Json;
    try {
      renderInto(TRAINING_FILE, out);
      const [training] = loadModels([TRAINING_FILE]);
      const dir = path.join(out, training.name, 'samples');
      const name = readdirSync(dir).find((f) => f.startsWith('pytorchjob.'));
      expect(name, 'the training cluster renders a PyTorchJob sample').toBeDefined();
      job = parse(readFileSync(path.join(dir, name!), 'utf8')) as Json;
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
    const crd = vendoredCrds(DEFAULT_SCHEMAS).get('kubeflow.org/PyTorchJob')?.[0]?.crd;
    expect(crd, 'a vendored PyTorchJob CRD').toBeDefined();
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd!.metadata.name}`;
    expect(await live(crdPath), 'the twin serves no PyTorchJob before this commit').toBeUndefined();

    const kueueApp = app('kueue');
    const tenantsApp = app('tenants');
    expect([state(kueueApp)?.wave, state(tenantsApp)?.wave]).toEqual([1, 2]);
    const good = pushed;
    const added = [addToFolder('kueue', `pytorchjob.${job.metadata.namespace}.${job.metadata.name}.yaml`, job), addToFolder('tenants', `customresourcedefinition.${crd!.metadata.name}.yaml`, crd!)];
    const broken = await twin.push('a PyTorchJob one wave before its CRD');
    const t0 = Date.now();
    // what the API server answers for a kind it does not serve
    const missingKind = /PyTorchJob|kubeflow\.org/;
    const said = (s: ApplicationState) => [s.operationMessage, ...s.conditions, ...s.waitingOn].filter((t) => missingKind.test(t) && /could not find the requested resource|no matches for kind|not found/i.test(t));
    const shown = await twin.watch.waitFor(() => {
      const s = state(kueueApp);
      return s !== undefined && s.targetRevision === broken && said(s).length > 0;
    }, SHOWN_BOUND_MS);
    console.log(`${twin.name}: a CR before its CRD, ${((Date.now() - t0) / 1000).toFixed(1)} s after the push\n${shown.states.map(describeState).join('\n')}`);
    expect(shown.ok, `the kueue Application did not report the missing kind within ${SHOWN_BOUND_MS / 1000} s:\n${shown.states.map(describeState).join('\n')}`).toBe(true);
    // the root's view follows the child's status: just after the push it may still read the child Progressing ("Waiting
    // for Argo CD to compare ..."), so it is read until it turns Degraded (the watch sees the child's failure at once)
    const seen = await poll(() => rootSees(twin, kueueApp), (r) => r.health === 'Degraded', 60_000, 1000);
    console.log(`${twin.name}: the root sees ${kueueApp}: ${JSON.stringify(seen)}`);
    // the sync's tasks are not valid (gitops-engine sync_context.go getSyncTasks: discovery has no kubeflow.org/v1 and
    // the CRD is not in the same sync), and the toolkit's check shows it at the root with the refused object
    expect(seen.health).toBe('Degraded');
    expect(seen.message).toMatch(/^Its sync failed and is retried: one or more synchronization tasks are not valid: .*kubeflow\.org\/v1: the server could not find the requested resource/);
    expect(seen.message).toContain(`refused: PyTorchJob ${job.metadata.namespace}/${job.metadata.name}: `);
    expect(await rootClaimsSuccess(broken, HOLD_MS)).toBeUndefined();
    console.log(`${twin.name}: ${((Date.now() - t0) / 1000).toFixed(1)} s after the push, the root: ${describeState(state(twin.name)!)}`);
    // the CRD's wave never came: no CRD, no PyTorchJob, the tenants Application at the last good commit
    expect(state(tenantsApp)?.targetRevision).toBe(good);
    expect(await live(crdPath)).toBeUndefined();

    // the child's retries spent (CHILD_RETRY): its sync Failed while its old objects stay Healthy, and the object it
    // could not create is left out of its health (argo-cd v3.5.1 controller/health.go, argoproj/argo-cd#27917), so
    // its own health reads Healthy; the toolkit's check still shows it Degraded at the root, which does not go on
    const spent = await twin.watch.waitFor(() => ['Failed', 'Error'].includes(state(kueueApp)?.phase ?? '') && state(kueueApp)?.operationRevision === broken, RETRIES_SPENT_MS);
    console.log(`${twin.name}: ${((Date.now() - t0) / 1000).toFixed(1)} s after the push, the kueue Application's retries spent: ${describeState(state(kueueApp)!)}`);
    expect(spent.ok, `the kueue Application's sync of ${broken} did not end Failed within ${RETRIES_SPENT_MS / 1000} s`).toBe(true);
    expect(state(kueueApp)?.health).toBe('Healthy');
    expect(state(kueueApp)?.sync).toBe('OutOfSync');
    const failed = await poll(() => rootSees(twin, kueueApp), (r) => /^Its sync failed: /.test(r.message ?? ''), 60_000, 1000);
    console.log(`${twin.name}: the root sees ${kueueApp}: ${JSON.stringify(failed)}`);
    expect(failed.health).toBe('Degraded');
    expect(failed.message).toMatch(/^Its sync failed: /);
    expect(failed.message).toContain(`refused: PyTorchJob ${job.metadata.namespace}/${job.metadata.name}: `);
    expect(await rootClaimsSuccess(broken, HOLD_MS)).toBeUndefined();
    expect(state(tenantsApp)?.targetRevision).toBe(good);

    for (const p of added) rmSync(p);
    await pushAndConverge('the waves as rendered', () => twin.render(), 2 * COMMIT_BOUND_MS);
    expect(await live(crdPath)).toBeUndefined();
  }, SHOWN_BOUND_MS + RETRIES_SPENT_MS + 2 * HOLD_MS + 3 * COMMIT_BOUND_MS + 60_000);
});

/**
 * Last, as it takes the cluster down: a whole cluster dropped from dist/ with no fleet hub, and what synth says of it
 * (render/deletions.ts rootPathGone) done as it says: the root reads a path that no longer exists, and
 * `argocd app get <cluster> --refresh` shows the ComparisonError at once; nothing is pruned. Then the printed take-down,
 * run as printed in its order (delete the Applications without waiting, approve the deletions the tenants' cascade waits
 * for, wait until they are gone, delete the AppProject): it returns within its bound, and what is left of the folder's
 * objects is what says Delete=false, the CRDs and the argocd folder's (its Application has no resources finalizer).
 */
describe('a whole cluster dropped from dist/, without a fleet hub', () => {
  type Json = Record<string, any>;

  it('the root shows a ComparisonError on argocd app get --refresh and nothing is pruned; synth\'s take-down, run as printed, leaves only what is kept', async () => {
    const ns = twin.model.description.gitops.namespace;
    const dist = path.dirname(twin.clusterDir);
    const before = readTreeObjects(dist, [twin.name]);
    const cq = '/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research';
    expect(await live(cq)).toBeDefined();
    rmSync(twin.clusterDir, { recursive: true, force: true });
    const removals = removedObjects(before, readTreeObjects(dist, [twin.name]));
    // each object of the folder says it (the root's own line: applied by hand, it stays)
    const said = removals.map((d) => d.stays ?? d.note ?? '').find((t) => /argocd app get \S+ --refresh/.test(t)) ?? '';
    expect(said, JSON.stringify(removals.slice(0, 3))).toMatch(/argocd app get \S+ --refresh/);
    const refresh = /argocd app get \S+ --refresh/.exec(said)![0];
    expect(refresh).toBe(`argocd app get ${twin.name} --refresh`);
    const apps = `application -n ${ns} -l app.kubernetes.io/part-of=${twin.name}`;
    const takeDown = [
      /kubectl delete application [^)]*--wait=false/, /kubectl annotate application [^)]*deletion-approved=\$\(date [^)]*\)/,
      /kubectl wait --for=delete [^)]*/, /kubectl delete appproject [^)]*/,
    ].map((re) => ({ at: said.search(re), line: re.exec(said)?.[0] }));
    expect(takeDown.map((c) => c.line)).toEqual([
      `kubectl delete ${apps} --wait=false`,
      `kubectl annotate application -n ${ns} ${twin.name}-tenants --overwrite argocd.argoproj.io/deletion-approved=$(date -u +%Y-%m-%dT%H:%M:%SZ)`,
      `kubectl wait --for=delete ${apps} --timeout=10m`,
      `kubectl delete appproject -n ${ns} ${twin.name}`,
    ]);
    expect(takeDown.map((c) => c.at), 'printed in the order to run them').toEqual([...takeDown.map((c) => c.at)].sort((a, b) => a - b));
    const sha = await twin.push(`drop the cluster ${twin.name}`);
    const t0 = Date.now();

    // at once on a refresh: the ComparisonError, sync status Unknown, at the new commit
    const shown = await poll(async () => {
      const run = await operatorShell(refresh);
      const root = await live(`/apis/argoproj.io/v1alpha1/namespaces/${ns}/applications/${twin.name}`) as Json | undefined;
      return { run, root };
    }, ({ run, root }) => run.code === 0 && /ComparisonError/.test(run.output) && /app path does not exist/.test(run.output) && root?.status?.sync?.status === 'Unknown', 3 * 60_000, 5000);
    console.log(`${twin.name}: dropped, ${((Date.now() - t0) / 1000).toFixed(1)} s after the push (${sha.slice(0, 7)}): ${shown.run.output.split('\n').filter((l) => /ComparisonError|Sync Status/.test(l)).join(' | ')}`);
    expect(shown.run.output).toMatch(/ComparisonError/);
    expect(shown.run.output).toMatch(/app path does not exist/);
    expect((shown.root?.status as Json | undefined)?.sync?.status).toBe('Unknown');
    // nothing pruned: the child Applications keep the last commit the root gave them
    expect(await live(cq)).toBeDefined();
    for (const s of twin.watch.states().filter((x) => x.name !== twin.name)) expect(s.targetRevision, s.name).toBe(pushed);

    // the take-down, as printed, in its order; each line returns (the wait within its own bound)
    const client = twin.cp.client();
    // an object of a kind the twin does not serve (a sample's) is not there
    const isLive = async (o: (typeof before)[number]) => (await client.read(o.manifest as any).catch(() => undefined)) !== undefined;
    const liveBefore = (await Promise.all(before.map(async (o) => ((await isLive(o)) ? o : undefined)))).filter((o) => o !== undefined);
    const t1 = Date.now();
    for (const { line } of takeDown) {
      const run = await operatorShell(line!);
      if (run.code !== 0) {
        const left = (await client.list(`/apis/argoproj.io/v1alpha1/namespaces/${ns}/applications`)).map((a: Json) => `${a.metadata.name}${a.metadata.deletionTimestamp ? ' (deleting)' : ''}`);
        console.log(`${twin.name}: the Applications left: ${left.join(', ')}\n${await kueueFinalizers()}`);
      }
      expect(run.code, `${line}\n${run.output}`).toBe(0);
    }
    console.log(`${twin.name}: taken down in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    expect((await client.list(`/apis/argoproj.io/v1alpha1/namespaces/${ns}/applications`)).map((a: Json) => a.metadata.name)).toEqual([]);
    // what is left: what says Delete=false, the CRDs and the argocd folder's (its Application has no resources finalizer)
    const keeps = (o: (typeof before)[number]) => o.file.split('/')[1] === 'argocd' || definedKind(o.manifest) !== undefined
      || syncOptionValue(ownSyncOptions(o.manifest), 'Delete') === 'false';
    const left = (await Promise.all(liveBefore.map(async (o) => ((await isLive(o)) ? objectId(o.manifest) : undefined))))
      .filter((x) => x !== undefined);
    expect(left.sort()).toEqual(liveBefore.filter(keeps).map((o) => objectId(o.manifest)).sort());
    expect(liveBefore.filter((o) => !keeps(o)).map((o) => objectId(o.manifest))).toEqual(expect.arrayContaining(['/Namespace/research', 'kueue.x-k8s.io/ClusterQueue/research']));
  }, 20 * 60_000);
});

/** The kueue.x-k8s.io objects still there with a finalizer, one line each. */
async function kueueFinalizers(): Promise<string> {
  const client = twin.cp.client();
  const lines: string[] = [];
  for (const plural of ['clusterqueues', 'resourceflavors', 'workloads', 'localqueues']) {
    for (const o of await client.list(`/apis/kueue.x-k8s.io/v1beta2/${plural}`)) {
      const m = (o as { metadata: { name: string; namespace?: string; finalizers?: string[]; deletionTimestamp?: string } }).metadata;
      if ((m.finalizers ?? []).length > 0) lines.push(`${plural} ${m.namespace ? `${m.namespace}/` : ''}${m.name}: ${m.finalizers!.join(', ')}${m.deletionTimestamp ? ' (deleting)' : ''}`);
    }
  }
  return lines.join('\n');
}
