import * as path from 'node:path';
import { printable } from '../errors';
import { isJsonObject } from '../json';
import { inKustomization } from '../render/folder-files';
import { describeObject, Manifest, objectId } from '../render/manifest';
import { manifestFiles, readManifests } from '../render/tree';

/** At most this many files or objects are named in one message (then: `and N more`). */
const NAMED = 3;

const isObject = (m: unknown): m is Manifest => isJsonObject(m) && typeof m.kind === 'string' && typeof m.apiVersion === 'string'
  && isJsonObject(m.metadata) && typeof m.metadata.name === 'string';

function listed(items: readonly string[]): string {
  return items.slice(0, NAMED).join(', ') + (items.length > NAMED ? ` and ${items.length - NAMED} more` : '');
}

/**
 * Why the build of a folder of the tree is not what the folder holds, or undefined when it is: Argo CD applies
 * the build, so every object of the folder's files (but the templates and the objects applied by hand, which
 * the kustomization leaves out on purpose) must be in it, and nothing else. A kustomization that no longer
 * lists a file (Argo CD would not apply that Namespace), a build that renders nothing, or one that brings
 * objects from elsewhere: one line naming the files or objects.
 */
export function compareFolderBuild(dir: string, built: readonly Manifest[]): string | undefined {
  const expected = new Map<string, { file: string; object: Manifest }>();
  for (const file of manifestFiles(dir)) {
    for (const { manifest } of readManifests(file)) {
      if (isObject(manifest) && inKustomization(manifest)) expected.set(objectId(manifest), { file: path.relative(dir, file), object: manifest });
    }
  }
  const got = new Set(built.filter(isObject).map(objectId));
  if (got.size === 0 && expected.size > 0) return `kustomize build rendered no object, though the folder's files hold ${expected.size}: Argo CD would apply nothing of it`;
  const missing = [...expected].filter(([id]) => !got.has(id)).map(([, e]) => e);
  if (missing.length > 0) {
    const files = [...new Set(missing.map((m) => m.file))];
    const example = describeObject(missing[0].object);
    return `the build lacks what ${printable(listed(files))} hold${files.length === 1 ? 's' : ''} (${printable(example)}${missing.length > 1 ? ` and ${missing.length - 1} more object(s)` : ''}): `
      + 'kustomization.yaml does not list every file of the folder, so Argo CD would not apply them';
  }
  const extra = built.filter(isObject).filter((m) => !expected.has(objectId(m)));
  if (extra.length > 0) {
    return `the build renders ${printable(listed(extra.map(describeObject)))}, which no file of the folder holds: kustomization.yaml brings objects from elsewhere`;
  }
  return undefined;
}
