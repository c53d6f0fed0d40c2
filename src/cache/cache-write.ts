import { randomBytes } from 'node:crypto';
import { readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { makeDirs } from '../files';
import { pidAlive } from '../processes';

/**
 * How the caches write an entry: whole or not at all, to `<file>.<pid>-<random>.tmp` in the same folder, then
 * renamed into place (concurrent writers: the last complete write wins). A writer killed between the two (a
 * SIGKILL, a worker thread ended by its process's exit) leaves its temporary file behind; removeDeadWriters
 * removes those of processes that are gone.
 */
const TEMPORARY = /\.(\d+)-[0-9a-f]{12}\.tmp$/;

/** Writes `data` to `file` through a temporary file; false (and nothing left behind) when it could not. Never throws. */
export function writeCacheFile(file: string, data: string | Uint8Array): boolean {
  const tmp = `${file}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  try {
    makeDirs(path.dirname(file));
    writeFileSync(tmp, data);
    renameSync(tmp, file);
    return true;
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // the cache is best effort
    }
    return false;
  }
}

const swept = new Set<string>();

/**
 * Removes the temporary files writers that are gone left in `dir` (a live process's may still be renamed into
 * place). Once per folder and process: the folders hold thousands of entries. Never throws.
 */
export function removeDeadWriters(dir: string): void {
  const folder = path.resolve(dir);
  if (swept.has(folder)) return;
  swept.add(folder);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return;
  }
  for (const name of names) {
    const m = TEMPORARY.exec(name);
    if (!m || pidAlive(Number(m[1]))) continue;
    try {
      rmSync(path.join(folder, name), { force: true });
    } catch {
      // the cache is best effort
    }
  }
}
