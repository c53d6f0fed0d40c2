import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { parse, stringify } from 'yaml';
import { twinBinaries } from '../../src/twin/binary';
import { BIN, REFERENCE_FILE, ROOT } from '../paths';

/**
 * `rehearse` as users run it, for the test files of test/cluster/ that rehearse (the compiled CLI in a process of its
 * own, its output not a terminal). Each child gets a TMPDIR of its own (where the rehearsal makes its scratch folder),
 * so what it leaves is found there, and its processes by that path in their command lines. The training example's
 * rehearsal has a file of its own (rehearse-training.test.ts): vitest spreads files, not tests, over its workers, and
 * it is a third of the rehearsals' time.
 */

export interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The TMPDIR the child had. */
  readonly tmp: string;
}

/** A user's clusters repository: its description's path and git run in it. */
export interface UserRepo {
  readonly file: string;
  git(...args: string[]): SpawnSyncReturns<string>;
}

export type Interrupt = (child: ReturnType<typeof spawn>, stderr: string) => void;

export interface Rehearsals {
  /** The test file's scratch folder (gone after its tests). */
  readonly work: string;
  /** Runs `rehearse ARGS` in a child with a TMPDIR of its own; `interrupt` is called with the child and its stderr so far as lines arrive. */
  rehearse(args: readonly string[], interrupt?: Interrupt, tmp?: string): Promise<Run>;
  /** A user's clusters repository: the description `committed` (as `name`), then changed by `change` in the working tree. */
  userRepo(committed: string, change: (d: Record<string, any>) => void, name?: string): UserRepo;
}

/** Registers the file's hooks (the twin's binaries first, built once per machine as rehearse would; the scratch folder removed after) and answers its runners. */
export function rehearsals(): Rehearsals {
  const work = mkdtempSync(path.join(tmpdir(), 'rehearse-test-'));
  beforeAll(async () => {
    // without Go every test of the file fails on this one line
    await twinBinaries();
  }, 60 * 60 * 1000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const rehearse = (args: readonly string[], interrupt?: Interrupt, tmp = mkdtempSync(path.join(work, 'tmp-'))) => new Promise<Run>((resolve) => {
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

  const userRepo = (committed: string, change: (d: Record<string, any>) => void, name = path.basename(REFERENCE_FILE)) => {
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
  };

  return { work, rehearse, userRepo };
}

/** Processes whose command line names `dir` (the twin's processes name their folders under the child's TMPDIR). */
export function processesUnder(dir: string): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout.split('\n').filter((l) => l.includes(dir) && !l.includes(' ps -eo'));
}

/** What the child left in its TMPDIR. */
export const leftIn = (dir: string) => readdirSync(dir);

export const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** The run's stderr without the per-Application progress lines of `cluster`, then its stdout: what a test prints. */
export function shown(r: Run, cluster: string): string {
  return `${r.stderr.split('\n').filter((l) => !new RegExp(`: (${cluster}[\\w-]*) \\(wave`).test(l)).join('\n')}\n${r.stdout}`;
}
