import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkCluster } from '../../src/check';
import { adoptionAnnotations, refersTo } from '../../src/model/adoption';
import { mergeSyncOptions, missingDataSyncOptions } from '../../src/model/data-safety';
import { loadDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { clusterFiles } from '../../src/synth/layout';
import { renderCluster } from '../../src/synth/render';
import { renderOf, TRAINING_FILE } from '../helpers';

const ADOPTED = { 'gpu-cluster.dev/adopted': 'true', 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false' };

describe('adopted objects (what the Instant Cluster already runs)', () => {
  it('the reference cluster adopts the pre-installed add-ons\' objects, each rendered once and marked', () => {
    const c = renderOf((d) => { d.monitoring = { dashboard: { service: 'adopt' } }; });
    const all = c.folders.flatMap((f) => f.objects);
    expect(c.model.adopted.map((a) => `${a.kind} ${a.namespace ? `${a.namespace}/` : ''}${a.name}`)).toEqual([
      'ClusterPolicy cluster-policy', 'NicClusterPolicy nic-cluster-policy', 'ConfigMap local-path-storage/local-path-config',
      'StorageClass local-path', 'StorageClass shared-path', 'StorageClass local-disk',
      'LocalQueue default/default', 'ClusterQueue default', 'Service kubernetes-dashboard/kubernetes-dashboard-kong-proxy',
    ]);
    for (const a of c.model.adopted) {
      const matches = all.filter((m) => refersTo(a, m));
      expect(matches, `${a.kind} ${a.name}`).toHaveLength(1);
      expect(matches[0].metadata.annotations).toMatchObject(ADOPTED);
    }
    // Nothing else is marked.
    expect(all.filter((m) => m.metadata.annotations?.['gpu-cluster.dev/adopted'])).toHaveLength(c.model.adopted.length);
  });

  it('managed add-ons create their objects here: the training cluster adopts only what stays pre-installed', () => {
    const c = renderCluster(buildModel(loadDescription(TRAINING_FILE)));
    expect(c.model.adopted).toEqual([]);
    expect(c.folders.flatMap((f) => f.objects).some((m) => m.metadata.annotations?.['gpu-cluster.dev/adopted'])).toBe(false);
  });

  it('merges the sync options with the object\'s own, replacing any Prune= or Delete=', () => {
    expect(adoptionAnnotations(undefined)).toEqual(ADOPTED);
    expect(adoptionAnnotations('ServerSideApply=true, Prune=true,Delete=confirm')['argocd.argoproj.io/sync-options'])
      .toBe('ServerSideApply=true,Prune=false,Delete=false');
  });

  it('adopted-no-cascade-delete catches an adopted object that loses its sync options (the child Applications cascade)', () => {
    const c = renderOf();
    const storage = c.folders.find((f) => f.folder === 'storage')!;
    const stripped = storage.objects.map((m) => (m.metadata.name === 'local-path' && m.kind === 'StorageClass'
      ? { ...m, metadata: { ...m.metadata, annotations: { ...m.metadata.annotations, 'argocd.argoproj.io/sync-options': 'Prune=false' } } }
      : m));
    const view = { ...c, folders: c.folders.map((f) => (f === storage ? { ...f, objects: stripped } : f)) };
    expect(checkCluster(c).filter((f) => f.rule === 'adopted-no-cascade-delete')).toEqual([]);
    expect(checkCluster(view).filter((f) => f.rule === 'adopted-no-cascade-delete').map((f) => f.message)).toEqual([
      expect.stringMatching(/^StorageClass local-path: .*lacks Delete=false \(deleting Application instant-cluster-storage, which carries the resources finalizer/),
    ]);
  });

  it('adopted-no-cascade-delete reads the sync options as Argo CD does: the first Delete= entry counts, not the last', () => {
    const c = renderOf();
    const storage = c.folders.find((f) => f.folder === 'storage')!;
    const withOptions = (options: string) => {
      const objects = storage.objects.map((m) => (m.metadata.name === 'local-path' && m.kind === 'StorageClass'
        ? { ...m, metadata: { ...m.metadata, annotations: { ...m.metadata.annotations, 'argocd.argoproj.io/sync-options': options } } }
        : m));
      const view = { ...c, folders: c.folders.map((f) => (f === storage ? { ...f, objects } : f)) };
      return checkCluster(view).filter((f) => f.rule === 'adopted-no-cascade-delete').map((f) => f.message);
    };
    // gitops-engine's GetAnnotationOptionValue returns Delete=true here: the cascade deletes it
    expect(withOptions('Prune=false, Delete=true,Delete=false')).toEqual([
      expect.stringMatching(/^StorageClass local-path: .*lacks Delete=false \(deleting Application instant-cluster-storage/),
    ]);
    expect(withOptions('Prune=true,Prune=false,Delete=false')).toEqual([expect.stringMatching(/^StorageClass local-path: .*lacks Prune=false \(a rename/)]);
    expect(withOptions('Delete=false,Prune=false,Delete=true,Prune=true')).toEqual([]);
  });
});

describe('what a kept ClusterQueue uses', () => {
  it('kept-queue-flavors: the reference cluster\'s adopted default ClusterQueue keeps its flavors; without their Delete=false the rule names each (the take-down that never ended on the twin)', () => {
    const c = renderOf();
    const kueue = c.folders.find((f) => f.folder === 'kueue')!;
    const flavors = kueue.objects.filter((m) => m.kind === 'ResourceFlavor' && /Delete=false/.test(m.metadata.annotations?.['argocd.argoproj.io/sync-options'] ?? ''));
    expect(flavors.length).toBeGreaterThan(0);
    expect(checkCluster(c).filter((f) => f.rule === 'kept-queue-flavors')).toEqual([]);
    const objects = kueue.objects.map((m) => (flavors.includes(m) ? { ...m, metadata: { ...m.metadata, annotations: {} } } : m));
    const view = { ...c, folders: c.folders.map((f) => (f === kueue ? { ...f, objects } : f)) };
    expect(checkCluster(view).filter((f) => f.rule === 'kept-queue-flavors').map((f) => f.message)).toEqual(flavors.map((m) => expect.stringMatching(
      new RegExp(`^ResourceFlavor ${m.metadata.name}: is named by ClusterQueue default, .*deleting Application instant-cluster-kueue deletes this one`),
    )));
  });
});

describe('objects that hold data (Namespaces, claims)', () => {
  it('every Namespace the reference and training clusters render makes Argo CD ask before pruning or deleting it (Argo CD\'s own: never)', () => {
    const training = renderCluster(buildModel(loadDescription(TRAINING_FILE)));
    for (const c of [renderOf(), training]) {
      const namespaces = c.folders.flatMap((f) => f.objects).filter((m) => m.kind === 'Namespace');
      expect(namespaces.length, c.name).toBeGreaterThan(1);
      for (const ns of namespaces) {
        const expected = ns.metadata.name === c.model.description.gitops.namespace ? 'Prune=false,Delete=false' : 'Prune=confirm,Delete=confirm';
        expect(ns.metadata.annotations?.['argocd.argoproj.io/sync-options'], `${c.name} ${ns.metadata.name}`).toBe(expected);
      }
      expect(checkCluster(c).filter((f) => f.rule === 'data-prune-confirm')).toEqual([]);
    }
  });

  it('merges with an object\'s own options, never weakening Prune=false or Delete=false', () => {
    expect(mergeSyncOptions(undefined, ['Prune=confirm', 'Delete=confirm'])).toBe('Prune=confirm,Delete=confirm');
    expect(mergeSyncOptions('ServerSideApply=true, Prune=true', ['Prune=confirm', 'Delete=confirm'])).toBe('ServerSideApply=true,Prune=confirm,Delete=confirm');
    expect(mergeSyncOptions('Prune=false,Delete=false', ['Prune=confirm', 'Delete=confirm'])).toBe('Prune=false,Delete=false');
    expect(mergeSyncOptions('Delete=confirm', ['Prune=false', 'Delete=false'])).toBe('Delete=false,Prune=false');
    expect(missingDataSyncOptions('Prune=false,Delete=confirm')).toEqual([]);
    expect(missingDataSyncOptions('Prune=true,Delete=true')).toEqual(['Prune=confirm', 'Delete=confirm']);
    // Argo CD reads the first entry of a key (gitops-engine GetAnnotationOptionValue): a later confirm (or false) holds nothing.
    expect(missingDataSyncOptions('Prune=true,Prune=confirm')).toEqual(['Prune=confirm', 'Delete=confirm']);
    expect(missingDataSyncOptions('Prune=confirm,Prune=true, Delete=false,Delete=true')).toEqual([]);
  });
});

describe('root Application health', () => {
  it('leaves the never-synced samples Application out of the root\'s kustomization (rendered, applied by hand)', () => {
    const c = renderOf();
    const files = new Map(clusterFiles(c));
    const kustomization = files.get('instant-cluster/gitops/kustomization.yaml')!;
    expect(files.has('instant-cluster/gitops/application.argocd.instant-cluster-samples.yaml')).toBe(true);
    expect(kustomization).not.toContain('instant-cluster-samples');
    expect(kustomization).toContain('application.argocd.instant-cluster-storage.yaml');
    const samplesApp = c.folders.find((f) => f.folder === 'gitops')!.objects.find((m) => m.metadata.name === 'instant-cluster-samples')!;
    expect(samplesApp.metadata.annotations?.['gpu-cluster.dev/apply-by-hand']).toBe('true');
    expect((samplesApp.spec as any).syncPolicy?.automated).toBeUndefined();
  });
});
