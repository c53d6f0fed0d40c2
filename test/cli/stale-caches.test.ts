import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTLED_MS } from '../../src/cache/digests';
import { isDescriptionFile } from '../../src/model/description-files';
import { PROJECT_FILE } from '../../src/project/names';
// the paths alone: test/helpers.ts loads the render stack, which this file (only starting children) never runs
import { HAS_SCHEMAS, HAS_UPSTREAM, REFERENCE_FILE, ROOT, SHARED } from '../paths';

// Every cache is keyed by content: an input edited in place with its size and mtime kept (as
// `fs.utimes`, `touch -r`, `cp -p` or a checkout leave it) is noticed by `validate`, `synth --out`
// and the plain `npm run synth` (its up-to-date answer), through every cache: compiled validators,
// parsed CRDs, the upstream readers' results, the YAML documents, V8's code of the modules, the
// launcher's compile check and its record of the last render.
//
// It runs in a copy of the project (the schemas and upstream installs beside it, lib/, the reference
// fixture as its one description in src/clusters/ (every case edits what it renders; more clusters would
// only render more), and node_modules as links to this one's packages
// except ajv, which is copied to be patched), so nothing of the repository or of ../shared is touched.
// Its dist/ is rendered there, first thing.
const box = mkdtempSync(path.join(tmpdir(), 'stale-caches-'));
const project = path.join(box, 'project');
const shared = path.join(box, 'shared');
const cache = path.join(box, 'cache');
/** The kueue CRDs live elsewhere and are linked into the schema folder (a symlinked CRD folder). */
const kueueCrds = path.join(box, 'kueue-crds');
const env = { ...process.env, CDK8S_CHECK_UPGRADE: 'false', GPU_CLUSTER_MANIFESTS_CACHE: cache };
const MTIME = 1_700_000_000;

const EDITS = {
  crd: path.join(kueueCrds, 'kueue.x-k8s.io_localqueues.yaml'),
  chartValues: path.join(shared, 'upstream-installs', 'gpu-operator-v26.7.0', 'deployments', 'gpu-operator', 'values.yaml'),
  dependency: path.join(project, 'node_modules', 'ajv', 'dist', 'vocabularies', 'validation', 'const.js'),
  lib: path.join(project, 'lib', 'src', 'render', 'yaml.js'),
  // a source no other module imports: tsc re-checks only it (any source proves the point; one that
  // many import would make tsc re-check them all)
  source: path.join(project, 'src', 'main.ts'),
};

/**
 * Replaces `from` with `to` (the same length) in place, then puts the mtime back: the file keeps
 * its inode, size and mtime; only its content (and the ctime, which no tool can set) changes.
 * Returns the undo, which does the same.
 */
function editInPlace(file: string, from: RegExp, to: string): () => void {
  const text = readFileSync(file, 'utf8');
  const edited = text.replace(from, to);
  expect(edited).not.toBe(text);
  expect(edited.length).toBe(text.length);
  const before = statSync(file);
  const write = (t: string) => {
    writeFileSync(file, t);
    utimesSync(file, MTIME, MTIME);
    const after = statSync(file);
    expect([after.size, after.mtimeMs, after.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
  };
  write(edited);
  return () => write(text);
}

function launcher(args: string[], extra: Record<string, string> = {}) {
  return spawnSync(process.execPath, [path.join(project, 'projenrc', 'launch.cjs'), ...args], { cwd: project, env: { ...env, ...extra }, encoding: 'utf8' });
}

// the kueue folder holds the LocalQueue the CRD case edits (validating fewer kinds compiles fewer schemas)
const validate = () => launcher(['validate', path.join(project, 'dist', 'instant-cluster', 'kueue')]);
// one cluster is enough: it renders the GPU Operator's chart (the fleet adds charts the case does not edit)
const check = () => launcher(['check', path.join(project, 'dist', 'instant-cluster')]);
const synthOut = () => launcher(['synth', '--out', path.join(box, 'out')]);
/** `npm run synth`, as users type it: once per behaviour (npm adds no cache; it runs the launcher's plain synth). */
const npmSynth = (extra: Record<string, string> = {}) => spawnSync('npm', ['run', 'synth'], { cwd: project, env: { ...env, ...extra }, encoding: 'utf8' });
/** The plain synth as the npm script runs it (`node projenrc/launch.cjs synth`), without npm's start-up. */
const plainSynth = (extra: Record<string, string> = {}) => launcher(['synth'], extra);
const UP_TO_DATE = /dist already up to date \(\d+ files\): no description/;

function expectOk(r: ReturnType<typeof launcher>): void {
  expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
}

function expectFailed(r: ReturnType<typeof launcher>, says: RegExp): void {
  expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(1);
  expect(r.stderr).toMatch(says);
  expect(r.stdout).not.toMatch(UP_TO_DATE);
}

/** Waits until every file written so far counts as settled, so the digest memo remembers it (the case to prove). */
function settle(): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, SETTLED_MS + 200);
}

describe.skipIf(!HAS_SCHEMAS || !HAS_UPSTREAM)('caches keyed by content', () => {
  // the copy is some 60 MB
  afterAll(() => rmSync(box, { recursive: true, force: true }));

  beforeAll(() => {
    cpSync(path.join(SHARED, 'crds'), path.join(shared, 'crds'), { recursive: true, filter: (src) => !src.startsWith(path.join(SHARED, 'crds', 'kueue')) });
    cpSync(path.join(SHARED, 'crds', 'kueue'), kueueCrds, { recursive: true });
    symlinkSync(kueueCrds, path.join(shared, 'crds', 'kueue'));
    cpSync(path.join(SHARED, 'upstream-installs'), path.join(shared, 'upstream-installs'), { recursive: true });
    mkdirSync(project);
    for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', '.projenrc.ts', PROJECT_FILE]) copyFileSync(path.join(ROOT, f), path.join(project, f));
    // lib/ without the package assets (a checkout reads ../shared; the pack test may be rewriting them meanwhile)
    const assets = path.join(ROOT, 'lib', 'assets');
    for (const d of ['projenrc', 'src', 'imports', 'lib']) cpSync(path.join(ROOT, d), path.join(project, d), { recursive: true, filter: (src) => !src.startsWith(assets) });
    // the reference fixture is the copy's description, whatever the examples of this repository are
    const clusters = path.join(project, 'src', 'clusters');
    for (const f of readdirSync(clusters).filter(isDescriptionFile)) rmSync(path.join(clusters, f));
    copyFileSync(REFERENCE_FILE, path.join(clusters, path.basename(REFERENCE_FILE)));
    mkdirSync(path.join(project, 'node_modules'));
    for (const name of readdirSync(path.join(ROOT, 'node_modules'))) {
      if (name === '.cache') continue;
      if (name === 'ajv') cpSync(path.join(ROOT, 'node_modules', name), path.join(project, 'node_modules', name), { recursive: true });
      else symlinkSync(path.join(ROOT, 'node_modules', name), path.join(project, 'node_modules', name));
    }
    mkdirSync(cache);
    // tsc's incremental record, copied with lib/, names the files it read relative to lib/: the
    // packages linked from this checkout resolve to this checkout's node_modules (tsc follows links),
    // so their names are rewritten to where they are now, and tsc re-checks only what the cases edit
    const buildInfo = path.join(project, 'lib', 'tsconfig.tsbuildinfo');
    const info = JSON.parse(readFileSync(buildInfo, 'utf8')) as { fileNames: string[] };
    const linked = (f: string) => f.startsWith('../node_modules/') && !f.startsWith('../node_modules/ajv/');
    info.fileNames = info.fileNames.map((f) => (linked(f) ? path.relative(path.join(project, 'lib'), path.join(realpathSync(path.join(ROOT, 'lib')), f)) : f));
    writeFileSync(buildInfo, JSON.stringify(info));
    // compiled already, unless lib/ is behind the sources (then this compiles the copy first)
    expectOk(launcher(['--build']));
    expectOk(plainSynth());
    for (const f of Object.values(EDITS)) utimesSync(f, MTIME, MTIME);
    settle();
    // warm every cache: the validators, the parsed CRDs, the upstream results, the YAML
    // documents, the modules' code, the record of the plain synth (the render above warmed those of synth)
    expectOk(validate());
    expectOk(plainSynth());
    const again = npmSynth();
    expectOk(again);
    expect(again.stdout).toMatch(UP_TO_DATE);
  });

  // npm run synth renders as synth --out does once its record says the inputs changed: the render behind
  // both meets the same caches, first here
  it('a CRD in a symlinked folder, edited in place: validate and npm run synth (its record, then the render of synth --out) see the new schema', () => {
    const undo = editInPlace(EDITS.crd, /^( {14})clusterQueue:/gm, '$1clusterQueuX:');
    try {
      expectFailed(validate(), /LocalQueue .*spec\.clusterQueue: unknown field/);
      expectFailed(npmSynth(), /spec\.clusterQueue: unknown field/);
    } finally {
      undo();
    }
    expectOk(validate());
    expect(plainSynth().stdout).toMatch(UP_TO_DATE);
  });

  it('a vendored chart\'s values.yaml, edited in place: check renders the chart again and sees the new default (synth reads no chart)', () => {
    expectOk(check()); // the chart's render is cached now
    // the MIG manager's default tag, which the rendered ClusterPolicy pins
    const undo = editInPlace(EDITS.chartValues, /(image: k8s-mig-manager\n {2}version: )v0\.15\.0/, '$1v0.15.9');
    try {
      expectFailed(check(), /image-matches-upstream.*v0\.15\.9/);
      expect(plainSynth().stdout).toMatch(UP_TO_DATE);
    } finally {
      undo();
    }
    expectOk(check());
  });

  it('a file of a dependency patched in place (ajv): validate, synth --out and npm run synth use the patched code', () => {
    // inverts every `const` check: each object's apiVersion and kind now fail
    const undo = editInPlace(EDITS.dependency, /\$\{schema\} !== \$\{data\}/, '${schema} === ${data}');
    try {
      expectFailed(validate(), /apiVersion/);
      expectFailed(synthOut(), /apiVersion/);
      expectFailed(plainSynth(), /apiVersion/);
    } finally {
      undo();
    }
    expectOk(validate());
    expect(plainSynth().stdout).toMatch(UP_TO_DATE);
  });

  it('a compiled file of lib/ edited in place: the edited code runs (not V8\'s cached code of the old), and npm run synth renders', () => {
    const undo = editInPlace(EDITS.lib, /Generated by gpu-cluster-manifests/, 'Generated BY gpu-cluster-manifests');
    const header = () => readFileSync(path.join(project, 'dist', 'instant-cluster', 'kueue', readdirSync(path.join(project, 'dist', 'instant-cluster', 'kueue'))[0]), 'utf8').split('\n')[0];
    try {
      // the first run after the edit, so the code cache it meets holds the code of the old
      const r = plainSynth();
      expectOk(r);
      expect(r.stdout).not.toMatch(UP_TO_DATE);
      expect(header()).toContain('Generated BY');
    } finally {
      undo();
    }
    const back = plainSynth();
    expectOk(back);
    expect(back.stdout).not.toMatch(UP_TO_DATE);
    expect(header()).toContain('Generated by');
  });

  // Two compilations: a recompilation (the edited source, and a description with a type error), then a first one
  // (the description fixed). The compiled description is emitted by the first, so the second is incremental too.
  const envCluster = path.join(project, 'src', 'clusters', 'env-cluster.ts');
  const description = readFileSync(path.join(ROOT, 'test', 'fixtures', 'descriptions', 'typed-cluster.ts'), 'utf8')
    .replace('\'typed-cluster\'', '\'env-cluster\'')
    .replace('\'dist/typed-cluster\'', '\'dist/env-cluster\'')
    .replace('targetRevision: \'main\'', 'targetRevision: process.env.CLUSTER_REVISION');
  const application = () => readFileSync(path.join(project, 'dist', 'env-cluster', 'gitops', 'application.argocd.env-cluster-kueue.yaml'), 'utf8');

  it('a source edited with its mtime put back is compiled; a type error in a description of src/clusters is bad input naming the file and line, at once on the next run', () => {
    editInPlace(EDITS.source, /Entry point of `npx cdk8s synth`/, 'ENTRY point of `npx cdk8s synth`');
    const line = description.split('\n').findIndex((l) => l.includes('gpusPerNode,')) + 1;
    writeFileSync(envCluster, description.replace('gpusPerNode,', 'gpusPerNode: \'eight\','));
    const compiles = {
      recompiles: /^recompiling: 2 files changed…\ncompiled in \d+\.\d s$/m,
      recorded: undefined,
    };
    for (const [run, says] of Object.entries(compiles)) {
      const r = plainSynth({ CLUSTER_REVISION: 'release-1' });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`env-cluster\\.ts: line ${line}, column \\d+: Type 'string' is not assignable to type 'number'`));
      expect(r.stderr).not.toMatch(/compiling the sources failed/);
      if (says) expect(r.stderr, run).toMatch(says);
      else expect(r.stderr, run).not.toMatch(/compil/);
    }
    expect(readFileSync(path.join(project, 'lib', 'src', 'main.js'), 'utf8')).toContain('ENTRY point of');
  });

  it('a first compilation says so; a description that reads the environment is never answered from the record', () => {
    writeFileSync(envCluster, description);
    // as on a fresh clone: nothing recorded as compiled yet
    rmSync(path.join(project, 'lib', '.compiled-sources.json'));
    const first = npmSynth({ CLUSTER_REVISION: 'release-1' });
    expectOk(first);
    expect(first.stderr).toMatch(/^compiling sources \(first run\)…\ncompiled in \d+\.\d s$/m);
    expect(application()).toContain('targetRevision: release-1');
    for (const revision of ['release-2', 'release-2']) {
      const r = plainSynth({ CLUSTER_REVISION: revision });
      expectOk(r);
      expect(r.stderr).not.toMatch(/compil/);
      expect(r.stdout).not.toMatch(UP_TO_DATE);
      expect(application()).toContain(`targetRevision: ${revision}`);
    }
  });
});
