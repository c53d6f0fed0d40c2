import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { crdScopes, DocumentHead, documentHeads, Footprint, objectsOf, Scope, scopeResolver } from './footprint';
import { apiGroup } from '../render/manifest';

/** The parts of a kustomization the footprint depends on. */
interface Kustomization {
  readonly resources?: readonly string[];
  readonly namespace?: string;
  readonly secretGenerator?: readonly { readonly name: string; readonly namespace?: string }[];
  readonly configMapGenerator?: readonly { readonly name: string; readonly namespace?: string }[];
  readonly patches?: readonly KustomizePatch[];
  readonly components?: readonly string[];
}

/** A kustomize patch as an Argo CD Application (or a kustomization) lists it. */
export interface KustomizePatch {
  readonly path?: string;
  readonly patch?: string;
  readonly target?: {
    readonly group?: string; readonly version?: string; readonly kind?: string; readonly name?: string; readonly namespace?: string;
  };
}

interface Item { head: DocumentHead; source: string }

function kustomizationFile(dir: string): string | undefined {
  for (const f of ['kustomization.yaml', 'kustomization.yml', 'Kustomization']) {
    if (existsSync(path.join(dir, f))) return path.join(dir, f);
  }
  return undefined;
}

/** True when the patch deletes what it targets (`$patch: delete` in a strategic-merge patch). */
function deletes(patch: KustomizePatch, dir: string): boolean {
  const text = patch.patch ?? (patch.path ? readFileSync(path.join(dir, patch.path), 'utf8') : '');
  return /^\s*\$patch:\s*delete\s*$/m.test(text);
}

function matches(item: Item, target: KustomizePatch['target']): boolean {
  if (!target) return false;
  const h = item.head;
  return (target.kind === undefined || target.kind === h.kind)
    && (target.name === undefined || target.name === h.name)
    && (target.group === undefined || target.group === apiGroup(h.apiVersion ?? ''))
    && (target.namespace === undefined || target.namespace === h.namespace);
}

/** Applies `$patch: delete` patches; other patches change fields, not kinds or namespaces. */
function applyPatches(items: Item[], patches: readonly KustomizePatch[], dir: string, notes: string[]): Item[] {
  let out = items;
  for (const p of patches) {
    if (!deletes(p, dir)) continue;
    if (!p.target) {
      notes.push(`${dir}: a $patch: delete without a target is not evaluated`);
      continue;
    }
    out = out.filter((i) => !matches(i, p.target));
  }
  return out;
}

/** Builds a kustomization folder: resources (files and folders, recursively), generators, patches, namespace. */
function build(dir: string, root: string, scope: (apiVersion: string, kind: string) => Scope | undefined, notes: string[]): Item[] {
  const file = kustomizationFile(dir);
  if (!file) {
    notes.push(`${path.relative(root, dir)}: no kustomization file`);
    return [];
  }
  const k = (parseYaml(readFileSync(file, 'utf8')) ?? {}) as Kustomization;
  let items: Item[] = [];
  for (const r of [...(k.resources ?? []), ...(k.components ?? [])]) {
    const p = path.join(dir, r);
    if (/^[a-z]+:\/\//.test(r) || !existsSync(p)) {
      notes.push(`${path.relative(root, dir)}: resource ${r} is remote or not vendored; not counted`);
      continue;
    }
    if (statSync(p).isDirectory()) {
      items.push(...build(p, root, scope, notes));
    } else {
      const source = path.relative(root, p);
      items.push(...documentHeads(readFileSync(p, 'utf8')).map((head) => ({ head, source })));
    }
  }
  for (const g of k.secretGenerator ?? []) items.push({ head: { apiVersion: 'v1', kind: 'Secret', name: g.name, namespace: g.namespace }, source: path.relative(root, file) });
  for (const g of k.configMapGenerator ?? []) items.push({ head: { apiVersion: 'v1', kind: 'ConfigMap', name: g.name, namespace: g.namespace }, source: path.relative(root, file) });
  items = applyPatches(items, k.patches ?? [], dir, notes);
  if (k.namespace !== undefined) {
    // The namespace transformer sets the namespace of every namespaced object (and renames a Namespace object it carries).
    items = items.map((i) => {
      if (!i.head.apiVersion || !i.head.kind) return i;
      if (i.head.kind === 'Namespace' && i.head.apiVersion === 'v1') return { ...i, head: { ...i.head, name: k.namespace } };
      return scope(i.head.apiVersion, i.head.kind) !== 'Cluster' ? { ...i, head: { ...i.head, namespace: k.namespace } } : i;
    });
  }
  return items;
}

export interface KustomizeInput {
  /** The Application's destination namespace (objects without a namespace land there). */
  readonly namespace: string;
  /** The Application's `kustomize.patches` (applied after the overlay). */
  readonly patches?: readonly KustomizePatch[];
  /** Application-level `kustomize.namespace`, when set. */
  readonly kustomizeNamespace?: string;
}

/** The footprint of a kustomize overlay with the Application's patches. */
export function kustomizeFootprint(overlayDir: string, root: string, input: KustomizeInput): Footprint {
  const notes: string[] = [];
  // Scopes: the CRDs the overlay itself carries first (a first pass reads them).
  const firstPass = build(overlayDir, root, () => undefined, []);
  const scope = scopeResolver(crdScopes(firstPass.map((i) => i.head)));
  let items = build(overlayDir, root, scope, notes);
  items = applyPatches(items, input.patches ?? [], overlayDir, notes);
  if (input.kustomizeNamespace) {
    items = items.map((i) => (i.head.apiVersion && i.head.kind && scope(i.head.apiVersion, i.head.kind) !== 'Cluster' ? { ...i, head: { ...i.head, namespace: input.kustomizeNamespace } } : i));
  }
  const objects = objectsOf(items, input.namespace, scope, notes);
  return { objects, notes: [...new Set(notes)], failures: [] };
}
