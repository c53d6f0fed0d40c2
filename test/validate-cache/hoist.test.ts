import Ajv, { ErrorObject } from 'ajv';
import { describe, expect, it } from 'vitest';
import { mutants, sampleObjects } from './corpus';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { SchemaStore } from '../../src/validate/schemas';
import { hoistSubschemas, pruneNulls, strictSchema } from '../../src/validate/strict-schema';
import { HAS_SCHEMAS } from '../helpers';

type Schema = Record<string, unknown>;

function compile(schema: Schema) {
  return new Ajv({ strict: false, allErrors: true, logger: false, validateSchema: false, inlineRefs: false }).compile(schema);
}

/** What a validation reports, without the schema paths (which hoisting changes by design). */
function outcome(validate: ReturnType<typeof compile>, data: unknown): string[] {
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => `${e.instancePath} ${e.keyword} ${JSON.stringify(e.params)} ${e.message}`).sort();
}

const KINDS = [
  ['kubeflow.org/v2beta1', 'MPIJob'],
  ['kubeflow.org/v1', 'PyTorchJob'],
  ['argoproj.io/v1alpha1', 'Application'],
  ['argoproj.io/v1alpha1', 'ApplicationSet'],
  ['nvidia.com/v1', 'ClusterPolicy'],
  ['mellanox.com/v1alpha1', 'NicClusterPolicy'],
] as const;

describe.skipIf(!HAS_SCHEMAS)('hoisting subschemas into definitions', () => {
  const store = HAS_SCHEMAS ? SchemaStore.open(DEFAULT_SCHEMAS, { cacheDir: false }) : undefined;

  it.each(KINDS)('validates %s %s exactly as the inline schema does', (apiVersion, kind) => {
    const strict = strictSchema(store!.lookup(apiVersion, kind)!.schema) as Schema;
    const hoisted = hoistSubschemas(strict);
    const objects = sampleObjects().filter((m) => m.kind === kind).flatMap((m) => [m, ...mutants(m, 2)]).map(pruneNulls);
    expect(objects.length).toBeGreaterThan(10);
    const inline = compile(strict);
    const shared = compile(hoisted);
    const results = objects.map((o) => outcome(inline, o));
    expect(results.filter((r) => r.length > 0).length).toBeGreaterThan(5);
    expect(objects.map((o) => outcome(shared, o))).toEqual(results);
  });

  it('keeps one definition per distinct subschema, so repeated templates shrink', () => {
    const strict = strictSchema(store!.lookup('argoproj.io/v1alpha1', 'ApplicationSet')!.schema) as Schema;
    const hoisted = hoistSubschemas(strict);
    expect(JSON.stringify(hoisted).length * 5).toBeLessThan(JSON.stringify(strict).length);
  });

  it('leaves small schemas, data keywords and existing definitions alone', () => {
    const small = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
    expect(hoistSubschemas(small)).toEqual(small);
    const big = { type: 'object', enum: [{ properties: { x: 1 } }], properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`field${i}`, { type: 'string', pattern: '^[a-z]+$' }])) };
    const parent = { type: 'object', definitions: { 'hoisted-0': { type: 'null' } }, properties: { one: big, two: big } };
    const out = hoistSubschemas(parent) as { definitions: Schema; properties: Schema };
    expect(out.properties.one).toEqual({ $ref: '#/definitions/_hoisted-0' });
    expect(out.properties.two).toEqual({ $ref: '#/definitions/_hoisted-0' });
    expect(out.definitions).toEqual({ 'hoisted-0': { type: 'null' }, '_hoisted-0': big });
  });
});
