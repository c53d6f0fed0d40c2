import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { InputError } from '../errors';
import { CLIENT_FILES_FOLDER } from './client-files';
import { Manifest, ValidationInput } from './manifest';
import { VENDORED_FOLDER } from './vendored';
import { isWriteArtifact } from './write';
import { InputFileError, readInputBytes } from '../input/read';

/** js-yaml only when YAML is parsed (a synth with a warm schema cache never does). */
const jsYaml = (): typeof import('js-yaml') => createRequire(__filename)('js-yaml');

/** Files of a rendered tree that hold no Kubernetes objects. */
function isManifestFile(name: string): boolean {
  return /\.ya?ml$/i.test(name) && !/^kustomization\.ya?ml$/i.test(name);
}

/** A path relative to an output root (`<cluster>/<folder>/<file>`) whose file holds Kubernetes objects (client files do not). */
export function isObjectPath(rel: string): boolean {
  const parts = rel.split('/');
  return isManifestFile(parts[parts.length - 1]) && parts[1] !== CLIENT_FILES_FOLDER && !parts.slice(1, -1).includes(VENDORED_FOLDER);
}

/**
 * Every YAML file under `dir` that holds Kubernetes objects, sorted (client files, under `tutorials/`, hold none; the
 * verbatim upstream trees under `upstream/` are the releases', not the folder's objects).
 */
export function manifestFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) {
        if (name !== CLIENT_FILES_FOLDER && name !== VENDORED_FOLDER) walk(p);
      } else if (isManifestFile(name)) {out.push(p);}
    }
  };
  if (statSync(dir).isDirectory()) walk(dir);
  else out.push(dir);
  return out;
}

/** A file of a rendered tree read as text. */
export interface TextFile {
  readonly file: string;
  readonly text: string;
}

/**
 * The files under `dir` that hold no Kubernetes objects (a cluster's report, the kustomizations, the client files of
 * `tutorials/`, a verbatim upstream tree, the fleet page), through the bounded reader, as text: what is read of a tree
 * besides its objects (check's no-credentials rule reads every file written). What the write protocol keeps (its lock,
 * journal, temporary trees) is not the tree's.
 */
export function textFiles(dir: string): TextFile[] {
  const objects = new Set(manifestFiles(dir));
  const out: TextFile[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      if (isWriteArtifact(name)) continue;
      if (statSync(p).isDirectory()) walk(p);
      else if (!objects.has(p)) out.push({ file: p, text: readTreeText(p) });
    }
  };
  if (statSync(dir).isDirectory()) walk(dir);
  return out;
}

/** A file of a tree as text (bounded: a FIFO or a device is refused), invalid UTF-8 replaced. */
function readTreeText(file: string): string {
  try {
    return new TextDecoder('utf-8').decode(readInputBytes(file, 'tree'));
  } catch (e) {
    if (e instanceof InputFileError) throw new InputError(e.message);
    throw e;
  }
}

/** One manifest file of a tree as it was read: its bytes (what a folder's digest and a build's copy use) and its objects. */
export interface ReadFile {
  readonly file: string;
  readonly bytes: Buffer;
  readonly inputs: readonly ValidationInput[];
}

/**
 * Reads one YAML file (multi-document files too), through the bounded reader's checks of the file (a
 * regular file within its size limit: a FIFO or a device in a tree is refused, never waited on): its bytes
 * and every object. Invalid YAML is bad input naming the file.
 */
export function readManifestFile(file: string): ReadFile {
  let docs: unknown[];
  let bytes: Buffer;
  try {
    bytes = readInputBytes(file, 'tree');
  } catch (e) {
    if (e instanceof InputFileError) throw new InputError(e.message);
    throw e;
  }
  try {
    docs = jsYaml().loadAll(bytes.toString('utf8'));
  } catch (e) {
    if (e instanceof jsYaml().YAMLException) throw new InputError(`${file}: invalid YAML: ${e.reason} (line ${e.mark.line + 1})`);
    throw e;
  }
  const inputs = docs.filter((d) => d !== null && d !== undefined).map((manifest) => ({ manifest: manifest as Manifest, source: file }));
  return { file, bytes, inputs };
}

/** Reads every object of one YAML file (readManifestFile). */
export function readManifests(file: string): ValidationInput[] {
  return [...readManifestFile(file).inputs];
}

/** Subfolders of a rendered tree; the client files' folder (tutorials/) holds no objects and is left out. */
function subdirectories(dir: string): string[] {
  return readdirSync(dir).sort().filter((n) => n !== CLIENT_FILES_FOLDER && !isWriteArtifact(n) && statSync(path.join(dir, n)).isDirectory());
}

/**
 * The parts of a path that are separate API servers: each cluster folder of an output root
 * (`dist/` holds `dist/<cluster>/<component>/`), else the path itself. Duplicates are looked for
 * within one part only.
 */
export function clusterScopes(target: string): string[] {
  if (!statSync(target).isDirectory()) return [target];
  const children = subdirectories(target);
  const isOutputRoot = children.some((c) => subdirectories(path.join(target, c)).length > 0);
  return isOutputRoot ? children.map((c) => path.join(target, c)) : [target];
}

/** Reads every object of a rendered tree (a folder or a single file). */
export function readTree(dir: string): ValidationInput[] {
  return manifestFiles(dir).flatMap(readManifests);
}
