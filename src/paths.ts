import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/** The npm package name of the toolkit (package.json `name`, the `bin` and what TypeScript descriptions import). */
export const PACKAGE_NAME = 'gpu-cluster-manifests';

function isToolkitRoot(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === PACKAGE_NAME;
  } catch {
    return false;
  }
}

/**
 * The toolkit's own folder: this checkout, or `node_modules/gpu-cluster-manifests` where it is
 * installed. Found from this module (src/ under vitest and ts-node, lib/src/ compiled), never from
 * the working folder: a user's clusters repository is the project (src/project/), not this.
 */
function findPackageRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (isToolkitRoot(dir)) return dir;
    // not found (a renamed package): the folder above src/, or above lib/src/ when compiled
    if (path.dirname(dir) === dir) return path.resolve(__dirname, path.basename(path.dirname(__dirname)) === 'lib' ? '../..' : '..');
  }
}

export const PACKAGE_ROOT = findPackageRoot();

/**
 * True in the repository the toolkit is developed in (its `.projenrc.ts` never ships): the pinned
 * schemas and upstream installs are then `../shared` beside it, the source the package copies from.
 */
export const DEV_CHECKOUT = existsSync(path.join(PACKAGE_ROOT, '.projenrc.ts'));

/**
 * The folder whose `node_modules` holds the toolkit's dependencies: the project it is installed
 * into (`<repo>/node_modules/gpu-cluster-manifests` -> `<repo>`), or this checkout itself.
 */
export const INSTALL_ROOT = (() => {
  const parts = PACKAGE_ROOT.split(path.sep);
  const i = parts.lastIndexOf('node_modules');
  return i > 0 ? parts.slice(0, i).join(path.sep) || path.sep : PACKAGE_ROOT;
})();

/** What the package carries besides its code, copied in at pack time (projenrc/package-assets.cjs). */
export const PACKAGE_ASSETS = path.join(PACKAGE_ROOT, 'lib', 'assets');

/** The upstream material of this checkout (read-only): what the package's assets are copied from. */
export const SHARED_DIR = path.resolve(PACKAGE_ROOT, '..', 'shared');

/**
 * Where the pinned CRD schemas and core definitions come from by default: the package's copy, or
 * in this checkout `../shared/crds` (the copy is made from it at pack time and is never read here,
 * so it cannot go stale).
 */
export const DEFAULT_SCHEMAS = DEV_CHECKOUT ? path.join(SHARED_DIR, 'crds') : path.join(PACKAGE_ASSETS, 'crds');

/** The vendored upstream Helm charts and kustomize overlays of every pinned release (as DEFAULT_SCHEMAS). */
export const DEFAULT_UPSTREAM = DEV_CHECKOUT ? path.join(SHARED_DIR, 'upstream-installs') : path.join(PACKAGE_ASSETS, 'upstream-installs');

/**
 * Facts of upstream releases produced by running the release's own code (what `../shared` cannot show): Kueue's
 * built-in manager configuration defaults, one folder per release (`kueue-v0.19.2/config-defaults.json`), printed by
 * test/upstream/kueue-defaults/ and compared with it by test/upstream/kueue-defaults.test.ts. The package ships the
 * folder as it is, so the path is the same in this checkout and installed.
 */
export const UPSTREAM_FACTS_DIR = path.join(PACKAGE_ROOT, 'src', 'upstream', 'facts');

/**
 * Upstream source files this repository vendors itself, byte-exact with their tag and commit (SOURCES.md there): what
 * `../shared` lacks and no code of the release is run for (Kueue's feature gate tables; never a CRD: those are read
 * from `../shared/crds`). The package ships the folder as it is, so the path is the same in this checkout and installed.
 */
export const VENDORED_DIR = path.join(PACKAGE_ROOT, 'src', 'upstream', 'vendored');

/** The JSON Schema of the description as the package ships it (`schema` writes the same text). */
export const PACKAGED_SCHEMA_FILE = path.join(PACKAGE_ROOT, 'src', 'clusters', 'cluster-description.schema.json');

/** The file name of the description's JSON Schema, beside the descriptions (what their `$schema` line names). */
export const SCHEMA_FILE_NAME = 'cluster-description.schema.json';

/** File name of the fleet description's JSON Schema beside the descriptions (`# yaml-language-server: $schema=./fleet.schema.json`). */
export const FLEET_SCHEMA_FILE_NAME = 'fleet.schema.json';

/** The JSON Schema of the fleet description as the package ships it (`schema` writes the same text beside the other). */
export const PACKAGED_FLEET_SCHEMA_FILE = path.join(PACKAGE_ROOT, 'src', 'clusters', FLEET_SCHEMA_FILE_NAME);

/** The toolkit's version (package.json). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}
