import { isDeepStrictEqual } from 'node:util';
import { isJsonObject } from '../json';
import { LABELS } from '../model/names';
import { describeObject, Manifest } from '../render/manifest';

/** Rendered templates (filled in by hand, never applied by Argo CD). */
export function isTemplate(m: Manifest): boolean {
  return m.metadata.annotations?.[LABELS.template] !== undefined;
}

/** A list for a message, cut after `max` items (`a, b, c and 19997 more`): a finding stays one readable line on any cluster. */
export function summarize(items: readonly string[], max = 5): string {
  return items.length <= max ? items.join(', ') : `${items.slice(0, max).join(', ')} and ${items.length - max} more`;
}

export function same(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a ?? null, b ?? null);
}

export function show(v: unknown): string {
  if (v === undefined) return '(unset)';
  const s = JSON.stringify(v);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

/** A field an apply changes: its path, the live value (undefined: unset) and the rendered one. */
export interface FieldChange {
  readonly path: string;
  readonly from?: unknown;
  readonly to: unknown;
}

/**
 * Every field where the rendered object sets a value the live object has differently, down to its leaves (a section
 * the live object lacks: each field the render sets in it), with both values. Lists are compared whole; fields only
 * the live object has are left alone by an apply and are not listed.
 */
export function fieldChanges(rendered: unknown, live: unknown, prefix = ''): FieldChange[] {
  if (isJsonObject(rendered) && Object.keys(rendered).length > 0) {
    const here = isJsonObject(live) ? live : {};
    return Object.entries(rendered).flatMap(([k, v]) => fieldChanges(v, here[k], prefix ? `${prefix}.${k}` : k));
  }
  return same(rendered, live) ? [] : [{ path: prefix || '.', from: live, to: rendered }];
}

export { describeObject };
