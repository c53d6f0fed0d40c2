import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkCluster, ClusterIndex, renderClusterSources } from '../../src/check';
import { UPSTREAM_RULES } from '../../src/check/upstream';
import { appliedSize, CLIENT_SIDE_APPLY_LIMIT, isProvided, kindsDefinedBy } from '../../src/components/gitops/api-kinds';
import { managedInstalls } from '../../src/components/gitops/managed-installs';
import { parseDescription } from '../../src/model/load';
import { ClusterModel } from '../../src/model/model';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { apiGroup, Manifest } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { ClusterRenders, footprintOf, imageObjects, imageRefsOf, RenderedSource } from '../../src/upstream';
import { VERSIONS } from '../../src/versions';
import { HAS_UPSTREAM, modelOf, referenceInput } from '../helpers';

/** Every add-on managed, every node tainted: what the installs render is all there is. */
const ALL_MANAGED = Object.fromEntries(['gpuOperator', 'networkOperator', 'kueue', 'mpiOperator', 'trainingOperator', 'localPathProvisioner', 'monitoring', 'dynamo']
  .map((k) => [k, 'managed']));
const managed: ClusterModel = modelOf((d) => {
  d.installs = ALL_MANAGED;
  d.nodes.gpuWorkers.taints = [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }];
});

/** Renders a model and what its Applications install (no folder builds: the tree is in memory). */
type View = { name: string; model: ClusterModel; folders: { folder: string; objects: readonly Manifest[] }[] };

async function rendered(model: ClusterModel): Promise<{ view: View; renders: ClusterRenders }> {
  const c = renderCluster(model);
  const view = { name: c.name, model, folders: c.folders.map((f) => ({ folder: f.folder, objects: f.objects })) };
  return { view, renders: await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, reruns: false }) };
}

function get(values: unknown, dotted: string): Record<string, unknown> {
  return dotted.split('.').reduce<any>((cur, k) => cur?.[k], values);
}

describe.skipIf(!HAS_UPSTREAM)('pinned images against what the vendored charts render', () => {
  let renders: ClusterRenders;
  beforeAll(async () => {
    renders = (await rendered(modelOf())).renders;
  });
  const defaults = (chart: string): RenderedSource => renders.defaults.find((r) => r.what.startsWith(`chart ${chart} `))!;

  it('every entry of VERSIONS.gpuOperator.images is an image the gpu-operator chart\'s ClusterPolicy renders with its defaults', () => {
    const policy = defaults('gpu-operator').objects.find((o) => o.kind === 'ClusterPolicy')!;
    const chartImages = imageObjects(policy.spec ?? {}, 'spec').map((i) => i.value);
    for (const [key, image] of Object.entries(VERSIONS.gpuOperator.images)) {
      expect(chartImages, key).toContainEqual(image);
    }
    expect(get(policy.spec, 'validator')).toMatchObject({ image: 'gpu-operator', version: VERSIONS.gpuOperator.version });
  });

  it('the DCGM diagnostic sample defaults to the DCGM image the chart renders', () => {
    const policy = defaults('gpu-operator').objects.find((o) => o.kind === 'ClusterPolicy')!;
    const dcgm = get(policy.spec, 'dcgm');
    expect(parseDescription(referenceInput()).samples.dcgmDiag.image).toBe(`${dcgm.repository}/${dcgm.image}:${dcgm.version}`);
  });

  it('NicClusterPolicy spec.global names the registry and tag of the network-operator release\'s own images', () => {
    const refs = defaults('network-operator').objects.flatMap((o) => imageRefsOf(o));
    const { repository, version } = VERSIONS.networkOperator.global;
    expect(refs.filter((r) => r.repository.startsWith(`${repository}/`)).map((r) => r.tag)).toContain(version);
    expect(refs.map((r) => `${r.repository}:${r.tag}`)).toContain(`nvcr.io/nvidia/cloud-native/network-operator:v${VERSIONS.networkOperator.version}`);
  });
});

describe.skipIf(!HAS_UPSTREAM)('managed install footprints, rendered by the engines', () => {
  let renders: ClusterRenders;
  let index: ClusterIndex;
  beforeAll(async () => {
    const r = await rendered(managed);
    renders = r.renders;
    index = new ClusterIndex(r.view, undefined, renders);
  });

  it('every install renders (none is declared by hand or skipped any more)', () => {
    const installs = renders.sources.filter((r) => r.type !== 'folder');
    expect(installs.map((r) => r.application.metadata.name).sort()).toEqual(managedInstalls(managed).map((i) => `${managed.name}-${i.name}`).sort());
    for (const r of installs) expect(r.problem, r.what).toBeUndefined();
  });

  for (const install of managedInstalls(managed)) {
    it(`${install.name}: the cluster-scoped kinds and namespaces the AppProject is given equal what the install creates`, () => {
      const r = renders.sources.find((s) => s.application.metadata.name === `${managed.name}-${install.name}`)!;
      const objects = footprintOf(r, (apiVersion, kind) => index.scopeIn(apiVersion, kind));
      expect(objects.every((o) => o.scope !== undefined)).toBe(true);
      const clusterKinds = new Set(objects.filter((o) => o.scope === 'Cluster').map((o) => `${o.group}/${o.kind}`));
      if (install.createNamespace) clusterKinds.add('/Namespace');
      const declared = new Set([...install.clusterKinds, ...(install.createNamespace ? [{ group: '', kind: 'Namespace' }] : [])].map((g) => `${g.group}/${g.kind}`));
      expect([...declared].sort()).toEqual([...clusterKinds].sort());
      const namespaces = new Set(objects.filter((o) => o.scope !== 'Cluster').map((o) => o.namespace));
      expect([...namespaces].sort()).toEqual([install.namespace, ...install.extraNamespaces].sort());
    });
  }

  for (const install of managedInstalls(managed)) {
    it(`${install.name}: largestObjectBytes is the largest object of the render (at least, where the vendored copy lacks the chart's crds/), on the same side of the client-side apply limit`, () => {
      const r = renders.sources.find((s) => s.application.metadata.name === `${managed.name}-${install.name}`)!;
      const largest = Math.max(...r.objects.map(appliedSize));
      const crdsNotRendered = r.unrenderedCrds.some((c) => c.from === 'crds-not-vendored');
      if (crdsNotRendered) expect(install.largestObjectBytes).toBeGreaterThanOrEqual(largest);
      else expect(install.largestObjectBytes).toBe(largest);
      expect(install.largestObjectBytes > CLIENT_SIDE_APPLY_LIMIT).toBe(largest > CLIENT_SIDE_APPLY_LIMIT);
    });

    it(`${install.name}: every ignoreDifferences entry names a kind its Application applies`, () => {
      const r = renders.sources.find((s) => s.application.metadata.name === `${managed.name}-${install.name}`)!;
      const applied = new Set(r.objects.map((o) => `${apiGroup(o.apiVersion)}/${o.kind}`));
      for (const d of install.ignoreDifferences) expect(applied, d.why).toContain(`${d.group ?? ''}/${d.kind}`);
    });
  }

  it('each install provides exactly the kinds of the CRDs it brings: all of them, and none another install brings (Dynamo\'s nvidia.com kinds are not the GPU Operator\'s)', () => {
    const installs = managedInstalls(managed);
    const defined = new Map(installs.map((install) => {
      const r = renders.sources.find((s) => s.application.metadata.name === `${managed.name}-${install.name}`)!;
      return [install.name, [...kindsDefinedBy(r.objects), ...r.unrenderedCrds.map(({ group, kind }) => ({ group, kind }))]] as const;
    }));
    for (const install of installs) {
      const own = defined.get(install.name)!;
      expect(own.filter((gk) => !isProvided(gk, install.provides)), install.name).toEqual([]);
      for (const p of install.provides) expect(own.some((gk) => isProvided(gk, [p])), `${install.name} provides ${p.group}/${p.kind}`).toBe(true);
      const others = installs.filter((o) => o !== install).flatMap((o) => defined.get(o.name)!.map((gk) => `${o.name}: ${gk.group}/${gk.kind}`)
        .filter((_, i) => isProvided(defined.get(o.name)![i], install.provides)));
      expect(others, `${install.name} provides kinds other installs bring`).toEqual([]);
    }
  });

  it('the values decide: without the auth-reader RoleBinding no kube-system, without the rules no NodeFeatureRule', async () => {
    const off = await rendered(modelOf((d) => {
      d.installs = { kueue: 'managed', networkOperator: 'managed', gpuOperator: 'managed' };
      d.nodeFeatureDiscovery = { deployedBy: 'network-operator' };
    }));
    const app = (name: string) => off.view.folders.flatMap((f) => f.objects).find((o) => o.kind === 'Application' && o.metadata.name.endsWith(name))!;
    const kueue = app('kueue-install') as any;
    kueue.spec.source.helm.valuesObject = { ...kueue.spec.source.helm.valuesObject, enableVisibilityAuthReaderRoleBinding: false };
    const net = app('network-operator-install') as any;
    net.spec.source.helm.valuesObject = { ...net.spec.source.helm.valuesObject, nfd: { enabled: true, deployNodeFeatureRules: false } };
    const again = await renderClusterSources(off.view, { upstream: DEFAULT_UPSTREAM, reruns: false });
    const objects = (name: string) => again.sources.find((s) => s.application.metadata.name.endsWith(name))!.objects;
    expect(objects('kueue-install').map((o) => o.metadata.namespace)).not.toContain('kube-system');
    expect(objects('network-operator-install').map((o) => o.kind)).not.toContain('NodeFeatureRule');
    expect(objects('network-operator-install').map((o) => o.kind)).toEqual(expect.arrayContaining(['DaemonSet', 'Deployment']));
  });

  it('the rendered all-managed cluster passes every rule that reads the renders', () => {
    const c = renderCluster(managed);
    expect(checkCluster({ name: c.name, model: managed, folders: c.folders }, { rules: UPSTREAM_RULES, renders })).toEqual([]);
  });

  it('without the upstream folder nothing is rendered from it, and its rules report nothing', async () => {
    const c = renderCluster(managed);
    const view = { name: c.name, model: managed, folders: c.folders };
    const none = await renderClusterSources(view, { upstream: path.join(DEFAULT_UPSTREAM, 'missing') });
    expect(none.upstream).toBeUndefined();
    // the tree's own folders need no upstream folder
    expect(new Set(none.sources.filter((s) => s.type !== 'folder').map((s) => s.problem?.kind))).toEqual(new Set(['no-upstream']));
    expect(checkCluster(view, { rules: UPSTREAM_RULES, renders: none })).toEqual([]);
  });
});
