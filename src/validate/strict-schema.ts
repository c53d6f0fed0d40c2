/**
 * Turns upstream OpenAPI schemas into strict JSON Schemas for ajv, with the API server's
 * semantics (the same choices as kubeconform's strict mode):
 * - unknown fields are errors wherever the schema lists properties and does not set
 *   `x-kubernetes-preserve-unknown-fields`;
 * - `x-kubernetes-int-or-string` accepts an integer or a string;
 * - a required field with a schema default counts as present (the API server defaults it first);
 * - Go regular expressions that JavaScript cannot compile are dropped (not guessed at).
 */

type Schema = Record<string, unknown>;

const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf'] as const;
const DROP = new Set(['description', 'example', 'externalDocs', 'nullable', 'x-kubernetes-list-map-keys',
  'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations', 'x-kubernetes-group-version-kind',
  'x-kubernetes-patch-merge-key', 'x-kubernetes-patch-strategy', 'x-kubernetes-unions', 'x-kubernetes-embedded-resource']);

const patternCache = new Map<string, boolean>();

function jsCompatiblePattern(p: string): boolean {
  let ok = patternCache.get(p);
  if (ok === undefined) {
    try {
      new RegExp(p, 'u');
      ok = true;
    } catch {
      ok = false;
    }
    patternCache.set(p, ok);
  }
  return ok;
}

export function strictSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strictSchema);
  if (node === null || typeof node !== 'object') return node;
  const s = node as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (DROP.has(k)) continue;
    if (k === 'x-kubernetes-preserve-unknown-fields' || k === 'x-kubernetes-int-or-string') continue;
    if (k === 'pattern') {
      if (typeof v === 'string' && jsCompatiblePattern(v)) out.pattern = v;
      continue;
    }
    if (k === 'properties' || k === 'patternProperties' || k === 'definitions') {
      const props: Schema = {};
      for (const [pk, pv] of Object.entries(v as Schema)) props[pk] = strictSchema(pv);
      out[k] = props;
      continue;
    }
    if (k === 'items' || k === 'additionalProperties' || k === 'not' || (SUBSCHEMA_LISTS as readonly string[]).includes(k)) {
      out[k] = strictSchema(v);
      continue;
    }
    if (k === 'default' || k === 'enum' || k === 'const') {
      out[k] = v;
      continue;
    }
    out[k] = v;
  }

  if (s['x-kubernetes-int-or-string'] === true) {
    delete out.type;
    delete out.format;
    out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }

  const props = s.properties as Schema | undefined;
  if (props && Array.isArray(s.required)) {
    // The API server applies schema defaults before it checks required fields.
    out.required = (s.required as string[]).filter((r) => !(props[r] && typeof props[r] === 'object' && 'default' in (props[r] as Schema)));
    if ((out.required as string[]).length === 0) delete out.required;
  }
  if (props && s.additionalProperties === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true) {
    out.additionalProperties = false;
  }
  return out;
}

/** Removes null values (the API server prunes them for non-nullable fields) and undefined. */
export function pruneNulls<T>(value: T): T {
  if (Array.isArray(value)) return value.map(pruneNulls) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === null || v === undefined) continue;
    out[k] = pruneNulls(v);
  }
  return out as T;
}
