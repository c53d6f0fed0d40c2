import { describe, expect, it } from 'vitest';
import { DATA_SYNC_OPTIONS } from '../../src/model/data-safety';
import { ADOPTED_SYNC_OPTIONS, decidingSyncOption, FLEET_FOLDER, LABELS, ownSyncOptions, RESOURCES_FINALIZER, syncOptionValue } from '../../src/model/names';
import {
  clusterFate, deletedInCluster, Deletion, hubApplications, keptInCluster, needAllowDelete, otherEntries, readTreeObjects, removal, removedObjects,
  TreeObject, treeObjects,
} from '../../src/render/deletions';
import { Manifest, RenderedCluster } from '../../src/render/manifest';
import { ownership } from '../../src/upgrade/ownership';
import { crdOf, Edit, renderedFixtures, renderOf } from '../helpers';

// What the cluster does with a rendered object that leaves dist/ (argo-cd v3.5.1): one fate per object, read from the
// object as the last render wrote it (the live object carries what Argo CD last applied).

const object = (kind: string, name: string, annotations: Record<string, string> = {}, extra: Record<string, unknown> = {}): Manifest => ({
  apiVersion: kind === 'Application' ? 'argoproj.io/v1alpha1' : 'v1',
  kind,
  metadata: { name, ...(kind === 'Application' ? { namespace: 'argocd' } : { namespace: 'team' }), annotations, ...extra },
} as Manifest);
const options = (list: readonly string[]) => ({ [LABELS.syncOptions]: list.join(',') });

describe('clusterFate', () => {
  it('a plain object, an Application with the resources finalizer: pruned, nothing to add', () => {
    expect(clusterFate(object('ConfigMap', 'c'))).toEqual({});
    expect(clusterFate(object('Application', 'lab-storage', {}, { finalizers: [RESOURCES_FINALIZER] }))).toEqual({});
  });

  it('a CRD stays, with its kind', () => {
    expect(clusterFate(crdOf('example.com', 'Widget', 'Namespaced') as Manifest).stays).toMatch(/^stays in the cluster: Argo CD never prunes a CRD .*only the Widget objects/);
  });

  it('Prune=false stays (the first Prune= entry counts, as gitops-engine reads it), with the kubectl delete of the object; Delete=false said when set', () => {
    const adopted = clusterFate(object('ConfigMap', 'c', options(ADOPTED_SYNC_OPTIONS)));
    expect(adopted.stays).toMatch(/Prune=false, nor deletes it with its Application \(Delete=false\); .* kubectl delete -n team configmap c$/);
    const pruneOnly = clusterFate(object('ConfigMap', 'c', options(['Prune=false', 'Prune=confirm'])));
    expect(pruneOnly.stays).toMatch(/Prune=false; its Application shows it OutOfSync/);
    expect(clusterFate(object('ConfigMap', 'c', options(['Prune=confirm', 'Prune=false']))).stays).toBeUndefined();
  });

  it('Prune=confirm is deleted once confirmed, naming the Application of its folder (the root for the gitops folder)', () => {
    const ns = object('ConfigMap', 'c', options(DATA_SYNC_OPTIONS));
    expect(removal({ file: 'lab/tenants/namespace.x.yaml', manifest: ns }).note).toMatch(/confirms \(Prune=confirm\).*argocd app confirm-deletion lab-tenants$/);
    expect(removal({ file: 'lab/gitops/x.yaml', manifest: ns }).note).toMatch(/argocd app confirm-deletion lab$/);
    expect(removal({ file: 'fleet/x.yaml', manifest: ns }).note).toMatch(/argocd app confirm-deletion <application>$/);
  });

  it('an object whose Application leaves with the resources finalizer: the cascade waits for a confirmation on Prune=confirm as on Delete=confirm (its own or its Application\'s)', () => {
    const app = () => object('Application', 'lab-tenants', {}, { finalizers: [RESOURCES_FINALIZER] });
    const withOptions = (syncOptions: string[]) => ({ ...app(), spec: { syncPolicy: { automated: { prune: true }, syncOptions } } } as Manifest);
    const ctx = (a: Manifest) => ({ application: 'lab-tenants', app: a, appLeaves: true });
    const confirm = /^deleted with its Application lab-tenants, which leaves too \(resources finalizer\), once someone confirms \((Prune|Delete)=confirm\): argocd app confirm-deletion lab-tenants$/;
    expect(clusterFate(object('ConfigMap', 'c', options(['Prune=confirm'])), ctx(withOptions([]))).note).toMatch(confirm);
    expect(clusterFate(object('ConfigMap', 'c', options(['Delete=confirm'])), ctx(withOptions([]))).note).toMatch(confirm);
    expect(clusterFate(object('ConfigMap', 'c'), ctx(withOptions(['Prune=confirm']))).note).toMatch(confirm);
    // Prune=false alone does not spare it from the cascade
    expect(clusterFate(object('ConfigMap', 'c', options(['Prune=false'])), ctx(withOptions([]))).note)
      .toBe('deleted with its Application lab-tenants, which leaves too: its resources finalizer deletes what it applied (Prune=false does not spare it: '
        + 'whether a cascading delete spares an object is read from Delete= only)');
  });

  it('an Application without the resources finalizer is deleted alone; one applied by hand stays', () => {
    expect(clusterFate(object('Application', 'lab-kueue-install')).note).toMatch(/^Argo CD deletes this Application only, .*kubectl patch application -n argocd lab-kueue-install /);
    const byHand = clusterFate(object('Application', 'lab-samples', { [LABELS.byHand]: 'true' }, { finalizers: [RESOURCES_FINALIZER] }));
    expect(byHand.stays).toMatch(/^stays in the cluster: applied by hand, .*kubectl delete -n argocd application\.argoproj\.io lab-samples \(its resources finalizer deletes what it applied too\)$/);
  });

  it('the counts: what Argo CD deletes, what stays, what is no object; --allow-delete is asked for all but what stays', () => {
    const ds: Deletion[] = [
      { cluster: 'lab', object: 'ConfigMap team/c', file: 'lab/x/c.yaml' },
      { cluster: 'lab', object: 'ConfigMap team/k', file: 'lab/x/k.yaml', stays: 'stays' },
      { cluster: 'lab', object: 'Application argocd/a', file: 'lab/gitops/a.yaml', note: 'alone' },
      { cluster: 'NOTES.md', object: 'the file NOTES.md', file: 'NOTES.md', notAnObject: true },
    ];
    expect(deletedInCluster(ds).map((d) => d.object)).toEqual(['ConfigMap team/c', 'Application argocd/a']);
    expect(keptInCluster(ds).map((d) => d.object)).toEqual(['ConfigMap team/k']);
    expect(otherEntries(ds).map((d) => d.object)).toEqual(['the file NOTES.md']);
    expect(needAllowDelete(ds)).toHaveLength(3);
  });
});

describe('upgrade-plan: an object two Applications applied and none applies after the upgrade', () => {
  it('is pruned, unless the cluster keeps it (a CRD, Prune=false): then the finding says so', () => {
    const crd = crdOf('example.com', 'Widget', 'Namespaced') as Manifest;
    const kept = object('ConfigMap', 'kept', options(ADOPTED_SYNC_OPTIONS));
    const plain = object('ConfigMap', 'plain');
    const apps = ['a', 'b'].map((application) => ({ application, namespace: 'team', objects: [crd, kept, plain], source: `render ${application}/` }));
    const messages = ownership({ from: 'v1', to: 'v2' }, apps, [], () => undefined).map((f) => `${f.subject}: ${f.message.replace(/^.*none does: /, '')}`);
    expect(messages).toEqual([
      'ConfigMap team/kept: it stays in the cluster: Argo CD never prunes an object whose sync options say Prune=false, nor deletes it with its Application '
        + '(Delete=false); its Application shows it OutOfSync (requires pruning) while it stays; an admin deletes it if wanted: kubectl delete -n team configmap kept',
      'ConfigMap team/plain: Argo CD prunes it',
      expect.stringMatching(/^CustomResourceDefinition widgets\.example\.com: it stays in the cluster: Argo CD never prunes a CRD/),
    ]);
  });
});

describe('upgrade-plan: an object that leaves, judged in the context of the Application that applied it', () => {
  const application = (name: string, syncPolicy: Record<string, unknown>) => ({ ...object('Application', name, {}, { finalizers: [RESOURCES_FINALIZER] }), spec: { syncPolicy } } as Manifest);
  const leaves = (apps: { application: string; app: Manifest }[], to: { application: string; app: Manifest }[] = apps) => {
    const plain = object('ConfigMap', 'plain');
    const from = apps.map((a) => ({ ...a, namespace: 'team', objects: [plain], source: `render ${a.application}/` }));
    const after = to.map((a) => ({ ...a, namespace: 'team', objects: [], source: `render ${a.application}/` }));
    return ownership({ from: 'v1', to: 'v2' }, from, after, () => undefined).map((f) => f.message.replace(/^.*none does: /, ''));
  };

  it('the Applications\' own Prune=false keeps it, their automated sync without prune prunes it at a sync by hand only', () => {
    const noPrune = (name: string) => ({ application: name, app: application(name, { automated: { prune: true }, syncOptions: ['Prune=false'] }) });
    const kept = (name: string) => `it stays in the cluster: Argo CD never prunes an object whose sync options (its Application ${name}'s) say Prune=false; `
      + 'its Application shows it OutOfSync (requires pruning) while it stays; an admin deletes it if wanted: kubectl delete -n team configmap plain';
    expect(leaves([noPrune('a'), noPrune('b')])).toEqual([`as a last applied it, ${kept('a')}; as b last applied it, ${kept('b')}`]);
    const byHand = (name: string) => ({ application: name, app: application(name, { automated: { prune: false } }) });
    expect(leaves([byHand('a'), noPrune('b')])).toEqual([
      'as a last applied it, Argo CD prunes it only at a sync with prune (the automated sync of a does not prune (automated.prune: false)); until then a shows it '
        + `OutOfSync (requires pruning): argocd app sync a --prune; as b last applied it, ${kept('b')}`,
    ]);
  });

  it('an Application that leaves too takes it in its cascade; one that prunes on its own prunes it', () => {
    const pruning = (name: string) => ({ application: name, app: application(name, { automated: { prune: true } }) });
    expect(leaves([pruning('a'), pruning('b')])).toEqual(['Argo CD prunes it']);
    expect(leaves([pruning('a'), pruning('b')], [pruning('b')])).toEqual([
      'as a last applied it, deleted with its Application a, which leaves too: its resources finalizer deletes what it applied; as b last applied it, Argo CD prunes it',
    ]);
  });
});

describe('the reader of sync options (model/names.ts), as argo-cd v3.5.1 reads them', () => {
  const annotated = (value: string) => ({ metadata: { annotations: { [LABELS.syncOptions]: value } } });
  const app = (syncOptions: string[]) => ({ metadata: {}, spec: { syncPolicy: { syncOptions } } });

  it('the annotation: split on commas, trimmed, empty entries and repeats dropped (GetAnnotationCSVs)', () => {
    expect(ownSyncOptions(annotated(' Prune=false, ,ServerSideApply=true,Prune=false ,'))).toEqual(['Prune=false', 'ServerSideApply=true']);
    expect(ownSyncOptions({ metadata: {} })).toEqual([]);
  });

  it('two entries of one key: the first counts, in the annotation and in an Application\'s list (GetAnnotationOptionValue, SyncOptions.GetOptionValue)', () => {
    expect(syncOptionValue(ownSyncOptions(annotated('Prune=confirm,Prune=false')), 'Prune')).toBe('confirm');
    expect(syncOptionValue(['Delete=false', 'Delete=true'], 'Delete')).toBe('false');
    expect(syncOptionValue(['PruneLast=true'], 'Prune')).toBeUndefined();
    expect(syncOptionValue(['Prune='], 'Prune')).toBe('');
  });

  it('an object without its own Prune= or Delete= takes its Application\'s; its own, even repeated, wins', () => {
    const application = app(['Prune=false', 'Prune=true', 'Delete=confirm']);
    expect(decidingSyncOption(annotated('ServerSideApply=true'), 'Prune', application)).toBe('false');
    expect(decidingSyncOption(annotated('ServerSideApply=true'), 'Delete', application)).toBe('confirm');
    expect(decidingSyncOption(annotated('Prune=true,Prune=false'), 'Prune', application)).toBe('true');
    expect(decidingSyncOption(annotated(''), 'Delete')).toBeUndefined();
  });
});

// Each object judged in the change that removes it: the Application that syncs it, as the render before the change
// wrote it, and whether that Application leaves too (render/deletions.ts fateContexts). Before and after are real renders
// of the reference description (or the fixture tree), each case one change.
describe('clusterFate in context: what leaves dist/ with what else', () => {
  const tree = (c: RenderedCluster): TreeObject[] => treeObjects(c.name, c.folders);
  const byObject = (ds: readonly Deletion[]) => new Map(ds.map((d) => [d.object, d]));
  const fateOf = (ds: readonly Deletion[], subject: string) => {
    const d = byObject(ds).get(subject);
    if (!d) throw new Error(`${subject} is not among ${ds.map((x) => x.object).join(', ')}`);
    return d.stays ?? d.note;
  };
  const inFolder = (folder: string) => (o: TreeObject) => o.file.split('/')[1] === folder;
  const withOptions = (o: TreeObject, value: string): TreeObject => {
    const annotations = { ...o.manifest.metadata.annotations, [LABELS.syncOptions]: value };
    return { ...o, manifest: { ...o.manifest, metadata: { ...o.manifest.metadata, annotations } } };
  };
  const noDashboard: Edit = (d) => { d.monitoring = { ...d.monitoring, dashboard: { enabled: false } }; };

  it('an Application that leaves with the resources finalizer takes its objects, Prune=false or not; Delete=false spares one', () => {
    const before = tree(renderOf());
    const after = tree(renderOf(noDashboard));
    const dashboard = before.filter(inFolder('dashboard'));
    expect(dashboard.length).toBeGreaterThan(2);
    const [pruneFalse, deleteFalse] = dashboard.filter((o) => !o.manifest.kind.startsWith('CustomResource') && o.manifest.kind !== 'Namespace');
    const edited = before.map((o) => (o === pruneFalse ? withOptions(o, 'Prune=false') : o === deleteFalse ? withOptions(o, 'Prune=false,Delete=false') : o));
    const ds = removedObjects(edited, after);
    expect(new Set(ds.map((d) => d.file.split('/')[1]))).toEqual(new Set(['dashboard', 'gitops']));
    const name = (o: TreeObject) => ds.find((d) => d.file === o.file && d.object.includes(o.manifest.metadata.name))!.object;
    expect(fateOf(ds, name(pruneFalse))).toBe('deleted with its Application instant-cluster-dashboard, which leaves too: its resources finalizer deletes what it applied '
      + '(Prune=false does not spare it: whether a cascading delete spares an object is read from Delete= only)');
    expect(deletedInCluster(ds).map((d) => d.object)).toContain(name(pruneFalse));
    expect(fateOf(ds, name(deleteFalse))).toMatch(/^stays in the cluster, synced by nothing: its Application instant-cluster-dashboard leaves too, and its cascading delete spares an object that says Delete=false; an admin deletes it if wanted: kubectl delete /);
    // the Application itself: the root prunes it (automated prune), its finalizer makes that a cascading delete
    expect(byObject(ds).get('Application argocd/instant-cluster-dashboard')).toEqual({
      cluster: 'instant-cluster', object: 'Application argocd/instant-cluster-dashboard', file: 'instant-cluster/gitops/application.argocd.instant-cluster-dashboard.yaml',
    });
    for (const d of ds.filter((x) => x.file.includes('/dashboard/') && x.object !== name(deleteFalse))) {
      expect(d.stays ?? d.note, d.object).toMatch(/^deleted with its Application instant-cluster-dashboard, which leaves too|^stays in the cluster: Argo CD never prunes a CRD/);
    }
  });

  it('an Application without the finalizer that leaves with its folder: what it applied stays, synced by nothing (the argocd folder)', () => {
    const before = tree(renderOf());
    const argocdApp = (o: TreeObject) => o.manifest.kind === 'Application' && o.manifest.metadata.name === 'instant-cluster-argocd';
    const after = before.filter((o) => !inFolder('argocd')(o) && !argocdApp(o));
    const ds = removedObjects(before, after);
    expect(fateOf(ds, 'Application argocd/instant-cluster-argocd')).toMatch(/^Argo CD deletes this Application only, not what it applied/);
    const folder = ds.filter((d) => d.file.startsWith('instant-cluster/argocd/'));
    expect(folder.length).toBeGreaterThan(0);
    for (const d of folder) {
      expect(d.stays, d.object).toMatch(/^stays in the cluster(, synced by nothing: its Application instant-cluster-argocd leaves too and carries no resources finalizer|: Argo CD never prunes a CRD)/);
    }
    expect(needAllowDelete(ds).map((d) => d.object)).toEqual(['Application argocd/instant-cluster-argocd']);
  });

  it('the samples: a template created by hand stays; what the samples\' Application syncs by hand is pruned only by a sync with prune', () => {
    const before = tree(renderOf());
    const samples = before.filter(inFolder('samples'));
    const templates = samples.filter((o) => o.manifest.metadata.annotations?.[LABELS.template] === 'true');
    const synced = samples.filter((o) => !templates.includes(o));
    expect([templates.length > 0, synced.length > 0]).toEqual([true, true]);
    const ds = removedObjects(before, before.filter((o) => !samples.includes(o)));
    for (const o of templates) {
      expect(fateOf(ds, ds.find((d) => d.file === o.file)!.object)).toMatch(/^stays in the cluster: a template created by hand \(kubectl create\), outside its folder's kustomization, so no Application tracks it/);
    }
    for (const o of synced) {
      expect(ds.find((d) => d.file === o.file)!.note).toMatch(/^Argo CD prunes it only at a sync with prune \(instant-cluster-samples syncs by hand only\); .*: argocd app sync instant-cluster-samples --prune$/);
    }
    // the samples' Application leaving too (applied by hand): nothing deletes it, so nothing of it goes
    const withApp = removedObjects(before, before.filter((o) => !samples.includes(o) && o.manifest.metadata.name !== 'instant-cluster-samples'));
    expect(fateOf(withApp, 'Application argocd/instant-cluster-samples')).toMatch(/^stays in the cluster: applied by hand/);
    for (const o of synced) {
      expect(withApp.find((d) => d.file === o.file)!.stays).toMatch(/^stays in the cluster: its Application instant-cluster-samples leaves dist\/ too, but it was applied by hand and nothing deletes it: .*ComparisonError/);
    }
  });

  it('gitops.automated.prune false: the automated sync prunes nothing; a sync by hand with prune does', () => {
    const noPrune: Edit = (d) => { d.gitops = { ...d.gitops, automated: { prune: false } }; };
    const before = tree(renderOf(noPrune));
    const ds = removedObjects(before, tree(renderOf((d) => { noPrune(d); d.tenants = d.tenants.filter((t: { name: string }) => t.name !== 'inference'); })));
    expect(fateOf(ds, 'LocalQueue inference/inference')).toBe('Argo CD prunes it only at a sync with prune (the automated sync of instant-cluster-tenants does not prune '
      + '(automated.prune: false)); until then instant-cluster-tenants shows it OutOfSync (requires pruning): argocd app sync instant-cluster-tenants --prune');
    expect(fateOf(ds, 'Namespace inference')).toMatch(/--prune; then: Argo CD deletes it only once someone confirms \(Prune=confirm\).*argocd app confirm-deletion instant-cluster-tenants$/);
    // a folder dropped: its Application goes only once the root is synced with prune
    const dropped = removedObjects(before, tree(renderOf((d) => { noPrune(d); noDashboard(d); })));
    expect(fateOf(dropped, 'Application argocd/instant-cluster-dashboard')).toMatch(/^Argo CD prunes it only at a sync with prune \(the automated sync of instant-cluster does not prune/);
    const inDashboard = dropped.find((d) => d.file.includes('/dashboard/') && d.note !== undefined)!;
    expect(inDashboard.note).toMatch(/^Argo CD prunes its Application instant-cluster-dashboard only at a sync with prune \(the automated sync of instant-cluster does not prune .*argocd app sync instant-cluster --prune; then: deleted with its Application instant-cluster-dashboard/);
  });

  describe('a cluster dropped (its whole folder leaves dist/)', () => {
    const root = renderedFixtures();
    const before = readTreeObjects(root, ['instant-cluster']);

    it('its root applied by hand: the root reads a path that is gone, nothing is pruned; every object stays, nothing is asked', () => {
      const ds = removedObjects(before, []);
      expect(ds).toHaveLength(before.length);
      expect(needAllowDelete(ds)).toEqual([]);
      expect(fateOf(ds, 'LocalQueue inference/inference')).toBe('stays in the cluster: its cluster\'s folder leaves dist/, so the Application that syncs its root '
        + '(instant-cluster: the root applied by hand, or the hub\'s) reads a path that no longer exists: it syncs nothing, showing the status of its last comparison '
        + 'for the controller\'s repo-error grace period (180 s by default), then, or at once on a refresh (argocd app get instant-cluster --refresh), Argo CD shows '
        + 'it with a ComparisonError ("app path does not exist") and sync status Unknown, so nothing is pruned, and the child Applications keep syncing the last commit the root gave them; '
        + 'to take the cluster down, in this order: delete its Applications without waiting (kubectl delete application -n argocd -l app.kubernetes.io/part-of=instant-cluster '
        + '--wait=false), as a cascade waits for a confirmation that counts only once given after the delete; confirm the deletion of its Namespaces and volume claims, '
        + 'which say Delete=confirm (kubectl annotate application -n argocd instant-cluster-tenants --overwrite argocd.argoproj.io/deletion-approved=$(date -u +%Y-%m-%dT%H:%M:%SZ)); '
        + 'wait until every cascade has deleted what it applied, wave by wave, a ClusterQueue once no workload reserves quota in it '
        + '(kubectl wait --for=delete application -n argocd -l app.kubernetes.io/part-of=instant-cluster --timeout=10m); then delete its AppProject '
        + '(kubectl delete appproject -n argocd instant-cluster); what says Delete=false stays (the adopted objects, the ResourceFlavors and Topology an adopted '
        + 'ClusterQueue names, Argo CD\'s own Namespace), as do the CRDs and what an Application without the resources finalizer applied (Argo CD, the managed installs)');
      // the flavor the adopted default ClusterQueue names is spared by the kueue Application's cascade, with it
      const flavor = before.find((o) => o.manifest.kind === 'ResourceFlavor')!;
      expect(syncOptionValue(ownSyncOptions(flavor.manifest), 'Delete')).toBe('false');
      expect(fateOf(ds, 'Application argocd/instant-cluster')).toMatch(/^stays in the cluster: applied by hand/);
    });

    it('with the fleet hub: once dist/fleet/ is applied again, its ApplicationSet deletes the hub\'s Application of the cluster, whose finalizer takes the cluster\'s Applications and what they apply', () => {
      const hubs = hubApplications(readTreeObjects(root, [FLEET_FOLDER]));
      expect(hubs.get('instant-cluster')?.metadata).toMatchObject({ name: 'instant-cluster', finalizers: [RESOURCES_FINALIZER] });
      const ds = removedObjects(before, [], hubs);
      const hub = /^once dist\/fleet\/ is applied on the hub again \(kubectl apply -k dist\/fleet\), its ApplicationSet deletes the hub's Application instant-cluster \(resources finalizer\), and this is then /;
      const byHand = /, provided the cluster is still registered on the hub \(the ApplicationSet removes the finalizer of an Application whose destination is no longer a registered cluster, and then nothing is deleted\); until then nothing is deleted: its cluster's folder leaves dist\//;
      expect(fateOf(ds, 'LocalQueue inference/inference')).toMatch(new RegExp(`${hub.source}deleted with its Application instant-cluster-tenants, which leaves too: its resources finalizer deletes what it applied${byHand.source}`));
      expect(fateOf(ds, 'Application argocd/instant-cluster-tenants')).toMatch(new RegExp(`${hub.source}deleted with its Application instant-cluster, which leaves too`));
      expect(fateOf(ds, 'Namespace inference')).toMatch(/and this is then deleted with its Application instant-cluster-tenants, which leaves too \(resources finalizer\), once someone confirms \(Delete=confirm\)/);
      const argocd = ds.filter((d) => d.file.startsWith('instant-cluster/argocd/'));
      expect(argocd.length).toBeGreaterThan(0);
      for (const d of argocd) expect(d.stays, d.object).toMatch(/^stays in the cluster(, synced by nothing: its Application instant-cluster-argocd leaves too and carries no resources finalizer|: Argo CD never prunes a CRD)/);
      // without the finalizer on the hub's Application, nothing goes
      const alone = new Map([...hubs].map(([k, m]) => [k, { ...m, metadata: { ...m.metadata, finalizers: [] } } as Manifest]));
      expect(needAllowDelete(removedObjects(before, [], alone))).toEqual([]);
    });
  });
});
