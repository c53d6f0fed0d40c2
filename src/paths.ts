import { existsSync } from 'node:fs';
import * as path from 'node:path';

function findProjectRoot(): string {
  let dir = __dirname;
  for (;;) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'src', 'clusters'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

/** The repository root (works from src/ under ts-node and from lib/src/ when compiled). */
export const PROJECT_ROOT = findProjectRoot();

/** The repo's own cluster descriptions. */
export const CLUSTERS_DIR = path.join(PROJECT_ROOT, 'src', 'clusters');

/** Where `synth` renders by default. */
export const DEFAULT_OUT = path.join(PROJECT_ROOT, 'dist');

/** Upstream schemas (CRDs and core definitions) beside the repository. */
export const DEFAULT_SCHEMAS = path.resolve(PROJECT_ROOT, '..', 'shared', 'crds');

/** Vendored upstream Helm charts and kustomize manifests of every pinned release, beside the repository. */
export const DEFAULT_UPSTREAM = path.resolve(PROJECT_ROOT, '..', 'shared', 'upstream-installs');

/** JSON Schema of the description, committed beside the descriptions for editor autocompletion. */
export const SCHEMA_FILE = path.join(CLUSTERS_DIR, 'cluster-description.schema.json');
