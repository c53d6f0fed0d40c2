import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { apiGroup, definedKind, describeObject, Manifest, manifestFileName, objectId, RenderedFolder } from './manifest';
import { isWriteArtifact } from './write';
import { InputError, printable } from '../errors';
import { RenderedFile } from './folder-files';
import { isObjectPath, manifestFiles, readManifests } from './tree';
import { folderApplicationName, hasResourcesFinalizer, LABELS, ownSyncOptions, RESOURCES_FINALIZER } from '../model/names';

/**
 * Objects that leave the rendered output. Argo CD prunes what leaves dist/ (and deletes what an Application takes with
 * it), so `synth` refuses to remove rendered objects unless `--allow-delete`, and `diff` exits 1 on them: both list them
 * on standard error the same way. What argo-cd v3.5.1 (commit 109ca7ca7113) does instead of a plain prune is said once,
 * here, per object (clusterFate): a CRD and an object whose sync options say `Prune=false` stay in the cluster (listed
 * with `stays`, nothing is asked for them); an object with `Prune=confirm` is pruned only once someone confirms, and an
 * Application without the resources finalizer is deleted alone (listed with a `note`, asked for as any deletion).
 */

/** One object of a rendered tree, with the file it is in (relative to the output root). */
export interface TreeObject {
  readonly file: string;
  readonly manifest: Manifest;
}

/** What Argo CD does with a rendered object that left dist/, where that is not simply to prune it when it syncs. */
export interface ClusterFate {
  /**
   * Set when the cluster keeps the object although it leaves the output (a CRD, `Prune=false`): what happens instead.
   * Such a removal deletes nothing in the cluster, so neither synth nor diff asks --allow-delete for it.
   */
  readonly stays?: string;
  /** Set when Argo CD deletes it otherwise than at once and alone (`Prune=confirm`; an Application without the resources finalizer): how. */
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

/** The value of a resource-level sync option as gitops-engine reads it: the first `KEY=` entry of the annotation (resource/annotations.go GetAnnotationOptionValue). */
const syncOption = (m: Manifest, key: string): string | undefined =>
  ownSyncOptions(m).find((o) => o.startsWith(`${key}=`))?.slice(key.length + 1);

/** `kubectl delete` of one object: its kind (with the group, but for the core group), namespace and name. */
function kubectlDelete(m: Manifest): string {
  const group = apiGroup(m.apiVersion);
  const ns = m.metadata.namespace ? ` -n ${m.metadata.namespace}` : '';
  return `kubectl delete${ns} ${m.kind.toLowerCase()}${group ? `.${group}` : ''} ${m.metadata.name}`;
}

/**
 * An object whose own sync options say `Prune=false` (an adopted object, ADOPTED_SYNC_OPTIONS; Argo CD's own Namespace
 * and CRDs, ARGOCD_KEPT_SYNC_OPTIONS): gitops-engine skips its prune (v3.5.1 gitops-engine/pkg/sync/sync_context.go:1454-1458
 * pruneObject, isPruningDisabled at :333: "ignored (no prune)"), and its Application, still tracking it, shows it OutOfSync
 * as requiring pruning (controller/state.go:950, :991). With `Delete=false` too, deleting that Application spares it as
 * well (controller/appcontroller.go:1252-1261 shouldBeDeleted).
 */
function pruneDisabledStays(m: Manifest): string {
  const alsoDelete = syncOption(m, 'Delete') === 'false' ? ', nor deletes it with its Application (Delete=false)' : '';
  return `stays in the cluster: Argo CD never prunes an object whose sync options say Prune=false${alsoDelete}; `
    + `its Application shows it OutOfSync (requires pruning) while it stays; an admin deletes it if wanted: ${kubectlDelete(m)}`;
}

/**
 * An object whose own sync options say `Prune=confirm` (the Namespaces and volume claims, DATA_SYNC_OPTIONS): before it
 * prunes anything, a sync that would prune such an object stops (v3.5.1 gitops-engine/pkg/sync/sync_context.go:1617-1624
 * runTasks, "Prune requires confirmation") and stays Running with the message "waiting for pruning confirmation of ..."
 * (:458-470 setRunningPhase) until the Application's argocd.argoproj.io/deletion-approved is later than the operation's
 * start (controller/sync.go:332 WithPruneConfirmed; `argocd app confirm-deletion` sets it). Its Application deleted in
 * cascade waits the same way (Delete=confirm, controller/appcontroller.go finalizeApplicationDeletion).
 */
function pruneConfirmNote(application: string | undefined): string {
  return 'Argo CD deletes it only once someone confirms (Prune=confirm): its Application waits ("waiting for pruning confirmation") '
    + `until: argocd app confirm-deletion ${application ?? '<application>'}`;
}

/** Whether an object is an Argo CD Application. */
const isApplication = (m: Manifest) => m.kind === 'Application' && apiGroup(m.apiVersion) === 'argoproj.io';

/**
 * What deleting an Application without the resources finalizer does (the managed installs', the upstream Argo CD
 * folder's): the API server removes it at once, and the controller, which cleans up only an Application being deleted
 * with a propagation finalizer (v3.5.1 controller/appcontroller.go:1137 finalizeApplicationDeletion, :1344
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
 * What the cluster does with a rendered object that leaves dist/, where that is not simply a prune when its Application
 * syncs. `application`: the Application that syncs it, when known (named in the confirmation command).
 */
export function clusterFate(m: Manifest, application?: string): ClusterFate {
  const crd = definedKind(m);
  if (crd) return { stays: crdStays(m.metadata.name, crd.kind || undefined) };
  const prune = syncOption(m, 'Prune');
  if (prune === 'false') return { stays: pruneDisabledStays(m) };
  if (prune === 'confirm') return { note: pruneConfirmNote(application) };
  if (isApplication(m) && m.metadata.annotations?.[LABELS.byHand] === 'true') return { stays: byHandStays(m) };
  if (isApplication(m) && !hasResourcesFinalizer(m)) return { note: applicationAloneNote(m) };
  return {};
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
export function entryDeletions(root: string, entry: string, files: readonly RenderedFile[], objects: readonly TreeObject[]): Deletion[] {
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
  return [...out, ...removedObjects(before, objects)];
}

/**
 * What removing whole entries of an output root (clusters dropped from the fleet, anything else at its
 * root) removes: entryDeletions of each with nothing written in its place.
 */
export function removedEntries(root: string, names: readonly string[]): Deletion[] {
  return names.flatMap((name) => entryDeletions(root, name, [], []));
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

/** The objects of `before` that `after` no longer holds (matched per cluster folder by identity), in file order. */
export function removedObjects(before: readonly TreeObject[], after: readonly TreeObject[]): Deletion[] {
  const kept = new Set(after.map(objectKey));
  return before.filter((o) => !kept.has(objectKey(o))).map(removal).sort(byFile);
}

/** A rendered object that leaves the output, as a deletion: where it was, and what the cluster does with it (clusterFate). */
export function removal(o: TreeObject): Deletion {
  return { cluster: clusterOf(o.file), object: describeObject(o.manifest), file: o.file, ...clusterFate(o.manifest, applicationOfFile(o.file)) };
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
