import { describe, expect, it } from 'vitest';
import { celCompileError, celViolations } from '../../src/validate/cel';
import { withDefaults } from '../../src/validate/defaults';

describe('structural defaulting (src/validate/defaults.ts)', () => {
  const schema = {
    properties: {
      spec: {
        properties: {
          mode: { default: 'auto' },
          policy: { default: { drain: {} }, properties: { drain: { properties: { enable: { default: false } } } } },
          list: { items: { properties: { weight: { default: 1 } } } },
          byName: { additionalProperties: { properties: { on: { default: true } } } },
          given: { default: 'x' },
        },
      },
      status: { properties: { phase: { default: 'Pending' } } },
    },
  };

  it('fills what an object lacks, at every level it has, defaults of defaults included; never what it sets; never a parent it lacks', () => {
    const object = { spec: { given: 'mine', list: [{}, { weight: 3 }], byName: { a: {} } } };
    expect(withDefaults(schema, object)).toEqual({
      spec: { given: 'mine', mode: 'auto', policy: { drain: { enable: false } }, list: [{ weight: 1 }, { weight: 3 }], byName: { a: { on: true } } },
    });
    // the object given is not changed
    expect(object).toEqual({ spec: { given: 'mine', list: [{}, { weight: 3 }], byName: { a: {} } } });
  });
});

describe('CEL rules (src/validate/cel.ts)', () => {
  it('compiles a rule as the API server does when the CRD is written: an error names why', () => {
    expect(celCompileError('size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0')).toBeUndefined();
    expect(celCompileError('self.a ==')).toMatch(/./);
  });

  it('evaluates create-time rules at the nodes the object has', () => {
    const schema = { type: 'object', properties: { spec: { 'type': 'object', 'x-kubernetes-validations': [{ rule: 'self.n > 1', message: 'n above 1' }], 'properties': { n: { type: 'integer' } } } } };
    expect(celViolations(schema, { spec: { n: 2 } })).toEqual([]);
    expect(celViolations(schema, { spec: { n: 1 } })).toEqual([{ path: 'spec', rule: 'self.n > 1', message: 'n above 1' }]);
  });

  it('evaluates matches() with RE2, as the API server does: Go\'s syntax, no lookarounds, and linear time for a pattern that backtracks', () => {
    const on = (rule: string) => ({ type: 'object', properties: { name: { 'type': 'string', 'x-kubernetes-validations': [{ rule }] } } });
    // Go's flag syntax, which JavaScript refuses
    expect(celViolations(on("self.matches('(?i)^gpu-[a-z]+$')"), { name: 'GPU-a' })).toEqual([]);
    // a lookahead, which RE2 (and the API server) refuses: an error, in the rule's words
    const [look] = celViolations(on("self.matches('^(?=a)a$')"), { name: 'a' });
    expect(look.message).toMatch(/^error: .*invalid regular expression "\^\(\?=a\)a\$" \(RE2\)/);
    // inside a macro, beside a string that only reads like a call
    const all = { type: 'object', properties: { names: { 'type': 'array', 'items': { type: 'string' }, 'x-kubernetes-validations': [{ rule: "'x.matches(y)'.size() > 0 && self.all(n, n.matches('^[a-z]+$'))", message: 'lower case' }] } } };
    expect(celViolations(all, { names: ['a', 'b'] })).toEqual([]);
    expect(celViolations(all, { names: ['a', 'B'] })).toEqual([{ path: 'names', rule: all.properties.names['x-kubernetes-validations'][0].rule, message: 'lower case' }]);
    // JavaScript's backtracking takes some 2^5000 steps for this value; RE2 a few thousand
    const evil = on("self.matches('^(a+)+$')");
    expect(celViolations(evil, { name: `${'a'.repeat(5000)}!` })).toHaveLength(1);
    expect(celViolations(evil, { name: 'a'.repeat(5000) })).toEqual([]);
    // a receiver that is no string: the library's error, named as the rule names the function
    expect(celViolations(on('self.matches(\'a\')'), { name: 5 })[0].message).toMatch(/matches\(string\)/);
  });
});
