import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { EXIT, main } from '../../src/cli';
import { changedFields, diffObjects, formatDiff, TreeObject } from '../../src/commands/diff';
import { inOneUnit } from '../../src/model/quantity';
import { Manifest } from '../../src/render/manifest';
import { formatFieldChange } from '../../src/render/object-diff';
import { HAS_SCHEMAS, REFERENCE_FILE, referenceInput, ROOT } from '../helpers';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const ns = (name: string): Manifest => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
const cq = (name: string, gpus: number): Manifest => ({
  apiVersion: 'kueue.x-k8s.io/v1beta2',
  kind: 'ClusterQueue',
  metadata: { name },
  spec: { resourceGroups: [{ coveredResources: ['nvidia.com/gpu'], flavors: [{ name: 'h100', resources: [{ name: 'nvidia.com/gpu', nominalQuota: gpus }] }] }] },
});
const at = (file: string, manifest: Manifest): TreeObject => ({ file, manifest });

describe('diffObjects', () => {
  it('reports added, removed and changed objects with the changed field paths', () => {
    const before = [at('c/tenants/namespace.inference.yaml', ns('inference')), at('c/kueue/clusterqueue.default.yaml', cq('default', 4)), at('c/kueue/clusterqueue.research.yaml', cq('research', 8))];
    const after = [at('c/kueue/clusterqueue.default.yaml', cq('default', 8)), at('c/kueue/clusterqueue.research.yaml', cq('research', 8)), at('c/tenants/namespace.vision.yaml', ns('vision'))];
    expect(diffObjects(before, after)).toEqual([
      { change: 'changed', object: 'ClusterQueue default', cluster: 'c', file: 'c/kueue/clusterqueue.default.yaml', fields: [{ path: 'spec.resourceGroups[0].flavors[h100].resources[nvidia.com/gpu].nominalQuota', before: 4, after: 8 }] },
      { change: 'removed', object: 'Namespace inference', cluster: 'c', file: 'c/tenants/namespace.inference.yaml', fields: [] },
      { change: 'added', object: 'Namespace vision', cluster: 'c', file: 'c/tenants/namespace.vision.yaml', fields: [] },
    ]);
  });

  it('matches objects per cluster and ignores the API version in the identity', () => {
    const v1 = { ...cq('default', 4), apiVersion: 'kueue.x-k8s.io/v1beta1' };
    expect(diffObjects([at('a/kueue/x.yaml', v1)], [at('a/kueue/x.yaml', cq('default', 4))])[0].fields)
      .toEqual([{ path: 'apiVersion', before: 'kueue.x-k8s.io/v1beta1', after: 'kueue.x-k8s.io/v1beta2' }]);
    expect(diffObjects([at('a/t/n.yaml', ns('x'))], [at('b/t/n.yaml', ns('x'))]).map((c) => c.change)).toEqual(['removed', 'added']);
  });

  it('lists array growth and removed keys as field changes', () => {
    expect(changedFields({ a: [1], b: { c: 1 } }, { a: [1, 2], b: {} })).toEqual([
      { path: 'a[1]', after: 2, change: 'inserted' },
      { path: 'b.c', before: 1, after: undefined },
    ]);
    expect(changedFields({ a: 1 }, { a: 1 })).toEqual([]);
  });
});

describe('changed lists', () => {
  const kinds = (...ks: string[]) => ks.map((kind) => ({ group: 'rbac.authorization.k8s.io', kind }));
  it('an item inserted into a list is an insertion, not every later item renamed position by position', () => {
    const before = { spec: { clusterResourceWhitelist: kinds('ClusterRole', 'ClusterRoleBinding', 'PriorityClass') } };
    const after = { spec: { clusterResourceWhitelist: kinds('ClusterRole', 'Role', 'ClusterRoleBinding', 'PriorityClass', 'StorageClass') } };
    expect(changedFields(before, after).map(formatFieldChange)).toEqual([
      'spec.clusterResourceWhitelist[1]: inserted {"group":"rbac.authorization.k8s.io","kind":"Role"}',
      'spec.clusterResourceWhitelist[4]: inserted {"group":"rbac.authorization.k8s.io","kind":"StorageClass"}',
    ]);
    expect(changedFields(after, before).map((f) => `${f.path} ${f.change}`)).toEqual(['spec.clusterResourceWhitelist[1] removed', 'spec.clusterResourceWhitelist[4] removed']);
    // the same keys in another order are the same items
    expect(changedFields([{ a: 1, b: 2 }], [{ b: 2, a: 1 }])).toEqual([]);
  });

  it('items with names match by name: a subject replaced is one removed and one inserted, a changed one is changed in place, a new order is said', () => {
    const group = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name });
    expect(changedFields({ subjects: [group('oidc:research')] }, { subjects: [group('tenant-research')] })).toEqual([
      { path: 'subjects[oidc:research]', before: group('oidc:research'), change: 'removed' },
      { path: 'subjects[tenant-research]', after: group('tenant-research'), change: 'inserted' },
    ]);
    const env = (...pairs: [string, string][]) => pairs.map(([name, value]) => ({ name, value }));
    expect(changedFields(env(['A', '1'], ['B', '2']), env(['C', '3'], ['A', '1'], ['B', '20'])).map(formatFieldChange)).toEqual([
      '[B].value: 2 -> 20',
      '[C]: inserted {"name":"C","value":"3"}',
    ]);
    expect(changedFields({ env: env(['A', '1'], ['B', '2']) }, { env: env(['B', '2'], ['A', '1']) }).map(formatFieldChange)).toEqual(['env: reordered ["A","B"] -> ["B","A"]']);
  });

  it('unnamed items changed in place (as many before as after between unchanged ones) are compared field by field', () => {
    const taint = (effect: string) => ({ key: 'nvidia.com/gpu', effect });
    expect(changedFields({ t: [taint('NoSchedule'), { key: 'x' }] }, { t: [taint('NoExecute'), { key: 'x' }] })).toEqual([{ path: 't[0].effect', before: 'NoSchedule', after: 'NoExecute' }]);
  });
});

describe('changed values, as diff prints them', () => {
  it('two long strings that differ past the cut show where they differ, not the same cut prefix twice', () => {
    const files = (...names: string[]) => `{${['appproject.argocd.lab.yaml', 'application.argocd.lab-argocd.yaml', 'application.argocd.lab-monitoring.yaml', ...names].join(',')}}`;
    const line = formatFieldChange({ path: 'include', before: files('application.argocd.lab-storage.yaml'), after: files('application.argocd.lab-storage.yaml', 'application.argocd.lab-tenants.yaml') });
    const [before, after] = line.slice('include: '.length).split(' -> ');
    expect(before).not.toBe(after);
    expect(after).toContain('application.argocd.lab-tenants.yaml');
    expect(before).toMatch(/^"\.\.\..*lab-storage\.yaml}"$/);
    expect(line.length).toBeLessThan(240);
    // a change in the middle of two long strings: both sides cut around it
    const long = (x: string) => `${'a'.repeat(100)}${x}${'b'.repeat(100)}`;
    expect(formatFieldChange({ path: 's', before: long('OLD'), after: long('NEW') })).toBe(`s: "...${'a'.repeat(24)}OLD${'b'.repeat(24)}..." -> "...${'a'.repeat(24)}NEW${'b'.repeat(24)}..."`);
  });

  it('quantities written in different units are shown in one unit too; the same unit, or no quantity, as written', () => {
    expect(formatFieldChange({ path: 'nominalQuota', before: '570', after: '281001m' })).toBe('nominalQuota: 570 -> 281001m (570 -> 281.001)');
    expect(formatFieldChange({ path: 'nominalQuota', before: '5517Gi', after: '2808321Mi' })).toBe('nominalQuota: 5517Gi -> 2808321Mi (5649408Mi -> 2808321Mi)');
    expect(formatFieldChange({ path: 'nominalQuota', before: '8', after: '12' })).toBe('nominalQuota: 8 -> 12');
    // a zero needs no unit
    expect(formatFieldChange({ path: 'nominalQuota', before: '890Gi', after: '0' })).toBe('nominalQuota: 890Gi -> 0');
    // a name with brackets is quoted in the path
    expect(changedFields([{ name: 'a[1]', v: 1 }], [{ name: 'a[1]', v: 2 }]).map((f) => f.path)).toEqual(['["a[1]"].v']);
    expect(formatFieldChange({ path: 'image', before: 'v1', after: 'v2' })).toBe('image: "v1" -> "v2"');
    expect(inOneUnit('2Gi', '2049Mi')).toEqual(['2048Mi', '2049Mi']);
    expect(inOneUnit('1500', '2k')).toEqual(['1.5k', '2k']);
    expect(inOneUnit('500m', 1)).toEqual(['0.5', '1']);
    expect(inOneUnit('1G', '1Gi')).toEqual(['1000000000', '1073741824']);
    expect(inOneUnit('1Gi', '1Gi')).toBeUndefined();
    expect(inOneUnit('v1.2', '3m')).toBeUndefined();
  });

  it('formatDiff prints each field that way under its object', () => {
    expect(formatDiff({ files: [], objects: [{ change: 'changed', object: 'ClusterQueue research', cluster: 'c', file: 'c/kueue/clusterqueue.research.yaml', fields: [{ path: 'spec.x[0]', after: 1, change: 'inserted' }] }] }))
      .toEqual(['c:', '  ~ ClusterQueue research (kueue/clusterqueue.research.yaml)', '      spec.x[0]: inserted 1']);
  });
});

describe.skipIf(!HAS_SCHEMAS)('npm run diff', () => {
  let work: string;
  let committed: string;
  let withoutInference: string;
  beforeAll(() => {
    work = mkdtempSync(path.join(tmpdir(), 'diff-cli-'));
    committed = path.join(work, 'dist');
    expect(main(['synth', '--config', REFERENCE_FILE, '--out', committed, '--quiet'])).toBe(EXIT.ok);
    const d = referenceInput();
    d.tenants = (d.tenants ?? []).filter((t: { name: string }) => t.name !== 'inference');
    withoutInference = path.join(work, 'instant-cluster.yaml');
    writeFileSync(withoutInference, stringify(d));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('exits 0 and says so when nothing changes', () => {
    const c = capture();
    expect(main(['diff', '--config', REFERENCE_FILE, '--out', committed], c.io)).toBe(EXIT.ok);
    expect(c.out).toEqual([`no changes: ${path.relative(process.cwd(), committed)} matches a fresh render`]);
  });

  it('a removed tenant: reports the deletions and the changed quota, and exits 1', () => {
    const c = capture();
    expect(main(['diff', '--config', withoutInference, '--out', committed], c.io)).toBe(EXIT.failed);
    const text = c.out.join('\n');
    expect(text).toMatch(/^instant-cluster:$/m);
    expect(text).toMatch(/^ {2}- Namespace inference \(tenants\/namespace\.inference\.yaml\)$/m);
    expect(text).toMatch(/^ {2}- LocalQueue inference\/inference /m);
    expect(text).toMatch(/^ {2}- ClusterQueue inference /m);
    expect(text).toMatch(/^ {2}~ ClusterQueue default \(kueue\/clusterqueue\.default\.yaml\)\n( {6}.*\n)* {6}spec\.resourceGroups\[0\]\.flavors\[[\w-]+\]\.resources\[nvidia\.com\/gpu\]\.nominalQuota: 4 -> 8$/m);
    expect(text).toMatch(/^ {2}~ file README\.md$/m);
    // The deletions go to standard error as well, one line each, as synth lists what it refuses to remove.
    // (with what Argo CD does with it: a Namespace carries Prune=confirm)
    expect(c.err).toContainEqual(expect.stringMatching(/^- instant-cluster: Namespace inference \(tenants\/namespace\.inference\.yaml\): Argo CD deletes it only once someone confirms /));
    expect(c.err.filter((l) => l.startsWith('- instant-cluster: '))).toHaveLength(text.split('\n').filter((l) => l.startsWith('  - ') && !l.startsWith('  - file ')).length);
    expect(c.err.at(-1)).toMatch(/^error: \d+ object\(s\) would be deleted; re-run with --allow-delete/);
    expect(readdirSync(committed)).toEqual(['instant-cluster']);
  });

  it('with --allow-delete the same change exits 0; --format json lists it for machines', () => {
    expect(main(['diff', '--config', withoutInference, '--out', committed, '--allow-delete'], capture().io)).toBe(EXIT.ok);
    const c = capture();
    expect(main(['diff', '--config', withoutInference, '--out', committed, '--allow-delete', '--format', 'json'], c.io)).toBe(EXIT.ok);
    const json = JSON.parse(c.out.join('\n'));
    expect(json.removed).toBeGreaterThanOrEqual(3);
    expect(json.objects).toContainEqual(expect.objectContaining({ change: 'removed', object: 'Namespace inference', cluster: 'instant-cluster' }));
  });

  it('never touches the committed tree, which stays the reference render', () => {
    const c = capture();
    expect(main(['diff', '--config', REFERENCE_FILE, '--out', committed], c.io)).toBe(EXIT.ok);
    expect(path.resolve(committed)).not.toBe(path.join(ROOT, 'dist'));
  });
});
