import { closeSync, fsyncSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fsErrorText, InputError, isFsError } from './errors';
import { faultPoint } from './fault';
import { pidAlive } from './processes';

/** The longest file name (one path component) and path Linux and macOS file systems accept, in bytes. */
export const NAME_MAX = 255;
export const PATH_MAX = 4095;

/**
 * `mkdir -p` without a retry loop. Node's recursive mkdirSync retries a component forever when
 * the file system answers ENOENT for a folder whose parent exists (procfs, some FUSE mounts:
 * `/proc/nonexistent/x` spins at 100 % CPU); this walks up to the nearest existing folder once,
 * then creates each missing component once, and throws the first error. Returns the folders it
 * created, outermost first.
 */
export function makeDirs(dir: string): string[] {
  const missing: string[] = [];
  let d = path.resolve(dir);
  for (;;) {
    const st = statSync(d, { throwIfNoEntry: false });
    if (st) {
      if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${d}'`), { code: 'ENOTDIR', syscall: 'mkdir', path: d });
      break;
    }
    missing.push(d);
    const parent = path.dirname(d);
    if (parent === d) break;
    d = parent;
  }
  const made: string[] = [];
  for (const m of missing.reverse()) {
    try {
      mkdirSync(m);
      made.push(m);
    } catch (e) {
      // another process made it in between: fine when it is a folder
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(m).isDirectory()) throw e;
    }
  }
  return made;
}

/** Flushes a folder's entries (renames, new files) to disk; best effort where folders cannot be opened or synced. */
export function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // not supported on this platform or file system: nothing more we can do
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Why a path is unusable as a file system path (too long, NUL byte), or undefined when it is fine. */
export function pathProblem(p: string): string | undefined {
  if (p.includes('\0')) return 'contains a NUL byte';
  const abs = path.resolve(p);
  if (Buffer.byteLength(abs) > PATH_MAX) return `is ${Buffer.byteLength(abs)} bytes long, more than the ${PATH_MAX} the file system allows; use a shorter path`;
  const long = abs.split(path.sep).find((c) => Buffer.byteLength(c) > NAME_MAX);
  if (long) return `has a component of ${Buffer.byteLength(long)} bytes ("${long.slice(0, 20)}..."), more than the ${NAME_MAX} a file name may have; use a shorter name`;
  return undefined;
}

/**
 * The resolved path of a folder a command may use (render into, keep a cache in): absent (it is
 * created later) or a folder. Otherwise bad input naming the setting (`label`, e.g. `--out dist`):
 * an unusable path, a file-system error reaching it, or not a folder (then `notFolderHint` says what to do).
 */
export function usableFolder(p: string, label: string, notFolderHint: string): string {
  const problem = pathProblem(p);
  if (problem) throw new InputError(`${label}: the path ${problem}`);
  let st;
  try {
    st = statSync(p, { throwIfNoEntry: false });
  } catch (e) {
    if (isFsError(e)) throw new InputError(`${label}: ${fsErrorText(e)}`);
    throw e;
  }
  if (st && !st.isDirectory()) throw new InputError(`${label}: not a folder; ${notFolderHint}`);
  return path.resolve(p);
}

/**
 * The real path a path names once it exists: the real path (symbolic links resolved) of its nearest
 * existing ancestor, with the components that do not exist yet after it. `link/dist` with `link` a
 * symbolic link to `/elsewhere` and `dist` not there yet is `/elsewhere/dist`: where a write would land.
 * A component that is a dangling symbolic link is resolved as far as it leads (its target, made
 * absolute), so that creating it later cannot land elsewhere either.
 */
export function realPathOf(p: string): string {
  const rest: string[] = [];
  let at = path.resolve(p);
  for (let hops = 0; ; ) {
    try {
      return path.join(realpathSync.native(at), ...rest.reverse());
    } catch {
      // not there (or not reachable): a dangling link leads somewhere all the same
    }
    let st;
    try {
      st = lstatSync(at, { throwIfNoEntry: false });
    } catch {
      st = undefined; // a part of it is a file (ENOTDIR), or unreachable: its parent tells
    }
    if (st?.isSymbolicLink() && hops < 40) {
      hops += 1;
      at = path.resolve(path.dirname(at), readlinkOf(at));
      continue;
    }
    const parent = path.dirname(at);
    if (parent === at) return path.join(at, ...rest.reverse());
    rest.push(path.basename(at));
    at = parent;
  }
}

function readlinkOf(p: string): string {
  try {
    return readlinkSync(p);
  } catch {
    return p;
  }
}

/** True when `inner` is `outer` or lies inside it (both resolved; no symlinks followed). */
export function isInside(inner: string, outer: string): boolean {
  const rel = path.relative(path.resolve(outer), path.resolve(inner));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** A small file's text, or undefined when it does not exist (any other error is thrown). */
export function readTextIfPresent(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** The file in a scratch folder that says which process made it (scratchFolder): what proves the folder the toolkit's. */
const SCRATCH_OWNER = '.gpu-cluster-manifests-scratch';

/**
 * A scratch folder of this process in the system's temporary folder, `<tmp>/<prefix>-<pid>-XXXXXX` (mode 0700), with
 * a file naming its process inside; the caller removes it when done. What a process killed before it could (kill -9)
 * left is removed by the next one that makes a folder of the same prefix: a folder of this user whose name and owner
 * file name a process that no longer runs. Nothing else is touched: another user's folder, a file or a link of that
 * name, a folder without the owner file (not made here), one whose process still runs.
 */
export function scratchFolder(prefix: string): string {
  const root = tmpdir();
  const name = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+)-[A-Za-z0-9]{6}$`);
  let entries: string[] = [];
  try {
    entries = readdirSync(root);
  } catch {
    // nothing to reclaim where nothing can be listed
  }
  for (const entry of entries) {
    const m = name.exec(entry);
    if (!m || pidAlive(Number(m[1]))) continue;
    const dir = path.join(root, entry);
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (!st?.isDirectory() || st.uid !== process.getuid?.()) continue;
    const owner = path.join(dir, SCRATCH_OWNER);
    // a small regular file (never a FIFO to wait on) naming the process
    const file = lstatSync(owner, { throwIfNoEntry: false });
    if (!file?.isFile() || file.size > 32) continue;
    try {
      if (readFileSync(owner, 'utf8').trim() !== m[1]) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // gone meanwhile, or not ours to remove: left as it is
    }
  }
  const dir = mkdtempSync(path.join(root, `${prefix}-${process.pid}-`));
  writeFileSync(path.join(dir, SCRATCH_OWNER), `${process.pid}\n`);
  faultPoint('scratch');
  return dir;
}
