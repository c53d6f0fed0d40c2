import { ClusterIndex } from './cluster-index';
import { Rule, Violation } from './rule';
import { GroupKind, groupKindKey, groupKindOf, isProvided, kindsDefinedBy, parseProvides } from '../components/gitops/api-kinds';
import { checkFolderOwnership, checkProjectDestinations, GitopsFinding, GitopsTreeView, hasRootApplication } from '../components/gitops/checks';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { IN_CLUSTER_SERVER } from '../model/description';
import { LABELS, skipsDryRunOnMissing, syncWave } from '../model/names';
import { apiGroup, describeObject, Manifest } from '../render/manifest';

/** API group of Argo CD's Application, AppProject and ApplicationSet. */
export const ARGO = 'argoproj.io';

interface AppSource {
  readonly repoURL?: string;
  readonly path?: string;
  readonly chart?: string;
}

/** An Application's source, or its sources (multi-source Applications), as one list. */
export function applicationSources<S extends object = AppSource>(app: Manifest): S[] {
  const spec = (app.spec ?? {}) as { source?: S; sources?: S[] };
  return [...(spec.source ? [spec.source] : []), ...(spec.sources ?? [])];
}

const sources = (app: Manifest): AppSource[] => applicationSources(app);


/** The rendered folder an Application's path leads to: '' for the cluster root, undefined when outside it. */
export function folderOfPath(index: ClusterIndex, path: string): string | undefined {
  const clean = path.replace(/^\.?\/+/, '').replace(/\/+$/, '');
  const root = index.model?.description.gitops.path.replace(/^\.?\/+/, '').replace(/\/+$/, '');
  let rest: string | undefined;
  if (root !== undefined) {
    if (clean === root) rest = '';
    else if (clean.startsWith(`${root}/`)) rest = clean.slice(root.length + 1);
  } else {
    const parts = clean.split('/');
    const i = parts.lastIndexOf(index.name);
    if (i >= 0) rest = parts.slice(i + 1).join('/');
  }
  return rest;
}

/** Whether a source reads the cluster's own repository (a git source of the rendered tree, not a chart). */
function ofRenderedTree(index: ClusterIndex, s: AppSource): s is AppSource & { path: string } {
  return typeof s.path === 'string' && s.chart === undefined && !s.path.includes('{{') && s.repoURL === gitopsRepo(index);
}

/**
 * The rendered folder (relative to the cluster's, '' for the cluster folder) a source reads; null for a source
 * of the cluster's own repository outside its folder; undefined for a source of another repository or a chart.
 */
export function renderedFolderOf(index: ClusterIndex, s: AppSource): string | null | undefined {
  return ofRenderedTree(index, s) ? folderOfPath(index, s.path) ?? null : undefined;
}

/** Applications that read this cluster's folders (git sources pointing into the rendered tree). */
function folderSources(index: ClusterIndex, app: Manifest): { readonly path: string; readonly folder?: string }[] {
  return sources(app).filter((s) => ofRenderedTree(index, s)).map((s) => ({ path: s.path!, folder: folderOfPath(index, s.path!) }));
}

/** The repository of the rendered tree: from the description, else the repo of sources leading into the cluster folder. */
function gitopsRepo(index: ClusterIndex): string | undefined {
  const fromModel = index.model?.description.gitops.repoURL;
  if (fromModel !== undefined) return fromModel;
  for (const app of index.ofKind('Application', ARGO)) {
    for (const s of sources(app)) {
      if (s.path !== undefined && s.path.split('/').includes(index.name)) return s.repoURL;
    }
  }
  return undefined;
}

const applicationPath: Rule = {
  id: 'application-path',
  severity: 'error',
  summary: 'every Argo CD Application path exists in the rendered tree',
  check(index) {
    const out: Violation[] = [];
    for (const app of index.ofKind('Application', ARGO)) {
      for (const s of folderSources(index, app)) {
        if (s.folder === '') continue;
        const first = s.folder?.split('/')[0];
        if (first !== undefined && index.folders.includes(first)) continue;
        out.push({
          message: `source path "${s.path}" ${s.folder === undefined ? 'is outside the cluster\'s folder' : 'names no rendered folder'} `
            + `(folders: ${index.folders.join(', ')})`,
          objects: [app],
        });
      }
    }
    return out;
  },
};

/**
 * The kinds an Application installs: those its `gpu-cluster.dev/provides` annotation declares (synth writes it on
 * every managed install from the install's own CRDs, ManagedInstall.provides) and the CRDs of its folders. An
 * Application of charts or overlays without the annotation is left to crd-before-cr, which reads their renders.
 */
function providedKinds(index: ClusterIndex, app: Manifest): GroupKind[] {
  let kinds: GroupKind[];
  try {
    kinds = parseProvides(app.metadata.annotations?.[LABELS.provides]);
  } catch {
    kinds = []; // an annotation edited by hand into something else: no knowledge, not a crash
  }
  for (const s of folderSources(index, app)) {
    const folder = s.folder?.split('/')[0];
    if (folder) kinds.push(...kindsDefinedBy(index.inFolder(folder)));
  }
  return kinds;
}

const syncWaveOrder: Rule = {
  id: 'sync-wave-order',
  severity: 'error',
  summary: `custom resources sync in a later wave than the Application that installs their kind (its ${LABELS.provides} annotation, or a CRD in its folder)`,
  check(index) {
    const apps = index.ofKind('Application', ARGO);
    const providers = apps.map((app) => ({ app, kinds: providedKinds(index, app) }));
    const out: Violation[] = [];
    for (const app of apps) {
      for (const s of folderSources(index, app)) {
        const folder = s.folder?.split('/')[0];
        if (!folder) continue;
        const objects = index.inFolder(folder);
        const used = new Map<string, Manifest>();
        for (const m of objects) if (m.kind !== 'CustomResourceDefinition') used.set(groupKindKey(groupKindOf(m)), used.get(groupKindKey(groupKindOf(m))) ?? m);
        for (const [kind, example] of used) {
          for (const p of providers) {
            if (p.app === app || !isProvided(groupKindOf(example), p.kinds) || syncWave(app) > syncWave(p.app)) continue;
            out.push({
              message: `syncs ${example.kind} ${example.metadata.name} (${kind}) in wave ${syncWave(app)}, `
                + `not after Application ${p.app.metadata.name} (wave ${syncWave(p.app)}) that installs ${kind}`,
              objects: [app, p.app],
            });
          }
        }
        // CRD and custom resources in one Application: the resources need a later wave, or to skip the dry run.
        for (const crd of objects.filter((m) => m.kind === 'CustomResourceDefinition')) {
          const group = (crd.spec as { group?: string } | undefined)?.group;
          const kind = (crd.spec as { names?: { kind?: string } } | undefined)?.names?.kind;
          for (const cr of objects.filter((m) => apiGroup(m.apiVersion) === group && m.kind === kind)) {
            if (syncWave(cr) > syncWave(crd) || skipsDryRunOnMissing(cr, app)) continue;
            out.push({
              message: `in wave ${syncWave(cr)}, syncs with its CustomResourceDefinition ${crd.metadata.name} (wave ${syncWave(crd)}) `
                + 'in one Application: give it a later sync-wave or SkipDryRunOnMissingResource=true',
              objects: [cr, crd],
            });
          }
        }
      }
    }
    return out;
  },
};

/** The cluster's folders as the GitOps component's checks read them. */
function treeOf(index: ClusterIndex): GitopsTreeView {
  return { folders: index.folders.map((folder) => ({ folder, objects: index.inFolder(folder) })) };
}

/** GitOps findings as violations: the engine puts the first object in front of the message itself. */
function violations(findings: readonly GitopsFinding[]): Violation[] {
  return findings.map((f) => {
    const lead = f.objects[0] ? `${describeObject(f.objects[0])} ` : '';
    return { message: lead && f.message.startsWith(lead) ? f.message.slice(lead.length) : f.message, objects: f.objects };
  });
}

const applicationFolderOwner: Rule = {
  id: 'application-folder-owner',
  severity: 'error',
  summary: 'every rendered folder is synced by exactly one Application of the app-of-apps',
  check(index) {
    const tree = treeOf(index);
    return hasRootApplication(tree) ? violations(checkFolderOwnership(tree)) : [];
  },
};

const applicationProject: Rule = {
  id: 'application-project',
  severity: 'error',
  summary: 'every Application\'s AppProject is rendered and permits its destination, namespaces and cluster-scoped kinds',
  check(index) {
    return index.ofKind('AppProject', ARGO).length > 0 ? violations(checkProjectDestinations(treeOf(index))) : [];
  },
};

/**
 * Where the Applications of a cluster's gitops folder deploy. The root applies the folder's AppProject and Applications
 * to the Argo CD that runs them: the in-cluster server of that Argo CD, whether it is the cluster's own or a hub's (a
 * cluster that runs no Argo CD: gitops.destinationServer names it as the hub reaches it). Every other Application
 * deploys to the cluster, gitops.destinationServer: on a hub, the in-cluster server is the hub.
 */
const applicationDestination: Rule = {
  id: 'application-destination',
  severity: 'error',
  summary: 'the root deploys the gitops folder to the Argo CD that runs it (in-cluster, gitops.namespace); every other Application to gitops.destinationServer',
  check(index) {
    const g = index.model?.description.gitops;
    if (!g) return [];
    const out: Violation[] = [];
    for (const app of index.ofKind('Application', ARGO).filter((a) => index.folderOf(a) === GITOPS_FOLDER)) {
      const d = ((app.spec as { destination?: { server?: string; name?: string; namespace?: string } } | undefined)?.destination) ?? {};
      const where = d.server ?? (d.name !== undefined ? `the cluster named ${d.name}` : 'no API server');
      const inCluster = d.server === IN_CLUSTER_SERVER || (d.server === undefined && d.name === 'in-cluster');
      if (sources(app).some((s) => renderedFolderOf(index, s) === GITOPS_FOLDER)) {
        // the namespace counts only for objects that name none (every rendered one names its own)
        if (inCluster && (d.namespace === undefined || d.namespace === g.namespace)) continue;
        out.push({
          message: `applies the gitops folder's AppProject and Applications to ${where}${d.namespace ? `, namespace ${d.namespace}` : ''}, but they belong to the Argo CD `
            + `that runs them: its own API server (${IN_CLUSTER_SERVER}), namespace ${g.namespace}`
            + (g.destinationServer !== IN_CLUSTER_SERVER ? `, on the hub, not on the cluster at ${g.destinationServer}, which runs no Argo CD` : ''),
          objects: [app],
        });
        continue;
      }
      const known = d.server !== undefined || d.name === 'in-cluster';
      const server = d.server ?? IN_CLUSTER_SERVER;
      if (!known || server === g.destinationServer) continue;
      out.push({
        message: `deploys to ${where}, but gitops.destinationServer is ${g.destinationServer}: `
          + (server === IN_CLUSTER_SERVER ? 'its objects would land in the cluster its Argo CD runs in (the hub), not in this one' : 'its objects would land in another cluster'),
        objects: [app],
      });
    }
    return out;
  },
};

export const GITOPS_RULES: readonly Rule[] = [applicationPath, syncWaveOrder, applicationFolderOwner, applicationProject, applicationDestination];
