import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mutants, sampleObjects } from './corpus';
import { CompiledCache } from '../../src/cache/compiled-cache';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { SchemaStore } from '../../src/validate/schemas';
import { ManifestValidator, ValidationIssue } from '../../src/validate/validator';
import { HAS_SCHEMAS } from '../helpers';

const dirs: string[] = [];
function tempDir(tag: string): string {
  const d = mkdtempSync(path.join(tmpdir(), `gcm-validate-cache-${tag}-`));
  dirs.push(d);
  return d;
}

function validatorWith(cacheDir: string | false, schemas: string = DEFAULT_SCHEMAS): ManifestValidator {
  return new ManifestValidator(SchemaStore.open(schemas, { cacheDir }), { cacheDir });
}

function issuesOf(v: ManifestValidator, objects: readonly Manifest[]): ValidationIssue[][] {
  return objects.map((m) => v.validate(m));
}

const cacheFiles = (dir: string, suffix: string) => readdirSync(dir).filter((f) => f.endsWith(suffix)).map((f) => path.join(dir, f));

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!HAS_SCHEMAS)('compiled validator cache', () => {
  // Every upstream example plus broken variants of each: unknown fields and wrong types at many depths.
  const objects = HAS_SCHEMAS ? sampleObjects().flatMap((m) => [m, ...mutants(m, 4)]) : [];
  let reference: ValidationIssue[][];
  let cold: ValidationIssue[][];
  let cacheDir: string;

  beforeAll(() => {
    reference = issuesOf(validatorWith(false), objects);
    cacheDir = tempDir('shared');
    cold = issuesOf(validatorWith(cacheDir), objects);
  });

  it('covers valid and invalid objects of every kind of the examples', () => {
    expect(objects.length).toBeGreaterThan(350);
    expect(reference.filter((r) => r.some((i) => i.severity === 'error')).length).toBeGreaterThan(300);
    expect(reference.filter((r) => r.length === 0).length).toBeGreaterThanOrEqual(48);
  });

  it('a cold and a warm validator give the results of an uncached one', () => {
    const read = vi.spyOn(CompiledCache.prototype, 'readValidator');
    try {
      const warm = issuesOf(validatorWith(cacheDir), objects);
      expect(cold).toEqual(reference);
      expect(warm).toEqual(reference);
      // The warm validator loaded every schema from the cache (none was compiled).
      expect(read.mock.results.length).toBeGreaterThan(15);
      expect(read.mock.results.every((r) => r.value !== undefined)).toBe(true);
    } finally {
      read.mockRestore();
    }
  });

  it('stores each validator with V8 compiled code and the parsed CRDs', () => {
    expect(cacheFiles(cacheDir, '.js').length).toBeGreaterThan(15);
    expect(cacheFiles(cacheDir, '.bin').length).toBe(cacheFiles(cacheDir, '.js').length);
    expect(cacheFiles(cacheDir, '.json').length).toBeGreaterThan(0);
  });

  it('ignores corrupted cache files and rebuilds them', () => {
    const dir = tempDir('corrupt');
    const kinds = sampleObjects();
    issuesOf(validatorWith(dir), kinds);
    const all = readdirSync(dir).map((f) => path.join(dir, f));
    all.forEach((f, i) => {
      const data = readFileSync(f);
      if (i % 3 === 0) writeFileSync(f, data.subarray(0, Math.floor(data.length / 2))); // truncated
      else if (i % 3 === 1) writeFileSync(f, Buffer.concat([data.subarray(0, data.length - 40), Buffer.from('garbage'.repeat(6))]));
      else writeFileSync(f, ''); // empty
    });
    const read = vi.spyOn(CompiledCache.prototype, 'readValidator');
    try {
      const subset = objects.slice(0, 400);
      expect(issuesOf(validatorWith(dir), subset)).toEqual(reference.slice(0, 400));
      // Each kind: the corrupted entry reads as a miss, then the rebuilt one loads.
      const misses = read.mock.results.filter((r) => r.value === undefined).length;
      expect(misses).toBeGreaterThan(15);
      expect(read.mock.results.length).toBe(2 * misses);
      read.mockClear();
      // Rebuilt: the next process loads every validator again.
      expect(issuesOf(validatorWith(dir), subset)).toEqual(reference.slice(0, 400));
      expect(read.mock.results.every((r) => r.value !== undefined)).toBe(true);
    } finally {
      read.mockRestore();
    }
  });

  it('ignores a cache entry with a valid checksum that is not a validator', () => {
    const dir = tempDir('not-js');
    const storageClass: Manifest = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'x' }, provisioner: 'p', volumeBindingMod: 'Immediate' };
    validatorWith(dir).validate(storageClass);
    const [file] = cacheFiles(dir, '.js');
    const cache = new CompiledCache(dir);
    const key = path.basename(file, '.js');
    cache.writeValidator(key, 'this is { not javascript');
    expect(cache.readValidator(key, {})).toBeUndefined();
    cache.writeValidator(key, 'module.exports = 42;');
    expect(cache.readValidator(key, {})).toBeUndefined();
    cache.writeValidator(key, 'module.exports = require("node:child_process");');
    expect(cache.readValidator(key, {})).toBeUndefined();
    expect(validatorWith(dir).validate(storageClass)).toEqual([expect.objectContaining({ path: 'volumeBindingMod', message: 'unknown field' })]);
  });

  it('never runs V8 compiled code that was made from another source of the same length', () => {
    // V8 checks only the length of the source; concurrent processes may write different sources.
    const cache = new CompiledCache(tempDir('v8'));
    const key = cache.key('validator', ['same-length']);
    cache.writeValidator(key, 'module.exports = function v(d) { return d === 1; };');
    const first = cache.readValidator(key, {})!;
    expect(first.validate(1)).toBe(true);
    first.saveCompiledCode();
    cache.writeValidator(key, 'module.exports = function v(d) { return d === 2; };');
    const second = cache.readValidator(key, {})!;
    expect([second.validate(1), second.validate(2)]).toEqual([false, true]);
  });

  it('rejects an unknown field through a cached validator, deep in a custom resource and in its metadata', () => {
    const mpiJob = sampleObjects().find((m) => m.kind === 'MPIJob' && m.metadata.name === 'pi')!;
    const broken = structuredClone(mpiJob) as any;
    broken.spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limitz = { cpu: 1 };
    broken.metadata.labelz = { a: 'b' };
    const read = vi.spyOn(CompiledCache.prototype, 'readValidator');
    try {
      const issues = validatorWith(cacheDir).validate(broken);
      expect(read.mock.results[0].value).toBeDefined();
      expect(issues).toHaveLength(2);
      expect(issues).toEqual(expect.arrayContaining([
        expect.objectContaining({ path: 'spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limitz', message: 'unknown field' }),
        expect.objectContaining({ path: 'metadata.labelz', message: 'unknown field' }),
      ]));
    } finally {
      read.mockRestore();
    }
  });

  it('never uses an entry compiled from an older version of a schema file', () => {
    const schemas = tempDir('schemas');
    const crd = path.join(schemas, 'storage.yaml');
    const crdText = readFileSync(path.join(DEFAULT_SCHEMAS, 'kueue', 'kueue.x-k8s.io_resourceflavors.yaml'), 'utf8');
    writeFileSync(crd, crdText);
    const dir = tempDir('stale');
    const flavor: Manifest = { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'ResourceFlavor', metadata: { name: 'gpu' }, spec: { nodeLabels: { a: 'b' } } };
    expect(validatorWith(dir, crd).validate(flavor)).toEqual([]);
    // The upstream schema changes: spec.nodeLabels is gone.
    writeFileSync(crd, crdText.replace(/^( {14})nodeLabels:/gm, '$1nodeLabelsRenamed:'));
    expect(validatorWith(dir, crd).validate(flavor)).toEqual([expect.objectContaining({ path: 'spec.nodeLabels', message: 'unknown field' })]);
  });

  it('never uses an entry of a schema file edited in place with its size and mtime kept', () => {
    const schemas = tempDir('in-place');
    const crd = path.join(schemas, 'flavors.yaml');
    const crdText = readFileSync(path.join(DEFAULT_SCHEMAS, 'kueue', 'kueue.x-k8s.io_resourceflavors.yaml'), 'utf8');
    writeFileSync(crd, crdText);
    utimesSync(crd, 1_700_000_000, 1_700_000_000);
    const before = statSync(crd);
    const dir = tempDir('in-place-cache');
    const flavor: Manifest = { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'ResourceFlavor', metadata: { name: 'gpu' }, spec: { nodeLabels: { a: 'b' } } };
    expect(validatorWith(dir, crd).validate(flavor)).toEqual([]);
    // the same number of bytes, the old mtime put back (as `touch -r`, `cp -p` or a checkout can)
    writeFileSync(crd, crdText.replace(/^( {14})nodeLabels:/gm, '$1nodeLabelX:'));
    utimesSync(crd, 1_700_000_000, 1_700_000_000);
    const after = statSync(crd);
    expect([after.size, after.mtimeMs]).toEqual([before.size, before.mtimeMs]);
    expect(validatorWith(dir, crd).validate(flavor)).toEqual([expect.objectContaining({ path: 'spec.nodeLabels', message: 'unknown field' })]);
  });
});
