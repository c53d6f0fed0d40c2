import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { SETTLED_MS } from '../cache/digests';

/**
 * The files of one output entry (a cluster folder, fleet/) as the up-to-date record keeps them: the digest of
 * their paths and contents together, and the digest of their stat signatures (path, inode, size, mtime, ctime)
 * as they were when the record was taken. An entry whose signatures are all still the same, and whose ctimes were
 * settled when they were taken, holds the same bytes: the kernel sets a file's ctime on every write and no tool can
 * set it back, and timestamps are coarse, so a ctime within SETTLED_MS of the record could hide a second write in
 * the same tick (git's racy index check). Such an entry, or one whose signatures changed (a copy, a touch), is read
 * and compared by its content digest. Checking 1000 cluster folders' signatures is some 115,000 lstat calls,
 * hashing them all ten times that.
 */
export interface EntryRecord {
  /** SHA-256 over each file's relative path and SHA-256, in path order. */
  readonly digest: string;
  /** SHA-256 over each file's relative path and stat signature, in path order. */
  readonly signatures: string;
  /** Every file's ctime was more than SETTLED_MS before the signatures were taken. */
  readonly settled: boolean;
  readonly files: number;
}

interface Walked {
  /** Relative path -> `ino:size:mtimeMs:ctimeMs`. */
  readonly files: Map<string, string>;
  readonly newestCtimeMs: number;
}

/** Every file under `dir` with its signature; undefined when it holds anything but files and folders with files. */
function walk(dir: string): Walked | undefined {
  const files = new Map<string, string>();
  let newest = 0;
  const visit = (rel: string): boolean => {
    const entries = readdirSync(rel ? `${dir}/${rel}` : dir, { withFileTypes: true });
    if (rel !== '' && entries.length === 0) return false;
    for (const e of entries) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!visit(child)) return false;
      } else if (e.isFile()) {
        const st = lstatSync(`${dir}/${child}`);
        if (!st.isFile()) return false;
        files.set(child, `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`);
        if (st.ctimeMs > newest) newest = st.ctimeMs;
      } else {
        return false;
      }
    }
    return true;
  };
  try {
    return lstatSync(dir).isDirectory() && visit('') ? { files, newestCtimeMs: newest } : undefined;
  } catch {
    return undefined;
  }
}

function signaturesDigest(walked: Walked): string {
  const lines = [...walked.files.keys()].sort().map((rel) => `${rel}\0${walked.files.get(rel)}\n`);
  return createHash('sha256').update(lines.join('')).digest('hex');
}

function contentDigest(dir: string, rels: readonly string[]): string {
  const h = createHash('sha256');
  for (const rel of [...rels].sort()) h.update(`${rel}\0${createHash('sha256').update(readFileSync(`${dir}/${rel}`)).digest('hex')}\n`);
  return h.digest('hex');
}

/** The record of the entry `dir` as it is now; undefined when it cannot be recorded (a link, a device, an empty folder). */
export function recordEntry(dir: string): EntryRecord | undefined {
  const at = Date.now();
  const walked = walk(dir);
  if (!walked) return undefined;
  try {
    const digest = contentDigest(dir, [...walked.files.keys()]);
    return { digest, signatures: signaturesDigest(walked), settled: walked.newestCtimeMs < at - SETTLED_MS, files: walked.files.size };
  } catch {
    return undefined;
  }
}

/**
 * Whether the entry `dir` still holds what `record` says: `same` by the signatures alone, `verified` by reading
 * its files (with `fresh`, its record as of now), `changed` otherwise.
 */
export function checkEntry(dir: string, record: EntryRecord): { state: 'same' | 'changed' } | { state: 'verified'; fresh: EntryRecord } {
  const walked = walk(dir);
  if (!walked || walked.files.size !== record.files) return { state: 'changed' };
  if (record.settled && signaturesDigest(walked) === record.signatures) return { state: 'same' };
  const fresh = recordEntry(dir);
  return fresh && fresh.digest === record.digest ? { state: 'verified', fresh } : { state: 'changed' };
}
