import { ClusterIndex } from './cluster-index';
import { ClusterView, ScopeOf } from './cluster-view';
import { applicationSources, folderOfPath } from './gitops';
import { groupKindKey } from '../components/gitops/api-kinds';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { ARGOCD_FIELD_MANAGER, ARGOCD_TRACKING_ANNOTATION, LABELS, syncOptionsOf, syncWave } from '../model/names';
import { apiGroup, definedKind, Manifest } from '../render/manifest';
import { RenderedSource } from '../upstream/render';

/*
 * The order in which Argo CD applies a rendered cluster: the bootstrap the README gives (the argocd folder, then the
 * gitops folder, by kubectl), then every Application in the order of its sync wave (the root first), each source's
 * objects in Argo CD's phases (PreSync hooks, Sync, PostSync hooks) and resource waves, per wave the Namespaces, then
 * the CRDs, then the rest. `verify` dry-runs a cluster in this order; the control plane tests apply it.
 */

export { ARGOCD_FIELD_MANAGER, syncOptionsOf, syncWave };


/** The phases of a sync, in order. */
export type SyncPhase = 'PreSync' | 'Sync' | 'PostSync';

/**
 * The phase Argo CD syncs an object in: its own hook annotation, else its Helm hook mapped as Argo CD maps it
 * (pre-install/pre-upgrade: PreSync; post-install/post-upgrade: PostSync); undefined for a hook that never runs on a
 * sync (Helm's pre/post-delete and rollback hooks, Argo CD's PreDelete, PostDelete, SyncFail, Skip).
 */
export function syncPhase(m: Manifest): SyncPhase | undefined {
  const annotations = m.metadata.annotations ?? {};
  const split = (v: string) => v.split(',').map((s) => s.trim());
  const argo = annotations['argocd.argoproj.io/hook'];
  if (argo !== undefined) {
    const hooks = split(argo);
    return hooks.includes('PreSync') ? 'PreSync' : hooks.includes('Sync') ? 'Sync' : hooks.includes('PostSync') ? 'PostSync' : undefined;
  }
  const helm = annotations['helm.sh/hook'];
  if (helm === undefined) return 'Sync';
  const hooks = split(helm);
  if (hooks.some((h) => h === 'pre-install' || h === 'pre-upgrade')) return 'PreSync';
  if (hooks.some((h) => h === 'post-install' || h === 'post-upgrade')) return 'PostSync';
  return undefined;
}

/** One object of the sync, and where it comes from. */
export interface SyncObject {
  readonly object: Manifest;
  /** The Application that applies it (`pre-installed` for what the cluster has before Argo CD). */
  readonly application: string;
  /** `chart kueue 0.19.2`, `folder dist/x/storage`, `syncOptions CreateNamespace=true`. */
  readonly source: string;
  /** The sync wave of its Application (-Infinity for what the cluster has before Argo CD). */
  readonly wave: number;
}

/** One source of an Application and the objects Argo CD syncs of it (copies: placeObjects sets their namespaces). */
export interface SyncSource {
  readonly source: RenderedSource;
  readonly objects: SyncObject[];
}

/** An object that is not applied, and why. */
export interface LeftOut {
  readonly object: SyncObject;
  readonly why: string;
}

/**
 * The objects of each rendered source that Argo CD syncs: every object but the hooks that never run on a sync
 * (left out, with the reason). A source that did not render is an error: nothing of it could be ordered.
 */
export function syncSources(sources: readonly RenderedSource[], cluster: string): { sources: SyncSource[]; leftOut: LeftOut[] } {
  const failed = sources.filter((s) => s.problem !== undefined);
  if (failed.length > 0) throw new Error(`${cluster}: sources that did not render: ${failed.map((s) => `${s.what}: ${s.problem!.message}`).join('; ')}`);
  const leftOut: LeftOut[] = [];
  const out: SyncSource[] = [];
  for (const source of sources) {
    const app = source.application;
    const objects: SyncObject[] = [];
    for (const m of source.objects) {
      const planned = { object: structuredClone(m) as Manifest, application: app.metadata.name, source: source.what, wave: syncWave(app) };
      const annotations = planned.object.metadata.annotations ?? {};
      if (syncPhase(planned.object) === undefined) leftOut.push({ object: planned, why: `a hook Argo CD does not run on a sync (${annotations['argocd.argoproj.io/hook'] ?? annotations['helm.sh/hook']})` });
      else objects.push(planned);
    }
    out.push({ source, objects });
  }
  return { sources: out, leftOut };
}

/** `group/Kind` of the kind a CustomResourceDefinition defines (groupKindKey of its definedKind). */
export function crdKey(crd: Manifest): string {
  return groupKindKey(definedKind(crd) ?? { group: '', kind: '' });
}

/**
 * Sets the namespace of every object as Argo CD does: a namespaced object without one gets its Application's
 * destination namespace, a cluster-scoped one loses any it names. The scope comes from a CRD among the objects,
 * else `scopeOf` (the server's discovery); an object of a kind of unknown scope is left as it is. Answers the
 * namespaces the namespaced objects are in.
 */
export function placeObjects(sources: readonly SyncSource[], scopeOf: ScopeOf = () => undefined): Set<string> {
  const crds = new Map<string, 'Namespaced' | 'Cluster'>();
  for (const s of sources) {
    for (const o of s.objects) if (o.object.kind === 'CustomResourceDefinition') crds.set(crdKey(o.object), (o.object.spec as { scope: 'Namespaced' | 'Cluster' }).scope);
  }
  const used = new Set<string>();
  for (const s of sources) {
    for (const o of s.objects) {
      const scope = crds.get(`${apiGroup(o.object.apiVersion)}/${o.object.kind}`) ?? scopeOf(o.object.apiVersion, o.object.kind);
      const metadata = o.object.metadata as { namespace?: string };
      if (scope === 'Cluster') {
        delete metadata.namespace;
      } else if (scope === 'Namespaced') {
        metadata.namespace ??= s.source.namespace;
        used.add(metadata.namespace);
      }
    }
  }
  return used;
}

/** When what one Application brings (a CRD, a namespace) is there for an object an Application syncs. */
export type Arrival = 'before' | 'same-wave' | 'after';

/**
 * Whether what Application `from` brings (a CRD, a namespace) is there when Application `to` syncs an object that
 * needs it. The root syncs its Applications wave by wave, a wave once every Application of the waves before it is
 * healthy, and the Applications of one wave together: only a strictly earlier wave is in time. The same Application is
 * (Argo CD applies its Namespaces and CRDs first), unless its operator applies the CRD at run time, after this sync.
 * The same wave races it whatever SkipDryRunOnMissingResource says: that option skips only the dry run of a kind not
 * served yet, and the apply fails until the other sync has created what it needs. check's crd-before-cr and verify's
 * dry run both decide by this.
 */
export function arrival(
  from: { readonly application: string; readonly wave: number; readonly atRunTime?: boolean },
  to: { readonly application: string; readonly wave: number },
): Arrival {
  if (from.application === to.application) return from.atRunTime ? 'after' : 'before';
  if (from.wave < to.wave) return 'before';
  return from.wave === to.wave ? 'same-wave' : 'after';
}

/** A step of the sync: objects applied together, by the bootstrap or by Argo CD's sync of one Application. */
export interface SyncStep {
  /** `instant-cluster-kueue (wave 1) folder dist/instant-cluster/kueue: CustomResourceDefinitions`. */
  readonly label: string;
  /** The README's bootstrap (kubectl apply), not Argo CD. */
  readonly bootstrap: boolean;
  readonly application: string;
  /** The Application's sync wave. */
  readonly wave: number;
  readonly phase: SyncPhase;
  readonly objects: readonly SyncObject[];
}

export interface SyncStepOptions {
  /**
   * Put Argo CD's tracking annotation on what Argo CD applies (every object but CRDs and the namespaces
   * CreateNamespace=true makes), as its repo server and controller do: `<application>:<group>/<Kind>:<namespace>/<name>`,
   * the namespace of a cluster-scoped object being the Application's destination namespace.
   * @default false
   */
  readonly tracking?: boolean;
}

/** The tracking annotation Argo CD puts on an object it syncs for an Application (annotation tracking, no installation ID). */
export function trackingId(application: string, destinationNamespace: string, m: Manifest): string {
  return `${application}:${apiGroup(m.apiVersion)}/${m.kind}:${m.metadata.namespace || destinationNamespace}/${m.metadata.name}`;
}

/**
 * The steps of a sync of placed sources (placeObjects): the bootstrap (the argocd folder, then the gitops folder),
 * then every Application by sync wave (the root first, then by name), each source by phase and resource wave, per
 * wave its Namespaces, its CRDs, then the rest; an Application with CreateNamespace=true creates its destination
 * first. The bootstrap's objects come again in their Applications' syncs (Argo CD takes them over): a consumer that
 * applies each object once skips those.
 */
export function syncSteps(view: ClusterView, sources: readonly SyncSource[], opts: SyncStepOptions = {}): SyncStep[] {
  const index = new ClusterIndex(view);
  const folderOf = (s: RenderedSource) => {
    const src = applicationSources<{ path?: string }>(s.application)[s.index];
    return src?.path === undefined ? undefined : folderOfPath(index, src.path);
  };
  const steps: SyncStep[] = [];
  const push = (label: string, bootstrap: boolean, p: SyncSource) => {
    const app = p.source.application;
    const base = { bootstrap, application: app.metadata.name, wave: syncWave(app) };
    const track = (o: SyncObject): SyncObject => {
      if (bootstrap || !opts.tracking || o.object.kind === 'CustomResourceDefinition') return o;
      const tracking = trackingId(app.metadata.name, p.source.namespace, o.object);
      const annotations = { ...o.object.metadata.annotations, [ARGOCD_TRACKING_ANNOTATION]: tracking };
      const metadata = { ...o.object.metadata, annotations };
      return { ...o, object: { ...o.object, metadata } };
    };
    if (!bootstrap && syncOptionsOf(app).includes('CreateNamespace=true')) {
      const object: Manifest = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: p.source.namespace } };
      steps.push({ ...base, label: `${label}: CreateNamespace=true`, phase: 'PreSync', objects: [{ object, application: app.metadata.name, source: 'syncOptions CreateNamespace=true', wave: syncWave(app) }] });
    }
    for (const phase of ['PreSync', 'Sync', 'PostSync'] as const) {
      const objects = p.objects.filter((o) => syncPhase(o.object) === phase);
      const waves = [...new Set(objects.map((o) => syncWave(o.object)))].sort((a, b) => a - b);
      for (const w of waves) {
        const inWave = objects.filter((o) => syncWave(o.object) === w).map(track);
        const at = `${label}${phase === 'Sync' ? '' : ` ${phase}`}${waves.length > 1 ? ` wave ${w}` : ''}`;
        const ns = inWave.filter((o) => o.object.kind === 'Namespace');
        const defs = inWave.filter((o) => o.object.kind === 'CustomResourceDefinition');
        const rest = inWave.filter((o) => o.object.kind !== 'Namespace' && o.object.kind !== 'CustomResourceDefinition');
        if (ns.length > 0) steps.push({ ...base, label: `${at}: Namespaces`, phase, objects: ns });
        if (defs.length > 0) steps.push({ ...base, label: `${at}: CustomResourceDefinitions`, phase, objects: defs });
        if (rest.length > 0) steps.push({ ...base, label: at, phase, objects: rest });
      }
    }
  };
  const root = sources.find((p) => p.source.type === 'folder' && folderOf(p.source) === GITOPS_FOLDER);
  const argocd = sources.find((p) => p.source.type !== 'helm' && folderOf(p.source) === 'argocd');
  if (argocd) push(`bootstrap: kubectl apply --server-side -k ${argocd.source.what}`, true, argocd);
  if (root) push(`bootstrap: kubectl apply -k ${root.source.what}`, true, root);
  const ordered = [...sources].sort((a, b) => (a === root ? -1 : b === root ? 1 : 0)
    || syncWave(a.source.application) - syncWave(b.source.application)
    || a.source.application.metadata.name.localeCompare(b.source.application.metadata.name) || a.source.index - b.source.index);
  for (const p of ordered) {
    const app = p.source.application;
    push(`${app.metadata.name}${p === root ? ' (root)' : ` (wave ${syncWave(app)})`} ${p.source.what}`, false, p);
  }
  return steps;
}
