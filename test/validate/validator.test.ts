import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Manifest } from '../../src/render/manifest';
import { manifestFiles, readTree } from '../../src/render/tree';
import { SchemaDirectoryMissing, SchemaStore } from '../../src/validate/schemas';
import { ManifestValidator } from '../../src/validate/validator';
import { HAS_SCHEMAS, SHARED, validator } from '../helpers';

const SAMPLES = path.join(SHARED, 'upstream-samples');
const sampleFiles = HAS_SCHEMAS ? manifestFiles(SAMPLES).map((f) => path.relative(SAMPLES, f)) : [];

const storageClass = (extra: Record<string, unknown> = {}): Manifest => ({
  apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fast' }, provisioner: 'rancher.io/local-path', ...extra,
});

const clusterQueue = (spec: Record<string, unknown>, apiVersion = 'kueue.x-k8s.io/v1beta2'): Manifest => ({
  apiVersion, kind: 'ClusterQueue', metadata: { name: 'team' }, spec,
});

let corpus: ManifestValidator | undefined;

describe.skipIf(!HAS_SCHEMAS)('strict schema validation', () => {
  // The upstream corpus repeats object names across files: validate file by file (SOURCES.md).
  it.each(sampleFiles)('accepts the upstream example %s', (file) => {
    corpus ??= new ManifestValidator(validator().store); // upstream examples may omit namespaces
    const issues = corpus.validateAll(readTree(path.join(SAMPLES, file)));
    expect(issues.filter((i) => i.severity === 'error')).toEqual([]);
  });

  it('covers the whole upstream corpus (35 files)', () => {
    expect(sampleFiles.length).toBe(35);
  });

  it('rejects one unknown field, naming its path', () => {
    const issues = validator().validate(storageClass({ volumeBindingMod: 'Immediate' }));
    expect(issues).toEqual([expect.objectContaining({ severity: 'error', path: 'volumeBindingMod', message: 'unknown field' })]);
  });

  it('rejects unknown fields deep inside a custom resource', () => {
    const issues = validator().validate(clusterQueue({ namespaceSelector: {}, resourceGroups: [{ coveredResources: ['cpu'], flavors: [{ name: 'x', resources: [{ name: 'cpu', nominalQuota: '1', nominalQuotaa: 2 }] }] }] }));
    expect(issues.map((i) => i.path)).toEqual(['spec.resourceGroups[0].flavors[0].resources[0].nominalQuotaa']);
  });

  it('rejects unknown metadata fields of custom resources (ObjectMeta is strict too)', () => {
    const cq = clusterQueue({});
    const issues = validator().validate({ ...cq, metadata: { ...cq.metadata, labelz: { a: 'b' } } });
    expect(issues.map((i) => i.path)).toContain('metadata.labelz');
  });

  it('prunes nulls as the API server does', () => {
    expect(validator().validate(storageClass({ parameters: null, mountOptions: null }))).toEqual([]);
  });

  it('accepts int-or-string fields as integer or string and nothing else', () => {
    const dep = (port: unknown): Manifest => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's', namespace: 'x' },
      spec: { ports: [{ port: 80, targetPort: port }] },
    });
    expect(validator().validate(dep(8080))).toEqual([]);
    expect(validator().validate(dep('http'))).toEqual([]);
    expect(validator().validate(dep(true)).length).toBeGreaterThan(0);
  });

  it('applies schema defaults before required checks (a defaulted required field may be omitted)', () => {
    // NVIDIADriver spec.default is required with default false (upstream-samples/SOURCES.md).
    const v = validator();
    const driver: Manifest = { apiVersion: 'nvidia.com/v1alpha1', kind: 'NVIDIADriver', metadata: { name: 'd' }, spec: { driverType: 'gpu', image: 'driver', repository: 'nvcr.io/nvidia', version: '570' } };
    expect(v.validate(driver).filter((i) => i.path === 'spec.default')).toEqual([]);
  });

  it('reports a missing required field without default', () => {
    const issues = validator().validate({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'x' } });
    expect(issues).toEqual([expect.objectContaining({ path: 'provisioner', message: 'required field is missing' })]);
  });

  it('warns about deprecated API versions', () => {
    const issues = validator().validate(clusterQueue({}, 'kueue.x-k8s.io/v1beta1'));
    expect(issues).toEqual([expect.objectContaining({ severity: 'warning', path: 'apiVersion' })]);
  });

  it('rejects unknown kinds and versions', () => {
    expect(validator().validate({ apiVersion: 'kueue.x-k8s.io/v1', kind: 'ClusterQueue', metadata: { name: 'x' } })[0].message).toMatch(/no schema/);
  });

  it('reports duplicate objects', () => {
    const issues = validator().validateAll([{ manifest: storageClass(), source: 'a.yaml' }, { manifest: storageClass(), source: 'b.yaml' }]);
    expect(issues).toEqual([expect.objectContaining({ message: 'duplicate object (also in a.yaml)', source: 'b.yaml' })]);
  });

  it('checks names, namespaces and label syntax', () => {
    const v = validator();
    expect(v.validate(storageClass({ metadata: { name: 'Fast_SSD' } }))[0].path).toBe('metadata.name');
    expect(v.validate(storageClass({ metadata: { name: 'fast', namespace: 'x' } }))[0].message).toMatch(/cluster-scoped/);
    expect(v.validate({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } })[0].message).toMatch(/namespaced/);
    expect(v.validate(storageClass({ metadata: { name: 'fast', labels: { 'a/b/c': 'x' } } })).length).toBe(1);
  });

  it('validates against a user\'s own CRDs (kubectl get crd -o yaml) plus the core definitions', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'own-crds-'));
    // a List as kubectl prints it, with a CRD that knows only v1beta2 ClusterQueue with one field
    writeFileSync(path.join(dir, 'crds.yaml'), [
      'apiVersion: v1', 'kind: List', 'items:',
      '  - apiVersion: apiextensions.k8s.io/v1', '    kind: CustomResourceDefinition', '    metadata: { name: clusterqueues.kueue.x-k8s.io }',
      '    spec:', '      group: kueue.x-k8s.io', '      scope: Cluster', '      names: { kind: ClusterQueue, plural: clusterqueues }',
      '      versions:', '        - name: v1beta2', '          served: true', '          storage: true',
      '          schema:', '            openAPIV3Schema:', '              type: object', '              properties:',
      '                apiVersion: { type: string }', '                kind: { type: string }', '                metadata: { type: object }',
      '                spec:', '                  type: object', '                  properties:', '                    cohortName: { type: string }',
    ].join('\n'));
    const own = new ManifestValidator(SchemaStore.open([dir, path.join(SHARED, 'crds', 'kubernetes')]));
    expect(own.validate(clusterQueue({ cohortName: 'all' }))).toEqual([]);
    expect(own.validate(clusterQueue({ resourceGroups: [] }))[0].path).toBe('spec.resourceGroups');
    expect(own.validate(storageClass())).toEqual([]);
  });
});

describe('schema directory', () => {
  it('says plainly when it does not exist', () => {
    expect(() => SchemaStore.open('/nonexistent/crds')).toThrow(SchemaDirectoryMissing);
    expect(() => SchemaStore.open('/nonexistent/crds')).toThrow(/schema directory \/nonexistent\/crds does not exist/);
  });
});
