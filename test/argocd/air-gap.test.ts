import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { checkCluster, ClusterView, readClusters, renderClusterSources } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { ARGOCD_FOLDER, ARGOCD_INSTALL_IMAGES } from '../../src/components/argocd/chart';
import { managedInstalls } from '../../src/components/gitops/managed-installs';
import { resolveEngines } from '../../src/engines';
import { fullImageName, mirroredRegistry, unmirrorImage } from '../../src/model/mirrors';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest, objectId } from '../../src/render/manifest';
import { manifestFiles } from '../../src/render/tree';
import { loadModels } from '../../src/synth/pipeline';
import { objectImageRefs } from '../../src/upstream';
import { treeFiles } from '../../src/upstream/tree';
import { SchemaStore } from '../../src/validate/schemas';
import { folderObjects, HAS_SCHEMAS, HAS_UPSTREAM, issuesOf, referenceInput, renderOf, ROOT, RULES_WITHOUT_RERUNS } from '../helpers';

const RELEASE = path.join(DEFAULT_UPSTREAM, 'argo-cd-v3.5.1', 'manifests');
const MIRRORS = {
  charts: { 'oci://registry.k8s.io/kueue/charts': 'oci://harbor.lab/kueue/charts', 'https://helm.ngc.nvidia.com/nvidia': 'https://harbor.lab/chartrepo/nvidia' },
  git: { 'https://github.com/': 'https://git.lab/github/' },
  images: { 'nvcr.io': 'harbor.lab/nvcr', 'quay.io': 'harbor.lab/quay' },
};

describe('air-gapped sites: the description options', () => {
  it('gitops.argocdInstall vendored: the folder builds on the package\'s copy, written into it; refused without a managed Argo CD', () => {
    const c = renderOf((d) => { d.gitops.argocdInstall = 'vendored'; });
    const k = c.folders.find((f) => f.folder === ARGOCD_FOLDER)!.kustomization!;
    expect(k.bases).toEqual(['upstream/argo-cd-v3.5.1/manifests/cluster-install']);
    expect(k.vendored).toEqual({ into: 'upstream/argo-cd-v3.5.1/manifests', from: RELEASE });
    expect(renderOf().folders.find((f) => f.folder === ARGOCD_FOLDER)!.kustomization!.bases).toEqual(['https://github.com/argoproj/argo-cd//manifests/cluster-install?ref=v3.5.1']);
    expect(issuesOf((d) => { d.gitops.argocdInstall = 'vendored'; d.gitops.argocd = 'external'; })).toEqual([
      { path: 'gitops.argocdInstall', message: expect.stringMatching(/^"vendored" writes Argo CD's install into the argocd folder, which only gitops.argocd: managed renders/) },
    ]);
    expect(issuesOf((d) => { d.gitops.argocdInstall = 'github'; })).toEqual([{ path: 'gitops.argocdInstall', message: 'expected "upstream" or "vendored", got "github"' }]);
  });

  it('mirrors: charts and overlays from their mirrors (the AppProject permits them), Argo CD\'s base from the Git mirror, the images rendered from the registry mirrors', () => {
    const c = renderOf((d) => { d.installs = { kueue: 'managed', mpiOperator: 'managed', gpuOperator: 'managed' }; d.mirrors = MIRRORS; });
    const apps = folderObjects(c, 'gitops').filter((m) => m.kind === 'Application') as any[];
    const source = (name: string) => apps.find((a) => a.metadata.name === `instant-cluster-${name}`).spec.source;
    expect(source('kueue-install').repoURL).toBe('oci://harbor.lab/kueue/charts/kueue');
    expect(source('gpu-operator-install')).toMatchObject({ repoURL: 'https://harbor.lab/chartrepo/nvidia', chart: 'gpu-operator', targetRevision: 'v26.7.0' });
    expect(source('mpi-operator-install')).toMatchObject({ repoURL: 'https://git.lab/github/kubeflow/mpi-operator.git', targetRevision: 'v0.8.2' });
    const project = folderObjects(c, 'gitops').find((m) => m.kind === 'AppProject') as any;
    expect(project.spec.sourceRepos).toEqual(expect.arrayContaining(['oci://harbor.lab/kueue/charts/kueue', 'https://harbor.lab/chartrepo/nvidia', 'https://git.lab/github/kubeflow/mpi-operator.git']));
    expect(project.spec.sourceRepos.filter((r: string) => /github\.com|registry\.k8s\.io|nvidia\.com/.test(r))).toEqual([]);
    const k = c.folders.find((f) => f.folder === ARGOCD_FOLDER)!.kustomization!;
    expect(k.bases).toEqual(['https://git.lab/github/argoproj/argo-cd.git//manifests/cluster-install?ref=v3.5.1']);
    expect(k.images).toEqual([{ name: 'quay.io/argoproj/argocd', newName: 'harbor.lab/quay/argoproj/argocd' }]);
    // every image the toolkit renders itself (the ClusterPolicy's coordinates among them) from the mirror
    const refs = c.folders.flatMap((f) => f.objects).flatMap((m) => objectImageRefs(m));
    expect(refs.length).toBeGreaterThan(5);
    expect(refs.filter((r) => /^(nvcr|quay)\.io\//.test(fullImageName(r.repository))).map((r) => r.repository)).toEqual([]);
    expect((folderObjects(c, 'gpu-operator').find((m) => m.kind === 'ClusterPolicy') as any).spec.devicePlugin.repository).toBe('harbor.lab/nvcr/nvidia');
    // the chart's own images by its values: the operator's from the mirror beside the toolkit's placement of it; Node
    // Feature Discovery's registry (registry.k8s.io) is not mapped, and the overlay's (Docker Hub) neither: left alone
    const gpuValues = source('gpu-operator-install').helm.valuesObject;
    expect(gpuValues.operator).toMatchObject({ repository: 'harbor.lab/nvcr/nvidia', nodeSelector: expect.any(Object) });
    expect(gpuValues.clusterPolicy).toEqual({ deployCR: false });
    expect(gpuValues['node-feature-discovery']?.image).toBeUndefined();
    expect(source('mpi-operator-install').kustomize.images).toBeUndefined();
    expect(renderOf((d) => { d.installs = { kueue: 'managed', mpiOperator: 'managed', gpuOperator: 'managed' }; d.mirrors = MIRRORS; })).toEqual(c);
  });

  it('mirrors are checked as the description\'s other fields: a registry with a scheme or a tag, a URL without one, named by path', () => {
    expect(issuesOf((d) => { d.mirrors = { images: { 'https://nvcr.io': 'harbor.lab/nvcr' } }; })).toEqual([
      { path: 'mirrors.images.https://nvcr.io', message: expect.stringMatching(/^expected an image registry such as "nvcr.io"/) },
    ]);
    expect(issuesOf((d) => { d.mirrors = { images: { 'nvcr.io': 'harbor.lab/nvcr:v1' } }; })).toEqual([
      { path: 'mirrors.images.nvcr.io', message: expect.stringMatching(/^expected an image registry such as "nvcr.io"/) },
    ]);
    expect(issuesOf((d) => { d.mirrors = { git: { 'https://github.com/': 'git.lab/github' } }; })).toEqual([
      { path: 'mirrors.git.https://github.com/', message: 'expected a repository URL (https://, oci://, ssh:// or user@host:path; no leading "-", no spaces or control characters), got "git.lab/github"' },
    ]);
  });

  // what git, ssh or helm would take as an option: never a user, a host or a path that starts with "-"
  it.each([
    'ssh://-oProxyCommand=touch%20/tmp/pwned/x', '-oProxyCommand=x@git.lab:github', 'git@-oProxyCommand=x:github', 'git@git.lab:-upload-pack=x',
    'https://-git.lab/github/', 'oci://-harbor.lab/charts', 'ssh://-u@git.lab/github',
  ])('a mirror %s is refused', (mirror) => {
    expect(issuesOf((d) => { d.mirrors = { git: { 'https://github.com/': mirror } }; })).toEqual([
      { path: 'mirrors.git.https://github.com/', message: expect.stringMatching(/^expected a repository URL \(.*no leading "-"/) },
    ]);
    expect(issuesOf((d) => { d.mirrors = { charts: { [mirror]: 'oci://harbor.lab/charts' } }; })).toEqual([
      { path: `mirrors.charts.${mirror}`, message: expect.stringMatching(/^expected a repository URL/) },
    ]);
  });
});

describe.skipIf(!HAS_UPSTREAM || !HAS_SCHEMAS)('check builds what the bootstrap builds, offline', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'air-gap-'));
  const out = path.join(work, 'dist');
  // every add-on managed, every registry its installs pull from mirrored
  const file = path.join(ROOT, 'test', 'fixtures', 'descriptions', 'air-gapped.yaml');
  const images = (parse(readFileSync(file, 'utf8')) as { mirrors: { images: Record<string, string> } }).mirrors.images;
  const cluster = path.join(out, 'air-gapped');
  let view: ClusterView;
  let sources: Awaited<ReturnType<typeof renderClusterSources>>;
  const store = SchemaStore.open(DEFAULT_SCHEMAS);
  const lookups = { scopeOf: (a: string, k: string) => store.lookup(a, k)?.scope, schemaOf: (a: string, k: string) => store.lookup(a, k)?.schema };

  beforeAll(async () => {
    expect(await main(['synth', '--config', file, '--out', out, '--quiet'])).toBe(EXIT.ok);
    const [model] = loadModels([file]);
    view = { ...readClusters(out)[0], model };
    sources = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, reruns: false });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('writes the package\'s copy of Argo CD\'s install into the argocd folder byte for byte, which readers of the tree leave out', () => {
    const copy = path.join(cluster, ARGOCD_FOLDER, 'upstream', 'argo-cd-v3.5.1', 'manifests');
    const files = treeFiles(RELEASE);
    expect(treeFiles(copy).map((f) => f.rel)).toEqual(files.map((f) => f.rel));
    for (const f of files) expect(readFileSync(path.join(copy, f.rel)).equals(readFileSync(path.join(RELEASE, f.rel))), f.rel).toBe(true);
    expect(manifestFiles(path.join(cluster, ARGOCD_FOLDER)).map((f) => path.basename(f))).toEqual(['configmap.argocd.argocd-cm.yaml', 'namespace.argocd.yaml']);
  });

  it('renders every Application from its mirror and the argocd folder from its copy: exactly what kubectl apply -k builds, and no rule finds an error', async () => {
    expect(sources.sources.map((s) => [s.what, s.problem?.message])).toEqual(sources.sources.map((s) => [s.what, undefined]));
    const argocd = sources.sources.find((s) => s.what.startsWith('folder dist/air-gapped/argocd '))!;
    expect(argocd.what).toBe('folder dist/air-gapped/argocd (on its copy of argoproj/argo-cd/manifests/cluster-install v3.5.1)');
    // the bootstrap: kubectl apply -k of the folder, nothing read from the network
    const engine = (await resolveEngines()).kustomize;
    const bootstrap = parseAllDocuments(await engine.run(['--', path.join(cluster, ARGOCD_FOLDER)])).map((d) => d.toJS() as Manifest);
    expect(argocd.objects.map(objectId).sort()).toEqual(bootstrap.map(objectId).sort());
    expect(argocd.objects).toEqual(bootstrap);
    // the install's images from the mirror where mirrors.images maps their registry
    const argocdImages = bootstrap.flatMap((o) => objectImageRefs(o)).map((r) => r.repository);
    expect([...new Set(argocdImages.map((i) => unmirrorImage(i, images)))].sort()).toEqual([...ARGOCD_INSTALL_IMAGES].sort());
    expect(argocdImages.filter((i) => mirroredRegistry(i, images) !== undefined)).toEqual([]);
    const findings = checkCluster(view, { renders: sources, rules: RULES_WITHOUT_RERUNS, ...lookups });
    expect(findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(findings.filter((f) => f.rule === 'image-mirror').map((f) => f.message)).toEqual([]);
  });

  it('every managed install pulls every image from a mirror: the charts by the values derived from their defaults, the overlays by kustomize images', () => {
    // all of them (the fixture manages every add-on Argo CD installs)
    const names = managedInstalls(view.model!).map((i) => `air-gapped-${i.name}`);
    const installs = sources.sources.filter((s) => names.includes(s.application.metadata.name));
    expect(installs.map((s) => s.application.metadata.name).sort()).toEqual([...names].sort());
    for (const s of installs) {
      const refs = s.objects.flatMap((o) => objectImageRefs(o)).map((r) => r.repository);
      expect(refs.length, s.what).toBeGreaterThan(0);
      // from a mirror (harbor.lab): none of them is an upstream registry's
      expect(refs.filter((r) => unmirrorImage(r, images) === r), s.what).toEqual([]);
    }
    // the rule still names each image a render pulls from a mapped registry: the same renders with the mirrors undone
    const upstreamOf = (o: Manifest) => JSON.parse(Object.entries(images).reduce((t, [registry, mirror]) => t.split(`"${mirror}/`).join(`"${registry}/`), JSON.stringify(o))) as Manifest;
    const unmirrored = { ...sources, sources: sources.sources.map((s) => (installs.includes(s) ? { ...s, objects: s.objects.map(upstreamOf) } : s)) };
    const fired = checkCluster(view, { renders: unmirrored, rules: RULES_WITHOUT_RERUNS, ...lookups }).filter((f) => f.rule === 'image-mirror').map((f) => f.message.split(':')[0]);
    expect(fired.sort()).toEqual(installs.map((s) => `Application argocd/${s.application.metadata.name}`).sort());
  });

  it('with argocdInstall upstream, Argo CD\'s remote base on the Git mirror is built from the release it mirrors', async () => {
    const mirrored = path.join(work, 'mirrored');
    const config = path.join(work, 'mirrored.yaml');
    const input = referenceInput();
    input.mirrors = { git: MIRRORS.git };
    writeFileSync(config, stringify(input));
    expect(await main(['synth', '--config', config, '--out', mirrored, '--quiet'])).toBe(EXIT.ok);
    const [model] = loadModels([config]);
    const whole: ClusterView = { ...readClusters(mirrored)[0], model };
    // the argocd folder and its Application only: one kustomize build
    const only: ClusterView = {
      ...whole,
      folders: whole.folders.filter((f) => f.folder === ARGOCD_FOLDER || f.folder === 'gitops')
        .map((f) => (f.folder === 'gitops' ? { ...f, objects: f.objects.filter((o) => o.metadata.name === 'instant-cluster-argocd') } : f)),
    };
    const [argocd, ...others] = (await renderClusterSources(only, { upstream: DEFAULT_UPSTREAM, reruns: false })).sources;
    expect(others).toEqual([]);
    expect([argocd.what, argocd.problem]).toEqual(['folder dist/instant-cluster/argocd (on argoproj/argo-cd/manifests/cluster-install v3.5.1)', undefined]);
    const vendored = sources.sources.find((x) => x.what.startsWith('folder dist/air-gapped/argocd '))!;
    expect(argocd.objects.map(objectId).sort()).toEqual(vendored.objects.map(objectId).sort());
  });

  it('a copy that is not the pinned release is refused, named', async () => {
    const edited = path.join(cluster, ARGOCD_FOLDER, 'upstream', 'argo-cd-v3.5.1', 'manifests', 'crds', 'appproject-crd.yaml');
    const original = readFileSync(edited);
    try {
      appendFileSync(edited, '# edited\n');
      const again = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, reruns: false });
      const argocd = again.sources.find((s) => s.what.startsWith('folder dist/air-gapped/argocd '))!;
      expect(argocd.problem).toEqual({ kind: 'failed', message: expect.stringMatching(/upstream\/argo-cd-v3.5.1\/manifests is not the pinned release .* byte for byte: render it again \(synth\)$/) });
    } finally {
      writeFileSync(edited, original);
    }
    expect(parse(readFileSync(path.join(cluster, ARGOCD_FOLDER, 'kustomization.yaml'), 'utf8')).resources[0]).toBe('upstream/argo-cd-v3.5.1/manifests/cluster-install');
  });
});
