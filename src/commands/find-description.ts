import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { isDescriptionFile } from '../model/description-files';

/** The most bytes read of a candidate file: a description names its cluster in its first lines. */
const HEAD_BYTES = 64 * 1024;
/** The most files looked at per folder: a hint must not walk a large tree. */
const MAX_FILES = 200;

/** The first bytes of a file, as text (empty when it cannot be read). */
function head(file: string): string {
  let fd: number | undefined;
  try {
    if (!statSync(file).isFile()) return '';
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(HEAD_BYTES);
    return buf.subarray(0, readSync(fd, buf, 0, HEAD_BYTES, 0)).toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Whether a description names `cluster` at its top level (YAML `name: x`, JSON `"name": "x"`, TypeScript `name: 'x',`). */
function names(file: string, text: string, cluster: string): boolean {
  if (/\.json$/i.test(file)) {
    try {
      return (JSON.parse(text) as { name?: unknown }).name === cluster;
    } catch {
      return false;
    }
  }
  const name = cluster.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (/\.ts$/i.test(file)) return new RegExp(`^\\s{0,4}name:\\s*['"\`]${name}['"\`]\\s*,`, 'm').test(text);
  return new RegExp(`^name:\\s*["']?${name}["']?\\s*(#.*)?$`, 'm').test(text);
}

/**
 * A description file that names `cluster`, looked for beside where a rendered tree is and where the command runs
 * (the folder a `synth --config FILE --out DIR` was typed in usually holds FILE): a hint for a message, never an input.
 * Reads directory listings and the first bytes of a bounded number of files; undefined when none is found.
 */
export function findDescription(cluster: string, treeDir: string, cwd = process.cwd()): string | undefined {
  const places = [cwd, path.dirname(treeDir), path.dirname(path.dirname(treeDir)), path.join(cwd, 'clusters')];
  for (const dir of [...new Set(places.map((p) => path.resolve(p)))]) {
    let entries: string[];
    try {
      entries = readdirSync(dir).filter(isDescriptionFile).sort().slice(0, MAX_FILES);
    } catch {
      continue;
    }
    const found = entries.map((e) => path.join(dir, e)).find((f) => names(f, head(f), cluster));
    if (found) return path.relative(cwd, found) || found;
  }
  return undefined;
}
