import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { FAULT_ENV, FAULT_TRACE_ENV } from '../../src/fault';
import { isWriteArtifact, JOURNAL_FILE, LOCK_FILE, LOCK_WAIT_ENV, recoverOutput } from '../../src/render/write';
import { synth } from '../../src/synth/pipeline';
import { BIN, FIXTURE_CLUSTERS, HAS_SCHEMAS, readTreeFiles, REFERENCE_FILE, ROOT, runCliInProcess } from '../helpers';

/*
 * Crash tests of the write protocol (src/render/write.ts). A child `node lib/src/bin.js synth`
 * replaces two cluster folders rendered from OLD descriptions with NEW ones and is killed
 * (SIGKILL, by itself: GPU_CLUSTER_MANIFESTS_FAULT=<step>:<n>) at deterministic points: during the
 * write of the temporary trees, at the commit, before and after each rename, during cleanup.
 * After each kill the output holds the old or the new trees, or a journal from which the next
 * command recovers them; after that command both folders are old, or both new, and nothing is
 * left over. No sleeps: every wait is for a condition (a process stopped, a line printed).
 * Each child costs a CPU-second or so (CI has 2 cores): the children render two small descriptions (the
 * protocol does not depend on what is rendered; one case renders the two full fixtures), the baselines are
 * rendered once in-process and copied, each step is reached once (each rename, and the second render, where
 * a later point leaves another state) by one writer that stops itself at every point and is copied there
 * (one point is also killed for real, and its output compared with the copy), the cases that start from a
 * killed output copy the sweep's, and a command that is neither killed nor stopped (a reader, the next
 * writer) runs through the CLI's entry in this process.
 */

const CLUSTERS = ['small-a', 'small-b'];
const FULL_CLUSTERS = ['instant-cluster', 'training-cluster'];
const baseEnv = { ...process.env, CDK8S_CHECK_UPGRADE: 'false', [FAULT_ENV]: '', [FAULT_TRACE_ENV]: '' };

let work: string;
let oldConfigs: string[];
let newConfigs: string[];
let oldTree: Map<string, string>;
let newTree: Map<string, string>;
let oldDir: string;
let newDir: string;

/**
 * A small valid description (one GPU worker more in OLD, one tenant): every child renders two of them.
 * The protocol does not depend on what is rendered; one case replaces the two full fixtures.
 */
function smallDescription(name: string, workers: number): string {
  const reference = parseYaml(readFileSync(REFERENCE_FILE, 'utf8'));
  return stringifyYaml({
    name,
    kubernetesVersion: reference.kubernetesVersion,
    gitops: { repoURL: reference.gitops.repoURL, path: `dist/${name}` },
    nodes: { gpuWorkers: { ...reference.nodes.gpuWorkers, count: workers } },
    network: {},
    storage: { sharedFilesystem: reference.storage.sharedFilesystem },
    tenants: [{ name: 'inference', gpus: 4 }],
    samples: reference.samples,
  });
}

function synthArgs(configs: readonly string[], out: string): string[] {
  return [BIN, 'synth', ...configs.flatMap((c) => ['--config', c]), '--out', out, '--no-validate', '--quiet'];
}

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, args, { cwd: ROOT, env: { ...baseEnv, ...env }, encoding: 'utf8' });
}

/**
 * A command that is not killed (a reader, a later writer, the command after a kill) through the CLI's entry in
 * this process: what such a case checks is the command's recovery, its lock and what it prints, which the same
 * code does here; the process boundary is the point only of what is killed, stopped or runs beside another writer.
 * `args` as for `run` (the compiled CLI first, dropped here); `env` set while the command runs.
 */
/** A command in this process (args as a child's: the bin first), `env` set for it only. */
async function inProcess(args: string[], env: Record<string, string> = {}): Promise<{ status: number; stderr: string }> {
  const r = await runCliInProcess(args.slice(1), { env });
  return { status: r.code, stderr: r.stderr };
}

/** Renders each set of descriptions into its folder, in-process, as `synth --no-validate` does: the baselines the cases copy. */
function renderBaselines(outputs: ReadonlyArray<{ configs: readonly string[]; out: string }>): void {
  for (const { configs, out } of outputs) synth({ configs, out, schemas: false });
}

/** A child process and everything it printed, with a promise of its end. */
function start(args: string[], env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, env: { ...baseEnv, ...env } });
  let stderr = '';
  const listeners: Array<() => void> = [];
  child.stderr!.on('data', (d) => {
    stderr += String(d);
    listeners.forEach((l) => l());
  });
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
  const printed = (text: string) => new Promise<void>((resolve) => {
    const check = () => {
      if (stderr.includes(text)) resolve();
    };
    listeners.push(check);
    check();
  });
  return { child, done, printed };
}

function isStopped(pid: number): boolean {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
}

/** Waits until the process has stopped itself (looking every 2 ms: a busy loop would take a CPU from the child). */
async function stopped(pid: number): Promise<void> {
  while (!isStopped(pid)) await new Promise((r) => setTimeout(r, 2));
}

/** The files of every cluster folder of an output root, keyed `<cluster>/<file>`. */
function clusterTrees(out: string, clusters: readonly string[] = CLUSTERS): Map<string, string> {
  const all = new Map<string, string>();
  for (const c of clusters) {
    if (!existsSync(path.join(out, c))) continue;
    for (const [f, content] of readTreeFiles(path.join(out, c))) all.set(`${c}/${f}`, content);
  }
  return all;
}

/** Which complete state each cluster folder is in. */
function states(out: string, clusters: readonly string[] = CLUSTERS, trees = { old: oldTree, new: newTree }): string[] {
  return clusters.map((c) => {
    const dir = path.join(out, c);
    if (!existsSync(dir)) return 'missing';
    const files = readTreeFiles(dir);
    const same = (tree: Map<string, string>) => {
      const own = [...tree].filter(([f]) => f.startsWith(`${c}/`)).map(([f, content]) => [f.slice(c.length + 1), content]);
      return own.length === files.size && own.every(([f, content]) => files.get(f) === content);
    };
    return same(trees.old) ? 'old' : same(trees.new) ? 'new' : 'mixed';
  });
}

function leftovers(out: string): string[] {
  return readdirSync(out).filter(isWriteArtifact);
}

function copyOf(from: string): string {
  const dir = mkdtempSync(path.join(work, 'case-'));
  cpSync(from, dir, { recursive: true });
  return dir;
}

function freshCopy(): string {
  return copyOf(oldDir);
}

/** The full fixtures, OLD (more GPU workers: other quotas, other report) and NEW, for the one case that renders them. */
let full: { oldConfigs: string[]; newConfigs: string[]; oldDir: string; newDir: string };

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'faults-'));
  const variant = (file: string, from: RegExp, to: string) => {
    const f = path.join(work, 'full-old', path.basename(file));
    mkdirSync(path.dirname(f), { recursive: true });
    writeFileSync(f, readFileSync(file, 'utf8').replace(from, to));
    return f;
  };
  const ref = (name: string) => path.join(FIXTURE_CLUSTERS, `${name}.yaml`);
  full = {
    oldConfigs: [
      variant(ref('instant-cluster'), /\n {4}count: 2\n/, '\n    count: 3\n'),
      variant(ref('training-cluster'), /\n {4}count: 16\n/, '\n    count: 17\n'),
    ],
    newConfigs: FULL_CLUSTERS.map(ref),
    oldDir: path.join(work, 'full-old-out'),
    newDir: path.join(work, 'full-new-out'),
  };
  const small = (dir: string, workers: number) => {
    mkdirSync(path.join(work, dir));
    return CLUSTERS.map((name) => {
      const f = path.join(work, dir, `${name}.yaml`);
      writeFileSync(f, smallDescription(name, workers));
      return f;
    });
  };
  oldConfigs = small('old', 2);
  newConfigs = small('new', 1);
  oldDir = path.join(work, 'old-out');
  newDir = path.join(work, 'new-out');
  renderBaselines([
    { configs: oldConfigs, out: oldDir },
    { configs: newConfigs, out: newDir },
    { configs: full.oldConfigs, out: full.oldDir },
    { configs: full.newConfigs, out: full.newDir },
  ]);
  oldTree = clusterTrees(oldDir);
  newTree = clusterTrees(newDir);
  expect(oldTree.size).toBeGreaterThan(60);
  // every cluster's folder differs between OLD and NEW (nested folders: the swap moves whole trees)
  for (const c of CLUSTERS) expect([...oldTree.keys()].some((f) => f.startsWith(`${c}/`) && oldTree.get(f) !== newTree.get(f)), c).toBe(true);
  expect([...oldTree.keys()].some((f) => f.split('/').length > 2)).toBe(true);
}, 120_000);

let traced: string[] | undefined;

/** Every fault point of one NEW-over-OLD synth, from a traced run (once per file): `<step>:<n>`. */
function tracedSteps(): string[] {
  if (traced) return traced;
  const dir = freshCopy();
  const trace = path.join(work, 'trace.txt');
  const r = run(synthArgs(newConfigs, dir), { [FAULT_TRACE_ENV]: trace });
  expect(r.status, r.stderr).toBe(0);
  traced = readFileSync(trace, 'utf8').trim().split('\n');
  return traced;
}

/**
 * The points killed: the first of each step, and where a later one leaves another state: every rename (each
 * one a different half-swapped output) and the second render (the first cluster's temporary tree complete).
 * Each point costs a child process.
 */
function pickPoints(steps: readonly string[]): string[] {
  const byStep = new Map<string, string[]>();
  for (const s of steps) {
    const name = s.split(':')[0];
    byStep.set(name, [...(byStep.get(name) ?? []), s]);
  }
  const picked = new Set<string>();
  for (const [name, list] of byStep) {
    picked.add(list[0]);
    if (name === 'rename') list.forEach((s) => picked.add(s));
    if (name === 'render') picked.add(list[1]);
  }
  return [...picked];
}

/** Copies of the output a synth killed at `point` left, unrecovered (the sweep keeps them for the cases that start there). */
const killedOutputs = new Map<string, string>();

/** A fresh copy of what a NEW-over-OLD synth killed at `point` leaves (killing one when the sweep has not). */
function killedAt(point: string): string {
  let kept = killedOutputs.get(point);
  if (!kept) {
    kept = freshCopy();
    const killed = run(synthArgs(newConfigs, kept), { [FAULT_ENV]: point });
    expect(killed.signal, point).toBe('SIGKILL');
    killedOutputs.set(point, kept);
  }
  return copyOf(kept);
}

const KEPT_POINTS = ['render:2', 'rename:2', 'rename:3'];

const lastStep = (trace: string) => (existsSync(trace) ? readFileSync(trace, 'utf8').trimEnd().split('\n').pop() : undefined);

/**
 * What a command (`args`, on the output `dir`) leaves at each of `points` (given in the order it passes them),
 * from one process: it stops itself right before each point (SIGSTOP, where a kill would be) and the output is
 * copied while it stands still; then it goes on to the next, and ends. Nothing of the process runs after the
 * point either way, and what it wrote is in the file system, not in the process: a kill leaves what the copy
 * holds (the sweep kills one point for real and compares). The copies' locks name the process, which has ended
 * when they are recovered, as a killed one has. One process for a sweep instead of one per point.
 */
async function snapshotsAt(
  args: string[], dir: string, points: readonly string[],
): Promise<{ snapshots: Map<string, string>; pid: number; code: number | null }> {
  const trace = path.join(work, `stops-${path.basename(dir)}.trace`);
  const writer = start(args, { [FAULT_ENV]: points.map((p) => `${p}:stop`).join(','), [FAULT_TRACE_ENV]: trace });
  let ended = false;
  void writer.done.then(() => { ended = true; });
  const pid = writer.child.pid!;
  const snapshots = new Map<string, string>();
  try {
    for (const point of points) {
      // stopped right before this point: the last step it traced is this one (a step is traced before its fault)
      while (ended || !isStopped(pid) || lastStep(trace) !== point) {
        if (ended) throw new Error(`the writer ended before ${point}: ${(await writer.done).stderr}`);
        await new Promise((r) => setTimeout(r, 2));
      }
      snapshots.set(point, copyOf(dir));
      writer.child.kill('SIGCONT');
    }
  } catch (e) {
    writer.child.kill('SIGKILL');
    throw e;
  }
  const r = await writer.done;
  return { snapshots, pid, code: r.code };
}

/**
 * An output as two writers' kills can be compared: every file by name and content, the writer's pid in the
 * temporary names and in the journal replaced, the journal's host dropped, the lock file's content (pid, host,
 * start time) left out.
 */
function comparable(dir: string, pid: number): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const name = (n: string) => n.split(`-${pid}-`).join('-PID-');
  for (const [f, content] of readTreeFiles(dir)) {
    if (f === LOCK_FILE) {
      out.set(f, 'the lock');
    } else if (f === JOURNAL_FILE) {
      const { pid: writer, host, swaps, ...rest } = JSON.parse(content) as { pid: number; host: string; swaps: Array<Record<string, unknown>> };
      expect([writer, host]).toEqual([pid, hostname()]);
      out.set(f, { ...rest, swaps: swaps.map((w) => Object.fromEntries(Object.entries(w).map(([k, v]) => [k, typeof v === 'string' ? name(v) : v]))) });
    } else {
      out.set(name(f), content);
    }
  }
  return out;
}

describe.skipIf(process.platform !== 'linux')('a synth killed at any point loses nothing', () => {
  let points: string[] = [];

  it('passes every step of the protocol in a traced run', () => {
    const steps = tracedSteps();
    for (const step of ['load', 'render', 'lock', 'recovered', 'write', 'write-partial', 'commit', 'rename', 'remove', 'unjournal', 'unlock']) {
      expect(steps.some((s) => s.startsWith(`${step}:`)), step).toBe(true);
    }
    // two existing folders: two renames each
    expect(steps.filter((s) => s.startsWith('rename:'))).toEqual(['rename:1', 'rename:2', 'rename:3', 'rename:4']);
    points = pickPoints(steps);
    expect(points).toEqual(expect.arrayContaining(KEPT_POINTS));
    expect(points.length).toBeGreaterThanOrEqual(15);
  }, 120_000);

  it('after each kill the folders are old or new (or journaled), and recovery completes them with nothing left over', async () => {
    expect(points.length).toBeGreaterThan(0);
    const steps = tracedSteps();
    const ordered = [...points].sort((a, b) => steps.indexOf(a) - steps.indexOf(b));
    const sweep = freshCopy();
    const { snapshots, pid, code } = await snapshotsAt(synthArgs(newConfigs, sweep), sweep, ordered);
    expect(code).toBe(0);
    expect(states(sweep)).toEqual(['new', 'new']);
    // the stopped writer's copy is what a kill there leaves: one point killed for real (in the middle of the swap)
    const killedDir = freshCopy();
    const killed = run(synthArgs(newConfigs, killedDir), { [FAULT_ENV]: 'rename:2' });
    expect(killed.signal).toBe('SIGKILL');
    expect(comparable(killedDir, killed.pid)).toEqual(comparable(snapshots.get('rename:2')!, pid));
    const results = ordered.map((point) => {
      const dir = snapshots.get(point)!;
      if (KEPT_POINTS.includes(point)) killedOutputs.set(point, copyOf(dir));
      return { point, dir, journaled: existsSync(path.join(dir, JOURNAL_FILE)), before: states(dir) };
    });
    for (const r of results) {
      if (!r.journaled) {
        // no journal: nothing was swapped yet, or everything was
        expect(new Set(r.before).size, `${r.point}: ${r.before}`).toBe(1);
        expect(['old', 'new'], r.point).toContain(r.before[0]);
      }
      recoverOutput(r.dir);
      const after = states(r.dir);
      // the journal is written once every new tree is complete: from then on the write is finished
      const expected = r.journaled ? 'new' : r.before[0];
      expect(after, r.point).toEqual([expected, expected]);
      expect(leftovers(r.dir), r.point).toEqual([]);
    }
    // the points before the commit roll back, the ones after it roll forward
    expect(results.filter((r) => /^(load|lock|recovered|render|write)/.test(r.point)).every((r) => states(r.dir)[0] === 'old')).toBe(true);
    expect(results.filter((r) => /^(rename|remove|unjournal|unlock)/.test(r.point)).every((r) => states(r.dir)[0] === 'new')).toBe(true);
  }, 300_000);

  it('the full fixtures (hundreds of files, nested folders): killed in the middle of the swap, recovered to the new trees', () => {
    const trees = { old: clusterTrees(full.oldDir, FULL_CLUSTERS), new: clusterTrees(full.newDir, FULL_CLUSTERS) };
    expect(trees.old.size).toBeGreaterThan(100);
    const dir = copyOf(full.oldDir);
    expect(states(dir, FULL_CLUSTERS, trees)).toEqual(['old', 'old']);
    const trace = path.join(work, 'full-trace.txt');
    const killed = run(synthArgs(full.newConfigs, dir), { [FAULT_ENV]: 'rename:3', [FAULT_TRACE_ENV]: trace });
    expect(killed.signal).toBe('SIGKILL');
    // both trees written in full before the commit, then the first swapped: instant-cluster new, training-cluster old
    const steps = readFileSync(trace, 'utf8').trim().split('\n');
    expect(steps.filter((s) => s.startsWith('write:')).length).toBe(trees.new.size);
    expect(existsSync(path.join(dir, JOURNAL_FILE))).toBe(true);
    expect(states(dir, FULL_CLUSTERS, trees)).toEqual(['new', 'old']);
    recoverOutput(dir);
    expect(states(dir, FULL_CLUSTERS, trees)).toEqual(['new', 'new']);
    expect(leftovers(dir)).toEqual([]);
  }, 120_000);

  it('streams: each cluster\'s tree is written before the next cluster is rendered, under the lock taken before the first render', () => {
    const steps = tracedSteps();
    const firstWrite = steps.indexOf('write:1');
    // each render is compared with the folder it replaces (the deletions), so the lock comes first
    expect(steps.indexOf('lock:1')).toBeLessThan(steps.indexOf('render:1'));
    expect(steps.indexOf('lock:1')).toBeLessThan(firstWrite);
    // the first cluster's files, then the second cluster's render, then its files, then the commit
    expect(firstWrite).toBeLessThan(steps.indexOf('render:2'));
    expect(steps.slice(steps.indexOf('render:2')).some((s) => s.startsWith('write:'))).toBe(true);
    expect(steps.indexOf('render:2')).toBeLessThan(steps.indexOf('commit:1'));
  }, 120_000);

  it('killed while rendering a later cluster: the earlier one\'s complete temporary tree is recovered away, the output stays old', async () => {
    const [first, second] = CLUSTERS;
    const dir = killedAt('render:2');
    expect(states(dir)).toEqual(['old', 'old']);
    // the first cluster was written in full to its temporary name before the second one's render began
    const tmp = leftovers(dir).filter((n) => n.startsWith(`${first}.tmp-`));
    expect(tmp).toHaveLength(1);
    const written = readTreeFiles(path.join(dir, tmp[0]));
    expect([...written.keys()].sort()).toEqual([...newTree.keys()].filter((f) => f.startsWith(`${first}/`)).map((f) => f.slice(first.length + 1)).sort());
    expect(leftovers(dir).some((n) => n.startsWith(`${second}.tmp-`))).toBe(false);
    // the writer is dead: the next command (a reader too) rolls back first, then reads the old trees
    const reader = await inProcess([BIN, 'check', dir, ...oldConfigs.flatMap((c) => ['--config', c])]);
    expect(reader.status, reader.stderr).toBe(0);
    expect(states(dir)).toEqual(['old', 'old']);
    expect(leftovers(dir)).toEqual([]);
  }, 120_000);

  it('a reader goes on while a live writer streams (no journal yet); the writer then completes', async () => {
    const dir = freshCopy();
    const writer = start(synthArgs(newConfigs, dir), { [FAULT_ENV]: 'render:2:stop' });
    await stopped(writer.child.pid!);
    try {
      expect(leftovers(dir)).toContain(LOCK_FILE);
      expect(states(dir)).toEqual(['old', 'old']);
      const reader = await inProcess([BIN, 'check', dir, ...oldConfigs.flatMap((c) => ['--config', c])], { [LOCK_WAIT_ENV]: '0.2' });
      expect(reader.status, reader.stderr).toBe(0);
      expect(reader.stderr).not.toContain('waiting for');
    } finally {
      writer.child.kill('SIGCONT');
    }
    const w = await writer.done;
    expect(w.code, w.stderr).toBe(0);
    expect(states(dir)).toEqual(['new', 'new']);
    expect(leftovers(dir)).toEqual([]);
  }, 120_000);

  it('every command recovers first: check, synth (and validate with the schemas)', async () => {
    type Command = [name: string, args: (dir: string) => string[], final: string];
    const commands: Command[] = [
      ['check', (dir) => [BIN, 'check', dir, ...newConfigs.flatMap((c) => ['--config', c])], 'new'],
      // recovers (rolls the killed write forward), then writes its own render
      ['synth', (dir) => synthArgs(oldConfigs, dir), 'old'],
      ...(HAS_SCHEMAS ? [['validate', (dir: string) => [BIN, 'validate', path.join(dir, CLUSTERS[0])], 'new'] as Command] : []),
    ];
    for (const [name, args, final] of commands) {
      const dir = killedAt('rename:2');
      // killed between the two renames of the first cluster: its folder is gone until recovery
      expect(states(dir), name).toEqual(['missing', 'old']);
      const r = await inProcess(args(dir));
      expect(r.status, `${name}: ${r.stderr}`).toBe(0);
      expect(states(dir), name).toEqual([final, final]);
      expect(leftovers(dir), name).toEqual([]);
    }
  }, 300_000);

  it('a recovery that is itself killed is recovered by the next command', async () => {
    // one reader recovering the output a killed writer left, stopped (where a kill would be) at each step of its recovery
    const dir = killedAt('rename:3');
    const faults = ['recover-rename:1', 'recover-remove:1'];
    const { snapshots, code } = await snapshotsAt([BIN, 'check', dir, ...newConfigs.flatMap((c) => ['--config', c])], dir, faults);
    expect(code).toBe(0);
    for (const fault of faults) {
      const killed = snapshots.get(fault)!;
      recoverOutput(killed);
      expect(states(killed), fault).toEqual(['new', 'new']);
      expect(leftovers(killed), fault).toEqual([]);
    }
  }, 300_000);

  it('an aborted swap (a rename that failed after the commit) is rolled back to the old trees', () => {
    const dir = freshCopy();
    const newOut = newDir;
    const swaps = CLUSTERS.map((c, i) => ({ target: c, tmp: `${c}.tmp-999999-${2 * i + 1}`, old: `${c}.old-999999-${2 * i + 2}`, existed: true }));
    for (const s of swaps) cpSync(path.join(newOut, s.target), path.join(dir, s.tmp), { recursive: true });
    // the first folder was swapped, the second one's first rename failed
    renameSync(path.join(dir, swaps[0].target), path.join(dir, swaps[0].old));
    renameSync(path.join(dir, swaps[0].tmp), path.join(dir, swaps[0].target));
    expect(states(dir)).toEqual(['new', 'old']);
    writeFileSync(path.join(dir, JOURNAL_FILE), JSON.stringify({ format: 1, tool: 'gpu-cluster-manifests', state: 'abort', pid: 999999, host: 'h', swaps }));
    recoverOutput(dir);
    expect(states(dir)).toEqual(['old', 'old']);
    expect(leftovers(dir)).toEqual([]);
  });

  it('removes the leftovers of older versions of the tool, and restores a folder they left renamed away', () => {
    const dir = freshCopy();
    const [first, second] = CLUSTERS.map((c) => path.join(dir, c));
    cpSync(second, `${second}.tmp-999999-1`, { recursive: true });
    cpSync(first, `${first}.old-999999-2`, { recursive: true });
    cpSync(second, `${second}.old-999999-4`, { recursive: true });
    // killed between its two renames: only the old tree is left
    cpSync(first, `${first}.old-999999-3`, { recursive: true });
    expect(spawnSync('rm', ['-rf', first, `${first}.old-999999-2`]).status).toBe(0);
    const besides = `${dir}.tmp-999999-5`;
    mkdirSync(besides);
    recoverOutput(dir);
    expect(states(dir)).toEqual(['old', 'old']);
    expect(leftovers(dir)).toEqual([]);
    expect(existsSync(besides)).toBe(false);
  });
});

describe.skipIf(process.platform !== 'linux')('concurrent writers serialize on the lock', () => {
  it('three writers at once: every one succeeds, the result is one complete render, nothing is left over', async () => {
    const dir = freshCopy();
    const env = { [LOCK_WAIT_ENV]: '600' };
    const runs = [newConfigs, oldConfigs, newConfigs].map((configs) => start(synthArgs(configs, dir), env).done);
    const results = await Promise.all(runs);
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const s = states(dir);
    expect(['old,old', 'new,new']).toContain(s.join(','));
    expect(leftovers(dir)).toEqual([]);
  }, 300_000);

  it('a second writer exits 2 naming the holder; once the holder is killed, the next command recovers', async () => {
    const dir = freshCopy();
    const holder = start(synthArgs(newConfigs, dir), { [FAULT_ENV]: 'rename:2:stop' });
    await stopped(holder.child.pid!);
    try {
      expect(states(dir)).toEqual(['missing', 'old']);
      const second = await inProcess(synthArgs(oldConfigs, dir), { [LOCK_WAIT_ENV]: '0.2' });
      expect(second.status).toBe(2);
      expect(second.stderr).toContain(`locked by pid ${holder.child.pid} (synth)`);
      expect(second.stderr).toContain(LOCK_FILE);
      expect(second.stderr).not.toMatch(/internal error/);
      const reader = await inProcess([BIN, 'check', dir, ...newConfigs.flatMap((c) => ['--config', c])], { [LOCK_WAIT_ENV]: '0.2' });
      expect(reader.status).toBe(2);
    } finally {
      holder.child.kill('SIGKILL');
    }
    await holder.done;
    // the holder is dead: its lock is stale and broken; its journal is committed: rolled forward
    const next = await inProcess(synthArgs(oldConfigs, dir));
    expect(next.status, next.stderr).toBe(0);
    expect(states(dir)).toEqual(['old', 'old']);
    expect(leftovers(dir)).toEqual([]);
  }, 300_000);

  it('a waiting writer proceeds when the holder finishes', async () => {
    const dir = freshCopy();
    const holder = start(synthArgs(newConfigs, dir), { [FAULT_ENV]: 'rename:2:stop' });
    await stopped(holder.child.pid!);
    const waiter = start(synthArgs(oldConfigs, dir), { [LOCK_WAIT_ENV]: '600' });
    await waiter.printed(`locked by pid ${holder.child.pid}`);
    holder.child.kill('SIGCONT');
    const [h, w] = await Promise.all([holder.done, waiter.done]);
    expect(h.code, h.stderr).toBe(0);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stderr).toContain('waiting for');
    expect(states(dir)).toEqual(['old', 'old']);
    expect(leftovers(dir)).toEqual([]);
  }, 300_000);
});

describe.skipIf(process.platform !== 'linux')('a stale lock released while it is being judged', () => {
  it('the lock file is read once: a lock that vanishes after that read is no lock, not a crash', async () => {
    const dir = freshCopy();
    // the lock of a process of this host that has ended: stale, so the writer goes on to break it
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    const lock = path.join(dir, LOCK_FILE);
    writeFileSync(lock, `${JSON.stringify({ pid: gone, host: hostname(), since: new Date().toISOString(), command: 'synth' })}\n`);
    const writer = start(synthArgs(newConfigs, dir), { [FAULT_ENV]: 'lock-busy:1:stop' });
    await stopped(writer.child.pid!);
    try {
      // released between the read and what follows it
      unlinkSync(lock);
    } finally {
      writer.child.kill('SIGCONT');
    }
    const r = await writer.done;
    expect(r.stderr).not.toMatch(/ENOENT|internal error/);
    expect(r.code, r.stderr).toBe(0);
    expect(states(dir)).toEqual(['new', 'new']);
    expect(leftovers(dir)).toEqual([]);
  }, 300_000);
});

describe.skipIf(process.platform !== 'linux')('a fleet rendered on several threads', () => {
  const THREADS = 'GPU_CLUSTER_MANIFESTS_THREADS';
  const NAMES = Array.from({ length: 6 }, (_, i) => `fleet-${i + 1}`);
  let oldFleet: string[];
  let newFleet: string[];

  /** Rendered once (on one thread), copied by the cases. */
  let oldFleetOut: string;
  let newFleetOut: string;

  /** Small descriptions under these names (OLD: one GPU worker more). */
  function fleetOf(dir: string, workers: number): string[] {
    mkdirSync(dir, { recursive: true });
    return NAMES.map((name) => {
      const f = path.join(dir, `${name}.yaml`);
      writeFileSync(f, smallDescription(name, workers));
      return f;
    });
  }

  const fleetStates = (out: string) => NAMES.map((n) => {
    if (!existsSync(path.join(out, n))) return 'missing';
    return readFileSync(path.join(out, n, 'kueue', 'clusterqueue.default.yaml'), 'utf8');
  });

  beforeAll(() => {
    oldFleet = fleetOf(path.join(work, 'fleet-old'), 2);
    newFleet = fleetOf(path.join(work, 'fleet-new'), 1);
    oldFleetOut = path.join(work, 'fleet-old-out');
    newFleetOut = path.join(work, 'fleet-new-out');
    renderBaselines([{ configs: oldFleet, out: oldFleetOut }, { configs: newFleet, out: newFleetOut }]);
    expect(fleetStates(oldFleetOut).every((q, i) => q !== fleetStates(newFleetOut)[i])).toBe(true);
  }, 120_000);

  let fleetTrace: string[] | undefined;

  /** The steps of a NEW-over-OLD fleet synth on two threads (once per file), and its output. */
  function threadedRender(): { steps: string[]; out: string } {
    const out = path.join(work, 'threads-2');
    if (!fleetTrace) {
      cpSync(oldFleetOut, out, { recursive: true });
      const trace = path.join(work, 'threads-2.trace');
      const r = run(synthArgs(newFleet, out), { [THREADS]: '2', [FAULT_TRACE_ENV]: trace });
      expect(r.status, r.stderr).toBe(0);
      fleetTrace = readFileSync(trace, 'utf8').trim().split('\n');
    }
    return { steps: fleetTrace, out };
  }

  it('writes what one thread writes, byte for byte, and leaves nothing over', () => {
    const { steps, out } = threadedRender();
    // both threads rendered and wrote clusters
    expect(steps.filter((s) => /^render:\d+@\d+$/.test(s)).length).toBeGreaterThan(0);
    expect(steps.filter((s) => /^render:\d+$/.test(s)).length).toBeGreaterThan(0);
    expect(steps.filter((s) => /^write:\d+@\d+$/.test(s)).length).toBeGreaterThan(0);
    expect(readTreeFiles(out)).toEqual(readTreeFiles(newFleetOut));
    expect(leftovers(out)).toEqual([]);
  }, 300_000);

  it('a cluster that cannot render, on any thread: exit 2, the output as it was, nothing left over', () => {
    const dir = copyOf(oldFleetOut);
    const before = readTreeFiles(dir);
    const refused = [...newFleet];
    refused[4] = path.join(work, 'fleet-refused.yaml');
    writeFileSync(refused[4], readFileSync(newFleet[4], 'utf8').replace(/(\n {4}image: ghcr\.io\/coreweave[^\n]*)/, '$1\n    shmSize: 4Ti'));
    const r = run(synthArgs(refused, dir), { [THREADS]: '2' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/fleet-5: cannot render/);
    expect(readTreeFiles(dir)).toEqual(before);
    expect(leftovers(dir)).toEqual([]);
  }, 300_000);

  it('a tenant dropped from a cluster on a worker thread: refused without --allow-delete (exit 1, listed once), removed with it', () => {
    const dir = copyOf(newFleetOut);
    const before = readTreeFiles(dir);
    // the last two clusters lose a tenant (either thread may take them: the deletions are found where the cluster is rendered)
    const dropped = newFleet.map((f, i) => {
      if (i < 4) return f;
      const d = path.join(work, `threads-dropped-${i}.yaml`);
      const text = readFileSync(f, 'utf8');
      const tenants = parseYaml(text).tenants.filter((t: { name: string }) => t.name !== 'inference');
      writeFileSync(d, stringifyYaml({ ...parseYaml(text), tenants }));
      return d;
    });
    const trace = path.join(work, 'threads-deletions.trace');
    const r = run(synthArgs(dropped, dir), { [THREADS]: '2', [FAULT_TRACE_ENV]: trace });
    expect(r.status, r.stderr).toBe(1);
    const steps = readFileSync(trace, 'utf8').trim().split('\n');
    expect(steps.filter((s) => /^render:\d+@\d+$/.test(s)).length).toBeGreaterThan(0);
    // the fleet's clusters have that one tenant: the tenants folder leaves with its Application, whose resources finalizer
    // deletes the Namespace once someone confirms (Delete=confirm; render/deletions.ts clusterFate)
    for (const name of NAMES.slice(4)) {
      expect(r.stderr).toContain(`- ${name}: Namespace inference (tenants/namespace.inference.yaml): deleted with its Application ${name}-tenants, which leaves too `
        + `(resources finalizer), once someone confirms (Delete=confirm): argocd app confirm-deletion ${name}-tenants`);
    }
    for (const name of NAMES.slice(0, 4)) expect(r.stderr).not.toContain(`- ${name}:`);
    expect(r.stderr.split('\n').filter((l) => l.includes(': Namespace inference ')).length).toBe(2);
    expect(readTreeFiles(dir)).toEqual(before);
    expect(leftovers(dir)).toEqual([]);
    // what --allow-delete removes is said, except under --quiet (errors only)
    const allowed = run([...synthArgs(dropped, dir).filter((a) => a !== '--quiet'), '--allow-delete'], { [THREADS]: '2' });
    expect(allowed.status, allowed.stderr).toBe(0);
    expect(allowed.stderr).toContain(`- ${NAMES[5]}: Namespace inference (tenants/namespace.inference.yaml)`);
    expect(existsSync(path.join(dir, NAMES[5], 'tenants', 'namespace.inference.yaml'))).toBe(false);
    expect(existsSync(path.join(dir, NAMES[0], 'tenants', 'namespace.inference.yaml'))).toBe(true);
  }, 300_000);

  it('the whole output re-rendered on two threads: unchanged folders are kept whichever thread rendered them, and a changed one replaced', () => {
    // `npm run synth` without --config replaces the whole output root: an entry no thread claims is removed
    const clusters = path.join(work, 'threads-replace-all-clusters');
    mkdirSync(clusters, { recursive: true });
    for (const f of newFleet) cpSync(f, path.join(clusters, path.basename(f)));
    const out = path.join(work, 'threads-replace-all');
    // the three renders in one child (one process, its threads started per render as each synth starts them):
    // after the first and the second, a copy of the output; before the third, fleet-3's description changes
    const script = `const { cpSync } = require('node:fs');
      const { synth } = require(${JSON.stringify(path.join(ROOT, 'lib', 'src', 'synth', 'pipeline.js'))});
      const synthAll = () => synth({ clustersDir: ${JSON.stringify(clusters)}, out: ${JSON.stringify(out)}, schemas: false });
      const results = [];
      for (const [i, copy] of [${JSON.stringify(`${out}-1`)}, ${JSON.stringify(`${out}-2`)}, undefined].entries()) {
        if (i === 2) cpSync(${JSON.stringify(oldFleet[2])}, ${JSON.stringify(path.join(clusters, 'fleet-3.yaml'))});
        const r = synthAll();
        results.push({ changed: r.changed, files: r.files });
        if (copy) cpSync(${JSON.stringify(out)}, copy, { recursive: true });
      }
      console.log(JSON.stringify(results));`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, [THREADS]: '2' } });
    expect(r.status, r.stderr).toBe(0);
    const [first, again, third] = JSON.parse(r.stdout.trim().split('\n').pop()!) as Array<{ changed: string[]; files: number }>;
    expect(first.changed.sort()).toEqual([...NAMES, 'fleet'].sort());
    expect(again.changed).toEqual([]);
    expect(again.files).toBe(first.files);
    expect(readdirSync(`${out}-2`).sort()).toEqual([...NAMES, 'fleet'].sort());
    expect(readTreeFiles(`${out}-2`)).toEqual(readTreeFiles(`${out}-1`));
    // one cluster changes: only its folder is replaced, the others stay
    expect(third.changed).toEqual(['fleet-3']);
    expect(readdirSync(out).sort()).toEqual([...NAMES, 'fleet'].sort());
    expect(leftovers(out)).toEqual([]);
  }, 300_000);

  it('killed anywhere, the fleet is all old or all new after recovery', () => {
    const old = fleetStates(oldFleetOut);
    const newStates = fleetStates(newFleetOut);
    const { steps } = threadedRender();
    const writes = steps.filter((s) => /^write:\d+$/.test(s)).length;
    // while the threads render and write (rolled back), and in the middle of the fleet's swap (rolled forward, every
    // thread's tree complete); the main thread's commit and cleanup are those of one thread (the sweep above kills them)
    for (const point of ['render:3', `write:${Math.floor(writes / 3)}`, 'rename:5']) {
      const dir = copyOf(oldFleetOut);
      const killed = run(synthArgs(newFleet, dir), { [THREADS]: '2', [FAULT_ENV]: point });
      expect(killed.signal, point).toBe('SIGKILL');
      const journaled = existsSync(path.join(dir, JOURNAL_FILE));
      recoverOutput(dir);
      // the journal is written once every new tree is complete: from then on the write is finished
      expect(fleetStates(dir), point).toEqual(journaled ? newStates : old);
      expect(leftovers(dir), point).toEqual([]);
    }
  }, 300_000);
});
