import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { CelSchemaNode } from '../src/validate/cel';

/**
 * The create-time CEL rules (`x-kubernetes-validations`) of a CRD version, evaluated against an object the way the
 * API server does on create: src/validate/cel.ts (the project's CEL library, which upgrade-plan uses too).
 */
export { celViolations, CelRuleCount, CelViolation } from '../src/validate/cel';

/** The openAPIV3Schema of one version of the CRD in `file`. */
export function crdVersionSchema(file: string, version: string): CelSchemaNode {
  const crd = load(readFileSync(file, 'utf8')) as { spec: { versions: { name: string; schema: { openAPIV3Schema: CelSchemaNode } }[] } };
  const v = crd.spec.versions.find((x) => x.name === version);
  if (!v) throw new Error(`${file}: no version ${version}`);
  return v.schema.openAPIV3Schema;
}
