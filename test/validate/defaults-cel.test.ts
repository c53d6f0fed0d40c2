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
});
