import { isJsonObject, JsonObject as Json, valueAt } from '../json';

/**
 * Helm's coalescing of user values over a chart's: maps merge key by key, anything else replaces, null
 * deletes. Used only to decide whether values switch on a dependency that is not vendored (the render
 * itself is helm's).
 */
export function mergeValues(base: unknown, over: unknown): unknown {
  if (!isJsonObject(base) || !isJsonObject(over)) return over === undefined ? base : over;
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete out[k];
    else out[k] = mergeValues(base[k], v);
  }
  return out;
}

/**
 * Whether a Chart.yaml dependency `condition` holds for the values, as Helm decides it: the first of its
 * comma-separated paths that holds a boolean wins; none does (or no condition): enabled.
 */
export function conditionHolds(condition: string | undefined, values: unknown): { enabled: boolean; path?: string } {
  if (!condition) return { enabled: true };
  for (const p of condition.split(',').map((s) => s.trim()).filter(Boolean)) {
    const v = valueAt(values, p);
    if (typeof v === 'boolean') return { enabled: v, path: p };
  }
  return { enabled: true };
}
