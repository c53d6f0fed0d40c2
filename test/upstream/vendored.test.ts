import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM, VENDORED_DIR } from '../../src/paths';
import { Crd, crdKey } from '../../src/upgrade/crd-diff';
import { packagedCrds, yamlFiles } from '../../src/upgrade/crd-sets';
import { CrdRef, GPU_OPERATOR_CHART } from '../../src/upstream/releases';
import { HAS_SCHEMAS, HAS_UPSTREAM } from '../helpers';

/*
 * src/upstream/vendored/: the upstream files this repository vendors itself (what ../shared lacks), byte-exact with
 * their SHA256SUMS and SOURCES.md, never a CRD; and the GPU Operator install's claim of the CRDs it brings, each backed
 * by a pinned schema or by SOURCES.md's record of the chart's crds/ files not vendored.
 */

function files(dir: string, rel = ''): string[] {
  return readdirSync(path.join(dir, rel)).sort().flatMap((n) => {
    const child = rel ? `${rel}/${n}` : n;
    return statSync(path.join(dir, child)).isDirectory() ? files(dir, child) : [child];
  });
}

/** The claimed kinds no CRD defines with the same group, kind and scope: what a claim says that no file shows. */
function unbacked(claims: readonly CrdRef[], crds: readonly Crd[]): string[] {
  return claims.filter((c) => !crds.some((x) => crdKey(x) === crdKey(c) && x.scope === c.scope)).map((c) => `${c.group}/${c.kind} (${c.scope})`);
}

describe('src/upstream/vendored', () => {
  const sums = new Map(readFileSync(path.join(VENDORED_DIR, 'SHA256SUMS'), 'utf8').trimEnd().split('\n').map((l) => {
    const [digest, file] = l.split('  ');
    return [file, digest] as const;
  }));

  it('every file is listed in SHA256SUMS with its digest, and in the SOURCES.md table; nothing is listed that is not there', () => {
    const vendored = files(VENDORED_DIR).filter((f) => f !== 'SHA256SUMS' && f !== 'SOURCES.md');
    expect([...sums.keys()].sort()).toEqual(vendored);
    for (const f of vendored) expect(createHash('sha256').update(readFileSync(path.join(VENDORED_DIR, f))).digest('hex'), f).toBe(sums.get(f));
    const sources = readFileSync(path.join(VENDORED_DIR, 'SOURCES.md'), 'utf8');
    const listed = [...sources.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]).sort();
    expect(listed).toEqual(vendored);
  });

  it('holds no CustomResourceDefinition: CRDs are read from ../shared/crds, never committed', () => {
    const yamls = files(VENDORED_DIR).filter((f) => /\.ya?ml$/.test(f));
    expect(yamls.flatMap((f) => packagedCrds(path.join(VENDORED_DIR, f), f)).map((c) => c.file)).toEqual([]);
  });

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
