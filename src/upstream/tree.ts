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
 * SHA-256 of a folder's content: every file's relative path and bytes, in path order; never sizes or times.
 * With `memo`, remembered per path for the life of the process (the vendored upstream trees, read-only while
 * a command runs); a rendered folder is read each time (it may be rewritten between two checks of one process).
 */
export function treeDigest(dir: string, memo = false): string {
  const abs = path.resolve(dir);
  const known = memo ? digests.get(abs) : undefined;
  if (known) return known;
  const hash = createHash('sha256');
  for (const f of treeFiles(abs)) {
    hash.update(`${f.rel}\0${f.size}\0`);
    hash.update(readFileSync(path.join(abs, f.rel)));
  }
  const digest = hash.digest('hex');
  if (memo) digests.set(abs, digest);
  return digest;
}

/** SHA-256 of JSON-serialisable parts (cache keys). */
export function digestOf(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
