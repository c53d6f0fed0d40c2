import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TS_MEMORY_ENV, TS_TIME_ENV } from '../../src/model/load-typescript';
import { BIN, ROOT } from '../helpers';

// A TypeScript description is a program: it runs in a process of its own, bounded in time and
// memory, and whatever it does there ends as bad input (exit 2) naming the file and the reason:
// never a hang, a V8 crash dump, an exit 0 having written nothing, or a CLI kept alive by a timer.
// Each case runs the CLI as users do and asserts the bound it documents (the limit set here plus
// an allowance for starting the CLI and transpiling on a loaded machine), not a speed.
const CLI = BIN;
const TYPED = path.join(ROOT, 'test', 'fixtures', 'descriptions', 'typed-cluster.ts');
const dir = mkdtempSync(path.join(tmpdir(), 'ts-sandbox-'));
/** Starting the CLI, the sandbox and the TypeScript transpiler on two shared cores. */
const ALLOWANCE_MS = 30_000;

function synth(name: string, source: string, env: Record<string, string> = {}) {
  const file = path.join(dir, `${name}.ts`);
  writeFileSync(file, source);
  const out = path.join(dir, `out-${name}`);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [CLI, 'synth', '--config', file, '--out', out, '--no-validate'], {
    env: { ...process.env, ...env }, encoding: 'utf8', timeout: 600_000,
  });
  return { ...r, file, out, ms: Date.now() - t0 };
}

/** The reason, once, on the file's line, and nothing else: no stack, no V8 dump, nothing written. */
function expectRefused(r: ReturnType<typeof synth>, reason: RegExp): void {
  expect(r.status, r.stderr).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines).toEqual([expect.stringContaining(`${r.file}: `)]);
  expect(lines[0]).toMatch(reason);
  expect(r.stderr).not.toMatch(/FATAL|heap|^\s+at |<--- /m);
  expect(existsSync(r.out)).toBe(false);
}

describe('a TypeScript description runs bounded, in a process of its own', () => {
  it('a description that never ends: exit 2 within the time limit', () => {
    const seconds = 3;
    const r = synth('loop', 'while (true) {}\nexport default {};\n', { [TS_TIME_ENV]: String(seconds) });
    expectRefused(r, new RegExp(`did not finish within ${seconds} s .*${TS_TIME_ENV}=`));
    expect(r.ms).toBeLessThan(seconds * 1000 + ALLOWANCE_MS);
  });

  it('a description that allocates without end: exit 2 at the memory limit, no V8 crash dump', () => {
    const r = synth('alloc', 'const all: number[][] = [];\nwhile (true) all.push(new Array(1e6).fill(1));\nexport default {};\n', { [TS_MEMORY_ENV]: '128', [TS_TIME_ENV]: '120' });
    expectRefused(r, new RegExp(`used more than 128 MiB of memory .*${TS_MEMORY_ENV}=`));
  });

  it('a description that allocates buffers without end (outside the JavaScript heap): exit 2', () => {
    const r = synth('buffers', 'const all: Buffer[] = [];\nwhile (true) all.push(Buffer.allocUnsafeSlow(64 * 1024 * 1024));\nexport default {};\n', { [TS_MEMORY_ENV]: '128', [TS_TIME_ENV]: '120' });
    expectRefused(r, /used more than 128 MiB of memory/);
  });

  it('a description that exits the process: exit 2, not 0 with nothing written', () => {
    const r = synth('exit', 'process.exit(0);\nexport default {};\n');
    expectRefused(r, /calls process\.exit\(0\)/);
  });

  it('a description that ends its process another way: exit 2', () => {
    const r = synth('kill', 'process.kill(process.pid, \'SIGKILL\');\nexport default {};\n');
    expectRefused(r, /process was killed \(SIGKILL\)/);
  });

  it('a description that leaves a timer running: exit 2, and the CLI does not linger', () => {
    const r = synth('timer', `${readFileSync(TYPED, 'utf8')}\nsetInterval(() => {}, 1000);\n`, { [TS_TIME_ENV]: '60' });
    expectRefused(r, /leaves work running .*a timer/);
    expect(r.ms).toBeLessThan(60_000);
  });

  it('a syntax error: its message once', () => {
    const r = synth('syntax', 'import { defineCluster } from \'gpu-cluster-manifests\';\nexport default defineCluster({\n  name: ,\n});\n');
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr.match(/Expression expected/g)).toHaveLength(1);
    expect(r.stderr).toMatch(/invalid TypeScript \(line 3\): Expression expected/);
  });

  it('a good description renders, and what it prints is passed on', () => {
    const r = synth('good', readFileSync(TYPED, 'utf8').replace('export default', 'console.log(\'hello from the description\');\nexport default'));
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('hello from the description');
    expect(r.stdout).not.toContain('hello from the description');
    expect(existsSync(path.join(r.out, 'typed-cluster'))).toBe(true);
  });

  it('an unusable limit setting is bad input naming the variable', () => {
    const r = synth('limit', readFileSync(TYPED, 'utf8'), { [TS_TIME_ENV]: 'forever' });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`${TS_TIME_ENV}=forever: expected a number of seconds`));
  });
});
