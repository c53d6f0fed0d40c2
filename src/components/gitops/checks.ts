import { GroupKind, groupKindOf, isProvided, kindsDefinedBy, parseProvides } from './api-kinds';
import { GITOPS_FOLDER } from './plan';
import { LABELS } from '../../model/names';
import { describeObject, Manifest } from '../../render/manifest';

/** One broken GitOps fact: the rule id, a message naming the objects, and the objects (offending first). */
export interface GitopsFinding {
  readonly rule: string;
  readonly message: string;
  readonly objects: readonly Manifest[];
}

/** The rendered tree of one cluster: its folders and their objects (a RenderedCluster is one). */
export interface GitopsTreeView {
  readonly folders: readonly { readonly folder: string; readonly objects: readonly Manifest[] }[];
}

interface AppView {
  readonly app: Manifest;
  readonly repoURL?: string;
  readonly path?: string;
  readonly chart?: string;
  readonly project?: string;
  readonly destination: { readonly server?: string; readonly name?: string; readonly namespace?: string };
  readonly wave: number;
}

function appView(m: Manifest): AppView {
  const spec = (m.spec ?? {}) as any;
  const src = spec.source ?? spec.sources?.[0] ?? {};
  const wave = Number.parseInt(m.metadata.annotations?.[LABELS.syncWave] ?? '0', 10);
  return {
    app: m,
    repoURL: src.repoURL,
    path: src.path,
    chart: src.chart,
    project: spec.project,
    destination: spec.destination ?? {},
    wave: Number.isNaN(wave) ? 0 : wave,
  };
}

function applications(view: GitopsTreeView): AppView[] {
  return view.folders.flatMap((f) => f.objects).filter((m) => m.kind === 'Application' && m.apiVersion.startsWith('argoproj.io/')).map(appView);
}

/** The root Application: the Application of the gitops folder whose path ends in `/gitops`; its path names the cluster's folder. */
function rootOf(view: GitopsTreeView): { root: AppView; base: string } | undefined {
  const gitopsObjects = view.folders.find((f) => f.folder === GITOPS_FOLDER)?.objects ?? [];
  const root = gitopsObjects.filter((m) => m.kind === 'Application').map(appView).find((a) => a.path?.endsWith(`/${GITOPS_FOLDER}`));
  return root && { root, base: root.path!.slice(0, -GITOPS_FOLDER.length - 1) };
}

/** True when the tree has a root Application (the app-of-apps): the folder rules apply only then. */
export function hasRootApplication(view: GitopsTreeView): boolean {
  return rootOf(view) !== undefined;
}

/** Applications that read the cluster's own repository (not an upstream chart or repository). */
function ownApplications(view: GitopsTreeView): { apps: AppView[]; base: string } | undefined {
  const r = rootOf(view);
  if (!r) return undefined;
  return { apps: applications(view).filter((a) => isOwn(a, r.root)), base: r.base };
}

function isOwn(a: AppView, root: AppView): boolean {
  return a.repoURL === root.repoURL && a.chart === undefined;
}

const noRoot = (view: GitopsTreeView, rule: string): GitopsFinding[] => [{
  rule,
  message: `no root Application: no Application in ${GITOPS_FOLDER}/ syncs a path ending in /${GITOPS_FOLDER}`,
  objects: view.folders.find((f) => f.folder === GITOPS_FOLDER)?.objects ?? [],
}];

/** Every Application that reads the cluster's repository points at a folder that exists in the rendered tree. */
export function checkApplicationPaths(view: GitopsTreeView): GitopsFinding[] {
  const own = ownApplications(view);
  if (!own) return noRoot(view, 'gitops-application-path');
  const existing = new Set(view.folders.map((f) => `${own.base}/${f.folder}`));
  return own.apps.filter((a) => a.path === undefined || !existing.has(a.path)).map((a) => ({
    rule: 'gitops-application-path',
    message: `${describeObject(a.app)} syncs path "${a.path ?? ''}", which is not a rendered folder (${[...existing].sort().join(', ')})`,
    objects: [a.app],
  }));
}

/** Every folder of the cluster is synced by exactly one Application. */
export function checkFolderOwnership(view: GitopsTreeView): GitopsFinding[] {
  const own = ownApplications(view);
  if (!own) return noRoot(view, 'gitops-folder-owner');
  const findings: GitopsFinding[] = [];
  for (const f of view.folders) {
    const owners = own.apps.filter((a) => a.path === `${own.base}/${f.folder}`);
    if (owners.length !== 1) {
      findings.push({
        rule: 'gitops-folder-owner',
        message: owners.length === 0
          ? `folder ${f.folder}/ is synced by no Application`
          : `folder ${f.folder}/ is synced by ${owners.length} Applications: ${owners.map((a) => describeObject(a.app)).join(', ')}`,
        objects: owners.map((a) => a.app),
      });
    }
  }
  return findings;
}

/**
 * Wave order respects dependencies: an Application never syncs in the same or an earlier wave than an
 * Application that installs the kinds of its objects (a `provides` annotation, or CRDs in its folder),
 * or that creates the namespaces its objects live in.
 */
export function checkWaveOrder(view: GitopsTreeView): GitopsFinding[] {
  const own = ownApplications(view);
  if (!own) return noRoot(view, 'gitops-wave-order');
  const folderOf = (a: AppView) => view.folders.find((f) => `${own.base}/${f.folder}` === a.path);
  const providers = applications(view).map((a) => {
    const folder = own.apps.some((o) => o.app === a.app) ? folderOf(a) : undefined;
    const objects = folder?.objects ?? [];
    return {
      a,
      kinds: [...parseProvides(a.app.metadata.annotations?.[LABELS.provides]), ...kindsDefinedBy(objects)],
      namespaces: new Set(objects.filter((m) => m.kind === 'Namespace' && m.apiVersion === 'v1').map((m) => m.metadata.name)),
    };
  });
  const findings: GitopsFinding[] = [];
  for (const a of own.apps) {
    const folder = folderOf(a);
    if (!folder || folder.folder === GITOPS_FOLDER) continue;
    for (const p of providers) {
      if (p.a.app === a.app || p.a.wave < a.wave) continue;
      const cr = folder.objects.find((m) => m.kind !== 'CustomResourceDefinition' && isProvided(groupKindOf(m), p.kinds));
      const inNamespace = folder.objects.find((m) => m.metadata.namespace !== undefined && p.namespaces.has(m.metadata.namespace));
      const culprit = cr ?? inNamespace;
      if (culprit) {
        findings.push({
          rule: 'gitops-wave-order',
          message: `${describeObject(a.app)} (wave ${a.wave}) syncs ${describeObject(culprit)}, which needs ${describeObject(p.a.app)} (wave ${p.a.wave}) `
            + `to ${cr ? 'install its kind' : 'create its namespace'} first: give it a later wave`,
          objects: [a.app, p.a.app, culprit],
        });
      }
    }
  }
  return findings;
}

/** Compiled destination patterns: every object of every Application is matched against the same few. */
const globs = new Map<string, RegExp>();

/** Argo CD destination patterns: `*` and `?` globs, `!` negation is not used here. */
function globMatch(pattern: string | undefined, value: string): boolean {
  if (pattern === undefined) return false;
  let re = globs.get(pattern);
  if (!re) {
    re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
    if (globs.size < 1024) globs.set(pattern, re);
  }
  return re.test(value);
}

type Destination = { server?: string; name?: string; namespace?: string };
const destinationIndex = new WeakMap<Manifest, { exact: Map<string, Destination[]>; patterns: Destination[] }>();

/**
 * An AppProject's destinations: those naming one namespace by its name, by that name (a project of many tenants
 * lists each one's namespace: looked up, not scanned per object), and those with a glob pattern.
 */
function destinationsOf(project: Manifest): { exact: Map<string, Destination[]>; patterns: Destination[] } {
  let found = destinationIndex.get(project);
  if (!found) {
    found = { exact: new Map(), patterns: [] };
    for (const d of ((project.spec ?? {}) as { destinations?: Destination[] }).destinations ?? []) {
      if (typeof d.namespace === 'string' && !/[*?[\]!]/.test(d.namespace)) {
        const list = found.exact.get(d.namespace) ?? [];
        list.push(d);
        found.exact.set(d.namespace, list);
      } else {
        found.patterns.push(d);
      }
    }
    destinationIndex.set(project, found);
  }
  return found;
}

/**
 * No Application writes where its AppProject forbids: its destination and every object of its folder
 * must be a permitted destination namespace, and every cluster-scoped object a whitelisted kind.
 */
export function checkProjectDestinations(view: GitopsTreeView): GitopsFinding[] {
  const projects = view.folders.flatMap((f) => f.objects).filter((m) => m.kind === 'AppProject');
  const base = rootOf(view)?.base;
  const findings: GitopsFinding[] = [];
  for (const a of applications(view)) {
    const project = projects.find((p) => p.metadata.name === a.project);
    if (!project) {
      findings.push({ rule: 'gitops-project-destination', message: `${describeObject(a.app)} refers to AppProject "${a.project}", which is not rendered`, objects: [a.app] });
      continue;
    }
    const spec = (project.spec ?? {}) as { clusterResourceWhitelist?: GroupKind[] };
    const sameCluster = (d: { server?: string; name?: string }) => (a.destination.server !== undefined ? globMatch(d.server, a.destination.server) : globMatch(d.name, a.destination.name ?? ''));
    const { exact, patterns } = destinationsOf(project);
    const permitted = (namespace: string) => (exact.get(namespace) ?? []).some(sameCluster)
      || patterns.some((d) => globMatch(d.namespace, namespace) && sameCluster(d));
    const whitelisted = (gk: GroupKind) => (spec.clusterResourceWhitelist ?? [])
      .some((w) => globMatch(w.group, gk.group) && globMatch(w.kind, gk.kind));
    const forbid = (what: string, objects: Manifest[]) => findings.push({
      rule: 'gitops-project-destination', message: `${describeObject(a.app)} ${what}, which AppProject ${project.metadata.name} forbids`, objects: [a.app, project, ...objects],
    });

    if (!permitted(a.destination.namespace ?? '')) forbid(`deploys to namespace "${a.destination.namespace ?? ''}"`, []);
    const folder = base === undefined ? undefined : view.folders.find((f) => `${base}/${f.folder}` === a.path);
    for (const m of folder?.objects ?? []) {
      const ns = m.metadata.namespace;
      if (ns !== undefined && !permitted(ns)) forbid(`syncs ${describeObject(m)} into namespace "${ns}"`, [m]);
      if (ns === undefined && !whitelisted(groupKindOf(m))) forbid(`syncs the cluster-scoped ${describeObject(m)}`, [m]);
    }
  }
  return findings;
}

/** All GitOps checks of one cluster. */
export function checkGitops(view: GitopsTreeView): GitopsFinding[] {
  return [...checkApplicationPaths(view), ...checkFolderOwnership(view), ...checkWaveOrder(view), ...checkProjectDestinations(view)];
}
