import { describe, expect, it } from 'vitest';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { carriedReleases, releaseForm } from '../../src/model/releases';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { Crd } from '../../src/upgrade/crd-diff';
import { yamlFiles } from '../../src/upgrade/crd-sets';
import { CrdSetValidator } from '../../src/upgrade/revalidate';
import { imageObjects, imageRefsOf } from '../../src/upstream';
import { VERSIONS } from '../../src/versions';
import { findObject, folderObjects, HAS_UPSTREAM, issuesOf, renderOf } from '../helpers';
import { pinnedCrds, previousChartRender, previousCrds, previousRelease } from '../upstream/previous-charts';

/*
 * releases.<operator>: the adopted CRs in the form the running release's CRD accepts. The ground truth is the vendored
 * previous releases (their charts and their crds/ at the tag, ../shared/upstream-installs, SOURCES.md) and the pinned CRDs
 * (../shared/crds); no upstream value is typed here.
 */

const previous = previousRelease;
const core = yamlFiles(DEFAULT_SCHEMAS).filter((f) => /definitions\.json$/i.test(f));
const validatorOf = (crds: Crd[]) => new CrdSetValidator(crds, core, defaultCacheDir());
const check = (v: CrdSetValidator, object: Manifest) => v.validate({ object, source: 'render' });

const nicClusterPolicy = (release?: string) => findObject(folderObjects(renderOf((d) => {
  if (release) d.releases = { networkOperator: release };
}), 'network-operator'), 'NicClusterPolicy', 'nic-cluster-policy');
const clusterPolicy = (release?: string) => findObject(folderObjects(renderOf((d) => {
  if (release) d.releases = { gpuOperator: release };
}), 'gpu-operator'), 'ClusterPolicy', 'cluster-policy');

describe('the release forms a description may name', () => {
  it('each operator renders for its pinned release and the previous releases src/versions.ts declares, oldest first', () => {
    expect(carriedReleases('gpuOperator').map((r) => r.version)).toEqual([previous('gpuOperator').version, VERSIONS.gpuOperator.version]);
    expect(carriedReleases('networkOperator').map((r) => r.version)).toEqual([previous('networkOperator').version, VERSIONS.networkOperator.version]);
    expect(carriedReleases('kueue').map((r) => r.version)).toEqual([previous('kueue').version, VERSIONS.kueue.version]);
  });

  it('a carried release, spelled with or without its v, or a patch release of one, renders as that release', () => {
    const old = previous('networkOperator').version;
    const [major, minor, patch] = old.replace(/^v/, '').split('.').map(Number);
    expect(releaseForm('networkOperator', `v${old.replace(/^v/, '')}`)).toMatchObject({ ok: true, exact: true, release: { version: old, pinned: false } });
    expect(releaseForm('networkOperator', `${major}.${minor}.${patch + 7}`)).toMatchObject({ ok: true, exact: false, release: { version: old } });
  });

  it('a release of no carried minor is refused naming the nearest supported ones; a newer one names a newer toolkit', () => {
    const [older, pinned] = carriedReleases('gpuOperator').map((r) => r.version);
    const [major] = older.replace(/^v/, '').split('.').map(Number);
    const between = releaseForm('gpuOperator', `v${major}.5.0`);
    expect(between.ok).toBe(false);
    if (!between.ok) {
      expect(between.nearest).toEqual([older, pinned]);
      expect(between.message).toContain(`nearest supported: ${older}, ${pinned}`);
    }
    const newer = releaseForm('gpuOperator', `v${major + 1}.1.0`);
    expect(newer.ok ? '' : newer.message).toMatch(new RegExp(`nearest supported: ${pinned} \\(a newer release needs a newer gpu-cluster-manifests\\)`));
    const oldest = releaseForm('gpuOperator', 'v1.0.0');
    expect(oldest.ok ? [] : oldest.nearest).toEqual([older]);
    expect(releaseForm('gpuOperator', `${pinned}-rc.1`).ok).toBe(false);
  });

  it('the description refuses an unsupported release, a release of a managed install, and a DOCA driver of a release whose DOCA tag is not carried', () => {
    const [older] = carriedReleases('gpuOperator').map((r) => r.version);
    const [major] = older.replace(/^v/, '').split('.').map(Number);
    expect(issuesOf((d) => { d.releases = { gpuOperator: `v${major}.5.0` }; })).toEqual([expect.objectContaining({ path: 'releases.gpuOperator', message: expect.stringContaining('nearest supported') })]);
    expect(issuesOf((d) => { d.installs = { gpuOperator: 'managed' }; d.releases = { gpuOperator: older }; }))
      .toEqual([expect.objectContaining({ path: 'releases.gpuOperator', message: expect.stringContaining('"managed"') })]);
    expect(issuesOf((d) => { d.releases = { networkOperator: previous('networkOperator').version }; d.networkOperator = { docaDriver: true }; }))
      .toEqual([expect.objectContaining({ path: 'networkOperator.docaDriver' })]);
    expect(issuesOf((d) => { d.releases = { kueue: previous('kueue').version }; })).toEqual([]);
  });
});

describe.skipIf(!HAS_UPSTREAM)('the adopted NicClusterPolicy against the vendored CRDs', () => {
  const old = previous('networkOperator').version;
  const underOld = validatorOf(previousCrds('networkOperator'));
  const underPinned = validatorOf(pinnedCrds('network-operator'));

  it('the pinned form is refused by the previous release\'s CRD (the case the issue names), the previous release\'s form is accepted by both', () => {
    const pinned = nicClusterPolicy();
    const refused = check(underOld, pinned);
    expect(refused.outcome).toBe('invalid');
    expect(refused.problems.join('\n')).toMatch(/global/);
    expect(check(underPinned, pinned).outcome).toBe('valid');

    const form = nicClusterPolicy(old);
    expect(check(underOld, form)).toMatchObject({ outcome: 'valid', problems: [] });
    // the old form stays valid once the owner upgrades the operator (its CRDs first): no window where it is refused
    expect(check(underPinned, form)).toMatchObject({ outcome: 'valid', problems: [] });
  });

  it('in the previous release\'s form every image carries that release\'s registry and tag (the images its chart names)', async () => {
    const form = nicClusterPolicy(old);
    expect((form.spec as Record<string, unknown>).global).toBeUndefined();
    const images = imageObjects(form.spec, 'spec').map((i) => i.value);
    expect(images.length).toBeGreaterThan(0);
    const chart = await previousChartRender('networkOperator');
    const tags = chart.flatMap((o) => imageRefsOf(o)).filter((r) => r.tag?.includes(old.replace(/^v/, ''))).map((r) => `${r.repository.slice(0, r.repository.lastIndexOf('/'))}:${r.tag}`);
    for (const i of images) expect(tags).toContain(`${i.repository}:${i.version}`);
  });
});

describe.skipIf(!HAS_UPSTREAM)('the adopted ClusterPolicy of a previous GPU Operator release', () => {
  it('names the operand images that release\'s chart renders, and its CRD accepts it', async () => {
    const old = previous('gpuOperator').version;
    const chartPolicy = (await previousChartRender('gpuOperator')).find((o) => o.kind === 'ClusterPolicy')!;
    const chartImages = imageObjects(chartPolicy.spec, 'spec').map((i) => JSON.stringify(i.value));
    const form = clusterPolicy(old);
    const rendered = imageObjects(form.spec, 'spec').map((i) => i.value);
    expect(rendered.length).toBeGreaterThan(5);
    for (const i of rendered) expect(chartImages, JSON.stringify(i)).toContain(JSON.stringify(i));
    expect(check(validatorOf(previousCrds('gpuOperator')), form)).toMatchObject({ outcome: 'valid', problems: [] });
    // and nothing of the pinned release's operands is left in it
    const pinned = new Set(Object.values(VERSIONS.gpuOperator.images).map((i) => JSON.stringify(i)));
    expect(rendered.filter((i) => pinned.has(JSON.stringify(i))).filter((i) => !chartImages.includes(JSON.stringify(i)))).toEqual([]);
  });

  it('carries helm.sh/resource-policy: keep while a pre-installed GPU Operator\'s Helm release renders it too, not when the toolkit installs it', () => {
    expect(clusterPolicy().metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    const managed = findObject(folderObjects(renderOf((d) => { d.installs = { gpuOperator: 'managed' }; }), 'gpu-operator'), 'ClusterPolicy', 'cluster-policy');
    expect(managed.metadata.annotations?.['helm.sh/resource-policy']).toBeUndefined();
  });
});
