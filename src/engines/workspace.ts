import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { makeDirs } from '../files';
import { pidAlive } from '../processes';

let scratch: string | undefined;

/**
 * A folder for the engines' unpacked binaries, prepared charts and the like: `<cacheDir>/<sub>`, or, with
 * the cache off, `<sub>` in a temporary folder of this process (removed when it exits).
 */
export function workDir(cacheDir: string | undefined, sub: string): string {
  let base = cacheDir;
  if (base === undefined) {
    if (!scratch) {
      const dir = mkdtempSync(path.join(tmpdir(), 'gpu-cluster-manifests-'));
      scratch = dir;
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    }
    base = scratch;
  }
  const dir = path.join(base, sub);
  makeDirs(dir);
  return dir;
}

/** A temporary name for `target` that names this process: `<target>.<kind>-<pid>-<random>`. */
export function temporaryName(target: string, kind: 'tmp' | 'old', random: string): string {
  return `${target}.${kind}-${process.pid}-${random}`;
}

/** Removes what interrupted writers of `parent/<name>` left (`<name>.tmp-<pid>-<x>`, `<name>.old-<pid>-<x>` of processes that are gone). */
export function removeLeftovers(parent: string, name: string): void {
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const e of entries) {
    const m = new RegExp(`^${escaped}\\.(?:tmp|old)-(\\d+)-[0-9a-f]+$`).exec(e);
    if (m && !pidAlive(Number(m[1]))) rmSync(path.join(parent, e), { recursive: true, force: true });
  }
}
