import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { InputError } from '../errors';
import { pathProblem, usableFolder } from '../files';
import { INSTALL_ROOT } from '../paths';

/** Environment variable naming the cache folder; `off` (or `0`, `false`, `no`) disables every cache. */
export const CACHE_ENV = 'GPU_CLUSTER_MANIFESTS_CACHE';

/**
 * The default cache folder: `$GPU_CLUSTER_MANIFESTS_CACHE`, else
 * `node_modules/.cache/gpu-cluster-manifests/` of the folder the toolkit is installed into (the
 * convention of babel, eslint and others; this checkout's own when it runs from here); undefined
 * (no cache) when the variable is `off` or there is no node_modules.
 */
export function defaultCacheDir(): string | undefined {
  const env = process.env[CACHE_ENV];
  if (env !== undefined && env !== '') {
    if (/^(off|0|false|no)$/i.test(env)) return undefined;
    return usableFolder(env, `${CACHE_ENV}=${env}`, 'point it at a folder (created when missing), or set it to off');
  }
  const modules = path.join(INSTALL_ROOT, 'node_modules');
  return existsSync(modules) ? path.join(modules, '.cache', 'gpu-cluster-manifests') : undefined;
}

/** Resolves a `cacheDir` option: a folder, false for none, undefined for the default. */
export function resolveCacheDir(option: string | false | undefined): string | undefined {
  return option === false ? undefined : option ?? defaultCacheDir();
}
