/**
 * Turns upstream OpenAPI schemas into strict JSON Schemas for ajv, with the API server's
 * semantics (the same choices as kubeconform's strict mode):
 * - unknown fields are errors wherever the schema lists properties and does not set
 *   `x-kubernetes-preserve-unknown-fields`;
 * - `x-kubernetes-int-or-string` accepts an integer or a string;
 * - a required field with a schema default counts as present (the API server defaults it first);
 * - patterns are Go regular expressions, evaluated with RE2 as the API server does (src/validate/patterns.ts); one RE2
 *   cannot compile (the API server refuses such a CRD) is dropped (not guessed at).
 */

import { re2Compiles } from './patterns';

type Schema = Record<string, unknown>;

const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf'] as const;
const DROP = new Set(['description', 'example', 'externalDocs', 'nullable', 'x-kubernetes-list-map-keys',
  'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations', 'x-kubernetes-group-version-kind',
  'x-kubernetes-patch-merge-key', 'x-kubernetes-patch-strategy', 'x-kubernetes-unions', 'x-kubernetes-embedded-resource']);

const patternCache = new Map<string, boolean>();

function compilablePattern(p: string): boolean {
  let ok = patternCache.get(p);
  if (ok === undefined) {
    ok = re2Compiles(p);
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
      if (typeof v === 'string' && compilablePattern(v)) out.pattern = v;
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

/**
 * Removes null values (the API server prunes them for non-nullable fields) and undefined. Copies only
 * what changes: a value without any is returned as it is (most rendered objects have none).
 */
export function pruneNulls<T>(value: T): T {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const p = pruneNulls(value[i]);
      if (out === undefined && p !== value[i]) out = value.slice(0, i);
      out?.push(p);
    }
    return (out ?? value) as T;
  }
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    const v = o[keys[i]];
    const p = v === null || v === undefined ? undefined : pruneNulls(v);
    if (out === undefined && p !== v) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]] = o[keys[j]];
    }
    if (out !== undefined && p !== undefined) out[keys[i]] = p;
  }
  return (out ?? value) as T;
}

/** Keys whose values are subschemas (or lists/maps of subschemas) rather than data. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions']);
const SCHEMA_VALUES = new Set(['items', 'additionalProperties', 'not', ...SUBSCHEMA_LISTS]);

/** Subschemas smaller than this (in canonical JSON characters) stay inline: a function call would not pay off. */
const MIN_HOISTED_SIZE = 100;
const HOISTED_PREFIX = 'hoisted-';

interface Shape {
  /** Identifies the subschema's content: equal content, equal id. */
  readonly id: number;
  /** Size of the fully expanded subschema (canonical JSON characters, approximately). */
  readonly size: number;
}

/**
 * Moves every subschema of some size into `definitions` and refers to it with `$ref`; identical
 * subschemas (CRDs repeat whole pod templates, and Argo CD's ApplicationSet repeats the
 * Application template in every generator) share one definition. Validation results are
 * unchanged (a local `$ref` validates the same instance path). With ajv's `inlineRefs: false`
 * each definition becomes one small function, compiled once however often it occurs: ajv compiles
 * ApplicationSet in a tenth of the time, and V8 compiles only the functions an object reaches.
 */
export function hoistSubschemas(root: Schema): Schema {
  // Pass 1: give every distinct subschema an id (children first, so a node's canonical text is
  // linear in its own size).
  const ids = new Map<string, number>();
  const shapes = new Map<object, Shape>();
  const shapeOf = (node: unknown): Shape | undefined => {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    const known = shapes.get(node);
    if (known) return known;
    const parts: string[] = [];
    let size = 2;
    const child = (value: unknown): string => {
      const s = shapeOf(value);
      const text = s ? `#${s.id}` : JSON.stringify(value);
      size += s ? s.size : text.length;
      return text;
    };
    for (const k of Object.keys(node).sort()) {
      const v = (node as Schema)[k];
      let text: string;
      if (SCHEMA_MAPS.has(k) && v && typeof v === 'object') {
        text = `{${Object.keys(v).sort().map((pk) => `${JSON.stringify(pk)}:${child((v as Schema)[pk])}`).join(',')}}`;
        size += Object.keys(v).reduce((n, pk) => n + pk.length + 3, 0);
      } else if (SCHEMA_VALUES.has(k) && v && typeof v === 'object') {
        text = Array.isArray(v) ? `[${v.map(child).join(',')}]` : child(v);
      } else {
        text = JSON.stringify(v);
        size += text.length;
      }
      parts.push(`${JSON.stringify(k)}:${text}`);
      size += k.length + 3;
    }
    const canonical = `{${parts.join(',')}}`;
    let id = ids.get(canonical);
    if (id === undefined) {
      id = ids.size;
      ids.set(canonical, id);
    }
    const shape = { id, size };
    shapes.set(node, shape);
    return shape;
  };
  shapeOf(root);

  // Pass 2: rebuild, replacing large subschemas by a `$ref` to one definition per distinct content.
  const existing = (root.definitions ?? {}) as Schema;
  const hoisted: Schema = {};
  const names = new Map<number, string>();
  const rebuild = (node: unknown, isDefinition: boolean): unknown => {
    const shape = shapes.get(node as object);
    if (!shape) return node;
    if (!isDefinition && shape.size >= MIN_HOISTED_SIZE && !('$ref' in (node as Schema))) {
      let name = names.get(shape.id);
      if (name === undefined) {
        name = `${HOISTED_PREFIX}${names.size}`;
        while (name in existing) name = `_${name}`;
        names.set(shape.id, name);
        hoisted[name] = rebuild(node, true);
      }
      return { $ref: `#/definitions/${name}` };
    }
    const out: Schema = {};
    for (const [k, v] of Object.entries(node as Schema)) {
      if (SCHEMA_MAPS.has(k) && v && typeof v === 'object') {
        const map: Schema = {};
        for (const [pk, pv] of Object.entries(v as Schema)) map[pk] = rebuild(pv, k === 'definitions');
        out[k] = map;
      } else if (SCHEMA_VALUES.has(k) && v && typeof v === 'object') {
        out[k] = Array.isArray(v) ? v.map((item) => rebuild(item, false)) : rebuild(v, false);
      } else {
        out[k] = v;
      }
    }
    return out;
  };
  const out = rebuild(root, true) as Schema;
  if (names.size > 0) out.definitions = { ...(out.definitions as Schema | undefined), ...hoisted };
  return out;
}
