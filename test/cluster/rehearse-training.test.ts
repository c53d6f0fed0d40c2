import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ROOT, TRAINING_FILE } from '../paths';
import { leftIn, processesUnder, rehearsals, shown } from './rehearsal';

/**
 * The training example rehearsed as users run it (./rehearsal.ts): every add-on managed by Argo CD, a managed Kueue.
 * A file of its own beside rehearse.test.ts, so that vitest runs it beside the reference cluster's rehearsals (it
 * spreads files, not tests, over its workers).
 */

const { rehearse, userRepo } = rehearsals();

describe('rehearse on the twin', () => {
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
    console.log(shown(r, 'training-cluster'));
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
});
