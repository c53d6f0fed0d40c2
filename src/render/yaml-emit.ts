import { Document } from 'yaml';

/**
 * A direct emitter for the documents `toYaml` writes: JSON data (plain objects, arrays, strings,
 * numbers, booleans, null) in block style, with the output of the `yaml` package's `stringify` under
 * the options of `toYaml` (lineWidth 0, minContentWidth 0, aliasDuplicateObjects false, indentSeq
 * true), byte for byte. The package builds a node tree of every document and runs a general
 * stringifier over it; writing a fleet, that was a third of synth's time. This walks the value once.
 *
 * It covers what manifests hold, and gives up (undefined: the caller uses the package) on anything
 * it does not reproduce exactly: control characters (double-quoted escapes), a multi-line string
 * that must be quoted, a key on several lines or over 1024 characters (explicit keys), document
 * markers, non-plain objects, undefined array items, BigInt, deep nesting. Every rule below mirrors
 * yaml 2.x `stringify/stringifyString.js` (plainString, quotedString, blockString) and
 * `stringifyPair.js` / `stringifyCollection.js`; test/render/yaml-emit.test.ts compares the two on
 * every rendered object and on generated values.
 */

/** Thrown to give up on a document; caught by emitYaml only. */
class Unsupported extends Error {}

function unsupported(): never {
  throw new Unsupported();
}

/** The core schema's tests for scalars of other types than string (null, bool, int, float): a plain string matching one is quoted. */
const TYPED: readonly RegExp[] = (() => {
  const schema = new Document().schema;
  return [...schema.tags, ...(schema.compat ?? [])]
    .filter((t) => t.default && t.tag !== 'tag:yaml.org,2002:str' && 'test' in t && t.test instanceof RegExp)
    .map((t) => (t as { test: RegExp }).test);
})();

/** Characters that force double-quoted escapes. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u{D800}-\u{DFFF}]/u;
/** What a plain scalar may not be (yaml's plainString). */
const NOT_PLAIN = /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$/;
const DOCUMENT_MARKER = /^(%|---|\.\.\.)/m;
const BLOCK_END_NEWLINES = /(^|(?<!\n))\n+(?!\n|$)/g;
const MAX_DEPTH = 128;

function isTyped(s: string): boolean {
  return TYPED.some((t) => t.test(s));
}

/** A quoted single-line scalar: single quotes when it holds double quotes only, else JSON-style double quotes. */
function quoted(value: string): string {
  if (value.includes('"') && !value.includes("'")) return `'${value}'`;
  return JSON.stringify(value);
}

/** A literal block scalar (`|`, `|-`, `|+`, with an indentation indicator when it starts with a space). */
function block(text: string, indent: string): string {
  // a block cannot end in whitespace after its last line break: the package quotes it
  if (/\n[\t ]+$/.test(text)) unsupported();
  let value = text;
  let endStart = value.length;
  for (; endStart > 0; --endStart) {
    const ch = value[endStart - 1];
    if (ch !== '\n' && ch !== '\t' && ch !== ' ') break;
  }
  let end = value.substring(endStart);
  const endNl = end.indexOf('\n');
  const chomp = endNl === -1 ? '-' : value === end || endNl !== end.length - 1 ? '+' : '';
  if (end) {
    value = value.slice(0, -end.length);
    if (end[end.length - 1] === '\n') end = end.slice(0, -1);
    end = end.replace(BLOCK_END_NEWLINES, `$&${indent}`);
  }
  let startWithSpace = false;
  let startEnd = 0;
  let startNl = -1;
  for (; startEnd < value.length; ++startEnd) {
    const ch = value[startEnd];
    if (ch === ' ') startWithSpace = true;
    else if (ch === '\n') startNl = startEnd;
    else break;
  }
  let start = value.substring(0, startNl < startEnd ? startNl + 1 : startEnd);
  if (start) {
    value = value.substring(start.length);
    start = start.replace(/\n+/g, `$&${indent}`);
  }
  // the indentation indicator is 2 wherever the scalar is indented (never at the document root here)
  const header = `${startWithSpace ? '2' : ''}${chomp}`;
  return `|${header}\n${indent}${start}${value.replace(/\n+/g, `$&${indent}`)}${end}`;
}

/** A string value (not a key) at `indent` (the indentation of its block lines). */
function stringValue(value: string, indent: string): string {
  if (CONTROL.test(value)) unsupported();
  if (value.includes('\n')) return block(value, indent);
  if (NOT_PLAIN.test(value) || isTyped(value)) return quoted(value);
  return value;
}

/** A mapping key (an implicit key: one line, at most 1024 characters). */
function key(value: string): string {
  if (CONTROL.test(value) || value.includes('\n') || DOCUMENT_MARKER.test(value)) unsupported();
  const text = NOT_PLAIN.test(value) || isTyped(value) ? quoted(value) : value;
  if (text.length > 1024) unsupported();
  return text;
}

function scalar(v: unknown, indent: string): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string': return stringValue(v, indent);
    case 'boolean': return v ? 'true' : 'false';
    case 'number':
      if (Object.is(v, -0)) return '-0';
      if (Number.isFinite(v)) return JSON.stringify(v);
      return Number.isNaN(v) ? '.nan' : v < 0 ? '-.inf' : '.inf';
    default: return unsupported();
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** The pairs of a map whose lines are at `indent` (the first line without it), or undefined when it is empty. */
function map(obj: Record<string, unknown>, indent: string, depth: number): string | undefined {
  if (depth > MAX_DEPTH) unsupported();
  const inner = `${indent}  `;
  let out: string | undefined;
  for (const k of Object.keys(obj)) {
    const v = obj[k];
    if (v === undefined) continue;
    let line = `${key(k)}:`;
    if (Array.isArray(v)) {
      const body = seq(v, inner, depth + 1);
      line += body === undefined ? ' []' : `\n${inner}${body}`;
    } else if (typeof v === 'object' && v !== null) {
      if (!isPlainObject(v)) unsupported();
      const body = map(v, inner, depth + 1);
      line += body === undefined ? ' {}' : `\n${inner}${body}`;
    } else {
      line += ` ${scalar(v, inner)}`;
    }
    out = out === undefined ? line : `${out}\n${indent}${line}`;
  }
  return out;
}

/** The items of a sequence whose `- ` lines are at `indent` (the first without it), or undefined when it is empty. */
function seq(items: readonly unknown[], indent: string, depth: number): string | undefined {
  if (depth > MAX_DEPTH) unsupported();
  const inner = `${indent}  `;
  let out: string | undefined;
  for (let i = 0; i < items.length; i++) {
    const v = items[i];
    let line: string;
    if (v === undefined || !(i in items)) unsupported();
    if (Array.isArray(v)) {
      line = `- ${seq(v, inner, depth + 1) ?? '[]'}`;
    } else if (typeof v === 'object' && v !== null) {
      if (!isPlainObject(v)) unsupported();
      line = `- ${map(v, inner, depth + 1) ?? '{}'}`;
    } else {
      line = `- ${scalar(v, inner)}`;
    }
    out = out === undefined ? line : `${out}\n${indent}${line}`;
  }
  return out;
}

/**
 * The document `stringify(value, { lineWidth: 0, minContentWidth: 0, aliasDuplicateObjects: false,
 * indentSeq: true })` of the `yaml` package would write for a map or a sequence of JSON data, or
 * undefined when the value holds something this emitter leaves to the package.
 */
export function emitYaml(value: unknown): string | undefined {
  try {
    if (Array.isArray(value)) return `${seq(value, '', 0) ?? '[]'}\n`;
    if (isPlainObject(value)) return `${map(value, '', 0) ?? '{}'}\n`;
    return undefined;
  } catch (e) {
    if (e instanceof Unsupported) return undefined;
    throw e;
  }
}
