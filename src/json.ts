/**
 * Shapes of parsed JSON and YAML (objects read from files, clusters, charts): the one guard for a
 * mapping and the one walk along a path of keys. Imports nothing of the project: everything may use it.
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
