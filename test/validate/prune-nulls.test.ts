import { describe, expect, it } from 'vitest';
import { pruneNulls } from '../../src/validate/strict-schema';

describe('pruneNulls (what the validator sees of an object)', () => {
  it('returns an object without null or undefined values as it is, uncopied', () => {
    const a = { a: 1, b: { c: [1, { d: 2 }], e: '' }, f: false };
    expect(pruneNulls(a)).toBe(a);
  });

  it('drops null and undefined fields at any depth, keeps list elements, and never changes its argument', () => {
    const b = { a: 1, n: null, b: { c: [1, { d: null, e: 2 }, null], u: undefined, k: { x: 1 } }, z: 3 };
    const copy = structuredClone(b);
    const pruned = pruneNulls(b);
    expect(pruned).toEqual({ a: 1, b: { c: [1, { e: 2 }, null], k: { x: 1 } }, z: 3 });
    expect(Object.keys(pruned)).toEqual(['a', 'b', 'z']);
    // what did not change is shared, what did is a copy
    expect(pruned.b.k).toBe(b.b.k);
    expect(b).toEqual(copy);
  });
});
