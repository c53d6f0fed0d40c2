import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { Crd, crdKey } from '../../src/upgrade/crd-diff';
import { packagedCrds, yamlFiles } from '../../src/upgrade/crd-sets';
import { CrdRef, GPU_OPERATOR_CHART } from '../../src/upstream/releases';
import { HAS_SCHEMAS, HAS_UPSTREAM } from '../helpers';

/*
 * The GPU Operator install's claim of the CRDs it brings, each backed by a pinned schema or by SOURCES.md's record of
 * the chart's crds/ files not vendored.
 */

/** The claimed kinds no CRD defines with the same group, kind and scope: what a claim says that no file shows. */
function unbacked(claims: readonly CrdRef[], crds: readonly Crd[]): string[] {
  return claims.filter((c) => !crds.some((x) => crdKey(x) === crdKey(c) && x.scope === c.scope)).map((c) => `${c.group}/${c.kind} (${c.scope})`);
}

describe('the GPU Operator install\'s CRDs', () => {
  it.skipIf(!HAS_SCHEMAS || !HAS_UPSTREAM)('the GPU Operator install provides the CRDs the pinned tag\'s crds/ holds: each in ../shared/crds with the scope it claims, or one upstream-installs/SOURCES.md records as not vendored', () => {
    const claims = GPU_OPERATOR_CHART.unrenderedCrds.filter((u) => u.chartPath === '').flatMap((u) => u.crds);
    const crds = yamlFiles(path.join(DEFAULT_SCHEMAS, 'gpu-operator')).filter((f) => /\.ya?ml$/.test(f)).flatMap((f) => packagedCrds(f, f));
    // SOURCES.md's section of the release: the chart's crds/ files it skipped as "not vendored anywhere", by plural
    const section = readFileSync(path.join(DEFAULT_UPSTREAM, 'SOURCES.md'), 'utf8').split(/^## /m).find((x) => x.startsWith(`${GPU_OPERATOR_CHART.folder}/ `))!;
    const skipped = /Skipped: `crds\/` \(([^)]*)\)/.exec(section)?.[1] ?? '';
    const notVendored = skipped.split(';').filter((part) => /not vendored anywhere/.test(part)).join(' ');
    // `group_plural` file names, a shared prefix written once (`resource.nvidia.com_computedomains/computedomaincliques`)
    const names = [...notVendored.matchAll(/([a-z.]+)_([a-z/]+)/g)].flatMap((m) => m[2].split('/').map((plural) => `${m[1]}_${plural}`));
    const recorded = (c: CrdRef) => names.includes(`${c.group}_${c.kind.toLowerCase()}s`);
    expect(claims.map((c) => c.kind)).toContain('GPUCluster');
    expect(unbacked(claims, crds).filter((u) => !recorded(claims.find((c) => u.startsWith(`${c.group}/${c.kind} `))!))).toEqual([]);
    expect(claims.filter(recorded).map((c) => c.kind).sort()).toEqual(['ComputeDomain', 'ComputeDomainClique', 'GPUCluster']);
    // the check fires: a kind no file defines nor SOURCES.md records, and a claim of the wrong scope
    expect(unbacked([...claims, { group: 'nvidia.com', kind: 'Nonexistent', scope: 'Cluster' }], crds)).toContain('nvidia.com/Nonexistent (Cluster)');
    expect(recorded({ group: 'nvidia.com', kind: 'Nonexistent', scope: 'Cluster' })).toBe(false);
    expect(unbacked([{ group: 'nvidia.com', kind: 'ClusterPolicy', scope: 'Namespaced' }], crds)).toEqual(['nvidia.com/ClusterPolicy (Namespaced)']);
  });
});
