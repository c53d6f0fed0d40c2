import { existsSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { ClusterIndex } from './cluster-index';
import { applicationSources, ARGO, renderedFolderOf } from './gitops';
import { defaultCacheDir } from '../cache/compiled-cache';
import { EngineBudget, EngineOptions, resolveEngines } from '../engines';
import { ClusterView, ScopeOf } from './cluster-view';
import { inKustomization } from '../render/folder-files';
import { apiGroup, Manifest } from '../render/manifest';
import { FolderRead } from '../upstream/folder-build';
import { resolveInside } from '../upstream/inside';
import { ApplicationSource, GPU_OPERATOR_CHART, isHelmSource, NETWORK_OPERATOR_CHART, VendoredChart } from '../upstream/releases';
import { ClusterRenders, renderApplications, RenderedSource } from '../upstream/render';
import { RenderSession } from '../upstream/render-session';

export interface RenderOptions {
  /** The upstream installs folder (a missing one: charts and overlays are not rendered). */
  readonly upstream?: string;
  readonly engines?: EngineOptions;
  readonly scopeOf?: ScopeOf;
  /**
   * Cache folder of renders and prepared charts.
   * @default defaultCacheDir()
   */
  readonly cacheDir?: string | false;
  /**
   * The bound of every engine run of the command together: pass one budget to every cluster's render.
   * @default a budget of this call's own
   */
  readonly budget?: EngineBudget;
  /**
   * The renders of the whole command: pass one session to every cluster's render, so that each distinct input
   * is rendered once per run (its budget is the command's).
   * @default a session of this call's own
   */
  readonly session?: RenderSession;
  /**
   * Render every Helm source a second time, afresh, for the rule render-deterministic (`reruns`); off for a caller
   * that runs no rule.
   * @default true
   */
  readonly reruns?: boolean;
}

/** The manifest files of the view's folders as it read them, by the folder's real path (a tree read from disk). */
function readFolders(view: ClusterView): Map<string, FolderRead> {
  const out = new Map<string, FolderRead>();
  if (view.dir === undefined) return out;
  for (const f of view.folders) {
    if (!f.files) continue;
    // a cluster folder's component folder; the fleet folder is a cluster of one folder, its own
    const inFolder = path.join(view.dir, f.folder);
    const base = f.files.every((r) => r.file.startsWith(`${inFolder}${path.sep}`)) ? inFolder : view.dir;
    try {
      out.set(realpathSync(base), { base, files: f.files });
    } catch {
      // gone since it was read: read again when built
    }
  }
  return out;
}

/** The Kubernetes version helm renders for: the description's minor version. */
function kubeVersionOf(view: ClusterView): string | undefined {
  const v = view.model?.description.kubernetesVersion;
  return v ? `v${v}.0` : undefined;
}

/**
 * API versions the cluster serves besides the built-in ones, as Argo CD passes them to helm
 * (`--api-versions`): those of the custom resources the tree renders, and what the description says the
 * cluster serves.
 */
function apiVersionsOf(index: ClusterIndex): string[] {
  const out = new Set<string>(index.model?.servedApiVersions ?? []);
  for (const m of index.objects) {
    const group = apiGroup(m.apiVersion);
    if (group.includes('.') && !group.endsWith('.k8s.io')) out.add(m.apiVersion);
  }
  return [...out].sort();
}

/** An Application that installs a pinned chart with its default values (the release's own objects). */
function defaultsApplication(chart: VendoredChart): Manifest {
  return {
    apiVersion: `${ARGO}/v1alpha1`,
    kind: 'Application',
    metadata: { name: `${chart.chart}-defaults` },
    spec: {
      destination: { namespace: chart.chart },
      source: { chart: chart.chart, targetRevision: chart.version, helm: { releaseName: chart.chart } },
    },
  };
}

/**
 * Renders every Application source of a cluster with the real engines (src/upstream/render.ts), and the
 * default renders of the charts whose custom resources the tree holds.
 */
export async function renderClusterSources(view: ClusterView, opts: RenderOptions = {}): Promise<ClusterRenders> {
  const engines = await resolveEngines(opts.engines);
  const given = opts.upstream;
  const upstream = given !== undefined && existsSync(given) && statSync(given).isDirectory() ? path.resolve(given) : undefined;
  const cacheDir = opts.cacheDir === false ? undefined : opts.cacheDir ?? defaultCacheDir();
  const index = new ClusterIndex(view, opts.scopeOf);
  const dir = view.dir;
  const session = opts.session ?? new RenderSession(cacheDir, opts.budget);
  const read = readFolders(view);
  const ctx = {
    upstream,
    engines,
    cacheDir,
    session,
    budget: opts.budget ?? session.budget,
    folderRead: (d: string) => read.get(d),
    kubeVersion: kubeVersionOf(view),
    apiVersions: apiVersionsOf(index),
    ...(view.model ? { mirrors: { charts: view.model.description.mirrors.charts, git: view.model.description.mirrors.git } } : {}),
    // a source of the cluster's own repository is built from the folder on disk, which lies inside the cluster's folder
    folderOf: (s: { repoURL?: string; path?: string; chart?: string }) => {
      const folder = renderedFolderOf(index, s);
      if (folder === undefined || folder === null) return folder;
      return dir === undefined ? null : resolveInside(dir, folder === '' ? '.' : folder, 'path');
    },
  };
  const applications = index.ofKind('Application', ARGO).filter((a) => apiGroup(a.apiVersion) === ARGO);
  const charts = [
    ...(index.ofKind('ClusterPolicy', 'nvidia.com').length > 0 ? [GPU_OPERATOR_CHART] : []),
    ...(index.ofKind('NicClusterPolicy', 'mellanox.com').length > 0 ? [NETWORK_OPERATOR_CHART] : []),
  ];
  const [rendered, defaults] = await Promise.all([
    renderApplications(applications, ctx),
    upstream ? renderApplications(charts.map(defaultsApplication), { ...ctx, apiVersions: [] }) : Promise.resolve([]),
  ]);
  // Argo CD renders a Helm Application again on every refresh: each renders a second time, afresh (rule render-deterministic).
  const helmApplications = applications.filter((a) => applicationSources<ApplicationSource>(a).some(isHelmSource));
  const rerun = upstream && helmApplications.length > 0 && opts.reruns !== false;
  // none made when asked for none: undefined, never an empty list that would read as "each rendered the same twice"
  const reruns = rerun ? await renderApplications(helmApplications, { ...ctx, fresh: true }) : opts.reruns === false ? undefined : [];
  return { engines, upstream, sources: [...rendered, ...(dir === undefined ? folderObjectsOf(index, applications) : [])], defaults, reruns };
}

/**
 * The folders of a tree checked in memory (not on disk: there is nothing to build), as their Applications sync
 * them: the folder's objects.
 */
function folderObjectsOf(index: ClusterIndex, applications: readonly Manifest[]): RenderedSource[] {
  return applications.flatMap((app) => applicationSources<{ repoURL?: string; path?: string; chart?: string }>(app).flatMap((s, i) => {
    const folder = renderedFolderOf(index, s);
    if (folder === undefined || folder === null) return [];
    const namespace = ((app.spec as { destination?: { namespace?: string } } | undefined)?.destination?.namespace) ?? '';
    // what the folder's kustomization lists: not the templates, nor what is applied by hand (the root itself)
    const objects = (folder === '' ? index.objects : index.inFolder(folder.split('/')[0])).filter(inKustomization);
    return [{ application: app, index: i, type: 'folder' as const, what: `folder ${s.path}`, namespace, objects, unrenderedCrds: [] }];
  }));
}
