import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HAS_SCHEMAS, REFERENCE_FILE, ROOT } from '../helpers';

// The documented npm commands keep the CLI's contract: its exit code (npm passes it through, no
// task runner turns 2 into 1) and its output only (stderr: the CLI's lines and nothing else).
// These run `npm run`, as users and CI do; `npm test` compiles first, so the launcher's
// compile-on-change step has nothing to do here.
const CLI = path.join(ROOT, 'lib', 'src', 'cli.js');
const env = { ...process.env, CDK8S_CHECK_UPGRADE: 'false' };
const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

const dir = mkdtempSync(path.join(tmpdir(), 'npm-scripts-'));
const broken = path.join(dir, 'broken.yaml');
writeFileSync(broken, readFileSync(REFERENCE_FILE, 'utf8').replace('gpusPerNode: 8', 'gpusPerNode: eight'));

/** The arguments the npm script passes to the CLI before the user's (e.g. `schema --out ... --readme ...`). */
function scriptArgs(name: string): string[] {
  const m = /^node projenrc\/launch\.cjs (.*)$/.exec(scripts[name] ?? '');
  if (!m) throw new Error(`package.json script "${name}" does not run the launcher: ${scripts[name]}`);
  return m[1].split(' ');
}

/** npm's own banner on stdout (`> gpu-cluster-manifests@0.0.0 synth` / `> node ...`), which `npm run -s` drops. */
function withoutNpmBanner(stdout: string): string {
  return stdout.split('\n').filter((l, i, all) => !(l.startsWith('> ') || (l === '' && all[i + 1]?.startsWith('> ')))).join('\n').replace(/^\n+/, '');
}

const BAD_INPUT: [string, string[], RegExp][] = [
  ['synth', ['--config', broken, '--out', path.join(dir, 'out')], /nodes\.gpuWorkers\.gpusPerNode: expected a positive integer, got "eight"/],
  ['validate', [path.join(dir, 'missing')], /no such file or folder/],
  ['check', [REFERENCE_FILE], /is a file, not a folder/],
  ['diff', ['--config', broken], /nodes\.gpuWorkers\.gpusPerNode/],
  ['preflight', ['--no-such-option'], /no-such-option|unknown command/],
  ['init', ['--no-such-option'], /no-such-option|unknown command/],
  ['schema', ['--no-such-option'], /no-such-option/],
];

describe('npm run <command> with bad input', () => {
  it('has a launcher script for every command', () => {
    for (const [name] of BAD_INPUT) expect(scriptArgs(name)[0]).toBe(name);
  });

  it.each(BAD_INPUT)('npm run %s exits 2 and prints only the CLI\'s message', (name, args, says) => {
    const npm = spawnSync('npm', ['run', name, '--', ...args], { cwd: ROOT, env, encoding: 'utf8' });
    const direct = spawnSync(process.execPath, [CLI, ...scriptArgs(name), ...args], { cwd: ROOT, env, encoding: 'utf8' });
    expect(direct.status, direct.stderr).toBe(2);
    expect(npm.status, npm.stderr).toBe(2);
    expect(npm.stderr).toMatch(says);
    // exactly what the CLI itself prints: no "Task failed", no step headers, no "npm error" lines
    expect(npm.stderr).toBe(direct.stderr);
    expect(withoutNpmBanner(npm.stdout)).toBe(direct.stdout);
    expect(npm.stderr).not.toMatch(/npm error|Task .* failed|👾|\n\s+at /);
  });
});

describe('the launcher', () => {
  it('prints nothing and compiles nothing when the sources did not change', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'projenrc', 'launch.cjs'), '--build'], { cwd: ROOT, env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('');
  });

  it.skipIf(!HAS_SCHEMAS)('npm run validate passes a validation failure through as exit 1', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'npm-scripts-fail-'));
    writeFileSync(path.join(out, 'sc.yaml'), 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: x\nprovisioner: p\nvolumeBindingMod: Immediate\n');
    const r = spawnSync('npm', ['run', 'validate', '--', out], { cwd: ROOT, env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^error: .*volumeBindingMod: unknown field$/m);
    expect(r.stderr).not.toMatch(/npm error/);
  });
});

// The plain `npm run synth` (every description into dist/) is answered by the launcher's up-to-date
// record when nothing it reads changed. This test renders into the repository's dist/, so it first
// makes sure dist/ is a fresh render (a stale dist/ fails here instead of being rewritten by a test).
describe('the launcher\'s up-to-date check of the plain synth', () => {
  const LAUNCHER = path.join(ROOT, 'projenrc', 'launch.cjs');
  const cache = mkdtempSync(path.join(tmpdir(), 'up-to-date-'));
  const record = path.join(cache, 'synth-up-to-date.json');
  const synth = () => spawnSync(process.execPath, [LAUNCHER, 'synth'], { cwd: ROOT, env: { ...env, GPU_CLUSTER_MANIFESTS_CACHE: cache }, encoding: 'utf8' });
  const UP_TO_DATE = /dist already up to date \(\d+ files\): no description, source or schema file changed/;

  it.skipIf(!HAS_SCHEMAS)('answers from its record only while the inputs and dist/ are what the record says', () => {
    const fresh = spawnSync(process.execPath, [CLI, 'diff', '--format', 'json'], { cwd: ROOT, env, encoding: 'utf8' });
    const d = JSON.parse(fresh.stdout) as { added: number; removed: number; changed: number; files: unknown[] };
    expect(d.added + d.removed + d.changed + d.files.length, 'dist/ is not a fresh render: run npm run synth').toBe(0);

    const first = synth();
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).not.toMatch(UP_TO_DATE);
    const second = synth();
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toMatch(UP_TO_DATE);
    // the same per-cluster summary as the render it stands for
    expect(second.stdout.split('\n').slice(0, -2)).toEqual(first.stdout.split('\n').slice(0, -2));

    // dist/ no longer what the record says (as after an edit by hand): rendered again
    const saved = readFileSync(record, 'utf8');
    const edited = JSON.parse(saved) as { key: string; files: Record<string, string> };
    edited.files[Object.keys(edited.files)[0]] = '0'.repeat(64);
    writeFileSync(record, JSON.stringify(edited));
    expect(synth().stdout).not.toMatch(UP_TO_DATE);

    // an input changed (another key): rendered again
    writeFileSync(record, JSON.stringify({ ...(JSON.parse(saved) as object), key: 'another' }));
    expect(synth().stdout).not.toMatch(UP_TO_DATE);
    expect(synth().stdout).toMatch(UP_TO_DATE);
  });
});
