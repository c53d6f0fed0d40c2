import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli';
import { installedFrom } from '../../src/commands/installed-from';
import { runNew } from '../../src/commands/new';
import { descriptionJsonSchemaText, fleetJsonSchemaText } from '../../src/model/json-schema';
import { packageVersion } from '../../src/paths';
import { PROJECT_FILE, readProject } from '../../src/project/project-file';
import { runMain } from '../helpers';

const run = runMain;

describe('new DIR: a clusters repository', () => {
  it('pins this toolkit exactly, names its folders in the project file, and brings a CI script, a README and the description schema', async () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'new-')), 'My Clusters');
    const r = await run('new', dir);
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    expect(readdirSync(dir).sort()).toEqual(['.gitignore', '.npmrc', 'README.md', 'ci.sh', 'clusters', PROJECT_FILE, 'package.json'].sort());
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: 'my-clusters', private: true, devDependencies: { 'gpu-cluster-manifests': packageVersion() }, engines: { node: '>= 20' }, scripts: { test: 'sh ci.sh' } });
    expect(readProject(path.join(dir, PROJECT_FILE))).toMatchObject({ clusters: path.join(dir, 'clusters'), out: path.join(dir, 'dist') });
    // an empty descriptions folder but for the schema the descriptions' $schema line names: init writes the first one
    expect(readdirSync(path.join(dir, 'clusters')).sort()).toEqual(['cluster-description.schema.json', 'fleet.schema.json']);
    expect(readFileSync(path.join(dir, 'clusters', 'cluster-description.schema.json'), 'utf8')).toBe(descriptionJsonSchemaText());
    // the fleet description's too (fleet.yaml beside the descriptions), which schema rewrites and ci.sh compares
    expect(readFileSync(path.join(dir, 'clusters', 'fleet.schema.json'), 'utf8')).toBe(fleetJsonSchemaText());
    // the CI script renders, fails on drift of the committed output and the schema, then checks
    const ci = readFileSync(path.join(dir, 'ci.sh'), 'utf8');
    expect(ci).toMatch(/^#!\/bin\/sh\n/);
    expect(ci.split('\n').filter((l) => l.startsWith('npx '))).toEqual([
      'npx --no-install gpu-cluster-manifests synth --quiet',
      'npx --no-install gpu-cluster-manifests schema',
      'npx --no-install gpu-cluster-manifests check',
    ]);
    expect(ci).toContain('git status --porcelain -- dist clusters/cluster-description.schema.json clusters/fleet.schema.json');
    // eslint-disable-next-line no-bitwise
    expect(statSync(path.join(dir, 'ci.sh')).mode & 0o111).not.toBe(0);
    expect(readFileSync(path.join(dir, '.gitignore'), 'utf8').split('\n')).toEqual(expect.arrayContaining(['node_modules/', '/dist/.gpu-cluster-manifests.*', '/dist.tmp-*/']));
    expect(readFileSync(path.join(dir, '.npmrc'), 'utf8')).toMatch(/^legacy-peer-deps=true$/m);
    const readme = readFileSync(path.join(dir, 'README.md'), 'utf8');
    for (const command of ['npm ci', 'init --snapshot', 'preflight', 'synth', 'check', 'diff', 'npm install --save-dev --save-exact gpu-cluster-manifests@']) expect(readme).toContain(command);
    // its links lead somewhere that exists: the package's own documentation, which the package ships (no registry page before it is published)
    expect(readme).not.toMatch(/https?:\/\//);
    expect(readme).toContain('node_modules/gpu-cluster-manifests/README.md');
    expect(r.out.at(-1)).toMatch(/^next: cd .*My Clusters && npm install, then npx gpu-cluster-manifests init/);
  });

  it('refuses a folder that is not empty, a file, and no folder or two, in one line each (exit 2)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'new-'));
    writeFileSync(path.join(dir, 'mine.txt'), 'keep');
    const notEmpty = await run('new', dir);
    expect(notEmpty.code).toBe(EXIT.badInput);
    expect(notEmpty.err).toEqual([expect.stringMatching(/^error: new: .* is not empty \(mine\.txt\); name a new or empty folder; nothing was written$/)]);
    expect(readdirSync(dir)).toEqual(['mine.txt']);
    const file = await run('new', path.join(dir, 'mine.txt'));
    expect(file.err).toEqual([expect.stringMatching(/mine\.txt is a file; name a new or empty folder/)]);
    for (const args of [[], ['a', 'b']]) {
      const r = await run('new', ...args);
      expect(r.code).toBe(EXIT.badInput);
      expect(r.err).toEqual([expect.stringMatching(/^error: new: name one folder for the repository \(gpu-cluster-manifests new DIR\)/)]);
    }
    // an empty folder is fine
    const empty = path.join(dir, 'empty');
    mkdirSync(empty);
    expect((await run('new', empty)).code).toBe(EXIT.ok);
  });
});

/**
 * A toolkit installed as npm installs it (npx --package ./x.tgz writes the same): <root>/node_modules/gpu-cluster-manifests,
 * and the hidden lockfile's entry of it (resolved relative to <root>, the tarball's sha512 as integrity).
 */
function installed(resolved: string, tarball?: { file: string; text: string }, integrity?: string) {
  const work = mkdtempSync(path.join(tmpdir(), 'installed-'));
  const installRoot = path.join(work, 'npx-cache');
  const packageRoot = path.join(installRoot, 'node_modules', 'gpu-cluster-manifests');
  mkdirSync(packageRoot, { recursive: true });
  if (tarball) writeFileSync(path.join(work, tarball.file), tarball.text);
  const sha512 = tarball && `sha512-${createHash('sha512').update(tarball.text).digest('base64')}`;
  const entry = { version: '0.1.0', resolved, integrity: integrity ?? sha512 };
  writeFileSync(path.join(installRoot, 'node_modules', '.package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: { 'node_modules/gpu-cluster-manifests': entry } }));
  return { work, from: installedFrom({ installRoot, packageRoot, version: '0.1.0' }) };
}

describe('new pins what the toolkit was installed from', () => {
  it('a tarball (npx --package ./x.tgz): copied into vendor/ and pinned there, so that a CI clone installs it', () => {
    const { work, from } = installed('file:../gpu-cluster-manifests-0.1.0.tgz', { file: 'gpu-cluster-manifests-0.1.0.tgz', text: 'the packed toolkit' });
    expect(from).toEqual({ kind: 'tarball', file: path.join(work, 'gpu-cluster-manifests-0.1.0.tgz') });
    const dir = path.join(work, 'repo');
    const out: string[] = [];
    expect(runNew([dir], { out: (l) => out.push(l), err: () => {} }, from)).toBe(EXIT.ok);
    expect(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).devDependencies).toEqual({ 'gpu-cluster-manifests': 'file:vendor/gpu-cluster-manifests-0.1.0.tgz' });
    expect(readFileSync(path.join(dir, 'vendor', 'gpu-cluster-manifests-0.1.0.tgz'), 'utf8')).toBe('the packed toolkit');
    expect(out).toContain('pinned gpu-cluster-manifests file:vendor/gpu-cluster-manifests-0.1.0.tgz: the tarball it was installed from, copied into vendor/ (commit it: CI clones install it from there)');
    expect(readFileSync(path.join(dir, 'README.md'), 'utf8')).toContain('npm install --save-dev ./vendor/gpu-cluster-manifests-<version>.tgz');
  });

  it('a hidden lockfile without the source (the project\'s lock decided it): the project\'s package-lock.json says it', () => {
    const { work, from } = installed('file:../x.tgz', { file: 'x.tgz', text: 'packed' });
    const installRoot = path.join(work, 'npx-cache');
    const hidden = path.join(installRoot, 'node_modules', '.package-lock.json');
    const lock = readFileSync(hidden, 'utf8');
    writeFileSync(path.join(installRoot, 'package-lock.json'), lock);
    writeFileSync(hidden, lock.replace(/"resolved":"[^"]*",/, ''));
    expect(installedFrom({ installRoot, packageRoot: path.join(installRoot, 'node_modules', 'gpu-cluster-manifests'), version: '0.1.0' })).toEqual(from);
    expect(from.kind).toBe('tarball');
  });

  it('a tarball that changed or is gone since: the version, saying why', () => {
    const changed = installed('file:../x.tgz', { file: 'x.tgz', text: 'edited' }, `sha512-${createHash('sha512').update('packed').digest('base64')}`).from;
    expect(changed).toEqual({ kind: 'version', version: '0.1.0', note: expect.stringMatching(/x\.tgz is no longer the tarball gpu-cluster-manifests 0\.1\.0 was installed from/) });
    expect(installed('file:../gone.tgz').from).toEqual({ kind: 'version', version: '0.1.0', note: expect.stringMatching(/gone\.tgz, the tarball gpu-cluster-manifests was installed from, is gone$/) });
  });

  it('a Git commit: its URL; the registry, a folder, or no installation at all: the version', () => {
    const git = 'git+ssh://git@github.com/example/gpu-cluster-manifests.git#0123456789abcdef0123456789abcdef01234567';
    expect(installed(git).from).toEqual({ kind: 'git', spec: git });
    expect(installed('https://registry.npmjs.org/gpu-cluster-manifests/-/gpu-cluster-manifests-0.1.0.tgz').from).toEqual({ kind: 'version', version: '0.1.0' });
    expect(installed('file:../checkout').from).toEqual({ kind: 'version', version: '0.1.0' });
    expect(installedFrom({ installRoot: '/x', packageRoot: '/x', version: '0.1.0' })).toEqual({ kind: 'version', version: '0.1.0' });
    // this checkout runs the tests: not installed
    expect(installedFrom()).toEqual({ kind: 'version', version: packageVersion() });
  });
});
