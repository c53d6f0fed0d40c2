import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { checkCluster, ClusterView, readClusters, renderClusterSources } from '../../src/check';
import { simulatedNodes } from '../../src/check/placement/nodes';
import { fitOn } from '../../src/check/placement/scheduling';
import { EXIT, main } from '../../src/cli';
import { ARGOCD_FOLDER } from '../../src/components/argocd/chart';
import { healthKey, healthChecks } from '../../src/components/argocd/health-checks';
import { appliedSize, groupKindKey, kindsDefinedBy } from '../../src/components/gitops/api-kinds';
import { ClusterModel } from '../../src/model/model';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { apiGroup, Manifest, objectId } from '../../src/render/manifest';
import { loadModels } from '../../src/synth/pipeline';
import { ClusterRenders } from '../../src/upstream/render';
import { RenderSession } from '../../src/upstream/render-session';
import { SchemaStore } from '../../src/validate/schemas';
import { findObject, folderObjects, HAS_SCHEMAS, HAS_UPSTREAM, issuesOf, readTreeFiles, REFERENCE_FILE, referenceInput, renderOf, ROOT, RULES_WITHOUT_RERUNS } from '../helpers';

const ALL_TAINTED = path.join(ROOT, 'test', 'fixtures', 'descriptions', 'all-tainted.yaml');
/** The upstream install at the pinned tag, as `kubectl apply -k` of the vendored base renders it. */
const UPSTREAM_BASE = path.join(DEFAULT_UPSTREAM, 'argo-cd-v3.5.1', 'manifests', 'cluster-install');

describe('the argocd folder (gitops.argocd: managed)', () => {
  const cluster = renderOf();
  const objects = folderObjects(cluster, ARGOCD_FOLDER);
  const folder = cluster.folders.find((f) => f.folder === ARGOCD_FOLDER)!;

  it('is the default on a cluster that is its own Argo CD: the namespace and argocd-cm with every health check (Dynamo\'s with Dynamo)', () => {
    expect(cluster.model.argocd).toBe('managed');
    expect(objects.map((m) => `${m.kind} ${m.metadata.namespace ?? ''}/${m.metadata.name}`)).toEqual(['Namespace /argocd', 'ConfigMap argocd/argocd-cm']);
    const cm = findObject(objects, 'ConfigMap', 'argocd-cm') as Manifest & { data: Record<string, string> };
    const all = healthChecks().map((c) => healthKey(c.group, c.kind));
    expect(Object.keys(cm.data).sort()).toEqual(all.filter((k) => !k.endsWith('_DynamoGraphDeployment')).sort());
    const withDynamo = findObject(folderObjects(renderOf((d) => { d.installs = { dynamo: 'preinstalled' }; }), ARGOCD_FOLDER), 'ConfigMap', 'argocd-cm') as Manifest & { data: Record<string, string> };
    expect(Object.keys(withDynamo.data).sort()).toEqual(all.sort());
    // Argo CD reads its settings only from ConfigMaps labelled part-of: argocd
    expect(cm.metadata.labels).toMatchObject({ 'app.kubernetes.io/part-of': 'argocd', 'app.kubernetes.io/name': 'argocd-cm' });
  });

  it('builds on the pinned upstream base, patching argocd-cm and placing the workloads', () => {
    const k = folder.kustomization!;
    expect(k.bases).toEqual(['https://github.com/argoproj/argo-cd//manifests/cluster-install?ref=v3.5.1']);
    expect(k.namespace).toBe('argocd');
    expect(k.patchFiles.map((p) => p.file)).toEqual(['configmap.argocd.argocd-cm.yaml']);
    expect(k.patches.map((p) => p.target.kind)).toEqual(['Deployment', 'StatefulSet', 'ClusterRoleBinding', 'CustomResourceDefinition']);
  });

  it('never lets its own Application prune or delete Argo CD\'s CRDs or its Namespace', () => {
    expect(findObject(objects, 'Namespace', 'argocd').metadata.annotations).toEqual({ 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false' });
    const crds = folder.kustomization!.patches.find((p) => p.target.kind === 'CustomResourceDefinition')!;
    expect(parse(crds.patch).metadata.annotations).toEqual({ 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false' });
  });

  it('is managed by Argo CD itself afterwards: an Application of the folder, server-side, never cascading', () => {
    const app = findObject(folderObjects(cluster, 'gitops'), 'Application', 'instant-cluster-argocd') as any;
    expect(app.spec.source.path).toBe('dist/instant-cluster/argocd');
    expect(app.spec.syncPolicy.syncOptions).toEqual(['ServerSideApply=true']);
    expect(app.metadata.finalizers).toBeUndefined();
    const project = findObject(folderObjects(cluster, 'gitops'), 'AppProject', 'instant-cluster') as any;
    expect(project.spec.clusterResourceWhitelist).toEqual(expect.arrayContaining([
      { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' }, { group: 'rbac.authorization.k8s.io', kind: 'ClusterRole' },
      { group: 'rbac.authorization.k8s.io', kind: 'ClusterRoleBinding' }, { group: '', kind: 'Namespace' },
    ]));
  });

  it('"external": no argocd folder and no Application for it; the default off the cluster\'s own API server', () => {
    const external = renderOf((d) => { d.gitops.argocd = 'external'; });
    expect(external.folders.map((f) => f.folder)).not.toContain(ARGOCD_FOLDER);
    expect(folderObjects(external, 'gitops').map((m) => m.metadata.name)).not.toContain('instant-cluster-argocd');
    expect(renderOf((d) => { d.gitops.destinationServer = 'https://10.0.0.1:6443'; }).model.argocd).toBe('external');
  });

  it('refuses "managed" for a cluster synced from elsewhere, naming the field', () => {
    expect(issuesOf((d) => { d.gitops.destinationServer = 'https://10.0.0.1:6443'; d.gitops.argocd = 'managed'; })).toEqual([
      { path: 'gitops.argocd', message: expect.stringMatching(/^"managed" installs Argo CD into this cluster, but gitops.destinationServer names another API server/) },
    ]);
  });
});

describe.skipIf(!HAS_UPSTREAM || !HAS_SCHEMAS)('check builds the argocd folder with the real kustomize over the vendored tree', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'argocd-'));
  const out = path.join(work, 'dist');
  const other = path.join(work, 'other-namespace.yaml');
  const alike = path.join(work, 'alike-cluster.yaml');
  const views = new Map<string, { view: ClusterView; model: ClusterModel; renders: ClusterRenders }>();

  beforeAll(async () => {
    // the reference cluster with Argo CD in a namespace of its own name
    const input = referenceInput();
    input.name = 'other-namespace';
    input.gitops.path = 'dist/other-namespace';
    input.gitops.namespace = 'gitops';
    writeFileSync(other, stringify(input));
    // and the reference under another name: a fleet's alike cluster
    const copy = referenceInput();
    copy.name = 'alike-cluster';
    copy.gitops.path = 'dist/alike-cluster';
    writeFileSync(alike, stringify(copy));
    const files = [REFERENCE_FILE, ALL_TAINTED, other, alike];
    expect(await main(['synth', ...files.flatMap((f) => ['--config', f]), '--out', out, '--quiet'])).toBe(EXIT.ok);
    const models = loadModels(files);
    for (const v of readClusters(out)) {
      const model = models.find((m) => m.name === v.name)!;
      const view = { ...v, model };
      // render-deterministic's fresh second render: for the all-tainted cluster, whose every managed chart a test compares
      views.set(v.name, { view, model, renders: await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, reruns: v.name === 'all-tainted' }) });
    }
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const argocdRender = (name: string) => views.get(name)!.renders.sources.find((s) => s.what.startsWith(`folder dist/${name}/${ARGOCD_FOLDER} `))!;
  const upstream = () => {
    const dir = mkdtempSync(path.join(work, 'base-'));
    writeFileSync(path.join(dir, 'kustomization.yaml'), stringify({ resources: [path.relative(dir, UPSTREAM_BASE)] }));
    return dir;
  };

  it('an upstream folder named through a symbolic link (a mirror mounted elsewhere) renders the same', async () => {
    const link = path.join(work, 'upstream-link');
    symlinkSync(path.resolve(DEFAULT_UPSTREAM), link);
    const { view } = views.get('instant-cluster')!;
    const linked = await renderClusterSources(view, { upstream: link, reruns: false });
    const problems = (r: ClusterRenders) => r.sources.map((x) => [x.what, x.problem?.kind]);
    expect(problems(linked)).toEqual(problems(views.get('instant-cluster')!.renders));
    expect(linked.sources.filter((x) => x.problem !== undefined)).toEqual([]);
  });

  it.each(['instant-cluster', 'all-tainted'])('%s: the upstream install and the folder\'s namespace, every pod of it only on the service node', (name) => {
    const r = argocdRender(name);
    expect(r.problem).toBeUndefined();
    expect(r.type).toBe('kustomize');
    expect(r.what).toBe(`folder dist/${name}/argocd (on argoproj/argo-cd/manifests/cluster-install v3.5.1)`);
    const workloads = r.objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
    expect(workloads.map((o) => o.metadata.name).sort()).toEqual([
      'argocd-application-controller', 'argocd-applicationset-controller', 'argocd-dex-server', 'argocd-notifications-controller', 'argocd-redis',
      'argocd-repo-server', 'argocd-server',
    ]);
    const nodes = simulatedNodes(views.get(name)!.model);
    for (const w of workloads) {
      const spec = (w.spec as any).template.spec;
      const fits = nodes.filter((n) => fitOn(spec, n).fits > 0).map((n) => n.role);
      expect([...new Set(fits)], w.metadata.name).toEqual(['service']);
      expect(spec.nodeSelector['kubernetes.io/os'], 'upstream\'s own selector stays').toBe('linux');
    }
    // and the rules (placement among them) find nothing
    expect(checkCluster(views.get(name)!.view, { renders: views.get(name)!.renders, rules: RULES_WITHOUT_RERUNS, ...lookups })).toEqual([]);
  });

  it('every managed Helm Application of the all-tainted cluster renders identically twice with its values, the second time afresh', () => {
    const { renders } = views.get('all-tainted')!;
    const helm = renders.sources.filter((r) => r.type === 'helm');
    expect(helm.map((r) => r.what.split(' ')[1]).sort()).toEqual(['dynamo-platform', 'gpu-operator', 'kueue', 'network-operator', 'victoria-metrics-k8s-stack']);
    expect(renders.reruns!.filter((r) => r.type === 'helm').map((r) => r.what).sort()).toEqual(helm.map((r) => r.what).sort());
    for (const second of renders.reruns!.filter((r) => r.type === 'helm')) {
      const first = helm.find((r) => r.application === second.application)!;
      expect(second.problem, second.what).toBeUndefined();
      expect(second.objects, second.what).toEqual(first.objects);
    }
  });

  it('holds every object of the upstream install, argocd-cm with upstream\'s entries and the health checks', async () => {
    const r = argocdRender('instant-cluster');
    const { resolveEngines } = await import('../../src/engines');
    const engines = await resolveEngines();
    const stock = parseAllDocuments(await engines.kustomize.run([upstream()])).map((d) => d.toJS() as Manifest);
    const ids = (list: readonly Manifest[]) => list.map((o) => objectId({ ...o, metadata: { ...o.metadata, namespace: o.metadata.namespace ?? (isClusterScoped(o) ? undefined : 'argocd') } })).sort();
    expect(ids(r.objects)).toEqual([...ids(stock), objectId({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } })].sort());
    const cm = r.objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'argocd-cm') as Manifest & { data: Record<string, string> };
    const stockCm = stock.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'argocd-cm') as Manifest & { data: Record<string, string> };
    const ours = healthChecks().filter((c) => c.kind !== 'DynamoGraphDeployment');
    expect(cm.data).toEqual({ ...stockCm.data, ...Object.fromEntries(ours.map((c) => [healthKey(c.group, c.kind), c.script])) });
    // the build marks every CRD of the install (the patch over the upstream base): never pruned, never deleted
    const crds = r.objects.filter((o) => o.kind === 'CustomResourceDefinition');
    expect(crds.map((o) => o.metadata.name).sort()).toEqual(['applications.argoproj.io', 'applicationsets.argoproj.io', 'appprojects.argoproj.io']);
    for (const o of crds) expect(o.metadata.annotations?.['argocd.argoproj.io/sync-options'], o.metadata.name).toBe('Prune=false,Delete=false');
  });

  it('the declared footprint is the build\'s: its cluster-scoped kinds and its largest object', () => {
    const r = argocdRender('instant-cluster');
    const folder = readClusters(out).find((v) => v.name === 'instant-cluster')!.folders.find((f) => f.folder === ARGOCD_FOLDER)!;
    const own = new Set(folder.objects.map(objectId));
    const kinds = new Set(r.objects.filter((o) => isClusterScoped(o) && !own.has(objectId(o))).map((o) => `${apiGroup(o.apiVersion)}/${o.kind}`));
    const declared = renderOf().folders.find((f) => f.folder === ARGOCD_FOLDER)!.kustomization!.footprint;
    expect([...kinds].sort()).toEqual(declared.clusterKinds.map((gk) => `${gk.group}/${gk.kind}`).sort());
    expect(Math.max(...r.objects.map(appliedSize))).toBe(declared.largestObjectBytes);
    // the kinds its CRDs define: what init takes as brought by the bootstrap
    expect(kindsDefinedBy(r.objects).map(groupKindKey).sort()).toEqual((declared.definedKinds ?? []).map(groupKindKey).sort());
  });

  it('in another namespace than argocd: every namespaced object there, every binding to its ServiceAccounts there', () => {
    const r = argocdRender('other-namespace');
    expect(r.problem).toBeUndefined();
    for (const o of r.objects.filter((x) => !isClusterScoped(x))) expect(o.metadata.namespace, objectId(o)).toBe('gitops');
    const subjects = r.objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding').flatMap((o) => (o as any).subjects as { kind: string; namespace?: string }[]);
    expect(subjects.filter((s) => s.kind === 'ServiceAccount').map((s) => s.namespace)).toEqual(subjects.filter((s) => s.kind === 'ServiceAccount').map(() => 'gitops'));
    expect(checkCluster(views.get('other-namespace')!.view, { renders: views.get('other-namespace')!.renders, rules: RULES_WITHOUT_RERUNS, ...lookups })).toEqual([]);
  });

  it('alike clusters share one build of Argo CD\'s install in a run (their argocd folders are the same); another namespace is a build of its own', async () => {
    const folderOf = (name: string) => readTreeFiles(path.join(out, name, ARGOCD_FOLDER));
    expect(folderOf('alike-cluster')).toEqual(folderOf('instant-cluster'));
    const session = new RenderSession(defaultCacheDir());
    const names = ['instant-cluster', 'alike-cluster', 'other-namespace'];
    // at the same time, as check renders a few clusters at once
    const renders = await Promise.all(names.map((n) => renderClusterSources(views.get(n)!.view, {
      upstream: DEFAULT_UPSTREAM, session, reruns: false,
    })));
    const built = session.counts['remote-based'];
    expect(built.runs + built.cached, 'one build per distinct folder: by the engine, or from the cache').toBe(2);
    expect(built.shared).toBe(1);
    const [one, two] = renders.map((r, i) => r.sources.find((s) => s.what.startsWith(`folder dist/${names[i]}/${ARGOCD_FOLDER} `))!);
    expect(two.objects).toBe(one.objects);
    const namespace = one.objects.find((o) => o.kind === 'Namespace')!;
    expect(namespace.metadata.labels).toMatchObject({ 'app.kubernetes.io/part-of': 'argocd' });
    // the pinned charts' default renders, asked for by each cluster, are shared too
    expect(session.counts.chart.shared).toBeGreaterThanOrEqual(names.length - 1);
    expect(checkCluster(views.get('alike-cluster')!.view, { renders: renders[1], rules: RULES_WITHOUT_RERUNS, ...lookups })).toEqual([]);
  });

  it('never fetches: a remote base that is no vendored release is unreleased, and released-versions says so', async () => {
    const { view, model } = views.get('instant-cluster')!;
    const dir = path.join(out, 'instant-cluster', ARGOCD_FOLDER);
    const file = path.join(dir, 'kustomization.yaml');
    const original = readFileSync(file, 'utf8');
    try {
      writeFileSync(file, original.replace('?ref=v3.5.1', '?ref=v3.4.0'));
      const renders = await renderClusterSources({ ...view, model }, { upstream: DEFAULT_UPSTREAM, cacheDir: false, reruns: false });
      const r = renders.sources.find((s) => s.what.startsWith('folder dist/instant-cluster/argocd '))!;
      expect(r.problem).toEqual({ kind: 'unreleased', message: expect.stringMatching(/remote base https:\/\/github.com\/argoproj\/argo-cd\/\/manifests\/cluster-install\?ref=v3.4.0 is no vendored release/) });
      expect(checkCluster({ ...view, model }, { renders, rules: RULES_WITHOUT_RERUNS, ...lookups }).map((f) => f.rule)).toEqual(['released-versions']);
    } finally {
      writeFileSync(file, original);
    }
  });
});

/** The pinned CRDs, as check reads them (--schemas default). */
const store = HAS_SCHEMAS ? SchemaStore.open(DEFAULT_SCHEMAS) : undefined;
const lookups = {
  scopeOf: (apiVersion: string, kind: string) => store?.lookup(apiVersion, kind)?.scope,
  schemaOf: (apiVersion: string, kind: string) => store?.lookup(apiVersion, kind)?.schema,
};

/** Cluster-scoped kinds of the install (the upstream objects name no namespace). */
function isClusterScoped(o: Manifest): boolean {
  return ['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'Namespace'].includes(o.kind);
}
