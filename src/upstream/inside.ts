import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import { relativePathProblem } from './arguments';
import { SourceRefused } from './tree';
import { printable } from '../errors';
import { isInside } from '../files';
import { decodeInput, describeIssues, InputFileError, readInputBytes } from '../input/read';

/**
 * The real path of `rel` (a path an Application names: a values file, a patch, an overlay) under the folder
 * `base`, symbolic links resolved, when it lies inside `base`'s real path; else SourceRefused naming `field`.
 * `../../../dev/zero`, an absolute path, a link out of the folder: refused before anything is read.
 */
export function resolveInside(base: string, rel: string, field: string): string {
  const problem = relativePathProblem(rel, field);
  if (problem) throw new SourceRefused(problem);
  let real: string;
  let root: string;
  try {
    root = realpathSync(base);
    real = realpathSync(path.join(root, rel));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new SourceRefused(`${field} "${printable(rel)}": ${code === 'ENOENT' ? 'no such file in its folder' : `cannot be resolved (${code ?? (e as Error).message})`}`);
  }
  if (!isInside(real, root)) throw new SourceRefused(`${field} "${printable(rel)}" leads out of its folder (to ${printable(real)})`);
  return real;
}

/**
 * The text of a file an Application names inside `base` (resolveInside), read by the bounded reader
 * (src/input/read.ts, kind `chart`): a regular file (no device, FIFO or folder), within the size limit,
 * UTF-8 without control characters.
 */
export function readInside(base: string, rel: string, field: string): string {
  const file = resolveInside(base, rel, field);
  try {
    return decodeInput(file, readInputBytes(file, 'chart'));
  } catch (e) {
    if (e instanceof InputFileError) throw new SourceRefused(`${field} "${printable(rel)}": ${describeIssues(e.issues)}`);
    throw e;
  }
}
