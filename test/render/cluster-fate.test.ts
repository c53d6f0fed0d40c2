import { describe, expect, it } from 'vitest';
import { DATA_SYNC_OPTIONS } from '../../src/model/data-safety';
import { ADOPTED_SYNC_OPTIONS, LABELS, RESOURCES_FINALIZER } from '../../src/model/names';
import { clusterFate, deletedInCluster, Deletion, keptInCluster, needAllowDelete, otherEntries, removal } from '../../src/render/deletions';
import { Manifest } from '../../src/render/manifest';
import { ownership } from '../../src/upgrade/ownership';
import { crdOf } from '../helpers';

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
