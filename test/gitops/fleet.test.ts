import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkGitops } from '../../src/components/gitops/checks';
import { fleetFiles, renderFleet } from '../../src/components/gitops/fleet';
import { loadDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { descriptionFiles, InputError, renderFleetOf, synth } from '../../src/pipeline';
import { renderCluster } from '../../src/render/render';
import { findObject, HAS_SCHEMAS, modelOf, ROOT, validator } from '../helpers';

const CLUSTERS_DIR = path.join(ROOT, 'src', 'clusters');
const fleetClusters = () => descriptionFiles(CLUSTERS_DIR).map((f) => renderCluster(buildModel(loadDescription(f))));

describe('fleet', () => {
  const clusters = fleetClusters();
  const fleet = renderFleet(clusters);

  it('renders both clusters of src/clusters, each passing the GitOps checks', () => {
    expect(clusters.map((c) => c.name)).toEqual(['instant-cluster', 'training-cluster']);
    for (const c of clusters) expect(checkGitops(c), c.name).toEqual([]);
  });

  it('renders the fleet folder', () => {
    expect(fleet.objects).toMatchSnapshot();
    expect(fleetFiles(fleet).map(([p]) => p)).toEqual(['fleet/appproject.argocd.fleet.yaml', 'fleet/applicationset.argocd.fleet.yaml', 'fleet/kustomization.yaml']);
  });

  it('points the ApplicationSet at every cluster\'s gitops folder, leaving out the root it replaces', () => {
    const set = findObject(fleet.objects, 'ApplicationSet', 'fleet', 'argocd') as any;
    const elements = set.spec.generators[0].list.elements;
    expect(elements.map((e: any) => [e.cluster, e.path])).toEqual([
      ['instant-cluster', 'dist/instant-cluster/gitops'],
      ['training-cluster', 'dist/training-cluster/gitops'],
    ]);
    for (const c of clusters) {
      const e = elements.find((x: any) => x.cluster === c.name);
      const rootFile = `application.argocd.${c.name}.yaml`;
      expect(e.exclude).toBe(`{kustomization.yaml,${rootFile}}`);
      expect(c.folders.find((f) => f.folder === 'gitops')!.objects.some((m) => m.kind === 'Application' && m.metadata.name === c.name)).toBe(true);
    }
    expect(set.spec.template.spec.destination).toEqual({ name: '{{.cluster}}', namespace: '{{.namespace}}' });
    expect(set.spec.syncPolicy).toEqual({ preserveResourcesOnDeletion: true });
  });

  it('confines the fleet AppProject to each cluster\'s Argo CD namespace and Argo CD kinds', () => {
    const project = findObject(fleet.objects, 'AppProject', 'fleet', 'argocd') as any;
    expect(project.spec.destinations).toEqual([{ name: 'instant-cluster', namespace: 'argocd' }, { name: 'training-cluster', namespace: 'argocd' }]);
    expect(project.spec.clusterResourceWhitelist).toEqual([]);
    expect(project.spec.namespaceResourceWhitelist).toEqual([{ group: 'argoproj.io', kind: 'AppProject' }, { group: 'argoproj.io', kind: 'Application' }]);
  });

  it('refuses a cluster named "fleet"', () => {
    const named = renderCluster(modelOf((d) => { d.name = 'fleet'; d.gitops.path = 'dist/fleet'; }));
    expect(() => renderFleet([named])).toThrow('name: a cluster may not be named "fleet"');
  });

  it('renders 100 clusters quickly', () => {
    const model = clusters[0].model;
    const many = Array.from({ length: 100 }, (_, i) => ({ ...clusters[0], name: `gpu-${i}`, model: { ...model, name: `gpu-${i}` } }));
    const t0 = performance.now();
    const big = renderFleet(many);
    expect(performance.now() - t0).toBeLessThan(500);
    expect((findObject(big.objects, 'ApplicationSet', 'fleet') as any).spec.generators[0].list.elements).toHaveLength(100);
  });

  it.skipIf(!HAS_SCHEMAS)('is strictly valid against the Argo CD v3.5 CRDs', () => {
    const errors = validator().validateAll(fleet.objects.map((manifest) => ({ manifest, source: 'fleet' }))).filter((i) => i.severity === 'error');
    expect(errors).toEqual([]);
  });
});

describe.skipIf(!HAS_SCHEMAS)('fleet: synth', () => {
  it('writes dist/fleet/ beside the clusters when it renders every description', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'gitops-fleet-'));
    try {
      synth({ clustersDir: CLUSTERS_DIR, out, schemas: [DEFAULT_SCHEMAS] }, validator());
      expect(readdirSync(out).sort()).toEqual(['fleet', 'instant-cluster', 'training-cluster']);
      expect(readdirSync(path.join(out, 'fleet')).sort()).toEqual(['applicationset.argocd.fleet.yaml', 'appproject.argocd.fleet.yaml', 'kustomization.yaml']);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('writes no fleet folder for single clusters (--config)', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'gitops-fleet-'));
    try {
      synth({ clustersDir: CLUSTERS_DIR, configs: [path.join(CLUSTERS_DIR, 'instant-cluster.yaml')], out, schemas: [DEFAULT_SCHEMAS] }, validator());
      expect(readdirSync(out)).toEqual(['instant-cluster']);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('reports a cluster named "fleet" as bad input', () => {
    const named = renderCluster(modelOf((d) => { d.name = 'fleet'; d.gitops.path = 'dist/fleet'; }));
    expect(() => renderFleetOf([named])).toThrow(InputError);
  });
});
