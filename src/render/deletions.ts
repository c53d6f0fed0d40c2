import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describeObject, Manifest, manifestFileName, objectId, RenderedFolder } from './manifest';
import { isWriteArtifact } from './write';
import { InputError, printable } from '../errors';
import { RenderedFile } from './folder-files';
import { isObjectPath, manifestFiles, readManifests } from './tree';

/**
 * Objects that leave the rendered output. Argo CD prunes what leaves dist/ (and deletes what an
 * Application takes with it), so `synth` refuses to remove rendered objects unless `--allow-delete`,
 * and `diff` exits 1 on them: both list them on standard error the same way. A CRD is the exception:
 * Argo CD never prunes one (crdStays), so its removal is listed with what the cluster does and asks nothing.
 */

/** One object of a rendered tree, with the file it is in (relative to the output root). */
export interface TreeObject {
  readonly file: string;
  readonly manifest: Manifest;
}

/** An object a write removes from the output: its cluster folder, `Kind namespace/name` and file (root-relative). */
export interface Deletion {
  readonly cluster: string;
  readonly object: string;
  readonly file: string;
  /**
   * Set when the cluster keeps the object although it leaves the output (a CRD: crdStays): what happens instead.
   * Such a removal deletes nothing in the cluster, so neither synth nor diff asks --allow-delete for it.
   */
  readonly stays?: string;
}

/** Whether an object is a CustomResourceDefinition. */
export const isCrd = (m: { readonly apiVersion?: unknown; readonly kind?: unknown }): boolean =>
  m.kind === 'CustomResourceDefinition' && String(m.apiVersion).startsWith('apiextensions.k8s.io/');

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

/** Why the cluster keeps an object that leaves the output, or undefined when Argo CD prunes it. */
export function staysInCluster(m: Manifest): string | undefined {
  if (!isCrd(m)) return undefined;
  const kind = (m.spec as { names?: { kind?: unknown } } | undefined)?.names?.kind;
  return crdStays(m.metadata.name, typeof kind === 'string' ? kind : undefined);
}

/** The deletions Argo CD carries out in the cluster (those it prunes), which synth and diff ask --allow-delete for. */
export const prunedByArgoCd = (deletions: readonly Deletion[]): Deletion[] => deletions.filter((d) => d.stays === undefined);

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
  const gone = (rel: string, what: string) => out.push({ cluster: entry, object: what, file: rel === '' ? entry : `${entry}/${rel}` });
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
  return before.filter((o) => !kept.has(objectKey(o)))
    .map((o) => {
      const stays = staysInCluster(o.manifest);
      return { cluster: clusterOf(o.file), object: describeObject(o.manifest), file: o.file, ...(stays ? { stays } : {}) };
    })
    .sort(byFile);
}

/**
 * One standard-error line per deleted object: `- <cluster>: Kind namespace/name (folder/file)`; `- NOTES.md: the file ...`
 * for an entry itself; what the cluster does instead after a colon for one it keeps (a CRD).
 */
export function deletionLines(deletions: readonly Deletion[]): string[] {
  return deletions.map((d) => {
    const rel = d.file.slice(d.cluster.length + 1);
    return `- ${printable(d.cluster)}: ${printable(d.object)}${rel === '' || d.object.includes(rel) ? '' : ` (${printable(rel)})`}`
      + (d.stays ? `: ${d.stays}` : '');
  });
}

/** A write that would remove rendered objects Argo CD prunes, without --allow-delete. Exit code 1; nothing is written. */
export class DeletionRefused extends Error {
  constructor(readonly deletions: readonly Deletion[], readonly out: string) {
    const pruned = prunedByArgoCd(deletions).length;
    super(`${pruned} rendered object(s) would be deleted from ${out}, and Argo CD would prune them from the cluster; `
      + 'nothing was written; re-run with --allow-delete if that is intended');
    this.name = 'DeletionRefused';
  }
}
