/**
 * Structural defaulting, as the API server applies a CRD version's `default`s to an object it reads from etcd or
 * receives: for every object node of the value, each property the schema gives a default and the value lacks is
 * set to it (a copy), then the properties are defaulted in turn (a default's own nested defaults included).
 * Arrays' items and additionalProperties' values are defaulted by their schemas. Nothing else changes: no
 * pruning, no type coercion.
 */

import { isJsonObject } from '../json';

/** The parts of a structural schema defaulting reads. */
export interface DefaultingSchema {
  readonly properties?: Readonly<Record<string, DefaultingSchema>>;
  readonly items?: DefaultingSchema;
  readonly additionalProperties?: DefaultingSchema | boolean;
  readonly default?: unknown;
}

const copy = <T>(v: T): T => (v === undefined ? v : JSON.parse(JSON.stringify(v)) as T);

/** The value with the schema's defaults applied (a new value; the given one is not changed). */
export function withDefaults<T>(schema: DefaultingSchema | undefined, value: T): T {
  return applyInPlace(schema, copy(value)) as T;
}

function applyInPlace(schema: DefaultingSchema | undefined, value: unknown): unknown {
  if (!schema) return value;
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((v, i) => { value[i] = applyInPlace(schema.items, v); });
    return value;
  }
  if (!isJsonObject(value)) return value;
  for (const [k, child] of Object.entries(schema.properties ?? {})) {
    if (value[k] === undefined && child.default !== undefined) value[k] = copy(child.default);
  }
  for (const [k, v] of Object.entries(value)) {
    const child = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
    if (child) value[k] = applyInPlace(child, v);
  }
  return value;
}
