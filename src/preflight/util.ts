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

/**
 * Paths where the rendered object sets a value the live object has differently (what applying it
 * changes). Fields only the live object has are left alone by an apply and are not listed.
 */
export function changedPaths(rendered: unknown, live: unknown, prefix = ''): string[] {
  if (isJsonObject(rendered)) {
    if (!isJsonObject(live)) return [prefix || '.'];
    return Object.entries(rendered).flatMap(([k, v]) => changedPaths(v, live[k], prefix ? `${prefix}.${k}` : k));
  }
  return same(rendered, live) ? [] : [prefix || '.'];
}

export { describeObject };
