import * as path from 'node:path';
import type { core, ZodType } from 'zod';
import { ClusterDescription, ClusterDescriptionSchema } from './description';
import { evaluateTypeScriptDescription, TypeScriptDescriptionFailed } from './load-typescript';
import { maskCredentials } from '../errors';
import { faultPoint } from '../fault';
import { closestField, echoedValue } from './issue-hints';
import { INPUT_LIMITS } from '../input/limits';
import { checkNesting, decodeInput, formatPath, InputFileError, InputIssue, parseInputYaml, readInputBytes, yamlPositions } from '../input/read';
import { isJsonObject } from '../json';

export { formatPath };

/**
 * One problem of a cluster description, with the field path (`nodes.gpuWorkers.gpusPerNode`, `tenants[1].name`; empty
 * for the whole file) and, for a YAML or JSON file, where it is (1-based line and column of the field's key).
 */
export type DescriptionIssue = Pick<InputIssue, 'path' | 'message' | 'line' | 'column'>;

/**
 * `lab.yaml:18:5 nodes.gpuWorkers.gpusPerNod: unknown field`: the file, where, the field path, what is wrong; a credential
 * in it (a refused value or key shaped like one) masked.
 */
export function describeDescriptionIssue(source: string, i: DescriptionIssue): string {
  const where = i.line !== undefined ? `${source}:${i.line}:${i.column ?? 1}` : `${source}:`;
  return maskCredentials(`${where} ${i.path ? `${i.path}: ` : ''}${i.message}`);
}

/** A cluster description that cannot be rendered: bad YAML, wrong types, impossible combinations. One line per problem. */
export class DescriptionError extends Error {
  constructor(readonly source: string, readonly issues: readonly DescriptionIssue[]) {
    super(issues.map((i) => describeDescriptionIssue(source, i)).join('\n'));
    this.name = 'DescriptionError';
  }
}

/** A refused value as the message echoes it: JSON, its credentials masked (before it is cut short), at most 80 characters. */
function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = maskCredentials(JSON.stringify(v));
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/**
 * The issues of a refused description (of `schema`: the cluster description's unless told), each with where it is when
 * `positionOf` knows (a YAML or JSON text).
 */
export function toIssues(
  issues: readonly core.$ZodIssue[], raw: unknown, positionOf?: ReturnType<typeof yamlPositions>, schema: ZodType = ClusterDescriptionSchema,
): DescriptionIssue[] {
  const out: DescriptionIssue[] = [];
  const push = (segments: readonly PropertyKey[], message: string) => out.push({ path: formatPath(segments), message, ...positionOf?.(segments) });
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const meant = closestField(schema, issue.path, key);
        push([...issue.path, key], `unknown field${meant ? ` (did you mean "${meant}"?)` : ''}`);
      }
      continue;
    }
    const at = issue.path;
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // a union of alternatives (e.g. quantity string|number): report the outer message
      push(at, `${issue.message}, got ${describeValue(issue.input)}`);
      continue;
    }
    if (issue.code === 'invalid_key' && issue.issues.length > 0) {
      // a key of a map that its key type refuses: the key type's own message
      push(at, `${issue.issues[0].message}, got ${describeValue(issue.input)}`);
      continue;
    }
    if (issue.code === 'invalid_type' && issue.input === undefined) {
      push(at, `required field is missing (${issue.message})`);
      continue;
    }
    // a list too long or too short: its length, not its start; a cross-field rule's issue carries no input: the value
    // is read from the description where the message lacks it
    const list = (issue.code === 'too_big' || issue.code === 'too_small') && Array.isArray(issue.input);
    const got = issue.code === 'custom' ? echoedValue(issue, raw, describeValue) : !('input' in issue) ? ''
      : list ? `, got ${(issue.input as unknown[]).length}` : `, got ${describeValue(issue.input)}`;
    // zod's own wording ("Invalid input: expected string, received number") for fields without a message of ours
    const message = issue.code === 'invalid_type' && issue.message.startsWith('Invalid input') ? `expected ${issue.expected}` : issue.message;
    push(at, `${message}${got}`);
  }
  return out;
}

/**
 * Validates a parsed description and applies every default. Throws DescriptionError; with `text`, the YAML or JSON the
 * description was parsed from, each issue says where in it the field is.
 */
export function parseDescription(raw: unknown, source = '<description>', text?: string): ClusterDescription {
  const result = ClusterDescriptionSchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw new DescriptionError(source, toIssues(result.error.issues, raw, text === undefined ? undefined : yamlPositions(text)));
  return result.data;
}

/** The largest description file read (a description is a few KiB); GPU_CLUSTER_MANIFESTS_MAX_DESCRIPTION_MIB changes it. */
export const MAX_DESCRIPTION_BYTES = INPUT_LIMITS.description.mib * 1024 * 1024;
/** Deepest nesting of mappings and lists a description may have (the schema needs 6). */
export const MAX_DEPTH = INPUT_LIMITS.description.depth;
/** YAML aliases a description may expand (none are needed; a few are convenient; thousands are an alias bomb). */
export const MAX_ALIAS_COUNT = INPUT_LIMITS.description.aliases;

/** `a.b[2].c` as path segments (best effort: a key with a dot in it is taken for two). */
function pathSegments(p: string): PropertyKey[] {
  return [...p.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]));
}

/**
 * The limits of the shared input reader, reported as a description's problems: where the reader knows the position it
 * leads the line (the message need not repeat it); a problem of a field it found in `text` gets that field's position.
 */
function asDescriptionError<T>(read: () => T, text?: string): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof InputFileError) {
      const positionOf = text === undefined ? undefined : yamlPositions(text);
      throw new DescriptionError(e.file, e.issues.map((i) => (i.line !== undefined
        ? { path: i.path, message: i.message.replace(/ at line \d+, column \d+$/, ''), line: i.line, column: i.column }
        : { path: i.path, message: i.message, ...(i.path ? positionOf?.(pathSegments(i.path)) : undefined) })));
    }
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
  return asDescriptionError(() => parseInputYaml(file, text, 'description', false)[0], text);
}

/**
 * Reads a YAML, JSON or TypeScript (`export default defineCluster({...})`) cluster description
 * from a file. Every format goes through the same validation. Throws DescriptionError.
 */
export function loadDescription(file: string): ClusterDescription {
  // traced (GPU_CLUSTER_MANIFESTS_FAULT_TRACE): a test counts the loads of one run
  faultPoint('load');
  const { raw, text } = readRawDescription(file);
  if (!isJsonObject(raw)) {
    throw new DescriptionError(file, [{ path: '', message: 'expected a mapping of description fields at the top level' }]);
  }
  return parseDescription(raw, file, text);
}

/**
 * The value a description file holds before validation: its YAML or JSON parsed, or a TypeScript description's default
 * export (evaluated in its sandbox), within the description limits (size, encoding, nesting, aliases). `text` is the
 * file's text where positions in it mean something (not for TypeScript). Throws DescriptionError.
 */
export function readRawDescription(file: string): { readonly raw: unknown; readonly text?: string } {
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
  asDescriptionError(() => checkNesting(file, raw, 'description'), ext === '.ts' ? undefined : text);
  return { raw, text: ext === '.ts' ? undefined : text };
}

/**
 * A YAML file read as a description is (the fleet description beside the clusters): the same size, encoding,
 * nesting and alias limits, its problems as DescriptionError. Returns the parsed value and the text (for positions).
 */
export function readYamlDescription(file: string): { readonly raw: unknown; readonly text: string } {
  const text = decodeDescription(file, readDescriptionBytes(file));
  let raw: unknown;
  try {
    raw = parseYaml(file, text);
  } catch (e) {
    if (e instanceof RangeError) throw new DescriptionError(file, [{ path: '', message: `fields nested too deeply to parse (a description nests ${MAX_DEPTH} levels at most)` }]);
    throw e;
  }
  asDescriptionError(() => checkNesting(file, raw, 'description'), text);
  return { raw, text };
}
