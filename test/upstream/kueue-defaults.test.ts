import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UPSTREAM_FACTS_DIR } from '../../src/paths';
import { buildInfoVersions, goBinary, GoBinarySpec, goCommand } from '../../src/twin/binary';
import { COMPONENTS, pinnedChart, previousReleases } from '../../src/upgrade/components';
import { BUILT_IN_DEFAULTS_FILE } from '../../src/upgrade/config-defaults';

/*
 * Kueue's built-in manager configuration defaults, as upgrade-plan reads them (src/upstream/facts/<release folder>/
 * config-defaults.json), are what Kueue's own defaulting code prints at each release it compares: the generator of
 * test/upstream/kueue-defaults/ is built per release (one module file each, built once per machine into a keyed
 * cache as the cluster tests' binaries are), run, and its output compared with the committed file (`vitest -u`
 * writes it anew). A release the Go module proxy does not serve is built from another whose package is proven to be
 * its code, file by file (the module file says which, and why).
 */

const GENERATOR = path.join(__dirname, 'kueue-defaults');
const KUEUE_MODULE = 'sigs.k8s.io/kueue';
const KUEUE = COMPONENTS.kueue;

/** Each release upgrade-plan compares Kueue between: its folder, version and module file (go.mod: the pinned one). */
const releases = [
  ...previousReleases(KUEUE).map((p) => ({ folder: p.folder, version: p.version, modfile: `${p.folder}.mod` })),
  { folder: pinnedChart(KUEUE.key).folder, version: pinnedChart(KUEUE.key).version, modfile: 'go.mod' },
];

const tagOf = (version: string) => (version.startsWith('v') ? version : `v${version}`);

function generatorSpec(modfile: string): GoBinarySpec {
  const sum = modfile.replace(/\.mod$/, '.sum');
  return {
    what: `the Kueue defaults generator (${modfile})`,
    folder: 'test/upstream/kueue-defaults',
    moduleDir: GENERATOR,
    sources: [...new Set(['go.mod', 'go.sum', modfile, sum, 'main.go'])],
    binary: 'kueue-defaults',
    cache: 'kueue-defaults',
    cacheEnv: 'GPU_CLUSTER_MANIFESTS_KUEUE_DEFAULTS_CACHE',
    args: () => ['build', '-trimpath', ...(modfile === 'go.mod' ? [] : [`-modfile=${modfile}`]), '-ldflags=-s -w', '-o'],
    target: () => '.',
    building: (dir) => `building the Kueue defaults generator (${modfile}) into ${dir}`,
    versions: (bin, go) => buildInfoVersions(go, bin, [KUEUE_MODULE]),
  };
}

/** The Kueue module version a module file requires. */
function requiredKueue(modfile: string): string {
  const m = /^require sigs\.k8s\.io\/kueue (v\S+)$/m.exec(readFileSync(path.join(GENERATOR, modfile), 'utf8'));
  if (!m) throw new Error(`${modfile}: no "require ${KUEUE_MODULE} VERSION" line`);
  return m[1];
}

/** The folder of the Kueue module a module file builds, in Go's module cache. */
function moduleDir(modfile: string): string {
  const r = spawnSync(goCommand(), ['list', '-m', '-json', ...(modfile === 'go.mod' ? [] : [`-modfile=${modfile}`]), KUEUE_MODULE], {
    cwd: GENERATOR, encoding: 'utf8', env: { ...process.env, GOFLAGS: '-mod=readonly', GOWORK: 'off' }, timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`go list -m ${KUEUE_MODULE} (${modfile}): ${r.stderr}`);
  return (JSON.parse(r.stdout) as { Dir: string }).Dir;
}

const gitBlob = (data: Buffer) => createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
/** The SHA-256 of a Go file's lines that are no `//` comment: its code, whatever its doc comments say. */
const codeDigest = (data: Buffer) => createHash('sha256').update(data.toString('utf8').split('\n').filter((l) => !/^\s*\/\//.test(l)).join('\n')).digest('hex');

/** What a module file records of the release it stands for (`// kueue-<release> blob|code <path> <digest>`). */
function substitution(modfile: string, folder: string): { kind: 'blob' | 'code'; file: string; digest: string }[] {
  const text = readFileSync(path.join(GENERATOR, modfile), 'utf8');
  return [...text.matchAll(new RegExp(`^// ${folder.replace(/\./g, '\\.')} (blob|code) (\\S+) ([0-9a-f]+)$`, 'gm'))]
    .map((m) => ({ kind: m[1] as 'blob' | 'code', file: m[2], digest: m[3] }));
}

describe('Kueue\'s built-in configuration defaults (src/upstream/facts/)', () => {
  it('a generator module file for each release upgrade-plan compares, and a facts file for each, nothing else', () => {
    expect(requiredKueue('go.mod')).toBe(tagOf(pinnedChart(KUEUE.key).version));
    for (const r of releases) expect(existsSync(path.join(GENERATOR, r.modfile)), r.modfile).toBe(true);
    const modfiles = readdirSync(GENERATOR).filter((f) => f.endsWith('.mod')).sort();
    expect(modfiles).toEqual(releases.map((r) => r.modfile).sort());
    expect(readdirSync(UPSTREAM_FACTS_DIR).sort()).toEqual(releases.map((r) => r.folder).sort());
    for (const r of releases) expect(readdirSync(path.join(UPSTREAM_FACTS_DIR, r.folder)), r.folder).toEqual([BUILT_IN_DEFAULTS_FILE]);
  });

  for (const r of releases) {
    it(`${r.folder}: the generator built with ${r.modfile} prints exactly ${r.folder}/${BUILT_IN_DEFAULTS_FILE}`, async () => {
      const bin = await goBinary(generatorSpec(r.modfile), { progress: (l) => process.stderr.write(`${l}\n`) });
      const run = spawnSync(bin.path, ['-release', tagOf(r.version)], { encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const facts = JSON.parse(run.stdout) as { release: string; built: string; configuration: Record<string, unknown> };
      expect(facts.release).toBe(tagOf(r.version));
      expect(facts.built).toBe(`${KUEUE_MODULE} ${requiredKueue(r.modfile)}`);
      await expect(run.stdout).toMatchFileSnapshot(path.join(UPSTREAM_FACTS_DIR, r.folder, BUILT_IN_DEFAULTS_FILE));
    });

    it(`${r.folder}: the package it builds is that release's code`, () => {
      const built = requiredKueue(r.modfile);
      const recorded = substitution(r.modfile, r.folder);
      if (built === tagOf(r.version)) {
        expect(recorded).toEqual([]);
        return;
      }
      // another release's module: every file of the package proven to be the release's own
      const dir = moduleDir(r.modfile);
      const pkg = 'apis/config/v1beta2';
      const files = readdirSync(path.join(dir, pkg)).filter((f) => f.endsWith('.go') && !f.endsWith('_test.go')).map((f) => `${pkg}/${f}`).sort();
      expect(recorded.map((x) => x.file).sort()).toEqual(files);
      for (const x of recorded) {
        const data = readFileSync(path.join(dir, x.file));
        expect(x.kind === 'blob' ? gitBlob(data) : codeDigest(data), x.file).toBe(x.digest);
      }
      // the check fires: a changed line of code is not the release's
      const defaults = recorded.find((x) => x.file === `${pkg}/defaults.go`)!;
      expect(gitBlob(Buffer.concat([readFileSync(path.join(dir, defaults.file)), Buffer.from('\n')]))).not.toBe(defaults.digest);
      expect(codeDigest(Buffer.from('package v1beta2\n// a comment\n'))).toBe(codeDigest(Buffer.from('package v1beta2\n// another\n')));
    });
  }
});
