import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { healthCheckData } from '../../src/components/argocd/health-checks';
import { checkGitops } from '../../src/components/gitops/checks';
import { fleetFiles, renderFleet } from '../../src/components/gitops/fleet';
import { loadDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { clusterFiles } from '../../src/synth/layout';
import { descriptionFiles, InputError, renderFleetOf, synth } from '../../src/synth/pipeline';
import { renderCluster } from '../../src/synth/render';
import { findObject, FIXTURE_CLUSTERS, HAS_SCHEMAS, modelOf, REFERENCE_FILE, renderOf, validator } from '../helpers';

const fleetClusters = () => descriptionFiles(FIXTURE_CLUSTERS).map((f) => renderCluster(buildModel(loadDescription(f))));

describe('fleet', () => {
  const clusters = fleetClusters();
  const fleet = renderFleet(clusters);

  it('renders both fixture clusters, each passing the GitOps checks', () => {
    expect(clusters.map((c) => c.name)).toEqual(['instant-cluster', 'training-cluster']);
    for (const c of clusters) expect(checkGitops(c), c.name).toEqual([]);
  });

  it('renders the fleet folder', () => {
    expect(fleet.objects).toMatchSnapshot();
    expect(fleetFiles(fleet).map(([p]) => p)).toEqual([
      'fleet/configmap.argocd.argocd-cm.yaml', 'fleet/appproject.argocd.fleet.yaml', 'fleet/applicationset.argocd.fleet.yaml', 'fleet/kustomization.yaml',
    ]);
  });

  it('generates each cluster\'s root: its gitops folder, with the root\'s own source (the kustomization, the commit stamped)', () => {
    const set = findObject(fleet.objects, 'ApplicationSet', 'fleet', 'argocd') as any;
    const elements = set.spec.generators[0].list.elements;
    expect(elements.map((e: any) => [e.cluster, e.path])).toEqual([
      ['instant-cluster', 'dist/instant-cluster/gitops'],
      ['training-cluster', 'dist/training-cluster/gitops'],
    ]);
    const fill = (v: unknown, e: Record<string, unknown>): unknown => (typeof v === 'string' ? v.replace(/\{\{\.(\w+)\}\}/g, (_, k: string) => String(e[k]))
      : Array.isArray(v) ? v.map((x) => fill(x, e)) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x, e)])) : v);
    for (const c of clusters) {
      const e = elements.find((x: any) => x.cluster === c.name);
      const root = c.folders.find((f) => f.folder === 'gitops')!.objects.find((m) => m.kind === 'Application' && m.metadata.name === c.name) as any;
      expect(fill(set.spec.template.spec.source, e), c.name).toEqual(root.spec.source);
    }
    expect(set.spec.template.spec.destination).toEqual({ name: '{{.cluster}}', namespace: '{{.namespace}}' });
    expect(set.spec.syncPolicy).toEqual({ preserveResourcesOnDeletion: true });
  });

  it('syncs on every cluster exactly what its root syncs: the gitops kustomization, which lists neither the root nor what is applied by hand', () => {
    // The training cluster has Applications applied by hand (samples, dynamo), which the root leaves out.
    expect(clusters.find((c) => c.name === 'training-cluster')!.folders.find((f) => f.folder === 'gitops')!.objects
      .filter((m) => m.metadata.annotations?.['gpu-cluster.dev/apply-by-hand'] === 'true').map((m) => m.metadata.name).sort())
      .toEqual(['training-cluster', 'training-cluster-dynamo', 'training-cluster-samples']);
    for (const c of clusters) {
      const gitopsDir = `${c.name}/gitops/`;
      const files = new Map(clusterFiles(c).filter(([p]) => p.startsWith(gitopsDir)).map(([p, content]) => [p.slice(gitopsDir.length), content]));
      const kustomized: string[] = parse(files.get('kustomization.yaml')!).resources;
      expect(kustomized, c.name).not.toContain(`application.argocd.${c.name}.yaml`);
      expect(kustomized, c.name).toContain(`appproject.argocd.${c.name}.yaml`);
    }
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
      synth({ clustersDir: FIXTURE_CLUSTERS, out, schemas: [DEFAULT_SCHEMAS] }, validator());
      expect(readdirSync(out).sort()).toEqual(['fleet', 'instant-cluster', 'training-cluster']);
      expect(readdirSync(path.join(out, 'fleet')).sort()).toEqual([
        'applicationset.argocd.fleet.yaml', 'appproject.argocd.fleet.yaml', 'configmap.argocd.argocd-cm.yaml', 'kustomization.yaml',
      ]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('gives the hub the same health checks as a cluster\'s own Argo CD: its argocd-cm entries, every check of the toolkit', () => {
    const fleet = renderFleet([renderOf()]);
    const cm = fleet.objects.find((m) => m.kind === 'ConfigMap') as Manifest & { data: Record<string, string> };
    expect(cm.metadata).toMatchObject({ name: 'argocd-cm', namespace: 'argocd', labels: { 'app.kubernetes.io/part-of': 'argocd' } });
    expect(cm.data).toEqual(healthCheckData());
    expect(Object.keys(cm.data)).toContain('resource.customizations.health.argoproj.io_Application');
  });

  it('writes no fleet folder for single clusters (--config)', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'gitops-fleet-'));
    try {
      synth({ configs: [REFERENCE_FILE], out, schemas: [DEFAULT_SCHEMAS] }, validator());
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
