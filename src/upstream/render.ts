import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { argocdBuildEnv, hasKustomizeOptions, withArgocdOptions } from './argocd-kustomize';
import {
  apiVersionProblem, chartNameProblem, chartVersionProblem, firstProblem, folderPartProblem, kubeVersionProblem, namespaceProblem,
  parameterNameProblem, relativePathProblem, releaseNameProblem,
} from './arguments';
import { DependencyNotVendored, locateChart, locateOverlay, refuseUnvendoredDependencies, renderableChart, templateCount } from './chart';
import { batchPieces, FolderPlan, Piece, planFolder } from './folder-batches';
import { compareFolderBuild, FolderRead } from './folder-build';
import { readInside } from './inside';
import { ApplicationSource, chartOfSource, CrdRef, isHelmSource, releaseOfSource, UnrenderedCrds, VendoredRelease } from './releases';
import {
  folderFiles, offlineKustomization, parseRepositoryBase, readKustomization, remoteBase, remoteResourcesOf, VendoredCopy, vendoredBases,
  vendoredResourcesOf,
} from './remote-bases';
import { RenderOutput } from './render-cache';
import { RenderKind, RenderSession } from './render-session';
import { SourceRefused, treeDigest } from './tree';
import { mergeValues } from './values';
import { Engine, EngineBudget, EngineError, engineLimit, Engines, raiseEngineLimit, RunOptions } from '../engines';
import { workDir } from '../engines/workspace';
import { fsErrorText, isFsError, printable, stripControl } from '../errors';
import { maxBytes } from '../input/limits';
import { describeIssues, InputFileError, parseInputYaml } from '../input/read';
import { isJsonObject } from '../json';
import { MirrorMap, unmirrorUrl } from '../model/mirrors';
import { Manifest } from '../render/manifest';
import { manifestFiles, ReadFile, readManifestFile } from '../render/tree';

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
   * render that differs from the first is not deterministic (random values, time, lookup fallbacks). Undefined when
   * none were asked for (checkCluster then refuses to run render-deterministic over these renders).
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
   * not on disk (a tree checked in memory: not rendered); undefined for any other source. A folder that
   * cannot be used (a path out of the tree) is a SourceRefused, thrown, reported as that source's failed render.
   */
  readonly folderOf?: (source: ApplicationSource) => string | null | undefined;
  /**
   * The bound of all engine runs of the command together (one deadline; retries share it).
   * @default the session's, else a budget of its own (ENGINE_LIMITS.budget)
   */
  readonly budget?: EngineBudget;
  /**
   * The renders of the whole command (every cluster it checks): each distinct input rendered once per run.
   * @default a session of this call's own
   */
  readonly session?: RenderSession;
  /**
   * Render with the engines again: never from the cache or this run's first renders, and not cached; once per run
   * per distinct input (the determinism rule's second render, which must not be the first one read back).
   * @default false
   */
  readonly fresh?: boolean;
  /** The manifest files of a folder of the tree (by its real path) as the caller read them already; undefined: read here. */
  readonly folderRead?: (dir: string) => FolderRead | undefined;
  /**
   * The description's mirrors of chart and Git repositories: a source (or a remote base) read from a mirror is
   * rendered from the vendored release of the upstream repository it stands for (the mirror serves the same release).
   * @default none
   */
  readonly mirrors?: { readonly charts: MirrorMap; readonly git: MirrorMap };
}

/** Helm hook types Argo CD never runs (Helm tests): those objects are not applied. */
const TEST_HOOKS = new Set(['test', 'test-success', 'test-failure']);

/**
 * The objects of an engine's YAML output (helm's test hooks dropped) and helm's template paths, parsed by
 * the bounded reader (src/input/read.ts, kind `render`): within its nesting and alias limits (an alias
 * bomb is refused, not expanded), without duplicate keys, and at most `maxDocuments` documents.
 */
export function parseOutput(text: string, what: string, maxDocuments = engineLimit('documents')): RenderOutput {
  const out: Manifest[] = [];
  const sources = new Set<string>();
  for (const m of text.matchAll(/^# Source: (.+)$/gm)) sources.add(stripControl(m[1].trim()));
  let docs: unknown[];
  try {
    docs = parseInputYaml(what, text, 'render', true);
  } catch (e) {
    if (e instanceof InputFileError) throw new EngineError(`its output is not usable YAML: ${describeIssues(e.issues)}`, what);
    throw e;
  }
  if (docs.length > maxDocuments) throw new EngineError(`output over ${maxDocuments} YAML documents (${raiseEngineLimit('documents')})`, what);
  for (const m of docs) {
    if (!isJsonObject(m)) continue;
    if (typeof m.kind !== 'string' || typeof m.apiVersion !== 'string') continue;
    const hook = (isJsonObject(m.metadata) && isJsonObject(m.metadata.annotations) ? m.metadata.annotations['helm.sh/hook'] : undefined) as string | undefined;
    if (typeof hook === 'string' && hook.split(',').every((h) => TEST_HOOKS.has(h.trim()))) continue;
    out.push(m as unknown as Manifest);
  }
  return { objects: out, sources: [...sources].sort() };
}

function sourcesOf(app: Manifest): ApplicationSource[] {
  const spec = (isJsonObject(app.spec) ? app.spec : {}) as { source?: ApplicationSource; sources?: ApplicationSource[] };
  return [...(spec.source ? [spec.source] : []), ...(Array.isArray(spec.sources) ? spec.sources : [])];
}

function destinationNamespace(app: Manifest): string {
  const ns = ((app.spec as { destination?: { namespace?: unknown } } | undefined)?.destination?.namespace) ?? '';
  return typeof ns === 'string' ? ns : String(ns);
}

/** A field of a tree's Application as a string (a tree is not validated: a number or a mapping may stand anywhere). */
function str(value: unknown, fallback = ''): string {
  if (value === undefined || value === null) return fallback;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Why a source failed before or in its engine run, as one line; rethrows what is no failure of the source. */
function failure(e: unknown): string {
  if (e instanceof EngineError) return e.reason;
  if (e instanceof SourceRefused || e instanceof DependencyNotVendored) return e.message;
  if (e instanceof InputFileError) return e.message;
  if (isFsError(e)) return fsErrorText(e);
  throw e;
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

/**
 * Runs an engine, or takes its output from this run's earlier render of the same input or from the cache
 * (RenderSession); `fresh`: runs it again, once per run (RenderSession.rerun). `keep`: the output stays in the run's memory (charts and overlays).
 */
async function cachedRun(
  ctx: Context, kind: RenderKind, key: readonly unknown[], engine: Engine, what: string, run: () => Promise<string>, keep = true,
): Promise<RenderOutput> {
  const k = ctx.session.cache.key([engine.name, engine.version, ...key]);
  if (ctx.fresh) return ctx.session.rerun(k, kind, async () => parseOutput(await run(), what));
  return ctx.session.render(k, kind, async () => parseOutput(await run(), what), keep);
}

interface Context extends RenderContext {
  readonly session: RenderSession;
  readonly budget: EngineBudget;
  /** Folders whose combined build was stopped by a bound: not built again one by one (the bound would only be spent again). */
  readonly folderFailures: Map<string, string>;
  /** The builds of this call's folders that buildFolders made or found, by folder. */
  readonly built: Map<string, RenderOutput>;
  /** Each folder's files as read (once per call), and its cache key. */
  readonly folders: Map<string, { read?: FolderRead; key?: readonly unknown[]; plan?: FolderPlan }>;
}

/** How every engine run of a render is bounded: the command's budget, the documents it may print. */
function runOptions(ctx: Context, label: string): RunOptions {
  return { label, budget: ctx.budget, maxDocuments: engineLimit('documents') };
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

/** The text of `helm.values` as values (the bounded reader's limits); SourceRefused when it is no YAML mapping. */
function valuesOfText(valuesText: string): Json {
  if (Buffer.byteLength(valuesText) > maxBytes('chart')) throw new SourceRefused(`helm.values is larger than ${maxBytes('chart') / 1024 / 1024} MiB`);
  if (valuesText.trim() === '') return {};
  let doc: unknown;
  try {
    [doc] = parseInputYaml('helm.values', valuesText, 'chart', false);
  } catch (e) {
    if (e instanceof InputFileError) throw new SourceRefused(`helm.values is not YAML: ${describeIssues(e.issues)}`);
    throw e;
  }
  if (doc === null || doc === undefined) return {};
  if (!isJsonObject(doc)) throw new SourceRefused('helm.values is not a YAML mapping');
  return doc;
}

async function renderHelm(app: Manifest, index: number, source: ApplicationSource, ctx: Context): Promise<RenderedSource> {
  const chart = str(chartOfSource(source));
  const version = str(source.targetRevision);
  const what = printable(`chart ${chart} ${version}`);
  const helm = (isJsonObject(source.helm) ? source.helm : {}) as NonNullable<ApplicationSource['helm']>;
  const namespace = helm.namespace !== undefined ? str(helm.namespace) : destinationNamespace(app);
  const base = { application: app, index, type: 'helm' as const, what, release: releaseOfSource(source), namespace, objects: [], unrenderedCrds: [] };
  const refused = (message: string): RenderedSource => ({ ...base, problem: { kind: 'failed', message } });
  const releaseName = helm.releaseName !== undefined ? str(helm.releaseName) : str(app.metadata?.name);
  const kubeVersion = helm.kubeVersion !== undefined ? str(helm.kubeVersion) : ctx.kubeVersion;
  const apiVersions = [...(Array.isArray(helm.apiVersions) ? helm.apiVersions : ctx.apiVersions ?? [])].map((a) => str(a)).sort();
  const valueFiles = Array.isArray(helm.valueFiles) ? helm.valueFiles.map((f) => str(f)) : [];
  const parameters = Array.isArray(helm.parameters) ? helm.parameters.filter(isJsonObject) : [];
  const syntax = firstProblem(
    chartNameProblem(chart), chartVersionProblem(version), releaseNameProblem(releaseName),
    namespaceProblem(namespace, helm.namespace !== undefined ? 'helm.namespace' : 'spec.destination.namespace'),
    kubeVersion === undefined ? undefined : kubeVersionProblem(kubeVersion),
    ...apiVersions.map(apiVersionProblem),
    ...valueFiles.map((f) => relativePathProblem(f, 'helm.valueFiles entry')),
    ...parameters.map((p) => parameterNameProblem(str(p.name))),
    helm.values !== undefined && typeof helm.values !== 'string' ? 'helm.values is not a string (YAML text; valuesObject takes a mapping)' : undefined,
    helm.valuesObject !== undefined && !isJsonObject(helm.valuesObject) ? 'helm.valuesObject is not a mapping' : undefined,
  );
  if (syntax) return refused(syntax);
  const root = ctx.upstream;
  if (!root) return { ...base, problem: { kind: 'no-upstream', message: `${what} is not rendered: no upstream installs folder` } };
  const valuesText = helm.values ?? '';
  const valuesObject = helm.valuesObject ?? {};
  try {
    const located = locateChart(root, chart, version);
    if (!located) {
      return { ...base, problem: { kind: 'unreleased', message: `${what} has no vendored release in ${root}: pin a version upstream released (and vendor it there, see docs/upstream-installs.md)` } };
    }
    refuseUnvendoredDependencies(located, mergeValues(valuesOfText(valuesText), valuesObject) as Json);
    const prepared = ctx.session.chart(located.dir, () => renderableChart(located, ctx.cacheDir));
    // The values files the Application names, read now, inside the chart (an Argo CD Helm source reads them from the chart's folder)
    const named = valueFiles.map((f) => ({ name: f, content: readInside(prepared.dir, f, 'helm.valueFiles entry') }));
    const flags = [
      `--namespace=${namespace}`,
      ...(helm.skipCrds === true ? [] : ['--include-crds']),
      ...(helm.skipTests === true ? ['--skip-tests'] : []),
      ...(kubeVersion ? [`--kube-version=${kubeVersion}`] : []),
      ...apiVersions.map((a) => `--api-versions=${a}`),
      ...parameters.map((p) => `${p.forceString === true ? '--set-string' : '--set'}=${str(p.name)}=${str(p.value)}`),
    ];
    const engine = ctx.engines.helm;
    const key = [prepared.digest, releaseName, flags, named, valuesText, valuesObject];
    const output = await cachedRun(ctx, 'chart', key, engine, what, () => withScratch(ctx, (dir) => {
      const files = named.map((f, i) => {
        const file = path.join(dir, `value-file-${i}.yaml`);
        writeFileSync(file, f.content);
        return file;
      });
      if (valuesText.trim() !== '') {
        files.push(path.join(dir, 'values.yaml'));
        writeFileSync(files[files.length - 1], valuesText);
      }
      // valuesObject last: it takes precedence over values (Argo CD)
      files.push(path.join(dir, 'values-object.yaml'));
      writeFileSync(files[files.length - 1], stringify(valuesObject));
      // the release name and the chart after `--`: never read as flags
      const args = ['template', ...flags, ...files.map((f) => `--values=${f}`), '--', releaseName, prepared.dir];
      return engine.run(args, runOptions(ctx, `helm template ${what.replace(/^chart /, '')}`));
    }));
    if (output.objects.length === 0) {
      const templates = templateCount(prepared.dir);
      if (templates > 0) return refused(`helm template rendered no object, though the chart has ${templates} template file(s): an empty render installs nothing`);
    }
    return { ...base, objects: output.objects, unrenderedCrds: crdsOf(base.release, output) };
  } catch (e) {
    return refused(failure(e));
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
 * patches on top (a patch given by path is inlined: it lives in the overlay, and is read there by the bounded
 * reader). SourceRefused when an option has the wrong shape or a patch path leads out of the overlay.
 */
function wrapperKustomization(source: ApplicationSource, overlayRel: string, overlayDir: string): Json {
  const k = (isJsonObject(source.kustomize) ? source.kustomize : {}) as NonNullable<ApplicationSource['kustomize']>;
  const list = <T>(v: unknown, field: string, ok: (x: unknown) => x is T): T[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every(ok)) throw new SourceRefused(`kustomize.${field} is not a list of ${field === 'images' ? 'strings' : 'mappings'}`);
    return v;
  };
  const mapping = (v: unknown, field: string) => {
    if (v !== undefined && !isJsonObject(v)) throw new SourceRefused(`kustomize.${field} is not a mapping`);
    return v;
  };
  const images = list(k.images, 'images', (x): x is string => typeof x === 'string');
  const patches = list(k.patches, 'patches', isJsonObject).map((p) => {
    if (p.path !== undefined && p.patch === undefined) {
      const { path: file, ...rest } = p;
      return { ...rest, patch: readInside(overlayDir, str(file), 'kustomize.patches path') };
    }
    return p;
  });
  const labels = mapping(k.commonLabels, 'commonLabels');
  const annotations = mapping(k.commonAnnotations, 'commonAnnotations');
  return {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [overlayRel],
    ...(k.namespace ? { namespace: str(k.namespace) } : {}),
    ...(k.namePrefix ? { namePrefix: str(k.namePrefix) } : {}),
    ...(k.nameSuffix ? { nameSuffix: str(k.nameSuffix) } : {}),
    ...(labels ? { commonLabels: labels } : {}),
    ...(annotations ? { commonAnnotations: annotations } : {}),
    ...(images.length > 0 ? { images: images.map(kustomizeImage) } : {}),
    ...(patches.length > 0 ? { patches } : {}),
  };
}

async function renderOverlay(app: Manifest, index: number, source: ApplicationSource, ctx: Context): Promise<RenderedSource> {
  const repoURL = str(source.repoURL);
  const revision = str(source.targetRevision);
  const repo = repoURL.replace(/^https:\/\/github.com\//, '').replace(/\.git$/, '');
  const overlayPath = str(source.path).replace(/^\.\//, '').replace(/\/+$/, '');
  const what = printable(`${repo}/${overlayPath} ${revision}`);
  const release = releaseOfSource(source);
  const base = { application: app, index, type: 'kustomize' as const, what, release, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [] };
  const refused = (message: string): RenderedSource => ({ ...base, problem: { kind: 'failed', message } });
  const repoName = repoURL.replace(/\.git$/, '').replace(/\/+$/, '').split('/').pop() ?? '';
  const syntax = firstProblem(
    folderPartProblem(repoName, 'repoURL'), folderPartProblem(revision, 'targetRevision'),
    overlayPath === '' ? undefined : relativePathProblem(overlayPath, 'path'),
  );
  if (syntax) return refused(syntax);
  const root = ctx.upstream;
  if (!root) return { ...base, problem: { kind: 'no-upstream', message: `${what} is not rendered: no upstream installs folder` } };
  try {
    const dir = locateOverlay(root, repoURL, revision, overlayPath, release?.type === 'kustomize' ? release : undefined);
    if (!dir) return { ...base, problem: { kind: 'unreleased', message: `${what} has no vendored release in ${root}: pin a tag upstream released (and vendor it there, see docs/upstream-installs.md)` } };
    // The overlay refers to its bases elsewhere in the release folder: the whole folder is the input.
    const releaseDir = path.join(root, path.relative(root, dir).split(path.sep)[0]);
    const engine = ctx.engines.kustomize;
    const key = [treeDigest(releaseDir, true), path.relative(releaseDir, dir), wrapperKustomization(source, '<overlay>', dir)];
    const { objects } = await cachedRun(ctx, 'overlay', key, engine, what, () => withScratch(ctx, (scratch) => {
      writeFileSync(path.join(scratch, 'kustomization.yaml'), stringify(wrapperKustomization(source, path.relative(scratch, dir), dir)));
      return engine.run(['--', scratch], runOptions(ctx, `kubectl kustomize ${what}`));
    }));
    if (objects.length === 0) return refused('kustomize build rendered no object: an empty overlay installs nothing');
    return { ...base, objects };
  } catch (e) {
    return refused(failure(e));
  }
}

/** A folder's manifest files as read (the caller's reading, else read here once), undefined when they cannot be read (renderFolder says why). */
function folderRead(ctx: Context, dir: string): FolderRead | undefined {
  const entry = ctx.folders.get(dir) ?? {};
  ctx.folders.set(dir, entry);
  if (!('read' in entry)) {
    try {
      entry.read = ctx.folderRead?.(dir) ?? { base: dir, files: manifestFiles(dir).map(readManifestFile) };
    } catch {
      entry.read = undefined;
    }
  }
  return entry.read;
}

/** The files of a reading by path relative to its folder. */
function filesByPath(read: FolderRead): Map<string, ReadFile> {
  return new Map(read.files.map((f) => [path.relative(read.base, f.file).split(path.sep).join('/'), f]));
}

/** The cache key of a folder's build: its content (the bytes read of its manifest files, the others read here). */
function folderKey(ctx: Context, dir: string): readonly unknown[] {
  const read = folderRead(ctx, dir);
  const entry = ctx.folders.get(dir)!;
  entry.key ??= ['folder', treeDigest(dir, false, read && new Map([...filesByPath(read)].map(([rel, f]) => [rel, f.bytes])))];
  return entry.key;
}

/** kustomize's record of the file each object of a build came from (buildMetadata: originAnnotations). */
const ORIGIN = 'config.kubernetes.io/origin';

/** An object of a combined build without the origin annotation the build added. */
function withoutOrigin(o: Manifest): Manifest {
  const { [ORIGIN]: _, ...annotations } = o.metadata.annotations ?? {};
  const { annotations: __, ...metadata } = o.metadata;
  return { ...o, metadata: Object.keys(annotations).length > 0 ? { ...metadata, annotations } : metadata };
}

/**
 * One kustomize run over `pieces` (folders whole, parts of folders as copies of their files in the scratch
 * folder), each object given back to its piece by the file it came from; undefined when the engine refused the
 * build or an object came from no piece (each folder is then built on its own). A run stopped by a bound fails
 * every folder in it with that reason.
 */
async function buildPieces(pieces: readonly Piece[], label: string, ctx: Context): Promise<Map<Piece, Manifest[]> | undefined> {
  const engine = ctx.engines.kustomize;
  return withScratch(ctx, async (scratch) => {
    const rel = new Map<Piece, string>();
    pieces.forEach((p, i) => {
      if (!p.part) {
        rel.set(p, path.relative(scratch, p.dir));
        return;
      }
      const plan = ctx.folders.get(p.dir)?.plan;
      const dir = path.join(scratch, `part-${i}`);
      mkdirSync(dir);
      for (const f of p.part.files) writeFileSync(path.join(dir, f.name), f.bytes);
      writeFileSync(path.join(dir, 'kustomization.yaml'), stringify({ ...(plan?.kind === 'parts' ? plan.header : {}), resources: p.part.files.map((f) => f.name) }));
      rel.set(p, `part-${i}`);
    });
    writeFileSync(path.join(scratch, 'kustomization.yaml'), stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: [...rel.values()], buildMetadata: ['originAnnotations'],
    }));
    let output: RenderOutput;
    ctx.session.ran('folder');
    try {
      output = parseOutput(await engine.run(['--', scratch], runOptions(ctx, label)), label);
    } catch (e) {
      if (e instanceof EngineError && e.bounded) for (const p of pieces) ctx.folderFailures.set(p.dir, `${label}: ${e.reason}`);
      if (e instanceof EngineError) return undefined;
      throw e;
    }
    const byPiece = new Map<Piece, Manifest[]>(pieces.map((p) => [p, []]));
    for (const o of output.objects) {
      const origin = o.metadata?.annotations?.[ORIGIN];
      const from = typeof origin === 'string' ? /^path: (.+)$/m.exec(origin)?.[1] : undefined;
      const piece = pieces.find((p) => from?.startsWith(`${rel.get(p)}/`));
      if (!piece) return undefined; // an object of no piece: leave it to the builds of each folder
      byPiece.get(piece)!.push(withoutOrigin(o));
    }
    return byPiece;
  });
}

/**
 * Builds the folders not in the cache yet with as few kustomize runs as their sizes allow (folder-batches.ts: about
 * BATCH_OBJECTS objects a run, several folders together, a large folder in parts, each object annotated with the
 * file it came from), and caches each folder's objects as its own build would give them. When the engine refuses
 * a run (one folder that does not build, or an object in two folders), nothing of it is cached and each of its
 * folders is built on its own and whole, which says which one fails; those builds share the command's budget.
 * When a bound stopped a run (time, output), every folder in it fails with that reason: building each again would
 * only spend the bound again.
 */
async function buildFolders(dirs: readonly string[], ctx: Context): Promise<void> {
  const engine = ctx.engines.kustomize;
  const keys = new Map<string, string>();
  for (const d of dirs) {
    try {
      keys.set(d, ctx.session.cache.key([engine.name, engine.version, ...folderKey(ctx, d)]));
    } catch (e) {
      ctx.folderFailures.set(d, failure(e));
    }
  }
  const missing: string[] = [];
  for (const [d, k] of keys) {
    const hit = ctx.fresh ? undefined : ctx.session.known(k, 'folder');
    if (hit) ctx.built.set(d, hit);
    else missing.push(d);
  }
  const plans = missing.flatMap((dir) => {
    const read = folderRead(ctx, dir);
    if (!read) return [];
    const plan = planFolder(dir, filesByPath(read));
    ctx.folders.get(dir)!.plan = plan;
    return [{ dir, plan }];
  });
  // a large folder's parts never share a run with another folder: a refused run then concerns that folder alone
  const batches = [
    ...batchPieces(plans.filter((p) => p.plan.kind === 'whole')),
    ...plans.filter((p) => p.plan.kind === 'parts').flatMap((p) => batchPieces([p])),
  ].filter((b) => b.length > 1 || b[0].part !== undefined); // a folder alone is built by renderFolder, as its own build
  if (batches.length === 0) return;
  const results = await Promise.all(batches.map((b, i) => buildPieces(b, batches.length === 1 ? 'kubectl kustomize (every folder)' : `kubectl kustomize (folders, run ${i + 1} of ${batches.length})`, ctx)));
  const parts = new Map<string, { pieces: number; objects: Manifest[][] }>();
  batches.forEach((b, i) => {
    for (const p of b) {
      const entry = parts.get(p.dir) ?? { pieces: 0, objects: [] };
      entry.pieces += 1;
      const got = results[i]?.get(p);
      if (got) entry.objects.push(got);
      parts.set(p.dir, entry);
    }
  });
  for (const [dir, { pieces, objects }] of parts) {
    if (objects.length !== pieces || ctx.folderFailures.has(dir)) continue;
    const output = { objects: objects.flat(), sources: [] };
    ctx.built.set(dir, output);
    if (!ctx.fresh) ctx.session.put(keys.get(dir)!, output);
  }
}

async function renderFolder(app: Manifest, index: number, source: ApplicationSource, dir: string, ctx: Context): Promise<RenderedSource> {
  const what = printable(`folder ${str(source.path)}`);
  const base = { application: app, index, type: 'folder' as const, what, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [] };
  const refused = (message: string): RenderedSource => ({ ...base, problem: { kind: 'failed', message } });
  const known = ctx.folderFailures.get(dir);
  if (known) return refused(known);
  const engine = ctx.engines.kustomize;
  try {
    const { objects } = ctx.built.get(dir)
      ?? await cachedRun(ctx, 'folder', folderKey(ctx, dir), engine, what, () => engine.run(['--', dir], runOptions(ctx, `kubectl kustomize ${printable(str(source.path))}`)), false);
    // what Argo CD applies of the folder is the build: it must be every object of the folder's files
    const differs = compareFolderBuild(dir, objects, folderRead(ctx, dir));
    return differs ? { ...refused(differs), objects } : { ...base, objects };
  } catch (e) {
    return refused(failure(e));
  }
}

/**
 * A folder of the tree that its Application builds with kustomize options (the gitops folder: the root stamps the
 * commit it syncs), built as Argo CD's repo server builds it: a copy of the folder whose kustomization carries the
 * options (argocd-kustomize.ts), env substituted for the commit check stands in for. What it applies must still be
 * every object of the folder's files, and nothing else.
 */
async function renderFolderWithOptions(app: Manifest, index: number, source: ApplicationSource, dir: string, ctx: Context): Promise<RenderedSource> {
  const what = printable(`folder ${str(source.path)}`);
  const base = { application: app, index, type: 'folder' as const, what, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [] };
  const refused = (message: string): RenderedSource => ({ ...base, problem: { kind: 'failed', message } });
  const engine = ctx.engines.kustomize;
  try {
    const kustomization = withArgocdOptions(readKustomization(dir) ?? {}, source.kustomize, argocdBuildEnv(app, source));
    const key = ['folder-with-options', ...folderKey(ctx, dir), kustomization];
    const { objects } = await cachedRun(ctx, 'folder', key, engine, what, () => withScratch(ctx, (scratch) => {
      for (const f of folderFiles(dir)) writeFileSync(path.join(scratch, f), readInside(dir, f, 'file'));
      for (const f of ['kustomization.yml', 'Kustomization']) rmSync(path.join(scratch, f), { force: true });
      writeFileSync(path.join(scratch, 'kustomization.yaml'), stringify(kustomization));
      return engine.run(['--', scratch], runOptions(ctx, `kubectl kustomize ${printable(str(source.path))}`));
    }), false);
    const differs = compareFolderBuild(dir, objects, folderRead(ctx, dir));
    return differs ? { ...refused(differs), objects } : { ...base, objects };
  } catch (e) {
    return refused(failure(e));
  }
}

/** A source's folder of the tree (RenderContext.folderOf), or why it cannot be used. */
function folderOfSource(ctx: Context, source: ApplicationSource): string | null | undefined | { readonly refused: string } {
  try {
    return ctx.folderOf?.(source);
  } catch (e) {
    return { refused: failure(e) };
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
  // a mirror's URL stands for the upstream repository's: mapped back, then to the vendored copy of that release
  const upstreamOf = new Map(remotes.map((r) => [unmirroredRemote(r, ctx.mirrors?.git ?? {}), r]));
  const mapped = vendoredBases([...upstreamOf.keys()], root);
  const bases = mapped.bases.map((b) => ({ ...b, resource: upstreamOf.get(b.resource)! }));
  const unmapped = mapped.unmapped.map((r) => upstreamOf.get(r)!);
  const release = bases[0]?.release;
  const what = release ? `folder ${source.path} (on ${release.repoURL.replace(/^https:\/\/github.com\//, '').replace(/\.git$/, '')}/${release.path} ${release.version})` : named;
  const base = { ...base0, what, release };
  if (unmapped.length > 0) {
    return {
      ...base,
      problem: {
        kind: 'unreleased',
        message: `${what}: remote base ${unmapped.join(', ')} is no vendored release in ${root} (check builds offline: pin a released tag and vendor it there, see docs/upstream-installs.md)`,
      },
    };
  }
  const engine = ctx.engines.kustomize;
  const key = ['remote-based', treeDigest(dir), ...bases.map((b) => [treeDigest(b.releaseDir, true), path.relative(b.releaseDir, b.dir)])];
  try {
    const { objects } = await cachedRun(ctx, 'remote-based', key, engine, what, () => withScratch(ctx, (scratch) => {
      // the folder's files read as every file a tree gives the engines (inside it, regular, bounded)
      for (const f of folderFiles(dir)) writeFileSync(path.join(scratch, f), readInside(dir, f, 'file'));
      for (const f of ['kustomization.yml', 'Kustomization']) rmSync(path.join(scratch, f), { force: true });
      writeFileSync(path.join(scratch, 'kustomization.yaml'), stringify(offlineKustomization(dir, scratch, bases)));
      return engine.run(['--', scratch], runOptions(ctx, `kubectl kustomize ${printable(str(source.path))}`));
    }));
    return { ...base, objects };
  } catch (e) {
    return { ...base, problem: { kind: 'failed', message: failure(e) } };
  }
}

/** A chart or overlay source with its repository mapped back from its mirror (mirrors.charts for Helm, mirrors.git for git). */
function unmirroredSource(source: ApplicationSource, mirrors: NonNullable<RenderContext['mirrors']>): ApplicationSource {
  if (typeof source.repoURL !== 'string') return source;
  const repoURL = unmirrorUrl(source.repoURL, isHelmSource(source) || source.repoURL.startsWith('oci://') ? mirrors.charts : mirrors.git);
  return repoURL === source.repoURL ? source : { ...source, repoURL };
}

/**
 * A remote base as the upstream repository's: a mirror's `<repo>.git//<path>?ref=<tag>` mapped back (mirrors.git) and
 * written as kustomize's GitHub form, which vendoredBases knows; unchanged when it is no mirror's.
 */
function unmirroredRemote(resource: string, git: MirrorMap): string {
  const ref = parseRepositoryBase(resource);
  if (!ref) return resource;
  const repo = unmirrorUrl(ref.repoURL, git);
  return repo === ref.repoURL ? resource : remoteBase({ ...ref, repoURL: repo });
}

/**
 * A folder whose kustomization builds on a copy of an upstream release written into it (the argocd folder with
 * gitops.argocdInstall: vendored): built as it is, exactly what the bootstrap and Argo CD build, once its copy is
 * the pinned release byte for byte (the vendored tree of the upstream folder). What it applies is an upstream install:
 * rendered as one (type `kustomize`, its release the copy's).
 */
async function renderVendoredBased(
  app: Manifest, index: number, source: ApplicationSource, dir: string, copies: readonly VendoredCopy[], ctx: Context,
): Promise<RenderedSource> {
  const release = copies[0].release;
  const what = printable(`folder ${str(source.path)} (on its copy of ${release.repoURL.replace(/^https:\/\/github.com\//, '').replace(/\.git$/, '')}/${release.path} ${release.version})`);
  const base = { application: app, index, type: 'kustomize' as const, what, release, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [] };
  const root = ctx.upstream;
  if (!root) return { ...base, problem: { kind: 'no-upstream', message: `${what} is not rendered: no upstream installs folder to compare its copy with` } };
  try {
    for (const c of copies) {
      const pinned = path.join(root, c.release.folder, c.top);
      if (!existsSync(pinned)) return { ...base, problem: { kind: 'unreleased', message: `${what}: no vendored release ${c.release.folder}/${c.top} in ${root} to compare the copy with` } };
      if (treeDigest(c.copy) !== treeDigest(pinned, true)) {
        return { ...base, problem: { kind: 'failed', message: `${what}: ${printable(path.relative(dir, c.copy))} is not the pinned release (${pinned}) byte for byte: render it again (synth)` } };
      }
    }
    const engine = ctx.engines.kustomize;
    const { objects } = await cachedRun(ctx, 'remote-based', ['vendored-based', treeDigest(dir)], engine, what,
      () => engine.run(['--', dir], runOptions(ctx, `kubectl kustomize ${printable(str(source.path))}`)));
    return { ...base, objects };
  } catch (e) {
    return { ...base, problem: { kind: 'failed', message: failure(e) } };
  }
}

/**
 * What Argo CD renders for each source of each Application, with the engines it runs: `helm template` of the
 * vendored chart of exactly that name and version (release name, destination namespace, values, CRDs,
 * Kubernetes version), `kustomize build` of the vendored overlay with the Application's kustomize options,
 * `kustomize build` of a rendered folder (compared with the folder's files). Engines run in parallel (one per
 * core), bounded (RunOptions, the context's budget); results are cached by content (RenderCache). Every
 * failure, of an engine or of what the tree gives it, is the source's `problem`, one line.
 */
export async function renderApplications(applications: readonly Manifest[], context: RenderContext): Promise<RenderedSource[]> {
  const session = context.session ?? new RenderSession(context.cacheDir, context.budget);
  const budget = context.budget ?? session.budget;
  // the upstream folder by its real path: it may be named through a link (a mirror mounted elsewhere), and the
  // overlays and charts found in it are compared with it by their real paths (a link inside that leads out is refused)
  const upstream = context.upstream === undefined || !existsSync(context.upstream) ? context.upstream : realpathSync(context.upstream);
  const ctx: Context = { ...context, upstream, session, budget, folderFailures: new Map(), built: new Map(), folders: new Map() };
  const jobs = applications
    .flatMap((app) => sourcesOf(app).map((source, index) => ({ app, source, index })).filter((j) => isJsonObject(j.source)))
    .map((j) => ({ ...j, folder: chartOfSource(j.source) === undefined ? folderOfSource(ctx, j.source) : undefined }))
    // a chart or an overlay read from a mirror: rendered from the release of the repository it mirrors
    .map((j) => (j.folder !== undefined || !ctx.mirrors ? j : { ...j, source: unmirroredSource(j.source, ctx.mirrors) }));
  const folders = [...new Set(jobs.map((j) => j.folder).filter((f): f is string => typeof f === 'string'))];
  const remotes = new Map(folders.map((f) => [f, remoteResourcesOf(f)]));
  const vendored = new Map(folders.filter((f) => remotes.get(f)!.length === 0).map((f) => [f, vendoredResourcesOf(f)]));
  // a folder built with its Application's kustomize options only is not built plainly (it need not build without them)
  const plain = new Set(jobs.filter((j) => typeof j.folder === 'string' && !hasKustomizeOptions(j.source)).map((j) => j.folder as string));
  try {
    await buildFolders(folders.filter((f) => remotes.get(f)!.length === 0 && vendored.get(f)!.length === 0 && plain.has(f)), ctx);
  } catch (e) {
    // no scratch folder (an unusable cache): each folder's own build says so
    if (!isFsError(e)) throw e;
  }
  const rendered = await mapLimit(jobs, Math.max(1, availableParallelism()), async ({ app, source, index, folder }) => {
    if (chartOfSource(source) !== undefined) return renderHelm(app, index, source, ctx);
    if (folder === null) return undefined;
    if (typeof folder === 'object') {
      const what = printable(`folder ${str(source.path)}`);
      return { application: app, index, type: 'folder' as const, what, namespace: destinationNamespace(app), objects: [], unrenderedCrds: [], problem: { kind: 'failed' as const, message: folder.refused } };
    }
    if (folder !== undefined) {
      const remote = remotes.get(folder) ?? [];
      if (remote.length > 0) return renderRemoteBased(app, index, source, folder, remote, ctx);
      const copies = vendored.get(folder) ?? [];
      if (copies.length > 0) return renderVendoredBased(app, index, source, folder, copies, ctx);
      return hasKustomizeOptions(source) ? renderFolderWithOptions(app, index, source, folder, ctx) : renderFolder(app, index, source, folder, ctx);
    }
    if (source.repoURL && source.path !== undefined) return renderOverlay(app, index, source, ctx);
    return undefined;
  });
  return rendered.filter((r): r is RenderedSource => r !== undefined);
}
