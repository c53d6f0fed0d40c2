import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { projectCacheDir } from '../../src/cache/cache-dir';
import { cacheDirProblem, CompiledCache, defaultCacheDir } from '../../src/cache/compiled-cache';
import { DigestMemo } from '../../src/cache/digests';
import { runEngine, unpackedLayer } from '../../src/engines';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM, PACKAGE_ROOT as PROJECT } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { locateChart, renderableChart } from '../../src/upstream/chart';
import { RenderCache } from '../../src/upstream/render-cache';
import { SchemaStore } from '../../src/validate/schemas';
import { ManifestValidator } from '../../src/validate/validator';
import { ENGINE_CACHE } from '../engines/fake-engines';
import { HAS_SCHEMAS, HAS_UPSTREAM } from '../helpers';

/*
 * Every cache is verified by content when it is read, and an entry is valid only under its own key: an entry
 * edited by hand, replaced (with a checksum of its own body, as the old format had), swapped with another or
 * truncated is a miss, and is made again. An unusable cache folder is one line or a run without a cache.
 */

const work = mkdtempSync(path.join(tmpdir(), 'verified-caches-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const configMap = (name: string): Manifest => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });

describe('the render cache', () => {
  it('an entry under another key (two entries swapped) or with a checksum of its body only is a miss', () => {
    const cache = new RenderCache(path.join(work, 'renders'));
    const [a, b] = [cache.key(['a']), cache.key(['b'])];
    cache.put(a, { objects: [configMap('a')], sources: [] });
    cache.put(b, { objects: [configMap('b')], sources: [] });
    expect(cache.get(a)?.objects[0].metadata.name).toBe('a');
    const file = (k: string) => path.join(work, 'renders', 'renders', `${k}.json`);
    const [ta, tb] = [readFileSync(file(a)), readFileSync(file(b))];
    writeFileSync(file(a), tb);
    writeFileSync(file(b), ta);
    expect(cache.get(a)).toBeUndefined();
    expect(cache.get(b)).toBeUndefined();
    const body = JSON.stringify({ objects: [configMap('forged')], sources: [] });
    writeFileSync(file(a), `${sha256(body)}\n${body}`);
    expect(cache.get(a)).toBeUndefined();
    // rendered again, the entry is repaired
    cache.put(a, { objects: [configMap('a')], sources: [] });
    expect(cache.get(a)?.objects[0].metadata.name).toBe('a');
  });
});

describe('the compiled-validator cache', () => {
  it('a validator replaced by one that accepts anything, with a valid header of the old kind, is a miss', () => {
    const cache = new CompiledCache(path.join(work, 'compiled'));
    const key = cache.key('validator', ['strict']);
    cache.writeValidator(key, 'module.exports = function validate(d) { return d === 1; };');
    expect(cache.readValidator(key, {})?.validate(2)).toBe(false);
    const acceptAll = 'module.exports = function validate() { return true; };';
    writeFileSync(path.join(work, 'compiled', `${key}.js`), `// gpu-cluster-manifests cache sha256=${sha256(acceptAll)}\n${acceptAll}`);
    expect(cache.readValidator(key, {})).toBeUndefined();
  });

  it('a valid entry of another key is a miss under this one', () => {
    const cache = new CompiledCache(path.join(work, 'compiled-swap'));
    const [strict, loose] = [cache.key('validator', ['strict']), cache.key('validator', ['loose'])];
    cache.writeValidator(strict, 'module.exports = function validate() { return false; };');
    cache.writeValidator(loose, 'module.exports = function validate() { return true; };');
    cpSync(path.join(work, 'compiled-swap', `${loose}.js`), path.join(work, 'compiled-swap', `${strict}.js`));
    expect(cache.readValidator(strict, {})).toBeUndefined();
    cache.writeJson('crds-a', { a: 1 });
    cpSync(path.join(work, 'compiled-swap', 'crds-a.json'), path.join(work, 'compiled-swap', 'crds-b.json'));
    expect(cache.readJson('crds-a')).toEqual({ a: 1 });
    expect(cache.readJson('crds-b')).toBeUndefined();
  });

  it.skipIf(!HAS_SCHEMAS)('every validator of a warm cache replaced by an accept-all one: validation still finds the error', () => {
    const dir = path.join(work, 'validators');
    const validatorWith = () => new ManifestValidator(SchemaStore.open(DEFAULT_SCHEMAS, { cacheDir: dir }), { cacheDir: dir });
    const broken: Manifest = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'x' }, provisioner: 'p', volumeBindingMod: 'Immediate' };
    expect(validatorWith().validate(broken)).toEqual([expect.objectContaining({ path: 'volumeBindingMod', message: 'unknown field' })]);
    const acceptAll = 'module.exports = function validate() { return true; };';
    const forged = readdirSync(dir).filter((f) => f.endsWith('.js'));
    expect(forged.length).toBeGreaterThan(0);
    for (const f of forged) writeFileSync(path.join(dir, f), `// gpu-cluster-manifests cache sha256=${sha256(acceptAll)}\n${acceptAll}`);
    const read = vi.spyOn(CompiledCache.prototype, 'readValidator');
    try {
      expect(validatorWith().validate(broken)).toEqual([expect.objectContaining({ path: 'volumeBindingMod', message: 'unknown field' })]);
      expect(read.mock.results.some((r) => r.value === undefined)).toBe(true);
    } finally {
      read.mockRestore();
    }
  });
});

describe.skipIf(!HAS_UPSTREAM)('prepared charts', () => {
  it('a prepared copy edited by hand (its values.yaml) is a miss: it is made again, as the release is published', () => {
    const located = locateChart(DEFAULT_UPSTREAM, 'gpu-operator', 'v26.7.0')!;
    const cache = path.join(work, 'charts');
    const first = renderableChart(located, cache);
    expect(first.dir.startsWith(cache)).toBe(true);
    const values = path.join(first.dir, 'values.yaml');
    const published = readFileSync(values, 'utf8');
    writeFileSync(values, `${published}\nforged: true\n`);
    expect(readFileSync(values, 'utf8')).not.toBe(published);
    const again = renderableChart(located, cache);
    expect(again).toEqual(first);
    expect(readFileSync(values, 'utf8')).toBe(published);
    // half deleted: made again too
    rmSync(path.join(first.dir, 'templates'), { recursive: true });
    expect(existsSync(path.join(renderableChart(located, cache).dir, 'templates'))).toBe(true);
  });
});

const LINUX_X64 = process.platform === 'linux' && process.arch === 'x64';

describe.skipIf(!LINUX_X64)('the unpacked engines', () => {
  it('a truncated helm in the cache is unpacked again, and runs', async () => {
    const shared = await unpackedLayer(ENGINE_CACHE);
    const cache = path.join(work, 'engines-cache');
    // a copy of the shared unpacked layer (unzipping costs seconds), then damaged
    cpSync(shared.dir, path.join(cache, 'engines', path.basename(shared.dir)), { recursive: true });
    const size = statSync(shared.helm).size;
    const copy = path.join(cache, 'engines', path.basename(shared.dir), 'helm', 'helm');
    truncateSync(copy, 1024 * 1024);
    const layer = await unpackedLayer(cache);
    expect(layer.helm).toBe(copy);
    expect(statSync(layer.helm).size).toBe(size);
    expect(await runEngine(layer.helm, ['version', '--template', '{{.Version}}'])).toMatch(/^v\d+\.\d+\.\d+/);
  });
});

describe('an unusable cache folder', () => {
  it('is named with the reason: a device, a path through a file, a missing root', () => {
    expect(cacheDirProblem('/dev/null')).toBe('/dev/null is not a folder');
    expect(cacheDirProblem('/dev/null/cache')).toBe('/dev/null is not a folder');
    expect(cacheDirProblem(path.join(work, 'new', 'cache'))).toBeUndefined();
    expect(cacheDirProblem(`${'x'.repeat(300)}/cache`)).toMatch(/^the path has a component of 300 bytes/);
  });

  it('GPU_CLUSTER_MANIFESTS_CACHE naming one is bad input of one line', () => {
    process.env.GPU_CLUSTER_MANIFESTS_CACHE = '/dev/null';
    try {
      expect(() => defaultCacheDir()).toThrow(/^GPU_CLUSTER_MANIFESTS_CACHE=\/dev\/null: not a folder/);
      process.env.GPU_CLUSTER_MANIFESTS_CACHE = '/dev/null/cache';
      expect(() => defaultCacheDir()).toThrow(/^GPU_CLUSTER_MANIFESTS_CACHE=\/dev\/null\/cache: (cannot hold the cache|cannot stat)/);
    } finally {
      delete process.env.GPU_CLUSTER_MANIFESTS_CACHE;
    }
  });

  it('the default one (node_modules/.cache a link to /dev/null): a run without a cache, said once', () => {
    const project = path.join(work, 'project');
    mkdirSync(path.join(project, 'node_modules'), { recursive: true });
    symlinkSync('/dev/null', path.join(project, 'node_modules', '.cache'));
    const said = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(projectCacheDir(project)).toBeUndefined();
      expect(projectCacheDir(project)).toBeUndefined();
      expect(said.mock.calls.map((c) => String(c[0]))).toEqual([
        expect.stringMatching(/^note: the cache folder .*project\/node_modules\/\.cache\/gpu-cluster-manifests cannot be used \(.*project\/node_modules\/\.cache is not a folder\); running without a cache/),
      ]);
    } finally {
      said.mockRestore();
    }
    expect(projectCacheDir(PROJECT)).toBe(path.join(PROJECT, 'node_modules', '.cache', 'gpu-cluster-manifests'));
  });

  it('the caches themselves never throw when their folder cannot be written (a memo saved at exit, an entry put after a render)', () => {
    const memo = new DigestMemo('/dev/null/file-digests.json', () => Date.now() + 60_000);
    expect(memo.digest(path.join(PROJECT, 'package.json'))).toMatch(/^[0-9a-f]{64}$/);
    expect(() => memo.save()).not.toThrow();
    expect(() => new RenderCache('/dev/null').put('k', { objects: [], sources: [] })).not.toThrow();
    expect(() => new CompiledCache('/dev/null/x').writeJson('k', {})).not.toThrow();
  });
});
