import type { core, ZodType } from 'zod';

/**
 * What makes a description error actionable beyond its field path: the field a misspelt key was
 * probably meant to be, read from the schema itself, and the value a rule refused.
 */

interface Def {
  readonly type: string;
  readonly innerType?: ZodType;
  readonly element?: ZodType;
  readonly options?: readonly ZodType[];
  readonly in?: ZodType;
}
const defOf = (s: ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The object schemas a value at `path` may have to match (wrappers, lists and unions looked through). */
function objectsAt(schema: ZodType, path: readonly PropertyKey[]): ZodType[] {
  const def = defOf(schema);
  if (['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch'].includes(def.type) && def.innerType) return objectsAt(def.innerType, path);
  if (def.type === 'pipe' && def.in) return objectsAt(def.in, path);
  if (def.type === 'union') return (def.options ?? []).flatMap((o) => objectsAt(o, path));
  if (path.length === 0) return def.type === 'object' ? [schema] : [];
  const [first, ...rest] = path;
  if (def.type === 'array' && def.element && typeof first === 'number') return objectsAt(def.element, rest);
  if (def.type === 'object') {
    const field = (schema as unknown as { shape: Record<string, ZodType> }).shape[String(first)];
    return field ? objectsAt(field, rest) : [];
  }
  return [];
}

/**
 * Edit distance (insertions, deletions, substitutions, and two neighbours swapped: `synht` is one edit from `synth`),
 * for names of a few dozen characters.
 */
function distance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length];
}

/**
 * The name of `names` a mistyped `key` was most likely meant to be: the same name in another case, or one a couple
 * of edits away (`gpusPerNod` -> `gpusPerNode`, `synht` -> `synth`). Undefined when nothing is close.
 */
export function closestName(key: string, names: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const ranked = names
    .map((f) => ({ f, d: f.toLowerCase() === lower ? 0 : distance(lower, f.toLowerCase()) }))
    .filter((x) => x.d <= Math.max(1, Math.min(3, Math.floor(key.length / 4))))
    .sort((a, b) => a.d - b.d || (a.f < b.f ? -1 : 1));
  return ranked[0]?.f;
}

/**
 * The field of the object at `parent` that an unknown `key` was most likely meant to be: the same name in another case,
 * or one a couple of edits away (`gpusPerNod` -> `gpusPerNode`). Undefined when nothing is close.
 */
export function closestField(schema: ZodType, parent: readonly PropertyKey[], key: string): string | undefined {
  const fields = objectsAt(schema, parent).flatMap((o) => Object.keys((o as unknown as { shape: Record<string, unknown> }).shape));
  return closestName(key, [...new Set(fields)]);
}

/** The value at `path` of a parsed description (undefined when it holds none). */
export function valueAtPath(raw: unknown, path: readonly PropertyKey[]): unknown {
  let at = raw;
  for (const seg of path) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<PropertyKey, unknown>)[seg];
  }
  return at;
}

/** `, got 10` for the scalar a cross-field rule refused, when its message does not say it already. */
export function echoedValue(issue: core.$ZodIssue, raw: unknown, describe: (v: unknown) => string): string {
  const v = valueAtPath(raw, issue.path);
  // a switch's value says nothing the message does not
  if (v === undefined || typeof v === 'boolean' || (v !== null && typeof v === 'object')) return '';
  const shown = describe(v);
  const bare = String(v).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return issue.message.includes(shown) || new RegExp(`(^|[^\\w.])${bare}($|[^\\w.])`).test(issue.message) ? '' : `, got ${shown}`;
}
