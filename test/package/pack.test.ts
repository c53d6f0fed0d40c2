import { spawn, spawnSync, SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { packOnce } from './pack-cache';
import { isInside } from '../../src/files';
import { PACKAGE_NAME } from '../../src/paths';
import { synth } from '../../src/synth/pipeline';
import { packagedReleaseFolders, VENDORED_RELEASES } from '../../src/upstream/releases';
import { readBlocks } from '../docs/markdown-blocks';
import { readTreeFiles, ROOT, runCliInProcess, SHARED, TRAINING_FILE } from '../helpers';
import { SNAPSHOT } from '../preflight/snapshots';

/*
 * The whole path of a platform engineer, end to end, as the README's quick start has it: the package
 * packed (`npm pack`, which copies the pinned schemas and charts in), a clusters repository made with
 * `new` in a fresh folder outside this checkout (no ../shared anywhere above it), the tarball
 * installed there with `npm install --offline` (every dependency from the npm cache `npm ci` filled),
 * then `npx gpu-cluster-manifests` init, synth, validate, check (the packaged engines and charts),
 * preflight, diff (after an "update"), the repository's CI script, and a cdk8s app of the user's that
 * imports the package's constructs. One pack and one install for the whole scenario; the pack is npm's of this
 * run, or npm's tarball of an earlier run of byte-identical inputs (./pack-cache.ts). npx runs the commands
 * where finding the bin is the point (init from a subfolder, check with a PATH of node, npm and sh only), the
 * installed bin the others; the variations whose failure does not depend on what is installed (a second new
 * into a folder, an unknown command) run through the CLI's entry in this process.
 */

const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** The packed size's bound: the pinned releases and what the CLI needs (5.0 MB at 0.1.0, the bundle included; docs/clusters-repository.md says the measurement). */
const MAX_TARBALL_BYTES = 6 * 1024 * 1024;

/** The user's environment: none of this checkout's npm script variables, no cache setting of its own, npm offline. */
const env: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) {
  const npmScriptVariable = /^npm_/i.test(k) && !/^npm_config_(cache|userconfig|registry)$/i.test(k);
  if (v !== undefined && !npmScriptVariable && k !== 'INIT_CWD' && !k.startsWith('GPU_CLUSTER_MANIFESTS_')) env[k] = v;
}
Object.assign(env, { CDK8S_CHECK_UPGRADE: 'false', npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' });

type Run = SpawnSyncReturns<string>;
function exec(command: string, args: readonly string[], cwd: string, extra: Record<string, string> = {}): Run {
  return spawnSync(command, args, { cwd, env: { ...env, ...extra }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}
/** The same as a promise, for the steps that run beside others (their child's exit code and output; never rejects). */
function execAsync(command: string, args: readonly string[], cwd: string, extra: Record<string, string> = {}): Promise<Pick<Run, 'status' | 'stdout' | 'stderr'>> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => resolve({ status: null, stdout: '', stderr: String(e) }));
    child.on('close', (status) => resolve({ status, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}
/** `npx gpu-cluster-manifests ...`, as the user types it. */
const npx = (cwd: string, args: readonly string[], extra?: Record<string, string>) => exec('npx', ['--no-install', PACKAGE_NAME, ...args], cwd, extra);
const npxAsync = (cwd: string, args: readonly string[], extra?: Record<string, string>) => execAsync('npx', ['--no-install', PACKAGE_NAME, ...args], cwd, extra);
const says = (r: Pick<Run, 'status' | 'stdout' | 'stderr'>) => `exit ${r.status}\n${r.stdout}\n${r.stderr}`;
/**
 * A command through the CLI's entry in this process, for the variations whose failure does not depend on what
 * is installed (the same code prints it in the package): its exit code and what it printed, as a Run.
 */
async function inProcess(args: string[]): Promise<Pick<Run, 'status' | 'stdout' | 'stderr'>> {
  const r = await runCliInProcess(args);
  return { status: r.code, stdout: r.stdout, stderr: r.stderr };
}
/** Bad input: exit 2 and one line on stderr, no stack trace. */
function expectOneLine(r: Pick<Run, 'status' | 'stdout' | 'stderr'>, line: RegExp): void {
  expect(r.status, says(r)).toBe(2);
  expect(r.stderr.trimEnd().split('\n'), r.stderr).toEqual([expect.stringMatching(line)]);
  expect(r.stderr).not.toMatch(/\n\s+at |internal error/);
}

/**
 * This checkout's lock entries of `roots` and everything they need, as the user's repository would lock
 * them, with each package's registry tarball as its source (the tarballs `npm ci` put in the npm cache):
 * installing from it needs no registry metadata, so it works offline.
 */
function offlineLock(roots: Record<string, Record<string, unknown> & { spec?: string }>): object {
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, any> };
  const entries = lock.packages;
  const find = (from: string, name: string): string | undefined => {
    for (let dir = from; ; dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : '') {
      const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (entries[key]) return key;
      if (dir === '') return undefined;
    }
  };
  const needed = new Set<string>();
  const queue = Object.values(roots).flatMap((r) => Object.keys({ ...(r.dependencies as object) }).map((n) => find('', n)));
  for (const name of Object.keys(roots).filter((n) => n !== PACKAGE_NAME)) queue.push(find('', name));
  while (queue.length > 0) {
    const key = queue.pop();
    if (key === undefined || needed.has(key) || entries[key].inBundle) continue;
    needed.add(key);
    for (const dep of Object.keys({ ...entries[key].dependencies, ...entries[key].optionalDependencies })) queue.push(find(key, dep));
  }
  // the root's dependencies as package.json says them (a `file:` spec, or the version)
  const packages: Record<string, unknown> = { '': { name: 'clusters', devDependencies: Object.fromEntries(Object.entries(roots).map(([n, r]) => [n, r.spec ?? r.version])) } };
  for (const [name, { spec: _spec, ...entry }] of Object.entries(roots)) packages[`node_modules/${name}`] = { ...entry, dev: true };
  for (const key of [...needed].sort()) {
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    packages[key] = { ...entries[key], dev: true, resolved: entries[key].resolved ?? `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${entries[key].version}.tgz` };
  }
  // what a package bundles comes inside its own tarball
  for (const [key, entry] of Object.entries(entries)) if (entry.inBundle && [...needed].some((k) => key.startsWith(`${k}/node_modules/`))) packages[key] = entry;
  return { name: 'clusters', lockfileVersion: 3, requires: true, packages };
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

const APP = `import { App, Chart } from 'cdk8s';
import { buildModel, ClusterModel, KueueLocalQueue, loadDescription, StorageChart } from '${PACKAGE_NAME}';

const [description, outdir] = process.argv.slice(2);
const model: ClusterModel = buildModel(loadDescription(description));
const app = new App({ outdir });
new StorageChart(app, 'storage', { model });
const queues = new Chart(app, 'queues', { disableResourceNameHashes: true });
new KueueLocalQueue(queues, 'Team', { name: 'team-queue', namespace: 'team', clusterQueue: model.queueing.defaultQueue.clusterQueue });
app.synth();
`;

describe('a clusters repository of a platform engineer, with the packed toolkit installed', () => {
  const work = realpathSync(mkdtempSync(path.join(tmpdir(), 'user-repo-')));
  const repo = path.join(work, 'clusters-repo');
  const installed = path.join(repo, 'node_modules', PACKAGE_NAME);
  let tarball = '';
  let packed: string[] = [];
  /** The installed bin itself (what npx runs; npm's own start-up spared where npx is not the point). */
  const cli = (cwd: string, args: readonly string[], extra?: Record<string, string>) => exec(path.join(repo, 'node_modules', '.bin', PACKAGE_NAME), args, cwd, extra);
  const cliAsync = (cwd: string, args: readonly string[], extra?: Record<string, string>) => execAsync(path.join(repo, 'node_modules', '.bin', PACKAGE_NAME), args, cwd, extra);
  /** A PATH of node, npm, npx and what the repository's CI script runs, without helm or kubectl: check must use the package's engines. */
  const bin = path.join(work, 'path');
  /** The user's cdk8s app, and its compile (which runs beside the CLI's commands). */
  const app = path.join(repo, 'app');
  let appCompiled: Promise<Pick<Run, 'status' | 'stdout' | 'stderr'>>;
  /** Where npx would install the tarball, the install, and the lock entry of the toolkit for a `file:` spec. */
  const npxHome = path.join(work, 'npx-home');
  let npxInstalled: Promise<Pick<Run, 'status' | 'stdout' | 'stderr'>>;
  let toolkitEntry: (spec: string) => Record<string, unknown> & { spec: string };
  /** preflight, which reads only the description and the snapshot: it runs beside validate and check. */
  let preflighted: Promise<Pick<Run, 'status' | 'stdout' | 'stderr'>>;
  /** diff of the fresh dist/ (beside validate and check too). */
  let unchanged: Promise<Pick<Run, 'status' | 'stdout' | 'stderr'>>;
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('packs the CLI, the library, the pinned schemas and charts with their checksums, and nothing of test/ (under 6 MB)', () => {
    const pack = packOnce(work, (args) => exec('npm', args, ROOT, { npm_config_offline: 'false' }));
    const { info } = pack;
    tarball = pack.tarball;
    packed = info.files.map((f) => f.path);
    expect(statSync(tarball).size).toBeLessThan(MAX_TARBALL_BYTES);
    // the documentation reports this measurement: the version, the sizes (within 10 %) and the files
    const measured = /At version (\S+): ([\d.]+) MB packed, ([\d.]+) MB unpacked, (\d+) files/.exec(readFileSync(path.join(ROOT, 'docs', 'clusters-repository.md'), 'utf8'));
    expect(measured?.slice(1, 2)).toEqual([VERSION]);
    const near = (documented: string, actual: number) => Math.abs(Number(documented) - actual) / actual;
    expect(near(measured![2], info.size / 1e6), `${info.size} bytes packed`).toBeLessThan(0.1);
    expect(near(measured![3], info.unpackedSize / 1e6), `${info.unpackedSize} bytes unpacked`).toBeLessThan(0.1);
    expect(near(measured![4], info.entryCount), `${info.entryCount} files`).toBeLessThan(0.1);
    // the README's quick start installs this very tarball, by the name npm pack gives it
    const [quickStart] = readBlocks(ROOT, 'README.md').filter((b) => b.info === 'sh runnable');
    expect(quickStart.body.split('\n')[0]).toMatch(new RegExp(`^npx .*--package \\./${info.filename.replace(/\./g, '\\.')} ${PACKAGE_NAME} new my-clusters\\b`));
    expect(packed).toEqual(expect.arrayContaining([
      'package.json', 'README.md', 'docs/description.md', 'docs/components/argocd.md', 'LICENSE', 'lib/src/bin.js', 'lib/bundle/cli.js', 'lib/src/index.js', 'lib/src/index.d.ts', 'src/clusters/cluster-description.schema.json',
      'lib/assets/crds/SOURCES.md', 'lib/assets/crds/SHA256SUMS', 'lib/assets/crds/kubernetes/v1.33.0_definitions.json',
      'lib/assets/upstream-installs/SOURCES.md', 'lib/assets/upstream-installs/SHA256SUMS',
      // the Argo CD install tree of the pinned release
      'lib/assets/upstream-installs/argo-cd-v3.5.1/manifests/cluster-install/kustomization.yaml',
    ]));
    for (const release of VENDORED_RELEASES) expect(packed.some((f) => f.startsWith(`lib/assets/upstream-installs/${release.folder}/`)), release.folder).toBe(true);
    // exactly the releases src/versions.ts pins (and declares as previous), whatever else ../shared holds
    const releases = new Set(packed.filter((f) => /^lib\/assets\/upstream-installs\/[^/]+\//.test(f)).map((f) => f.split('/')[3]));
    expect([...releases].sort()).toEqual(packagedReleaseFolders());
    expect(packed.filter((f) => f.startsWith('test/') || f.startsWith('dist/') || f.endsWith('.map') || /^src\/.*\.ts$/.test(f) || f.startsWith('lib/src/clusters/'))).toEqual([]);
    // what no command reads stays out
    expect(packed.filter((f) => f.includes('dynamo-platform-1.5.0-main') || f.includes('/docs/') || f.includes('crds/local-path-provisioner/'))).toEqual([]);
  });

  it('unpacked, every shipped chart and overlay file is the one ../shared/upstream-installs/SHA256SUMS lists', () => {
    const unpacked = path.join(work, 'unpacked');
    mkdirSync(unpacked);
    expect(exec('tar', ['-xzf', tarball, '-C', unpacked], work).status).toBe(0);
    const upstream = path.join(unpacked, 'package', 'lib', 'assets', 'upstream-installs');
    const lines = readFileSync(path.join(upstream, 'SHA256SUMS'), 'utf8').trimEnd().split('\n').map((l) => l.split('  '));
    const shared = existsSync(path.join(SHARED, 'upstream-installs', 'SHA256SUMS'))
      ? new Map(readFileSync(path.join(SHARED, 'upstream-installs', 'SHA256SUMS'), 'utf8').trimEnd().split('\n').map((l) => l.split('  ').reverse() as [string, string]))
      : undefined;
    expect(lines.length).toBeGreaterThan(500);
    for (const [digest, file] of lines) {
      expect(sha256(path.join(upstream, file)), file).toBe(digest);
      // the files allowed unlisted (SOURCES.md, a git symlink's target) are listed as read
      if (shared && shared.has(file)) expect(shared.get(file), file).toBe(digest);
    }
    const crds = path.join(unpacked, 'package', 'lib', 'assets', 'crds');
    for (const [digest, file] of readFileSync(path.join(crds, 'SHA256SUMS'), 'utf8').trimEnd().split('\n').map((l) => l.split('  '))) {
      expect(sha256(path.join(crds, file)), file).toBe(digest);
    }
    // the package declares every package its code requires
    const manifest = JSON.parse(readFileSync(path.join(unpacked, 'package', 'package.json'), 'utf8')) as { dependencies: Record<string, string>; bin: Record<string, string>; engines: Record<string, string> };
    expect(manifest.bin).toEqual({ [PACKAGE_NAME]: 'lib/src/bin.js' });
    expect(manifest.engines.node).toBe('>= 20.0.0');
    expect(readFileSync(path.join(unpacked, 'package', 'lib', 'src', 'bin.js'), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
    const required = new Set<string>();
    for (const f of packed.filter((p) => p.endsWith('.js'))) {
      for (const [, id] of readFileSync(path.join(unpacked, 'package', f), 'utf8').matchAll(/\brequire\("([^".][^"]*)"\)/g)) {
        const pkg = id.startsWith('@') ? id.split('/').slice(0, 2).join('/') : id.split('/')[0];
        if (!builtinModules.includes(pkg) && !pkg.startsWith('node:')) required.add(pkg);
      }
    }
    expect(required.size).toBeGreaterThan(3);
    expect([...required].filter((p) => !(p in manifest.dependencies))).toEqual([]);
  });

  it('new makes the repository in a fresh folder with no ../shared above it, straight from the unpacked package (no dependency installed)', async () => {
    expect(isInside(work, ROOT)).toBe(false);
    for (let dir = repo; ; dir = path.dirname(dir)) {
      expect(existsSync(path.join(dir, 'shared')), `${dir}/shared`).toBe(false);
      if (path.dirname(dir) === dir) break;
    }
    const unpackedBin = path.join(work, 'unpacked', 'package', 'lib', 'src', 'bin.js');
    const r = exec(process.execPath, [unpackedBin, 'new', repo], work);
    expect(r.status, says(r)).toBe(0);
    expect(JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).devDependencies).toEqual({ [PACKAGE_NAME]: VERSION });
    // a second new into it is refused (the refusal is the command's, the same in this checkout)
    expectOneLine(await inProcess(['new', repo]), /^error: new: .* is not empty .*; name a new or empty folder/);
  });

  it('npm install --offline installs the pinned version (this tarball) with its dependencies from the npm cache', () => {
    // the user's cdk8s app (below) needs the compiler, as any TypeScript app does
    const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'));
    const typescript = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', 'typescript', 'package.json'), 'utf8')).version as string;
    pkg.devDependencies.typescript = typescript;
    writeFileSync(path.join(repo, 'package.json'), `${JSON.stringify(pkg, undefined, 2)}\n`);
    const manifest = JSON.parse(readFileSync(path.join(work, 'unpacked', 'package', 'package.json'), 'utf8'));
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    writeFileSync(path.join(repo, 'package-lock.json'), JSON.stringify(offlineLock({
      [PACKAGE_NAME]: { version: VERSION, resolved: `file:${path.relative(repo, tarball)}`, integrity, dependencies: manifest.dependencies, bin: manifest.bin, engines: manifest.engines },
      typescript: { version: typescript },
    }), undefined, 2));
    const r = exec('npm', ['install'], repo);
    expect(r.status, says(r)).toBe(0);
    expect(JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')).version).toBe(VERSION);
    expect(existsSync(path.join(repo, 'node_modules', '.bin', PACKAGE_NAME))).toBe(true);
    // the kubectl layer's peer (aws-cdk-lib, for a construct never loaded) is not installed: the repository's .npmrc
    expect(existsSync(path.join(repo, 'node_modules', 'aws-cdk-lib'))).toBe(false);
    // the user's cdk8s app (its case is below) compiles from here on, beside the CLI's commands: it reads only
    // the app and node_modules
    mkdirSync(app);
    writeFileSync(path.join(app, 'main.ts'), APP);
    writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'node16', target: 'es2020', strict: true, skipLibCheck: true, outDir: 'out', types: ['node'] },
      files: ['main.ts'],
    }));
    appCompiled = execAsync(path.join(repo, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], app);
    // what npx --package ./x.tgz does before it runs the bin: npm installs the tarball into a folder of its own
    // (~/.npm/_npx/<hash>/, package.json: { dependencies: { name: "file:<path>" } }); here offline, from the lock, beside
    // the steps below
    const name = path.basename(tarball);
    const { dependencies, bin: bins, engines } = manifest;
    toolkitEntry = (spec) => ({ spec, version: VERSION, resolved: spec, integrity, dependencies, bin: bins, engines });
    mkdirSync(npxHome);
    writeFileSync(path.join(npxHome, 'package.json'), JSON.stringify({ name: 'clusters', devDependencies: { [PACKAGE_NAME]: `file:../${name}` } }));
    writeFileSync(path.join(npxHome, '.npmrc'), 'legacy-peer-deps=true\n');
    writeFileSync(path.join(npxHome, 'package-lock.json'), JSON.stringify(offlineLock({ [PACKAGE_NAME]: toolkitEntry(`file:../${name}`) })));
    npxInstalled = execAsync('npm', ['install'], npxHome);
  });

  it('init writes the first description into clusters/ from a snapshot, typed in any folder of the repository', () => {
    const r = npx(path.join(repo, 'clusters'), ['init', '--snapshot', SNAPSHOT, '--name', 'lab', '--repo', 'https://git.example.com/platform/clusters.git']);
    expect(r.status, says(r)).toBe(0);
    expect(r.stderr.trim()).toBe('wrote lab.yaml: check every TODO(init) line');
    expect(parse(readFileSync(path.join(repo, 'clusters', 'lab.yaml'), 'utf8')).gitops).toEqual({ repoURL: 'https://git.example.com/platform/clusters.git', path: 'dist/lab' });
    // a second cluster, whose add-ons Argo CD installs from the pinned charts (check renders them)
    copyFileSync(TRAINING_FILE, path.join(repo, 'clusters', 'training-cluster.yaml'));
  });

  let expected: Map<string, string>;
  it('synth renders clusters/ into dist/ exactly as this checkout renders the same descriptions', async () => {
    // NODE_DEBUG=module lists the modules loaded: the installed bin runs the bundle (lib/bundle/cli.js), not the modules of lib/src
    const synthesized = cliAsync(repo, ['synth'], { NODE_DEBUG: 'module' });
    // this checkout's render of the same descriptions, while the installed CLI renders them
    const reference = path.join(work, 'reference-render');
    synth({ clustersDir: path.join(repo, 'clusters'), out: reference, schemas: false });
    expected = readTreeFiles(reference);
    const r = await synthesized;
    expect(r.status, says(r)).toBe(0);
    const loaded = [...r.stderr.matchAll(/^MODULE \d+: load "([^"]+)"/gm)].map((m) => path.relative(installed, m[1])).filter((f) => !f.startsWith('..'));
    expect(loaded).toContain(path.join('lib', 'src', 'bin.js'));
    expect(loaded.filter((f) => f.startsWith('lib/src/') && !/^lib\/src\/(bin|errors|paths|files|fault|processes|cache\/(module-cache|cache-dir|cache-write))\.js$/.test(f))).toEqual([]);
    expect(loaded.filter((f) => f.startsWith('lib/imports/')).length).toBeGreaterThan(3);
    expect(readdirSync(path.join(repo, 'dist')).sort()).toEqual(['fleet', 'lab', 'training-cluster']);
    expect(readTreeFiles(path.join(repo, 'dist'))).toEqual(expected);
    expect([...expected.keys()].filter((f) => f.startsWith('lab/kueue/'))).toContain('lab/kueue/clusterqueue.cluster-queue.yaml');
  });

  it('validate and check pass with what the package ships: its schemas, its charts, its engines (nothing on PATH but node, npm and sh)', async () => {
    mkdirSync(bin);
    // npm runs scripts and bins through sh; ci.sh uses git, dirname and grep
    for (const name of ['node', 'npm', 'npx', 'sh', 'git', 'dirname', 'grep']) symlinkSync(realpathSync(exec('which', [name], work).stdout.trim()), path.join(bin, name));
    expect(exec('which', ['helm'], work, { PATH: bin }).status).not.toBe(0);
    // these read dist/ and clusters/ and write nothing there: they run side by side
    unchanged = cliAsync(repo, ['diff']);
    preflighted = cliAsync(repo, ['preflight', '--config', 'clusters/lab.yaml', '--snapshot', SNAPSHOT, '--format', 'json']);
    const [validate, check] = await Promise.all([
      cliAsync(repo, ['validate', 'dist']),
      npxAsync(repo, ['check', '--format', 'json'], { PATH: bin }),
    ]);
    expect(validate.status, says(validate)).toBe(0);
    expect(validate.stdout).toMatch(/^ok: \d+ objects, 0 errors/m);
    expect(check.status, says(check)).toBe(0);
    const report = JSON.parse(check.stdout);
    expect(report.engines.helm.source).toBe('package');
    expect(report.engines.kustomize.source).toBe('package');
    expect(report.upstream).toBe(path.join(installed, 'lib', 'assets', 'upstream-installs'));
    expect(report.findings).toEqual([]);
    // the fleet folder is checked, and is no cluster
    expect(report.clusters).toEqual([{ name: 'lab', model: true }, { name: 'training-cluster', model: true }]);
    expect(report.fleet).toEqual(['fleet']);
    // the training cluster's managed installs: charts and overlays rendered from the packaged copies
    expect(report.renderedSources).toBeGreaterThan(20);
  });

  /** A second clusters repository, made by `new` of the toolkit npx installed from the tarball; its own install runs beside the steps below. */
  const second = path.join(work, 'second-repo');
  let secondInstalled: Promise<Pick<Run, 'status' | 'stdout' | 'stderr'>>;
  it('new, run by the toolkit npx installed from the tarball (npx --package ./x.tgz), keeps the tarball in vendor/ and pins it there', async () => {
    // (installed beside the steps above)
    const installedByNpx = await npxInstalled;
    expect(installedByNpx.status, says(installedByNpx)).toBe(0);
    const name = path.basename(tarball);
    const r = exec(path.join(npxHome, 'node_modules', '.bin', PACKAGE_NAME), ['new', second], work);
    expect(r.status, says(r)).toBe(0);
    expect(r.stdout).toContain(`pinned ${PACKAGE_NAME} file:vendor/${name}: the tarball it was installed from, copied into vendor/`);
    expect(sha256(path.join(second, 'vendor', name))).toBe(sha256(tarball));
    expect(JSON.parse(readFileSync(path.join(second, 'package.json'), 'utf8')).devDependencies).toEqual({ [PACKAGE_NAME]: `file:vendor/${name}` });
    // its install (a CI clone's) needs nothing outside the repository: the lock resolves the toolkit to vendor/
    writeFileSync(path.join(second, 'package-lock.json'), JSON.stringify(offlineLock({ [PACKAGE_NAME]: toolkitEntry(`file:vendor/${name}`) }), undefined, 2));
    secondInstalled = execAsync('npm', ['install'], second);
  });

  it('preflight compares the description with the snapshot; the only block init leaves is the Dashboard\'s node port', async () => {
    // (started beside validate and check)
    const r = await preflighted;
    const blocking = (JSON.parse(r.stdout).findings as { rule: string; severity: string }[]).filter((f) => f.severity === 'error');
    expect(blocking.filter((f) => f.rule !== 'nodeport-allocated')).toEqual([]);
    expect(r.status, says(r)).toBe(blocking.length === 0 ? 0 : 1);
  });

  it('after an update of the toolkit, diff lists every object it adds, changes and removes before anything is written; synth keeps its deletion guard', async () => {
    const dist = path.join(repo, 'dist');
    // (run beside validate and check, on the dist/ synth wrote)
    const same = await unchanged;
    expect(same.stdout.trim(), says(same)).toBe('no changes: dist matches a fresh render');
    // the committed output as an older version rendered it: a value it rendered otherwise, an object it
    // lacked, an object it had and the new version drops
    const quota = path.join(dist, 'lab', 'kueue', 'clusterqueue.cluster-queue.yaml');
    writeFileSync(quota, readFileSync(quota, 'utf8').replace(/nominalQuota: "?(\d+)"?/, 'nominalQuota: "999"'));
    const localQueue = 'lab/kueue/localqueue.default.default.yaml';
    rmSync(path.join(dist, localQueue));
    writeFileSync(path.join(dist, 'lab', 'storage', 'configmap.kube-system.retired.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: retired\n  namespace: kube-system\n');
    const before = readTreeFiles(dist);
    const diff = cli(repo, ['diff']);
    expect(diff.status, says(diff)).toBe(1);
    expect(diff.stdout).toMatch(/^lab:$/m);
    expect(diff.stdout).toMatch(/^ {2}~ ClusterQueue cluster-queue \(kueue\/clusterqueue\.cluster-queue\.yaml\)\n( {6}.*\n)* {6}spec\.resourceGroups\[0\]\.flavors\[0\]\.resources\[\d\]\.nominalQuota: "999" -> /m);
    expect(diff.stdout).toMatch(/^ {2}\+ LocalQueue default\/default \(kueue\/localqueue\.default\.default\.yaml\)$/m);
    expect(diff.stdout).toMatch(/^ {2}- ConfigMap kube-system\/retired \(storage\/configmap\.kube-system\.retired\.yaml\)$/m);
    expect(diff.stdout).toMatch(/^1 added, 1 removed, 1 changed/m);
    expect(diff.stderr).toMatch(/error: 1 object\(s\) would be deleted; re-run with --allow-delete/);
    expect(readTreeFiles(dist)).toEqual(before);
    const refused = cli(repo, ['synth']);
    expect(refused.status, says(refused)).toBe(1);
    expect(refused.stderr).toMatch(/ConfigMap kube-system\/retired/);
    expect(readTreeFiles(dist)).toEqual(before);
    const allowed = cli(repo, ['synth', '--allow-delete', '--quiet']);
    expect(allowed.status, says(allowed)).toBe(0);
    expect(readTreeFiles(dist)).toEqual(expected);
  });

  // (its passing run is synth, schema and check, each proven above: only the failing cases run here)
  it('the repository\'s CI script (npm test) fails while a TODO(init) line is open, and when the committed dist/ differs from a fresh render', async () => {
    // the app's compile writes into the repository: done before its files are committed
    await appCompiled;
    const who = { GIT_AUTHOR_NAME: 'ci', GIT_AUTHOR_EMAIL: 'ci@example.com', GIT_COMMITTER_NAME: 'ci', GIT_COMMITTER_EMAIL: 'ci@example.com' };
    const git = (...args: string[]) => exec('git', args, repo, who);
    for (const args of [['init', '-q'], ['add', '-A'], ['commit', '-q', '-m', 'clusters']]) expect(git(...args).status, args.join(' ')).toBe(0);
    // the description as init wrote it: its TODO(init) lines are open
    const todos = exec('npm', ['test', '--silent'], repo, { PATH: bin });
    expect(todos.status, says(todos)).toBe(1);
    expect(todos.stderr).toMatch(/^open TODO\(init\) lines \(facts init could not read from the cluster\): check each, then delete its marker:\nclusters\/lab\.yaml:\d+: /m);
    const lab = path.join(repo, 'clusters', 'lab.yaml');
    writeFileSync(lab, readFileSync(lab, 'utf8').replace(/\s*# TODO\(init\):.*$/gm, ''));
    expect(git('commit', '-q', '-am', 'lab: every TODO(init) checked').status).toBe(0);
    expect(git('status', '--porcelain').stdout).toBe('');
    const file = path.join(repo, 'dist', 'lab', 'README.md');
    writeFileSync(file, `${readFileSync(file, 'utf8')}edited by hand\n`);
    expect(git('commit', '-q', '-am', 'an edit by hand').status).toBe(0);
    const drift = exec('npm', ['test', '--silent'], repo, { PATH: bin });
    expect(drift.status, says(drift)).toBe(1);
    expect(drift.stderr).toMatch(/^dist\/ differs from a fresh render: run npx gpu-cluster-manifests synth \(and schema\), then commit:\n M dist\/lab\/README\.md$/m);
  });

  it('a cdk8s app of the user\'s imports the exported constructs by the package name, type-checks and synthesizes; deep imports are refused', async () => {
    // (its compile started after the install)
    const tsc = await appCompiled;
    expect(tsc.status, says(tsc)).toBe(0);
    const run = exec(process.execPath, ['out/main.js', path.join(repo, 'clusters', 'lab.yaml'), 'manifests'], app);
    expect(run.status, says(run)).toBe(0);
    const storage = readFileSync(path.join(app, 'manifests', 'storage.k8s.yaml'), 'utf8');
    expect(storage).toMatch(/kind: StorageClass\n\s*metadata:\n\s*annotations:\n\s*storageclass\.kubernetes\.io\/is-default-class: "true"/);
    expect(storage).toContain('app.kubernetes.io/part-of: lab');
    expect(readFileSync(path.join(app, 'manifests', 'queues.k8s.yaml'), 'utf8')).toMatch(/kind: LocalQueue\nmetadata:\n {2}name: team-queue\n {2}namespace: team/);
    // a TypeScript description (defineCluster) loads through the installed package, with the user's compiler
    const typed = path.join(repo, 'clusters', 'typed-cluster.ts');
    copyFileSync(path.join(ROOT, 'test', 'fixtures', 'descriptions', 'typed-cluster.ts'), typed);
    const fromTs = exec(process.execPath, ['out/main.js', typed, 'typed'], app);
    expect(fromTs.status, says(fromTs)).toBe(0);
    expect(readFileSync(path.join(app, 'typed', 'storage.k8s.yaml'), 'utf8')).toContain('app.kubernetes.io/part-of: typed-cluster');
    rmSync(typed);
    const api = exec(process.execPath, ['-e', `
      const lib = require('${PACKAGE_NAME}');
      let deep = 'allowed';
      try { require('${PACKAGE_NAME}/lib/src/cli'); } catch (e) { deep = e.code; }
      console.log(JSON.stringify({ keys: Object.keys(lib), deep }));
    `], app);
    const { keys, deep } = JSON.parse(api.stdout) as { keys: string[]; deep: string };
    expect(keys).toEqual(expect.arrayContaining(['defineCluster', 'loadDescription', 'buildModel', 'StorageChart', 'ClusterPolicy', 'synth', 'renderCluster', 'ManifestValidator', 'checkClusters']));
    expect(keys.filter((k) => ['main', 'runCli', 'runDiff', 'writeTreeAtomically'].includes(k))).toEqual([]);
    expect(deep).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('the second repository installs the toolkit from its vendor/ tarball, and its CLI runs', async () => {
    // (started when new made it)
    const r = await secondInstalled;
    expect(r.status, says(r)).toBe(0);
    expect(JSON.parse(readFileSync(path.join(second, 'node_modules', PACKAGE_NAME, 'package.json'), 'utf8')).version).toBe(VERSION);
    const version = npx(second, ['--version']);
    expect(version.stdout.trim(), says(version)).toBe(`${PACKAGE_NAME} ${VERSION}`);
    // new adds no compiler: a TypeScript description there is refused in one line that says how to add it
    const typed = path.join(second, 'clusters', 'typed-cluster.ts');
    copyFileSync(path.join(ROOT, 'test', 'fixtures', 'descriptions', 'typed-cluster.ts'), typed);
    expect(existsSync(path.join(second, 'node_modules', 'typescript'))).toBe(false);
    expectOneLine(exec(path.join(second, 'node_modules', '.bin', PACKAGE_NAME), ['synth', '--config', typed, '--out', 'out'], second),
      /typed-cluster\.ts: a TypeScript description needs the "typescript" package, which is not installed here: npm install --save-dev typescript /);
    expect(existsSync(path.join(second, 'out'))).toBe(false);
  });

  it('every failure is one line and exit 2: an unknown command, no project file, a package file gone (the bundle gone is no failure)', async () => {
    // an unknown command: the CLI's own refusal, whatever is installed
    expectOneLine(await inProcess(['deploy']), /^unknown command "deploy" \(expected one of: .*\); see --help$/);
    expectOneLine(cli(work, ['synth']), /^error: synth: no gpu-cluster-manifests\.yaml in .* or any folder above it; .*$/);
    const crds = path.join(installed, 'lib', 'assets', 'crds');
    renameSync(crds, `${crds}.moved`);
    try {
      expectOneLine(cli(repo, ['validate', 'dist']), /^error: the installed gpu-cluster-manifests lacks its pinned CRD schemas \(.*lib\/assets\/crds\): reinstall it \(npm ci\), or name --schemas DIR; nothing was written$/);
    } finally {
      renameSync(`${crds}.moved`, crds);
    }
    // a typed import the render loads from beside the bundle
    const module = path.join(installed, 'lib', 'imports', 'kueue-localqueue-kueue.x-k8s.io.js');
    cpSync(module, `${module}.saved`);
    rmSync(module);
    try {
      expectOneLine(cli(repo, ['diff']), /^error: the installed gpu-cluster-manifests is incomplete \(Cannot find module '\.\.\/imports\/kueue-localqueue-kueue\.x-k8s\.io\.js'\): reinstall it \(npm ci\)$/);
    } finally {
      renameSync(`${module}.saved`, module);
    }
    // without its bundle the CLI runs the modules of lib/src: slower, the same result
    const bundle = path.join(installed, 'lib', 'bundle', 'cli.js');
    renameSync(bundle, `${bundle}.moved`);
    try {
      const r = cli(repo, ['diff']);
      expect(r.status, says(r)).toBe(0);
      expect(r.stdout).toMatch(/no changes: dist matches a fresh render/);
    } finally {
      renameSync(`${bundle}.moved`, bundle);
    }
  });
});
