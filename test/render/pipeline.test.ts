import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { InstallationDamaged } from '../../src/cache/asset-sums';
import { fleetFiles } from '../../src/components/gitops/fleet';
import { parseDescription } from '../../src/model/load';
import { buildModel, ClusterModel } from '../../src/model/model';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { RenderedCluster } from '../../src/render/manifest';
import { writeTreeAtomically } from '../../src/render/write';
import { checkTargets, descriptionFiles, InputError, loadModels, renderFiles, renderFleetOf, renderModel, synth, ValidationFailed } from '../../src/synth/pipeline';
import { FIXTURE_CLUSTERS, HAS_SCHEMAS, readTreeFiles, REFERENCE_FILE, TRAINING_FILE, validator } from '../helpers';

/** A rendered file holding an object (not a kustomization, not a client file under tutorials/). */
function isObjectFile(file: string): boolean {
  return file.endsWith('.yaml') && !file.endsWith('kustomization.yaml') && !file.includes('/tutorials/');
}

/** What synth writes for a project of the fixture clusters: every cluster and the fleet folder. */
function freshFiles(): Map<string, string> {
  const clusters = loadModels(descriptionFiles(FIXTURE_CLUSTERS)).map(renderModel);
  return new Map([...renderFiles(clusters), ...fleetFiles(renderFleetOf(clusters))]);
}

describe('rendering', () => {
  it('is deterministic: two renders are byte-identical', () => {
    expect([...freshFiles()]).toEqual([...freshFiles()]);
  });

  it('writes one object per file, and every folder has a kustomization listing exactly its files', () => {
    const files = freshFiles();
    const folders = new Set([...files.keys()].filter((f) => f.endsWith('/kustomization.yaml')).map((f) => path.dirname(f)));
    expect(folders.size).toBeGreaterThan(0);
    for (const folder of folders) {
      const k = parse(files.get(`${folder}/kustomization.yaml`)!);
      const own = [...files.keys()].filter((f) => path.dirname(f) === folder && !f.endsWith('kustomization.yaml')).map((f) => path.basename(f));
      // Templates and objects applied by hand only are written but never listed.
      const templates = own.filter((f) => {
        const annotations = parse(files.get(`${folder}/${f}`)!).metadata.annotations ?? {};
        return annotations['gpu-cluster.dev/template'] === 'true' || annotations['gpu-cluster.dev/apply-by-hand'] === 'true';
      });
      // A folder built on an upstream base (argocd/) lists the base first, and patches the base with some of its files.
      const patchFiles: string[] = (k.patches ?? []).map((p: { path?: string }) => p.path).filter(Boolean);
      const bases: string[] = k.resources.filter((r: string) => r.startsWith('https://'));
      expect([...k.resources].sort(), folder).toEqual([...bases, ...own.filter((f) => !templates.includes(f) && !patchFiles.includes(f))].sort());
      for (const p of patchFiles) expect(own, folder).toContain(p);
      for (const f of own) {
        const doc = parse(files.get(`${folder}/${f}`)!);
        expect(doc.metadata.name, f).toBeTruthy();
        expect(f).toBe(`${doc.kind.toLowerCase()}.${doc.metadata.namespace ? `${doc.metadata.namespace}.` : ''}${doc.metadata.name}.yaml`);
      }
    }
  });

  it('lets a broken install through every render wrapper as it is (exit 2, reinstall), never as "cannot render"', () => {
    // what a render throws when a typed import is gone from the install, or an asset is damaged; then any other error
    const gone = Object.assign(new Error("Cannot find module '../imports/argocd-applicationset-argoproj.io.js'"), { code: 'MODULE_NOT_FOUND' });
    const damaged = new InstallationDamaged('lib/assets/crds/x.json', 'differs from its checksum');
    const other = new Error('a construct refused its props');
    const throwing = <T>(e: Error) => new Proxy({}, { get: () => { throw e; } }) as T;
    const thrown = (f: () => unknown) => { try { f(); } catch (e) { return e; } return undefined; };
    for (const e of [gone, damaged]) {
      expect(thrown(() => renderFleetOf([throwing<RenderedCluster>(e)]))).toBe(e);
      expect(thrown(() => renderModel(throwing<ClusterModel>(e)))).toBe(e);
    }
    const wrapped = thrown(() => renderFleetOf([throwing<RenderedCluster>(other)]));
    expect(wrapped).toBeInstanceOf(InputError);
    expect((wrapped as InputError).message).toBe('fleet: cannot render');
  });

  it('renames the RDMA device everywhere from one field: no old name left in any file', () => {
    const input = parse(readFileSync(REFERENCE_FILE, 'utf8'));
    input.network.infiniband.rdmaSharedDevice.name = 'rdma_ib_fabric';
    input.tutorials = { ...input.tutorials, skypilot: { ...input.tutorials?.skypilot, enabled: true } };
    const files = renderFiles([renderModel(buildModel(parseDescription(input)))]);
    const text = files.map(([, content]) => content).join('\n');
    expect(text).not.toContain('rdma_shared_device_a');
    const mentioning = files.filter(([, content]) => content.includes('rdma/rdma_ib_fabric')).map(([file]) => file.split('/')[1]);
    // the NicClusterPolicy config, the ClusterQueues, the jobs, the SkyPilot pod config and the report all carry the new name
    expect(new Set(mentioning)).toEqual(new Set(['kueue', 'samples', 'tutorials', 'README.md']));
    expect(files.find(([f]) => f.endsWith('nicclusterpolicy.nic-cluster-policy.yaml'))![1]).toContain('"resourceName": "rdma_ib_fabric"');
  });

  it('leaves the placeholder per-node checks out of kustomize and Argo CD, and nothing else', () => {
    const files = freshFiles();
    const templates = [...files.entries()].filter(([f, c]) => isObjectFile(f)
      && parse(c).metadata.annotations?.['gpu-cluster.dev/template'] === 'true').map(([f]) => f);
    expect(templates.length).toBeGreaterThan(0);
    for (const t of templates) {
      expect(t).toMatch(/\/samples\/.*replace-with-node-name\.yaml$/);
      expect(files.get(`${path.dirname(t)}/kustomization.yaml`)).not.toContain(path.basename(t));
    }
  });

  it('never uses construct-path hashes in names', () => {
    for (const [file, content] of freshFiles()) {
      if (!isObjectFile(file)) continue;
      expect(parse(content).metadata.name, file).not.toMatch(/-c8[0-9a-f]{6,}$/);
    }
  });
});

describe.skipIf(!HAS_SCHEMAS)('synth', () => {
  it('renders one description into OUT/<cluster>/ and leaves other folders alone', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'synth-'));
    writeFileSync(path.join(out, 'keep.txt'), 'mine');
    const r = synth({ configs: [REFERENCE_FILE], out, schemas: [DEFAULT_SCHEMAS] }, validator());
    expect(r.clusters.map((c) => c.name)).toEqual(['instant-cluster']);
    expect(readFileSync(path.join(out, 'keep.txt'), 'utf8')).toBe('mine');
    expect(existsSync(path.join(out, 'instant-cluster', 'storage', 'kustomization.yaml'))).toBe(true);
    expect(readdirSync(out).filter((f) => f.includes('.tmp-') || f.includes('.old-'))).toEqual([]);
  });

  it('fails validation with nothing written (atomicity)', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'synth-'));
    writeTreeAtomically(path.join(out, 'instant-cluster'), [['storage/old.yaml', 'previous\n']]);
    const before = readTreeFiles(out);
    // A schema directory whose only StorageClass schema rejects every field: validation fails after rendering.
    const crds = mkdtempSync(path.join(tmpdir(), 'crds-'));
    writeFileSync(path.join(crds, 'definitions.json'), JSON.stringify({
      definitions: {
        'io.k8s.api.storage.v1.StorageClass': {
          'type': 'object',
          'properties': { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' } },
          'x-kubernetes-group-version-kind': [{ group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass' }],
        },
      },
    }));
    expect(() => synth({ configs: [REFERENCE_FILE], out, schemas: [crds] })).toThrow(ValidationFailed);
    expect(readTreeFiles(out)).toEqual(before);
  });

  it('fails on a bad description with nothing written', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'synth-'));
    const bad = path.join(out, 'bad.yaml');
    writeFileSync(bad, readFileSync(REFERENCE_FILE, 'utf8').replace('count: 2', 'count: -2'));
    const before = readTreeFiles(out);
    expect(() => synth({ configs: [bad], out, schemas: false })).toThrow(InputError);
    expect(readTreeFiles(out)).toEqual(before);
  });
});

describe('synth of several clusters, each written as soon as it is checked', () => {
  const training = TRAINING_FILE;
  /** A description the shared-memory construct refuses at render time (after loading, so after the first cluster's write). */
  function refusedAtRender(dir: string): string {
    const f = path.join(dir, 'big-shm.yaml');
    writeFileSync(f, readFileSync(REFERENCE_FILE, 'utf8').replace(/(\n {4}image: ghcr\.io\/coreweave[^\n]*)/, '$1\n    shmSize: 4Ti').replace(/^name: .*$/m, 'name: refused'));
    return f;
  }

  it('a later cluster that cannot render leaves the output as it was: the earlier clusters\' temporary folders are deleted', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'stream-'));
    const out = path.join(dir, 'out');
    writeTreeAtomically(path.join(out, 'instant-cluster'), [['storage/old.yaml', 'previous\n']]);
    const before = readTreeFiles(out);
    expect(() => synth({ configs: [REFERENCE_FILE, training, refusedAtRender(dir)], out, schemas: false })).toThrow(/refused: cannot render/);
    expect(readTreeFiles(out)).toEqual(before);
    expect(readdirSync(out)).toEqual(['instant-cluster']);
  });

  it('an output folder that did not exist is not left behind by a failed render', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'stream-'));
    const out = path.join(dir, 'new', 'out');
    expect(() => synth({ configs: [REFERENCE_FILE, refusedAtRender(dir)], out, schemas: false })).toThrow(InputError);
    expect(existsSync(path.join(dir, 'new'))).toBe(false);
  });

  it('reports each cluster as it is done, and keeps counts only', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'stream-'));
    const seen: string[] = [];
    const r = synth({ configs: [REFERENCE_FILE, training], out, schemas: false, progress: (p) => seen.push(`${p.done}/${p.total} ${p.cluster}`) });
    expect(seen).toEqual(['1/2 instant-cluster', '2/2 training-cluster']);
    expect(r.clusters.map((c) => c.name)).toEqual(['instant-cluster', 'training-cluster']);
    expect(r.clusters[0].objects).toBe(r.clusters[0].folders.reduce((n, f) => n + Object.values(f.kinds).reduce((a, b) => a + b, 0), 0));
    expect(r.changed).toEqual(['instant-cluster', 'training-cluster']);
    // both folders are new; rendered again with one description changed, that one is replaced, the other kept
    expect(r.created).toEqual(['instant-cluster', 'training-cluster']);
    const changed = path.join(mkdtempSync(path.join(tmpdir(), 'stream-config-')), 'training-cluster.yaml');
    writeFileSync(changed, readFileSync(training, 'utf8').replace(/^(\s*gpus:\s*)(\d+)/m, (_m, key: string, n: string) => `${key}${Number(n) - 1}`));
    const again = synth({ configs: [REFERENCE_FILE, changed], out, schemas: false });
    expect([again.changed, again.created]).toEqual([['training-cluster'], []]);
  });

  it('checks where it writes in linear time: one real path per target and per description (was one per pair)', () => {
    const n = 500;
    const root = mkdtempSync(path.join(tmpdir(), 'targets-'));
    const targets = Array.from({ length: n }, (_, i) => path.join(root, 'out', `cluster-${i}`));
    const configs = Array.from({ length: n }, (_, i) => path.join(root, 'descriptions', `cluster-${i}.yaml`));
    let calls = 0;
    const counted = (p: string) => {
      calls += 1;
      return path.resolve(p);
    };
    checkTargets(targets, configs, counted);
    expect(calls).toBe(2 * n + 1);
    // and it still refuses a description inside a folder it replaces, and the current directory
    expect(() => checkTargets(targets, [...configs, path.join(targets[42], 'mine.yaml')], counted)).toThrow(/mine\.yaml: the description lies inside .*cluster-42, which synth replaces/);
    expect(() => checkTargets([path.dirname(process.cwd())], [], counted)).toThrow(/contains the current directory/);
  });
});

describe('atomic write', () => {
  it('keeps the previous tree byte-identical when writing fails halfway', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'atomic-'));
    const target = path.join(root, 'dist');
    writeTreeAtomically(target, [['a/one.yaml', '1\n'], ['a/two.yaml', '2\n']]);
    function* failing(): Generator<readonly [string, string]> {
      yield ['a/one.yaml', 'changed\n'];
      throw new Error('render failed halfway');
    }
    expect(() => writeTreeAtomically(target, failing())).toThrow('render failed halfway');
    expect(readTreeFiles(target)).toEqual(new Map([['a/one.yaml', '1\n'], ['a/two.yaml', '2\n']]));
    expect(readdirSync(root)).toEqual(['dist']);
  });

  it('replaces the tree exactly (stale files disappear)', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'atomic-'));
    const target = path.join(root, 'dist');
    writeTreeAtomically(target, [['a/one.yaml', '1\n'], ['b/stale.yaml', 'x\n']]);
    writeTreeAtomically(target, [['a/one.yaml', '2\n']]);
    expect(readTreeFiles(target)).toEqual(new Map([['a/one.yaml', '2\n']]));
  });

  it('refuses paths outside the output', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'atomic-'));
    expect(() => writeTreeAtomically(path.join(root, 'dist'), [['../escape.yaml', 'x']])).toThrow(/outside/);
    expect(readdirSync(root)).toEqual([]);
  });
});
