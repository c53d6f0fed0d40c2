import { cdk8s, javascript } from 'projen';

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
  'mpijob': 'mpi-operator/kubeflow.org_mpijobs.yaml',
  'pytorchjob': 'training-operator/kubeflow.org_pytorchjobs.yaml',
  'argocd-application': 'argo-cd/application-crd.yaml',
  'argocd-appproject': 'argo-cd/appproject-crd.yaml',
  'argocd-applicationset': 'argo-cd/applicationset-crd.yaml',
  'vm-servicescrape': 'victoriametrics/operator.victoriametrics.com_vmservicescrapes.yaml',
  'vm-podscrape': 'victoriametrics/operator.victoriametrics.com_vmpodscrapes.yaml',
  'vm-nodescrape': 'victoriametrics/operator.victoriametrics.com_vmnodescrapes.yaml',
  'vm-rule': 'victoriametrics/operator.victoriametrics.com_vmrules.yaml',
};

const project = new cdk8s.Cdk8sTypeScriptApp({
  name: 'gpu-cluster-manifests',
  description: 'Typed manifest synthesis for GPU Kubernetes clusters (Instant Cluster).',
  defaultReleaseBranch: 'main',
  projenrcTs: true,
  packageManager: javascript.NodePackageManager.NPM,
  minNodeVersion: '20.0.0',
  maxNodeVersion: '20.99.99',

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

  deps: ['ajv@8.20.0', 'js-yaml@4.1.1', 'yaml@2.9.1', 'zod@4.6.7'],
  devDeps: ['@types/node@^20', '@types/js-yaml@4.0.9', 'vitest@4.1.12', 'vite@8.3.8', 'ts-node@10.9.2', '@prometheus-io/lezer-promql@0.315.0', '@lezer/lr@1.4.12', '@lezer/highlight@1.2.5', 'mermaid@11.17.2', 'jsdom@29.1.1', '@marcbachmann/cel-js@8.0.0'],

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

  gitignore: ['/cdk8s.out/', '/dist.tmp-*/', '/dist.old-*/', '/dist/.gpu-cluster-manifests.*', '/dist/*.tmp-*/', '/dist/*.old-*/', '/bench/results.json', '*.cpuprofile', '/.vitest/'],
});

// dist/ is the product: it is committed and CI checks that it matches a fresh render.
project.gitignore.removePatterns('/dist/');

// cdk8s.yaml: the cdk8s CLI deletes its output folder before each run, so point it at cdk8s.out/
// (never dist/), and run the precompiled app from lib/src (rootDir is the repo, for imports/).
const cdk8sYaml = project.tryFindObjectFile('cdk8s.yaml')!;
cdk8sYaml.addOverride('app', 'node lib/src/main.js');
cdk8sYaml.addOverride('output', 'cdk8s.out');
cdk8sYaml.addOverride('imports', []);

const cli = 'node lib/src/cli.js';
const env = { CDK8S_CHECK_UPGRADE: 'false' };

// `synth` renders with the precompiled CLI; compilation no longer triggers a synth.
project.postCompileTask.reset();
project.tasks.tryFind('synth')!.reset();
project.tasks.tryFind('synth')!.spawn(project.compileTask);
project.tasks.tryFind('synth')!.exec(`${cli} synth`, { receiveArgs: true });
for (const t of ['synth', 'import', 'compile']) project.tasks.tryFind(t)!.env('CDK8S_CHECK_UPGRADE', 'false');

const validate = project.addTask('validate', { description: 'Strictly validate a rendered tree against the upstream schemas', env });
validate.spawn(project.compileTask);
validate.exec(`${cli} validate`, { receiveArgs: true });

const check = project.addTask('check', { description: 'Run the cross-object rules over a rendered tree', env });
check.spawn(project.compileTask);
check.exec(`${cli} check`, { receiveArgs: true });

const diff = project.addTask('diff', { description: 'Show what a fresh render would change in the committed dist/', env });
diff.spawn(project.compileTask);
diff.exec(`${cli} diff`, { receiveArgs: true });

const bench = project.addTask('bench', { description: 'Benchmark render and validation (writes bench/results.json)', env });
bench.spawn(project.compileTask);
bench.exec('node bench/run.mjs', { receiveArgs: true });

const schema = project.addTask('schema', { description: 'Write the JSON Schema of the cluster description (src/clusters/cluster-description.schema.json)', env });
schema.spawn(project.compileTask);
schema.exec(`${cli} schema --out src/clusters/cluster-description.schema.json --readme README.md`);

const importTask = project.tasks.tryFind('import')!;
importTask.reset();
importTask.exec('rm -rf imports');
for (const [name, file] of Object.entries(CRD_IMPORTS)) {
  importTask.exec(`cdk8s import --no-save --language typescript --output imports ${name}:=../shared/crds/${file}`);
}

// Tests: type-check (vitest strips types without checking them), then run vitest against the compiled CLI.
const test = project.testTask;
test.reset();
test.env('CDK8S_CHECK_UPGRADE', 'false');
test.spawn(project.compileTask);
test.exec('tsc -p test/tsconfig.json --noEmit');
test.spawn(project.tasks.tryFind('eslint')!);
test.exec('vitest run', { receiveArgs: true });

project.addTask('test:update', { description: 'Update vitest snapshots (read the diff first)', env }).exec('vitest run -u', { receiveArgs: true });

project.synth();
