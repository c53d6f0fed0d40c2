import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCheck } from '../../src/commands/check';
import { Engine, Engines, resolveEngines } from '../../src/engines';
import { InputError } from '../../src/errors';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { ApplicationSource, imageObjects, imageRefsOf, locateChart, renderApplications, RenderContext, RenderedSource } from '../../src/upstream';
import { GPU_OPERATOR_CHART, KUEUE_CHART } from '../../src/upstream/releases';
import { parseRemoteBase, parseRepositoryBase, remoteBase, remoteResourcesOf, repositoryBase } from '../../src/upstream/remote-bases';
import { VERSIONS } from '../../src/versions';
import { HAS_UPSTREAM, renderedFixtures } from '../helpers';

const work = mkdtempSync(path.join(tmpdir(), 'render-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** An Argo CD Application with one source. */
function application(name: string, source: ApplicationSource, namespace = name): Manifest {
  return { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: 'argocd' }, spec: { destination: { namespace }, source } };
}

/** Engines whose runs are counted (the real ones underneath). */
function counted(e: Engines): { engines: Engines; runs: string[] } {
  const runs: string[] = [];
  const wrap = (x: Engine): Engine => ({ ...x, run: (args, opts) => { runs.push(`${x.name} ${args[0]}`); return x.run(args, opts); } });
  return { engines: { ...e, helm: wrap(e.helm), kustomize: wrap(e.kustomize) }, runs };
}

let engines: Engines;
beforeAll(async () => {
  engines = await resolveEngines();
});

/** Renders one Application with the vendored upstream folder (own cache folder unless given). */
async function render(app: Manifest, ctx: Partial<RenderContext> = {}): Promise<RenderedSource> {
  const [r] = await renderApplications([app], { upstream: DEFAULT_UPSTREAM, engines, cacheDir: path.join(work, 'cache'), kubeVersion: 'v1.31.0', ...ctx });
  return r;
}

const kinds = (r: RenderedSource) => r.objects.map((o) => o.kind);
const images = (r: RenderedSource) => [...new Set(r.objects.flatMap((o) => imageRefsOf(o)).map((i) => `${i.repository}:${i.tag}`))].sort();

describe.skipIf(!HAS_UPSTREAM)('rendering a Helm source as Argo CD does', () => {
  it('finds the vendored chart of exactly that name and version, also in a folder filled with helm pull --untar', () => {
    expect(locateChart(DEFAULT_UPSTREAM, 'gpu-operator', 'v26.7.0')?.release).toBe(GPU_OPERATOR_CHART);
    expect(locateChart(DEFAULT_UPSTREAM, 'gpu-operator', 'v26.3.0')).toBeUndefined();
    // kong 2.46.0 is no registered release: found by its Chart.yaml
    expect(locateChart(DEFAULT_UPSTREAM, 'kong', '2.46.0')?.dir).toBe(path.join(DEFAULT_UPSTREAM, 'kong-chart-2.46.0', 'charts', 'kong'));
    // main of dynamo-platform (1.5.0) is vendored but no release
    expect(locateChart(DEFAULT_UPSTREAM, 'dynamo-platform', '1.5.0')).toBeUndefined();
  });

  it('stamps the GPU Operator chart as published: the tag as appVersion, hence the operator\'s and validator\'s tag', async () => {
    const r = await render(application('gpu', { chart: 'gpu-operator', repoURL: VERSIONS.gpuOperator.repoURL, targetRevision: 'v26.7.0' }, 'gpu-operator'));
    expect(r.problem).toBeUndefined();
    const policy = r.objects.find((o) => o.kind === 'ClusterPolicy')!;
    expect(imageObjects(policy.spec, 'spec').find((i) => i.path === 'spec.validator')?.value).toEqual({ repository: 'nvcr.io/nvidia', image: 'gpu-operator', version: 'v26.7.0' });
    expect(images(r)).toContain('nvcr.io/nvidia/gpu-operator:v26.7.0');
    // crds/ is not vendored: the CRDs it holds are known from the release, with the NFD subchart's as NFD is on by default
    expect(r.unrenderedCrds.map((c) => c.kind)).toEqual(expect.arrayContaining(['ClusterPolicy', 'NVIDIADriver', 'NodeFeatureRule']));
  });

  it('stamps Kueue\'s chart with the promoted images of the release, as its release script does', async () => {
    const r = await render(application('kueue', { repoURL: 'oci://registry.k8s.io/kueue/charts/kueue', path: '.', targetRevision: '0.19.2' }, 'kueue-system'));
    expect(images(r)).toEqual([`registry.k8s.io/kueue/kueue:v${KUEUE_CHART.version}`]);
    expect(r.objects.find((o) => o.kind === 'Deployment')!.metadata.namespace).toBe('kueue-system');
  });

  it('renders dynamo-platform without its dependencies that are not vendored, and refuses values that enable one', async () => {
    const source = { chart: 'dynamo-platform', repoURL: VERSIONS.dynamoPlatform.repoURL, targetRevision: '1.4.0' };
    const r = await render(application('dynamo', source, 'dynamo-system'));
    expect(r.problem).toBeUndefined();
    expect(images(r)).toContain('nvcr.io/nvidia/ai-dynamo/kubernetes-operator:1.4.0');
    expect(r.unrenderedCrds.map((c) => c.kind)).toContain('DynamoGraphDeployment');
    const grove = await render(application('dynamo', { ...source, helm: { valuesObject: { global: { grove: { install: true } } } } }, 'dynamo-system'));
    expect(grove.problem).toEqual({ kind: 'failed', message: expect.stringMatching(/^the values enable dependency grove \(global.grove.install: true\), which the vendored chart does not include/) });
    const dashboard = await render(application('dashboard', { chart: 'kubernetes-dashboard', targetRevision: '7.13.0', helm: { valuesObject: { 'cert-manager': { enabled: true } } } }));
    expect(dashboard.problem?.message).toMatch(/enable dependency cert-manager \(cert-manager.enabled: true\)/);
    expect((await render(application('dashboard', { chart: 'kubernetes-dashboard', targetRevision: '7.13.0' }))).problem).toBeUndefined();
  });

  it('renders the VictoriaMetrics stack with its operator\'s crd.yaml, a git symbolic link the copy holds as a plain file', async () => {
    const r = await render(application('vm', { chart: 'victoria-metrics-k8s-stack', targetRevision: '0.54.0', helm: { releaseName: 'vm' } }, 'monitoring'));
    expect(r.problem).toBeUndefined();
    expect(kinds(r).filter((k) => k === 'CustomResourceDefinition')).toHaveLength(19);
    expect(kinds(r)).toEqual(expect.arrayContaining(['VMSingle', 'VMAgent', 'VMAlert', 'VMAlertmanager', 'ValidatingWebhookConfiguration']));
    // Helm test hooks (grafana's test pod) are not applied by Argo CD
    expect(r.objects.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === 'test')).toEqual([]);
  });

  it('passes the API versions the cluster serves, as Argo CD does: the Dynamo operator\'s ServiceMonitors only where that CRD is served', async () => {
    const source = { chart: 'dynamo-platform', repoURL: VERSIONS.dynamoPlatform.repoURL, targetRevision: '1.4.0' };
    expect(kinds(await render(application('dynamo', source, 'dynamo-system')))).not.toContain('ServiceMonitor');
    expect(kinds(await render(application('dynamo', source, 'dynamo-system'), { apiVersions: ['monitoring.coreos.com/v1'] }))).toContain('ServiceMonitor');
  });

  it('an unreleased version is reported, not rendered', async () => {
    const r = await render(application('dynamo', { chart: 'dynamo-platform', targetRevision: '1.5.0' }));
    expect(r).toMatchObject({ objects: [], problem: { kind: 'unreleased', message: expect.stringMatching(/^chart dynamo-platform 1.5.0 has no vendored release in /) } });
  });
});

describe.skipIf(!HAS_UPSTREAM)('rendering a kustomize source', () => {
  const mpi = { repoURL: VERSIONS.mpiOperator.repoURL, path: VERSIONS.mpiOperator.path, targetRevision: VERSIONS.mpiOperator.version };

  it('builds the vendored overlay with the Application\'s namespace, images and patches', async () => {
    const r = await render(application('mpi', {
      ...mpi,
      kustomize: {
        namespace: 'batch-system',
        images: ['mpioperator/mpi-operator=example.com/mirror/mpi-operator:0.8'],
        patches: [{ target: { kind: 'Deployment', name: 'mpi-operator' }, patch: '[{"op": "add", "path": "/spec/template/spec/priorityClassName", "value": "system-cluster-critical"}]' }],
      },
    }, 'mpi-operator'));
    expect(r.problem).toBeUndefined();
    const deployment = r.objects.find((o) => o.kind === 'Deployment') as any;
    expect(deployment.metadata.namespace).toBe('batch-system');
    expect(deployment.spec.template.spec.containers[0].image).toBe('example.com/mirror/mpi-operator:0.8');
    expect(deployment.spec.template.spec.priorityClassName).toBe('system-cluster-critical');
    expect(kinds(r)).toContain('CustomResourceDefinition');
  });

  it('builds a folder of the rendered tree, and reports one that does not build', async () => {
    const folder = path.join(work, 'tree', 'storage');
    cpSync(path.join(renderedFixtures(), 'instant-cluster', 'storage'), folder, { recursive: true });
    const source = { repoURL: 'https://git.example.com/x.git', path: 'dist/x/storage' };
    const ok = await render(application('storage', source), { folderOf: () => folder });
    expect(ok.problem).toBeUndefined();
    expect(ok.objects.length).toBe(readdirSync(folder).length - 1);
    writeFileSync(path.join(folder, 'kustomization.yaml'), `${readFileSync(path.join(folder, 'kustomization.yaml'), 'utf8')}  - missing.yaml\n`);
    const broken = await render(application('storage', source), { folderOf: () => folder });
    expect(broken.problem).toEqual({ kind: 'failed', message: expect.stringMatching(/^exit 1: .*missing.yaml/) });
  });
});

describe('building the folders of a tree', () => {
  it('builds every folder in one kustomize run, each folder\'s objects exactly as its own build gives them', async () => {
    const tree = path.join(renderedFixtures(), 'instant-cluster');
    // the argocd folder builds on a remote base: on its own, over the vendored tree (test/argocd)
    const dirs = readdirSync(tree).filter((f) => statSync(path.join(tree, f)).isDirectory() && f !== 'tutorials');
    const folders = dirs.filter((f) => remoteResourcesOf(path.join(tree, f)).length === 0);
    expect(dirs.filter((f) => !folders.includes(f))).toEqual(['argocd']);
    // the gitops folder builds only with its root's kustomize options (the commit it pins to): test/gitops
    const apps = folders.filter((f) => f !== 'gitops').map((f) => application(f, { repoURL: 'https://git.example.com/x.git', path: `dist/x/${f}` }));
    const folderOf = (s: ApplicationSource) => path.join(tree, s.path!.split('/').pop()!);
    const together = counted(engines);
    const all = await renderApplications(apps, { engines: together.engines, cacheDir: path.join(work, 'together'), folderOf });
    expect(together.runs).toHaveLength(1);
    const alone = counted(engines);
    for (const app of apps) {
      const [one] = await renderApplications([app], { engines: alone.engines, cacheDir: path.join(work, 'alone'), folderOf });
      expect(all.find((r) => r.application === app)!.objects, app.metadata.name).toEqual(one.objects);
    }
    expect(alone.runs).toHaveLength(apps.length);
  });

  it('when one folder does not build, builds each on its own and says which one fails', async () => {
    const tree = path.join(work, 'two');
    for (const f of ['kueue', 'storage']) cpSync(path.join(renderedFixtures(), 'instant-cluster', f), path.join(tree, f), { recursive: true });
    writeFileSync(path.join(tree, 'kueue', 'kustomization.yaml'), `${readFileSync(path.join(tree, 'kueue', 'kustomization.yaml'), 'utf8')}  - gone.yaml\n`);
    const apps = ['kueue', 'storage'].map((f) => application(f, { repoURL: 'https://git.example.com/x.git', path: `dist/x/${f}` }));
    const c = counted(engines);
    const [kueue, storage] = await renderApplications(apps, { engines: c.engines, cacheDir: path.join(work, 'two-cache'), folderOf: (s) => path.join(tree, s.path!.split('/').pop()!) });
    expect(c.runs).toHaveLength(3);
    expect(kueue.problem).toEqual({ kind: 'failed', message: expect.stringMatching(/gone\.yaml/) });
    expect(storage.problem).toBeUndefined();
    expect(storage.objects.map((o) => o.kind)).toContain('StorageClass');
  });
});

describe.skipIf(!HAS_UPSTREAM)('the render cache', () => {
  it('keys renders by content, never by path or time: a copy renders from the cache, a changed byte or value does not', async () => {
    const copy = (name: string) => {
      const upstream = path.join(work, name);
      cpSync(path.join(DEFAULT_UPSTREAM, 'network-operator-v26.4.1'), path.join(upstream, 'network-operator-v26.4.1'), { recursive: true });
      return upstream;
    };
    const cacheDir = path.join(work, 'cache-keys');
    const app = (values: Record<string, unknown>) => application('net', { chart: 'network-operator', targetRevision: '26.4.1', helm: { valuesObject: values } }, 'nvidia-network-operator');
    const run = async (upstream: string, values: Record<string, unknown> = {}) => {
      const c = counted(engines);
      const r = await render(app(values), { upstream, cacheDir, engines: c.engines });
      return { r, runs: c.runs.length };
    };
    const first = await run(copy('one'));
    expect(first.runs).toBe(1);
    // the same content elsewhere, written later: from the cache
    const two = copy('two');
    utimesSync(path.join(two, 'network-operator-v26.4.1', 'deployment', 'network-operator', 'values.yaml'), new Date(2001, 1, 1), new Date(2001, 1, 1));
    const second = await run(two);
    expect(second.runs).toBe(0);
    expect(second.r.objects).toEqual(first.r.objects);
    // other values, or one byte of a chart file changed (same size, same time): rendered
    expect((await run(two, { nfd: { enabled: false } })).runs).toBe(1);
    const three = copy('three');
    const values = path.join(three, 'network-operator-v26.4.1', 'deployment', 'network-operator', 'values.yaml');
    const text = readFileSync(values, 'utf8');
    const stat = statSync(values);
    writeFileSync(values, text.replace('enabled: true', 'enabled: truE'));
    utimesSync(values, stat.atime, stat.mtime);
    expect((await run(three)).runs).toBe(1);
    // a damaged entry reads as a miss and is rendered again
    for (const e of readdirSync(path.join(cacheDir, 'renders'))) writeFileSync(path.join(cacheDir, 'renders', e), 'garbage');
    expect((await run(two)).runs).toBe(1);
  });
});

describe('--upstream', () => {
  it('an explicit folder that does not exist is bad input for check', async () => {
    const missing = path.join(tmpdir(), 'no-such-upstream-installs');
    const io = { out: () => undefined, err: () => undefined };
    await expect(runCheck([renderedFixtures(), '--upstream', missing], io)).rejects.toThrow(InputError);
  });
});

describe('remote bases', () => {
  const release = { repoURL: 'https://github.com/argoproj/argo-cd.git', path: 'manifests/cluster-install', version: 'v9.9.9' };

  it('a release on a mirror of any host is written and read back the same (the argocd folder writes it, check reads it)', () => {
    const mirrored = { ...release, repoURL: 'https://git.lab.example/mirrors/argo-cd' };
    expect(repositoryBase(mirrored)).toBe('https://git.lab.example/mirrors/argo-cd.git//manifests/cluster-install?ref=v9.9.9');
    expect(parseRepositoryBase(repositoryBase(mirrored))).toEqual({ ...mirrored, repoURL: `${mirrored.repoURL}.git` });
    expect(parseRepositoryBase(remoteBase(release))).toEqual(release);
    expect(parseRemoteBase(remoteBase(release))).toEqual(release);
    // an http:// mirror (mirrors.git accepts one: a site's Git server on its own network, the cluster tests' loopback one)
    const plain = { ...release, repoURL: 'http://127.0.0.1:8080/github/argoproj/argo-cd' };
    expect(parseRepositoryBase(repositoryBase(plain))).toEqual({ ...plain, repoURL: `${plain.repoURL}.git` });
  });

  it('what is no remote base is not read as one', () => {
    for (const r of ['../base', 'https://git.lab.example/x.git//p', 'file:///etc//p?ref=v1']) expect(parseRepositoryBase(r), r).toBeUndefined();
  });
});
