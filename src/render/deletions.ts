import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describeObject, Manifest, manifestFileName, objectId, RenderedFolder } from './manifest';
import { isWriteArtifact } from './write';
import { InputError } from '../errors';
import { RenderedFile } from './folder-files';
import { manifestFiles, readManifests } from './tree';

/**
 * Objects that leave the rendered output. Argo CD prunes what leaves dist/ (and deletes what an
 * Application takes with it), so `synth` refuses to remove rendered objects unless `--allow-delete`,
 * and `diff` exits 1 on them: both list them on standard error the same way.
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

/**
 * The rendered objects a write of `files` (relative to the entry) into the entry `entry` of an output
 * root removes: the objects of its files on disk that `objects` (the new render) no longer holds. A
 * file the new render writes with the same bytes holds the same objects and is not read again; a file
 * that is no YAML counts as removed unless the new render rewrites it.
 */
export function entryDeletions(root: string, entry: string, files: readonly RenderedFile[], objects: readonly TreeObject[]): Deletion[] {
  const dir = path.join(root, entry);
  if (!existsSync(dir) || !lstatSync(dir).isDirectory()) return [];
  const wanted = new Map(files);
  const out: Deletion[] = [];
  const before: TreeObject[] = [];
  for (const f of manifestFiles(dir)) {
    const rel = path.relative(dir, f).split(path.sep).join('/');
    const content = wanted.get(rel);
    if (content !== undefined && statSync(f).size === Buffer.byteLength(content) && readFileSync(f, 'utf8') === content) continue;
    const file = `${entry}/${rel}`;
    let docs;
    try {
      docs = readManifests(f);
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      if (content === undefined) out.push({ cluster: entry, object: `the objects of an unreadable file (${e.message})`, file });
      continue;
    }
    for (const d of docs) if (isObject(d.manifest)) before.push({ file, manifest: d.manifest });
  }
  return [...out, ...removedObjects(before, objects)];
}

/** The cluster folders (and fleet/) of an output root, without the write protocol's bookkeeping. */
export function outputEntries(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((n) => !isWriteArtifact(n) && lstatSync(path.join(root, n)).isDirectory()).sort();
}

/** Deletions in file order, then by object. */
export const byFile = (a: Deletion, b: Deletion): number =>
  (a.file < b.file ? -1 : a.file > b.file ? 1 : a.object < b.object ? -1 : a.object > b.object ? 1 : 0);

/** The objects of `before` that `after` no longer holds (matched per cluster folder by identity), in file order. */
export function removedObjects(before: readonly TreeObject[], after: readonly TreeObject[]): Deletion[] {
  const kept = new Set(after.map(objectKey));
  return before.filter((o) => !kept.has(objectKey(o)))
    .map((o) => ({ cluster: clusterOf(o.file), object: describeObject(o.manifest), file: o.file }))
    .sort(byFile);
}

/** One standard-error line per deleted object: `- <cluster>: Kind namespace/name (folder/file)`. */
export function deletionLines(deletions: readonly Deletion[]): string[] {
  return deletions.map((d) => `- ${d.cluster}: ${d.object} (${d.file.slice(d.cluster.length + 1)})`);
}

/** A write that would remove rendered objects, without --allow-delete. Exit code 1; nothing is written. */
export class DeletionRefused extends Error {
  constructor(readonly deletions: readonly Deletion[], readonly out: string) {
    super(`${deletions.length} rendered object(s) would be deleted from ${out}, and Argo CD would prune them from the cluster; `
      + 'nothing was written; re-run with --allow-delete if that is intended');
    this.name = 'DeletionRefused';
  }
}
