import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { INSTALL_ROOT, PACKAGE_NAME, PACKAGE_ROOT, packageVersion } from '../paths';

/**
 * Where the running toolkit was installed from, as npm recorded it: what `new` pins in a clusters repository, so
 * that `npm install` there installs the same thing again (also in a CI clone).
 * - `tarball`: a file npm installed it from (`npx --package ./gpu-cluster-manifests-X.tgz ...`, or a clusters
 *   repository that pins one), still there with the content npm installed;
 * - `git`: a Git URL at the commit npm installed;
 * - `version`: the registry, a folder (a link), or not installed at all (this checkout, an unpacked tarball): its version.
 */
export type InstalledFrom =
  | { readonly kind: 'tarball'; readonly file: string }
  | { readonly kind: 'git'; readonly spec: string }
  | { readonly kind: 'version'; readonly version: string; readonly note?: string };

interface LockEntry {
  readonly version?: unknown;
  readonly resolved?: unknown;
  readonly integrity?: unknown;
}

/**
 * The lock entry npm wrote for the package at `packageRoot` under `installRoot` that says where it was resolved from:
 * its hidden lockfile's (what is installed), else the project's package-lock.json (npm leaves `resolved` out of the
 * hidden one when the lock alone decided the source).
 */
function lockEntry(installRoot: string, packageRoot: string, version: string): LockEntry | undefined {
  const key = path.relative(installRoot, packageRoot).split(path.sep).join('/');
  for (const lock of [path.join(installRoot, 'node_modules', '.package-lock.json'), path.join(installRoot, 'package-lock.json')]) {
    try {
      // a lockfile is npm's, never large: one of a few hundred packages is a few hundred KiB
      if ((statSync(lock, { throwIfNoEntry: false })?.size ?? Infinity) > 64 * 2 ** 20) continue;
      const entry = (JSON.parse(readFileSync(lock, 'utf8')) as { packages?: Record<string, LockEntry> }).packages?.[key];
      if (entry && typeof entry === 'object' && entry.version === version && typeof entry.resolved === 'string') return entry;
    } catch {
      // no lockfile there, or not one npm wrote: the next, else the version
    }
  }
  return undefined;
}

/** `sha512-<base64>` of a file, as npm's `integrity` says it. */
function integrityOf(file: string): string {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

const TARBALL = /\.(tgz|tar\.gz|tar)$/;
const GIT = /^(git\+[a-z]+:|git:|github:|gitlab:|bitbucket:)/;

/** What this toolkit was installed from (see InstalledFrom); the defaults are the running toolkit's. */
export function installedFrom(opts: { packageRoot?: string; installRoot?: string; version?: string } = {}): InstalledFrom {
  const packageRoot = opts.packageRoot ?? PACKAGE_ROOT;
  const installRoot = opts.installRoot ?? INSTALL_ROOT;
  const version = opts.version ?? packageVersion();
  if (installRoot === packageRoot) return { kind: 'version', version };
  const entry = lockEntry(installRoot, packageRoot, version);
  if (!entry) return { kind: 'version', version };
  const resolved = entry.resolved as string;
  if (GIT.test(resolved)) return { kind: 'git', spec: resolved };
  if (!resolved.startsWith('file:')) return { kind: 'version', version };
  const file = path.resolve(installRoot, resolved.slice('file:'.length));
  if (!TARBALL.test(file)) return { kind: 'version', version };
  if (!statSync(file, { throwIfNoEntry: false })?.isFile()) {
    return { kind: 'version', version, note: `${file}, the tarball ${PACKAGE_NAME} was installed from, is gone` };
  }
  if (typeof entry.integrity === 'string' && entry.integrity.startsWith('sha512-') && integrityOf(file) !== entry.integrity) {
    return { kind: 'version', version, note: `${file} is no longer the tarball ${PACKAGE_NAME} ${version} was installed from (its content changed)` };
  }
  return { kind: 'tarball', file };
}
