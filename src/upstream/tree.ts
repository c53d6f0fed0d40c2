import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** A file of a vendored tree: its path relative to the tree, and its content. */
export interface TreeFile {
  readonly rel: string;
  readonly size: number;
}

/** Every regular file under `dir` (symbolic links followed), relative paths sorted. */
export function treeFiles(dir: string): TreeFile[] {
  const out: TreeFile[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = statSync(path.join(dir, r));
      if (st.isDirectory()) walk(r);
      else if (st.isFile()) out.push({ rel: r, size: st.size });
    }
  };
  walk('');
  return out;
}

const digests = new Map<string, string>();

/**
 * SHA-256 of a folder's content: every file's relative path and bytes, in path order. Memoised per process
 * (the vendored trees and rendered folders do not change while a command runs); never keyed by size or mtime.
 */
export function treeDigest(dir: string): string {
  const abs = path.resolve(dir);
  const known = digests.get(abs);
  if (known) return known;
  const hash = createHash('sha256');
  for (const f of treeFiles(abs)) {
    hash.update(`${f.rel}\0${f.size}\0`);
    hash.update(readFileSync(path.join(abs, f.rel)));
  }
  const digest = hash.digest('hex');
  digests.set(abs, digest);
  return digest;
}

/** SHA-256 of JSON-serialisable parts (cache keys). */
export function digestOf(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
