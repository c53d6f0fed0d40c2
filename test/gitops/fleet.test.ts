import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkCluster } from '../../src/check';
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

/**
 * The ApplicationSet's Go templates as text/template runs them (goTemplate, missingkey=error), for the actions the
 * fleet uses only: `{{ .field }}`, `{{- if .field }}`, `{{- else }}`, `{{- end }}` (`-` trims the whitespace before).
 * Anything else is refused rather than guessed at.
 */
function goTemplate(text: string, data: Record<string, unknown>): string {
  const field = (name: string) => {
    if (!(name in data)) throw new Error(`map has no entry for key "${name}"`);
    return data[name];
  };
  let out = '';
  const stack: { on: boolean; taken: boolean }[] = [];
  const live = () => stack.every((f) => f.on);
  let last = 0;
  for (const m of text.matchAll(/\{\{(-?)\s*(.*?)\s*(-?)\}\}/g)) {
    let chunk = text.slice(last, m.index);
    if (m[1] === '-') chunk = chunk.replace(/\s+$/, '');
    if (live()) out += chunk;
    last = m.index! + m[0].length;
    if (m[3] === '-') throw new Error('right trim is not modelled');
    const action = m[2];
    let x: RegExpExecArray | null;
    if ((x = /^if \.(\w+)$/.exec(action))) {
      const on = Boolean(field(x[1]));
      stack.push({ on, taken: on });
    } else if (action === 'else') {
      const f = stack[stack.length - 1];
      f.on = !f.taken;
    } else if (action === 'end') {
      stack.pop();
    } else if ((x = /^\.(\w+)$/.exec(action))) {
      if (live()) out += String(field(x[1]));
    } else {
      throw new Error(`action {{${action}}} is not modelled`);
    }
  }
  return out + text.slice(last);
}

/** The Application the ApplicationSet generates for an element: the template filled in, the templatePatch merged into it. */
function generated(set: any, element: Record<string, unknown>): any {
  const fill = (v: unknown): unknown => (typeof v === 'string' ? goTemplate(v, element)
    : Array.isArray(v) ? v.map(fill) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)])) : v);
  const merge = (a: any, b: any): any => (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)
    ? Object.fromEntries([...new Set([...Object.keys(a), ...Object.keys(b)])].map((k) => [k, k in b ? merge(a[k], b[k]) : a[k]])) : b);
  return merge(fill(set.spec.template), parse(goTemplate(set.spec.templatePatch, element)));
}

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

  it('generates each cluster\'s root: its gitops folder, with the root\'s own source (the kustomization, the commit stamped), to the cluster\'s Argo CD', () => {
    const set = findObject(fleet.objects, 'ApplicationSet', 'fleet', 'argocd') as any;
    const elements = set.spec.generators[0].list.elements;
    expect(elements.map((e: any) => [e.cluster, e.path, e.hubManaged])).toEqual([
      ['instant-cluster', 'dist/instant-cluster/gitops', false],
      ['training-cluster', 'dist/training-cluster/gitops', false],
    ]);
    for (const c of clusters) {
      const app = generated(set, elements.find((x: any) => x.cluster === c.name));
      const root = c.folders.find((f) => f.folder === 'gitops')!.objects.find((m) => m.kind === 'Application' && m.metadata.name === c.name) as any;
      expect(app.spec.source, c.name).toEqual(root.spec.source);
      expect(app.spec.destination, c.name).toEqual({ name: c.name, namespace: 'argocd' });
      // automated from the patch, the retries from the template: the root's whole sync policy
      expect(app.spec.syncPolicy, c.name).toEqual(root.spec.syncPolicy);
    }
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

  it('a cluster that runs no Argo CD (external, reached at its API URL): the hub holds its AppProject and Applications, which deploy to it', () => {
    const hubbed = renderCluster(modelOf((d) => { d.name = 'remote-lab'; d.gitops.path = 'dist/remote-lab'; d.gitops.destinationServer = 'https://10.0.0.1:6443'; }));
    expect(hubbed.model.argocd).toBe('external');
    const gitops = hubbed.folders.find((f) => f.folder === 'gitops')!.objects;
    const apps = gitops.filter((m) => m.kind === 'Application') as any[];
    const root = apps.find((a) => a.metadata.name === 'remote-lab');
    // the root applies them to the Argo CD that runs them (the hub's own API server); every other one deploys to the cluster
    expect(root.spec.destination).toEqual({ server: 'https://kubernetes.default.svc', namespace: 'argocd' });
    for (const a of apps.filter((x) => x !== root)) expect(a.spec.destination.server, a.metadata.name).toBe('https://10.0.0.1:6443');
    const project = findObject(gitops, 'AppProject', 'remote-lab') as any;
    expect(project.spec.destinations).toContainEqual({ server: 'https://kubernetes.default.svc', namespace: 'argocd' });
    expect(project.spec.destinations.filter((d: any) => d.server === 'https://kubernetes.default.svc')).toHaveLength(1);
    expect(checkCluster(hubbed).filter((f) => f.rule.startsWith('application-'))).toEqual([]);
    // as the root was before: to the cluster's API server, which runs no Argo CD
    const before = {
      ...hubbed,
      folders: hubbed.folders.map((f) => (f.folder !== 'gitops' ? f : {
        ...f,
        objects: f.objects.map((m) => (m !== root ? m
          : { ...m, spec: { ...root.spec, destination: { server: 'https://10.0.0.1:6443', namespace: 'argocd' } } })),
      })),
    };
    expect(checkCluster(before).filter((f) => f.rule === 'application-destination').map((f) => f.message)).toEqual([
      expect.stringMatching(/^Application argocd\/remote-lab: applies the gitops folder's AppProject and Applications to https:\/\/10.0.0.1:6443, .*on the hub, not on the cluster at https:\/\/10.0.0.1:6443, which runs no Argo CD$/),
    ]);

    // in the fleet: generated on the hub, into the hub itself; the fleet AppProject permits exactly that
    const mixed = renderFleet([...clusters, hubbed]);
    const set = findObject(mixed.objects, 'ApplicationSet', 'fleet', 'argocd') as any;
    const element = set.spec.generators[0].list.elements.find((e: any) => e.cluster === 'remote-lab');
    expect(element.hubManaged).toBe(true);
    expect(generated(set, element).spec.destination).toEqual({ server: 'https://kubernetes.default.svc', namespace: 'argocd' });
    expect((findObject(mixed.objects, 'AppProject', 'fleet') as any).spec.destinations).toEqual([
      { name: 'instant-cluster', namespace: 'argocd' }, { server: 'https://kubernetes.default.svc', namespace: 'argocd' }, { name: 'training-cluster', namespace: 'argocd' },
    ]);
    // its Argo CD objects can only live in the namespace the hub's Argo CD watches
    const elsewhere = renderCluster(modelOf((d) => { d.name = 'remote-lab'; d.gitops.path = 'dist/remote-lab'; d.gitops.destinationServer = 'https://10.0.0.1:6443'; d.gitops.namespace = 'gitops'; }));
    expect(() => renderFleetOf([elsewhere])).toThrow(InputError);
    expect(() => renderFleet([elsewhere])).toThrow('remote-lab: gitops.namespace: "gitops", but the cluster runs no Argo CD of its own');
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
