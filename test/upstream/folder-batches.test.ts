import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Engine, Engines, resolveEngines } from '../../src/engines';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest, objectId } from '../../src/render/manifest';
import { manifestFiles, readManifestFile } from '../../src/render/tree';
import { ApplicationSource, parseOutput, renderApplications } from '../../src/upstream';
import { BATCH_OBJECTS, planFolder } from '../../src/upstream/folder-batches';
import { RenderSession } from '../../src/upstream/render-session';
import { HAS_UPSTREAM } from '../helpers';

/*
 * A large folder of the tree is built by kustomize in parts (each part a copy of some of its files), several
 * small folders together; whatever the sharing, each folder's objects are those of its own build, and what
 * kustomize refuses of the whole folder is refused. In-process, with the real engines.
 */

const work = mkdtempSync(path.join(tmpdir(), 'folder-batches-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let engines: Engines;
beforeAll(async () => {
  engines = await resolveEngines();
});

/** Engines whose runs are counted (the real ones underneath). */
function counted(e: Engines): { engines: Engines; runs: string[] } {
  const runs: string[] = [];
  const wrap = (x: Engine): Engine => ({ ...x, run: (args, opts) => { runs.push(`${x.name} ${opts?.label ?? args[0]}`); return x.run(args, opts); } });
  return { engines: { ...e, helm: wrap(e.helm), kustomize: wrap(e.kustomize) }, runs };
}

/** A folder as synth writes one: one object per file, a kustomization listing them (`extra`: more of its fields). */
function folder(name: string, objects: readonly Manifest[], extra: Record<string, unknown> = {}): string {
  const dir = path.join(work, name);
  mkdirSync(dir, { recursive: true });
  const files = objects.map((o, i) => {
    const file = `${String(i).padStart(4, '0')}.${o.kind.toLowerCase()}.${o.metadata.name}.yaml`;
    writeFileSync(path.join(dir, file), stringify(o));
    return file;
  });
  writeFileSync(path.join(dir, 'kustomization.yaml'), stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: files, ...extra }));
  return dir;
}

/** Objects of many tenants: names repeat in every namespace, as a tenant folder's do. */
function tenantObjects(tenants: number): Manifest[] {
  return Array.from({ length: tenants }, (_, i) => {
    const ns = `team-${i}`;
    return [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'tenant', namespace: ns }, rules: [] },
      { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny', namespace: ns }, spec: { podSelector: {} } },
      { apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'LocalQueue', metadata: { name: ns, namespace: ns }, spec: { clusterQueue: ns } },
    ] as Manifest[];
  }).flat();
}

const application = (name: string, source: ApplicationSource, namespace = name): Manifest => ({
  apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: 'argocd' }, spec: { destination: { namespace }, source },
});
const folderApp = (dir: string) => application(path.basename(dir), { repoURL: 'https://git.example.com/x.git', path: `dist/x/${path.basename(dir)}` });
const ids = (objects: readonly Manifest[]) => objects.map(objectId).sort();
const byId = (objects: readonly Manifest[]) => [...objects].sort((a, b) => (objectId(a) < objectId(b) ? -1 : 1));
const readFiles = (dir: string) => new Map(manifestFiles(dir).map((f) => [path.basename(f), readManifestFile(f)]));

/** The folder's own build: kustomize over the folder itself, as Argo CD runs it. */
async function ownBuild(dir: string): Promise<Manifest[]> {
  return [...parseOutput(await engines.kustomize.run(['--', dir]), dir).objects];
}

describe('planning the kustomize runs of a folder', () => {
  it('a folder of at most BATCH_OBJECTS objects, or one whose kustomization does more than list its files, is built whole', () => {
    const small = folder('plan-small', tenantObjects(10));
    expect(planFolder(small, readFiles(small)).kind).toBe('whole');
    const prefixed = folder('plan-prefixed', tenantObjects(100), { namePrefix: 'x-' });
    expect(planFolder(prefixed, readFiles(prefixed)).kind).toBe('whole');
    const linked = folder('plan-linked', tenantObjects(100));
    const [first] = manifestFiles(linked);
    rmSync(first);
    symlinkSync(manifestFiles(small)[0], first);
    expect(planFolder(linked, readFiles(linked)).kind).toBe('whole');
  });

  it('parts of about BATCH_OBJECTS objects; objects kustomize could take for one another are in the same part', () => {
    const objects = tenantObjects(200);
    // a cluster-scoped kind of the same name in two namespaces: the same resource for kustomize
    objects.push({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'shared', namespace: 'a' } } as Manifest);
    objects.unshift({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'shared', namespace: 'b' } } as Manifest);
    const dir = folder('plan-big', objects);
    const plan = planFolder(dir, readFiles(dir));
    if (plan.kind !== 'parts') throw new Error('expected parts');
    expect(plan.parts.reduce((n, p) => n + p.objects, 0)).toBe(objects.length);
    expect(plan.parts.length).toBeGreaterThanOrEqual(Math.ceil(objects.length / BATCH_OBJECTS));
    for (const p of plan.parts.slice(0, -1)) expect(p.objects).toBeLessThanOrEqual(BATCH_OBJECTS);
    const partOf = (name: string) => plan.parts.findIndex((p) => p.files.some((f) => f.name.includes(`.persistentvolume.${name}.`)));
    const withShared = plan.parts.filter((p) => p.files.some((f) => f.name.includes('.persistentvolume.shared.')));
    expect(withShared).toHaveLength(1);
    expect(partOf('shared')).toBeGreaterThanOrEqual(0);
  });
});

describe('building a large folder in parts', () => {
  it('gives exactly the objects of the folder\'s own build, in a few runs instead of one quadratic one', async () => {
    const dir = folder('big', tenantObjects(150));
    const c = counted(engines);
    const [r] = await renderApplications([folderApp(dir)], { engines: c.engines, cacheDir: path.join(work, 'cache-big'), folderOf: () => dir });
    expect(r.problem).toBeUndefined();
    expect(c.runs.length).toBe(Math.ceil(600 / BATCH_OBJECTS));
    expect(byId(r.objects)).toEqual(byId(await ownBuild(dir)));
  });

  it('a resource that two files of the folder hold is refused as the folder\'s own build refuses it', async () => {
    const objects = tenantObjects(150);
    objects.push({ ...objects[5], data: { again: 'yes' } } as Manifest);
    const dir = folder('duplicate', objects);
    await expect(ownBuild(dir)).rejects.toThrow(/already registered id/);
    const [r] = await renderApplications([folderApp(dir)], { engines, cacheDir: path.join(work, 'cache-dup'), folderOf: () => dir });
    expect(r.problem).toEqual({ kind: 'failed', message: expect.stringMatching(/already registered id/) });
  });

  it('small folders share one run; each folder\'s objects are its own build\'s', async () => {
    const dirs = ['a', 'b', 'c'].map((n, i) => folder(`small-${n}`, tenantObjects(5).map((o) => ({ ...o, metadata: { ...o.metadata, name: `${n}-${o.metadata.name}` } })).slice(i)));
    const c = counted(engines);
    const rendered = await renderApplications(dirs.map(folderApp), { engines: c.engines, cacheDir: path.join(work, 'cache-small'), folderOf: (s) => dirs.find((d) => s.path!.endsWith(path.basename(d)))! });
    expect(c.runs).toEqual(['kustomize kubectl kustomize (every folder)']);
    for (const [i, d] of dirs.entries()) expect(ids(rendered[i].objects)).toEqual(ids(await ownBuild(d)));
  });
});

describe.skipIf(!HAS_UPSTREAM)('one render per distinct input per run', () => {
  // the Applications of two clusters: the same chart, version, values, release name and namespace
  const chartApp = (name: string) => application(name, { chart: 'network-operator', targetRevision: '26.4.1', helm: { releaseName: 'network-operator' } }, 'nvidia-network-operator');

  it('clusters that ask for the same chart at the same time share one helm run; a fresh render runs it again', async () => {
    const c = counted(engines);
    const session = new RenderSession(undefined);
    const ctx = { upstream: DEFAULT_UPSTREAM, engines: c.engines, session, kubeVersion: 'v1.31.0' };
    const [one, two] = await Promise.all([renderApplications([chartApp('a')], ctx), renderApplications([chartApp('b')], ctx)]);
    expect(c.runs).toHaveLength(1);
    expect(one[0].objects).toEqual(two[0].objects);
    await renderApplications([chartApp('c')], ctx);
    expect(c.runs).toHaveLength(1);
    const [fresh] = await renderApplications([chartApp('d')], { ...ctx, fresh: true });
    expect(c.runs).toHaveLength(2);
    expect(fresh.objects).toEqual(one[0].objects);
  });
});
