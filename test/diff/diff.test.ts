import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { EXIT, main } from '../../src/cli';
import { changedFields, diffObjects, TreeObject } from '../../src/commands/diff';
import { Manifest } from '../../src/render/manifest';
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
      { change: 'changed', object: 'ClusterQueue default', cluster: 'c', file: 'c/kueue/clusterqueue.default.yaml', fields: [{ path: 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota', before: 4, after: 8 }] },
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
      { path: 'a[1]', before: undefined, after: 2 },
      { path: 'b.c', before: 1, after: undefined },
    ]);
    expect(changedFields({ a: 1 }, { a: 1 })).toEqual([]);
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
    expect(text).toMatch(/^ {2}~ ClusterQueue default \(kueue\/clusterqueue\.default\.yaml\)\n( {6}.*\n)* {6}spec\.resourceGroups\[0\]\.flavors\[0\]\.resources\[\d\]\.nominalQuota: "4" -> "8"$/m);
    expect(text).toMatch(/^ {2}~ file README\.md$/m);
    // The deletions go to standard error as well, one line each, as synth lists what it refuses to remove.
    expect(c.err).toContain('- instant-cluster: Namespace inference (tenants/namespace.inference.yaml)');
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
