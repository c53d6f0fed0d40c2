import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { NODE_LABELS } from '../../src/model/names';
import { loadModels } from '../../src/synth/pipeline';
import { twinNodes } from '../../src/twin/twin-cluster';
import { REFERENCE_FILE, ROOT } from '../paths';
import { leftIn, processesUnder, rehearsals, type Run, sha, shown } from './rehearsal';

/**
 * `rehearse` as users run it (./rehearsal.ts): the reference cluster's bootstrap converges on the twin, and its change
 * mode reports what a change does; a rehearsal out of time and one stopped by Ctrl-C (SIGINT) or kill -9 end with every
 * process they started and their scratch folder gone. The training example rehearses in rehearse-training.test.ts.
 */

const { work, rehearse, userRepo } = rehearsals();

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

describe('rehearse on the twin', () => {
  it('the reference cluster: every Application Synced and Healthy, the timeline printed, exit 0; nothing left behind, the description untouched', async () => {
    const before = sha(REFERENCE_FILE);
    const dist = () => spawnSync('git', ['status', '--porcelain', '--', 'dist', 'src/clusters', 'test/fixtures'], { cwd: ROOT, encoding: 'utf8' }).stdout;
    const distBefore = dist();
    const r = await rehearse(['--config', REFERENCE_FILE]);
    console.log(shown(r, 'instant-cluster'));
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
    console.log(shown(r, 'instant-cluster'));
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
    console.log(shown(r, 'instant-cluster'));
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
    console.log(shown(r, 'instant-cluster'));
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
    console.log(shown(r, 'instant-cluster'));
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
