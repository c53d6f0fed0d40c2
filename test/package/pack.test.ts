import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers';

// The package as another cdk8s app gets it: `npm pack`, installed into a temporary app, imported by
// its name. Offline on purpose: the tarball is unpacked where npm would put it and the app's other
// dependencies are this repository's installed ones (linked), so no registry is needed.
const NAME = 'gpu-cluster-manifests';
const env = { ...process.env, CDK8S_CHECK_UPGRADE: 'false', npm_config_audit: 'false', npm_config_fund: 'false' };
const TYPED_FIXTURE = path.join(ROOT, 'test', 'fixtures', 'descriptions', 'typed-cluster.ts');

const APP = `import { App, Chart } from 'cdk8s';
import { buildModel, ClusterModel, KueueLocalQueue, loadDescription, StorageChart } from '${NAME}';

const [description, outdir] = process.argv.slice(2);
const model: ClusterModel = buildModel(loadDescription(description));
const app = new App({ outdir });
new StorageChart(app, 'storage', { model });
const queues = new Chart(app, 'queues', { disableResourceNameHashes: true });
new KueueLocalQueue(queues, 'Team', { name: 'team-queue', namespace: 'team', clusterQueue: model.queueing.defaultQueue.clusterQueue });
app.synth();
`;

function run(command: string, args: string[], cwd: string) {
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8' });
  expect(r.status, `${command} ${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

describe('the npm package', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'pack-'));
  const app = path.join(work, 'app');
  const installed = path.join(app, 'node_modules', NAME);
  let packedFiles: string[] = [];

  it('packs the compiled library with its types, and nothing else', () => {
    const packed = run('npm', ['pack', '--json', '--pack-destination', work], ROOT);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    packedFiles = info.files.map((f) => f.path);
    expect(packedFiles).toEqual(expect.arrayContaining(['package.json', 'lib/src/index.js', 'lib/src/index.d.ts', 'lib/src/model/define.d.ts']));
    expect(packedFiles.filter((f) => f.endsWith('.map') || f.startsWith('test/') || f.startsWith('dist/') || /^src\/.*\.ts$/.test(f))).toEqual([]);

    // install: the tarball where npm puts it, the app's other dependencies linked from this repository
    mkdirSync(path.join(app, 'node_modules'), { recursive: true });
    run('tar', ['-xzf', path.join(work, info.filename), '-C', work], work);
    renameSync(path.join(work, 'package'), installed);
    for (const dep of readdirSync(path.join(ROOT, 'node_modules'))) {
      if (!dep.startsWith('.') && dep !== NAME) symlinkSync(path.join(ROOT, 'node_modules', dep), path.join(app, 'node_modules', dep), 'dir');
    }
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer-app', private: true, dependencies: { [NAME]: `file:../${info.filename}` } }));
  });

  it('declares every package its code requires', () => {
    const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const required = new Set<string>();
    for (const f of packedFiles.filter((p) => p.endsWith('.js'))) {
      for (const [, id] of readFileSync(path.join(installed, f), 'utf8').matchAll(/\brequire\("([^".][^"]*)"\)/g)) {
        const pkg = id.startsWith('@') ? id.split('/').slice(0, 2).join('/') : id.split('/')[0];
        if (!builtinModules.includes(pkg) && !pkg.startsWith('node:')) required.add(pkg);
      }
    }
    expect(required.size).toBeGreaterThan(3);
    expect([...required].filter((p) => !(p in manifest.dependencies))).toEqual([]);
  });

  it('type-checks and synthesizes a cdk8s app that imports it by name', () => {
    writeFileSync(path.join(app, 'main.ts'), APP);
    writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'node16', target: 'es2020', strict: true, skipLibCheck: true, outDir: 'out', types: ['node'] },
      files: ['main.ts'],
    }));
    run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], app);
    // a TypeScript description (defineCluster) loads through the installed package too
    run(process.execPath, ['out/main.js', TYPED_FIXTURE, 'manifests'], app);
    const storage = readFileSync(path.join(app, 'manifests', 'storage.k8s.yaml'), 'utf8');
    expect(storage).toMatch(/kind: StorageClass\n\s*metadata:\n\s*annotations:\n\s*storageclass\.kubernetes\.io\/is-default-class: "true"/);
    expect(storage).toContain('app.kubernetes.io/part-of: typed-cluster');
    expect(readFileSync(path.join(app, 'manifests', 'queues.k8s.yaml'), 'utf8')).toMatch(/kind: LocalQueue\nmetadata:\n {2}name: team-queue\n {2}namespace: team/);
  });

  it('exports its public API only', () => {
    const r = run(process.execPath, ['-e', `
      const lib = require('${NAME}');
      let deep = 'allowed';
      try { require('${NAME}/lib/src/cli'); } catch (e) { deep = e.code; }
      console.log(JSON.stringify({ keys: Object.keys(lib), deep }));
    `], app);
    const { keys, deep } = JSON.parse(r.stdout) as { keys: string[]; deep: string };
    expect(keys).toEqual(expect.arrayContaining(['defineCluster', 'loadDescription', 'parseDescription', 'buildModel', 'StorageChart', 'ClusterPolicy', 'synth', 'renderCluster', 'ManifestValidator', 'checkClusters']));
    expect(keys.filter((k) => ['main', 'runDiff', 'writeTreeAtomically', 'formatPath'].includes(k))).toEqual([]);
    expect(deep).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    expect(existsSync(path.join(app, 'manifests'))).toBe(true);
  });
});
