import { createHash } from 'node:crypto';
import type { BigIntStats, Dirent, Stats } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { defaultCacheDir } from '../cache/cache-dir';
import { fileDigest, observeDigests, sha256 } from '../cache/digests';
import { FAULT_ENV } from '../fault';
import { isInside } from '../files';
import { INSTALL_ROOT, PACKAGE_ROOT } from '../paths';
import { Project, projectOf } from '../project/project-file';

// the modules themselves (not copies of their bindings): the watch replaces their functions
const requireHere = createRequire(__filename);
const fs = requireHere('node:fs') as typeof import('node:fs');
const childProcess = requireHere('node:child_process') as typeof import('node:child_process');
const workerThreads = requireHere('node:worker_threads') as typeof import('node:worker_threads');

/**
 * The up-to-date answer of the plain `synth` (every description of the project into its output
 * folder, as the project file names them), as make gives it, with the dependencies found as tup and bazel find them: by watching.
 *
 * A run that renders records everything it observed while it ran: the SHA-256 of every file it
 * read (descriptions, CRDs, upstream charts, and every module of lib/ and node_modules/ it loaded,
 * hashed from the bytes it was given), the listing of every folder it listed, whether each path it
 * probed existed, every environment variable it looked at; then Node's version, the arguments,
 * the working folder, package-lock.json (and npm's record of what is installed), and the SHA-256
 * of every file it left in dist/. The next plain synth checks all of it (the digests are
 * remembered by inode and ctime, see src/cache/digests.ts) and, when nothing differs and dist/ holds
 * exactly those files, prints the recorded warnings and summary instead of rendering: a render
 * would write the same bytes. A run that did what cannot be checked this way (started a process
 * such as a TypeScript description's sandbox, read a file asynchronously) is not recorded.
 */

const RECORD_FILE = 'synth-up-to-date.json';
const RECORD_VERSION = 1;
/** The arguments answered from the record; anything else renders. */
const ELIGIBLE = [['synth'], ['synth', '--quiet']];
/** Pseudo files (a process's own /proc/<pid>/stat, devices): never an input of a render. */
const NOT_INPUTS = ['/proc', '/sys', '/dev'];
/** Always inputs, whether or not the render reads them: what npm installed. */
const INSTALL_FILES = ['package-lock.json', path.join('node_modules', '.package-lock.json')];

type Kind = 'file' | 'dir' | 'symlink' | 'other' | 'missing';

/** What one run observed. */
interface Observed {
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

interface RunRecord extends Observed {
  version: number;
  context: string;
  /** Output file (relative) -> SHA-256. */
  output: Record<string, string>;
  stdout: string[];
  stderr: string[];
}

/** The record of a plain synth in a project, and that project; undefined for any other run. */
function recordFile(argv: readonly string[]): { file: string; project: Project } | undefined {
  if (process.env[FAULT_ENV] || !ELIGIBLE.some((a) => JSON.stringify(a) === JSON.stringify(argv))) return undefined;
  let dir: string | undefined;
  let project: Project | undefined;
  try {
    dir = defaultCacheDir();
    project = projectOf();
  } catch {
    return undefined; // the CLI reports an unusable cache setting or project file
  }
  return dir !== undefined && project !== undefined ? { file: path.join(dir, RECORD_FILE), project } : undefined;
}

/**
 * Node, the platform, the arguments, where they were typed, the toolkit and the project's folders
 * (the project file is read before the watch begins): a record of another of these is another run's.
 */
function context(argv: readonly string[], project: Project): string {
  const where = [process.cwd(), PACKAGE_ROOT, project.file, project.clusters, project.out];
  return JSON.stringify([RECORD_VERSION, process.version, process.platform, process.arch, argv, ...where]);
}

function kindOf(st: Stats | BigIntStats | undefined): Kind {
  if (!st) return 'missing';
  return st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'other';
}

function probe(p: string, how: 'stat' | 'lstat'): Kind {
  try {
    return kindOf((how === 'stat' ? fs.statSync : fs.lstatSync)(p, { throwIfNoEntry: false }));
  } catch {
    return 'other';
  }
}

function listingDigest(entries: ReadonlyArray<string | Buffer | Dirent>): string {
  const names = entries.map((e) => (typeof e === 'string' || Buffer.isBuffer(e) ? String(e) : `${e.name}\0${e.isDirectory() ? 'd' : e.isFile() ? 'f' : e.isSymbolicLink() ? 'l' : 'o'}`));
  return sha256(names.sort().join('\n'));
}

function listing(p: string, withTypes: boolean): string | undefined {
  try {
    return listingDigest(withTypes ? fs.readdirSync(p, { withFileTypes: true }) : fs.readdirSync(p));
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

/** SHA-256 of every file under the output folder by relative path; undefined when it holds anything but files and folders. */
function outputDigests(root: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  const walk = (rel: string): boolean => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!walk(child)) return false;
      } else {
        const digest = e.isFile() ? fileDigest(path.join(root, child)) : undefined;
        if (digest === undefined) return false;
        out[child] = digest;
      }
    }
    return true;
  };
  try {
    return walk('') ? out : undefined;
  } catch {
    return undefined;
  }
}

/** True when everything the record observed is still so. */
function unchanged(r: RunRecord): boolean {
  for (const [f, d] of Object.entries(r.files)) if ((fileDigest(f) ?? null) !== d) return false;
  for (const [key, d] of Object.entries(r.dirs)) {
    const [p, withTypes] = key.split('\0');
    if (listing(p, withTypes === '1') !== d) return false;
  }
  for (const [key, k] of Object.entries(r.kinds)) {
    const [p, how] = key.split('\0');
    if (probe(p, how as 'stat' | 'lstat') !== k) return false;
  }
  for (const [p, real] of Object.entries(r.realpaths)) if (realpath(p) !== real) return false;
  for (const [name, value] of Object.entries(r.env)) if ((process.env[name] ?? null) !== value) return false;
  return true;
}

/** Leftovers of an interrupted write beside the output folder: the CLI recovers them. */
function interruptedWrite(out: string): boolean {
  const parent = path.dirname(out);
  const base = path.basename(out);
  return fs.readdirSync(parent).some((n) => n.startsWith(`${base}.tmp-`) || n.startsWith(`${base}.old-`));
}

/**
 * Prints the last render's output and returns 0 when the plain synth has nothing to do; undefined
 * (render) otherwise.
 */
export function answerFromRecord(argv: readonly string[]): number | undefined {
  const recorded = recordFile(argv);
  if (!recorded) return undefined;
  const { file, project } = recorded;
  const t0 = performance.now();
  try {
    if (interruptedWrite(project.out)) return undefined;
    const r = JSON.parse(fs.readFileSync(file, 'utf8')) as RunRecord;
    if (r.version !== RECORD_VERSION || r.context !== context(argv, project) || !unchanged(r)) return undefined;
    const output = outputDigests(project.out);
    if (!output || JSON.stringify(output) !== JSON.stringify(r.output)) return undefined;
    for (const l of r.stderr) process.stderr.write(l);
    if (!argv.includes('--quiet')) {
      for (const l of r.stdout) process.stdout.write(l);
      const s = ((performance.now() - t0) / 1000).toFixed(2);
      const shown = path.relative(process.cwd(), project.out) || '.';
      process.stdout.write(`${shown} already up to date (${Object.keys(output).length} files): no description, source or schema file changed since the last render (checked in ${s} s)\n`);
    }
    return 0;
  } catch {
    return undefined;
  }
}

/** Watches what the process reads while it renders. */
class Watcher {
  readonly seen: Observed = { files: {}, dirs: {}, kinds: {}, realpaths: {}, env: {} };
  /** Why this run cannot be recorded, once known. */
  unsound: string | undefined;
  private readonly undo: Array<() => void> = [];
  private readonly fds = new Map<number, { file: string; hash: ReturnType<typeof createHash> | undefined; eof: boolean }>();
  private readonly excluded: string[];
  /** Inside a hook: the hook's own file system calls are not the render's. */
  private busy = false;

  constructor(excluded: readonly (string | undefined)[]) {
    this.excluded = [...NOT_INPUTS, ...excluded.filter((e): e is string => e !== undefined)];
  }

  private watched(p: unknown): string | undefined {
    if (typeof p !== 'string' && !Buffer.isBuffer(p) && !(p instanceof URL)) return undefined;
    const abs = path.resolve(p instanceof URL ? p.pathname : String(p));
    if (this.excluded.some((e) => isInside(abs, e) || abs.startsWith(`${e}.`))) return undefined;
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
      if (abs) self.seen.dirs[`${abs}\0${options?.withFileTypes ? '1' : '0'}`] ??= listingDigest(result);
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
    // what cannot be followed: another process's reads, another thread's, an asynchronous read
    for (const key of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
      wrap(childProcess, key, unsound('it ran another process'));
    }
    this.replace(workerThreads, 'Worker', (W) => class extends W {
      constructor(...args: ConstructorParameters<typeof W>) {
        self.unsound ??= 'it started a thread';
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
  }

  stop(): void {
    for (const u of this.undo.reverse()) u();
    this.undo.length = 0;
  }
}

/** Copies what a stream writes. */
function tap(stream: NodeJS.WriteStream, into: string[]): () => void {
  const write = stream.write;
  stream.write = function tapped(this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
    into.push(String(chunk));
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof stream.write;
  return () => {
    stream.write = write;
  };
}

/**
 * Runs the plain synth while watching what it reads, and records it for answerFromRecord when it
 * succeeds and everything it depended on could be watched. Other commands just run.
 */
export function runRecorded(argv: readonly string[], run: () => number | Promise<number>): number | Promise<number> {
  const recorded = recordFile(argv);
  if (!recorded) return run();
  const { file, project } = recorded;
  let cacheDir: string | undefined;
  try {
    cacheDir = defaultCacheDir();
  } catch {
    cacheDir = undefined;
  }
  const watcher = new Watcher([project.out, cacheDir]);
  const stdout: string[] = [];
  const stderr: string[] = [];
  const untap = [tap(process.stdout, stdout), tap(process.stderr, stderr)];
  const stop = () => {
    watcher.stop();
    for (const u of untap) u();
  };
  const finish = (code: number): number => {
    stop();
    if (code === 0 && watcher.unsound === undefined) save(file, argv, project, watcher.seen, stdout, stderr);
    return code;
  };
  watcher.start();
  let result: number | Promise<number>;
  try {
    result = run();
  } catch (e) {
    stop();
    throw e;
  }
  return typeof result === 'number' ? finish(result) : result.then(finish, (e: unknown) => {
    stop();
    throw e;
  });
}

function save(file: string, argv: readonly string[], project: Project, seen: Observed, stdout: string[], stderr: string[]): void {
  // a file whose content is recorded needs no separate check that it exists
  for (const key of Object.keys(seen.kinds)) {
    const [p, how] = key.split('\0');
    if (how === 'stat' && seen.kinds[key] === 'file' && typeof seen.files[p] === 'string') delete seen.kinds[key];
  }
  // the modules loaded before the watch began (the launcher's), and what npm installed
  for (const m of Object.keys(require.cache)) if (!(m in seen.files)) seen.files[m] = fileDigest(m) ?? null;
  for (const f of INSTALL_FILES) {
    const abs = path.join(INSTALL_ROOT, f);
    if (!(abs in seen.files)) seen.files[abs] = fileDigest(abs) ?? null;
  }
  const output = outputDigests(project.out);
  if (!output) return;
  const record: RunRecord = {
    version: RECORD_VERSION,
    context: context(argv, project),
    ...seen,
    output,
    // the summary's last line (files written, timings) belongs to that run only
    stdout: argv.includes('--quiet') ? [] : stdout.slice(0, -1),
    stderr,
  };
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(tmp, JSON.stringify(record));
    fs.renameSync(tmp, file);
  } catch {
    // no record: the next run renders again
    fs.rmSync(tmp, { force: true });
  }
}
