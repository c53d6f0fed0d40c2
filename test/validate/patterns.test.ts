import { describe, expect, it } from 'vitest';
import { re2Engine } from '../../src/validate/patterns';

describe('the pattern engine of the validators (src/validate/patterns.ts)', () => {
  it('compiles a pattern on its first test, once, and evaluates it as RE2 does: anywhere in the value unless anchored', () => {
    const anchored = re2Engine('^[a-z]+$', 'u');
    const anywhere = re2Engine('[0-9]+', 'u');
    expect([anchored.test('gpu'), anchored.test('GPU'), anchored.test('gpu-0')]).toEqual([true, false, false]);
    expect([anywhere.test('gpu-0'), anywhere.test('gpu')]).toEqual([true, false]);
    // each value's result is kept by the value: asked again, in another order, the same answers
    expect([anchored.test('GPU'), anchored.test('gpu'), anchored.test('gpu-0'), anywhere.test('gpu'), anywhere.test('gpu-0')]).toEqual([false, true, false, false, true]);
    // Go's syntax, which JavaScript refuses, and linear time where JavaScript backtracks for some 2^5000 steps
    expect(re2Engine('(?i)^gpu$', 'u').test('GPU')).toBe(true);
    expect(re2Engine('^(a+)+$', 'u').test(`${'a'.repeat(5000)}!`)).toBe(false);
  });

  it('a pattern RE2 refuses (a lookahead, as the API server refuses it) fails every test of a value, never passes one', () => {
    // built when a validator's code loads (most patterns are never reached), refused when first reached
    const refused = re2Engine('^(?=a)a$', 'u');
    expect(() => refused.test('a')).toThrow();
    expect(() => refused.test('b')).toThrow();
    // a refusal is never kept as an answer
    expect(() => refused.test('a')).toThrow();
  });
});
