import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT, main } from '../../src/cli';
import { descriptionJsonSchemaText } from '../../src/model/json-schema';
import { packageVersion } from '../../src/paths';
import { PROJECT_FILE, readProject } from '../../src/project/project-file';

async function run(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

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
    expect(readdirSync(path.join(dir, 'clusters'))).toEqual(['cluster-description.schema.json']);
    expect(readFileSync(path.join(dir, 'clusters', 'cluster-description.schema.json'), 'utf8')).toBe(descriptionJsonSchemaText());
    // the CI script renders, fails on drift of the committed output and the schema, then checks
    const ci = readFileSync(path.join(dir, 'ci.sh'), 'utf8');
    expect(ci).toMatch(/^#!\/bin\/sh\n/);
    expect(ci.split('\n').filter((l) => l.startsWith('npx '))).toEqual([
      'npx --no-install gpu-cluster-manifests synth --quiet',
      'npx --no-install gpu-cluster-manifests schema',
      'npx --no-install gpu-cluster-manifests check',
    ]);
    expect(ci).toContain('git status --porcelain -- dist clusters/cluster-description.schema.json');
    // eslint-disable-next-line no-bitwise
    expect(statSync(path.join(dir, 'ci.sh')).mode & 0o111).not.toBe(0);
    expect(readFileSync(path.join(dir, '.gitignore'), 'utf8').split('\n')).toEqual(expect.arrayContaining(['node_modules/', '/dist/.gpu-cluster-manifests.*', '/dist.tmp-*/']));
    expect(readFileSync(path.join(dir, '.npmrc'), 'utf8')).toMatch(/^legacy-peer-deps=true$/m);
    const readme = readFileSync(path.join(dir, 'README.md'), 'utf8');
    for (const command of ['npm ci', 'init --snapshot', 'preflight', 'synth', 'check', 'diff', 'npm install --save-dev --save-exact gpu-cluster-manifests@']) expect(readme).toContain(command);
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
