import { spawn } from 'node:child_process';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './helpers';

/*
 * The compiled CLI (`node lib/src/bin.js`, as users run it, but its modules of lib/src rather than its bundle; `npm
 * test` compiles first) in a child, through a small wrapper that reports, on file descriptor 3, the exit code, the child's peak RSS
 * (process.resourceUsage()) and how long its live read took by the child's own clock: from the
 * moment --timeout starts counting (the kubeconfig loaded, with the Kubernetes client it imports;
 * the start of readLive when no kubeconfig loads) to its end, so that loading modules on a busy
 * machine does not count.
 */

const LIB = path.join(ROOT, 'lib', 'src');

const WRAPPER = `
const fs = require('node:fs');
const [bin, live, kubeconfig, ...args] = process.argv.slice(2);
// the command's module cache before the modules below load (as the CLI's entry point installs it); the modules of
// lib/src, not the bundle (lib/bundle/cli.js has copies of its own of the two timed below)
const binModule = require(bin);
binModule.installCommandCache(args);
const liveModule = require(live);
const kubeconfigModule = require(kubeconfig);
const readLive = liveModule.readLive;
const loadKubeConfig = kubeconfigModule.loadKubeConfig;
let liveMs;
let loadedAt;
kubeconfigModule.loadKubeConfig = (...a) => loadKubeConfig(...a).then((c) => { loadedAt = performance.now(); return c; });
liveModule.readLive = (...a) => {
  const t0 = performance.now();
  const p = readLive(...a);
  p.then(() => {}, () => {}).finally(() => { liveMs = performance.now() - (loadedAt ?? t0); });
  return p;
};
Promise.resolve(binModule.routeCli(args)).then((code) => {
  process.exitCode = code;
  fs.writeSync(3, JSON.stringify({ code, liveMs, maxRSS: process.resourceUsage().maxRSS * 1024 }));
});
`;

/**
 * The wrapper in `dir`, written once, atomically: tests that run at the same time (`describe.concurrent`)
 * share the folder, and a child must never read a file another test is rewriting.
 */
function writeWrapper(dir: string): string {
  const wrapper = path.join(dir, 'cli-wrapper.cjs');
  if (!existsSync(wrapper)) {
    const tmp = `${wrapper}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(tmp, WRAPPER);
    renameSync(tmp, wrapper);
  }
  return wrapper;
}

export interface ChildOutcome {
  readonly code: number;
  /** Milliseconds of the live read, when there was one. */
  readonly liveMs?: number;
  /** Peak resident memory of the child, bytes. */
  readonly maxRSS: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the CLI in a child, in `dir` (a temporary folder: no project file above it, so init prints
 * and nothing falls back to this repository's project); resolves once the child has exited (lingering handles would show as a
 * hang). `killAfterMs` is the bound: a child still running then is killed and the promise rejects.
 */
export function runCliChild(
  dir: string, args: readonly string[], env: Record<string, string | undefined> = {}, killAfterMs = 120_000,
): Promise<ChildOutcome> {
  const wrapper = writeWrapper(dir);
  const child = [wrapper, path.join(LIB, 'bin.js'), path.join(LIB, 'preflight', 'live.js'), path.join(LIB, 'preflight', 'kubeconfig.js'), ...args];
  return reportingChild(dir, child, env, killAfterMs).then(({ signal, stdout, stderr, report }) => {
    if (signal) throw new Error(`the CLI did not end within ${killAfterMs / 1000} s (killed): ${args.join(' ')}\n${stderr}`);
    try {
      return { ...(JSON.parse(report) as { code: number; liveMs?: number; maxRSS: number }), stdout, stderr };
    } catch {
      throw new Error(`no report from the child (exit without one): ${stderr}`);
    }
  });
}

const BATCH_WRAPPER = `
const fs = require('node:fs');
const [bin, runsFile] = process.argv.slice(2);
const { runCli } = require(bin);
const runs = JSON.parse(fs.readFileSync(runsFile, 'utf8'));
const writes = { stdout: process.stdout.write, stderr: process.stderr.write };
(async () => {
  for (const run of runs) {
    const captured = { stdout: '', stderr: '' };
    for (const s of ['stdout', 'stderr']) {
      process[s].write = (chunk, ...rest) => {
        captured[s] += String(chunk);
        const done = rest.find((a) => typeof a === 'function');
        if (done) done();
        return true;
      };
    }
    const saved = Object.keys(run.env).map((k) => [k, process.env[k]]);
    Object.assign(process.env, run.env);
    let code;
    try {
      code = await runCli(run.args);
    } finally {
      Object.assign(process.stdout, { write: writes.stdout });
      Object.assign(process.stderr, { write: writes.stderr });
      for (const [k, v] of saved) if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
    fs.writeSync(3, JSON.stringify({ code, ...captured }) + '\\n');
  }
  fs.writeSync(3, JSON.stringify({ maxRSS: process.resourceUsage().maxRSS * 1024 }) + '\\n');
})();
`;

export interface BatchOutcome {
  /** Per command line, in order: its exit code and what it printed. */
  readonly runs: readonly { readonly code: number; readonly stdout: string; readonly stderr: string }[];
  /** Peak resident memory of the child over all the runs, bytes. */
  readonly maxRSS: number;
  /** What the child printed besides the runs' own output (nothing, unless something writes past process.stdout and process.stderr). */
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Several command lines through the compiled CLI's entry (runCli of lib/src/bin.js) one after the other in one
 * child, in `dir`, each with its own environment variables and its output captured: one module load for a
 * table of cases whose process is the same. Resolves once the child has exited; a child still running after
 * `killAfterMs` is killed and the promise rejects, naming the command line that had not ended.
 */
export function runCliChildBatch(
  dir: string, runs: readonly { readonly args: readonly string[]; readonly env?: Record<string, string> }[], killAfterMs = 120_000,
): Promise<BatchOutcome> {
  const name = `cli-batch-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const wrapper = path.join(dir, `${name}.cjs`);
  const runsFile = path.join(dir, `${name}.json`);
  writeFileSync(wrapper, BATCH_WRAPPER);
  writeFileSync(runsFile, JSON.stringify(runs.map((r) => ({ args: r.args, env: r.env ?? {} }))));
  return reportingChild(dir, [wrapper, path.join(LIB, 'bin.js'), runsFile], {}, killAfterMs).then(({ signal, stdout, stderr, report }) => {
    const lines = report.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { code: number; stdout: string; stderr: string; maxRSS?: number });
    const done = lines.filter((l) => l.maxRSS === undefined);
    const end = lines.find((l) => l.maxRSS !== undefined);
    if (signal || !end) {
      const pending = runs[done.length]?.args.join(' ') ?? '(after the last run)';
      throw new Error(`${signal ? `the CLI did not end within ${killAfterMs / 1000} s (killed)` : 'the child ended without its report'}: ${pending}\n${stderr}`);
    }
    return { runs: done, maxRSS: end.maxRSS!, stdout, stderr };
  });
}

/** Node running `args` in `dir`, its stdout and stderr and what it reports on file descriptor 3 collected; killed after `killAfterMs`. */
function reportingChild(
  dir: string, args: readonly string[], env: Record<string, string | undefined>, killAfterMs: number,
): Promise<{ signal: NodeJS.Signals | null; stdout: string; stderr: string; report: string }> {
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, CDK8S_CHECK_UPGRADE: 'false', ...env })) if (v !== undefined) childEnv[k] = v;
  const child = spawn(process.execPath, args, { cwd: dir, env: childEnv, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let report = '';
  child.stdout!.on('data', (c) => { stdout += String(c); });
  child.stderr!.on('data', (c) => { stderr += String(c); });
  (child.stdio[3] as NodeJS.ReadableStream).on('data', (c) => { report += String(c); });
  const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (_, signal) => {
      clearTimeout(timer);
      resolve({ signal, stdout, stderr, report });
    });
  });
}
