import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkCluster } from '../../src/check';
import { UPSTREAM_RULES } from '../../src/check/upstream';
import { managedInstalls } from '../../src/components/gitops/managed-installs';
import { loadDescription, parseDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { CLUSTERS_DIR, DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { renderCluster } from '../../src/render/render';
import { ApplicationSource, FootprintObject, GPU_OPERATOR_CHART, NETWORK_OPERATOR_CHART, Upstream } from '../../src/upstream';
import { VERSIONS } from '../../src/versions';
import { HAS_UPSTREAM, modelOf, referenceInput } from '../helpers';

const upstream = HAS_UPSTREAM ? Upstream.open(DEFAULT_UPSTREAM)! : undefined;
const training = buildModel(loadDescription(path.join(CLUSTERS_DIR, 'training-cluster.yaml')));

function get(values: unknown, dotted: string): Record<string, unknown> {
  return dotted.split('.').reduce<any>((cur, k) => cur?.[k], values);
}

/** Where each entry of VERSIONS.gpuOperator.images lives in values.yaml (the ClusterPolicy construct's mapping). */
const VALUES_PATH: Record<keyof typeof VERSIONS.gpuOperator.images, string> = {
  validator: 'validator',
  driver: 'driver',
  driverManager: 'driver.manager',
  toolkit: 'toolkit',
  devicePlugin: 'devicePlugin',
  gfd: 'gfd',
  dcgm: 'dcgm',
  dcgmExporter: 'dcgmExporter',
  migManager: 'migManager',
  nodeStatusExporter: 'nodeStatusExporter',
};

function sourceOf(s: { repoUrl?: string } & Record<string, unknown>): ApplicationSource {
  const { repoUrl, ...rest } = s;
  return { ...rest, repoURL: repoUrl } as ApplicationSource;
}

describe.skipIf(!HAS_UPSTREAM)('pinned images against the vendored charts\' values.yaml', () => {
  it('every entry of VERSIONS.gpuOperator.images equals the gpu-operator chart default', () => {
    const d = upstream!.chartDefaults(GPU_OPERATOR_CHART)!;
    expect(d.appVersion).toBe(VERSIONS.gpuOperator.version);
    for (const [key, image] of Object.entries(VERSIONS.gpuOperator.images)) {
      const v = get(d.values, VALUES_PATH[key as keyof typeof VALUES_PATH]);
      expect({ key, ...image }).toEqual({ key, repository: v.repository, image: v.image, version: v.version ?? d.appVersion });
    }
  });

  it('the ClusterPolicy template fills each rendered image field from those values (validator tagged with the appVersion)', () => {
    const defaults = upstream!.clusterPolicyImageDefaults()!;
    expect(defaults['spec.validator']).toMatchObject({ valuesPath: 'validator', versionFromAppVersion: true, version: VERSIONS.gpuOperator.version });
    expect(defaults['spec.driver.manager']).toMatchObject({ valuesPath: 'driver.manager' });
    for (const key of Object.values(VALUES_PATH)) expect(Object.values(defaults).map((x) => x.valuesPath)).toContain(key);
  });

  it('the DCGM diagnostic sample defaults to the chart\'s DCGM image', () => {
    const dcgm = get(upstream!.chartDefaults(GPU_OPERATOR_CHART)!.values, 'dcgm');
    const d = parseDescription(referenceInput());
    expect(d.samples.dcgmDiag.image).toBe(`${dcgm.repository}/${dcgm.image}:${dcgm.version}`);
  });

  it('NicClusterPolicy spec.global equals the network-operator release\'s component registry and tag', () => {
    const g = upstream!.nicClusterPolicyGlobalDefault()!;
    expect(VERSIONS.networkOperator.global).toEqual({ repository: g.repository, version: g.version });
    expect(upstream!.chartDefaults(NETWORK_OPERATOR_CHART)!.appVersion).toBe(`v${VERSIONS.networkOperator.version}`);
  });
});

describe.skipIf(!HAS_UPSTREAM)('managed install footprints', () => {
  const installs = managedInstalls(training);

  /** Installs whose templates or manifests are vendored (dynamo-platform has only Chart.yaml and values.yaml). */
  const readable = installs.filter((i) => i.key !== 'dynamo');

  it('training-cluster manages every install the footprint can be read for', () => {
    expect(readable.map((i) => i.key).sort()).toEqual(['gpuOperator', 'kueue', 'mpiOperator', 'networkOperator', 'trainingOperator']);
  });

  it('dynamo-platform has only Chart.yaml/values.yaml vendored: no footprint (its declared list stays unchecked)', () => {
    const dynamo = installs.find((i) => i.key === 'dynamo')!;
    const found = upstream!.sourceFootprint(sourceOf(dynamo.source as never), dynamo.namespace, dynamo.name);
    expect(found?.release).toMatchObject({ chart: VERSIONS.dynamoPlatform.chart, templatesVendored: false });
    expect(found?.footprint).toBeUndefined();
  });

  for (const install of readable) {
    it(`${install.name}: the hand-kept clusterKinds and namespaces equal the footprint read from upstream`, () => {
      const found = upstream!.sourceFootprint(sourceOf(install.source as never), install.namespace, install.name);
      expect(found?.footprint).toBeDefined();
      const fp = found!.footprint!;
      expect(fp.failures).toEqual([]);
      expect(fp.notes).toEqual([]);
      const clusterKinds = new Set(fp.objects.filter((o) => o.scope === 'Cluster').map((o) => `${o.group}/${o.kind}`));
      if (install.createNamespace) clusterKinds.add('/Namespace');
      const declared = new Set([...install.clusterKinds, ...(install.createNamespace ? [{ group: '', kind: 'Namespace' }] : [])].map((g) => `${g.group}/${g.kind}`));
      expect([...declared].sort()).toEqual([...clusterKinds].sort());
      const namespaces = new Set(fp.objects.filter((o) => o.scope !== 'Cluster').map((o) => o.namespace));
      expect([...namespaces].sort()).toEqual([install.namespace, ...install.extraNamespaces].sort());
      expect(fp.objects.every((o: FootprintObject) => o.scope !== undefined)).toBe(true);
    });
  }

  it('victoria-metrics-k8s-stack has only Chart.yaml/values.yaml vendored: no footprint (its hand list stays unchecked)', () => {
    const model = modelOf((d) => { d.installs = { ...d.installs, monitoring: 'managed' }; });
    const vm = managedInstalls(model).find((i) => i.key === 'monitoring')!;
    const found = upstream!.sourceFootprint(sourceOf(vm.source as never), vm.namespace, vm.name);
    expect(found?.release).toMatchObject({ chart: VERSIONS.victoriaMetricsK8sStack.chart, templatesVendored: false });
    expect(found?.footprint).toBeUndefined();
  });

  it('the values decide: without the auth-reader RoleBinding no kube-system, without the rules no NodeFeatureRule, NFD from the subchart', () => {
    const kueue = installs.find((i) => i.key === 'kueue')!;
    const src = sourceOf(kueue.source as never);
    const off = upstream!.sourceFootprint({ ...src, helm: { ...src.helm, valuesObject: { ...src.helm?.valuesObject, enableVisibilityAuthReaderRoleBinding: false } } }, 'kueue-system', 'k')!;
    expect(off.footprint!.objects.map((o) => o.namespace)).not.toContain('kube-system');

    const net = sourceOf(installs.find((i) => i.key === 'networkOperator')!.source as never);
    const withValues = (nfd: object) => upstream!.sourceFootprint({ ...net, helm: { ...net.helm, valuesObject: { ...net.helm?.valuesObject, nfd } } }, 'nvidia-network-operator', 'n')!.footprint!;
    expect(withValues({ enabled: false, deployNodeFeatureRules: false }).objects.map((o) => o.kind)).not.toContain('NodeFeatureRule');
    expect(withValues({ enabled: true, deployNodeFeatureRules: true }).objects.filter((o) => o.source.startsWith('charts/node-feature-discovery/')).map((o) => o.kind))
      .toEqual(expect.arrayContaining(['DaemonSet', 'Deployment', 'CustomResourceDefinition']));
  });

  it('the rendered training-cluster passes both upstream rules', () => {
    expect(checkCluster(renderCluster(training), { rules: UPSTREAM_RULES })).toEqual([]);
  });

  it('without the upstream folder the rules report nothing', () => {
    for (const rule of UPSTREAM_RULES) {
      const doc = parse(readFileSync(path.join(__dirname, '..', 'check', 'fixtures', `${rule.id}.fail.yaml`), 'utf8')) as { folders: Record<string, Manifest[]> };
      const view = { name: 'fixture', folders: Object.entries(doc.folders).map(([folder, objects]) => ({ folder, objects })) };
      expect(checkCluster(view, { rules: [rule] }).length).toBeGreaterThan(0);
      expect(checkCluster(view, { rules: [rule], upstream: path.join(DEFAULT_UPSTREAM, 'missing') })).toEqual([]);
    }
  });
});
