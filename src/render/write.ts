import { mkdirSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { RenderedFile } from './layout';

let counter = 0;

function siblingName(target: string, tag: string): string {
  counter += 1;
  return path.join(path.dirname(target), `${path.basename(target)}.${tag}-${process.pid}-${counter}`);
}

/**
 * Replaces the directory `target` with exactly `files` (paths relative to `target`), or leaves it
 * untouched. The files are written to a temporary directory beside the target (same filesystem),
 * then swapped in with two renames; any failure before the swap removes the temporary directory
 * and keeps the previous output byte-identical.
 */
export function writeTreeAtomically(target: string, files: Iterable<RenderedFile>): void {
  const abs = path.resolve(target);
  mkdirSync(path.dirname(abs), { recursive: true });
  const tmp = siblingName(abs, 'tmp');
  try {
    mkdirSync(tmp);
    const dirs = new Set<string>();
    for (const [rel, content] of files) {
      if (path.isAbsolute(rel) || rel.split('/').includes('..')) throw new Error(`refusing to write outside the output: ${rel}`);
      const file = path.join(tmp, rel);
      const dir = path.dirname(file);
      if (!dirs.has(dir)) {
        mkdirSync(dir, { recursive: true });
        dirs.add(dir);
      }
      writeFileSync(file, content);
    }
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  if (existsSync(abs)) {
    const old = siblingName(abs, 'old');
    renameSync(abs, old);
    try {
      renameSync(tmp, abs);
    } catch (e) {
      renameSync(old, abs);
      rmSync(tmp, { recursive: true, force: true });
      throw e;
    }
    rmSync(old, { recursive: true, force: true });
  } else {
    renameSync(tmp, abs);
  }
}
