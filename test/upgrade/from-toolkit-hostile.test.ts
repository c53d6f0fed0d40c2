import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli';
import { ENGINE_LIMITS } from '../../src/engines/limits';
import { INPUT_LIMITS } from '../../src/input/limits';
import { COMPONENTS } from '../../src/upgrade/components';
import { HAS_UPSTREAM, runCliInProcess, TRAINING_FILE } from '../helpers';

/*
 * upgrade-plan --from-toolkit DIR against folders that are no toolkit, or a toolkit that misbehaves (issue 52, hostile
 * input round five, 9): DIR's package.json is read through the bounded input reader (a FIFO, a device, a huge file
 * are refused at once), and its code runs only as a child of its own, bounded as an engine run is (time, data memory,
 * output) and ended with everything it started; what it prints is parsed, never trusted, and never reaches the
 * terminal. Each refusal is exit 2 with one line naming --from-toolkit, and this process never loads DIR's code.
 */

let dir: string;
beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'from-toolkit-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The pins of a well-behaved versions module: every component at a release, as the toolkit's own compiled module exports them. */
const versionsModule = (pins: Record<string, string>) => `exports.VERSIONS = ${JSON.stringify(Object.fromEntries(Object.entries(pins).map(([k, v]) => [k, { version: v }])))};\n`;

/** A synth that writes the cluster folder of `--config` (empty: the plan's old end) and ends. */
const EMPTY_SYNTH = `const path = require('path'); const fs = require('fs');
const args = process.argv.slice(2); const out = args[args.indexOf('--out') + 1];
const name = /^name: (\\S+)/m.exec(fs.readFileSync(args[args.indexOf('--config') + 1], 'utf8'))[1];
fs.mkdirSync(path.join(out, name), { recursive: true });`;

interface Toolkit {
  readonly packageJson?: string | ((file: string) => void);
  readonly bin?: string;
  readonly versions?: string;
}

/** A folder laid out as an installed toolkit (package.json, lib/src/bin.js, lib/src/versions.js), with the given parts. */
function toolkit(name: string, t: Toolkit): string {
  const root = path.join(dir, name);
  mkdirSync(path.join(root, 'lib', 'src'), { recursive: true });
  const pkg = path.join(root, 'package.json');
  if (typeof t.packageJson === 'function') t.packageJson(pkg);
  else writeFileSync(pkg, t.packageJson ?? JSON.stringify({ name: 'gpu-cluster-manifests', version: '0.0.1' }));
  writeFileSync(path.join(root, 'lib', 'src', 'bin.js'), t.bin ?? EMPTY_SYNTH);
  writeFileSync(path.join(root, 'lib', 'src', 'versions.js'), t.versions ?? versionsModule({}));
  return root;
}

const plan = (root: string, env: Record<string, string> = {}) => runCliInProcess(['upgrade-plan', '--config', TRAINING_FILE, '--from-toolkit', root], { env, cwd: dir });

/** Whether a process still runs (a zombie does not). */
function alive(pid: number): boolean {
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  return stat !== '' && !/^\d+ \(.*\) [ZX] /.test(stat);
}

const LINUX = process.platform === 'linux';
/** A bound short enough for the cases that hang (the engine timeout bounds the toolkit's children). */
const SHORT = { [ENGINE_LIMITS.timeout.env]: '3' };

describe('DIR is read as data: its package.json through the bounded reader', () => {
  it.each<[string, Toolkit, RegExp]>([
    ['a FIFO', { packageJson: (f) => spawnSync('mkfifo', [f]) }, /package\.json: not a regular file \(a pipe\); name the folder of an installed gpu-cluster-manifests/],
    ['a link to /dev/zero', { packageJson: (f) => symlinkSync('/dev/zero', f) }, /not a regular file \(a device or socket\)/],
    ['a dangling link', { packageJson: (f) => symlinkSync(path.join(dir, 'nowhere'), f) }, /a symbolic link that leads nowhere/],
    ['larger than its limit', { packageJson: JSON.stringify({ name: 'gpu-cluster-manifests', pad: 'x'.repeat(2 * 1024 * 1024) }) }, new RegExp(`package\\.json: the file is larger than 1 MiB, far more than a package\\.json needs.*${INPUT_LIMITS.package.env}`)],
    ['not JSON', { packageJson: '{"name": ' }, /package\.json: .*invalid YAML/],
    ['another package', { packageJson: JSON.stringify({ name: 'left-pad\u001b[2J' }) }, /its package\.json names "left-pad\\u001b\[2J", not gpu-cluster-manifests/],
  ])('package.json %s: exit 2 in one line, at once', async (name, t, says) => {
    if (!LINUX && name === 'a FIFO') return;
    const r = await plan(toolkit(`pkg-${name.replace(/\W+/g, '-')}`, t));
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^error: --from-toolkit .*: ${says.source}`))]);
    expect(r.stdout).toBe('');
  }, 120_000);
});

describe('DIR\'s code runs only as a bounded child of its own', () => {
  it('a versions module that exits 0 without a word, or prints escape codes: no pins, exit 2; nothing it prints reaches the terminal', async () => {
    for (const versions of ['process.exit(0);', 'process.stdout.write("\\u001b]0;pwned\\u0007\\u001b[2J"); process.stderr.write("\\u001b[31mred"); process.exit(0);']) {
      const r = await plan(toolkit(`exits-${versions.length}`, { versions }));
      expect(r.code, r.stderr).toBe(EXIT.badInput);
      expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^error: --from-toolkit .*: its versions module \(lib\/src\/versions\.js\) printed no pins: is it a gpu-cluster-manifests package\?/)]);
      expect(r.stdout + r.stderr).not.toContain('\u001b');
    }
  }, 120_000);

  it('pins that are no releases (a line break, a path, an escape sequence) are not believed', async () => {
    for (const pin of ['0.19.2\nforged: line', '../../etc', '\u001b]0;x\u0007']) {
      const r = await plan(toolkit(`pins-${String(pin).length}`, { versions: `exports.VERSIONS = { kueue: { version: ${JSON.stringify(pin)} } };` }));
      expect(r.code, r.stderr).toBe(EXIT.badInput);
      expect(r.stderr).toMatch(/its versions module pins kueue to .*, which is no release/);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).not.toContain('\u001b');
    }
  }, 120_000);

  it('a versions module that never returns is stopped at the bound', async () => {
    const r = await plan(toolkit('hangs', { versions: 'for (;;) {}' }), SHORT);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/^error: --from-toolkit .*: loading its versions module failed: gpu-cluster-manifests 0\.0\.1: no answer within 3 s; stopped/);
  }, 120_000);

  it('a versions module that takes all the memory it can is stopped at the memory bound', async () => {
    const r = await plan(toolkit('memory', { versions: 'const a = []; for (;;) a.push(new Array(1e6).fill(1.5));' }), { [ENGINE_LIMITS.memory.env]: '512', ...SHORT });
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/^error: --from-toolkit .*: loading its versions module failed: .*(memory passed the bound of 512 MiB|out of memory|no answer within 3 s)/);
  }, 120_000);

  it.skipIf(!LINUX)('a synth that hangs is stopped, and what it started (in a session of its own) is ended with it', async () => {
    const pids = path.join(dir, 'sleeper.pid');
    const bin = `const { spawn } = require('child_process');
const c = spawn('setsid', ['sleep', '600'], { detached: true, stdio: 'ignore' });
require('fs').writeFileSync(${JSON.stringify(pids)}, String(c.pid));
c.unref();
setInterval(() => {}, 1000);`;
    const r = await plan(toolkit('synth-hangs', { bin }), SHORT);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/^error: --from-toolkit .*: its synth of .*training-cluster\.yaml failed: gpu-cluster-manifests 0\.0\.1: no answer within 3 s; stopped/);
    const pid = Number(readFileSync(pids, 'utf8'));
    expect(alive(pid)).toBe(false);
  }, 120_000);

  it('a synth that floods its output is stopped at 1 MiB; one that writes nothing is refused', async () => {
    const flood = await plan(toolkit('floods', { bin: 'const b = "x".repeat(65536); for (let i = 0; i < 1000; i++) process.stdout.write(b);' }));
    expect(flood.code).toBe(EXIT.badInput);
    expect(flood.stderr).toMatch(/its synth of .* failed: .*output over 1 MiB; stopped/);
    const nothing = await plan(toolkit('writes-nothing', { bin: 'process.exit(0);' }));
    expect(nothing.code).toBe(EXIT.badInput);
    expect(nothing.stderr).toMatch(/^error: --from-toolkit .*: its synth of .*training-cluster\.yaml wrote no training-cluster\/; nothing was written$/m);
  }, 120_000);

  it('DIR\'s code never runs in this process: a versions module that would end it ends only its child', async () => {
    const marker = path.join(dir, 'loaded-here');
    const versions = `if (process.pid === ${process.pid}) require('fs').writeFileSync(${JSON.stringify(marker)}, 'x'); process.exit(0);`;
    const r = await plan(toolkit('would-exit', { versions }));
    expect(r.code).toBe(EXIT.badInput);
    expect(existsSync(marker)).toBe(false);
  }, 120_000);
});

describe.skipIf(!HAS_UPSTREAM)('a release the package does not carry', () => {
  it('pinned by the other toolkit: exit 2 naming --from-toolkit, as the docs say', async () => {
    const kueue = COMPONENTS.kueue.key;
    const r = await plan(toolkit('old-kueue', { versions: versionsModule({ [kueue]: '0.1.0' }) }));
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^error: --from-toolkit: kueue 0\.1\.0 \(pinned by gpu-cluster-manifests 0\.0\.1 \(.*old-kueue\)\): this toolkit carries no vendored release of it \(it carries /)]);
  }, 240_000);
});
