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
