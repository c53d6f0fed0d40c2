import { isAscii } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';
import * as vm from 'node:vm';
import { CACHE_ENV, cacheOff, projectCachePath } from './cache-dir';
import { removeDeadWriters, writeCacheFile } from './cache-write';
import { makeDirs } from '../files';
import { INSTALL_ROOT, PACKAGE_ROOT } from '../paths';

/**
 * A V8 code cache for the CommonJS modules a command loads (Node 20 has no module.enableCompileCache):
 * compiling some 10 MB of JavaScript (cdk8s-plus's k8s types, the typed imports, zod, yaml) costs a synth about
 * 0.15 s, a fifth of which remains with the cache (bench/README.md). One file per entry point (`<cache>/modules/<name>-<V8 tag>.bin`), written at exit
 * after a run that compiled a module afresh, so it holds the functions that ran.
 *
 * Keyed and verified by content: V8 checks little more than a source's length before it uses compiled code
 * (and a release build never checks the data's own checksum), so
 * - each module's entry carries the SHA-256 of the exact source it was compiled from; a module whose source
 *   differs (an edit, an upgrade of a dependency) is compiled afresh, and the file rewritten;
 * - the file's header carries its SHA-256, each module's compiled code its own (checked when it is used: a
 *   process uses some of the entries only): a truncated, corrupt or foreign file or entry is a miss;
 * - V8's own check (its version, flags and the source's length) rejects the rest, and such a module is
 *   compiled afresh.
 * Best effort: a folder that cannot be read or written (read-only, full, a file in the way) means a run
 * without the cache, never a failed command; files are written to a unique temporary name and renamed into
 * place (concurrent runs: the last complete write wins; src/cache/cache-write.ts); the folder keeps the MAX_FILES files
 * written last.
 *
 * Only the toolkit's own compiled modules and its dependencies are cached (files under the package and under
 * the node_modules it is installed in), never a user's file. ES modules (Node >= 20.19 loads them through
 * require()) keep Node's own path: Node 20 offers no way to hand them compiled code.
 *
 * The command line itself is one bundled file (lib/bundle/cli.js, projenrc/bundle.cjs), loaded by requireBundle: one
 * entry of the same file, keyed by the SHA-256 of its bytes as read (hashing the decoded text costs five times more).
 */

/** Files the folder keeps (one per entry point, V8 build and set of flags; the ones written longest ago go). */
export const MAX_FILES = 16;
/** A file is not written when its compiled code would be larger than this. */
export const MAX_FILE_BYTES = 64 * 1024 * 1024;

const MAGIC = Buffer.from('gcm-modules-2\n');
const DIGEST_BYTES = 32;
/**
 * V8's compiled code is only valid for the V8 build and the flags that made it (V8 checks, and rejects all of
 * it on a mismatch): a process started with other flags (`--max-old-space-size`, say) keeps a file of its own
 * instead of rewriting the other's at every run.
 */
const V8_TAG = createHash('sha256')
  .update(JSON.stringify([process.versions.v8, process.arch, process.platform, process.execArgv, process.env.NODE_OPTIONS ?? '']))
  .digest('hex')
  .slice(0, 12);

/** What a run of the cache did (for tests and measurements). */
export interface ModuleCacheStats {
  /** Modules compiled with code from the cache. */
  hits: number;
  /** Modules compiled afresh (not in the cache, changed, or rejected by V8). */
  misses: number;
  /** True when the file was (re)written at exit or by save(). */
  written: boolean;
}

export interface ModuleCache {
  readonly file: string;
  readonly stats: ModuleCacheStats;
  /** Writes the file now when a module was compiled afresh (otherwise it is done at exit); never throws. */
  save(): void;
  /** Restores Node's own compilation; nothing is written at exit any more (save() still writes). */
  uninstall(): void;
}

export interface ModuleCacheOptions {
  /** The cache folder. @default $GPU_CLUSTER_MANIFESTS_CACHE, else node_modules/.cache/gpu-cluster-manifests of the install */
  readonly dir?: string;
  /** Folders whose modules are cached. @default the package and the node_modules it is installed in */
  readonly roots?: readonly string[];
}

/** The cache folder, without a word: a folder that turns out unusable only costs speed (the command itself reports it, when it needs one). */
function defaultFolder(): string | undefined {
  const env = process.env[CACHE_ENV];
  if (env !== undefined && env !== '') return cacheOff(env) ? undefined : path.resolve(env);
  return existsSync(path.join(INSTALL_ROOT, 'node_modules')) ? projectCachePath(INSTALL_ROOT) : undefined;
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest();

interface Entry {
  /** The SHA-256 of the module's source. */
  readonly key: string;
  /** The SHA-256 of the compiled code, checked when the entry is used (a process uses some of the entries only). */
  readonly digest: string;
  readonly length: number;
  /** The compiled code, read from the file when first asked for. */
  data(): Buffer;
}

/** One entry of the header: file name, source digest, length and digest of the compiled code. */
type HeaderEntry = [string, string, number, string];

/** The entries of a cache file, and how to let go of it. */
interface CacheFile {
  readonly entries: Map<string, Entry>;
  close(): void;
}

/** Reads `length` bytes at `position` of an open file; throws when the file is shorter. */
function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, position + done);
    if (n === 0) throw new Error('short read');
    done += n;
  }
  return buf;
}

/**
 * The entries of a cache file: MAGIC, the header's length and SHA-256, the header (JSON), the compiled
 * code of each entry, read when it is used (the up-to-date answer uses a few of a synth's entries). Empty when
 * the file is absent, short, of another format, or its header is corrupt; an entry whose code is corrupt is
 * found out when it is used. The file stays open: a newer one renamed into its place meanwhile changes nothing.
 */
function openEntries(file: string): CacheFile {
  const entries = new Map<string, Entry>();
  let fd: number | undefined;
  const close = () => {
    if (fd === undefined) return;
    try {
      closeSync(fd);
    } catch {
      // nothing to do
    }
    fd = undefined;
  };
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    const start = readAt(fd, MAGIC.length + 4 + DIGEST_BYTES, 0);
    if (!start.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error('not a cache file');
    const headerLength = start.readUInt32LE(MAGIC.length);
    let offset = start.length;
    const head = readAt(fd, headerLength, offset);
    if (!start.subarray(MAGIC.length + 4).equals(sha256(head))) throw new Error('corrupt header');
    offset += headerLength;
    for (const [filename, key, length, digest] of JSON.parse(head.toString('utf8')) as HeaderEntry[]) {
      const at = offset;
      let data: Buffer | undefined;
      entries.set(filename, {
        key,
        digest,
        length,
        data: () => {
          if (data === undefined) {
            if (fd === undefined) throw new Error('closed');
            data = readAt(fd, length, at);
          }
          return data;
        },
      });
      offset += length;
    }
    if (offset !== size) throw new Error('size');
  } catch {
    entries.clear();
    close();
  }
  return { entries, close };
}

const blobDigest = (data: string | Uint8Array) => createHash('sha256').update(data).digest('base64');

/** The name of a file this cache writes (`<entry point>-<V8 tag>.bin`). */
const CACHE_FILE = /^[A-Za-z0-9_-]+-[0-9a-f]{12}\.bin$/;

/**
 * Whether a file is one this cache wrote: a regular file that starts with its MAGIC. The folder is the cache's, but a
 * folder named by the cache variable may be a user's: nothing else in it is ever removed.
 */
function isCacheFile(file: string): boolean {
  let fd: number | undefined;
  try {
    if (!lstatSync(file).isFile()) return false;
    fd = openSync(file, 'r');
    return readAt(fd, MAGIC.length, 0).equals(MAGIC);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Keeps the MAX_FILES files of the folder used last (reading a file does not change its mtime: a hit touches nothing, so
 * "used" means written), and none of the temporary files of writers that are gone (a worker thread's write is cut short
 * when its process exits).
 */
function prune(dir: string, keep: string): void {
  removeDeadWriters(dir);
  const files = readdirSync(dir)
    .filter((f) => CACHE_FILE.test(f) && path.join(dir, f) !== keep && isCacheFile(path.join(dir, f)))
    .map((f) => ({ f: path.join(dir, f), mtime: statSync(path.join(dir, f), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const { f } of files.slice(MAX_FILES - 1)) rmSync(f, { force: true });
  // the launcher's files of the earlier format, beside the folder
  const parent = path.dirname(dir);
  for (const f of readdirSync(parent)) if (/^modules-[a-z-]+-v\d+\.\d+\.\d+-[a-z0-9]+\.v8$/.test(f)) rmSync(path.join(parent, f), { force: true });
}

/**
 * One cache per process, also where two copies of this module are loaded (the entry point's, and the bundle's own once
 * the entry point has loaded the bundle): the first installed answers every later call.
 */
const INSTALLED = Symbol.for('gpu-cluster-manifests.module-cache');
type Installed = ModuleCache & { compileKeyed?: (mod: Module, content: string, filename: string, key: string) => unknown };
const processWide = globalThis as unknown as { [INSTALLED]?: Installed };

/**
 * Compiles the modules loaded from now on with V8's code from `<cache>/modules/<name>-<tag>.bin`, and writes
 * it at exit when a module had to be compiled afresh. `name` tells entry points apart (a command loads its
 * own modules); undefined when the cache is off or there is no folder for it. One per process: a second call
 * returns the first.
 */
export function installModuleCache(name: string, opts: ModuleCacheOptions = {}): ModuleCache | undefined {
  if (processWide[INSTALLED]) return processWide[INSTALLED];
  const folder = opts.dir ?? defaultFolder();
  if (!folder) return undefined;
  const dir = path.join(folder, 'modules');
  const file = path.join(dir, `${name.replace(/[^a-z0-9-]/gi, '_')}-${V8_TAG}.bin`);
  const roots = (opts.roots ?? [...new Set([PACKAGE_ROOT, path.join(INSTALL_ROOT, 'node_modules')])]).map((r) => path.resolve(r) + path.sep);
  const cacheFile = openEntries(file);
  const known = cacheFile.entries;
  /** The entry's compiled code when it is intact (undefined: unreadable, or not what its digest says). */
  const intact = (e: Entry): Buffer | undefined => {
    try {
      const data = e.data();
      return blobDigest(data) === e.digest ? data : undefined;
    } catch {
      return undefined;
    }
  };
  const stats: ModuleCacheStats = { hits: 0, misses: 0, written: false };
  const loaded: { filename: string; key: string; script: vm.Script; data?: Buffer; digest?: string }[] = [];
  const proto = Module.prototype as unknown as { _compile(content: string, filename: string, format?: string): unknown };
  const original = proto._compile;
  const wrap = (Module as unknown as { wrap(source: string): string }).wrap;
  const internals = Module as unknown as {
    _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: unknown): string;
    _resolveLookupPaths(request: string, parent: unknown): string[] | null;
  };
  const resolveFilename = internals._resolveFilename;
  const lookupPaths = internals._resolveLookupPaths;
  const inScope = (filename: string) => /\.c?js$/.test(filename) && roots.some((r) => filename.startsWith(r)) && !filename.startsWith(folder + path.sep);

  function cachedCompile(this: Module, content: string, filename: string, format?: string): unknown {
    if (format === 'module' || !inScope(filename)) return original.call(this, content, filename, format);
    return compileKeyed(this, content, filename, blobDigest(content));
  }

  /** Compiles a module with the cache's code for `key` (the digest of its source), and runs it as Node would. */
  function compileKeyed(mod: Module, content: string, filename: string, key: string): unknown {
    const hit = known.get(filename);
    const cachedData = hit?.key === key ? intact(hit) : undefined;
    const source = content.startsWith('#!') ? `//${content}` : content;
    const script = new vm.Script(wrap(source), { filename, cachedData, importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER });
    const reused = cachedData !== undefined && !script.cachedDataRejected;
    if (reused) stats.hits++;
    else stats.misses++;
    loaded.push({ filename, key, script, data: reused ? cachedData : undefined, digest: reused ? hit!.digest : undefined });
    const req = ((id: string) => mod.require(id)) as NodeJS.Require;
    req.resolve = Object.assign((request: string, options?: unknown) => resolveFilename(request, mod, false, options), {
      paths: (request: string) => lookupPaths(request, mod),
    }) as NodeJS.RequireResolve;
    req.main = require.main;
    req.cache = (Module as unknown as { _cache: NodeJS.Require['cache'] })._cache;
    req.extensions = (Module as unknown as { _extensions: NodeJS.Require['extensions'] })._extensions;
    const fn = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
    return fn.call(mod.exports, mod.exports, req, mod, filename, path.dirname(filename));
  }

  let saved = false;
  const save = () => {
    if (saved || stats.misses === 0) return;
    saved = true;
    try {
      makeDirs(dir);
      const header: HeaderEntry[] = [];
      const blobs: Buffer[] = [];
      let size = 0;
      const add = (filename: string, key: string, data: Buffer, digest = blobDigest(data)) => {
        header.push([filename, key, data.length, digest]);
        blobs.push(data);
        size += data.length;
      };
      for (const m of loaded) {
        if (m.data) add(m.filename, m.key, m.data, m.digest);
        else add(m.filename, m.key, m.script.createCachedData());
      }
      if (size > MAX_FILE_BYTES) return;
      // what other runs of this entry point loaded stays (another description's components, say), while there is
      // room; an entry of it is checked when a run uses it
      const here = new Set(loaded.map((m) => m.filename));
      for (const [filename, e] of known) {
        if (here.has(filename) || size + e.length > MAX_FILE_BYTES) continue;
        const data = intact(e);
        if (data) add(filename, e.key, data, e.digest);
      }
      cacheFile.close();
      const head = Buffer.from(JSON.stringify(header), 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32LE(head.length);
      if (!writeCacheFile(file, Buffer.concat([MAGIC, length, sha256(head), head, ...blobs]))) return;
      stats.written = true;
      prune(dir, file);
    } catch {
      // a cache that cannot be written only costs speed
    }
  };
  proto._compile = cachedCompile;
  process.once('exit', save);
  const installed: Installed = {
    file,
    stats,
    save,
    compileKeyed: (mod, content, filename, key) => (inScope(filename)
      ? compileKeyed(mod, content, filename, key)
      : original.call(mod, content, filename)),
    uninstall: () => {
      if (proto._compile === cachedCompile) proto._compile = original;
      process.off('exit', save);
      cacheFile.close();
      if (processWide[INSTALLED] === installed) delete processWide[INSTALLED];
    },
  };
  processWide[INSTALLED] = installed;
  return installed;
}

/**
 * A bundle (lib/bundle/<name>.js, projenrc/bundle.cjs) loaded as a CommonJS module, compiled with the installed cache's
 * code (installModuleCache first), keyed by the SHA-256 of its bytes; the module Node's own require would make of
 * it, cached as such. Undefined when there is no such file (a checkout compiled without its bundle): the caller loads
 * the modules themselves.
 */
export function requireBundle(file: string): unknown {
  const modules = (Module as unknown as { _cache: Record<string, Module | undefined> })._cache;
  const known = modules[file];
  if (known) return known.exports;
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const internals = Module as unknown as { _nodeModulePaths(dir: string): string[] };
  const mod = new Module(file, module);
  mod.filename = file;
  mod.paths = internals._nodeModulePaths(path.dirname(file));
  modules[file] = mod;
  try {
    // an ASCII file (what the bundler writes) decodes to the same text either way; latin1 makes a one-byte string at once
    const text = bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
    const compile = processWide[INSTALLED]?.compileKeyed;
    if (compile) compile(mod, text, file, blobDigest(bytes));
    else (mod as unknown as { _compile(content: string, filename: string): unknown })._compile(text, file);
    mod.loaded = true;
  } catch (e) {
    delete modules[file];
    throw e;
  }
  return mod.exports;
}
