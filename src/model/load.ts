import * as path from 'node:path';
import type { core } from 'zod';
import { ClusterDescription, ClusterDescriptionSchema } from './description';
import { evaluateTypeScriptDescription, TypeScriptDescriptionFailed } from './load-typescript';
import { faultPoint } from '../fault';
import { INPUT_LIMITS } from '../input/limits';
import { checkNesting, decodeInput, formatPath, InputFileError, InputIssue, parseInputYaml, readInputBytes } from '../input/read';
import { isJsonObject } from '../json';

export { formatPath };

/** One problem of a cluster description, with the field path (`nodes.gpuWorkers.gpusPerNode`, `tenants[1].name`; empty for the whole file). */
export type DescriptionIssue = Pick<InputIssue, 'path' | 'message'>;

/** A cluster description that cannot be rendered: bad YAML, wrong types, impossible combinations. */
export class DescriptionError extends Error {
  constructor(readonly source: string, readonly issues: readonly DescriptionIssue[]) {
    super(issues.length === 1 && !issues[0].path
      // a problem of the whole file: one line
      ? `${source}: ${issues[0].message}`
      : `${source}: invalid cluster description\n${issues.map((i) => `  ${i.path ? `${i.path}: ` : ''}${i.message}`).join('\n')}`);
    this.name = 'DescriptionError';
  }
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
    // a list too long or too short: its length, not its start
    const list = (issue.code === 'too_big' || issue.code === 'too_small') && Array.isArray(issue.input);
    const got = issue.code === 'custom' || !('input' in issue) ? '' : list ? `, got ${(issue.input as unknown[]).length}` : `, got ${describeValue(issue.input)}`;
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

/** The largest description file read (a description is a few KiB); GPU_CLUSTER_MANIFESTS_MAX_DESCRIPTION_MIB changes it. */
export const MAX_DESCRIPTION_BYTES = INPUT_LIMITS.description.mib * 1024 * 1024;
/** Deepest nesting of mappings and lists a description may have (the schema needs 6). */
export const MAX_DEPTH = INPUT_LIMITS.description.depth;
/** YAML aliases a description may expand (none are needed; a few are convenient; thousands are an alias bomb). */
export const MAX_ALIAS_COUNT = INPUT_LIMITS.description.aliases;

/** The limits of the shared input reader, reported as a description's problems. */
function asDescriptionError<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof InputFileError) throw new DescriptionError(e.file, e.issues.map((i) => ({ path: i.path, message: i.message })));
    throw e;
  }
}

/**
 * The bytes of a description file. Refuses, before reading, anything but a regular file (a device
 * such as /dev/zero, a FIFO, a folder) and files over the size limit (src/input/limits.ts).
 */
export function readDescriptionBytes(file: string): Buffer {
  return asDescriptionError(() => readInputBytes(file, 'description'));
}

/** Decodes a description as UTF-8; invalid bytes and control characters are refused with their line and column. */
export function decodeDescription(file: string, buf: Buffer): string {
  return asDescriptionError(() => decodeInput(file, buf));
}

/** The parsed YAML or JSON of a description: nesting, aliases and duplicate keys within the limits. */
function parseYaml(file: string, text: string): unknown {
  return asDescriptionError(() => parseInputYaml(file, text, 'description', false)[0]);
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
  // traced (GPU_CLUSTER_MANIFESTS_FAULT_TRACE): a test counts the loads of one run
  faultPoint('load');
  const text = decodeDescription(file, readDescriptionBytes(file));
  let raw: unknown;
  const ext = path.extname(file).toLowerCase();
  try {
    if (ext === '.ts') {
      try {
        raw = evaluateTypeScriptDescription(file, text);
      } catch (e) {
        if (e instanceof TypeScriptDescriptionFailed) throw new DescriptionError(file, e.issues);
        throw e;
      }
    } else if (ext === '.json') {
      try {
        JSON.parse(text);
      } catch (e) {
        if (e instanceof SyntaxError) throw new DescriptionError(file, [{ path: '', message: `invalid JSON: ${e.message}` }]);
        throw e;
      }
      // the same reader as YAML: duplicate keys (JSON.parse keeps the last silently), nesting
      raw = parseYaml(file, text);
    } else {
      raw = parseYaml(file, text);
    }
  } catch (e) {
    // the parsers recurse per level of nesting
    if (e instanceof RangeError) throw new DescriptionError(file, [{ path: '', message: `fields nested too deeply to parse (a description nests ${MAX_DEPTH} levels at most)` }]);
    throw e;
  }
  asDescriptionError(() => checkNesting(file, raw, 'description'));
  if (!isJsonObject(raw)) {
    throw new DescriptionError(file, [{ path: '', message: 'expected a mapping of description fields at the top level' }]);
  }
  return parseDescription(raw, file);
}
