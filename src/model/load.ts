import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseDocument } from 'yaml';
import type { core } from 'zod';
import { ClusterDescription, ClusterDescriptionSchema } from './description';
import { evaluateTypeScriptDescription, TypeScriptDescriptionFailed } from './load-typescript';

/** One problem of a cluster description, with the field path it concerns. */
export interface DescriptionIssue {
  /** Dotted field path (`nodes.gpuWorkers.gpusPerNode`, `tenants[1].name`); empty for the whole file. */
  readonly path: string;
  readonly message: string;
}

/** A cluster description that cannot be rendered: bad YAML, wrong types, impossible combinations. */
export class DescriptionError extends Error {
  constructor(readonly source: string, readonly issues: readonly DescriptionIssue[]) {
    super(`${source}: invalid cluster description\n${issues.map((i) => `  ${i.path ? `${i.path}: ` : ''}${i.message}`).join('\n')}`);
    this.name = 'DescriptionError';
  }
}

export function formatPath(p: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of p) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function toIssues(issues: readonly core.$ZodIssue[]): DescriptionIssue[] {
  const out: DescriptionIssue[] = [];
  for (const issue of issues) {
    const at = formatPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: formatPath([...issue.path, key]), message: 'unknown field' });
      continue;
    }
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // a union of alternatives (e.g. quantity string|number): report the outer message
      out.push({ path: at, message: `${issue.message}, got ${describeValue(issue.input)}` });
      continue;
    }
    if (issue.code === 'invalid_type' && issue.input === undefined) {
      out.push({ path: at, message: `required field is missing (${issue.message})` });
      continue;
    }
    const got = issue.code === 'custom' || !('input' in issue) ? '' : `, got ${describeValue(issue.input)}`;
    // zod's own wording ("Invalid input: expected string, received number") for fields without a message of ours
    const message = issue.code === 'invalid_type' && issue.message.startsWith('Invalid input') ? `expected ${issue.expected}` : issue.message;
    out.push({ path: at, message: `${message}${got}` });
  }
  return out;
}

/** Validates a parsed description and applies every default. Throws DescriptionError. */
export function parseDescription(raw: unknown, source = '<description>'): ClusterDescription {
  const result = ClusterDescriptionSchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw new DescriptionError(source, toIssues(result.error.issues));
  return result.data;
}

/** Description files: YAML, JSON (not a *.schema.json) or TypeScript (not a *.d.ts). */
export function isDescriptionFile(name: string): boolean {
  return /\.(ya?ml|json|ts)$/i.test(name) && !/\.(schema\.json|d\.ts)$/i.test(name);
}

/**
 * Reads a YAML, JSON or TypeScript (`export default defineCluster({...})`) cluster description
 * from a file. Every format goes through the same validation. Throws DescriptionError.
 */
export function loadDescription(file: string): ClusterDescription {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new DescriptionError(file, [{ path: '', message: `cannot read the file: ${(e as NodeJS.ErrnoException).code ?? String(e)}` }]);
  }
  let raw: unknown;
  const ext = path.extname(file).toLowerCase();
  if (ext === '.ts') {
    try {
      raw = evaluateTypeScriptDescription(file, text);
    } catch (e) {
      if (e instanceof TypeScriptDescriptionFailed) throw new DescriptionError(file, e.issues);
      throw e;
    }
  } else if (ext === '.json') {
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new DescriptionError(file, [{ path: '', message: `invalid JSON: ${(e as Error).message}` }]);
    }
  } else {
    const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
    if (doc.errors.length > 0) {
      throw new DescriptionError(file, doc.errors.map((e) => ({ path: '', message: `invalid YAML: ${e.message.split('\n')[0]}` })));
    }
    raw = doc.toJS();
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new DescriptionError(file, [{ path: '', message: 'expected a mapping of description fields at the top level' }]);
  }
  return parseDescription(raw, file);
}
