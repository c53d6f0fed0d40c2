import * as path from 'node:path';
import { Manifest } from '../../src/render/manifest';
import { manifestFiles, readManifests } from '../../src/render/tree';
import { SHARED } from '../helpers';

export const SAMPLES = path.join(SHARED, 'upstream-samples');

/** Every object of the upstream examples. */
export function sampleObjects(): Manifest[] {
  return manifestFiles(SAMPLES).flatMap(readManifests).map((i) => i.manifest);
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Deterministic broken variants of an object, each with one mistake somewhere in its tree: an
 * unknown field in a mapping, or a number where a string was. Every `stride`-th candidate spot
 * is used, so deep spots inside hoisted subschemas are covered too.
 */
export function mutants(m: Manifest, stride = 5): Manifest[] {
  const out: Manifest[] = [];
  let spot = 0;
  const visit = (node: Json, edit: (replace: (copy: Json) => Json) => Manifest) => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, (replace) => edit((copy) => {
        const list = (copy as Json[]).slice();
        list[i] = replace(list[i]);
        return list;
      })));
      return;
    }
    if (node !== null && typeof node === 'object') {
      if (spot++ % stride === 0) out.push(edit((copy) => ({ ...(copy as object), bogusField: 'x' })));
      for (const k of Object.keys(node)) {
        visit(node[k], (replace) => edit((copy) => ({ ...(copy as object), [k]: replace((copy as Record<string, Json>)[k]) })));
      }
      return;
    }
    if (typeof node === 'string' && spot++ % stride === 0) out.push(edit(() => 12345));
  };
  visit(m as unknown as Json, (replace) => replace(structuredClone(m) as unknown as Json) as unknown as Manifest);
  return out;
}
