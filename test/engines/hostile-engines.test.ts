import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configMaps, ENGINE_CACHE, fakeEngines, processGone } from './fake-engines';
import { describeEngines, EngineBudget, EngineError, resolveEngines, runEngine } from '../../src/engines';
import { parseOutput } from '../../src/upstream/render';
import { aliasBomb } from '../helpers';

/*
 * The engine runner against hostile engines (small shell scripts): every run ends within its bound with one
 * line, kills what the engine started, and never lets the engine's output reach the terminal raw or grow the
 * process without bound. In-process: the runner is the point, not the CLI (test/cli/hostile-check.test.ts
 * runs the CLI where the process boundary is the point, with its memory peaks).
 */

const work = mkdtempSync(path.join(tmpdir(), 'hostile-engines-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const helm = (name: string, body: string) => path.join(fakeEngines(work, name, { helm: body }), 'helm');

/** The error a run rejects with (fails the test when it resolves). */
async function failure(run: Promise<unknown>): Promise<EngineError> {
  const e = await run.then(() => undefined, (x: unknown) => x);
  expect(e).toBeInstanceOf(EngineError);
  return e as EngineError;
}

/** Waits (bounded) until the processes whose pids a script wrote are gone. */
async function allGone(pidFile: string): Promise<boolean> {
  const pids = readFileSync(pidFile, 'utf8').trim().split(/\s+/).map(Number);
  for (let i = 0; i < 50; i++) {
    if (pids.every(processGone)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const LINUX = process.platform === 'linux';
const HAS_SETSID = ['/usr/bin/setsid', '/bin/setsid'].some((f) => existsSync(f));

describe('every engine run is bounded', () => {
  it('an engine that never ends is stopped at its bound, with the variable that raises it', async () => {
    const e = await failure(runEngine(helm('hang', 'exec sleep 600'), ['template'], { timeoutMs: 300, label: 'helm template x 1.0' }));
    expect(e.message).toBe('helm template x 1.0: no answer within 0.3 s; stopped (GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=<seconds> raises it)');
    expect(e.bounded).toBe(true);
  });

  it('the bound comes from GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT; a bad value is bad input naming it', async () => {
    process.env.GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT = '0.2';
    try {
      expect((await failure(runEngine(helm('hang-env', 'exec sleep 600'), ['template']))).reason).toMatch(/^no answer within 0\.2 s/);
      process.env.GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT = 'soon';
      await expect(runEngine('/bin/true', [])).rejects.toThrow(/^GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=soon: expected a number of seconds greater than 0 and at most 3600$/);
    } finally {
      delete process.env.GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT;
    }
  });

  it.skipIf(!LINUX)('a forked child that holds standard output does not keep the run waiting, and is killed when the engine ends', async () => {
    const pids = path.join(work, 'forked.pids');
    const out = await runEngine(helm('forked', `sleep 600 & echo $! > ${pids}; echo rendered`), ['template'], { timeoutMs: 60_000 });
    expect(out).toBe('rendered\n');
    expect(await allGone(pids)).toBe(true);
  });

  it.skipIf(!LINUX || !HAS_SETSID)('a detached child (its own session and group) is found by its run\'s token and killed', async () => {
    const pids = path.join(work, 'detached.pids');
    const out = await runEngine(helm('detached', `setsid sh -c 'echo $$ > ${pids}; exec sleep 600' < /dev/null > /dev/null 2>&1 & sleep 0.2; echo ok`), ['template'], { timeoutMs: 60_000 });
    expect(out).toBe('ok\n');
    expect(await allGone(pids)).toBe(true);
  });

  it.skipIf(!LINUX)('at the bound the engine\'s whole group goes, its children too', async () => {
    const pids = path.join(work, 'group.pids');
    await failure(runEngine(helm('group', `sleep 600 & echo $! > ${pids}; sleep 600`), ['template'], { timeoutMs: 300 }));
    expect(await allGone(pids)).toBe(true);
  });

  it('output over the byte bound, on standard output or error, stops the engine', async () => {
    const out = await failure(runEngine(helm('flood', 'exec yes'), ['template'], { maxOutputBytes: 1024 * 1024, label: 'helm template x' }));
    expect(out.message).toBe('helm template x: output over 1 MiB; stopped (GPU_CLUSTER_MANIFESTS_MAX_ENGINE_OUTPUT_MIB=<MiB> raises it)');
    const err = await failure(runEngine(helm('flood-err', 'yes >&2'), ['template'], { maxOutputBytes: 1024 * 1024 }));
    expect(err.reason).toMatch(/^error output over 1 MiB; stopped/);
  });

  it('an engine\'s memory is capped before it starts: past GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB its allocations fail, and the run is one line naming the bound', async () => {
    // a 256 MiB string, built by doubling (some 400 MB of memory unbounded)
    const grow = 'awk \'BEGIN { s = "xxxxxxxxxxxxxxxx"; for (i = 0; i < 24; i++) s = s s; print length(s) }\'';
    process.env.GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB = '64';
    try {
      const e = await failure(runEngine(helm('grow', grow), ['template'], { label: 'helm template x' }));
      expect(e.message).toBe('helm template x: its memory passed the bound of 64 MiB; stopped (GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB=<MiB> raises it)');
      expect(e.bounded).toBe(true);
      process.env.GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB = 'plenty';
      await expect(runEngine('/bin/true', [])).rejects.toThrow(/^GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB=plenty: expected a whole number of MiB greater than 0/);
    } finally {
      delete process.env.GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB;
    }
    // within the bound it runs as ever
    expect(await runEngine(helm('grow-within', grow), ['template'])).toBe('268435456\n');
  });

  it('documents are counted as they stream in: 6 million tiny documents stop at the bound, long before they are parsed', async () => {
    const e = await failure(runEngine(helm('tiny', 'yes -- "--- {a: 1}" | head -n 6000000'), ['template'], { maxDocuments: 10_000 }));
    expect(e.reason).toBe('output over 10000 YAML documents; stopped (GPU_CLUSTER_MANIFESTS_MAX_ENGINE_DOCUMENTS=<documents> raises it)');
    const maps = await failure(runEngine(helm('configmaps', configMaps(20_000)), ['template'], { maxDocuments: 10_000 }));
    expect(maps.reason).toMatch(/^output over 10000 YAML documents/);
    // below the bound the documents are all there
    expect(parseOutput(await runEngine(helm('some', configMaps(50)), ['template'], { maxDocuments: 10_000 }), 'x').objects).toHaveLength(50);
  });

  it('an engine killed by a signal, or failing, is one line with its last line of standard error, control characters stripped', async () => {
    const segv = await failure(runEngine(helm('segv', 'echo "starting" >&2; kill -SEGV $$'), ['template'], { label: 'helm template x' }));
    expect(segv.message).toBe('helm template x: killed by SIGSEGV: starting');
    const ansi = await failure(runEngine(helm('ansi', 'printf "level=INFO msg=x\\nError: \\033[31mboom\\033[0m\\007 here\\n" >&2; exit 3'), ['template'], { label: 'helm template x' }));
    expect(ansi.message).toBe('helm template x: exit 3: Error: boom here');
    expect(ansi.message).not.toMatch(/[\u0000-\u001f]/);
  });

  it('the command\'s budget bounds every run, and refuses runs once it is spent (retries never multiply it)', async () => {
    const budget = new EngineBudget(400);
    const first = await failure(runEngine(helm('budget', 'exec sleep 600'), ['template'], { budget, label: 'helm template x' }));
    expect(first.message).toBe('helm template x: the engines\' work of this command passed its bound of 0.4 s; stopped (GPU_CLUSTER_MANIFESTS_ENGINE_BUDGET=<seconds> raises it)');
    const next = await failure(runEngine('/bin/echo', ['never'], { budget }));
    expect(next.reason).toMatch(/passed its bound of 0\.4 s/);
    expect(next.bounded).toBe(true);
  });

  it('the parsed output is bounded: an alias bomb, nesting past the limit and duplicate keys are one line, not an internal error', () => {
    expect(() => parseOutput(aliasBomb(), 'helm template x')).toThrow(/^helm template x: its output is not usable YAML: YAML aliases expand to more than 1000 copies/);
    const deep = `${Array.from({ length: 150 }, (_, i) => `${' '.repeat(i)}k:`).join('\n')} 1\n`;
    expect(() => parseOutput(deep, 'helm template x')).toThrow(/^helm template x: its output is not usable YAML: .*nested/);
    expect(() => parseOutput('kind: A\nkind: B\n', 'helm template x')).toThrow(/^helm template x: its output is not usable YAML: .*duplicate/);
    expect(() => parseOutput('--- {}\n'.repeat(20), 'x', 10)).toThrow(/output over 10 YAML documents/);
  });
});

describe('finding the engines', () => {
  it('a version answer with terminal escapes is no version: passed over, and said without the escapes', async () => {
    const bin = fakeEngines(work, 'escapes', { helm: 'exit 0', helmVersion: 'v4.1.4\\033]0;pwned\\007\\033[2J' });
    const e = await resolveEngines({ searchPath: bin, cacheDir: ENGINE_CACHE });
    expect(e.helm.source).toBe('package');
    const lines = describeEngines(e);
    expect(lines.find((l) => l.startsWith('passed over'))).toMatch(/helm version: unexpected answer "v4\.1\.4/);
    for (const l of lines) expect(l).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('a version of an engine on PATH is taken only when it is all version', async () => {
    const e = await resolveEngines({ searchPath: fakeEngines(work, 'plain', { helm: 'exit 0', helmVersion: 'v4.2.0+g3d8990f' }), cacheDir: ENGINE_CACHE });
    expect(e.helm).toMatchObject({ source: 'PATH', version: 'v4.2.0+g3d8990f' });
    expect(existsSync(e.helm.path)).toBe(true);
  });
});
