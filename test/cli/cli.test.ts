import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_OUT } from '../../src/paths';
import { HAS_SCHEMAS, REFERENCE_FILE, ROOT } from '../helpers';

// These run the compiled CLI (lib/), as users do: `npm test` compiles first.
const CLI = path.join(ROOT, 'lib', 'src', 'cli.js');
const env = { ...process.env, CDK8S_CHECK_UPGRADE: 'false' };

function cli(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, env, encoding: 'utf8' });
}

function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(path.relative(dir, p), readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

describe('the compiled CLI', () => {
  it('explains itself with --help', () => {
    const r = cli('--help');
    expect(r.status).toBe(0);
    for (const word of ['synth', 'validate', '--config', '--out', '--schemas', 'Exit codes']) expect(r.stdout).toContain(word);
  });

  it('exits 2 on a bad description, without a stack trace', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cli-'));
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, readFileSync(REFERENCE_FILE, 'utf8').replace('gpusPerNode: 8', 'gpusPerNode: eight'));
    const r = cli('synth', '--config', bad, '--out', path.join(dir, 'out'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('nodes.gpuWorkers.gpusPerNode: expected a positive integer, got "eight"');
    expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
  });

  it('exits 2 and says so when the schema directory is missing', () => {
    const r = cli('validate', DEFAULT_OUT, '--schemas', '/nonexistent/crds');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/schema directory \/nonexistent\/crds does not exist/);
  });

  it.skipIf(!HAS_SCHEMAS)('renders one description with a summary, and validates the result', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'cli-'));
    const r = cli('synth', '--config', REFERENCE_FILE, '--out', out);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/instant-cluster: \d+ objects in \d+ folders/);
    expect(r.stdout).toMatch(/storage\s+\d+\s+ConfigMap 1, StorageClass 3/);
    expect(r.stdout).toMatch(/wrote \d+ files to .* in \d+\.\d\d s/);
    const v = cli('validate', path.join(out, 'instant-cluster'));
    expect(v.status, v.stderr).toBe(0);
    expect(v.stdout).toMatch(/^ok: \d+ objects, 0 errors/m);
  });

  it.skipIf(!HAS_SCHEMAS)('validate exits 1 on an unknown field', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cli-'));
    writeFileSync(path.join(dir, 'sc.yaml'), 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: x\nprovisioner: p\nvolumeBindingMod: Immediate\n');
    const r = cli('validate', dir, '--format', 'json');
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).issues[0]).toMatchObject({ path: 'volumeBindingMod', message: 'unknown field' });
  });

  it.skipIf(!HAS_SCHEMAS)('npx cdk8s synth yields the same manifests as dist/, into its own output folder', () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'cdk8s-')), 'cdk8s.out');
    const r = spawnSync('npx', ['cdk8s', 'synth', '--output', out], { cwd: ROOT, env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(tree(out)).toEqual(tree(DEFAULT_OUT));
  }, 60_000);
});
