import * as path from 'node:path';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { resolveEngines } from '../../src/engines';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { Crd } from '../../src/upgrade/crd-diff';
import { packagedCrds, yamlFiles } from '../../src/upgrade/crd-sets';
import { renderApplications } from '../../src/upstream';
import { PREVIOUS_RELEASES, PreviousRelease } from '../../src/upstream/previous-releases';

/*
 * The vendored previous releases (../shared/upstream-installs, SOURCES.md names tag and commit of each) as the tests read
 * them: their chart's crds/ and what their chart renders with its default values. The facts a test compares with come
 * from here, never typed into the test.
 */

export type OperatorKey = PreviousRelease['key'];

/** The vendored previous release of an operator. */
export function previousRelease(key: OperatorKey): PreviousRelease {
  const p = PREVIOUS_RELEASES.find((x) => x.key === key);
  if (!p) throw new Error(`no previous release of ${key} in src/versions.ts`);
  return p;
}

/** The CRD files of a previous release (its chart's crds/ at the tag). */
export function previousCrdFiles(key: OperatorKey): string[] {
  const p = previousRelease(key);
  return yamlFiles(path.join(DEFAULT_UPSTREAM, p.folder, p.chart.chartPath, 'crds'));
}

/** The CRDs of a previous release, parsed. */
export function previousCrds(key: OperatorKey): Crd[] {
  return previousCrdFiles(key).flatMap((f) => packagedCrds(f, f));
}

/** The CRD of a kind of a previous release, as the manifest a cluster is given. */
export function previousCrd(key: OperatorKey, kind: string): Manifest {
  const crd = previousCrds(key).find((c) => c.kind === kind);
  if (!crd) throw new Error(`${previousRelease(key).folder}: no ${kind} CRD`);
  return structuredClone(crd.object);
}

/** The pinned CRDs of a schema folder (../shared/crds/<folder>). */
export function pinnedCrds(folder: string): Crd[] {
  return yamlFiles(path.join(DEFAULT_SCHEMAS, folder)).flatMap((f) => packagedCrds(f, f));
}

/** What a previous release's chart renders with its default values (the engines, as upgrade-plan renders it), in `namespace`. */
export async function previousChartRender(key: OperatorKey, namespace = 'default'): Promise<Manifest[]> {
  const p = previousRelease(key);
  const app: Manifest = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: `${p.chart.chart}-${p.version}` },
    spec: { destination: { namespace }, source: { chart: p.chart.chart, targetRevision: p.version, helm: { releaseName: p.chart.chart } } },
  };
  const [r] = await renderApplications([app], { upstream: DEFAULT_UPSTREAM, engines: await resolveEngines(), cacheDir: defaultCacheDir(), kubeVersion: 'v1.31.0' });
  if (r.problem) throw new Error(`${p.folder}: ${r.problem.message}`);
  return [...r.objects];
}

/**
 * The operator Deployment of a previous release's chart, as `helm install` leaves it in a cluster: Helm's release
 * annotations on it (meta.helm.sh/release-name and -namespace, which Helm writes on every object it creates).
 */
export async function previousOperatorDeployment(key: OperatorKey, namespace: string): Promise<Manifest> {
  const p = previousRelease(key);
  const objects = await previousChartRender(key, namespace);
  const image = p.chart.chart === 'kueue' ? 'kueue' : p.chart.chart;
  const d = objects.find((o) => o.kind === 'Deployment' && JSON.stringify(o.spec).includes(`/${image}:`));
  if (!d) throw new Error(`${p.folder}: its chart renders no Deployment of the ${image} image`);
  return {
    ...d,
    metadata: {
      ...d.metadata,
      namespace,
      annotations: { ...d.metadata.annotations, 'meta.helm.sh/release-name': p.chart.chart, 'meta.helm.sh/release-namespace': namespace },
    },
  };
}
