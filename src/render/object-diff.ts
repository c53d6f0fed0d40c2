import { isJsonObject } from '../json';
import { inOneUnit, quantityNanos } from '../model/quantity';

/**
 * A field that differs between two renders of an object: its path and both values (undefined: absent on that side).
 * An item of a list whose items all have a name is named by it (`resources[nvidia.com/gpu]`), of any other list by its
 * index. A list item that only one side has is `inserted` (path: its name, or its index in the new list) or `removed`
 * (its name, or its index in the old one); a list whose items kept their names but not their order is `reordered`
 * (the names, old and new order).
 */
export interface FieldChange {
  readonly path: string;
  readonly before?: unknown;
  readonly after?: unknown;
  readonly change?: 'inserted' | 'removed' | 'reordered';
}

type Json = Record<string, unknown>;

/** The key of an object's fields in sorted order: two objects with the same fields in another order are the same item. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isJsonObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}

/** The names of a list's items, when every item is an object with a name of its own (containers, env, volumes, resources...). */
function namesOf(list: readonly unknown[]): string[] | undefined {
  const names = list.map((i) => (isJsonObject(i) && typeof i.name === 'string' ? i.name : undefined));
  if (names.some((n) => n === undefined) || new Set(names).size !== names.length) return undefined;
  return names as string[];
}

/** Longest common subsequence of two lists of keys: the pairs of indices it matches, in order. */
function commonPairs(a: readonly string[], b: readonly string[]): [number, number][] {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const table = new Uint32Array(rows * cols);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * cols + j] = a[i] === b[j] ? table[(i + 1) * cols + j + 1] + 1 : Math.max(table[(i + 1) * cols + j], table[i * cols + j + 1]);
    }
  }
  const pairs: [number, number][] = [];
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) pairs.push([i++, j++]);
    else if (table[(i + 1) * cols + j] >= table[i * cols + j + 1]) i++;
    else j++;
  }
  return pairs;
}

/** Lists longer than this (items before x after) are compared position by position: no manifest list is near it. */
const MAX_ALIGNED = 250_000;

/**
 * The changes between two lists, item by item: items match by their name where every item has one, else by their
 * whole value (the longest common subsequence); between two matched items, as many removed as inserted are the same
 * items changed in place (compared field by field), otherwise each is removed or inserted as it is.
 */
function listChanges(before: readonly unknown[], after: readonly unknown[], at: string): FieldChange[] {
  const out: FieldChange[] = [];
  const removed = (i: number, key: string | number = i) => out.push({ path: `${at}[${key}]`, before: before[i], change: 'removed' });
  const inserted = (j: number, key: string | number = j) => out.push({ path: `${at}[${key}]`, after: after[j], change: 'inserted' });
  const [oldNames, newNames] = [namesOf(before), namesOf(after)];
  if (oldNames && newNames && before.length > 0 && after.length > 0) {
    // an item by its name, as kubectl's strategic merge keys it; quoted when brackets in it would confuse the path
    const key = (n: string) => (/^[^[\]"]+$/.test(n) ? n : JSON.stringify(n));
    const index = new Map(newNames.map((n, j) => [n, j]));
    before.forEach((item, i) => {
      const j = index.get(oldNames[i]);
      if (j === undefined) removed(i, key(oldNames[i]));
      else out.push(...changedFields(item, after[j], `${at}[${key(oldNames[i])}]`));
    });
    newNames.forEach((n, j) => {
      if (!oldNames.includes(n)) inserted(j, key(n));
    });
    const kept = oldNames.filter((n) => index.has(n));
    const keptNow = newNames.filter((n) => oldNames.includes(n));
    if (kept.join('\0') !== keptNow.join('\0')) out.push({ path: at, before: kept, after: keptNow, change: 'reordered' });
    return out;
  }
  if (before.length * after.length > MAX_ALIGNED) {
    for (let i = 0; i < Math.max(before.length, after.length); i++) out.push(...changedFields(before[i], after[i], `${at}[${i}]`));
    return out;
  }
  const anchors = [...commonPairs(before.map(canonical), after.map(canonical)), [before.length, after.length] as [number, number]];
  let [i, j] = [0, 0];
  for (const [ai, aj] of anchors) {
    if (ai - i === aj - j) {
      for (let k = 0; k < ai - i; k++) out.push(...changedFields(before[i + k], after[j + k], `${at}[${j + k}]`));
    } else {
      for (let k = i; k < ai; k++) removed(k);
      for (let k = j; k < aj; k++) inserted(k);
    }
    [i, j] = [ai + 1, aj + 1];
  }
  return out;
}

/** Paths of every leaf that differs between two JSON values (`spec.a[2].b`); list items matched as listChanges says. */
export function changedFields(before: unknown, after: unknown, at = ''): FieldChange[] {
  if (Array.isArray(before) && Array.isArray(after)) return listChanges(before, after, at);
  if (isJsonObject(before) && isJsonObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => changedFields((before as Json)[k], (after as Json)[k], at ? `${at}.${k}` : k));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [{ path: at, before, after }];
}

/** Longest value shown whole; longer ones are cut (two long strings: around where they differ). */
const SHOWN = 80;
/** Characters shown either side of where two long strings differ. */
const CONTEXT = 24;

/** A value as the diff prints it: a quantity as written in the manifest (`890Gi`, `8`), anything else as JSON. */
function show(v: unknown): string {
  if (v === undefined) return '(absent)';
  if (typeof v === 'string' && quantityNanos(v) !== undefined) return v;
  const s = JSON.stringify(v);
  return s.length > SHOWN ? `${s.slice(0, SHOWN - 3)}...` : s;
}

/** `"...text..."`: a slice of a string, quoted as JSON, with `...` where it is cut. */
function quotedSlice(s: string, start: number, end: number): string {
  const cut = (from: number, to: number) => JSON.stringify(s.slice(from, to)).slice(1, -1);
  const middle = end - start > SHOWN ? `${cut(start, start + SHOWN - CONTEXT)}...${cut(end - CONTEXT, end)}` : cut(start, end);
  return `"${start > 0 ? '...' : ''}${middle}${end < s.length ? '...' : ''}"`;
}

/**
 * Both sides of a changed value as the diff prints them (`"8" -> "12"`): two long strings around where they differ (cut
 * at the same place, they would look the same), quantities as written, and two in different units also in one unit
 * (`570 -> 281001m (570 -> 281.001)`).
 */
export function showChange(before: unknown, after: unknown): string {
  if (typeof before === 'string' && typeof after === 'string' && Math.max(JSON.stringify(before).length, JSON.stringify(after).length) > SHOWN) {
    let prefix = 0;
    while (prefix < before.length && prefix < after.length && before[prefix] === after[prefix]) prefix++;
    let suffix = 0;
    const room = Math.min(before.length, after.length) - prefix;
    while (suffix < room && before[before.length - 1 - suffix] === after[after.length - 1 - suffix]) suffix++;
    const start = Math.max(0, prefix - CONTEXT);
    const side = (s: string) => quotedSlice(s, start, Math.min(s.length, s.length - suffix + CONTEXT));
    return `${side(before)} -> ${side(after)}`;
  }
  // two quantities in different units, also in one (a zero needs none)
  const zero = [before, after].some((v) => (typeof v === 'string' || typeof v === 'number') && quantityNanos(v) === 0n);
  const same = zero ? undefined : inOneUnit(before, after);
  return `${show(before)} -> ${show(after)}${same ? ` (${same[0]} -> ${same[1]})` : ''}`;
}

/** One changed field as the diff prints it: `path: old -> new`, `path: inserted value`, `path: removed value`. */
export function formatFieldChange(f: FieldChange): string {
  if (f.change === 'inserted') return `${f.path}: inserted ${show(f.after)}`;
  if (f.change === 'removed') return `${f.path}: removed ${show(f.before)}`;
  if (f.change === 'reordered') return `${f.path}: reordered ${show(f.before)} -> ${show(f.after)}`;
  return `${f.path}: ${showChange(f.before, f.after)}`;
}
