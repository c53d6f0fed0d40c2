import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { THREAD_MEMORY_ENV, threadMemoryMb, THREADS_ENV, THREADS_FORCE_ENV } from '../../src/synth/fleet-workers';
import { referenceInput, ROOT } from '../helpers';

/*
 * The render threads of a fleet (they run only compiled: the CLI in a child). A thread that runs out of its
 * heap is seen at once (not after a 300 s stall): one line naming the cluster, the limit and how to raise it,
 * nothing written. More threads than CPUs are not used unless forced.
 */

const work = mkdtempSync(path.join(tmpdir(), 'render-threads-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const LIB = path.join(ROOT, 'lib', 'src');

/** Copies of the reference description under other names, each with `tenants` tenants that borrow only (and run little outside Kueue, so many fit). */
function fleet(label: string, count: number, tenants: number): string[] {
  const dir = path.join(work, label);
  mkdirSync(dir);
  return Array.from({ length: count }, (_, i) => {
    const d = referenceInput();
    d.name = `${label}-${i}`;
    d.gitops.path = `dist/${d.name}`;
    d.tenants = Array.from({ length: tenants }, (__, j) => ({ name: `t${j}`, gpus: 0, unqueued: { cpu: '100m', memory: '128Mi' } }));
    const f = path.join(dir, `${d.name}.yaml`);
    writeFileSync(f, stringify(d));
    return f;
  });
}

describe.skipIf(process.platform !== 'linux')('render threads', () => {
  it('a thread that runs out of its heap: exit 2 at once, one line naming the cluster, the limit and how to raise it, nothing written', () => {
    // every cluster is too large for a 32 MB heap: whichever the worker takes kills it (the main thread has no such limit)
    const configs = fleet('oom', 3, 100);
    const out = path.join(work, 'oom-out');
    const r = spawnSync(process.execPath, [path.join(LIB, 'bin.js'), 'synth', ...configs.flatMap((c) => ['--config', c]), '--out', out, '--no-validate', '--quiet'], {
      env: { ...process.env, [THREADS_ENV]: '2', [THREAD_MEMORY_ENV]: '32' }, encoding: 'utf8', timeout: 280_000,
    });
    expect(r.signal, 'the synth did not end').toBeNull();
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^error: oom-\d: its render thread ended while rendering it, most likely out of memory \(each render thread's heap is limited to 32 MB: GPU_CLUSTER_MANIFESTS_THREAD_MEMORY=<MB> raises it, GPU_CLUSTER_MANIFESTS_THREADS=1 renders on the main thread alone\); nothing was written$/),
    ]);
    expect(existsSync(out)).toBe(false);
  });

  it('a module of the package missing where a render thread loads it: exit 2, one line saying the installation is incomplete and to reinstall, nothing written', () => {
    const configs = fleet('incomplete', 2, 1);
    // the MPIJob typed import (the reference cluster renders the MPIJob sample) cannot be found in the render threads only
    const preload = path.join(work, 'no-mpijob-in-threads.cjs');
    writeFileSync(preload, `const { isMainThread } = require('node:worker_threads');
const Module = require('node:module');
if (!isMainThread) {
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    if (/mpijob-kubeflow/.test(request)) throw Object.assign(new Error("Cannot find module '" + request + "'"), { code: 'MODULE_NOT_FOUND' });
    return resolve.call(this, request, ...rest);
  };
}
`);
    const out = path.join(work, 'incomplete-out');
    const r = spawnSync(process.execPath, ['--require', preload, path.join(LIB, 'bin.js'), 'synth', ...configs.flatMap((c) => ['--config', c]), '--out', out, '--no-validate', '--quiet'], {
      env: { ...process.env, [THREADS_ENV]: '2', [THREADS_FORCE_ENV]: '1' }, encoding: 'utf8', timeout: 280_000,
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^error: the installed gpu-cluster-manifests is incomplete \(render thread: Cannot find module '[^']*mpijob-kubeflow\.org'\): reinstall it \(npm ci\)$/),
    ]);
    expect(existsSync(out)).toBe(false);
  });

  it('a render thread\'s compiled code is cached too: written before the main thread ends the thread, nothing left over', () => {
    const configs = fleet('code-cache', 2, 1);
    const cache = path.join(work, 'code-cache-dir');
    const run = () => spawnSync(process.execPath, [path.join(LIB, 'bin.js'), 'synth', ...configs.flatMap((c) => ['--config', c]), '--out', path.join(work, 'code-cache-out'), '--no-validate', '--quiet'], {
      env: { ...process.env, [THREADS_ENV]: '2', [THREADS_FORCE_ENV]: '1', GPU_CLUSTER_MANIFESTS_CACHE: cache }, encoding: 'utf8', timeout: 280_000,
    });
    const r = run();
    expect(r.status, r.stderr).toBe(0);
    const files = readdirSync(path.join(cache, 'modules'));
    expect(files.filter((f) => f.startsWith('synth-worker-'))).toEqual([expect.stringMatching(/^synth-worker-[0-9a-f]{12}\.bin$/)]);
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it.skipIf(availableParallelism() >= 63)('more threads than CPUs are capped at the CPUs, with a note; forced, they are used', () => {
    const threads = (env: Record<string, string>) => spawnSync(process.execPath, ['-e', `const w = require(${JSON.stringify(path.join(LIB, 'synth', 'fleet-workers.js'))});
      console.log(w.renderThreads(1000, (l) => console.error(l)));`], { env: { ...process.env, ...env }, encoding: 'utf8' });
    const cpus = availableParallelism();
    const many = String(Math.min(64, cpus + 2));
    const capped = threads({ [THREADS_ENV]: many });
    expect(capped.stdout.trim()).toBe(String(cpus));
    expect(capped.stderr.trim()).toBe(`note: ${THREADS_ENV}=${many}: rendering on ${cpus} threads, one per CPU (${THREADS_FORCE_ENV}=1 uses ${many})`);
    const forced = threads({ [THREADS_ENV]: many, [THREADS_FORCE_ENV]: '1' });
    expect(forced.stdout.trim()).toBe(many);
    expect(forced.stderr).toBe('');
  });

  it('the heap limit comes from its variable; a bad value is bad input naming it', () => {
    expect(threadMemoryMb()).toBe(128);
    process.env[THREAD_MEMORY_ENV] = 'lots';
    try {
      expect(() => threadMemoryMb()).toThrow(`${THREAD_MEMORY_ENV}=lots: expected a number of MB from 32 to 65536`);
      process.env[THREAD_MEMORY_ENV] = '512';
      expect(threadMemoryMb()).toBe(512);
    } finally {
      delete process.env[THREAD_MEMORY_ENV];
    }
  });
});
