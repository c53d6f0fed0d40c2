import { spawn } from 'node:child_process';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './helpers';

/*
 * The compiled CLI (`node lib/src/bin.js`, as users run it; `npm test` compiles first) in a child,
 * through a small wrapper that reports, on file descriptor 3, the exit code, the child's peak RSS
 * (process.resourceUsage()) and how long its live read took by the child's own clock: from the
 * moment --timeout starts counting (the kubeconfig loaded, with the Kubernetes client it imports;
 * the start of readLive when no kubeconfig loads) to its end, so that loading modules on a busy
 * machine does not count.
 */

const LIB = path.join(ROOT, 'lib', 'src');

const WRAPPER = `
const fs = require('node:fs');
const [bin, live, kubeconfig, ...args] = process.argv.slice(2);
// the command's module cache before the modules below load (as the CLI's entry point installs it)
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
Promise.resolve(binModule.runCli(args)).then((code) => {
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
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, CDK8S_CHECK_UPGRADE: 'false', ...env })) if (v !== undefined) childEnv[k] = v;
  const child = spawn(process.execPath, [wrapper, path.join(LIB, 'bin.js'), path.join(LIB, 'preflight', 'live.js'), path.join(LIB, 'preflight', 'kubeconfig.js'), ...args], {
    cwd: dir, env: childEnv, stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
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
      if (signal) return reject(new Error(`the CLI did not end within ${killAfterMs / 1000} s (killed): ${args.join(' ')}\n${stderr}`));
      try {
        resolve({ ...(JSON.parse(report) as { code: number; liveMs?: number; maxRSS: number }), stdout, stderr });
      } catch {
        reject(new Error(`no report from the child (exit without one): ${stderr}`));
      }
    });
  });
}
