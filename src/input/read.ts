import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, Stats, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isMap, isPair, isScalar, isSeq, LineCounter, Node, parseAllDocuments, parseDocument, visit, Document } from 'yaml';
import { formatMiB, INPUT_LIMITS, LimitedInput, maxBytes, raiseHint } from './limits';
import { InputError } from '../errors';

/**
 * The one reader of input files (descriptions, snapshots, kubeconfigs): a regular file within the
 * kind's size limit, strict UTF-8 without control characters, YAML (JSON is YAML) within the
 * kind's nesting and alias limits, without duplicate keys. Every problem names the line (and the
 * field path where there is one). js-yaml parses (a 20,000-node snapshot in about a second); the
 * `yaml` library, slower but precise, only explains what js-yaml refused.
 */

/** One problem of an input file. */
export interface InputIssue {
  /** Dotted field path (`nodes.gpuWorkers.count`, `items[3].metadata`); empty for the whole file. */
  readonly path: string;
  readonly message: string;
  /** The document (1-based) of a multi-document file. */
  readonly document?: number;
  /** Where in the file (1-based), when the reader knows it. */
  readonly line?: number;
  readonly column?: number;
}

/** An input file that cannot be read or parsed. The message is one line: the file, where, what. */
export class InputFileError extends Error {
  constructor(readonly file: string, readonly issues: readonly InputIssue[]) {
    super(`${file}: ${describeIssues(issues)}`);
    this.name = 'InputFileError';
  }
}

/** The first issue, and how many more there are. */
export function describeIssues(issues: readonly InputIssue[]): string {
  return `${describeIssue(issues[0])}${issues.length > 1 ? ` (and ${issues.length - 1} more problem(s))` : ''}`;
}

/** Runs a read; its InputFileError becomes bad input of one line naming `label` (`--snapshot FILE`) instead of the file. */
export function asInputError<T>(label: string, read: () => T): T {
  try {
    return read();
  } catch (e) {
    throw e instanceof InputFileError ? new InputError(`${label}: ${describeIssues(e.issues)}`) : e;
  }
}

/** `document 2, items[3].metadata: duplicate key ...`. */
export function describeIssue(i: InputIssue): string {
  const where = [i.document !== undefined ? `document ${i.document}` : '', i.path].filter((s) => s !== '').join(', ');
  return `${where ? `${where}: ` : ''}${i.message}`;
}

export function formatPath(p: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of p) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

function fileKind(st: Stats): string {
  return st.isDirectory() ? 'a folder' : st.isFIFO() ? 'a pipe' : 'a device or socket';
}

/**
 * Why a path is no input file of the kind, from its metadata alone (nothing is opened, so a FIFO never
 * waits and a device is never read): not a regular file, or over the kind's size limit; undefined when
 * it may be read (readInputBytes checks again on what it opened). A path that does not exist or cannot
 * be reached says so.
 */
export function inputFileProblem(file: string, kind: LimitedInput): string | undefined {
  const spec = INPUT_LIMITS[kind];
  let st: Stats | undefined;
  try {
    st = statSync(file, { throwIfNoEntry: false });
  } catch (e) {
    return `cannot read the file: ${(e as NodeJS.ErrnoException).code ?? String(e)}`;
  }
  if (!st) return lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink() ? 'a symbolic link that leads nowhere' : 'no such file';
  if (!st.isFile()) return `not a regular file (${fileKind(st)}); ${spec.hint}`;
  const max = maxBytes(kind);
  if (st.size > max) return tooBigText(kind, max);
  return undefined;
}

function tooBigText(kind: LimitedInput, max: number): string {
  return `the file is larger than ${formatMiB(max)}, far more than ${INPUT_LIMITS[kind].what} needs; is it the right file? (${raiseHint(kind)})`;
}

/**
 * The bytes of an input file. Refuses, before reading, anything but a regular file (a device such
 * as /dev/zero, a FIFO, a folder) and files over the kind's size limit; never waits for a writer.
 */
export function readInputBytes(file: string, kind: LimitedInput): Buffer {
  const spec = INPUT_LIMITS[kind];
  const fail = (message: string) => new InputFileError(file, [{ path: '', message }]);
  let max: number;
  try {
    max = maxBytes(kind);
  } catch (e) {
    throw e instanceof InputError ? fail(e.message) : e;
  }
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer
    // eslint-disable-next-line no-bitwise
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT' && lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) throw fail(`a symbolic link that leads nowhere; ${spec.hint}`);
    throw fail(`cannot read the file: ${err.code === 'ENOENT' ? 'no such file' : err.code === 'EACCES' ? 'permission denied' : err.code ?? String(e)}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw fail(`not a regular file (${fileKind(st)}); ${spec.hint}`);
    const tooBig = () => fail(tooBigText(kind, max));
    if (st.size > max) throw tooBig();
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

/** Line and column (1-based, in characters) of an offset of a text. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  let line = 1;
  for (let i = before.indexOf('\n'); i !== -1; i = before.indexOf('\n', i + 1)) line++;
  return { line, column: [...before.slice(before.lastIndexOf('\n') + 1)].length + 1 };
}

/**
 * Control characters YAML does not allow in a file (C0 but tab, line feed and carriage return;
 * DEL; C1 but next-line). kubectl and JSON escape them inside strings; raw, they mean a binary
 * or corrupted file, and would be printed raw into messages.
 */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f]/;

/** Decodes an input file as UTF-8; invalid bytes and control characters are refused with their line and column. */
export function decodeInput(file: string, buf: Buffer): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    const at = firstInvalidUtf8(buf);
    const { line, column } = lineColumn(new TextDecoder('utf-8').decode(buf.subarray(0, at)), Infinity);
    throw new InputFileError(file, [{ path: '', message: `invalid UTF-8 at line ${line}, column ${column} (byte 0x${buf[at].toString(16).padStart(2, '0')}): save the file as UTF-8` }]);
  }
  const m = CONTROL.exec(text);
  if (m) {
    const { line, column } = lineColumn(text, m.index);
    const code = `U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw new InputFileError(file, [{ path: '', message: `control character ${code} at line ${line}, column ${column}: not allowed in YAML or JSON text (a binary or corrupted file?); remove it` }]);
  }
  return text;
}

/** js-yaml only where YAML is parsed. */
const jsYaml = (): typeof import('js-yaml') => createRequire(__filename)('js-yaml');

/**
 * Files up to this size (every description and kubeconfig) are parsed a second time, with the `yaml`
 * library, to explain an error with field paths; it costs about 1 s and 70 MiB per MiB, so a larger
 * snapshot keeps js-yaml's message (with its line and column).
 */
const EXPLAIN_MAX_CHARS = 1024 * 1024;

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
function duplicateKeys(doc: Document.Parsed, lines: LineCounter, document: number | undefined): InputIssue[] {
  const issues: InputIssue[] = [];
  visit(doc, {
    Map(_, map, ancestors) {
      const seen = new Map<string, number>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const pos = lines.linePos((pair.key as Node | null)?.range?.[0] ?? 0);
        const line = pos.line;
        const first = seen.get(key);
        if (first !== undefined) {
          const at = yamlPath([...ancestors, map, pair], pair.value);
          issues.push({ path: at, message: `duplicate key "${key}" (line ${line}; first given on line ${first}): keep one`, document, line, column: pos.col });
        } else {
          seen.set(key, line);
        }
      }
    },
  });
  return issues;
}

/** What js-yaml refused, explained with field paths and lines by the `yaml` library when the file is small enough. */
function explain(text: string, multi: boolean, e: { reason: string; mark?: { line: number; column: number } }): InputIssue[] {
  const at = e.mark ? ` (line ${e.mark.line + 1}, column ${e.mark.column + 1})` : '';
  const fallback: InputIssue[] = [{ path: '', message: `invalid YAML: ${e.reason}${at}` }];
  if (text.length > EXPLAIN_MAX_CHARS) return fallback;
  const lines = new LineCounter();
  const options = { uniqueKeys: false, prettyErrors: true, lineCounter: lines } as const;
  let docs: Document.Parsed[];
  try {
    const parsed = multi ? parseAllDocuments(text, options) : [parseDocument(text, options)];
    docs = Array.isArray(parsed) ? parsed : [];
  } catch {
    return fallback; // the explanation must not fail where js-yaml did not crash
  }
  const issues = docs.flatMap((doc, d) => {
    const document = multi && docs.length > 1 ? d + 1 : undefined;
    return doc.errors.length > 0
      ? doc.errors.map((err) => ({
        path: '',
        message: `invalid YAML: ${err.message.split('\n')[0].replace(/:$/, '')}`,
        document,
        ...(err.linePos ? { line: err.linePos[0].line, column: err.linePos[0].col } : {}),
      }))
      : duplicateKeys(doc, lines, document);
  });
  return issues.length > 0 ? issues : fallback;
}

/**
 * Where each field of a YAML (or JSON) text is: the line and column (1-based) of the key that names a field path
 * (`['nodes', 'gpuWorkers', 'gpusPerNod']`), of the item of a list index, or, for a path the text does not hold
 * (a missing field), of the deepest field of it that it does hold (the top-level mapping for a missing top-level
 * field). Undefined for the whole file, or a text the `yaml`
 * library cannot parse. Parsed once, on the first question; meant for the few issues of a refused file.
 */
export function yamlPositions(text: string): (path: readonly PropertyKey[]) => { line: number; column: number } | undefined {
  let parsed: { doc: Document.Parsed; lines: LineCounter } | null | undefined;
  return (segments) => {
    if (segments.length === 0 || text.length > EXPLAIN_MAX_CHARS) return undefined;
    if (parsed === undefined) {
      const lines = new LineCounter();
      try {
        const doc = parseDocument(text, { uniqueKeys: false, lineCounter: lines });
        parsed = doc.errors.length > 0 ? null : { doc, lines };
      } catch {
        parsed = null;
      }
    }
    if (parsed === null) return undefined;
    let node: unknown = parsed.doc.contents;
    // a field missing at the top level: where the mapping it belongs to starts
    let at: number | undefined = (node as Node | null)?.range?.[0];
    for (const seg of segments) {
      if (isMap(node)) {
        const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(seg));
        if (!pair) break;
        at = (pair.key as Node | null)?.range?.[0] ?? at;
        node = pair.value;
      } else if (isSeq(node) && typeof seg === 'number' && node.items[seg] !== undefined) {
        node = node.items[seg];
        at = (node as Node | null)?.range?.[0] ?? at;
      } else {
        break;
      }
    }
    if (at === undefined) return undefined;
    const pos = parsed.lines.linePos(at);
    return { line: pos.line, column: pos.col };
  };
}

class TooManyAliases extends Error {}
class RecursiveAlias extends Error {}

/**
 * Counts what aliases expand to while js-yaml parses, and stops the parse when it passes `max`:
 * every alias (`*name`) counts once plus the aliases inside the node it repeats, so an alias bomb
 * (aliases of aliases) is stopped early and plain reuse of a value is cheap. An alias of a node that
 * contains it (which js-yaml would build as a cycle) is refused.
 */
function aliasCounter(max: number): { listener: (event: 'open' | 'close', state: { kind: string | null; result: unknown }) => void; used: () => boolean } {
  const frames: number[] = [0];
  const weights = new WeakMap<object, number>();
  let used = false;
  const listener = (event: 'open' | 'close', state: { kind: string | null; result: unknown }) => {
    if (event === 'open') {
      frames.push(0);
      return;
    }
    const own = frames.pop()!;
    const target = state.result;
    let count = own;
    if (state.kind === null && target !== null && target !== undefined) {
      // an alias: js-yaml sets no kind and hands over the anchored node
      const inner = typeof target === 'object' ? weights.get(target) : 0;
      if (inner === undefined) throw new RecursiveAlias();
      count = 1 + inner;
      used = true;
    } else if (typeof target === 'object' && target !== null) {
      weights.set(target, own);
    }
    const total = Math.min(frames[frames.length - 1] + count, Number.MAX_SAFE_INTEGER);
    if (total > max) throw new TooManyAliases();
    frames[frames.length - 1] = total;
  };
  return { listener, used: () => used };
}

interface Visit {
  readonly v: object;
  readonly depth: number;
  readonly parent?: Visit;
  readonly key?: string | number;
}

function pathOf(step: Visit): string {
  const segs: Array<string | number> = [];
  for (let at: Visit | undefined = step; at?.key !== undefined; at = at.parent) segs.unshift(at.key);
  return formatPath(segs);
}

/**
 * The field path of the first mapping or list nested `max` levels below the root, or undefined.
 * Iterative (the callers' recursion is safe below it). With `shared`, each node a YAML alias
 * repeats is walked once, where it is first met, so that reused values cost nothing twice.
 */
function tooDeep(root: unknown, max: number, shared: boolean): string | undefined {
  if (root === null || typeof root !== 'object') return undefined;
  const seen = shared ? new Set<object>() : undefined;
  const stack: Visit[] = [{ v: root, depth: 0 }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    if (step.depth >= max) return pathOf(step);
    const entries: Array<[string | number, unknown]> = Array.isArray(step.v) ? step.v.map((x, i) => [i, x]) : Object.entries(step.v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, x] = entries[i];
      if (x === null || typeof x !== 'object' || seen?.has(x)) continue;
      seen?.add(x);
      stack.push({ v: x, depth: step.depth + 1, parent: step, key });
    }
  }
  return undefined;
}

/** Refuses a value nested deeper than the kind allows (also for values that were not parsed from text). */
export function checkNesting(file: string, value: unknown, kind: LimitedInput, opts: { shared?: boolean; document?: number } = {}): void {
  const spec = INPUT_LIMITS[kind];
  const deep = tooDeep(value, spec.depth, opts.shared ?? false);
  if (deep !== undefined) throw new InputFileError(file, [{ path: deep, message: `nested more than ${spec.depth} levels deep; ${spec.what} needs far fewer`, document: opts.document }]);
}

/**
 * The documents of an input file's text (one, or several for `multi`), as plain values, within the
 * kind's nesting and alias limits and without duplicate keys. YAML 1.2 core schema (JSON is YAML):
 * no timestamps, no merge keys, as the `yaml` library reads descriptions.
 */
export function parseInputYaml(file: string, text: string, kind: LimitedInput, multi: boolean): unknown[] {
  const spec = INPUT_LIMITS[kind];
  const yaml = jsYaml();
  const fail = (issue: InputIssue) => new InputFileError(file, [issue]);
  const aliases = aliasCounter(spec.aliases);
  const options = { schema: yaml.CORE_SCHEMA, filename: file, listener: aliases.listener };
  let docs: unknown[];
  try {
    docs = multi ? yaml.loadAll(text, undefined, options) : [yaml.load(text, options)];
  } catch (e) {
    // the parser recurses per level of nesting
    if (e instanceof RangeError) throw fail({ path: '', message: `fields nested too deeply to parse (${spec.what} nests ${spec.depth} levels at most)` });
    if (e instanceof TooManyAliases) throw fail({ path: '', message: `YAML aliases expand to more than ${spec.aliases} copies (an alias bomb?): write the values out` });
    if (e instanceof RecursiveAlias) throw fail({ path: '', message: 'a YAML alias repeats a node that contains it (an endless value): write the values out' });
    if (e instanceof yaml.YAMLException) throw new InputFileError(file, explain(text, multi, e));
    throw e;
  }
  docs.forEach((doc, d) => checkNesting(file, doc, kind, { shared: aliases.used(), document: multi ? d + 1 : undefined }));
  return docs;
}

/** Reads, decodes and parses an input file with the kind's limits. */
export function readYamlInput(file: string, kind: LimitedInput, multi: boolean): unknown[] {
  return parseInputYaml(file, decodeInput(file, readInputBytes(file, kind)), kind, multi);
}
