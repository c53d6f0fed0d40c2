import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { NODE_LABELS } from '../../src/model/names';
import { loadModels } from '../../src/synth/pipeline';
import { twinBinaries } from '../../src/twin/binary';
import { twinNodes } from '../../src/twin/twin-cluster';
import { ROOT } from '../helpers';
import { REFERENCE_FILE, TRAINING_FILE } from '../paths';

/**
 * `rehearse` as users run it (the compiled CLI in a process of its own, its output not a terminal): the reference
 * cluster's bootstrap converges on the twin; a rehearsal out of time and one stopped by Ctrl-C (SIGINT) end with
 * every process they started and their scratch folder gone. Each child gets a TMPDIR of its own (where the rehearsal
 * makes its scratch folder), so what it leaves is found there, and its processes by that path in their command lines.
 */

const BIN = path.join(ROOT, 'lib', 'src', 'bin.js');
const work = mkdtempSync(path.join(tmpdir(), 'rehearse-test-'));

beforeAll(async () => {
  // the binaries first (built once per machine, as rehearse would): without Go every test here fails on this one line
  await twinBinaries();
}, 60 * 60 * 1000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The TMPDIR the child had. */
  readonly tmp: string;
}

/** Runs `rehearse ARGS` in a child with a TMPDIR of its own; `interrupt` is called with the child and its stderr so far as lines arrive. */
function rehearse(args: readonly string[], interrupt?: (child: ReturnType<typeof spawn>, stderr: string) => void, tmp = mkdtempSync(path.join(work, 'tmp-'))): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'rehearse', ...args], { cwd: ROOT, env: { ...process.env, TMPDIR: tmp, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      interrupt?.(child, stderr);
    });
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, tmp }));
  });
}

/** Runs the reference cluster's rehearsal and sends `signal` once it says Argo CD syncs; answers the run and whether it was sent. */
async function interruptedWhileSyncing(signal: NodeJS.Signals): Promise<Run & { sent: boolean }> {
  let sent = false;
  const r = await rehearse(['--config', REFERENCE_FILE], (child, stderr) => {
    if (!sent && /: every Application of instant-cluster syncing/.test(stderr)) {
      sent = true;
      child.kill(signal);
    }
  });
  return { ...r, sent };
}

/** Processes whose command line names `dir` (the twin's processes name their folders under the child's TMPDIR). */
function processesUnder(dir: string): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout.split('\n').filter((l) => l.includes(dir) && !l.includes(' ps -eo'));
}

/** What the child left in its TMPDIR. */
const leftIn = (dir: string) => readdirSync(dir);

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** A user's clusters repository: the description `committed` (as `name`), then changed by `change` in the working tree. */
function userRepo(committed: string, change: (d: Record<string, any>) => void, name = path.basename(REFERENCE_FILE)) {
  const repo = mkdtempSync(path.join(work, 'repo-'));
  const git = (...args: string[]) => spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: repo, encoding: 'utf8' });
  git('init', '-q', '-b', 'main');
  mkdirSync(path.join(repo, 'clusters'));
  const file = path.join(repo, 'clusters', name);
  writeFileSync(file, committed);
  git('add', '.');
  expect(git('commit', '-q', '-m', 'lab').status).toBe(0);
  const d = parse(committed) as Record<string, any>;
  change(d);
  writeFileSync(file, stringify(d));
  return { file, git };
}

describe('rehearse on the twin', () => {
  it('the reference cluster: every Application Synced and Healthy, the timeline printed, exit 0; nothing left behind, the description untouched', async () => {
    const before = sha(REFERENCE_FILE);
    const dist = () => spawnSync('git', ['status', '--porcelain', '--', 'dist', 'src/clusters', 'test/fixtures'], { cwd: ROOT, encoding: 'utf8' }).stdout;
    const distBefore = dist();
    const r = await rehearse(['--config', REFERENCE_FILE]);
    console.log(`${r.stderr.split('\n').filter((l) => !/: (instant-cluster[\w-]*) \(wave/.test(l)).join('\n')}\n${r.stdout}`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\| Application +\| wave \| Synced at \| Healthy at \|$/m);
    for (const app of ['instant-cluster', 'instant-cluster-kueue', 'instant-cluster-gpu-operator', 'instant-cluster-tenants']) {
      expect(r.stdout).toMatch(new RegExp(`^\\| ${app} +\\| \\d +\\| [\\d.]+ s +\\| [\\d.]+ s +\\|$`, 'm'));
    }
    expect(r.stdout).toMatch(/^instant-cluster: every Application \(\d+\) Synced and Healthy \d+ s after the root's apply/m);
    // progress without a terminal: plain lines, each Application's sync and health as it changes
    expect(r.stderr).toMatch(/^rehearse: \d+ s: instant-cluster-kueue \(wave 1\): Synced, Healthy$/m);
    expect(r.stderr).not.toMatch(/\x1b\[/);
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
    expect(sha(REFERENCE_FILE)).toBe(before);
    expect(dist()).toBe(distBefore);
  }, 20 * 60 * 1000);

  it('the training example (every add-on managed, a managed Kueue): its bootstrap rehearses green, wave after wave, and a change on top runs on its managed Kueue: the samples in a tenant\'s namespace submitted, Kueue\'s decision on each reported, the tenant\'s quota cut synced', async () => {
    // one rehearsal for both (CI time): the bootstrap of REV is the example's "rehearse green", the change on top is
    // change mode on a managed Kueue. REV places the samples in the tenant research's namespace (samples.namespace);
    // the working tree cuts research's GPU quota below what the NCCL test asks (two workers of 8 GPUs)
    const committed = parse(readFileSync(TRAINING_FILE, 'utf8')) as Record<string, any>;
    committed.samples = { ...committed.samples, namespace: 'research' };
    const research = (committed.tenants as { name: string; gpus: number }[]).find((t) => t.name === 'research')!;
    const { file } = userRepo(stringify(committed), (c) => {
      c.tenants = c.tenants.map((t: { name: string; gpus: number }) => (t.name === 'research' ? { ...t, gpus: 8 } : t));
    }, path.basename(TRAINING_FILE));
    expect(research.gpus).toBeGreaterThan(8);
    const r = await rehearse(['--config', file, '--from', 'HEAD', '--verbose']);
    console.log(`${r.stderr.split('\n').filter((l) => !/: (training-cluster[\w-]*) \(wave/.test(l)).join('\n')}\n${r.stdout}`);
    expect(r.code, r.stderr).toBe(0);
    // the bootstrap: every Application the render lists (the root's folder), each Synced and Healthy in the timeline
    const gitops = path.join(ROOT, 'dist', 'training-cluster', 'gitops');
    const listed = (parse(readFileSync(path.join(gitops, 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources.filter((f) => f.startsWith('application.'));
    const names = ['training-cluster', ...listed.map((f) => (parse(readFileSync(path.join(gitops, f), 'utf8')) as { metadata: { name: string } }).metadata.name)];
    const bootstrap = r.stdout.slice(r.stdout.indexOf('training-cluster: the bootstrap of HEAD:clusters/'), r.stdout.indexOf('training-cluster: the change from HEAD:clusters/'));
    expect(bootstrap).toMatch(new RegExp(`^training-cluster: every Application \\(${names.length}\\) Synced and Healthy \\d+ s after the root's apply`, 'm'));
    const rows = new Map([...bootstrap.matchAll(/^\| ([\w-]+) +\| (-?\d+) +\| ([\d.]+) s +\| ([\d.]+) s +\|$/gm)]
      .map((m) => [m[1], { wave: Number(m[2]), synced: Number(m[3]), healthy: Number(m[4]) }]));
    expect([...rows.keys()].sort()).toEqual([...names].sort());
    // every managed install compared and converged at its own release (the chart and Git mirrors on loopback); the
    // Network Operator's in wave 1, after the GPU Operator's (its NodeFeatureRule needs NFD's CRD)
    for (const install of ['dynamo-platform', 'gpu-operator', 'kueue', 'mpi-operator', 'training-operator']) expect(rows.get(`training-cluster-${install}-install`)?.wave, install).toBe(0);
    expect(rows.get('training-cluster-network-operator-install')?.wave).toBe(1);
    // wave order: an Application of a later wave synced only once every one of an earlier wave was Healthy
    const children = [...rows].filter(([n]) => n !== 'training-cluster');
    for (const [a, ra] of children) {
      for (const [b, rb] of children) if (rb.wave > ra.wave) expect(rb.synced, `${b} (wave ${rb.wave}) synced before ${a} (wave ${ra.wave}) was Healthy`).toBeGreaterThanOrEqual(ra.healthy);
    }
    // the change: the samples submitted in research's namespace, each decided by Kueue (admitted, or pending with the
    // reason its scheduler gives) and each reported; research's ClusterQueue (the kueue folder) synced
    const report = r.stdout.slice(r.stdout.indexOf('training-cluster: the change from HEAD:clusters/'));
    // the NCCL test decided by Kueue; the PyTorchJob too, or named with why the API server refused it (the Training
    // Operator's own webhook has no controller behind it on the twin)
    expect(report).toMatch(/^jobs: [12] sample job\(s\) Kueue queues: [^;]+(; 1 not submitted)?$/m);
    expect(report).toMatch(/^ {2}MPIJob research\/nccl-all-reduce: [^:]+: (admitted by ClusterQueue research|pending \(\w+)/m);
    expect(report).toMatch(/^ {2}PyTorchJob research\/pytorch-ddp: ([^:]+: (admitted by ClusterQueue research|pending \(\w+)|not submitted: .+)/m);
    expect(report).not.toMatch(/not decided by Kueue|no Workload/);
    expect(report).toMatch(/^ {2}wave \d+: training-cluster-kueue: Synced [\d.]+ s, Healthy [\d.]+ s after the push$/m);
    expect(r.stdout).toMatch(new RegExp(`^training-cluster: the change converged: every Application \\(${names.length}\\) Synced and Healthy at [0-9a-f]{12} \\d+ s after the push`, 'm'));
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
  }, 45 * 60 * 1000);

  it('out of time (--timeout 1): exit 1 with one line saying what was under way; every process stopped, the scratch folder gone', async () => {
    const r = await rehearse(['--config', REFERENCE_FILE, '--timeout', '1']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^rehearse: out of time \(--timeout 1 s\) while starting the twin \(at: .+\)$/m);
    expect(r.stderr).not.toMatch(/^\s+at /m);
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
  }, 10 * 60 * 1000);

  it('Ctrl-C (SIGINT) while Argo CD syncs: exit 130, no process and no folder left behind', async () => {
    const r = await interruptedWhileSyncing('SIGINT');
    expect(r.sent, r.stderr).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toMatch(/^rehearse: SIGINT: stopping the twin$/m);
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
  }, 20 * 60 * 1000);

  it('change mode (--from HEAD): a new device plugin env rolls its DaemonSet on every GPU worker, said first; the change converges, exit 0', async () => {
    const d = parse(readFileSync(REFERENCE_FILE, 'utf8')) as Record<string, any>;
    const { file, git } = userRepo(readFileSync(REFERENCE_FILE, 'utf8'), (c) => {
      c.gpuOperator = { ...c.gpuOperator, devicePluginEnv: [...(c.gpuOperator?.devicePluginEnv ?? []), { name: 'PASS_DEVICE_SPECS', value: 'true' }] };
    });
    const before = sha(file);
    // two converged states in one run: twice the bootstrap's time, on a shared machine
    const r = await rehearse(['--config', file, '--from', 'HEAD', '--timeout', '1800']);
    console.log(`${r.stderr.split('\n').filter((l) => !/: (instant-cluster[\w-]*) \(wave/.test(l)).join('\n')}\n${r.stdout}`);
    expect(r.code, r.stderr).toBe(0);
    const workers = (d.nodes.gpuWorkers.count as number);
    const report = r.stdout.slice(r.stdout.indexOf('the change from HEAD:clusters/'));
    // the DaemonSet roll on the GPU workers is the first line of the change's report
    expect(report.split('\n')[1]).toMatch(new RegExp(`^pods: GPU workers: DaemonSet gpu-operator/nvidia-device-plugin-daemonset rolled on ${workers} of ${workers} \\(`));
    expect(report).toMatch(/^ {2}wave \d+: instant-cluster-gpu-operator: Synced [\d.]+ s, Healthy [\d.]+ s after the push$/m);
    expect(report).not.toMatch(/^ {2}wave \d+: instant-cluster-kueue:/m);
    expect(report).toMatch(/^pruned: nothing$/m);
    expect(r.stdout).toMatch(/^instant-cluster: the change converged: every Application \(\d+\) Synced and Healthy at [0-9a-f]{12} \d+ s after the push/m);
    expect(sha(file)).toBe(before);
    expect(git('status', '--porcelain').stdout).toBe(' M clusters/instant-cluster.yaml\n');
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
  }, 25 * 60 * 1000);

  it('change mode: a tenant\'s GPU quota raised takes the default queue\'s GPUs below what its admitted sample job uses: Kueue keeps the job admitted over the new quota (it evicts nothing), and the report says so', async () => {
    // the reference cluster: the samples queue to the default ClusterQueue, which holds the GPUs no tenant does; the
    // NCCL test (two workers of 8 GPUs) is admitted there, borrowing from the cohort. The change gives research the
    // default queue's GPUs. (A cut of a tenant's own quota under its samples, samples.namespace at that tenant, is not
    // rehearsed here: such a description renders and checks clean, test/samples/samples.test.ts.)
    const d = parse(readFileSync(REFERENCE_FILE, 'utf8')) as Record<string, any>;
    const total = (d.nodes.gpuWorkers.count as number) * (d.nodes.gpuWorkers.gpusPerNode as number);
    const defaultQuota = (tenants: { gpus: number }[]) => total - tenants.reduce((n, t) => n + t.gpus, 0);
    const before = defaultQuota(d.tenants);
    expect(before).toBeGreaterThan(0);
    const { file } = userRepo(readFileSync(REFERENCE_FILE, 'utf8'), (c) => {
      c.tenants = c.tenants.map((t: { name: string; gpus: number }) => (t.name === 'research' ? { ...t, gpus: t.gpus + before } : t));
    });
    const after = defaultQuota((parse(readFileSync(file, 'utf8')) as Record<string, any>).tenants);
    const r = await rehearse(['--config', file, '--from', 'HEAD', '--timeout', '1800', '--verbose']);
    console.log(`${r.stderr.split('\n').filter((l) => !/: (instant-cluster[\w-]*) \(wave/.test(l)).join('\n')}\n${r.stdout}`);
    expect(r.code, r.stderr).toBe(0);
    const report = r.stdout.slice(r.stdout.indexOf('the change from HEAD:clusters/'));
    // real Kueue (its integration test "Should not evict admitted workloads when nominal quota is reduced below usage"):
    // a quota cut evicts nothing; the job keeps its GPUs, borrowed from the cohort, until it ends or a lender reclaims them
    // the job borrows its GPUs, and whatever else of the queue's covered resources it holds over the quota (its CPUs,
    // memory, RDMA devices: each named with its flavor)
    expect(report).toMatch(/^jobs: 1 sample job\(s\) Kueue queues: 1 stays admitted \(1 over its ClusterQueue's nominal ([^ ,]+, )*GPU(, [^ ,]+)* quota after the change\)$/m);
    const admitted = (quota: number) => `admitted by ClusterQueue default with ${total} GPU\\(s\\) \\(its nominal quota ${quota}: over it(; [^;()]+)*, borrowing from the cohort\\)`;
    expect(report).toMatch(new RegExp(`^  MPIJob default/nccl-all-reduce: stays admitted: ${admitted(before)} -> ${admitted(after)}$`, 'm'));
    expect(report).toMatch(/^ {2}wave \d+: instant-cluster-kueue: Synced [\d.]+ s, Healthy [\d.]+ s after the push$/m);
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
  }, 25 * 60 * 1000);

  it('change mode: the default queue held and drained (queueing.defaultStopPolicy: HoldAndDrain): Kueue evicts its admitted sample job, the report says so, and the change converges with the queue held on purpose', async () => {
    // real Kueue evicts the admitted workloads of a ClusterQueue whose stopPolicy is HoldAndDrain (Hold only stops new
    // admissions); the held queue is Suspended in Argo CD, and its Application settled, not stuck
    const d = parse(readFileSync(REFERENCE_FILE, 'utf8')) as Record<string, any>;
    const total = (d.nodes.gpuWorkers.count as number) * (d.nodes.gpuWorkers.gpusPerNode as number);
    const { file } = userRepo(readFileSync(REFERENCE_FILE, 'utf8'), (c) => {
      c.queueing = { ...c.queueing, defaultStopPolicy: 'HoldAndDrain' };
    });
    const r = await rehearse(['--config', file, '--from', 'HEAD', '--timeout', '1800', '--verbose']);
    console.log(`${r.stderr.split('\n').filter((l) => !/: (instant-cluster[\w-]*) \(wave/.test(l)).join('\n')}\n${r.stdout}`);
    expect(r.code, r.stderr).toBe(0);
    const report = r.stdout.slice(r.stdout.indexOf('the change from HEAD:clusters/'));
    expect(report).toMatch(/^jobs: 1 sample job\(s\) Kueue queues: 1 evicted(, pending again)?$/m);
    expect(report).toMatch(new RegExp(`^  MPIJob default/nccl-all-reduce: evicted(, pending again)?: admitted by ClusterQueue default with ${total} GPU\\(s\\).* -> (evicted|pending) \\(`, 'm'));
    expect(r.stdout).toMatch(/^instant-cluster: the change converged: every Application \(\d+\) Synced and Healthy \(or Suspended, held on purpose as the description says: [^)]*instant-cluster-kueue/m);
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
  }, 25 * 60 * 1000);

  it('a ClusterPolicy that can never become ready (--snapshot: GPU workers without the NVIDIA PCI label the GPU Operator finds GPU nodes by): exit 1 naming the gpu-operator Application and the health check\'s message; nothing left behind', async () => {
    // the cluster's Nodes as `kubectl get nodes -o yaml` shows them: the reference cluster's, but Node Feature
    // Discovery's NVIDIA PCI label on no worker (no NFD runs on the twin to add it), so the operator finds no GPU node
    const nodes = twinNodes(loadModels([REFERENCE_FILE])[0]).map(({ node }) => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: node.metadata.name,
        labels: Object.fromEntries(Object.entries(node.metadata.labels ?? {}).filter(([k]) => k !== NODE_LABELS.nvidiaPci)),
      },
      spec: node.spec,
      status: { capacity: node.status?.capacity, allocatable: node.status?.capacity },
    }));
    expect(nodes.filter((n) => n.status.allocatable?.['nvidia.com/gpu'] !== undefined).length).toBeGreaterThan(0);
    const snapshot = path.join(work, 'no-nvidia-pci.nodes.yaml');
    writeFileSync(snapshot, stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
    // the root waits on the stuck Application for gitops.waveWait only (then the later waves run, and the rehearsal
    // ends once the root's sync succeeded past it): a short one here, long enough for the GPU Operator stand-in to write
    // the ClusterPolicy's status on a loaded machine (at load 27 it had not after 1m); --timeout is only the backstop
    const d = parse(readFileSync(REFERENCE_FILE, 'utf8')) as Record<string, any>;
    d.gitops = { ...d.gitops, waveWait: '3m' };
    const file = path.join(mkdtempSync(path.join(work, 'desc-')), path.basename(REFERENCE_FILE));
    writeFileSync(file, stringify(d));
    const r = await rehearse(['--config', file, '--snapshot', snapshot, '--timeout', '1080']);
    console.log(`${r.stderr.split('\n').filter((l) => !/: (instant-cluster[\w-]*) \(wave/.test(l)).join('\n')}\n${r.stdout}`);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^rehearse: not converged: instant-cluster-gpu-operator \(wave \d+\): \w+ at [0-9a-f]{7}, Progressing.*ClusterPolicy cluster-policy: \w+, Progressing \(No GPU node found, watching for new nodes to join the cluster\.\)/m);
    // only what waits on it: every other Application converges
    expect(r.stderr.split('\n').filter((l) => l.startsWith('rehearse: not converged: '))).toHaveLength(1);
    expect(r.stderr).toMatch(/^rehearse: instant-cluster: the bootstrap: the root's sync succeeded past each Application above: not Healthy within gitops\.waveWait \(3m\), the longest its waves wait$/m);
    expect(r.stderr).not.toMatch(/^\s+at /m);
    expect(leftIn(r.tmp)).toEqual([]);
    expect(processesUnder(r.tmp)).toEqual([]);
  }, 20 * 60 * 1000);

  it('kill -9 while Argo CD syncs: no process outlives it; the scratch folder it could not remove goes with the next rehearsal, and nothing else', async () => {
    const killed = await interruptedWhileSyncing('SIGKILL');
    expect(killed.sent, killed.stderr).toBe(true);
    expect(killed.signal).toBe('SIGKILL');
    // its children die with it (the kernel's parent-death signal), within moments
    for (let i = 0; i < 30 && processesUnder(killed.tmp).length > 0; i++) await new Promise((r) => setTimeout(r, 1000));
    expect(processesUnder(killed.tmp)).toEqual([]);
    const [left, ...more] = leftIn(killed.tmp);
    expect(more).toEqual([]);
    expect(left).toMatch(/^gpu-cluster-manifests-rehearse-\d+-[A-Za-z0-9]{6}$/);
    // beside it, what the rehearsal did not make: a folder of the same pattern without its owner file, one of a live process
    const notMade = `gpu-cluster-manifests-rehearse-${killed.tmp.length}1-NoOwnr`;
    mkdirSync(path.join(killed.tmp, notMade));
    const live = `gpu-cluster-manifests-rehearse-${process.pid}-Alive1`;
    mkdirSync(path.join(killed.tmp, live));
    writeFileSync(path.join(killed.tmp, live, '.gpu-cluster-manifests-scratch'), `${process.pid}\n`);
    // the next rehearsal in the same temporary folder (out of time at once: it only makes and removes its own folder)
    const next = await rehearse(['--config', REFERENCE_FILE, '--timeout', '1'], undefined, killed.tmp);
    expect(next.code, next.stderr).toBe(1);
    expect(leftIn(killed.tmp).sort()).toEqual([live, notMade].sort());
    expect(processesUnder(killed.tmp)).toEqual([]);
  }, 20 * 60 * 1000);
});
