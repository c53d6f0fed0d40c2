import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEMAS, VENDORED_DIR } from '../../src/paths';
import { Crd, crdKey } from '../../src/upgrade/crd-diff';
import { packagedCrds, yamlFiles } from '../../src/upgrade/crd-sets';
import { CrdRef, GPU_OPERATOR_CHART } from '../../src/upstream/releases';
import { HAS_SCHEMAS } from '../helpers';

/*
 * src/upstream/vendored/: the upstream files this repository vendors itself (what ../shared lacks), byte-exact with
 * their SHA256SUMS and SOURCES.md; and the GPU Operator install's claim of the CRDs it brings, which they back.
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

  it.skipIf(!HAS_SCHEMAS)('the GPU Operator install provides exactly the CRDs the pinned tag\'s crds/ holds, each vendored with the scope it claims (GPUCluster among them)', () => {
    const claims = GPU_OPERATOR_CHART.unrenderedCrds.filter((u) => u.chartPath === '').flatMap((u) => u.crds);
    const crds = [
      ...yamlFiles(path.join(DEFAULT_SCHEMAS, 'gpu-operator')),
      ...yamlFiles(path.join(VENDORED_DIR, GPU_OPERATOR_CHART.folder)),
    ].filter((f) => /\.ya?ml$/.test(f)).flatMap((f) => packagedCrds(f, f));
    expect(claims.map((c) => c.kind)).toContain('GPUCluster');
    expect(unbacked(claims, crds)).toEqual([]);
    expect(crds.map(crdKey).sort()).toEqual(claims.map(crdKey).sort());
    // the check fires: a kind no file defines, and a claim of the wrong scope
    expect(unbacked([...claims, { group: 'nvidia.com', kind: 'Nonexistent', scope: 'Cluster' }], crds)).toEqual(['nvidia.com/Nonexistent (Cluster)']);
    expect(unbacked([{ group: 'nvidia.com', kind: 'GPUCluster', scope: 'Namespaced' }], crds)).toEqual(['nvidia.com/GPUCluster (Namespaced)']);
  });
});
