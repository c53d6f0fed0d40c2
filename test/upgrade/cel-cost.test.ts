import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { userCrds } from '../../src/upgrade/crd-sets';
import { CrdSetValidator } from '../../src/upgrade/revalidate';
import { celProgram, celViolations, CelSchemaNode } from '../../src/validate/cel';
import { CEL_OBJECT_BUDGET, CEL_PER_CALL_LIMIT } from '../../src/validate/cel-cost';

/*
 * CEL rules of a CRD we are handed (upgrade-plan --from-crds, --to-crds) have a cost bound (issue 52, hostile input
 * round five, 12): each rule is estimated on the value it is about to read, as the API server estimates a rule and
 * limits its cost, and is refused without running when it passes the per-call limit; the rules of one object stop at
 * the object's budget. A rule that would run for hours (a nested walk, a value that doubles with every cel.bind)
 * returns at once; the rules of real CRDs run as before.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'cel-cost-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A list of `n` items under a schema with `rules` on the list. */
function listOf(n: number, rules: string[]): { schema: CelSchemaNode; value: unknown[] } {
  return {
    schema: { 'type': 'array', 'x-kubernetes-validations': rules.map((rule) => ({ rule })), 'items': { type: 'object', properties: { name: { type: 'string' }, v: { type: 'integer' } } } },
    value: Array.from({ length: n }, (_, i) => ({ name: `item-${i}`, v: i })),
  };
}

/** 2^k characters built by k nested cel.bind, each doubling the last. */
const doubling = (k: number) => {
  let body = `v${k}.size() > 0`;
  for (let i = k; i >= 1; i--) body = `cel.bind(v${i}, ${i === 1 ? '"ab" + "ab"' : `v${i - 1} + v${i - 1}`}, ${body})`;
  return body;
};

describe('a rule whose estimate passes the API server\'s per-call limit is refused without running', () => {
  it.each([
    ['three nested walks of a list of 200', 200, 'self.all(a, self.all(b, self.all(c, a.v + b.v + c.v >= 0)))'],
    ['four nested walks of a list of 60', 60, 'self.all(a, self.all(b, self.all(c, self.all(d, a.v <= d.v || true))))'],
    ['a list of the list for each element, walked', 1000, 'self.map(x, self).all(l, l.all(y, y.v >= 0))'],
    ['a string doubled by 40 cel.binds', 1, doubling(40)],
    ['nested walks of list literals', 1, `${JSON.stringify(Array.from({ length: 200 }, (_, i) => i))}.all(a, ${JSON.stringify(Array.from({ length: 200 }, (_, i) => i))}.all(b, ${JSON.stringify(Array.from({ length: 200 }, (_, i) => i))}.all(c, true)))`],
  ])('%s', (_, n, rule) => {
    const { schema, value } = listOf(n, [rule]);
    const found = celViolations(schema, value);
    expect(found).toEqual([{ path: '<root>', rule, message: expect.stringMatching(new RegExp(`^the rule's estimated cost on this value, \\d+, passes the API server's per-call CEL cost limit of ${CEL_PER_CALL_LIMIT}: refused, not run$`)) }]);
  }, 30_000);

  it('estimates a rule from its tree as written, whether or not it ran before as a compiled expression (a policy\'s)', () => {
    // the compiled program's tree is annotated by its runs and has its `matches` renamed: the estimate parses its own
    const rule = "self.all(a, self.all(b, self.all(c, a.name.matches('^item-[0-9]+$') && b.v >= 0)))";
    const { schema, value } = listOf(200, [rule]);
    const small = listOf(3, [rule]);
    expect(celProgram(rule)({ self: (small.value as { name: string; v: number }[]).map((x) => ({ ...x, v: BigInt(x.v) })) })).toBe(true);
    expect(celViolations(schema, value)).toEqual([{ path: '<root>', rule, message: expect.stringMatching(/^the rule's estimated cost on this value, \d+, passes/) }]);
    expect(celViolations(small.schema, small.value)).toEqual([]);
  }, 30_000);

  it('the same rules on small values run, and decide', () => {
    const { schema, value } = listOf(10, ['self.all(a, self.all(b, self.all(c, a.v + b.v + c.v >= 0)))', 'self.all(x, self.exists_one(y, y.name == x.name))', doubling(8)]);
    expect(celViolations(schema, value)).toEqual([]);
    const refused = listOf(10, ['self.all(a, self.all(b, a.v == b.v))']);
    expect(celViolations(refused.schema, refused.value).map((v) => v.message)).toEqual([expect.stringMatching(/^false|failed|rule/)]);
  });

  it('the rules of one object stop at the object\'s budget, said once', () => {
    // each rule well under the per-call limit, all of them together far over the object's budget
    const rules = Array.from({ length: 40 }, (_, i) => `self.all(a, self.exists(b, a.v + ${i} >= b.v))`);
    const { schema, value } = listOf(200, rules);
    const found = celViolations(schema, value);
    expect(found).toEqual([{ path: '<root>', rule: expect.any(String), message: `the object's CEL rules together pass the API server's cost budget of ${CEL_OBJECT_BUDGET} (estimated on its values): this rule and the rest not run` }]);
  }, 30_000);
});

describe('upgrade-plan --to-crds: a user\'s CRD with a rule of unbounded cost', () => {
  it('makes its CR invalid under that CRD, in bounded time, naming the bound', () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        names: { kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget' },
        scope: 'Namespaced',
        versions: [{
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  'type': 'object',
                  'properties': { parts: { type: 'array', items: { type: 'string' } } },
                  'x-kubernetes-validations': [{ rule: 'self.parts.all(a, self.parts.all(b, self.parts.all(c, self.parts.all(d, a != "" || b != "" || c != "" || d != ""))))' }],
                },
              },
            },
          },
        }],
      },
    };
    const file = path.join(dir, 'widgets.yaml');
    writeFileSync(file, stringify(crd));
    const validator = new CrdSetValidator(userCrds([file], '--to-crds'), [], undefined);
    const widget = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec: { parts: Array.from({ length: 100 }, (_, i) => `p${i}`) } };
    const result = validator.validate({ object: widget, source: 'render widget.yaml' });
    expect(result.outcome).toBe('invalid');
    // (no core definitions here: what the strict schema says of metadata is beside the point)
    expect(result.problems.filter((p) => p.includes('CEL'))).toEqual([expect.stringMatching(/^spec: the rule's estimated cost on this value, \d+, passes the API server's per-call CEL cost limit of 1000000: refused, not run \(CEL "self\.parts\.all/)]);
  }, 60_000);
});
