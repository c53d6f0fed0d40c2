import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { defaultCacheDir } from './cache-dir';
import { makeDirs } from '../files';
import { PACKAGE_ROOT } from '../paths';

/**
 * Content digests of files: what every cache of the project is keyed by (never a file's size and
 * mtime, which an in-place edit can keep: `fs.utimes`, `touch -r`, `cp -p`, a checkout).
 *
 * Hashing is the only cost, so the SHA-256 of each file is remembered across processes
 * (`file-digests.json` in the cache folder) together with the file's device, inode, size, mtime
 * and ctime, and hashed again when any of them differs. The ctime is what makes this sound: the
 * kernel sets it to the current time on every write and metadata change, and no tool can set it
 * back (utimes restores the mtime, and itself moves the ctime). A file whose ctime is less than
 * SETTLED_MS old when it is hashed is not remembered: timestamps are coarse (a few ms), so a
 * second write within the same tick would keep the same ctime. This is git's index check.
 */

/** Files changed less than this long before they were hashed are hashed again next time. */
export const SETTLED_MS = 2000;
const MEMO_FILE = 'file-digests.json';
const MEMO_VERSION = 1;
/** Entries kept across processes (least recently used dropped): far more than the project reads. */
const MAX_ENTRIES = 20_000;

export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** One digest of named parts (file names and their digests, say), in the given order. */
export function digestOfParts(parts: Iterable<readonly [string, string | undefined]>): string {
  const h = createHash('sha256');
  for (const [name, value] of parts) h.update(`${name}\0${value ?? '-'}\n`);
  return h.digest('hex');
}

interface Entry {
  readonly stat: string;
  readonly digest: string;
  used: number;
}

/** The remembered digests; persisted at exit when a cache folder exists. */
export class DigestMemo {
  /** Files read and hashed (the others were answered from memory). */
  hashed = 0;
  private entries: Map<string, Entry> | undefined;
  private changed = false;
  private readonly runStarted: number;

  /** `now` is the clock ctimes are compared with (tests move it). */
  constructor(private readonly file: string | undefined, private readonly now: () => number = Date.now) {
    this.runStarted = now();
  }

  private load(): Map<string, Entry> {
    if (this.entries) return this.entries;
    this.entries = new Map();
    if (!this.file) return this.entries;
    try {
      const data = JSON.parse(readFileSync(this.file, 'utf8')) as { version?: number; files?: Record<string, [string, string, number]> };
      if (data.version === MEMO_VERSION && data.files) {
        for (const [f, [stat, digest, used]] of Object.entries(data.files)) {
          if (typeof stat === 'string' && /^[0-9a-f]{64}$/.test(digest) && typeof used === 'number') this.entries.set(f, { stat, digest, used });
        }
      }
    } catch {
      // absent or unreadable: every file is hashed
    }
    process.once('exit', () => this.save());
    return this.entries;
  }

  digest(file: string): string | undefined {
    let st;
    try {
      st = statSync(file, { bigint: true, throwIfNoEntry: false });
    } catch {
      return undefined;
    }
    if (!st || !st.isFile()) return undefined;
    const stat = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    const entries = this.load();
    const known = entries.get(file);
    if (known && known.stat === stat) {
      known.used = this.runStarted;
      return known.digest;
    }
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch {
      return undefined;
    }
    const digest = sha256(bytes);
    this.hashed += 1;
    if (known) entries.delete(file);
    if (Number(st.ctimeNs / 1_000_000n) < this.now() - SETTLED_MS) {
      entries.set(file, { stat, digest, used: this.runStarted });
      this.changed = true;
    }
    return digest;
  }

  /** Writes the memo (done at exit). */
  save(): void {
    if (!this.file || !this.entries || !this.changed) return;
    const files: Record<string, [string, string, number]> = {};
    const kept = [...this.entries].sort(([, a], [, b]) => b.used - a.used).slice(0, MAX_ENTRIES);
    for (const [f, e] of kept) files[f] = [e.stat, e.digest, e.used];
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      makeDirs(path.dirname(this.file));
      writeFileSync(tmp, JSON.stringify({ version: MEMO_VERSION, files }));
      renameSync(tmp, this.file);
    } catch {
      // a memo that cannot be written only costs hashing time
      try {
        rmSync(tmp, { force: true });
      } catch {
        // nor can its temporary file be removed: nothing was written
      }
    }
  }
}

let memo: DigestMemo | undefined;

function theMemo(): DigestMemo {
  if (!memo) {
    let dir: string | undefined;
    try {
      dir = defaultCacheDir();
    } catch {
      dir = undefined; // an unusable cache setting is reported by the caches themselves
    }
    memo = new DigestMemo(dir && path.join(dir, MEMO_FILE));
  }
  return memo;
}

/** Told of every file digest taken (the up-to-date record watches what a render depends on). */
let observer: ((file: string, digest: string | undefined) => void) | undefined;

export function observeDigests(fn: typeof observer): void {
  observer = fn;
}

/** SHA-256 (hex) of a file's bytes, symlinks followed; undefined when it is not a readable regular file. */
export function fileDigest(file: string): string | undefined {
  const abs = path.resolve(file);
  const digest = theMemo().digest(abs);
  observer?.(abs, digest);
  return digest;
}

/**
 * Every file under a folder whose name `accept`s, sorted, following symlinks (a symlinked folder is
 * walked like any other; a symlink loop is walked once).
 */
export function listTree(dir: string, accept: (name: string) => boolean = () => true): string[] {
  const out: string[] = [];
  /** Real paths of the folders reached through a symlink (and of the top): each is walked once. */
  const seen = new Set<string>();
  const walk = (d: string, viaLink: boolean) => {
    if (viaLink) {
      let real: string;
      try {
        real = realpathSync.native(d);
      } catch {
        return;
      }
      if (seen.has(real)) return;
      seen.add(real);
    }
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const p = path.join(d, e.name);
      const link = e.isSymbolicLink();
      const isDir = link ? statSync(p, { throwIfNoEntry: false })?.isDirectory() : e.isDirectory();
      if (isDir) {
        if (e.name !== 'node_modules') walk(p, link || viaLink);
      } else if (accept(e.name)) {
        out.push(p);
      }
    }
  };
  walk(dir, true);
  return out;
}

/** One digest of files by their path relative to `root` and their content. */
export function filesDigest(root: string, files: readonly string[]): string {
  return digestOfParts(files.map((f) => [path.relative(root, f), fileDigest(f)]));
}

const CODE_FILE = /\.(c|m)?js$|\.json$/;
/** Per process: the code a process runs does not change while it runs. */
const packageDigests = new Map<string, string>();
const codeDigests = new Map<string, string>();

/** The folder of an installed package (its package.json's folder), found from its entry point. */
export function packageRoot(name: string): string {
  const req = createRequire(path.join(PACKAGE_ROOT, 'package.json'));
  let dir = path.dirname(req.resolve(name));
  for (;;) {
    try {
      if ((JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string }).name === name) return dir;
    } catch {
      // not the package's root yet
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the folder of the package ${name}`);
    dir = parent;
  }
}

/**
 * The digest of an installed package's code as it is on disk: every JavaScript and JSON file of
 * it (its own node_modules excluded). A version change and a file patched in place both change it.
 */
export function packageDigest(name: string): string {
  let digest = packageDigests.get(name);
  if (digest === undefined) {
    const root = packageRoot(name);
    digest = filesDigest(root, listTree(root, (n) => CODE_FILE.test(n)));
    packageDigests.set(name, digest);
  }
  return digest;
}

/**
 * The digest of the code of the folder a module lives in (the module's own kind of file: `.js`
 * when compiled, `.ts` when run from the sources): what a cache of artefacts that folder derives
 * is keyed by, so a changed reader or transform never meets its old results.
 */
export function moduleFolderDigest(moduleFile: string): string {
  const dir = path.dirname(moduleFile);
  const ext = path.extname(moduleFile);
  let digest = codeDigests.get(`${dir}\0${ext}`);
  if (digest === undefined) {
    const files = readdirSync(dir).filter((n) => n.endsWith(ext) && !n.endsWith(`.d${ext}`)).sort().map((n) => path.join(dir, n));
    digest = filesDigest(dir, files);
    codeDigests.set(`${dir}\0${ext}`, digest);
  }
  return digest;
}
