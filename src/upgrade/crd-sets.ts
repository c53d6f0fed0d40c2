import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Crd, crdKey, crdOf } from './crd-diff';
import { removeDeadWriters, writeCacheFile } from '../cache/cache-write';
import { listTree } from '../cache/digests';
import { workDir } from '../engines/workspace';
import { InputError } from '../errors';
import { asInputError, readYamlInput } from '../input/read';
import { digestOf } from '../upstream/tree';

/** js-yaml, for the pinned CRD files the package ships (the bounded reader is for what a user names). */
const jsYaml = (): typeof import('js-yaml') => createRequire(__filename)('js-yaml');

/** YAML and JSON files under a folder (or the file itself), sorted. */
export function yamlFiles(p: string): string[] {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) return [];
  return st.isDirectory() ? listTree(p, (n) => /\.(ya?ml|json)$/i.test(n)) : [p];
}

/** Documents and `List` items of parsed YAML. */
function items(docs: readonly unknown[]): unknown[] {
  return docs.flatMap((d) => (d !== null && typeof d === 'object' && (d as { kind?: unknown }).kind === 'List' && Array.isArray((d as { items?: unknown }).items)
    ? (d as { items: unknown[] }).items : [d]));
}

/** The CRDs of a file of the package (pinned schemas, vendored files), named `display` in the plan. */
export function packagedCrds(file: string, display: string): Crd[] {
  const text = readFileSync(file, 'utf8');
  if (!text.includes('CustomResourceDefinition')) return [];
  const docs = file.toLowerCase().endsWith('.json') ? [JSON.parse(text) as unknown] : jsYaml().loadAll(text);
  return items(docs).flatMap((d) => crdOf(d, display) ?? []);
}

/**
 * The CRDs of files or folders a user names (`--from-crds`, `--to-crds`: e.g. `kubectl get crd -o yaml`), read by
 * the bounded reader: a path that is missing, unreadable or holds no CRD is bad input naming the flag and the path.
 */
export function userCrds(paths: readonly string[], flag: string): Crd[] {
  const out: Crd[] = [];
  for (const p of paths) {
    if (!existsSync(p)) throw new InputError(`${flag} ${p}: no such file or folder`);
    const files = yamlFiles(p);
    const found: Crd[] = [];
    for (const f of files) {
      const docs = asInputError(`${flag} ${f}`, () => readYamlInput(f, 'snapshot', true));
      found.push(...items(docs).flatMap((d) => crdOf(d, f) ?? []));
    }
    if (found.length === 0) throw new InputError(`${flag} ${p}: no CustomResourceDefinition in it (kubectl get crd NAME -o yaml writes one)`);
    out.push(...found);
  }
  return out;
}

/** `crds` with those of `overrides` in place of the ones of the same kind (and the kinds only they define added). */
export function overridden(crds: readonly Crd[], overrides: readonly Crd[]): Crd[] {
  const byKind = new Map(crds.map((c) => [crdKey(c), c]));
  for (const c of overrides) byKind.set(crdKey(c), c);
  return [...byKind.values()].sort((a, b) => (crdKey(a) < crdKey(b) ? -1 : crdKey(a) > crdKey(b) ? 1 : 0));
}

/**
 * Files a schema store reads for a set of CRDs: each CRD as JSON in a folder of the cache named by its content, so
 * that the validators compiled for it are found again by the next run (their key is the file's path and content).
 */
export function crdStoreFiles(crds: readonly Crd[], cacheDir: string | undefined): string[] {
  const dir = workDir(cacheDir, 'upgrade-crds');
  removeDeadWriters(dir);
  return crds.map((c) => {
    const text = `${JSON.stringify(c.object, undefined, 1)}\n`;
    const name = `${c.group}_${c.kind}-${digestOf([text]).slice(0, 24)}.json`;
    const file = path.join(dir, name);
    if (existsSync(file) || writeCacheFile(file, text)) return file;
    // a cache that cannot be written: a folder of this process's own (removed when it exits)
    const own = path.join(workDir(undefined, 'upgrade-crds'), name);
    if (!writeCacheFile(own, text)) throw new Error(`cannot write ${own}`);
    return own;
  });
}
