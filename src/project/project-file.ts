import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { isMap, isScalar, LineCounter, parseDocument } from 'yaml';
import { InputError } from '../errors';
import { isInside, pathProblem, realPathOf } from '../files';
import { decodeInput, InputFileError, parseInputYaml, readInputBytes } from '../input/read';
import { isJsonObject } from '../json';
import { PROJECT_FILE, PROJECT_KEYS } from './names';

export { PROJECT_FILE, PROJECT_KEYS } from './names';


type ProjectKey = keyof typeof PROJECT_KEYS;

/** A project: its file and the folders it names, resolved. */
export interface Project {
  readonly file: string;
  /** The file's folder: every path of the file is relative to it. */
  readonly root: string;
  /** Every description in it is a cluster of the project. */
  readonly clusters: string;
  /** The output root: `<out>/<cluster>/` and `<out>/fleet/`. */
  readonly out: string;
}

/** The project file in `from` or the nearest folder above it; undefined when there is none. */
export function findProjectFile(from: string): string | undefined {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const file = path.join(dir, PROJECT_FILE);
    if (existsSync(file)) return file;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * Reads and validates a project file. Bad input (exit 2) names the file, line and column and the
 * key: an unknown key, a value that is no relative folder path, a folder outside the project
 * folder (also through a symbolic link), the output folder overlapping the descriptions or being
 * the project folder itself (synth replaces its output folder as a whole).
 */
export function readProject(file: string): Project {
  const abs = path.resolve(file);
  const root = path.dirname(abs);
  // as the user would type it from here, when the file is in or below the working folder
  const shown = isInside(abs, process.cwd()) ? path.relative(process.cwd(), abs) : abs;
  let text: string;
  let value: unknown;
  try {
    text = decodeInput(abs, readInputBytes(abs, 'project'));
    [value] = parseInputYaml(abs, text, 'project', false);
  } catch (e) {
    if (e instanceof InputFileError) throw new InputError(e.message);
    throw e;
  }
  // where each key is, for the messages (the file is small and parsed already: this cannot fail)
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  /** `file:line:column` of a key (or of its value). */
  const at = (key: string | undefined, ofValue: boolean): string => {
    let offset = 0;
    const map = doc.contents;
    if (key !== undefined && isMap(map)) {
      const pair = map.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
      const node = (ofValue ? pair?.value : pair?.key) as { range?: [number, number, number] } | undefined;
      offset = node?.range?.[0] ?? 0;
    } else if (map && 'range' in map && map.range) {
      offset = map.range[0];
    }
    const { line, col } = lines.linePos(offset);
    return `${shown}:${line}:${col}`;
  };

  if (value !== null && value !== undefined && !isJsonObject(value)) {
    throw new InputError(`${at(undefined, true)}: expected a mapping with ${Object.keys(PROJECT_KEYS).join(' and ')}, got ${JSON.stringify(value)}`);
  }
  const given = (value ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!(key in PROJECT_KEYS)) {
      const known = Object.entries(PROJECT_KEYS).map(([k, v]) => `${k} (${v.what})`).join(', ');
      throw new InputError(`${at(key, false)} ${key}: unknown key; a project file has ${known}`);
    }
  }
  const folder = (key: ProjectKey): string => {
    // a key given without a value is no default: say so
    const raw = key in given ? given[key] : PROJECT_KEYS[key].default;
    const where = `${at(key in given ? key : undefined, true)} ${key}`;
    if (typeof raw !== 'string' || raw.trim() === '') throw new InputError(`${where}: expected a folder path relative to ${PROJECT_FILE}, got ${JSON.stringify(raw)}`);
    const problem = pathProblem(raw);
    if (problem) throw new InputError(`${where}: the path ${problem}`);
    if (path.isAbsolute(raw)) throw new InputError(`${where}: expected a path relative to the project folder, got the absolute path ${JSON.stringify(raw)}`);
    const resolved = path.resolve(root, raw);
    // where it lands once made: the real path of its nearest existing folder (a link to elsewhere, with the rest not made yet)
    const real = realPathOf(resolved);
    if (!isInside(resolved, root) || !isInside(real, realPathOf(root))) {
      const via = isInside(resolved, root) ? ` (through a symbolic link, to ${real})` : '';
      throw new InputError(`${where}: ${JSON.stringify(raw)} is outside the project folder ${root}${via}; name a folder inside it`);
    }
    if (resolved === root) throw new InputError(`${where}: ${JSON.stringify(raw)} is the project folder itself; name a folder inside it (${PROJECT_KEYS[key].default})`);
    const st = statSync(resolved, { throwIfNoEntry: false });
    if (st && !st.isDirectory()) throw new InputError(`${where}: ${JSON.stringify(raw)} is a file, not a folder`);
    return resolved;
  };
  const clusters = folder('clusters');
  const out = folder('out');
  if (isInside(out, clusters) || isInside(clusters, out)) {
    throw new InputError(`${at('out' in given ? 'out' : 'clusters', true)} out: ${path.relative(root, out)} and the descriptions' folder ${path.relative(root, clusters)} overlap; synth replaces its output folder as a whole: keep them apart`);
  }
  return { file: abs, root, clusters, out };
}

const found = new Map<string, Project | undefined>();

/** The project of a folder (default: the working folder), read once per process; undefined when there is none. */
export function projectOf(from: string = process.cwd()): Project | undefined {
  const dir = path.resolve(from);
  if (!found.has(dir)) {
    const file = findProjectFile(dir);
    found.set(dir, file === undefined ? undefined : readProject(file));
  }
  return found.get(dir);
}

/**
 * The project a command needs (its defaults come from it): bad input saying so, and what to name
 * instead (`instead`: `--config FILE and --out DIR`), when the working folder is in none.
 */
export function requireProject(command: string, instead: string, from: string = process.cwd()): Project {
  const project = projectOf(from);
  if (project) return project;
  throw new InputError(`${command}: no ${PROJECT_FILE} in ${path.resolve(from)} or any folder above it; run it inside a clusters repository `
    + `(gpu-cluster-manifests new DIR makes one), or name ${instead}`);
}
