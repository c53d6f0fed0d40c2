import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { parse as parseYaml, parseAllDocuments, stringify } from 'yaml';
import { DependencyNotVendored, locateChart, locateOverlay, refuseUnvendoredDependencies, renderableChart } from './chart';
import { ApplicationSource, chartOfSource, CrdRef, releaseOfSource, UnrenderedCrds, VendoredRelease } from './releases';
import { folderFiles, offlineKustomization, remoteResourcesOf, vendoredBases } from './remote-bases';
import { RenderCache, RenderOutput } from './render-cache';
import { treeDigest } from './tree';
import { mergeValues } from './values';
import { Engine, EngineError, Engines } from '../engines';
import { workDir } from '../engines/workspace';
import { isJsonObject } from '../json';
import { Manifest } from '../render/manifest';

type Json = Record<string, unknown>;

/** What renders an Application source: helm, kustomize of a git overlay, kustomize of a rendered folder. */
export type SourceType = 'helm' | 'kustomize' | 'folder';

/** What one Application source makes Argo CD apply, as the engines render it. */
export interface RenderedSource {
  readonly application: Manifest;
  /** Position of the source in the Application (0 for `spec.source`). */
  readonly index: number;
  readonly type: SourceType;
  /** `chart gpu-operator v26.7.0`, `kubeflow/mpi-operator manifests/overlays/standalone v0.8.2`, `folder dist/x/storage`. */
  readonly what: string;
  /** The registered release it installs, if any. */
  readonly release?: VendoredRelease;
  /** The namespace Argo CD gives namespaced objects that name none. */
  readonly namespace: string;
  readonly objects: readonly Manifest[];
  /** CRDs the install creates that the render does not show (crds/ not vendored, or applied by the operator). */
  readonly unrenderedCrds: readonly (CrdRef & { readonly from: UnrenderedCrds['from'] })[];
  /**
   * Why there are no objects: `unreleased` (no vendored release of that version; the message says so whole),
   * `failed` (the engine or the chart refused; the message says why), `no-upstream` (no upstream folder).
   */
  readonly problem?: { readonly kind: 'unreleased' | 'failed' | 'no-upstream'; readonly message: string };
}

/** What the engines render for one cluster. */
export interface ClusterRenders {
  readonly engines: Engines;
  /** The upstream installs folder the charts and overlays were read from (undefined: there is none). */
  readonly upstream?: string;
  /** Every source of every Application of the cluster. */
  readonly sources: readonly RenderedSource[];
  /**
   * The pinned charts whose custom resources the tree renders itself (the GPU Operator's ClusterPolicy, the
   * Network Operator's NicClusterPolicy), rendered with their default values: the release's own images.
   */
  readonly defaults: readonly RenderedSource[];
  /**
   * Every Helm source rendered a second time with the same values, by a fresh engine run (never from the cache): a
   * render that differs from the first is not deterministic (random values, time, lookup fallbacks).
   */
  readonly reruns?: readonly RenderedSource[];
}

export interface RenderContext {
  /** The upstream installs folder; undefined or missing: Helm and git sources are not rendered. */
  readonly upstream?: string;
  readonly engines: Engines;
  /** Cache folder for renders and prepared charts (undefined: none). */
  readonly cacheDir?: string;
  /** `--kube-version` for Helm (`v1.31.0`): the cluster's Kubernetes version. */
  readonly kubeVersion?: string;
  /** `--api-versions` for Helm: API versions the cluster serves besides the built-in ones. */
  readonly apiVersions?: readonly string[];
  /**
   * The folder on disk a source of the cluster's own repository reads; null for such a source whose folder is
   * not on disk (a tree checked in memory: not rendered); undefined for any other source.
   */
  readonly folderOf?: (source: ApplicationSource) => string | null | undefined;
  /**
   * Run every engine, whatever the render cache holds (and leave the cache as it is): a second render that must not
   * be the first one read back.
   */
  readonly fresh?: boolean;
}

/** Helm hook types Argo CD never runs (Helm tests): those objects are not applied. */
const TEST_HOOKS = new Set(['test', 'test-success', 'test-failure']);

/** The objects of an engine's YAML output (helm's test hooks dropped) and helm's template paths. */
export function parseOutput(text: string, what: string): RenderOutput {
  const out: Manifest[] = [];
  const sources = new Set<string>();
  for (const m of text.matchAll(/^# Source: (.+)$/gm)) sources.add(m[1].trim());
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new EngineError(`the output is not YAML: ${doc.errors[0].message.split('\n')[0]}`, what);
    const m = doc.toJS({ maxAliasCount: 1000 }) as unknown;
    if (!isJsonObject(m)) continue;
    if (typeof m.kind !== 'string' || typeof m.apiVersion !== 'string') continue;
    const hook = (isJsonObject(m.metadata) && isJsonObject(m.metadata.annotations) ? m.metadata.annotations['helm.sh/hook'] : undefined) as string | undefined;
    if (typeof hook === 'string' && hook.split(',').every((h) => TEST_HOOKS.has(h.trim()))) continue;
    out.push(m as unknown as Manifest);
  }
  return { objects: out, sources: [...sources].sort() };
}

function sourcesOf(app: Manifest): ApplicationSource[] {
  const spec = (app.spec ?? {}) as { source?: ApplicationSource; sources?: ApplicationSource[] };
  return [...(spec.source ? [spec.source] : []), ...(spec.sources ?? [])];
}

function destinationNamespace(app: Manifest): string {
  return ((app.spec as { destination?: { namespace?: string } } | undefined)?.destination?.namespace) ?? '';
}

/** Runs `fn` over `items`, at most `limit` at a time, results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Runs an engine, or reads its earlier output from the cache. */
async function cachedRun(ctx: Context, key: readonly unknown[], engine: Engine, what: string, run: () => Promise<string>): Promise<RenderOutput> {
  const k = ctx.cache.key([engine.name, engine.version, ...key]);
  // A fresh render (the determinism rule's second one) runs the engine whatever the cache holds, and keeps the entry.
  const hit = ctx.fresh ? undefined : ctx.cache.get(k);
  if (hit) return hit;
  const output = parseOutput(await run(), what);
  if (!ctx.fresh) ctx.cache.put(k, output);
  return output;
}

interface Context extends RenderContext {
  readonly cache: RenderCache;
}

/** A temporary folder for one engine run's input files, removed afterwards. */
async function withScratch<T>(ctx: Context, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(path.join(workDir(ctx.cacheDir, 'scratch'), 'run-'));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The CRDs a chart's install brings that its render lacks: those of the chart itself, and of each subchart that rendered. */
function crdsOf(release: VendoredRelease | undefined, output: RenderOutput): RenderedSource['unrenderedCrds'] {
  if (release?.type !== 'helm') return [];
  const rendered = new Set(output.objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => {
    const spec = (o.spec ?? {}) as { group?: string; names?: { kind?: string } };
    return `${spec.group}/${spec.names?.kind}`;
  }));
  // helm's `# Source: <chart>/charts/<subchart>/templates/x.yaml`: which (sub)charts rendered
  const paths = output.sources.map((s) => s.split('/').slice(1).join('/'));
  return release.unrenderedCrds
    .filter((u) => u.chartPath === '' || paths.some((p) => p.startsWith(`${u.chartPath}/`)))
    .flatMap((u) => u.crds.filter((c) => !rendered.has(`${c.group}/${c.kind}`)).map((c) => ({ ...c, from: u.from })));
}

async function renderHelm(app: Manifest, index: number, source: ApplicationSource, ctx: Context): Promise<RenderedSource> {
  const chart = chartOfSource(source)!;
  const version = source.targetRevision ?? '';
  const what = `chart ${chart} ${version}`;
  const helm = source.helm ?? {};
  const namespace = helm.namespace ?? destinationNamespace(app);
  const base = { application: app, index, type: 'helm' as const, what, release: releaseOfSource(source), namespace, objects: [], unrenderedCrds: [] };
  const root = ctx.upstream;
  if (!root) return { ...base, problem: { kind: 'no-upstream', message: `${what} is not rendered: no upstream installs folder` } };
  const located = locateChart(root, chart, version);
  if (!located) {
    return { ...base, problem: { kind: 'unreleased', message: `${what} has no vendored release in ${root}: pin a version upstream released (and vendor it there, see README)` } };
  }
  const valuesText = helm.values ?? '';
  const valuesObject = helm.valuesObject ?? {};
  try {
    const fromText = valuesText.trim() === '' ? {} : parseYaml(valuesText) as Json;
    refuseUnvendoredDependencies(located, mergeValues(fromText ?? {}, valuesObject) as Json);
  } catch (e) {
    if (e instanceof DependencyNotVendored) return { ...base, problem: { kind: 'failed', message: e.message } };
    return { ...base, problem: { kind: 'failed', message: `helm.values is not YAML: ${(e as Error).message.split('\n')[0]}` } };
  }
  const prepared = renderableChart(located, ctx.cacheDir);
  const releaseName = helm.releaseName ?? app.metadata.name;
  const kubeVersion = helm.kubeVersion ?? ctx.kubeVersion;
  const apiVersions = [...(helm.apiVersions ?? ctx.apiVersions ?? [])].sort();
  const flags = [
    '--namespace', namespace,
    ...(helm.skipCrds ? [] : ['--include-crds']),
    ...(helm.skipTests ? ['--skip-tests'] : []),
    ...(kubeVersion ? ['--kube-version', kubeVersion] : []),
    ...apiVersions.flatMap((a) => ['--api-versions', a]),
    ...(helm.parameters ?? []).flatMap((p) => [p.forceString ? '--set-string' : '--set', `${p.name}=${p.value ?? ''}`]),
  ];
  const engine = ctx.engines.helm;
  try {
    const key = [prepared.digest, releaseName, flags, helm.valueFiles ?? [], valuesText, valuesObject];
    const output = await cachedRun(ctx, key, engine, what, () => withScratch(ctx, (dir) => {
      const files: string[] = (helm.valueFiles ?? []).map((f) => path.join(prepared.dir, f));
      if (valuesText.trim() !== '') {
        files.push(path.join(dir, 'values.yaml'));
        writeFileSync(files[files.length - 1], valuesText);
      }
      // valuesObject last: it takes precedence over values (Argo CD)
      files.push(path.join(dir, 'values-object.yaml'));
      writeFileSync(files[files.length - 1], stringify(valuesObject));
      return engine.run(['template', releaseName, prepared.dir, ...flags, ...files.flatMap((f) => ['--values', f])], { label: `helm template ${chart} ${version}` });
    }));
    return { ...base, objects: output.objects, unrenderedCrds: crdsOf(base.release, output) };
  } catch (e) {
    if (e instanceof EngineError) return { ...base, problem: { kind: 'failed', message: e.reason } };
    throw e;
  }
}

/** `kustomize edit set image` forms Argo CD accepts: `name=newName:tag`, `name:tag`, `name@digest`. */
function kustomizeImage(spec: string): Json {
  const [name, replacement] = spec.includes('=') ? spec.split('=', 2) : [undefined, spec];
  const digestAt = replacement.indexOf('@');
  const ref = digestAt >= 0 ? replacement.slice(0, digestAt) : replacement;
  const colon = ref.lastIndexOf(':');
  const hasTag = colon > ref.lastIndexOf('/');
  const image = hasTag ? ref.slice(0, colon) : ref;
  return {
    name: name ?? image,
    ...(name !== undefined && image !== name ? { newName: image } : {}),
    ...(hasTag ? { newTag: ref.slice(colon + 1) } : {}),
    ...(digestAt >= 0 ? { digest: replacement.slice(digestAt + 1) } : {}),
  };
}

/**
 * The kustomization Argo CD effectively builds for a kustomize source with Application-level options: the
 * overlay as a resource, and the Application's namespace, name prefix/suffix, images, labels, annotations and
 * patches on top (a patch given by path is inlined: it lives beside the overlay).
 */
function wrapperKustomization(source: ApplicationSource, overlayRel: string, overlayDir: string): Json {
  const k = source.kustomize ?? {};
  const patches = (k.patches ?? []).map((p) => {
    if (typeof p.path === 'string' && p.patch === undefined) {
      const { path: file, ...rest } = p;
      return { ...rest, patch: readFileSync(path.join(overlayDir, file), 'utf8') };
    }
    return p;
  });
  return {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [overlayRel],
    ...(k.namespace ? { namespace: k.namespace } : {}),
    ...(k.namePrefix ? { namePrefix: k.namePrefix } : {}),
    ...(k.nameSuffix ? { nameSuffix: k.nameSuffix } : {}),
    ...(k.commonLabels ? { commonLabels: k.commonLabels } : {}),
    ...(k.commonAnnotations ? { commonAnnotations: k.commonAnnotations } : {}),
    ...(k.images && k.images.length > 0 ? { images: k.images.map(kustomizeImage) } : {}),
    ...(patches.length > 0 ? { patches } : {}),
  };
}

async function renderOverlay(app: Manifest, index: number, source: ApplicationSource, ctx: Context): Promise<RenderedSource> {
  const repo = (source.repoURL ?? '').replace(/^https:\/\/github.com\//, '').replace(/\.git$/, '');
  const overlayPath = (source.path ?? '').replace(/^\.\//, '').replace(/\/+$/, '');
  const what = `${repo}/${overlayPath} ${source.targetRevision ?? ''}`;
  const release = releaseOfSource(source);
  const base = { application: app, index, type: 'kustomize' as const, what, release, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [] };
  const root = ctx.upstream;
  if (!root) return { ...base, problem: { kind: 'no-upstream', message: `${what} is not rendered: no upstream installs folder` } };
  const dir = locateOverlay(root, source.repoURL ?? '', source.targetRevision ?? '', overlayPath, release?.type === 'kustomize' ? release : undefined);
  if (!dir) return { ...base, problem: { kind: 'unreleased', message: `${what} has no vendored release in ${root}: pin a tag upstream released (and vendor it there, see README)` } };
  // The overlay refers to its bases elsewhere in the release folder: the whole folder is the input.
  const releaseDir = path.join(root, path.relative(root, dir).split(path.sep)[0]);
  const engine = ctx.engines.kustomize;
  const key = [treeDigest(releaseDir, true), path.relative(releaseDir, dir), wrapperKustomization(source, '<overlay>', dir)];
  try {
    const { objects } = await cachedRun(ctx, key, engine, what, () => withScratch(ctx, (scratch) => {
      writeFileSync(path.join(scratch, 'kustomization.yaml'), stringify(wrapperKustomization(source, path.relative(scratch, dir), dir)));
      return engine.run([scratch], { label: `kubectl kustomize ${what}` });
    }));
    return { ...base, objects };
  } catch (e) {
    if (e instanceof EngineError) return { ...base, problem: { kind: 'failed', message: e.reason } };
    throw e;
  }
}

/** The cache key of a folder's build: its content. */
const folderKey = (dir: string) => ['folder', treeDigest(dir)];

/** kustomize's record of the file each object of a build came from (buildMetadata: originAnnotations). */
const ORIGIN = 'config.kubernetes.io/origin';

/**
 * Builds the folders not in the cache yet with one kustomize run (a kustomization that lists them all, each
 * object annotated with the file it came from), and caches each folder's objects as its own build would give
 * them: one process instead of one per folder. When that build fails (one folder that does not build, or an
 * object in two folders), nothing is cached and each folder is built on its own, which says which one fails.
 */
async function buildFoldersTogether(dirs: readonly string[], ctx: Context): Promise<void> {
  const engine = ctx.engines.kustomize;
  const keys = new Map(dirs.map((d) => [d, ctx.cache.key([engine.name, engine.version, ...folderKey(d)])]));
  const missing = dirs.filter((d) => ctx.cache.get(keys.get(d)!) === undefined);
  if (missing.length < 2) return;
  await withScratch(ctx, async (scratch) => {
    const rel = new Map(missing.map((d) => [d, path.relative(scratch, d)]));
    writeFileSync(path.join(scratch, 'kustomization.yaml'), stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: [...rel.values()], buildMetadata: ['originAnnotations'],
    }));
    let output: RenderOutput;
    try {
      output = parseOutput(await engine.run([scratch], { label: 'kubectl kustomize (every folder)' }), 'kubectl kustomize (every folder)');
    } catch (e) {
      if (e instanceof EngineError) return;
      throw e;
    }
    const byFolder = new Map<string, Manifest[]>(missing.map((d) => [d, []]));
    for (const o of output.objects) {
      const origin = o.metadata.annotations?.[ORIGIN];
      const from = typeof origin === 'string' ? /^path: (.+)$/m.exec(origin)?.[1] : undefined;
      const dir = missing.find((d) => from?.startsWith(`${rel.get(d)}/`));
      if (!dir) return; // an object of no folder: leave it to the builds of each folder
      const { [ORIGIN]: _, ...annotations } = o.metadata.annotations ?? {};
      const { annotations: __, ...metadata } = o.metadata;
      byFolder.get(dir)!.push({ ...o, metadata: Object.keys(annotations).length > 0 ? { ...metadata, annotations } : metadata });
    }
    for (const [dir, objects] of byFolder) ctx.cache.put(keys.get(dir)!, { objects, sources: [] });
  });
}

async function renderFolder(app: Manifest, index: number, source: ApplicationSource, dir: string, ctx: Context): Promise<RenderedSource> {
  const what = `folder ${source.path}`;
  const base = { application: app, index, type: 'folder' as const, what, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [] };
  const engine = ctx.engines.kustomize;
  try {
    const { objects } = await cachedRun(ctx, folderKey(dir), engine, what, () => engine.run([dir], { label: `kubectl kustomize ${source.path}` }));
    return { ...base, objects };
  } catch (e) {
    if (e instanceof EngineError) return { ...base, problem: { kind: 'failed', message: e.reason } };
    throw e;
  }
}

/**
 * A folder whose kustomization builds on remote bases (the argocd folder: Argo CD's install at its release tag), as
 * Argo CD's repo server builds it, but offline: a copy of the folder whose remote bases point at their vendored
 * copies (remote-bases.ts). What it applies is an upstream install: it is rendered as one (type `kustomize`, its
 * release the base's), so the rules check its objects as they check a managed install's. A remote base that is no
 * vendored release is not fetched: the source is `unreleased`.
 */
async function renderRemoteBased(
  app: Manifest, index: number, source: ApplicationSource, dir: string, remotes: readonly string[], ctx: Context,
): Promise<RenderedSource> {
  const base0 = { application: app, index, type: 'kustomize' as const, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [] };
  const root = ctx.upstream;
  const named = `folder ${source.path} (on ${remotes.join(', ')})`;
  if (!root) return { ...base0, what: named, problem: { kind: 'no-upstream', message: `${named} is not rendered: no upstream installs folder` } };
  const { bases, unmapped } = vendoredBases(remotes, root);
  const release = bases[0]?.release;
  const what = release ? `folder ${source.path} (on ${release.repoURL.replace(/^https:\/\/github.com\//, '').replace(/\.git$/, '')}/${release.path} ${release.version})` : named;
  const base = { ...base0, what, release };
  if (unmapped.length > 0) {
    return {
      ...base,
      problem: {
        kind: 'unreleased',
        message: `${what}: remote base ${unmapped.join(', ')} is no vendored release in ${root} (check builds offline: pin a released tag and vendor it there, see README)`,
      },
    };
  }
  const engine = ctx.engines.kustomize;
  const key = ['remote-based', treeDigest(dir), ...bases.map((b) => [treeDigest(b.releaseDir, true), path.relative(b.releaseDir, b.dir)])];
  try {
    const { objects } = await cachedRun(ctx, key, engine, what, () => withScratch(ctx, (scratch) => {
      for (const f of folderFiles(dir)) copyFileSync(path.join(dir, f), path.join(scratch, f));
      for (const f of ['kustomization.yml', 'Kustomization']) rmSync(path.join(scratch, f), { force: true });
      writeFileSync(path.join(scratch, 'kustomization.yaml'), stringify(offlineKustomization(dir, scratch, bases)));
      return engine.run([scratch], { label: `kubectl kustomize ${source.path}` });
    }));
    return { ...base, objects };
  } catch (e) {
    if (e instanceof EngineError) return { ...base, problem: { kind: 'failed', message: e.reason } };
    throw e;
  }
}

/**
 * What Argo CD renders for each source of each Application, with the engines it runs: `helm template` of the
 * vendored chart of exactly that name and version (release name, destination namespace, values, CRDs,
 * Kubernetes version), `kustomize build` of the vendored overlay with the Application's kustomize options,
 * `kustomize build` of a rendered folder. Engines run in parallel (one per core); results are cached by
 * content (RenderCache).
 */
export async function renderApplications(applications: readonly Manifest[], context: RenderContext): Promise<RenderedSource[]> {
  const ctx: Context = { ...context, cache: new RenderCache(context.cacheDir) };
  const jobs = applications.flatMap((app) => sourcesOf(app).map((source, index) => ({ app, source, index })));
  const folders = [...new Set(jobs.map((j) => (chartOfSource(j.source) === undefined ? ctx.folderOf?.(j.source) : undefined)).filter((f): f is string => typeof f === 'string'))];
  const remotes = new Map(folders.map((f) => [f, remoteResourcesOf(f)]));
  await buildFoldersTogether(folders.filter((f) => remotes.get(f)!.length === 0), ctx);
  const rendered = await mapLimit(jobs, Math.max(1, availableParallelism()), async ({ app, source, index }) => {
    if (chartOfSource(source) !== undefined) return renderHelm(app, index, source, ctx);
    const folder = ctx.folderOf?.(source);
    if (folder === null) return undefined;
    if (folder !== undefined) {
      const remote = remotes.get(folder) ?? [];
      return remote.length > 0 ? renderRemoteBased(app, index, source, folder, remote, ctx) : renderFolder(app, index, source, folder, ctx);
    }
    if (source.repoURL && source.path !== undefined) return renderOverlay(app, index, source, ctx);
    return undefined;
  });
  return rendered.filter((r): r is RenderedSource => r !== undefined);
}
