import { GroupKind, groupKindKey, groupKindOf, isBuiltInGroup, isProvided, kindsDefinedBy } from './api-kinds';
import { IgnoredDifference, ManagedInstall, managedInstalls } from './managed-installs';
import { ApplicationSpecSource, ApplicationSpecSourceKustomize } from '../../../imports/argocd-application-argoproj.io';
import { IN_CLUSTER_SERVER } from '../../model/description';
import { ClusterModel } from '../../model/model';
import { ARGOCD_FIELD_MANAGER, folderApplicationName, GITOPS_FOLDER, LABELS } from '../../model/names';
import { durationSeconds } from '../../model/schema-types';
import { inKustomization } from '../../render/folder-files';
import { KustomizeReplacement, Manifest, RenderedFolder } from '../../render/manifest';

export { FLEET_FOLDER, GITOPS_FOLDER } from '../../model/names';

/** The root Application among a cluster's gitops objects: the one whose path is the gitops folder itself. */
export function rootApplicationOf(gitopsObjects: readonly Manifest[], gitopsPath: string): Manifest | undefined {
  return gitopsObjects.find((m) => m.kind === 'Application' && (m.spec as { source?: { path?: string } } | undefined)?.source?.path === `${gitopsPath}/${GITOPS_FOLDER}`);
}

/**
 * The kustomize options of the root Application (and of the fleet's Application in its place). Argo CD's repo server
 * builds the gitops folder with `kustomize edit add annotation` of these annotations first, `${ARGOCD_APP_REVISION}`
 * substituted by the commit it builds (argo-cd v3.5.1, commit 109ca7ca71139e514114499d294a492e7910a965:
 * util/kustomize/kustomize.go Build, reposerver/repository/repository.go newEnv), so every object the root applies
 * carries the commit the root synced; the folder's replacements (revisionReplacements) copy it into the targetRevision
 * of every child Application that reads this repository. A child therefore moves only when the root applies a commit,
 * wave by wave, and the Application health check waits until the child has compared and synced exactly that commit.
 */
export const ROOT_KUSTOMIZE: ApplicationSpecSourceKustomize = {
  commonAnnotations: { [LABELS.revision]: '${ARGOCD_APP_REVISION}' },
  commonAnnotationsEnvsubst: true,
};

/** The field path of the revision annotation in kustomize's replacements syntax. */
export const REVISION_FIELD_PATH = `metadata.annotations.[${LABELS.revision}]`;

/**
 * The replacements of the gitops folder's kustomization: the revision the root stamps on the AppProject (every object
 * gets it; the project is the one object every gitops folder has) becomes the targetRevision of each child Application
 * the root applies that reads the root's repository (not the charts and upstream repositories of managed installs, nor
 * the root itself or the Applications applied by hand, which the kustomization does not list). Built without the
 * root's options (`kubectl apply -k` of the folder) the source annotation is missing and kustomize refuses: a child is
 * never applied tracking the branch on its own.
 */
export function revisionReplacements(gitopsObjects: readonly Manifest[], gitopsPath: string): KustomizeReplacement[] {
  const root = rootApplicationOf(gitopsObjects, gitopsPath);
  const project = gitopsObjects.find((m) => m.kind === 'AppProject' && inKustomization(m));
  if (!root || !project) return [];
  const sourceOf = (m: Manifest) => (m.spec as { source?: { repoURL?: string; chart?: string } } | undefined)?.source;
  const repo = sourceOf(root)?.repoURL;
  const children = gitopsObjects.filter((m) => m.kind === 'Application' && m !== root && inKustomization(m)
    && sourceOf(m)?.repoURL === repo && sourceOf(m)?.chart === undefined);
  if (children.length === 0) return [];
  const select = (m: Manifest) => ({ group: 'argoproj.io', kind: m.kind, name: m.metadata.name, ...(m.metadata.namespace ? { namespace: m.metadata.namespace } : {}) });
  return [{
    source: { ...select(project), fieldPath: REVISION_FIELD_PATH },
    targets: children.map((m) => ({ select: select(m), fieldPaths: ['spec.source.targetRevision'] })),
  }];
}

/**
 * Sync waves of the child Applications (the root Application syncs them in this order). A folder's wave
 * is its tier, or later when something it needs (its CRDs, its namespaces) comes from a later folder.
 */
export const WAVES = {
  /** The AppProject: Applications referring to a missing project fail. */
  project: -1,
  /** Operators and their CRDs (managed installs). */
  installs: 0,
  /** Custom resources and cluster configuration (ClusterPolicy, NicClusterPolicy, Kueue, StorageClasses). */
  config: 1,
  /** What builds on the configuration: tenants, monitoring, dashboards. */
  services: 2,
  /** Samples: synced by hand, after everything else. */
  samples: 3,
} as const;

/** Folders whose tier is not the config tier (every other folder, known or new, is config). */
const FOLDER_TIERS: Readonly<Record<string, number>> = {
  tenants: WAVES.services,
  monitoring: WAVES.services,
  dashboard: WAVES.services,
  samples: WAVES.samples,
  dynamo: WAVES.samples,
};

/** Folders Argo CD never syncs on its own: running them starts GPU jobs (or inference servers). */
export const MANUAL_FOLDERS: ReadonlySet<string> = new Set(['samples', 'dynamo']);

/**
 * How an Application retries a failed sync (`spec.syncPolicy.retry`), read in argo-cd v3.5.1 (controller/appcontroller.go
 * processRequestedAppOperation and autoSync, controller/sync.go SyncAppState, controller/state.go CompareAppState):
 * a retry syncs the source its operation was started with, and `refresh: true` only resolves that source's
 * targetRevision again (its latest commit, for a branch). While an operation retries, the Application starts no other
 * (autoSync: "another operation is in progress"); once its retries are spent it never retries that revision and source
 * (alreadyAttemptedSync), and syncs the next one it is given at once.
 */
export interface RetryPolicy {
  /** Retries after the first attempt; -1: no end. */
  readonly limit: number;
  readonly backoff: { readonly duration: string; readonly factor: number; readonly maxDuration: string };
  readonly refresh?: boolean;
}

/**
 * The root's: for ever, each retry resolving its branch again, so a failed sync (a child Degraded) takes the newest
 * commit at its next retry: the fix or the revert of what failed, without waiting for anything to end, and without a
 * count after which a commit is never retried (a child whose failure passes by itself is taken at the next retry).
 */
export const ROOT_RETRY: RetryPolicy = { limit: -1, refresh: true, backoff: { duration: '10s', factor: 2, maxDuration: '2m' } };

/**
 * A child's (a component folder's, a managed install's): pinned to the commit (or chart version) the root gave it, its
 * retries sync that commit again, and the commit that fixes it reaches it only once they end; so about two minutes of
 * retries (5 s doubling, at most 1 minute apart), enough for what passes by itself once the wave before is Healthy
 * (a CRD just established and not yet in discovery, a cache read a moment late), after which the root's next commit is
 * synced at once. What fails for longer stays Degraded on the root (which retries) until a commit or a sync by hand
 * (`argocd app sync <cluster>-<folder>`).
 */
export const CHILD_RETRY: RetryPolicy = { limit: 5, backoff: { duration: '5s', factor: 2, maxDuration: '1m' } };

/**
 * Every child Application diffs server-side (ServerSideDiff=true: fields the API server defaults, in custom resources,
 * the CRDs and webhooks of the charts, show no drift) and so applies server-side too. Read in argo-cd v3.5.1 (commit
 * 109ca7ca71139e514114499d294a492e7910a965): the server-side diff is a dry-run server-side apply as `argocd-controller`
 * (gitops-engine pkg/diff/diff.go serverSideDiff) compared with the live object; a client-side apply (pkg/utils/kube/
 * resource_ops.go ApplyResource without ServerSideApply) writes the fields as an `Update` of the same manager, which a
 * server-side apply does not own, so the dry run of a manifest that drops a field keeps it: the Application stays Synced
 * and the field stays in the cluster for ever (a revert that only removes a field was never applied, seen on the real
 * Argo CD). Applied server-side, the fields are the `Apply` set of `argocd-controller`, and a field dropped from Git is
 * removed by the dry run (OutOfSync) and by the sync. It also lifts the 262144-byte limit of client-side apply's
 * last-applied annotation (check's applied-size-limit) for every object. Fields that an earlier client-side apply of
 * Argo CD owns are moved to the `Apply` set at the next sync (CLIENT_SIDE_APPLY_MIGRATION_MANAGER).
 */
export const SERVER_SIDE_APPLY = 'ServerSideApply=true';

/**
 * The manager whose fields a child's first server-side apply takes over (LABELS.clientSideApplyMigrationManager):
 * Argo CD's own, as its client-side applies wrote them (Applications rendered before every child applied server-side,
 * SERVER_SIDE_APPLY). So a cluster synced by an earlier release of the toolkit moves every field it owns to the `Apply`
 * set at the next sync of each Application, and a field a later commit drops is removed. Not the default
 * (`kubectl-client-side-apply`): that would take over, and then remove, the fields an adopted object's installer set
 * with `kubectl apply` and the render leaves out.
 */
export const CLIENT_SIDE_APPLY_MIGRATION_MANAGER = ARGOCD_FIELD_MANAGER;

/** Everything one Argo CD Application of a cluster needs; the constructs turn it into objects. */
export interface ApplicationPlan {
  readonly name: string;
  /** The folder it owns (`gitops` for the root), or undefined for an add-on from an upstream source. */
  readonly folder?: string;
  readonly source: ApplicationSpecSource;
  /** The API server it deploys to; undefined: the cluster's (GitopsPlan.destinationServer). */
  readonly destinationServer?: string;
  readonly destinationNamespace: string;
  /** undefined: no wave (the root). */
  readonly wave?: number;
  /** undefined: synced by hand. */
  readonly automated?: { readonly prune: boolean; readonly selfHeal: boolean };
  /** How a failed automated sync is retried (with `automated` only). */
  readonly retry?: RetryPolicy;
  /**
   * The longest the root's sync waits on it when it does not get Healthy (gitops.waveWait, in seconds): read by the
   * Application health check from the annotation LABELS.waveWait. Undefined for the root and the Applications applied
   * by hand, which nothing waits on.
   */
  readonly waveWaitSeconds?: number;
  readonly syncOptions: readonly string[];
  readonly serverSideDiff: boolean;
  readonly finalizer: boolean;
  readonly ignoreDifferences: readonly IgnoredDifference[];
  readonly namespaceLabels: Readonly<Record<string, string>>;
  /** The kinds it installs (CRDs), for the wave check. */
  readonly provides: readonly GroupKind[];
  /**
   * Applied by hand, outside the app-of-apps: the samples (a never-synced child would keep the root's
   * health at Missing for ever, so the root does not create it), and the root itself, which the bootstrap
   * applies: an Application that syncs itself waits in its own sync for its own health, which is Progressing
   * while that sync runs (the rule self-tracking-application).
   */
  readonly byHand?: boolean;
}

export interface ProjectPlan {
  readonly name: string;
  readonly sourceRepos: readonly string[];
  /** Namespaces the Applications may write to, sorted. */
  readonly namespaces: readonly string[];
  /** Cluster-scoped kinds the Applications may write, sorted. */
  readonly clusterKinds: readonly GroupKind[];
  /**
   * Destinations on another API server than the cluster's: the Argo CD namespace of the hub that runs a cluster's
   * Argo CD objects (gitops.destinationServer not the in-cluster server), where the root applies them.
   */
  readonly argocdDestinations: readonly { readonly server: string; readonly namespace: string }[];
}

export interface GitopsPlan {
  readonly namespace: string;
  readonly destinationServer: string;
  readonly project: ProjectPlan;
  /** The root (app-of-apps) first, then the installs, then one per folder in wave order. */
  readonly applications: readonly ApplicationPlan[];
}

/** The namespace most objects of a folder use (ties: alphabetical); `fallback` when all are cluster-scoped. */
function mainNamespace(objects: readonly Manifest[], fallback: string): string {
  const counts = new Map<string, number>();
  for (const m of objects) {
    const ns = m.metadata.namespace;
    if (ns) counts.set(ns, (counts.get(ns) ?? 0) + 1);
  }
  const ranked = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return ranked[0]?.[0] ?? fallback;
}

/** What the wave order needs to know of a managed install. */
export interface WaveInstall {
  readonly name: string;
  /** The kinds it installs: folders with such objects sync after it. */
  readonly provides: readonly GroupKind[];
  /** It claims volumes of the default StorageClass: it syncs after the folders that render StorageClasses. */
  readonly needsDefaultStorageClass: boolean;
  /**
   * Kinds its manifests create: it syncs after every other install that provides one of them (the Applications of
   * one wave sync together, so a custom resource of the same wave as its CRD's install races it).
   */
  readonly clusterKinds?: readonly GroupKind[];
}

/** The key of an install in the map folderWaves returns. */
export const installWaveKey = (name: string) => `install:${name}`;

/**
 * Waves of the component folders and the managed installs: installs in WAVES.installs unless they need a
 * folder's StorageClasses (then after that folder) or create custom resources of a kind another install provides
 * (then after that install); each folder at least its tier and after the installs'
 * wave, and after every install or folder that defines its kinds (CRDs) or creates its namespaces. Throws
 * when folders and installs depend on each other in a circle. Installs are keyed with installWaveKey.
 */
export function folderWaves(folders: readonly RenderedFolder[], installs: readonly WaveInstall[] = []): Map<string, number> {
  const defines = new Map<string, readonly GroupKind[]>([
    ...folders.map((f) => [f.folder, kindsDefinedBy(f.objects)] as const),
    ...installs.map((i) => [installWaveKey(i.name), i.provides] as const),
  ]);
  const namespacesCreated = new Map(folders.map((f) => [f.folder, new Set(f.objects.filter((m) => m.kind === 'Namespace' && m.apiVersion === 'v1').map((m) => m.metadata.name))]));
  const storageFolders = folders.filter((f) => f.objects.some((m) => m.kind === 'StorageClass' && m.apiVersion.startsWith('storage.k8s.io/'))).map((f) => f.folder);
  const deps = new Map<string, string[]>();
  for (const f of folders) {
    const needs = new Set<string>();
    for (const m of f.objects) {
      const gk = groupKindOf(m);
      for (const [other, kinds] of defines) {
        if (other !== f.folder && isProvided(gk, kinds)) needs.add(other);
      }
      for (const other of folders) {
        const ns = m.metadata.namespace;
        if (other.folder !== f.folder && ns && namespacesCreated.get(other.folder)!.has(ns)) needs.add(other.folder);
      }
    }
    deps.set(f.folder, [...needs].sort());
  }
  for (const i of installs) {
    const creates = (i.clusterKinds ?? []).filter((gk) => !isBuiltInGroup(gk.group) && gk.kind !== 'CustomResourceDefinition' && !isProvided(gk, i.provides));
    const providers = installs.filter((o) => o !== i && creates.some((gk) => isProvided(gk, o.provides))).map((o) => installWaveKey(o.name));
    deps.set(installWaveKey(i.name), [...(i.needsDefaultStorageClass ? storageFolders : []), ...providers.sort()]);
  }
  const floor = installs.length === 0 ? WAVES.config : Math.max(WAVES.config, WAVES.installs + 1);
  const waves = new Map<string, number>([
    ...folders.map((f) => [f.folder, Math.max(FOLDER_TIERS[f.folder] ?? WAVES.config, floor)] as const),
    ...installs.map((i) => [installWaveKey(i.name), WAVES.installs] as const),
  ]);
  for (let round = 0; round <= waves.size; round++) {
    let changed = false;
    for (const [node, wave] of waves) {
      const needed = Math.max(wave, ...deps.get(node)!.map((o) => waves.get(o)! + 1));
      if (needed !== wave) {
        waves.set(node, needed);
        changed = true;
      }
    }
    if (!changed) return waves;
  }
  const cyclic = [...deps].filter(([, d]) => d.length > 0).map(([node, d]) => `${node} -> ${d.join(', ')}`);
  throw new Error(`gitops: component folders and installs depend on each other, no wave order exists: ${cyclic.join('; ')}`);
}

/** Plans the Argo CD objects of one cluster from its model and its rendered component folders. */
export function planGitops(model: ClusterModel, folders: readonly RenderedFolder[]): GitopsPlan {
  const g = model.description.gitops;
  const projectName = g.project ?? model.name;
  const configSync = { prune: g.automated.prune, selfHeal: g.automated.selfHeal };
  const waveWaitSeconds = durationSeconds(g.waveWait);
  const gitSource = (folder: string): ApplicationSpecSource => ({ repoUrl: g.repoURL, targetRevision: g.targetRevision, path: `${g.path}/${folder}` });
  const components = folders.filter((f) => f.folder !== GITOPS_FOLDER);

  const installs = managedInstalls(model);
  const installed = installs.flatMap((i) => i.provides);
  // CRDs that arrive in this sync: from the installs, or from a component folder.
  const arriving = [...installed, ...components.flatMap((f) => kindsDefinedBy(f.objects))];

  const waves = folderWaves(components, installs);
  const installApps: ApplicationPlan[] = installs.map((i) => ({
    name: `${model.name}-${i.name}`,
    source: i.source,
    destinationNamespace: i.namespace,
    wave: waves.get(installWaveKey(i.name))!,
    automated: configSync,
    retry: CHILD_RETRY,
    waveWaitSeconds,
    syncOptions: [
      ...(i.createNamespace ? ['CreateNamespace=true'] : []),
      SERVER_SIDE_APPLY,
    ],
    serverSideDiff: true,
    // No cascading delete: dropping an install (e.g. back to "preinstalled") deletes its Application only, and what it
    // installed keeps running (synth and diff say so: render/deletions.ts clusterFate).
    finalizer: false,
    ignoreDifferences: i.ignoreDifferences,
    namespaceLabels: i.namespaceLabels,
    provides: i.provides,
  }));

  const folderApps: ApplicationPlan[] = components.map((f) => {
    const kinds = f.objects.map(groupKindOf);
    const crdsArrive = kinds.some((gk) => gk.kind !== 'CustomResourceDefinition' && isProvided(gk, arriving));
    // A folder built on an upstream install (the argocd folder) applies what its bases create too.
    const upstream = f.kustomization?.footprint;
    const manual = MANUAL_FOLDERS.has(f.folder);
    return {
      name: folderApplicationName(model.name, f.folder),
      folder: f.folder,
      source: gitSource(f.folder),
      destinationNamespace: mainNamespace(f.objects, g.namespace),
      wave: waves.get(f.folder)!,
      automated: manual ? undefined : configSync,
      retry: manual ? undefined : CHILD_RETRY,
      waveWaitSeconds: manual ? undefined : waveWaitSeconds,
      syncOptions: [
        ...(crdsArrive ? ['SkipDryRunOnMissingResource=true'] : []),
        SERVER_SIDE_APPLY,
      ],
      serverSideDiff: true,
      // Cascading delete cleans up what this toolkit created; adopted objects opt out with their own
      // Delete=false (and Prune=false) sync options, which win over the Application's (model/adoption.ts).
      // Not for an upstream install: deleting the Application of Argo CD itself must not take Argo CD, its CRDs
      // and with them every Application of the cluster.
      finalizer: upstream === undefined,
      ignoreDifferences: [],
      namespaceLabels: {},
      provides: kindsDefinedBy(f.objects),
      byHand: manual,
    };
  }).sort((a, b) => a.wave! - b.wave! || (a.name < b.name ? -1 : 1));

  const root: ApplicationPlan = {
    name: model.name,
    folder: GITOPS_FOLDER,
    source: { ...gitSource(GITOPS_FOLDER), kustomize: ROOT_KUSTOMIZE },
    // the AppProject and the Applications go to the Argo CD that runs them: the in-cluster server, whether that is the
    // cluster itself or a hub that reaches the cluster at gitops.destinationServer
    destinationServer: IN_CLUSTER_SERVER,
    destinationNamespace: g.namespace,
    automated: configSync,
    retry: ROOT_RETRY,
    syncOptions: [],
    serverSideDiff: false,
    // Deleting the root must not cascade into every component of the cluster.
    finalizer: false,
    ignoreDifferences: [],
    namespaceLabels: {},
    provides: [],
    byHand: true,
  };
  const applications = [root, ...installApps, ...folderApps];

  const namespaces = new Set<string>([g.namespace]);
  const clusterKinds = new Map<string, GroupKind>();
  for (const f of components) {
    for (const m of f.objects) {
      if (m.metadata.namespace) namespaces.add(m.metadata.namespace);
      else clusterKinds.set(groupKindKey(groupKindOf(m)), groupKindOf(m));
    }
    for (const gk of f.kustomization?.footprint.clusterKinds ?? []) clusterKinds.set(groupKindKey(gk), { group: gk.group, kind: gk.kind });
    if (f.kustomization?.namespace) namespaces.add(f.kustomization.namespace);
  }
  for (const a of applications) namespaces.add(a.destinationNamespace);
  for (const i of installs) {
    i.extraNamespaces.forEach((ns) => namespaces.add(ns));
    const kinds = i.createNamespace ? [...i.clusterKinds, { group: '', kind: 'Namespace' }] : i.clusterKinds;
    kinds.forEach((gk) => clusterKinds.set(groupKindKey(gk), gk));
  }
  const sourceRepos = [...new Set(applications.map((a) => a.source.repoUrl))].sort();

  return {
    namespace: g.namespace,
    destinationServer: g.destinationServer,
    project: {
      name: projectName,
      sourceRepos,
      namespaces: [...namespaces].sort(),
      clusterKinds: [...clusterKinds.values()].sort((a, b) => (groupKindKey(a) < groupKindKey(b) ? -1 : 1)),
      argocdDestinations: g.destinationServer === IN_CLUSTER_SERVER ? [] : [{ server: IN_CLUSTER_SERVER, namespace: g.namespace }],
    },
    applications,
  };
}
