import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { verifyPackagedAsset, verifyPackagedFolder } from '../cache/asset-sums';
import { printable } from '../errors';
import { isInside } from '../files';

/**
 * An Application source that cannot be rendered before an engine runs (a path out of its folder, a chart
 * that includes itself, a Chart.yaml that is no YAML): the message is one line, reported as the source's
 * failed render.
 */
export class SourceRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceRefused';
  }
}

/** A vendored chart or overlay is a few thousand files at most; a tree deeper or larger than this is no chart. */
const MAX_TREE_DEPTH = 64;
const MAX_TREE_FILES = 100_000;

/** A file of a vendored tree: its path relative to the tree, and its content. */
export interface TreeFile {
  readonly rel: string;
  readonly size: number;
}

/**
 * Every regular file under `dir`, relative paths sorted. A symbolic link is followed when it stays inside
 * `dir` (its real path) and does not lead back to a folder it lies in; a link out of the folder, or one that
 * makes the tree include itself, is SourceRefused (the engines would read what the link points at, or walk
 * for ever). Devices, FIFOs and sockets are not files of a tree and are left out.
 */
export function treeFiles(dir: string): TreeFile[] {
  const out: TreeFile[] = [];
  const root = realpathSync(dir);
  const walk = (rel: string, real: string, depth: number) => {
    if (depth > MAX_TREE_DEPTH) throw new SourceRefused(`${printable(dir)}: folders nested more than ${MAX_TREE_DEPTH} levels deep (${printable(rel)})`);
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`;
      const p = path.join(dir, r);
      let target = path.join(real, name);
      if (lstatSync(p).isSymbolicLink()) {
        try {
          target = realpathSync(p);
        } catch {
          throw new SourceRefused(`${printable(r)} in ${printable(dir)} is a symbolic link that leads nowhere`);
        }
        if (!isInside(target, root)) throw new SourceRefused(`${printable(r)} in ${printable(dir)} is a symbolic link out of the folder (to ${printable(target)})`);
        if (isInside(real, target)) throw new SourceRefused(`${printable(r)} in ${printable(dir)} is a symbolic link to a folder it lies in: the tree includes itself`);
      }
      const st = statSync(p);
      if (st.isDirectory()) walk(r, target, depth + 1);
      else if (st.isFile()) out.push({ rel: r, size: st.size });
      if (out.length > MAX_TREE_FILES) throw new SourceRefused(`${printable(dir)} holds more than ${MAX_TREE_FILES} files: no chart or overlay is that large`);
    }
  };
  walk('', root, 0);
  return out;
}

const digests = new Map<string, string>();

/**
 * SHA-256 of a folder's content: every file's relative path and bytes, in path order; never sizes or times.
 * With `memo`, remembered per path for the life of the process (the vendored upstream trees, read-only while
 * a command runs); a rendered folder is read each time (it may be rewritten between two checks of one process).
 * `read`: bytes of files the caller read already, by path relative to `dir`.
 */
export function treeDigest(dir: string, memo = false, read?: ReadonlyMap<string, Buffer>): string {
  const abs = path.resolve(dir);
  const known = memo ? digests.get(abs) : undefined;
  if (known) return known;
  const hash = createHash('sha256');
  const files = treeFiles(abs);
  // a vendored tree the package ships: as shipped, file by file (its checksums), else the installation is damaged
  if (memo) verifyPackagedFolder(abs, files.map((f) => path.join(abs, f.rel)));
  for (const f of files) {
    // a file the caller read already, of the size it has now: its bytes as read (what the caller checks)
    const given = read?.get(f.rel);
    const bytes = given !== undefined && given.length === f.size ? given : readFileSync(path.join(abs, f.rel));
    if (memo) verifyPackagedAsset(path.join(abs, f.rel), bytes);
    hash.update(`${f.rel}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  const digest = hash.digest('hex');
  if (memo) digests.set(abs, digest);
  return digest;
}

/** SHA-256 of JSON-serialisable parts (cache keys). */
export function digestOf(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
