import { describe, expect, it } from 'vitest';
import { ContentMemo, exactJsonKey } from '../../src/cache/content-memo';
import { ClusterIndex } from '../../src/check';
import { policiesRefusing } from '../../src/check/tenancy';
import { Manifest } from '../../src/render/manifest';

/*
 * What a fleet's render works out once per content instead of once per cluster (src/cache/content-memo.ts): an entry
 * is found only by an input equal to the one it was made from, never by a similar one.
 */

describe('exactJsonKey: a key only where JSON tells a value apart exactly', () => {
  it('is the JSON text of plain data', () => {
    expect(exactJsonKey({ a: 1, b: [1, 'x', null, true, { c: -1.5 }] })).toBe('{"a":1,"b":[1,"x",null,true,{"c":-1.5}]}');
    expect(exactJsonKey('text')).toBe('"text"');
    expect(exactJsonKey(Object.assign(Object.create(null), { a: 1 }))).toBe('{"a":1}');
  });

  it.each([
    ['a field holding undefined (JSON drops it)', { a: undefined }],
    ['undefined', undefined],
    ['a Date (its toJSON makes it a string)', { d: new Date(0) }],
    ['an object with a toJSON of its own', { v: { toJSON: () => 'x' } }],
    ['a sparse array', [1, , 2]],
    ['an array with a field besides its items', Object.assign([1], { extra: true })],
    ['NaN', { n: Number.NaN }],
    ['Infinity', { n: Number.POSITIVE_INFINITY }],
    ['-0 (JSON writes 0)', { z: -0 }],
    ['a Map', { m: new Map([['a', 1]]) }],
    ['a BigInt', { b: 1n }],
    ['a function', { f: () => 1 }],
    ['a class instance', { x: new (class X { a = 1; })() }],
  ])('is undefined for %s', (_, value) => {
    expect(exactJsonKey(value)).toBeUndefined();
  });
});

describe('ContentMemo', () => {
  it('answers an equal key from the entry, another key by computing, and keeps no throw', () => {
    const memo = new ContentMemo<number>(1000);
    let runs = 0;
    const compute = (n: number) => () => { runs++; return n; };
    expect(memo.get('a', compute(1))).toBe(1);
    expect(memo.get('a', compute(2))).toBe(1);
    expect(memo.get('b', compute(3))).toBe(3);
    expect(runs).toBe(2);
    expect(() => memo.get('c', () => { throw new Error('no'); })).toThrow('no');
    expect(memo.get('c', compute(4))).toBe(4);
    // no key: never kept
    expect(memo.get(undefined, compute(5))).toBe(5);
    expect(memo.get(undefined, compute(6))).toBe(6);
    expect(memo.size).toBe(3);
  });

  it('holds keys of at most its bound in characters: past it, it starts again empty', () => {
    const memo = new ContentMemo<string>(10);
    memo.get('aaaa', () => 'a');
    memo.get('bbbb', () => 'b');
    expect(memo.size).toBe(2);
    memo.get('cccc', () => 'c');
    expect(memo.size).toBe(1);
    expect(memo.get('aaaa', () => 'a again')).toBe('a again');
    // a key longer than the bound is never kept
    memo.get('x'.repeat(11), () => 'long');
    expect(memo.get('x'.repeat(11), () => 'long again')).toBe('long again');
  });
});

// no memo keeps these verdicts (one was tried and left out: bench/README.md); what one would have to keep apart
describe('the policies\' verdicts (policiesRefusing): by object, by the policy\'s CEL, by who asks', () => {
  const policy = (expression: string): Manifest => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'images' },
    spec: {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] },
      validations: [{ expression, message: 'refused' }],
    },
  } as unknown as Manifest);
  const binding: Manifest = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: 'images' },
    spec: { policyName: 'images', matchResources: {} },
  } as unknown as Manifest;
  const pod = (image: string, extra: Record<string, unknown> = {}) => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'a' }, spec: { containers: [{ name: 'c', image, ...extra }] },
  });
  const refusing = (expression: string) => policiesRefusing(new ClusterIndex({ name: 'x', folders: [{ folder: 'tenants', objects: [policy(expression), binding] }] }));

  it('differ for objects that differ in one field, and for policies of one name whose CEL differs', () => {
    const noBad = refusing('object.spec.containers.all(c, c.image != "bad:1")');
    for (let i = 0; i < 2; i++) {
      expect(noBad('a', pod('good:1'), 'u')).toEqual([]);
      expect(noBad('a', pod('bad:1'), 'u')).toEqual(['images']);
    }
    // the same name, another expression: the earlier verdicts are not its
    const noGood = refusing('object.spec.containers.all(c, c.image != "good:1")');
    expect(noGood('a', pod('good:1'), 'u')).toEqual(['images']);
    expect(noGood('a', pod('bad:1'), 'u')).toEqual([]);
    // who asks is part of the key
    const notU = refusing('request.userInfo.username != "u"');
    expect(notU('a', pod('good:1'), 'u')).toEqual(['images']);
    expect(notU('a', pod('good:1'), 'v')).toEqual([]);
  });

  it('are worked out afresh for an object a key cannot tell apart exactly (a field holding undefined)', () => {
    const noField = refusing('object.spec.containers.all(c, !has(c.command))');
    expect(noField('a', pod('x:1'), 'u')).toEqual([]);
    expect(noField('a', pod('x:1', { command: ['sh'] }), 'u')).toEqual(['images']);
    expect(exactJsonKey(pod('x:1', { command: undefined }))).toBeUndefined();
  });
});
