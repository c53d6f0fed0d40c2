import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileDigest, sha256 } from './digests';
import { InputError, printable } from '../errors';
import { isInside } from '../files';
import { DEV_CHECKOUT, PACKAGE_ASSETS, PACKAGE_NAME } from '../paths';

/**
 * The checksums the package ships its assets with (projenrc/package-assets.cjs writes `SHA256SUMS` into each
 * folder of lib/assets/: the CRD schemas, the vendored charts and overlays), verified when an asset is first
 * read in a process: a schema file or a chart edited, added or removed inside the installed package is a
 * damaged installation, said in one line naming the file (exit 2: reinstall), never a finding that blames the
 * user's tree. Each file is verified once per process; its digest comes from the digest memo (src/cache/digests.ts),
 * so a warm run hashes nothing again. The toolkit's own checkout reads ../shared and verifies nothing.
 */

/** A damaged installation: a shipped asset that differs from its checksum, one that is not listed, or no checksums at all. */
export class InstallationDamaged extends InputError {
  constructor(file: string, why: string) {
    super(`the installed ${PACKAGE_NAME} is damaged: ${printable(file)} ${why}; reinstall it (npm ci)`);
    this.name = 'InstallationDamaged';
  }
}

/**
 * Whether an error says the installed package is broken rather than the input bad: a damaged asset, or a module of the
 * package gone (the typed imports load when a component first renders them, inside the render). Every render wrapper
 * rethrows these as they are (exit 2, reinstall), never as "cannot render".
 */
export function isBrokenInstall(e: unknown): boolean {
  return e instanceof InstallationDamaged || (e as NodeJS.ErrnoException | undefined)?.code === 'MODULE_NOT_FOUND';
}

const SUMS_FILE = 'SHA256SUMS';

/** The checksums of the asset folders under one assets root (lib/assets/ of the installed package). */
export class AssetSums {
  /** Per asset folder (`crds`, `upstream-installs`): relative path -> sha256. */
  private readonly sums = new Map<string, ReadonlyMap<string, string>>();
  private readonly verified = new Set<string>();

  constructor(readonly root: string) {}

  /** True for a path inside the assets root (what this verifies). */
  covers(file: string): boolean {
    return isInside(path.resolve(file), this.root);
  }

  private folderSums(folder: string): ReadonlyMap<string, string> {
    let sums = this.sums.get(folder);
    if (!sums) {
      const file = path.join(this.root, folder, SUMS_FILE);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        throw new InstallationDamaged(file, 'is missing (the checksums its assets were shipped with)');
      }
      const map = new Map<string, string>();
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
        if (!m) throw new InstallationDamaged(file, 'is not a list of checksums');
        map.set(m[2], m[1]);
      }
      sums = map;
      this.sums.set(folder, sums);
    }
    return sums;
  }

  /**
   * Verifies one file of the assets (a no-op for any other path): its SHA-256 (of `bytes` when the caller read
   * them already, else of the file) is the one SHA256SUMS lists for it. Throws InstallationDamaged.
   */
  verify(file: string, bytes?: Uint8Array): void {
    const abs = path.resolve(file);
    if (this.verified.has(abs) || !this.covers(abs)) return;
    const [folder, ...rest] = path.relative(this.root, abs).split(path.sep);
    if (rest.length === 0) return; // the assets root's own files
    const rel = rest.join('/');
    if (rel === SUMS_FILE) return;
    const expected = this.folderSums(folder).get(rel);
    if (expected === undefined) throw new InstallationDamaged(abs, `is not among the files it was shipped with (${folder}/${SUMS_FILE})`);
    const digest = bytes ? sha256(bytes) : fileDigest(abs);
    if (digest !== expected) throw new InstallationDamaged(abs, `differs from the file it was shipped with (its checksum in ${folder}/${SUMS_FILE})`);
    this.verified.add(abs);
  }

  /**
   * Verifies that no shipped file under `dir` is missing (a no-op outside the assets): `present` are the files
   * found there (absolute paths) of those `read` names (all by default). Throws InstallationDamaged naming the first missing one.
   */
  verifyComplete(dir: string, present: Iterable<string>, read: (name: string) => boolean = () => true): void {
    const abs = path.resolve(dir);
    if (!this.covers(abs) || abs === this.root) return;
    const [folder, ...rest] = path.relative(this.root, abs).split(path.sep);
    const prefix = rest.length === 0 ? '' : `${rest.join('/')}/`;
    const found = new Set([...present].map((f) => path.resolve(f)));
    for (const rel of this.folderSums(folder).keys()) {
      if (!rel.startsWith(prefix) || !read(path.posix.basename(rel))) continue;
      const file = path.join(this.root, folder, ...rel.split('/'));
      if (!found.has(file)) throw new InstallationDamaged(file, `is missing (${folder}/${SUMS_FILE} lists it)`);
    }
  }
}

/** The installed package's assets, verified; undefined in the toolkit's own checkout (it reads ../shared). */
export const PACKAGED_ASSETS: AssetSums | undefined = DEV_CHECKOUT ? undefined : new AssetSums(PACKAGE_ASSETS);

/** Verifies a file the package ships when it is one (anything else passes). */
export function verifyPackagedAsset(file: string, bytes?: Uint8Array): void {
  PACKAGED_ASSETS?.verify(file, bytes);
}

/** Verifies that no file the package ships under `dir` is missing from `present` (anything outside the assets passes). */
export function verifyPackagedFolder(dir: string, present: Iterable<string>, read?: (name: string) => boolean): void {
  PACKAGED_ASSETS?.verifyComplete(dir, present, read);
}
