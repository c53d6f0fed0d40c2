import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { SETTLED_MS } from '../cache/digests';

/**
 * The files of one output entry (a cluster folder, fleet/) as the up-to-date record keeps them: the digest of
 * their paths and contents together, and each file's stat signature (inode, size, mtime, ctime) taken at `at`.
 * An entry whose every file still has its signature, and whose ctimes were settled when the signatures were taken,
 * holds the same bytes: the kernel sets a file's ctime on every write and no tool can set it back, and timestamps
 * are coarse, so a ctime within SETTLED_MS of `at` could hide a second write in the same tick (git's racy index
 * check). Such an entry, or one whose signatures changed (a copy, a touch), is read and compared by its digest.
 * Reading 1000 cluster folders' signatures is some 110,000 lstat calls, hashing them all ten times that.
 */
export interface EntryRecord {
  readonly digest: string;
  /** When the signatures were taken (ms since the epoch). */
  readonly at: number;
  /** Path relative to the entry -> `ino:size:mtimeNs:ctimeNs`. */
  readonly files: Readonly<Record<string, string>>;
}

interface Walked {
  readonly files: Map<string, { readonly signature: string; readonly ctimeMs: number }>;
}

/** Every file under `dir` with its signature; undefined when it holds anything but files and folders with files. */
function walk(dir: string): Walked | undefined {
  const files = new Map<string, { signature: string; ctimeMs: number }>();
  const visit = (rel: string): boolean => {
    const entries = readdirSync(path.join(dir, rel), { withFileTypes: true });
    if (rel !== '' && entries.length === 0) return false;
    for (const e of entries) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!visit(child)) return false;
      } else if (e.isFile()) {
        const st = lstatSync(path.join(dir, child), { bigint: true });
        files.set(child, { signature: `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`, ctimeMs: Number(st.ctimeNs / 1_000_000n) });
      } else {
        return false;
      }
    }
    return true;
  };
  try {
    return lstatSync(dir).isDirectory() && visit('') ? { files } : undefined;
  } catch {
    return undefined;
  }
}

function contentDigest(dir: string, rels: readonly string[]): string {
  const h = createHash('sha256');
  for (const rel of [...rels].sort()) h.update(`${rel}\0${createHash('sha256').update(readFileSync(path.join(dir, rel))).digest('hex')}\n`);
  return h.digest('hex');
}

/** The record of the entry `dir` as it is now; undefined when it cannot be recorded (a link, a device, an empty folder). */
export function recordEntry(dir: string): EntryRecord | undefined {
  const at = Date.now();
  const walked = walk(dir);
  if (!walked) return undefined;
  try {
    const digest = contentDigest(dir, [...walked.files.keys()]);
    return { digest, at, files: Object.fromEntries([...walked.files].map(([rel, f]) => [rel, f.signature])) };
  } catch {
    return undefined;
  }
}

/**
 * Whether the entry `dir` still holds what `record` says: `same` by the signatures alone, `verified` by reading
 * its files (with `fresh`, its record as of now, whose signatures will be settled next time), `changed` otherwise.
 */
export function checkEntry(dir: string, record: EntryRecord): { state: 'same' | 'changed' } | { state: 'verified'; fresh: EntryRecord } {
  const walked = walk(dir);
  const rels = Object.keys(record.files);
  if (!walked || walked.files.size !== rels.length || rels.some((r) => !walked.files.has(r))) return { state: 'changed' };
  const settled = record.at - SETTLED_MS;
  if (rels.every((r) => walked.files.get(r)!.signature === record.files[r] && walked.files.get(r)!.ctimeMs < settled)) return { state: 'same' };
  const fresh = recordEntry(dir);
  return fresh && fresh.digest === record.digest ? { state: 'verified', fresh } : { state: 'changed' };
}
