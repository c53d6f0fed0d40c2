import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { apiGroup, definedKind, describeObject, Manifest, manifestFileName, objectId, RenderedFolder } from './manifest';
import { isWriteArtifact } from './write';
import { InputError, printable } from '../errors';
import { RenderedFile } from './folder-files';
import { isObjectPath, manifestFiles, readManifests } from './tree';
import { decidingSyncOption, DELETION_APPROVED_NOW, FLEET_FOLDER, folderApplicationName, GITOPS_FOLDER, HELM, hasResourcesFinalizer, LABELS, ownSyncOptions, RESOURCES_FINALIZER, syncOptionValue } from '../model/names';

/**
 * Objects that leave the rendered output. Argo CD prunes what leaves dist/ (and deletes what an Application takes with
 * it), so `synth` refuses to remove rendered objects unless `--allow-delete`, and `diff` exits 1 on them: both list them
 * on standard error the same way. What argo-cd v3.5.1 (commit 109ca7ca7113) does instead of a plain prune is said once,
 * here, per object (clusterFate), in the context of the change (FateContext: the Application that syncs the object, as
 * the last render wrote it, and whether it leaves too): a CRD, an object whose sync options say `Prune=false` (its own,
 * or its Application's), an object no Application tracks and the objects of a dropped cluster's folder stay in the
 * cluster (listed with `stays`, nothing is asked for them); an object with `Prune=confirm` is pruned only once someone
 * confirms, one whose Application does not prune on its own only at a sync by hand with prune, one whose Application
 * leaves with the resources finalizer goes with it, and an Application without that finalizer is deleted alone (listed
 * with a `note`, asked for as any deletion).
 */

/** One object of a rendered tree, with the file it is in (relative to the output root). */
export interface TreeObject {
  readonly file: string;
  readonly manifest: Manifest;
}

/** What Argo CD does with a rendered object that left dist/, where that is not simply to prune it when it syncs. */
export interface ClusterFate {
  /**
   * Set when the cluster keeps the object although it leaves the output (a CRD, `Prune=false`, a template, what an
   * Application without the resources finalizer leaves behind, a dropped cluster's objects): what happens instead.
   * Such a removal deletes nothing in the cluster, so neither synth nor diff asks --allow-delete for it.
   */
  readonly stays?: string;
  /**
   * Set when Argo CD deletes it otherwise than at once and alone (`Prune=confirm`; a sync by hand with prune; with its
   * Application, which leaves too; an Application without the resources finalizer): how.
   */
  readonly note?: string;
}

/** An object a write removes from the output: its cluster folder, `Kind namespace/name` and file (root-relative). */
export interface Deletion extends ClusterFate {
  readonly cluster: string;
  readonly object: string;
  readonly file: string;
  /** Set for an entry of the output that is no rendered object (a file, folder or link of yours, an unreadable file): the cluster is not concerned. */
  readonly notAnObject?: true;
}

/**
 * What the cluster does with a CRD that leaves dist/: nothing. Argo CD's repo server sets no tracking annotation on a
 * CRD (argo-cd v3.5.1, reposerver/repository/repository.go: `!kube.IsCRD(target)`), so no Application owns one and
 * no sync prunes it; the custom resources Argo CD applied (tracked as any object) are pruned. `kind`: the CRD's
 * spec.names.kind, when known.
 */
export function crdStays(name: string, kind?: string): string {
  const crs = kind ? `${kind} objects` : 'custom resources';
  return `stays in the cluster: Argo CD never prunes a CRD (no Application owns one), only the ${crs} it applied; `
    + `an admin deletes it if wanted: kubectl delete crd ${name} (deletes every ${kind ?? 'custom resource of it'} left)`;
}

/** The value of a resource-level sync option as gitops-engine reads it (model/names.ts syncOptionValue: the first `KEY=` entry). */
const syncOption = (m: Manifest, key: string): string | undefined => syncOptionValue(ownSyncOptions(m), key);

/** `kubectl delete` of one object: its kind (with the group, but for the core group), namespace and name. */
function kubectlDelete(m: Manifest): string {
  const group = apiGroup(m.apiVersion);
  const ns = m.metadata.namespace ? ` -n ${m.metadata.namespace}` : '';
  return `kubectl delete${ns} ${m.kind.toLowerCase()}${group ? `.${group}` : ''} ${m.metadata.name}`;
}

/**
 * What clusterFate reads around an object that leaves dist/: the Application that syncs it, and what the same change
 * does to that Application. Built from the tree as the last render wrote it (fateContexts); without it, each object is
 * judged alone (its own sync options).
 */
export interface FateContext {
  /** The name of the Application that syncs the object (in the commands printed). */
  readonly application?: string;
  /** That Application as the last render wrote it (finalizer, sync options, automated sync), when the tree holds it. */
  readonly app?: Manifest;
  /** That Application leaves dist/ in the same change (its folder is dropped): its parent prunes it. */
  readonly appLeaves?: boolean;
  /** The Application that syncs that Application (the root, or the hub's Application of the cluster), as last rendered. */
  readonly parent?: Manifest;
  /**
   * The object's whole cluster folder leaves dist/ (the cluster is dropped). `hub`: the Application a fleet hub
   * generates in place of that cluster's root (the fleet folder before the change lists it: hubApplications), which
   * leaves too.
   */
  readonly clusterDropped?: DroppedCluster;
}

/** A cluster whose whole folder leaves dist/ (FateContext.clusterDropped). */
interface DroppedCluster {
  readonly cluster: string;
  readonly hub?: Manifest;
  /** The namespace of its Applications (the root's). */
  readonly namespace?: string;
  /** Its AppProject (the root's). */
  readonly project?: string;
  /** Its Applications whose cascade waits for a confirmation (an object with Delete=confirm or Prune=confirm, not spared): waitsForConfirmation. */
  readonly confirming?: readonly string[];
}

/** Whether an object is an Argo CD Application. */
const isApplication = (m: Manifest) => m.kind === 'Application' && apiGroup(m.apiVersion) === 'argoproj.io';

/** An Application's spec.syncPolicy.automated, if it syncs on its own. */
const automatedOf = (app: Manifest): { prune?: boolean } | undefined =>
  (app.spec as { syncPolicy?: { automated?: { prune?: boolean } } } | undefined)?.syncPolicy?.automated;

/**
 * An object whose `Prune=false` decides (its own sync option, or, without one, its Application's): gitops-engine skips
 * its prune (v3.5.1 gitops-engine/pkg/sync/sync_context.go:1454-1458 pruneObject, isPruningDisabled at :333-343 with the
 * sync operation's option as default, controller/sync.go:333: "ignored (no prune)"), and its Application, still
 * tracking it, shows it OutOfSync as requiring pruning (controller/state.go:950, :991). With `Delete=false` too,
 * deleting that Application spares it as well (controller/appcontroller.go:1252-1261 shouldBeDeleted).
 */
function pruneDisabledStays(m: Manifest, ctx: FateContext): string {
  const fromApp = syncOption(m, 'Prune') === undefined && ctx.application ? ` (its Application ${ctx.application}'s)` : '';
  const alsoDelete = decidingSyncOption(m, 'Delete', ctx.app) === 'false' ? ', nor deletes it with its Application (Delete=false)' : '';
  return `stays in the cluster: Argo CD never prunes an object whose sync options${fromApp} say Prune=false${alsoDelete}; `
    + `its Application shows it OutOfSync (requires pruning) while it stays; an admin deletes it if wanted: ${kubectlDelete(m)}`;
}

/**
 * An object whose `Prune=confirm` decides (its own, the Namespaces and volume claims' DATA_SYNC_OPTIONS, or its
 * Application's): before it prunes anything, a sync that would prune such an object stops (v3.5.1
 * gitops-engine/pkg/sync/sync_context.go:1617-1624 runTasks, "Prune requires confirmation") and stays Running with the
 * message "waiting for pruning confirmation of ..." (:458-470 setRunningPhase) until the Application's
 * argocd.argoproj.io/deletion-approved is later than the operation's start (controller/sync.go:332 WithPruneConfirmed;
 * `argocd app confirm-deletion` sets it). Its Application deleted in cascade waits the same way (Delete=confirm,
 * controller/appcontroller.go:1361-1366 finalizeApplicationDeletion, RequiresDeletionConfirmation).
 */
function pruneConfirmNote(application: string | undefined): string {
  return 'Argo CD deletes it only once someone confirms (Prune=confirm): its Application waits ("waiting for pruning confirmation") '
    + `until: argocd app confirm-deletion ${application ?? '<application>'}`;
}

/**
 * An object whose Application syncs by hand only (no spec.syncPolicy.automated: the samples', Dynamo's) or with
 * `automated.prune: false` (gitops.automated.prune): the automated sync never prunes. v3.5.1 autoSync skips a sync that
 * would only prune (controller/appcontroller.go:2352-2364, "need to prune extra resources only but automated prune is
 * disabled"), and the sync it starts for other changes carries Prune from automated.prune (:2377), so gitops-engine
 * skips every prune (gitops-engine/pkg/sync/sync_context.go:1455-1456 pruneObject, "ignored (requires pruning)").
 * Only a sync with prune does: by hand, `argocd app sync --prune`.
 */
function prunedByHandOnly(app: Manifest, application: string, what = 'it'): string {
  const why = automatedOf(app) === undefined ? `${application} syncs by hand only` : `the automated sync of ${application} does not prune (automated.prune: false)`;
  return `Argo CD prunes ${what} only at a sync with prune (${why}); until then ${application} shows it OutOfSync (requires pruning): `
    + `argocd app sync ${application} --prune`;
}

/**
 * What deleting an Application without the resources finalizer does (the managed installs', the upstream Argo CD
 * folder's): the API server removes it at once, and the controller, which cleans up only an Application being deleted
 * with a propagation finalizer (v3.5.1 controller/appcontroller.go:1282 finalizeApplicationDeletion, :1344
 * `app.CascadedDeletion()`; pkg/apis/application/v1alpha1/types.go:3575), never deletes what it applied. The finalizer,
 * added before the root prunes it, makes that prune a cascading delete (CRDs and `Delete=false` objects spared,
 * appcontroller.go:1252-1261 shouldBeDeleted). rehearse's change report reads the outcome on the twin (stillInCluster).
 */
function applicationAloneNote(m: Manifest): string {
  const ns = m.metadata.namespace ? ` -n ${m.metadata.namespace}` : '';
  return 'Argo CD deletes this Application only, not what it applied (it carries no resources finalizer): that stays in the cluster, '
    + 'synced by nothing; to have it deleted too, give the Application the finalizer before the change reaches Argo CD: '
    + `kubectl patch application${ns} ${m.metadata.name} --type merge -p '{"metadata":{"finalizers":["${RESOURCES_FINALIZER}"]}}'`;
}

/**
 * An Application applied by hand (LABELS.byHand: the root, the samples'): no Application syncs the file it is in (it is
 * outside the root's kustomization), so nothing prunes it.
 */
function byHandStays(m: Manifest): string {
  return 'stays in the cluster: applied by hand, it is synced by no Application, so nothing prunes it; an admin deletes it if wanted: '
    + `${kubectlDelete(m)}${syncOption(m, 'Delete') === undefined && hasResourcesFinalizer(m) ? ' (its resources finalizer deletes what it applied too)' : ''}`;
}

/**
 * A template object (LABELS.template: the samples' per-node jobs): left out of its folder's kustomization, so Argo CD
 * never applies it and sets no tracking annotation on the copy someone created from it; no Application owns that copy,
 * so neither a sync nor a cascading delete touches it.
 */
function templateStays(m: Manifest): string {
  return 'stays in the cluster: a template created by hand (kubectl create), outside its folder\'s kustomization, so no Application tracks it '
    + `and nothing prunes or deletes it; an admin deletes what was created from it if wanted: ${kubectlDelete(m)}`;
}

/**
 * An object whose Application leaves in the same change (its folder dropped): the root prunes that Application. With the
 * resources finalizer, that prune is a cascading delete (v3.5.1 controller/appcontroller.go:1282 finalizeApplicationDeletion,
 * :1344-1366): every object it tracks goes, `Prune=false` or not (whether it is spared is read from `Delete=` only), but a CRD, an
 * object whose deciding `Delete=` is false or that says helm.sh/resource-policy: keep (:1252-1261 shouldBeDeleted), and
 * one with `Delete=confirm` or `Prune=confirm` waits for the confirmation (:1361-1366; controller/state.go:1171-1191). Without the finalizer, that Application goes alone and its
 * objects stay, synced by nothing. Undefined when the context says nothing of the Application.
 */
function leavesWithApplication(m: Manifest, ctx: FateContext): ClusterFate | undefined {
  if (!ctx.appLeaves || !ctx.app) return undefined;
  if (ctx.app.metadata.annotations?.[LABELS.byHand] === 'true') {
    // the samples' Application: outside the root's kustomization, nothing prunes it; it reads a folder that is gone
    return {
      stays: `stays in the cluster: its Application ${ctx.app.metadata.name} leaves dist/ too, but it was applied by hand and nothing deletes it: `
        + 'it reads a path that no longer exists, so it syncs nothing, and Argo CD shows it with a ComparisonError ("app path does not exist") once the controller\'s '
        + 'repo-error grace period (180 s by default) has passed; '
        + `deleting it by hand (${kubectlDelete(ctx.app)}) `
        + (hasResourcesFinalizer(ctx.app) ? 'deletes this too (its resources finalizer)' : 'leaves this (no resources finalizer)'),
    };
  }
  const fate = leavesWithCascade(m, ctx, ctx.app);
  const parent = ctx.parent;
  // the Application itself goes only when its parent prunes it: until then it keeps the commit it was pinned to
  if (fate.note === undefined || !parent || automatedOf(parent)?.prune === true) return fate;
  return { note: `${prunedByHandOnly(parent, parent.metadata.name, `its Application ${ctx.application ?? ctx.app.metadata.name}`)}; then: ${fate.note}` };
}

/**
 * Whether the cascading delete of `application` (its resources finalizer) waits for a confirmation before it deletes
 * anything: `m` says Delete=confirm or Prune=confirm (controller/state.go:1171-1191 isObjRequiresDeletionConfirmation,
 * read at appcontroller.go:1363-1366) and is not spared (Delete=false, helm.sh/resource-policy: keep, a CRD).
 */
function waitsForConfirmation(m: Manifest, application: Manifest): boolean {
  if (!hasResourcesFinalizer(application) || definedKind(m) || m.metadata.annotations?.[HELM.resourcePolicy] === HELM.keep) return false;
  const del = decidingSyncOption(m, 'Delete', application);
  return del !== 'false' && (del === 'confirm' || decidingSyncOption(m, 'Prune', application) === 'confirm');
}

/** leavesWithApplication once `application` is deleted. */
function leavesWithCascade(m: Manifest, ctx: FateContext, application: Manifest): ClusterFate {
  const app = ctx.application ?? application.metadata.name;
  if (!hasResourcesFinalizer(application)) {
    return {
      stays: `stays in the cluster, synced by nothing: its Application ${app} leaves too and carries no resources finalizer, so Argo CD deletes `
        + `that Application alone (controller/appcontroller.go finalizeApplicationDeletion); an admin deletes it if wanted: ${kubectlDelete(m)}`,
    };
  }
  const del = decidingSyncOption(m, 'Delete', application);
  if (del === 'false' || m.metadata.annotations?.[HELM.resourcePolicy] === HELM.keep) {
    const why = del === 'false' ? 'Delete=false' : `${HELM.resourcePolicy}: ${HELM.keep}`;
    return {
      stays: `stays in the cluster, synced by nothing: its Application ${app} leaves too, and its cascading delete spares an object that says ${why}; `
        + `an admin deletes it if wanted: ${kubectlDelete(m)}`,
    };
  }
  const prune = decidingSyncOption(m, 'Prune', application);
  if (waitsForConfirmation(m, application)) {
    return {
      note: `deleted with its Application ${app}, which leaves too (resources finalizer), once someone confirms (${del === 'confirm' ? 'Delete' : 'Prune'}=confirm): `
        + `argocd app confirm-deletion ${app}`,
    };
  }
  const despite = prune === 'false' ? ' (Prune=false does not spare it: whether a cascading delete spares an object is read from Delete= only)' : '';
  const alone = isApplication(m) && !hasResourcesFinalizer(m) ? `; ${applicationAloneNote(m)}` : '';
  return { note: `deleted with its Application ${app}, which leaves too: its resources finalizer deletes what it applied${despite}${alone}` };
}

/** The bound of the take-down's `kubectl wait` (rootPathGone). */
const TAKE_DOWN_WAIT = '10m';

/**
 * A dropped cluster's objects (its whole folder leaves dist/): the Application that syncs its gitops folder (the root,
 * applied by hand, or the one the hub's ApplicationSet generates in its place, which the hub keeps until dist/fleet/ is
 * applied there again) stays and reads a path that no longer exists. v3.5.1's repo server fails the manifests ("app path
 * does not exist", util/app/path/path.go:26-27, reposerver/repository/repository.go:540). Not at once: the controller
 * ignores a repo error for its repo-error grace period (controller/state.go:700-711: the first occurrence, then every
 * one until it is older than the period, unless the comparison forces the revision's resolution, as a refresh asked for
 * does, appcontroller.go:2112-2115), returning before it writes a status or syncs (appcontroller.go:1927-1929): the
 * Application keeps the status of its last comparison. The period is 180 s by default (--repo-error-grace-period-seconds,
 * the resync period plus its jitter: cmd/argocd-application-controller/commands/argocd_application_controller.go:45-51,
 * :262; not rendered). Then the comparison sets a ComparisonError ("Failed to load target state", controller/state.go:698-699)
 * and the sync status Unknown (:1034-1035), and autoSync syncs only an OutOfSync Application
 * (controller/appcontroller.go:2347-2349): nothing is pruned. The child Applications keep the commit the root last gave
 * them (components/gitops/plan.ts revisionPins), where their folders still exist.
 *
 * The take-down is four commands, in order (run as printed on the real Argo CD: test/cluster/argocd-twin.test.ts).
 * The delete does not wait (`--wait=false`): each child's cascade (finalizeApplicationDeletion,
 * controller/appcontroller.go:1344-1402) deletes nothing while one of its objects requires a confirmation not given
 * since the Application's deletion (:1363-1366, IsDeletionConfirmed: the approval must be no earlier than the
 * deletionTimestamp, so it can only follow the delete), and a waiting `kubectl delete` never returns. The annotate is
 * that approval (what `argocd app confirm-deletion` writes), for the Applications that wait for it by name: with the
 * label selector it failed on the twin, an Application whose cascade had ended between kubectl's list and its patch
 * (NotFound). The wait is bounded: each cascade deletes the highest sync wave first and waits for every
 * object it deleted to be gone (:1354-1358, :1386-1399, controller/sort_delete.go FilterObjectsForDeletion), and Kueue
 * keeps a ClusterQueue until no workload reserves quota in it (the tenants' Namespaces' deletion ends those) and a
 * ResourceFlavor while a ClusterQueue uses it (kueue v0.19.2 pkg/controller/core/clusterqueue_controller.go:193-209,
 * resourceflavor_controller.go:106-121; the flavors an adopted ClusterQueue names say Delete=false, so the cascade
 * spares them: components/kueue/chart.ts spareWhatKeptQueuesUse). The AppProject last: its finalizer keeps it while an
 * Application names it (appcontroller.go:1221-1237 finalizeProjectDeletion).
 */
function rootPathGone({ cluster, namespace = '<argocd>', project = cluster, confirming = [] }: DroppedCluster): string {
  const apps = `application -n ${namespace} -l ${LABELS.partOf}=${cluster}`;
  const confirm = confirming.length === 0 ? ''
    : `confirm the deletion of its Namespaces and volume claims, which say Delete=confirm (kubectl annotate application -n ${namespace} ${confirming.join(' ')} --overwrite ${DELETION_APPROVED_NOW}); `;
  return `its cluster's folder leaves dist/, so the Application that syncs its root (${cluster}: the root applied by hand, or the hub's) reads a path `
    + 'that no longer exists: it syncs nothing, showing the status of its last comparison for the controller\'s repo-error grace period (180 s by default), '
    + `then, or at once on a refresh (argocd app get ${cluster} --refresh), Argo CD shows it with a ComparisonError ("app path does not exist") and sync status Unknown, so nothing `
    + 'is pruned, and the child Applications keep syncing the last commit the root gave them; to take the cluster down, in this order: '
    + `delete its Applications without waiting (kubectl delete ${apps} --wait=false)${confirming.length > 0 ? ', as a cascade waits for a confirmation that counts only once given after the delete' : ''}; `
    + confirm
    + 'wait until every cascade has deleted what it applied, wave by wave, a ClusterQueue once no workload reserves quota in it '
    + `(kubectl wait --for=delete ${apps} --timeout=${TAKE_DOWN_WAIT}); `
    + `then delete its AppProject (kubectl delete appproject -n ${namespace} ${project}); `
    + 'what says Delete=false stays (the adopted objects, the ResourceFlavors and Topology an adopted ClusterQueue names, Argo CD\'s own Namespace), '
    + 'as do the CRDs and what an Application without the resources finalizer applied (Argo CD, the managed installs)';
}

/**
 * A dropped cluster whose root a fleet hub generated (the fleet folder's ApplicationSet listed it, hubApplications):
 * applied on the hub again, the ApplicationSet without its element deletes the hub's Application of the cluster
 * (v3.5.1 applicationset/controllers/applicationset_controller.go:351-353, :809-860 deleteInCluster, under the default
 * policy, which allows deletes). With the resources finalizer that is a cascading delete of the gitops folder's objects
 * (the cluster's Applications), each of which then goes as its own finalizer says: `fate`, the object's fate once its
 * Application goes. Only while the cluster is still registered on the hub: the ApplicationSet first removes the
 * finalizer of an Application whose destination is no longer a registered cluster (:843, :907-953
 * removeFinalizerOnInvalidDestination), and that delete then cascades to nothing.
 */
function hubDeletesNote(dropped: DroppedCluster, fate: string): string {
  const cluster = dropped.cluster;
  return `once dist/fleet/ is applied on the hub again (kubectl apply -k dist/fleet), its ApplicationSet deletes the hub's Application ${cluster} `
    + `(resources finalizer), and this is then ${fate}, provided the cluster is still registered on the hub (the ApplicationSet removes the finalizer of an `
    + `Application whose destination is no longer a registered cluster, and then nothing is deleted); until then nothing is deleted: ${rootPathGone(dropped)}`;
}

/**
 * What the cluster does with a rendered object that leaves dist/, where that is not simply a prune when its Application
 * syncs. `context`: the Application that syncs it and what the change does to it (fateContexts); without one, the
 * object is judged alone.
 */
export function clusterFate(m: Manifest, context: FateContext = {}): ClusterFate {
  const crd = definedKind(m);
  if (crd) return { stays: crdStays(m.metadata.name, crd.kind || undefined) };
  if (m.metadata.annotations?.[LABELS.template] === 'true') return { stays: templateStays(m) };
  if (isApplication(m) && m.metadata.annotations?.[LABELS.byHand] === 'true') return { stays: byHandStays(m) };
  const dropped = context.clusterDropped;
  if (dropped) {
    const stays = { stays: `stays in the cluster: ${rootPathGone(dropped)}` };
    // With a hub, its ApplicationSet deletes the hub's Application of the cluster (it generates it no more): with the
    // resources finalizer, the cluster's Applications go in its cascade, and what those apply as each of them goes
    // (fateContexts gives the hub's Application as the gitops folder's); without, they stay, as with no hub.
    if (!dropped.hub || !hasResourcesFinalizer(dropped.hub)) return stays;
    const fate = clusterFate(m, { ...context, clusterDropped: undefined });
    if (fate.stays !== undefined) return fate;
    return { note: hubDeletesNote(dropped, fate.note ?? 'deleted') };
  }
  const leaving = leavesWithApplication(m, context);
  if (leaving) return leaving;
  const prune = decidingSyncOption(m, 'Prune', context.app);
  if (prune === 'false') return { stays: pruneDisabledStays(m, context) };
  const how = prune === 'confirm' ? pruneConfirmNote(context.application)
    : isApplication(m) && !hasResourcesFinalizer(m) ? applicationAloneNote(m)
      : undefined;
  const app = context.app;
  if (app && (automatedOf(app) === undefined || automatedOf(app)?.prune !== true)) {
    const byHand = prunedByHandOnly(app, context.application ?? app.metadata.name);
    return { note: how ? `${byHand}; then: ${how}` : byHand };
  }
  return how ? { note: how } : {};
}

/**
 * The Application of a cluster that syncs a root-relative file of one of its folders: `<cluster>-<folder>`, the root
 * (`<cluster>`) for the gitops folder; undefined for a file outside a folder.
 */
function applicationOfFile(file: string): string | undefined {
  const [cluster, folder, ...rest] = file.split('/');
  if (rest.length === 0) return undefined;
  return folderApplicationName(cluster, folder);
}

/** The rendered objects a write removes that Argo CD deletes from the cluster (at once or once confirmed). */
export const deletedInCluster = (deletions: readonly Deletion[]): Deletion[] => deletions.filter((d) => !d.notAnObject && d.stays === undefined);

/** The rendered objects a write removes that stay in the cluster (ClusterFate.stays). */
export const keptInCluster = (deletions: readonly Deletion[]): Deletion[] => deletions.filter((d) => d.stays !== undefined);

/** The entries a write removes that are no rendered objects (files, folders and links of yours, unreadable files). */
export const otherEntries = (deletions: readonly Deletion[]): Deletion[] => deletions.filter((d) => d.notAnObject);

/** The removals synth and diff ask --allow-delete for: every one but those the cluster keeps (deletedInCluster and otherEntries). */
export const needAllowDelete = (deletions: readonly Deletion[]): Deletion[] => deletions.filter((d) => d.stays === undefined);

/** synth's lines after a write that removed something (standard error): what the cluster does with it, counted. */
export function removalSummary(deletions: readonly Deletion[], out: string): string[] {
  const deleted = deletedInCluster(deletions).length;
  const other = otherEntries(deletions).length;
  const kept = keptInCluster(deletions).length;
  return [
    ...(deleted > 0 ? [`note: ${deleted} rendered object(s) removed from ${out} (--allow-delete); Argo CD prunes them when it syncs, `
      + 'or as their line says']
      : []),
    ...(other > 0 ? [`note: ${other} other file(s) removed from ${out} (--allow-delete): no rendered objects, the cluster is not concerned`] : []),
    ...(kept > 0 ? [`warning: ${kept} rendered object(s) removed from ${out} stay in the cluster (Argo CD does not prune them, as their line says): `
      + 'delete them by hand if they are no longer wanted']
      : []),
  ];
}

/** The cluster folder (first path segment) of a root-relative file. */
export const clusterOf = (file: string) => file.split('/')[0];

/** Identity of a tree object across two renders: its cluster folder and its object identity (not its version). */
export const objectKey = (o: TreeObject) => `${clusterOf(o.file)}\0${objectId(o.manifest)}`;

const isObject = (d: unknown): d is Manifest => typeof d === 'object' && d !== null && typeof (d as Manifest).kind === 'string'
  && typeof (d as Manifest).metadata?.name === 'string';

/**
 * The objects of the given entries of an output root (each a folder, read whole; absent ones hold none),
 * with root-relative files. A file that is not YAML goes to `unreadable` (with the reason) when given,
 * and is bad input otherwise.
 */
export function readTreeObjects(root: string, names: readonly string[], unreadable?: (file: string, reason: string) => void): TreeObject[] {
  const out: TreeObject[] = [];
  for (const name of names) {
    const dir = path.join(root, name);
    if (!existsSync(dir) || !lstatSync(dir).isDirectory()) continue;
    for (const f of manifestFiles(dir)) {
      const file = path.relative(root, f).split(path.sep).join('/');
      let docs;
      try {
        docs = readManifests(f);
      } catch (e) {
        if (!(e instanceof InputError) || !unreadable) throw e;
        unreadable(file, e.message);
        continue;
      }
      for (const d of docs) if (isObject(d.manifest)) out.push({ file, manifest: d.manifest });
    }
  }
  return out;
}

/**
 * The objects of rendered folders as tree objects of the output entry `entry` (root-relative files):
 * a cluster's component folders, or the entry's own objects (`inEntry`: the fleet folder).
 */
export function treeObjects(entry: string, folders: readonly RenderedFolder[], inEntry = false): TreeObject[] {
  return folders.flatMap((f) => f.objects.map((manifest) => ({ file: [entry, ...(inEntry ? [] : [f.folder]), manifestFileName(manifest)].join('/'), manifest })));
}

/** The first line of every file synth writes says so: what it wrote is its own to replace or remove. */
const GENERATED = /^(?:# |<!-- )Generated by gpu-cluster-manifests\b/;

/** True when a file begins with synth's header line (read no further than that line). */
function generatedFile(file: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(64);
    const n = readSync(fd, head, 0, head.length, 0);
    return GENERATED.test(head.subarray(0, n).toString('utf8'));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function linkTarget(p: string): string {
  try {
    return readlinkSync(p);
  } catch {
    return '?';
  }
}

/**
 * What a write of `files` (relative to the entry) into the entry `entry` of an output root removes: the
 * rendered objects of its files on disk that `objects` (the new render) no longer holds, and everything else
 * the entry holds that the render would not write again. A file the new render writes with the same bytes
 * holds the same objects and is not read again. Every other file, folder and symbolic link counts: a file
 * that is no YAML (notes, a `.json`, a tutorial of your own) or a YAML file that cannot be read, unless the
 * render rewrites it or synth wrote it (its first line says so) and it holds no objects; a folder of your
 * own; a symbolic link (synth writes plain files and folders). An entry that is itself a symbolic link counts
 * as removed (the write replaces the link with a plain folder), and what its target holds is compared as the
 * entry's content; an entry that is a file counts as removed.
 */
export function entryDeletions(
  root: string, entry: string, files: readonly RenderedFile[], objects: readonly TreeObject[], hubs: HubApplications = new Map(),
): Deletion[] {
  const dir = path.join(root, entry);
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) return [];
  const out: Deletion[] = [];
  const gone = (rel: string, what: string) => out.push({ cluster: entry, object: what, file: rel === '' ? entry : `${entry}/${rel}`, notAnObject: true });
  let walked = dir;
  if (st.isSymbolicLink()) {
    gone('', `the symbolic link ${entry} (to ${linkTarget(dir)}), which the write replaces with a plain folder`);
    const target = statSync(dir, { throwIfNoEntry: false });
    if (!target?.isDirectory()) return out;
    walked = realpathSync(dir);
  } else if (!st.isDirectory()) {
    gone('', `the file ${entry}, which is no folder of the render`);
    return out;
  }
  const wanted = new Map(files);
  const folders = new Set<string>();
  for (const rel of wanted.keys()) {
    for (let d = path.posix.dirname(rel); d !== '.'; d = path.posix.dirname(d)) folders.add(d);
  }
  const before: TreeObject[] = [];
  const walk = (rel: string) => {
    const names = readdirSync(path.join(walked, rel)).sort();
    if (names.length === 0 && rel !== '' && !folders.has(rel)) gone(rel, `the empty folder ${rel}/`);
    for (const name of names) {
      const r = rel === '' ? name : `${rel}/${name}`;
      if (rel === '' && isWriteArtifact(name)) continue;
      const p = path.join(walked, r);
      const l = lstatSync(p);
      if (l.isSymbolicLink()) {
        gone(r, `the symbolic link ${r} (to ${linkTarget(p)})`);
        continue;
      }
      if (l.isDirectory()) {
        walk(r);
        continue;
      }
      const content = wanted.get(r);
      if (content !== undefined && l.isFile() && l.size === Buffer.byteLength(content) && readFileSync(p, 'utf8') === content) continue;
      if (!l.isFile()) {
        gone(r, `${r}, which is no regular file`);
        continue;
      }
      if (isObjectPath(`${entry}/${r}`)) {
        let docs;
        try {
          docs = readManifests(p);
        } catch (e) {
          if (!(e instanceof InputError)) throw e;
          if (content === undefined) gone(r, `the objects of an unreadable file (${e.message})`);
          continue;
        }
        const file = `${entry}/${r}`;
        for (const d of docs) if (isObject(d.manifest)) before.push({ file, manifest: d.manifest });
        continue;
      }
      if (content === undefined && !generatedFile(p)) gone(r, `the file ${r}, which the render does not write`);
    }
  };
  walk('');
  return [...out, ...removedObjects(before, objects, hubs)];
}

/**
 * What removing whole entries of an output root (clusters dropped from the fleet, anything else at its
 * root) removes: entryDeletions of each with nothing written in its place.
 */
export function removedEntries(root: string, names: readonly string[]): Deletion[] {
  const hubs = hubApplications(readTreeObjects(root, [FLEET_FOLDER], () => undefined));
  return names.flatMap((name) => entryDeletions(root, name, [], [], hubs));
}


/** The cluster folders (and fleet/) of an output root, without the write protocol's bookkeeping. */
export function outputEntries(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((n) => !isWriteArtifact(n) && lstatSync(path.join(root, n)).isDirectory()).sort();
}

/** Every entry of an output root (folders, files, symbolic links), without the write protocol's bookkeeping. */
export function allOutputEntries(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((n) => !isWriteArtifact(n)).sort();
}

/** Deletions in file order, then by object. */
export const byFile = (a: Deletion, b: Deletion): number =>
  (a.file < b.file ? -1 : a.file > b.file ? 1 : a.object < b.object ? -1 : a.object > b.object ? 1 : 0);

/** The objects of `before` that `after` no longer holds (matched per cluster folder by identity), in file order, each judged in context (fateContexts). */
export function removedObjects(before: readonly TreeObject[], after: readonly TreeObject[], hubs: HubApplications = new Map()): Deletion[] {
  const kept = new Set(after.map(objectKey));
  const contextOf = fateContexts(before, after, hubs);
  return before.filter((o) => !kept.has(objectKey(o))).map((o) => removal(o, contextOf(o))).sort(byFile);
}

/** A rendered object that leaves the output, as a deletion: where it was, and what the cluster does with it (clusterFate). */
export function removal(o: TreeObject, context: FateContext = { application: applicationOfFile(o.file) }): Deletion {
  return { cluster: clusterOf(o.file), object: describeObject(o.manifest), file: o.file, ...clusterFate(o.manifest, context) };
}

/**
 * The context in which each object of `before` that `after` no longer holds leaves (FateContext): the Application
 * that syncs its folder as `before` holds it (`<cluster>/gitops/`), whether that one leaves too, and whether the whole
 * cluster leaves (`before` holds its root and `after` nothing of it). `hubs`: per cluster, the Application a fleet hub
 * generates for its root (hubApplications), when the fleet folder before the change had one.
 */
export function fateContexts(
  before: readonly TreeObject[], after: readonly TreeObject[], hubs: HubApplications = new Map(),
): (o: TreeObject) => FateContext {
  const kept = new Set(after.map(objectKey));
  const clustersAfter = new Set(after.map((o) => clusterOf(o.file)));
  const apps = new Map<string, TreeObject>();
  for (const o of before) {
    if (isApplication(o.manifest) && o.file.split('/')[1] === GITOPS_FOLDER) apps.set(`${clusterOf(o.file)}\0${o.manifest.metadata.name}`, o);
  }
  const confirming = new Map<string, string[]>();
  for (const o of before) {
    const name = applicationOfFile(o.file);
    const app = name === undefined ? undefined : apps.get(`${clusterOf(o.file)}\0${name}`)?.manifest;
    if (!app || !waitsForConfirmation(o.manifest, app)) continue;
    const names = confirming.get(clusterOf(o.file)) ?? [];
    if (!names.includes(name!)) confirming.set(clusterOf(o.file), [...names, name!].sort());
  }
  return (o) => {
    const cluster = clusterOf(o.file);
    const application = applicationOfFile(o.file);
    if (application === undefined) return {};
    const root = apps.get(`${cluster}\0${cluster}`)?.manifest;
    const hub = hubs.get(cluster);
    const dropped = root !== undefined && !clustersAfter.has(cluster);
    const found = apps.get(`${cluster}\0${application}`);
    // with a hub, the hub's Application of the cluster syncs the gitops folder in the root's place
    const app = dropped && hub && application === cluster ? hub : found?.manifest;
    return {
      application,
      app,
      appLeaves: found !== undefined && !kept.has(objectKey(found)),
      // a dropped cluster's Applications go in the cascade of the hub's Application, whatever it prunes
      parent: application === cluster || dropped ? undefined : root,
      ...(dropped ? {
        clusterDropped: {
          cluster,
          hub,
          namespace: root?.metadata.namespace,
          project: (root?.spec as { project?: string } | undefined)?.project,
          confirming: confirming.get(cluster),
        },
      } : {}),
    };
  };
}

/** The Applications a fleet hub generates in place of the clusters' roots, by cluster (hubApplications). */
export type HubApplications = ReadonlyMap<string, Manifest>;

/**
 * The Applications a fleet hub generates (the fleet folder's ApplicationSet, as `fleet` holds it), by cluster: named as
 * the cluster, in the ApplicationSet's namespace, with the template's finalizers, or the resources finalizer that
 * argo-cd v3.5.1 adds to a template without any unless preserveResourcesOnDeletion (applicationset/utils/utils.go:294-302),
 * and the element's automated prune. The ApplicationSet deletes the Application of an element that leaves
 * (applicationset/controllers/applicationset_controller.go:809-860 deleteInCluster).
 */
export function hubApplications(fleet: readonly TreeObject[]): Map<string, Manifest> {
  const out = new Map<string, Manifest>();
  for (const { manifest: set } of fleet) {
    if (set.kind !== 'ApplicationSet' || apiGroup(set.apiVersion) !== 'argoproj.io') continue;
    const spec = set.spec as {
      generators?: { list?: { elements?: { cluster?: unknown; prune?: unknown }[] } }[];
      template?: { metadata?: { finalizers?: string[] } };
      syncPolicy?: { preserveResourcesOnDeletion?: boolean };
    } | undefined;
    const own = spec?.template?.metadata?.finalizers ?? [];
    const finalizers = own.length === 0 && spec?.syncPolicy?.preserveResourcesOnDeletion !== true ? [RESOURCES_FINALIZER] : own;
    for (const e of (spec?.generators ?? []).flatMap((g) => g.list?.elements ?? [])) {
      if (typeof e.cluster !== 'string') continue;
      out.set(e.cluster, {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        metadata: { name: e.cluster, namespace: set.metadata.namespace, finalizers },
        spec: { syncPolicy: { automated: { prune: e.prune === true || e.prune === 'true' } } },
      } as Manifest);
    }
  }
  return out;
}

/**
 * One standard-error line per deleted object: `- <cluster>: Kind namespace/name (folder/file)`; `- NOTES.md: the file ...`
 * for an entry itself; after a colon, what the cluster does instead for one it keeps (a CRD, Prune=false), or how
 * Argo CD deletes it when that is not at once and alone (ClusterFate.note).
 */
export function deletionLines(deletions: readonly Deletion[]): string[] {
  return deletions.map((d) => {
    const rel = d.file.slice(d.cluster.length + 1);
    const fate = d.stays ?? d.note;
    return `- ${printable(d.cluster)}: ${printable(d.object)}${rel === '' || d.object.includes(rel) ? '' : ` (${printable(rel)})`}`
      + (fate ? `: ${fate}` : '');
  });
}

/**
 * A write that would remove rendered objects Argo CD deletes from the cluster, or other entries of the output, without
 * --allow-delete. Exit code 1; nothing is written.
 */
export class DeletionRefused extends Error {
  constructor(readonly deletions: readonly Deletion[], readonly out: string) {
    const deleted = deletedInCluster(deletions).length;
    const other = otherEntries(deletions).length;
    super([
      ...(deleted > 0 ? [`${deleted} rendered object(s) would be deleted from ${out}, and Argo CD would prune them from the cluster`] : []),
      ...(other > 0 ? [`${other} other file(s) of ${out} would be removed`] : []),
      'nothing was written; re-run with --allow-delete if that is intended',
    ].join('; '));
    this.name = 'DeletionRefused';
  }
}
