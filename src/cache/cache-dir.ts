import { accessSync, constants, existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { fsErrorText, InputError, isFsError } from '../errors';
import { pathProblem, usableFolder } from '../files';
import { INSTALL_ROOT, PACKAGE_NAME } from '../paths';

/** Environment variable naming the cache folder; `off` (or `0`, `false`, `no`) disables every cache. */
export const CACHE_ENV = 'GPU_CLUSTER_MANIFESTS_CACHE';

/** Whether a value of CACHE_ENV turns every cache off. */
export const cacheOff = (value: string): boolean => /^(off|0|false|no)$/i.test(value);

/** Where a project keeps the cache: `<root>/node_modules/.cache/gpu-cluster-manifests/`. */
export const projectCachePath = (root: string): string => path.join(root, 'node_modules', '.cache', PACKAGE_NAME);

/**
 * Why a folder cannot hold the cache, or undefined when it can: it (or, when it does not exist yet, the
 * nearest folder above it, where it would be created) must be a folder this process may read, write and
 * enter. A path through a file or a device (`/dev/null`), or another user's private folder, cannot.
 */
export function cacheDirProblem(dir: string): string | undefined {
  const problem = pathProblem(dir);
  if (problem) return `the path ${problem}`;
  let d = path.resolve(dir);
  try {
    for (;;) {
      let st;
      try {
        st = statSync(d, { throwIfNoEntry: false });
      } catch (e) {
        // a part of the path is a file: the nearest existing part says which
        if ((e as NodeJS.ErrnoException).code !== 'ENOTDIR') throw e;
      }
      if (st) {
        if (!st.isDirectory()) return `${d} is not a folder`;
        // eslint-disable-next-line no-bitwise
        accessSync(d, constants.R_OK | constants.W_OK | constants.X_OK);
        return undefined;
      }
      const parent = path.dirname(d);
      if (parent === d) return `no folder of ${dir} exists`;
      d = parent;
    }
  } catch (e) {
    if (isFsError(e)) return fsErrorText(e);
    throw e;
  }
}

/** Default locations already judged unusable (each said once per process). */
const unusable = new Set<string>();

/**
 * The default cache folder: `$GPU_CLUSTER_MANIFESTS_CACHE`, else
 * `node_modules/.cache/gpu-cluster-manifests/` of the folder the toolkit is installed into (the
 * convention of babel, eslint and others; this checkout's own when it runs from here); undefined
 * (no cache) when the variable is `off` or there is no node_modules. A folder the variable names
 * that cannot hold the cache is bad input (exit 2, one line); the default location when it cannot
 * (a link to /dev/null, another user's folder) means a run without a cache, said once on standard error.
 */
export function defaultCacheDir(): string | undefined {
  const env = process.env[CACHE_ENV];
  if (env !== undefined && env !== '') {
    if (cacheOff(env)) return undefined;
    const dir = usableFolder(env, `${CACHE_ENV}=${env}`, 'point it at a folder (created when missing), or set it to off');
    const problem = cacheDirProblem(dir);
    if (problem) throw new InputError(`${CACHE_ENV}=${env}: cannot hold the cache: ${problem}; point it at a folder of yours, or set it to off`);
    return dir;
  }
  return projectCacheDir(INSTALL_ROOT);
}

/**
 * The cache folder of a project, `<root>/node_modules/.cache/gpu-cluster-manifests/`: undefined when the
 * project has no node_modules, or when that folder cannot hold the cache (said once on standard error).
 */
export function projectCacheDir(root: string): string | undefined {
  if (!existsSync(path.join(root, 'node_modules'))) return undefined;
  const dir = projectCachePath(root);
  if (unusable.has(dir)) return undefined;
  const problem = cacheDirProblem(dir);
  if (problem === undefined) return dir;
  unusable.add(dir);
  // (said by the main thread; the render threads follow it silently)
  if (isMainThread) process.stderr.write(`note: the cache folder ${dir} cannot be used (${problem}); running without a cache (${CACHE_ENV}=<folder> names another one, =off none)\n`);
  return undefined;
}

/** Resolves a `cacheDir` option: a folder, false for none, undefined for the default. */
export function resolveCacheDir(option: string | false | undefined): string | undefined {
  return option === false ? undefined : option ?? defaultCacheDir();
}
