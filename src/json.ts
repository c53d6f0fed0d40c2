import { isDeepStrictEqual } from 'node:util';

/**
 * Shapes of parsed JSON and YAML (objects read from files, clusters, charts): the one guard for a
 * mapping, the one walk along a path of keys and the one list of where two values differ. Imports nothing of the
 * project: everything may use it.
 */

/** A mapping of parsed JSON or YAML. */
export type JsonObject = Record<string, unknown>;

/** True for a mapping: an object that is neither null nor an array. */
export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function keysOf(path: string | readonly string[]): readonly string[] {
  return typeof path === 'string' ? path.split('.') : path;
}

/**
 * The value at a path of keys through mappings (`['spec', 'template']`, or dotted: `global.nats.install`),
 * or undefined when a step is missing or not a mapping.
 */
export function valueAt(v: unknown, path: string | readonly string[]): unknown {
  let at = v;
  for (const k of keysOf(path)) {
    if (!isJsonObject(at)) return undefined;
    at = at[k];
  }
  return at;
}

/** Sets the value at a path of keys (or dotted), making every step that is missing or not a mapping an empty mapping. */
export function setValueAt(target: JsonObject, path: string | readonly string[], value: unknown): void {
  const keys = keysOf(path);
  let at = target;
  for (const k of keys.slice(0, -1)) {
    const next = at[k];
    at = isJsonObject(next) ? next : (at[k] = {}) as JsonObject;
  }
  at[keys[keys.length - 1]] = value;
}

/** A key as a step of a field path: `.name`, or `["checksum/secret"]` where the key is no plain name. */
function fieldStep(key: string): string {
  return /^[A-Za-z_][\w-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/**
 * The field paths (at most `max`, in key order) where two JSON values differ: `.spec.replicas`,
 * `.spec.containers[0].image`, `.metadata.annotations["checksum/config"]`; `.` when the values themselves differ
 * (other types, or lists of other lengths).
 */
export function jsonDifferences(a: unknown, b: unknown, max = 10, at = '', out: string[] = []): string[] {
  if (out.length >= max || isDeepStrictEqual(a, b)) return out;
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((v, i) => jsonDifferences(v, b[i], max, `${at}[${i}]`, out));
  } else if (isJsonObject(a) && isJsonObject(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) jsonDifferences(a[k], b[k], max, `${at}${fieldStep(k)}`, out);
  } else {
    out.push(at || '.');
  }
  return out;
}
