import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli';
import { Progress, ProgressOptions, ProgressSink } from '../../src/commands/progress';
import { LISTED_CLUSTERS, synthSummary } from '../../src/commands/synth-summary';
import { readSnapshot } from '../../src/preflight/snapshot';
import { ClusterSummary, SynthResult } from '../../src/synth/pipeline';
import { HAS_SCHEMAS, HAS_UPSTREAM, REFERENCE_FILE, ROOT, TRAINING_FILE } from '../helpers';
import { kubeconfigFor, serveState } from '../preflight/api-server';
import { SNAPSHOT } from '../preflight/snapshots';

/** A CRD of the synthetic pair test/upgrade compares. */
const PAIR_OLD = path.join(ROOT, 'test', 'fixtures', 'upgrade', 'crd-pair', 'old');

/** A progress sink that records what is written, on a clock the test moves. */
function sink(isTTY: boolean, timing: Omit<ProgressOptions, 'clock'> = {}) {
  let now = 0;
  const written: string[] = [];
  const s: ProgressSink = { isTTY, write: (t) => written.push(t), timing: { ...timing, clock: () => now } };
  return { sink: s, written, at: (ms: number) => { now = ms; } };
}

describe('progress of long work', () => {
  it('on a terminal: nothing in the first second, then one line redrawn in place at most every 100 ms, cleared at the end', () => {
    const t = sink(true);
    const p = new Progress(t.sink, 'synth', 'clusters rendered, checked and written');
    t.at(500);
    p.update(1, 1000, 'cluster-0001');
    expect(t.written).toEqual([]);
    t.at(1000);
    p.update(120, 1000, 'cluster-0120');
    t.at(1050);
    p.update(121, 1000, 'cluster-0121');
    t.at(1100);
    p.update(122, 1000, 'cluster-0122');
    p.update(1000, 1000, 'cluster-1000');
    p.end();
    expect(t.written).toEqual([
      '\r\x1b[Ksynth: 120/1000 clusters rendered, checked and written (cluster-0120, 12%, 1 s)',
      '\r\x1b[Ksynth: 122/1000 clusters rendered, checked and written (cluster-0122, 12%, 1 s)',
      '\r\x1b[K',
    ]);
  });

  it('without a terminal (a CI log, a pipe): nothing at all', () => {
    const t = sink(false);
    const p = new Progress(t.sink, 'synth', 'clusters');
    for (let i = 1; i <= 100; i++) {
      t.at(i * 120);
      p.update(i, 100, `c${i}`);
    }
    p.activity('rendering');
    p.end();
    expect(t.written).toEqual([]);
  });

  it('what the work is doing: drawn at once past the first second, then redrawn with the time while it waits, cleared at the end', async () => {
    const t = sink(true, { tickMs: 5 });
    const p = new Progress(t.sink, 'check');
    p.activity('rendering the Applications of lab');
    expect(t.written).toEqual([]);
    t.at(2000);
    p.activity('rendering the Applications of lab');
    expect(t.written).toEqual(['\r\x1b[Kcheck: rendering the Applications of lab (2 s)']);
    t.at(3000);
    await new Promise((r) => setTimeout(r, 40));
    expect(t.written.at(-1)).toBe('\r\x1b[Kcheck: rendering the Applications of lab (3 s)');
    p.end();
    const n = t.written.length;
    await new Promise((r) => setTimeout(r, 40));
    expect(t.written.slice(n - 1)).toEqual(['\r\x1b[K']);
  });

  it('synth reports each cluster to the progress sink, and nothing with --quiet', () => {
    const runs = [[], ['--quiet']].map((extra) => {
      const t = sink(true, { delayMs: 0, redrawMs: 0 });
      const out = mkdtempSync(path.join(tmpdir(), 'progress-'));
      const lines: string[] = [];
      const code = main(['synth', '--config', REFERENCE_FILE, '--config', TRAINING_FILE, '--out', out, '--no-validate', ...extra],
        { out: (l) => lines.push(l), err: (l) => lines.push(l), progress: t.sink });
      expect(code).toBe(0);
      return t.written;
    });
    expect(runs[0]).toEqual([expect.stringMatching(/^\r\x1b\[Ksynth: 1\/2 clusters rendered, checked and written \(instant-cluster, 50%/), '\r\x1b[K']);
    expect(runs[1]).toEqual([]);
  }, 120_000);
});

describe.skipIf(!HAS_SCHEMAS || !HAS_UPSTREAM)('progress of every command that takes seconds, on a terminal', () => {
  const run = async (argv: string[]) => {
    const t = sink(true, { delayMs: 0, redrawMs: 0 });
    const lines: string[] = [];
    const code = await main(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l), progress: t.sink });
    return { code, written: t.written, lines };
  };

  it('check: what it renders and how many folders it checked; preflight and init: the live read; upgrade-plan: what it compares', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'progress-check-'));
    expect(main(['synth', '--config', REFERENCE_FILE, '--out', out, '--quiet'])).toBe(0);
    const check = await run(['check', path.join(out, 'instant-cluster'), '--config', REFERENCE_FILE]);
    expect(check.code, check.lines.join('\n')).toBe(0);
    expect(check.written[0]).toMatch(/^\r\x1b\[Kcheck: rendering the Applications of instant-cluster with helm and kustomize \(0\/1 folders checked\) \(\d+ s\)$/);
    expect(check.written.at(-1)).toBe('\r\x1b[K');
    const server = await serveState(readSnapshot(SNAPSHOT));
    try {
      const kubeconfig = path.join(out, 'kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(server.url));
      for (const argv of [['preflight', '--config', REFERENCE_FILE], ['init', '--out', '-']]) {
        const r = await run([...argv, '--kubeconfig', kubeconfig]);
        // the line, redrawn each second while the read waits, then cleared
        expect(r.written.at(-1), argv[0]).toBe('\r\x1b[K');
        for (const w of r.written.slice(0, -1)) expect(w, argv[0]).toMatch(new RegExp(`^\r\x1b\\[K${argv[0]}: reading the cluster \\(GET requests only\\) \\(\\d+ s\\)$`));
        expect(r.written.length, argv[0]).toBeGreaterThan(1);
        expect((await run([...argv, '--kubeconfig', kubeconfig, '--quiet'])).written, argv[0]).toEqual([]);
      }
    } finally {
      await server.close();
    }
    const plan = await run(['upgrade-plan', '--from-crds', PAIR_OLD, '--to-crds', PAIR_OLD]);
    expect(plan.written).toEqual(['\r\x1b[Kupgrade-plan: comparing the CRDs (0 s)', '\r\x1b[K']);
  }, 180_000);
});

describe('the synth summary', () => {
  const folders: ClusterSummary['folders'] = [
    { folder: 'kueue', objects: 11, kinds: { ClusterQueue: 3, LocalQueue: 1, PriorityClass: 3, ResourceFlavor: 1, WorkloadPriorityClass: 3 } },
    { folder: 'gitops', objects: 12, kinds: { AppProject: 1, Application: 11 } },
  ];
  const fleetOf = (n: number): SynthResult => {
    const clusters: ClusterSummary[] = Array.from({ length: n }, (_, i) => ({ name: `cluster-${String(i + 1).padStart(4, '0')}`, objects: 23, folders }));
    return {
      clusters,
      fleet: { name: 'fleet', objects: 2, folders: [{ folder: 'fleet', objects: 2, kinds: { AppProject: 1, ApplicationSet: 1 } }] },
      files: n * 25 + 3,
      warnings: [],
      findings: [],
      sources: [],
      deleted: [],
      out: path.resolve('dist'),
      written: [path.resolve('dist')],
      changed: [...clusters.map((c) => c.name).slice(0, n - 1), 'fleet', 'gone-cluster'],
      rendered: clusters.map((c) => c.name),
      timings: { load: 1000, render: 2000, validate: 3000, write: 4000, total: 10_000 },
    };
  };

  it('stays the same size for a thousand clusters: counts, the fleet folder, objects per folder over all clusters', () => {
    const lines = synthSummary(fleetOf(1000), process.cwd());
    expect(lines).toEqual([
      '1000 clusters: 23000 objects (23 to 23 per cluster)',
      'fleet/: 2 objects (AppProject 1, ApplicationSet 1) registering 1000 clusters with the hub\'s Argo CD',
      'objects per component folder and kind, over the 1000 clusters:',
      '  kueue              11000  ClusterQueue 3000, LocalQueue 1000, PriorityClass 3000, ResourceFlavor 1000, WorkloadPriorityClass 3000',
      '  gitops             12000  AppProject 1000, Application 11000',
      'wrote 25003 files to dist: 1000 cluster folders and fleet/ (1000 replaced, 1 removed, 1 unchanged) in 10.00 s (load 1.00 s, render 2.00 s, validate 3.00 s, write 4.00 s)',
    ]);
  });

  it('the first synth into no output folder says its folders are new, not replaced', () => {
    const r = fleetOf(2);
    expect(synthSummary({ ...r, changed: ['cluster-0001', 'cluster-0002', 'fleet'], created: ['cluster-0001', 'cluster-0002', 'fleet'] }).at(-1))
      .toMatch(/^wrote 53 files to dist: 2 cluster folders and fleet\/ \(3 new\) in /);
    // a cluster added beside one replaced and one unchanged
    expect(synthSummary({ ...r, changed: ['cluster-0002', 'fleet'], created: ['cluster-0002'] }).at(-1))
      .toMatch(/^wrote 53 files to dist: 2 cluster folders and fleet\/ \(1 new, 1 replaced, 1 unchanged\) in /);
  });

  it(`names each cluster up to ${LISTED_CLUSTERS}; an unchanged output says so`, () => {
    const r = { ...fleetOf(2), changed: [] };
    const lines = synthSummary(r, process.cwd());
    expect(lines.slice(0, 2)).toEqual(['cluster-0001: 23 objects in 2 folders', 'cluster-0002: 23 objects in 2 folders']);
    expect(lines.at(-1)).toMatch(/^dist already up to date \(53 files in 2 cluster folders and fleet\/, nothing rewritten\) in 10\.00 s/);
  });
});
