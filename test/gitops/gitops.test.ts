import { App, Chart } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { appliedSize, CLIENT_SIDE_APPLY_LIMIT } from '../../src/components/gitops/api-kinds';
import { checkGitops } from '../../src/components/gitops/checks';
import { GitopsApplication } from '../../src/components/gitops/gitops-application';
import { CHILD_RETRY, folderWaves, installWaveKey, planGitops, revisionReplacements } from '../../src/components/gitops/plan';
import { LABELS } from '../../src/model/names';
import { durationSeconds } from '../../src/model/schema-types';
import { inKustomization } from '../../src/render/folder-files';
import { Manifest } from '../../src/render/manifest';
import { findObject, folderObjects, HAS_SCHEMAS, renderOf, schemaErrors } from '../helpers';

type Edit = Parameters<typeof renderOf>[0];
const ALL_MANAGED = { gpuOperator: 'managed', networkOperator: 'managed', kueue: 'managed', mpiOperator: 'managed', trainingOperator: 'managed', monitoring: 'managed' } as const;

const gitopsOf = (edit?: Edit) => folderObjects(renderOf(edit), 'gitops');
const apps = (objects: readonly Manifest[]) => objects.filter((m) => m.kind === 'Application') as any[];
const app = (objects: readonly Manifest[], name: string) => findObject(objects, 'Application', name) as any;
const wave = (m: Manifest) => Number(m.metadata.annotations?.[LABELS.syncWave] ?? '0');

describe('gitops: app-of-apps of the reference cluster', () => {
  const cluster = renderOf();
  const objects = folderObjects(cluster, 'gitops');

  it('renders the reference cluster\'s Argo CD objects', () => {
    expect(objects).toMatchSnapshot();
  });

  it('has a root Application syncing the gitops folder and one Application per component folder', () => {
    const root = app(objects, 'instant-cluster');
    expect(root.spec.source).toEqual({
      repoURL: 'https://git.example.com/platform/clusters.git',
      targetRevision: 'main',
      path: 'dist/instant-cluster/gitops',
      kustomize: { commonAnnotations: { 'gpu-cluster.dev/revision': '${ARGOCD_APP_REVISION}' }, commonAnnotationsEnvsubst: true },
    });
    expect(root.metadata.namespace).toBe('argocd');
    const components = cluster.folders.map((f) => f.folder).filter((f) => f !== 'gitops');
    expect(apps(objects).map((a) => a.spec.source.path).sort()).toEqual(['gitops', ...components].map((f) => `dist/instant-cluster/${f}`).sort());
    expect(apps(objects).every((a) => a.spec.project === 'instant-cluster')).toBe(true);
  });

  it('installs nothing when every add-on is preinstalled', () => {
    expect(apps(objects).filter((a) => a.metadata.annotations?.[LABELS.provides])).toEqual([]);
    expect(apps(objects).filter((a) => a.spec.source.chart || a.spec.source.repoURL !== 'https://git.example.com/platform/clusters.git')).toEqual([]);
  });

  it('never auto-syncs the samples; syncs configuration automatically with prune and self-heal', () => {
    expect(app(objects, 'instant-cluster-samples').spec.syncPolicy.automated).toBeUndefined();
    for (const a of apps(objects).filter((x) => x.metadata.name !== 'instant-cluster-samples')) {
      expect(a.spec.syncPolicy.automated, a.metadata.name).toEqual({ prune: true, selfHeal: true });
    }
  });

  it('orders the waves: CR folders, then tenants and monitoring, then samples', () => {
    const w = (f: string) => wave(app(objects, `instant-cluster-${f}`));
    for (const f of ['gpu-operator', 'network-operator', 'kueue', 'storage']) expect(w(f), f).toBe(1);
    expect(w('tenants')).toBeGreaterThan(w('kueue'));
    expect(w('samples')).toBeGreaterThan(w('tenants'));
    expect(wave(findObject(objects, 'AppProject', 'instant-cluster'))).toBe(-1);
  });

  it('diffs every child server-side (custom resources too), and skips no dry run when the CRDs are preinstalled', () => {
    expect(app(objects, 'instant-cluster-gpu-operator').metadata.annotations[LABELS.compareOptions]).toBe('ServerSideDiff=true');
    expect(app(objects, 'instant-cluster-storage').metadata.annotations[LABELS.compareOptions]).toBe('ServerSideDiff=true');
    expect(app(objects, 'instant-cluster').metadata.annotations[LABELS.compareOptions]).toBeUndefined();
    expect(apps(objects).filter((a) => a.spec.syncPolicy.syncOptions?.includes('SkipDryRunOnMissingResource=true'))).toEqual([]);
  });

  it('leaves the root out of the folder it syncs: applied by hand (the bootstrap), never waiting for itself', () => {
    const root = app(objects, 'instant-cluster');
    expect(root.metadata.annotations[LABELS.byHand]).toBe('true');
    expect(inKustomization(root)).toBe(false);
    expect(apps(objects).filter((a) => a !== root && inKustomization(a)).length).toBeGreaterThan(3);
  });

  it('pins every Application of this repository the root applies to the commit the root synced (kustomize replacements)', () => {
    const gitops = cluster.folders.find((f) => f.folder === 'gitops')!;
    const project = findObject(objects, 'AppProject', 'instant-cluster');
    expect(gitops.replacements).toEqual([{
      source: { group: 'argoproj.io', kind: 'AppProject', name: project.metadata.name, namespace: 'argocd', fieldPath: `metadata.annotations.[${LABELS.revision}]` },
      targets: apps(objects).filter((a) => inKustomization(a) && a.metadata.name !== 'instant-cluster').map((a) => ({
        select: { group: 'argoproj.io', kind: 'Application', name: a.metadata.name, namespace: 'argocd' }, fieldPaths: ['spec.source.targetRevision'],
      })),
    }]);
    // managed installs read their own charts and repositories: never pinned to a commit of this one
    const managed = folderObjects(renderOf((d) => { d.installs = ALL_MANAGED; }), 'gitops');
    const pinned = revisionReplacements(managed, 'dist/instant-cluster')[0].targets.map((t) => t.select.name);
    expect(pinned.filter((n) => n.endsWith('-install'))).toEqual([]);
    expect(pinned).toContain('instant-cluster-kueue');
  });

  it('bounds every wait of the root\'s waves (gitops.waveWait on each Application it syncs) and retries: the root for ever with the newest commit, a child a few times', () => {
    const root = app(objects, 'instant-cluster');
    const children = apps(objects).filter((a) => a !== root && inKustomization(a));
    expect(children.length).toBeGreaterThan(3);
    for (const a of children) {
      expect(a.metadata.annotations[LABELS.waveWait], a.metadata.name).toBe('600');
      expect(a.spec.syncPolicy.retry, a.metadata.name).toEqual(CHILD_RETRY);
    }
    // the root: nothing waits on it; its retries resolve its branch again (refresh) and never end (a limit strands a commit)
    expect(root.metadata.annotations[LABELS.waveWait]).toBeUndefined();
    expect(root.spec.syncPolicy.retry).toEqual({ limit: -1, refresh: true, backoff: { duration: '10s', factor: 2, maxDuration: '2m' } });
    // synced by hand: no retry, nothing waits on it
    const samples = app(objects, 'instant-cluster-samples');
    expect([samples.spec.syncPolicy.retry, samples.metadata.annotations[LABELS.waveWait]]).toEqual([undefined, undefined]);
    // a child retries for minutes, not an hour: the commit that fixes it reaches it only once its retries end
    const { limit, backoff } = CHILD_RETRY;
    const wait = (i: number) => Math.min(durationSeconds(backoff.duration) * backoff.factor ** i, durationSeconds(backoff.maxDuration));
    const seconds = Array.from({ length: limit }, (_, i) => wait(i)).reduce((a, b) => a + b, 0);
    expect(seconds).toBe(135);
    const custom = folderObjects(renderOf((d) => { d.gitops.waveWait = '1h30m'; }), 'gitops');
    expect(app(custom, 'instant-cluster-kueue').metadata.annotations[LABELS.waveWait]).toBe('5400');
  });

  it('refuses a wave wait out of bounds, naming the field', () => {
    for (const bad of ['5s', '25h', '10', 'ten minutes', '1d']) {
      expect(() => renderOf((d) => { d.gitops.waveWait = bad; }), bad).toThrow(/gitops\.waveWait/);
    }
    expect(durationSeconds('1h30m15s')).toBe(5415);
  });

  it('puts the cascading-delete finalizer on component Applications only', () => {
    expect(app(objects, 'instant-cluster').metadata.finalizers).toBeUndefined();
    expect(app(objects, 'instant-cluster-storage').metadata.finalizers).toEqual(['resources-finalizer.argocd.argoproj.io']);
  });

  it('confines the AppProject to the namespaces and cluster-scoped kinds the rendered objects use', () => {
    const project = findObject(objects, 'AppProject', 'instant-cluster') as any;
    const used = new Set(cluster.folders.flatMap((f) => f.objects).map((m) => m.metadata.namespace).filter(Boolean));
    expect(project.spec.destinations.map((d: any) => d.namespace).sort()).toEqual([...used].sort());
    expect(project.spec.destinations.some((d: any) => d.namespace.includes('*'))).toBe(false);
    const clusterScoped = new Set(cluster.folders.flatMap((f) => f.objects).filter((m) => !m.metadata.namespace).map((m) => `${m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : ''}/${m.kind}`));
    // and what the argocd folder's upstream base creates (its declared footprint, checked against the build in test/argocd)
    for (const f of cluster.folders) for (const gk of f.kustomization?.footprint.clusterKinds ?? []) clusterScoped.add(`${gk.group}/${gk.kind}`);
    expect(project.spec.clusterResourceWhitelist.map((w: any) => `${w.group}/${w.kind}`).sort()).toEqual([...clusterScoped].sort());
    expect(project.spec.sourceRepos).toEqual(['https://git.example.com/platform/clusters.git']);
  });

  it('passes every GitOps check', () => {
    expect(checkGitops(cluster)).toEqual([]);
  });
});

describe('gitops: managed add-ons', () => {
  const cluster = renderOf((d) => { d.installs = ALL_MANAGED; });
  const objects = folderObjects(cluster, 'gitops');

  it('renders the Argo CD objects with every add-on managed', () => {
    expect(objects).toMatchSnapshot();
  });

  it('installs the operators in wave 0 from pinned charts and the MPI/Training Operator kustomize overlays', () => {
    const gpu = app(objects, 'instant-cluster-gpu-operator-install');
    expect(wave(gpu)).toBe(0);
    expect(gpu.spec.source).toMatchObject({ repoURL: 'https://helm.ngc.nvidia.com/nvidia', chart: 'gpu-operator', targetRevision: 'v26.7.0' });
    expect(gpu.spec.source.helm.valuesObject).toMatchObject({
      driver: { enabled: false }, toolkit: { enabled: false }, clusterPolicy: { deployCR: false }, nfd: { enabled: true },
    });
    expect(app(objects, 'instant-cluster-kueue-install').spec.source).toMatchObject({ repoURL: 'oci://registry.k8s.io/kueue/charts/kueue', path: '.', targetRevision: '0.19.2' });
    expect(app(objects, 'instant-cluster-mpi-operator-install').spec.source).toMatchObject({
      repoURL: 'https://github.com/kubeflow/mpi-operator.git', path: 'manifests/overlays/standalone', targetRevision: 'v0.8.2',
    });
    expect(app(objects, 'instant-cluster-training-operator-install').spec.source).toMatchObject({ repoURL: 'https://github.com/kubeflow/trainer.git', targetRevision: 'v1.9.4' });
    expect(app(objects, 'instant-cluster-monitoring-stack-install').spec.source.chart).toBe('victoria-metrics-k8s-stack');
  });

  it('puts the MPI and Training Operator Deployments on the service node through kustomize patches (upstream has no placement)', () => {
    for (const [name, deployment] of [['mpi-operator', 'mpi-operator'], ['training-operator', 'training-operator']]) {
      const patches = app(objects, `instant-cluster-${name}-install`).spec.source.kustomize.patches as { target: object; patch: string }[];
      const placement = patches.filter((p) => p.patch.includes('/spec/template/spec/tolerations'));
      expect(placement.map((p) => p.target), name).toEqual([{ group: 'apps', kind: 'Deployment', name: deployment }]);
      expect(JSON.parse(placement[0].patch), name).toEqual([
        { op: 'add', path: '/spec/template/spec/nodeSelector', value: { 'node-role.kubernetes.io/control-plane': '' } },
        { op: 'add', path: '/spec/template/spec/tolerations', value: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }] },
      ]);
    }
  });

  it('renders no Helm Application for local-path-provisioner (the storage folder carries it)', () => {
    expect(apps(objects).map((a) => a.metadata.name).filter((n) => n.includes('local-path'))).toEqual([]);
  });

  it('diffs and applies every child server-side (a server-side diff does not see a field dropped from Git that a client-side apply wrote), taking over Argo CD\'s own client-side fields; the root applies client-side', () => {
    const [root, ...children] = apps(objects).sort((a, b) => (a.metadata.name === 'instant-cluster' ? -1 : b.metadata.name === 'instant-cluster' ? 1 : 0));
    expect(root.metadata.name).toBe('instant-cluster');
    expect(children.length).toBeGreaterThan(5);
    for (const a of children) {
      expect(a.spec.syncPolicy.syncOptions, a.metadata.name).toContain('ServerSideApply=true');
      expect(a.metadata.annotations[LABELS.compareOptions], a.metadata.name).toBe('ServerSideDiff=true');
      expect(a.metadata.annotations['argocd.argoproj.io/client-side-apply-migration-manager'], a.metadata.name).toBe('argocd-controller');
    }
    expect(root.spec.syncPolicy.syncOptions ?? []).not.toContain('ServerSideApply=true');
    expect(root.metadata.annotations?.[LABELS.compareOptions]).toBeUndefined();
  });

  it('refuses an Application that diffs server-side and applies client-side', () => {
    const chart = new Chart(new App(), 'c');
    expect(() => new GitopsApplication(chart, 'a', {
      name: 'a',
      namespace: 'argocd',
      project: 'p',
      source: { repoUrl: 'https://example.com/r.git', path: 'p' },
      destinationServer: 'https://kubernetes.default.svc',
      destinationNamespace: 'default',
      serverSideDiff: true,
    })).toThrow('GitopsApplication a: serverSideDiff needs ServerSideApply=true in syncOptions');
  });

  it('skips the dry run of CRs whose CRDs the same sync installs, and runs them after their operator', () => {
    for (const f of ['gpu-operator', 'network-operator', 'kueue']) {
      const a = app(objects, `instant-cluster-${f}`);
      expect(a.spec.syncPolicy.syncOptions, f).toContain('SkipDryRunOnMissingResource=true');
      expect(wave(a)).toBeGreaterThan(wave(app(objects, `instant-cluster-${f}-install`)));
    }
  });

  it('ignores only operator-written fields', () => {
    const kueue = app(objects, 'instant-cluster-kueue-install');
    expect(kueue.spec.ignoreDifferences.map((i: any) => i.kind)).toEqual(['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'CustomResourceDefinition', 'Secret']);
    expect(apps(objects).filter((a) => !a.metadata.annotations?.[LABELS.provides] && a.spec.ignoreDifferences)).toEqual([]);
  });

  it('whitelists the installs\' namespaces and cluster-scoped kinds in the AppProject', () => {
    const project = findObject(objects, 'AppProject', 'instant-cluster') as any;
    const namespaces = project.spec.destinations.map((d: any) => d.namespace);
    expect(namespaces).toEqual(expect.arrayContaining(['gpu-operator', 'nvidia-network-operator', 'kueue-system', 'mpi-operator', 'kubeflow', 'monitoring']));
    expect(project.spec.clusterResourceWhitelist).toEqual(expect.arrayContaining([
      { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' }, { group: '', kind: 'Namespace' },
    ]));
    expect(project.spec.sourceRepos).toContain('https://helm.ngc.nvidia.com/nvidia');
  });

  it('passes every GitOps check', () => {
    expect(checkGitops(cluster)).toEqual([]);
  });

  it('turns automated sync off when the description says so (samples stay manual)', () => {
    const manual = gitopsOf((d) => { d.gitops.automated = { prune: false, selfHeal: false }; });
    expect(app(manual, 'instant-cluster-storage').spec.syncPolicy.automated).toEqual({ prune: false, selfHeal: false });
    expect(app(manual, 'instant-cluster-samples').spec.syncPolicy.automated).toBeUndefined();
  });

  it('names the AppProject after gitops.project', () => {
    const named = gitopsOf((d) => { d.gitops.project = 'gpu-platform'; });
    expect(findObject(named, 'AppProject', 'gpu-platform').metadata.name).toBe('gpu-platform');
    expect(apps(named).every((a) => a.spec.project === 'gpu-platform')).toBe(true);
  });
});

describe('gitops: waves follow what the folders need', () => {
  const ns = (name: string): Manifest => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const cm = (name: string, namespace: string): Manifest => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } });
  const crd: Manifest = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' }, spec: { group: 'example.com', names: { kind: 'Widget' } } };
  const widget: Manifest = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } };
  const folder = (name: string, objects: Manifest[]) => ({ folder: name, description: name, objects });

  it('puts a new folder after the folder that creates its namespace or defines its CRD', () => {
    const waves = folderWaves([folder('extra', [cm('a', 'team'), widget]), folder('crds', [crd]), folder('tenants', [ns('team')])], undefined);
    expect(waves.get('crds')).toBe(1);
    expect(waves.get('tenants')).toBe(2);
    expect(waves.get('extra')).toBe(3);
  });

  it('syncs an install that claims volumes of the default StorageClass after the StorageClasses, and its custom resources after it', () => {
    const objects = folderObjects(renderOf((d) => { d.installs = ALL_MANAGED; }), 'gitops');
    const storage = wave(app(objects, 'instant-cluster-storage'));
    const stack = wave(app(objects, 'instant-cluster-monitoring-stack-install'));
    expect(stack).toBe(storage + 1);
    expect(wave(app(objects, 'instant-cluster-monitoring'))).toBe(stack + 1);
    expect(wave(app(objects, 'instant-cluster-kueue-install'))).toBe(0);
    // with the StorageClasses pre-installed (nothing rendered to wait for) the stack stays with the other installs
    const waves = folderWaves([folder('extra', [widget])], [{ name: 'stack', provides: [{ group: 'example.com', kind: '*' }], needsDefaultStorageClass: true }]);
    expect(waves.get(installWaveKey('stack'))).toBe(0);
    expect(waves.get('extra')).toBe(1);
  });

  it('syncs an install after the install that defines the kinds it creates (no SkipDryRunOnMissingResource race); with its own NFD or an external one it stays with the others', () => {
    const gitops = (nfd: 'gpu-operator' | 'network-operator' | 'external') => folderObjects(renderOf((d) => {
      d.installs = ALL_MANAGED;
      d.nodeFeatureDiscovery = { deployedBy: nfd };
    }), 'gitops');
    // the GPU Operator deploys NFD: the Network Operator's NodeFeatureRule waits a wave for that install's CRD
    const byGpuOperator = gitops('gpu-operator');
    const net = app(byGpuOperator, 'instant-cluster-network-operator-install');
    expect(wave(net)).toBe(wave(app(byGpuOperator, 'instant-cluster-gpu-operator-install')) + 1);
    expect(net.spec.syncPolicy.syncOptions).not.toContain('SkipDryRunOnMissingResource=true');
    expect(wave(app(byGpuOperator, 'instant-cluster-network-operator'))).toBe(wave(net) + 1);
    // the Network Operator's chart brings the NFD CRDs itself (its subchart's crds/), or NFD is pre-installed with its CRDs
    for (const nfd of ['network-operator', 'external'] as const) {
      const objects = gitops(nfd);
      expect(wave(app(objects, 'instant-cluster-network-operator-install')), nfd).toBe(0);
      expect(wave(app(objects, 'instant-cluster-gpu-operator-install')), nfd).toBe(0);
    }
    const kind = { group: 'example.com', kind: 'Widget' };
    const waves = folderWaves([], [
      { name: 'user', provides: [], needsDefaultStorageClass: false, clusterKinds: [kind] },
      { name: 'crds', provides: [{ group: 'example.com', kind: '*' }], needsDefaultStorageClass: false },
      { name: 'own', provides: [kind], needsDefaultStorageClass: false, clusterKinds: [kind] },
    ]);
    expect(waves.get(installWaveKey('crds'))).toBe(0);
    expect(waves.get(installWaveKey('user'))).toBe(1);
    expect(waves.get(installWaveKey('own'))).toBe(0);
  });

  it('refuses folders that need each other', () => {
    expect(() => folderWaves([folder('a', [ns('x'), cm('c', 'y')]), folder('b', [ns('y'), cm('c', 'x')])], undefined)).toThrow(/a -> b.*b -> a/);
  });
});

describe('gitops: checks fail on broken trees', () => {
  const cluster = renderOf((d) => { d.installs = ALL_MANAGED; });
  const replace = (folder: string, map: (m: any) => any) => ({
    folders: cluster.folders.map((f) => (f.folder === folder ? { ...f, objects: f.objects.map((m) => map(structuredClone(m))) } : f)),
  });
  const rules = (view: Parameters<typeof checkGitops>[0]) => checkGitops(view).map((f) => f.rule);

  it('an Application whose path does not exist', () => {
    const broken = replace('gitops', (m) => {
      if (m.metadata.name === 'instant-cluster-storage') m.spec.source.path = 'dist/instant-cluster/storag';
      return m;
    });
    const findings = checkGitops(broken);
    expect(findings.map((f) => f.rule)).toEqual(['gitops-application-path', 'gitops-folder-owner']);
    expect(findings[0].message).toContain('Application argocd/instant-cluster-storage syncs path "dist/instant-cluster/storag"');
  });

  it('a folder owned by two Applications', () => {
    const broken = replace('gitops', (m) => {
      if (m.metadata.name === 'instant-cluster-dashboard') m.spec.source.path = 'dist/instant-cluster/storage';
      return m;
    });
    expect(rules(broken).sort()).toEqual(['gitops-folder-owner', 'gitops-folder-owner']);
    expect(checkGitops(broken).map((f) => f.message)).toContain('folder storage/ is synced by 2 Applications: Application argocd/instant-cluster-dashboard, Application argocd/instant-cluster-storage');
  });

  it('CRs in the same wave as their operator', () => {
    const broken = replace('gitops', (m) => {
      if (m.metadata.name === 'instant-cluster-kueue') m.metadata.annotations[LABELS.syncWave] = '0';
      return m;
    });
    const findings = checkGitops(broken);
    expect(findings.map((f) => f.rule)).toContain('gitops-wave-order');
    expect(findings.find((f) => f.rule === 'gitops-wave-order')!.message).toMatch(/instant-cluster-kueue \(wave 0\) syncs .* needs Application argocd\/instant-cluster-kueue-install \(wave 0\)/);
  });

  it('objects in a namespace created by a later wave', () => {
    const inResearch: Manifest = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'early', namespace: 'research' } };
    const broken = { folders: cluster.folders.map((f) => (f.folder === 'storage' ? { ...f, objects: [...f.objects, inResearch] } : f)) };
    const finding = checkGitops(broken).find((f) => f.rule === 'gitops-wave-order')!;
    expect(finding.message).toBe('Application argocd/instant-cluster-storage (wave 1) syncs ConfigMap research/early, which needs Application argocd/instant-cluster-tenants (wave 2) to create its namespace first: give it a later wave');
  });

  it('an Application writing where its AppProject forbids', () => {
    const broken = replace('gitops', (m) => {
      if (m.kind === 'AppProject') {
        m.spec.destinations = m.spec.destinations.filter((d: any) => d.namespace !== 'research');
        m.spec.clusterResourceWhitelist = m.spec.clusterResourceWhitelist.filter((w: any) => w.kind !== 'StorageClass');
      }
      return m;
    });
    const messages = checkGitops(broken).filter((f) => f.rule === 'gitops-project-destination').map((f) => f.message);
    expect(messages).toContain('Application argocd/instant-cluster-tenants syncs Namespace research into namespace "research", which AppProject instant-cluster forbids'.replace('Namespace research into namespace "research"', 'LocalQueue research/research into namespace "research"'));
    expect(messages.some((m) => m.includes('syncs the cluster-scoped StorageClass local-path'))).toBe(true);
  });

  it('a tree without a root Application', () => {
    const broken = { folders: cluster.folders.map((f) => (f.folder === 'gitops' ? { ...f, objects: f.objects.filter((m) => m.kind !== 'Application' || m.metadata.name !== 'instant-cluster') } : f)) };
    expect(rules(broken)).toEqual(['gitops-application-path', 'gitops-folder-owner', 'gitops-wave-order']);
  });
});

describe('gitops: object sizes', () => {
  it('applies a folder with an object over the client-side-apply limit server-side, as every folder', () => {
    const cluster = renderOf();
    const model = cluster.model;
    const huge: Manifest = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'huge', namespace: 'default' }, data: { blob: 'x'.repeat(CLIENT_SIDE_APPLY_LIMIT) } };
    expect(appliedSize(huge)).toBeGreaterThan(CLIENT_SIDE_APPLY_LIMIT);
    const plan = planGitops(model, [...cluster.folders.filter((f) => f.folder !== 'gitops'), { folder: 'big', description: 'big', objects: [huge] }]);
    expect(plan.applications.find((a) => a.folder === 'big')!.syncOptions).toContain('ServerSideApply=true');
    expect(plan.applications.find((a) => a.folder === 'storage')!.syncOptions).toContain('ServerSideApply=true');
  });
});

describe.skipIf(!HAS_SCHEMAS)('gitops: strict validation against the Argo CD v3.5 CRDs', () => {
  it.each([
    ['preinstalled add-ons', undefined],
    ['managed add-ons', (d: any) => { d.installs = ALL_MANAGED; }],
  ])('%s', (_name, edit) => {
    const cluster = renderOf(edit as Edit);
    const gitopsErrors = schemaErrors(cluster).filter((e) => e.source === 'gitops');
    expect(gitopsErrors).toEqual([]);
  });
});
