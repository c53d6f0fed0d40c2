import { createHash } from 'node:crypto';
import type { BigIntStats, Dirent, Stats } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileDigest, observeDigests, sha256 } from './digests';

/**
 * What a process reads, found by watching it (as tup and bazel find dependencies): the SHA-256 of every file it
 * read, the listing of every folder it listed, whether each path it probed existed, every environment variable it
 * looked at. The up-to-date record of the plain synth (src/launcher/up-to-date.ts) is made of it. Render threads
 * watch themselves the same way and hand what they saw to the main thread's watch (fleet-workers.ts); anything
 * else that cannot be followed this way (another process, a thread that does not report, an asynchronous read)
 * makes the run unsound: it is not recorded.
 */

// the modules themselves (not copies of their bindings): the watch replaces their functions
const requireHere = createRequire(__filename);
const fs = requireHere('node:fs') as typeof import('node:fs');
const childProcess = requireHere('node:child_process') as typeof import('node:child_process');
const workerThreads = requireHere('node:worker_threads') as typeof import('node:worker_threads');

/** Pseudo files (a process's own /proc/<pid>/stat, devices): never an input of a render. */
const NOT_INPUTS = ['/proc', '/sys', '/dev'];

/** Set in a worker's `workerData` by a thread that will report what it reads (WatchReport) to this thread's watch. */
export const WATCHED_WORKER = 'gpu-cluster-manifests-watched';

export type Kind = 'file' | 'dir' | 'symlink' | 'other' | 'missing';

/** What one run observed. */
export interface Observed {
  /** path -> SHA-256 of its bytes (null: it did not exist). */
  files: Record<string, string | null>;
  /** `path\0withTypes` -> digest of its sorted entries. */
  dirs: Record<string, string>;
  /** `path\0stat|lstat` -> the kind of file found. */
  kinds: Record<string, Kind>;
  /** path -> its real path (null: did not resolve). */
  realpaths: Record<string, string | null>;
  /** variable -> value (null: unset). */
  env: Record<string, string | null>;
}

/** What a watched thread saw, sent to the watch of the thread that started it. */
export interface WatchReport {
  readonly seen: Observed;
  readonly unsound?: string;
}

export function kindOf(st: Stats | BigIntStats | undefined): Kind {
  if (!st) return 'missing';
  return st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'other';
}

export function probe(p: string, how: 'stat' | 'lstat'): Kind {
  try {
    return kindOf((how === 'stat' ? fs.statSync : fs.lstatSync)(p, { throwIfNoEntry: false }));
  } catch {
    return 'other';
  }
}

/** The paths a watch leaves out: pseudo files, and the given ones (the output, the cache) with what is named after them. */
export function watchExclusions(excluded: readonly (string | undefined)[]): readonly string[] {
  return [...new Set([...NOT_INPUTS, ...excluded.filter((e): e is string => e !== undefined).map((e) => path.resolve(e))])];
}

/** `abs` (absolute, normalised) is an excluded path, inside one, or named after one (`dist.tmp-…`). */
function isExcluded(abs: string, excluded: readonly string[]): boolean {
  for (const e of excluded) {
    if (abs.startsWith(e) && (abs.length === e.length || abs[e.length] === path.sep || abs[e.length] === '.' || e === path.sep)) return true;
  }
  return false;
}

/**
 * The digest of a folder's listing, without the entries left out (the output folder and the write protocol's
 * files beside it come and go with every render: the folder holding them is listed by the render all the same).
 */
function listingDigest(dir: string, entries: ReadonlyArray<string | Buffer | Dirent>, excluded: readonly string[]): string {
  const kept = entries.filter((e) => !isExcluded(path.join(dir, typeof e === 'string' || Buffer.isBuffer(e) ? String(e) : e.name), excluded));
  const names = kept.map((e) => (typeof e === 'string' || Buffer.isBuffer(e) ? String(e) : `${e.name}\0${e.isDirectory() ? 'd' : e.isFile() ? 'f' : e.isSymbolicLink() ? 'l' : 'o'}`));
  return sha256(names.sort().join('\n'));
}

function listing(p: string, withTypes: boolean, excluded: readonly string[]): string | undefined {
  try {
    return listingDigest(p, withTypes ? fs.readdirSync(p, { withFileTypes: true }) : fs.readdirSync(p), excluded);
  } catch {
    return undefined;
  }
}

function realpath(p: string): string | null {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return null;
  }
}

/** True when everything observed is still so; `skip`: files the caller compares itself (a record's descriptions). */
export function stillObserved(r: Observed, excluded: readonly string[], skip: ReadonlySet<string> = new Set()): boolean {
  for (const [f, d] of Object.entries(r.files)) if (!skip.has(f) && (fileDigest(f) ?? null) !== d) return false;
  for (const [key, d] of Object.entries(r.dirs)) {
    const [p, withTypes] = key.split('\0');
    if (listing(p, withTypes === '1', excluded) !== d) return false;
  }
  for (const [key, k] of Object.entries(r.kinds)) {
    const [p, how] = key.split('\0');
    if (probe(p, how as 'stat' | 'lstat') !== k) return false;
  }
  for (const [p, real] of Object.entries(r.realpaths)) if (realpath(p) !== real) return false;
  for (const [name, value] of Object.entries(r.env)) if ((process.env[name] ?? null) !== value) return false;
  return true;
}

/** The watch running in this thread, if any (render threads are told to watch themselves when there is one). */
let current: Watcher | undefined;

export function currentWatch(): Watcher | undefined {
  return current;
}

/** Watches what this thread reads while it renders. */
export class Watcher {
  readonly seen: Observed = { files: {}, dirs: {}, kinds: {}, realpaths: {}, env: {} };
  /** Why this run cannot be recorded, once known. */
  unsound: string | undefined;
  /** The paths not watched (the output, the cache, pseudo files). */
  readonly excluded: readonly string[];
  private readonly undo: Array<() => void> = [];
  private readonly fds = new Map<number, { file: string; hash: ReturnType<typeof createHash> | undefined; eof: boolean }>();
  /** Inside a hook: the hook's own file system calls are not the render's. */
  private busy = false;
  /** Watched threads started that have not reported yet. */
  private pending = 0;

  constructor(excluded: readonly (string | undefined)[]) {
    this.excluded = watchExclusions(excluded);
  }

  private watched(p: unknown): string | undefined {
    if (typeof p !== 'string' && !Buffer.isBuffer(p) && !(p instanceof URL)) return undefined;
    const abs = path.resolve(p instanceof URL ? p.pathname : String(p));
    if (isExcluded(abs, this.excluded)) return undefined;
    return abs;
  }

  private replace<T extends object, K extends keyof T>(obj: T, key: K, make: (original: T[K]) => T[K]): void {
    const original = obj[key];
    obj[key] = make(original);
    this.undo.push(() => {
      obj[key] = original;
    });
  }

  private file(abs: string, digest: string | null): void {
    // the first read is what the render used
    if (!(abs in this.seen.files)) this.seen.files[abs] = digest;
  }

  /** What a watched thread saw, merged in (its first observation of a path counts when this thread had none). */
  merge(report: WatchReport): void {
    this.pending = Math.max(0, this.pending - 1);
    this.unsound ??= report.unsound;
    for (const key of ['files', 'dirs', 'kinds', 'realpaths', 'env'] as const) {
      const into = this.seen[key] as Record<string, unknown>;
      for (const [k, v] of Object.entries(report.seen[key])) if (!(k in into)) into[k] = v;
    }
  }

  /** Why the run cannot be recorded: what it did that was not followed, or a watched thread that never reported. */
  whyUnsound(): string | undefined {
    return this.unsound ?? (this.pending > 0 ? 'a render thread did not say what it read' : undefined);
  }

  start(): void {
    const self = this;
    type Fn = (...args: any[]) => any;
    const wrap = <T extends object>(obj: T, key: keyof T, after: (args: any[], result: any) => void, onError?: (args: any[], e: unknown) => void) => {
      this.replace(obj, key, (original) => Object.assign(function wrapped(this: unknown, ...args: any[]) {
        if (self.busy) return (original as Fn).apply(this, args);
        let result;
        try {
          result = (original as Fn).apply(this, args);
        } catch (e) {
          self.busy = true;
          try {
            onError?.(args, e);
          } finally {
            self.busy = false;
          }
          throw e;
        }
        self.busy = true;
        try {
          after(args, result);
        } finally {
          self.busy = false;
        }
        return result;
      }, original) as T[keyof T]);
    };
    const unsound = (why: string) => (): void => {
      self.unsound ??= why;
    };

    wrap(fs, 'readFileSync', ([p, options], result: string | Buffer) => {
      const abs = self.watched(p);
      if (!abs) return;
      const encoding = typeof options === 'string' ? options : options?.encoding;
      if (typeof result === 'string' && !/^utf-?8$/i.test(encoding ?? '')) self.file(abs, fileDigest(abs) ?? null);
      else self.file(abs, sha256(typeof result === 'string' ? Buffer.from(result, 'utf8') : result));
    }, ([p], e) => {
      const abs = self.watched(p);
      if (abs && (e as NodeJS.ErrnoException).code === 'ENOENT') self.file(abs, null);
    });
    wrap(fs, 'openSync', ([p, flags], fd: number) => {
      const abs = self.watched(p);
      // eslint-disable-next-line no-bitwise
      const readOnly = flags === undefined || flags === 'r' || flags === 'rs' || (typeof flags === 'number' && (flags & (fs.constants.O_WRONLY | fs.constants.O_RDWR)) === 0);
      if (abs && readOnly) self.fds.set(fd, { file: abs, hash: createHash('sha256'), eof: false });
    }, ([p], e) => {
      const abs = self.watched(p);
      if (abs && (e as NodeJS.ErrnoException).code === 'ENOENT') self.file(abs, null);
    });
    wrap(fs, 'readSync', ([fd, buffer, offsetOrOptions, length, position], n: number) => {
      const open = self.fds.get(fd);
      if (!open?.hash) return;
      const options = typeof offsetOrOptions === 'object' && offsetOrOptions !== null ? offsetOrOptions : { offset: offsetOrOptions, length, position };
      if (options.position !== undefined && options.position !== null) {
        open.hash = undefined; // not a front-to-back read: hashed from the file when closed
        return;
      }
      if (n === 0) open.eof = true;
      else open.hash.update((buffer as Uint8Array).subarray(options.offset ?? 0, (options.offset ?? 0) + n));
    });
    wrap(fs, 'closeSync', ([fd]) => {
      const open = self.fds.get(fd);
      if (!open) return;
      self.fds.delete(fd);
      self.file(open.file, open.hash && open.eof ? open.hash.digest('hex') : fileDigest(open.file) ?? null);
    });
    wrap(fs, 'readdirSync', ([p, options], result: Array<string | Buffer | Dirent>) => {
      const abs = self.watched(p);
      if (abs) self.seen.dirs[`${abs}\0${options?.withFileTypes ? '1' : '0'}`] ??= listingDigest(abs, result, self.excluded);
    });
    for (const how of ['stat', 'lstat'] as const) {
      wrap(fs, `${how}Sync`, ([p], result) => {
        const abs = self.watched(p);
        if (abs) self.seen.kinds[`${abs}\0${how}`] ??= kindOf(result as Stats | undefined);
      }, ([p]) => {
        const abs = self.watched(p);
        if (abs) self.seen.kinds[`${abs}\0${how}`] ??= probe(abs, how);
      });
    }
    wrap(fs, 'existsSync', ([p], exists: boolean) => {
      const abs = self.watched(p);
      if (abs) self.seen.kinds[`${abs}\0stat`] ??= exists ? probe(abs, 'stat') : 'missing';
    });
    wrap(fs, 'realpathSync', ([p], result: string) => {
      const abs = self.watched(p);
      if (abs && !(abs in self.seen.realpaths)) self.seen.realpaths[abs] = result;
    }, ([p]) => {
      const abs = self.watched(p);
      if (abs && !(abs in self.seen.realpaths)) self.seen.realpaths[abs] = null;
    });
    // what cannot be followed: another process's reads, an unwatched thread's, an asynchronous read
    for (const key of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
      wrap(childProcess, key, unsound('it ran another process'));
    }
    this.replace(workerThreads, 'Worker', (W) => class extends W {
      constructor(...args: ConstructorParameters<typeof W>) {
        const data = (args[1] as { workerData?: Record<string, unknown> } | undefined)?.workerData;
        // a render thread that watches itself reports what it read (merge); any other thread is not followed
        if (data?.[WATCHED_WORKER] === true) self.pending += 1;
        else self.unsound ??= 'it started a thread';
        super(...args);
      }
    });
    for (const key of ['readFile', 'readdir', 'open', 'createReadStream', 'opendirSync', 'watch'] as const) wrap(fs, key, unsound('it read a file asynchronously'));
    for (const key of ['readFile', 'readdir', 'open'] as const) wrap(fs.promises, key, unsound('it read a file asynchronously'));

    observeDigests((file, digest) => {
      if (self.watched(file)) self.file(file, digest ?? null);
    });
    this.undo.push(() => observeDigests(undefined));

    const env = process.env;
    this.replace(process, 'env', () => new Proxy(env, {
      get(target, name) {
        if (typeof name === 'string' && !(name in self.seen.env)) self.seen.env[name] = target[name] ?? null;
        return Reflect.get(target, name);
      },
      has(target, name) {
        if (typeof name === 'string' && !(name in self.seen.env)) self.seen.env[name] = target[name] ?? null;
        return Reflect.has(target, name);
      },
      ownKeys(target) {
        self.unsound ??= 'it listed every environment variable';
        return Reflect.ownKeys(target);
      },
    }));
    current = this;
    this.undo.push(() => {
      if (current === this) current = undefined;
    });
  }

  stop(): void {
    for (const u of this.undo.reverse()) u();
    this.undo.length = 0;
  }

  /** Adds the modules this thread loaded that the watch did not see being read (those loaded before it began). */
  addLoadedModules(): void {
    for (const m of Object.keys(requireHere.cache)) if (this.watched(m) && !(m in this.seen.files)) this.seen.files[m] = fileDigest(m) ?? null;
  }
}
