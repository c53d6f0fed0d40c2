import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import * as path from 'node:path';
import { isPair, isScalar, isSeq, LineCounter, Node, parseDocument, visit } from 'yaml';
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
    super(issues.length === 1 && !issues[0].path
      // a problem of the whole file: one line
      ? `${source}: ${issues[0].message}`
      : `${source}: invalid cluster description\n${issues.map((i) => `  ${i.path ? `${i.path}: ` : ''}${i.message}`).join('\n')}`);
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

/** The largest description file read (a description is a few KiB). */
export const MAX_DESCRIPTION_BYTES = 8 * 1024 * 1024;
/** Deepest nesting of mappings and lists a description may have (the schema needs 6). */
export const MAX_DEPTH = 32;
/** YAML aliases a description may expand (none are needed; a few are convenient; thousands are an alias bomb). */
export const MAX_ALIAS_COUNT = 100;

/**
 * The bytes of a description file. Refuses, before reading, anything but a regular file (a device
 * such as /dev/zero, a FIFO, a folder) and files over MAX_DESCRIPTION_BYTES.
 */
export function readDescriptionBytes(file: string): Buffer {
  const fail = (message: string) => new DescriptionError(file, [{ path: '', message }]);
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer
    // eslint-disable-next-line no-bitwise
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw fail(`cannot read the file: ${err.code === 'ENOENT' ? 'no such file' : err.code === 'EACCES' ? 'permission denied' : err.code ?? String(e)}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw fail(`not a regular file (${st.isDirectory() ? 'a folder' : st.isFIFO() ? 'a pipe' : 'a device or socket'}); name a YAML or JSON description file`);
    const tooBig = () => fail(`the file is larger than ${MAX_DESCRIPTION_BYTES / 1024 / 1024} MiB, far more than a cluster description needs; is it the right file?`);
    if (st.size > MAX_DESCRIPTION_BYTES) throw tooBig();
    const buf = Buffer.alloc(st.size + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > st.size) throw tooBig(); // it grew while being read
    }
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Offset of the first byte that is not valid UTF-8. */
function firstInvalidUtf8(buf: Buffer): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i];
    const len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (len === 0 || i + len > buf.length) return i;
    // the shortest-form and surrogate rules are left to TextDecoder: checking it on the slice is enough
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(i, i + len));
    } catch {
      return i;
    }
    i += len;
  }
  return buf.length;
}

/** Decodes a description as UTF-8; invalid bytes are refused with their line and column. */
export function decodeDescription(file: string, buf: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    const at = firstInvalidUtf8(buf);
    const before = new TextDecoder('utf-8').decode(buf.subarray(0, at));
    const line = before.split('\n').length;
    const column = [...before.slice(before.lastIndexOf('\n') + 1)].length + 1;
    throw new DescriptionError(file, [{ path: '', message: `invalid UTF-8 at line ${line}, column ${column} (byte 0x${buf[at].toString(16).padStart(2, '0')}): save the file as UTF-8` }]);
  }
}

/** The field path of a YAML node from its ancestors (as `visit` gives them). */
function yamlPath(ancestors: readonly unknown[], self: unknown): string {
  const segs: Array<string | number> = [];
  const chain = [...ancestors, self];
  for (let i = 0; i < chain.length - 1; i++) {
    const node = chain[i];
    if (isPair(node) && chain[i + 1] === node.value) segs.push(isScalar(node.key) ? String(node.key.value) : String(node.key));
    else if (isSeq(node)) segs.push(node.items.indexOf(chain[i + 1] as never));
  }
  return formatPath(segs);
}

/** Keys given twice in one mapping, with the field path and both lines. */
function duplicateKeys(doc: ReturnType<typeof parseDocument>, lines: LineCounter): DescriptionIssue[] {
  const issues: DescriptionIssue[] = [];
  visit(doc, {
    Map(_, map, ancestors) {
      const seen = new Map<string, number>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const line = lines.linePos((pair.key as Node | null)?.range?.[0] ?? 0).line;
        const first = seen.get(key);
        if (first !== undefined) {
          const at = yamlPath([...ancestors, map, pair], pair.value);
          issues.push({ path: at, message: `duplicate key "${key}" (line ${line}; first given on line ${first}): keep one` });
        } else {
          seen.set(key, line);
        }
      }
    },
  });
  return issues;
}

/** Where a value nests deeper than MAX_DEPTH, or undefined. */
function tooDeep(value: unknown): string | undefined {
  const stack: Array<{ v: unknown; depth: number; at: Array<string | number> }> = [{ v: value, depth: 0, at: [] }];
  while (stack.length > 0) {
    const { v, depth, at } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_DEPTH) return formatPath(at);
    const entries: Array<[string | number, unknown]> = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
    for (const [k, x] of entries) stack.push({ v: x, depth: depth + 1, at: [...at, k] });
  }
  return undefined;
}

function parseYaml(file: string, text: string): unknown {
  const lines = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: false, prettyErrors: true, lineCounter: lines });
  if (doc.errors.some((e) => /call stack/i.test(e.message))) throw new RangeError('nesting');
  if (doc.errors.length > 0) {
    throw new DescriptionError(file, doc.errors.map((e) => ({ path: '', message: `invalid YAML: ${e.message.split('\n')[0]}` })));
  }
  const dups = duplicateKeys(doc, lines);
  if (dups.length > 0) throw new DescriptionError(file, dups);
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    if (e instanceof ReferenceError && /alias/i.test(e.message)) {
      throw new DescriptionError(file, [{ path: '', message: `YAML aliases expand to more than ${MAX_ALIAS_COUNT} copies (an alias bomb?): write the values out` }]);
    }
    throw e;
  }
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
        raw = JSON.parse(text);
      } catch (e) {
        if (e instanceof SyntaxError) throw new DescriptionError(file, [{ path: '', message: `invalid JSON: ${e.message}` }]);
        throw e;
      }
    } else {
      raw = parseYaml(file, text);
    }
  } catch (e) {
    // the parsers recurse per level of nesting
    if (e instanceof RangeError) throw new DescriptionError(file, [{ path: '', message: `fields nested too deeply to parse (a description nests ${MAX_DEPTH} levels at most)` }]);
    throw e;
  }
  const deep = tooDeep(raw);
  if (deep !== undefined) throw new DescriptionError(file, [{ path: deep, message: `nested more than ${MAX_DEPTH} levels deep; a description needs far fewer` }]);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new DescriptionError(file, [{ path: '', message: 'expected a mapping of description fields at the top level' }]);
  }
  return parseDescription(raw, file);
}
