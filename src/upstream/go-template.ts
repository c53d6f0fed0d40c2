import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

/**
 * A small static evaluator of Go templates as Helm charts use them: enough to tell which documents a
 * chart renders with given values, and their apiVersion, kind and namespace. It is not Helm: any
 * expression it cannot evaluate yields UNKNOWN, an `if` on UNKNOWN renders both branches
 * (over-approximation) and the reason is recorded.
 */

/** A value the evaluator cannot know (a function it does not implement, a lookup, a file). */
export class Unknown {
  constructor(readonly why: string) {}
}

/** Placeholder written into the output where an unknown value is printed. */
export const UNKNOWN_TEXT = '\u0000unknown\u0000';

type Value = unknown;

// ---------------------------------------------------------------------------------------------
// Lexing of the template text into text and actions

export interface TextNode { readonly t: 'text'; readonly text: string }
interface ActionNode { readonly t: 'action'; readonly pipe: Pipeline }
interface IfNode { readonly t: 'if'; readonly branches: { cond: Pipeline; body: Node[] }[]; elseBody: Node[] }
interface WithNode { readonly t: 'with'; readonly pipe: Pipeline; readonly body: Node[]; elseBody: Node[] }
interface RangeNode { readonly t: 'range'; readonly pipe: Pipeline; readonly body: Node[]; elseBody: Node[] }
interface TemplateNode { readonly t: 'template'; readonly name: string; readonly arg?: Pipeline }
export type Node = TextNode | ActionNode | IfNode | WithNode | RangeNode | TemplateNode;

interface RawAction { readonly text: string; readonly trimLeft: boolean; readonly trimRight: boolean }

/** Splits a template into text and action pieces, applying `{{-` / `-}}` whitespace trimming. */
function lex(src: string): (string | RawAction)[] {
  const out: (string | RawAction)[] = [];
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    if (open < 0) {
      out.push(src.slice(i));
      break;
    }
    out.push(src.slice(i, open));
    let j = open + 2;
    let quote: string | undefined;
    for (; j < src.length; j++) {
      const c = src[j];
      if (quote) {
        if (c === '\\' && quote === '"') j++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === '`') {
        quote = c;
      } else if (c === '/' && src[j + 1] === '*') {
        const end = src.indexOf('*/', j + 2);
        j = end < 0 ? src.length : end + 1;
      } else if (c === '}' && src[j + 1] === '}') {
        break;
      }
    }
    let body = src.slice(open + 2, j);
    const trimLeft = /^-\s/.test(body) || body === '-';
    const trimRight = /\s-$/.test(body);
    if (trimLeft) body = body.slice(1);
    if (trimRight) body = body.slice(0, -1);
    out.push({ text: body.trim(), trimLeft, trimRight });
    i = j + 2;
  }
  // Apply trimming to the neighbouring text (trimEnd/trimStart: a regex would be quadratic on large CRD texts).
  for (let k = 0; k < out.length; k++) {
    const a = out[k];
    if (typeof a === 'string') continue;
    if (a.trimLeft && typeof out[k - 1] === 'string') out[k - 1] = (out[k - 1] as string).trimEnd();
    if (a.trimRight && typeof out[k + 1] === 'string') out[k + 1] = (out[k + 1] as string).trimStart();
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Expressions

type Tok = { k: 'str'; v: string } | { k: 'num'; v: number } | { k: 'field'; v: string[] } | { k: 'var'; name: string; fields: string[] }
| { k: 'id'; v: string } | { k: 'punct'; v: '(' | ')' | '|' | ':=' | '=' | ',' } | { k: 'dotfields'; v: string[] };

function tokenize(s: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  const ident = /[A-Za-z0-9_]/;
  while (i < s.length) {
    const c = s[i];
    if (/\s/.test(c)) { i++; continue; }
    if (c === '"') {
      let j = i + 1;
      let v = '';
      while (j < s.length && s[j] !== '"') {
        if (s[j] === '\\') {
          const n = s[j + 1];
          v += n === 'n' ? '\n' : n === 't' ? '\t' : n;
          j += 2;
        } else {
          v += s[j++];
        }
      }
      toks.push({ k: 'str', v });
      i = j + 1;
      continue;
    }
    if (c === '`') {
      const j = s.indexOf('`', i + 1);
      toks.push({ k: 'str', v: s.slice(i + 1, j) });
      i = j + 1;
      continue;
    }
    if (c === '(' || c === ')' || c === '|' || c === ',') { toks.push({ k: 'punct', v: c }); i++; continue; }
    if (c === ':' && s[i + 1] === '=') { toks.push({ k: 'punct', v: ':=' }); i += 2; continue; }
    if (c === '=') { toks.push({ k: 'punct', v: '=' }); i++; continue; }
    if (c === '.' || c === '$') {
      let j = i;
      let name = '';
      if (c === '$') {
        j++;
        while (j < s.length && ident.test(s[j])) name += s[j++];
      }
      const fields: string[] = [];
      while (s[j] === '.' && j + 1 <= s.length) {
        j++;
        let f = '';
        while (j < s.length && ident.test(s[j])) f += s[j++];
        if (f !== '') fields.push(f);
      }
      if (c === '$') toks.push({ k: 'var', name, fields });
      else toks.push({ k: 'field', v: fields });
      i = j;
      continue;
    }
    if (c === ')' ) { i++; continue; }
    if (/[0-9-]/.test(c)) {
      let j = i + 1;
      while (j < s.length && /[0-9.]/.test(s[j])) j++;
      toks.push({ k: 'num', v: Number(s.slice(i, j)) });
      i = j;
      continue;
    }
    if (ident.test(c)) {
      let j = i;
      while (j < s.length && ident.test(s[j])) j++;
      toks.push({ k: 'id', v: s.slice(i, j) });
      i = j;
      continue;
    }
    // A field access on a parenthesised pipeline: `(...).Foo`
    i++;
  }
  return toks;
}

type Operand = { k: 'lit'; v: Value } | { k: 'field'; path: string[] } | { k: 'var'; name: string; path: string[] }
| { k: 'fn'; name: string } | { k: 'sub'; pipe: Pipeline; path: string[] };
interface Command { readonly args: Operand[] }
/** A pipeline, optionally declaring or assigning variables (`$x := ...`, `$k, $v := ...`). */
export interface Pipeline { readonly decl: string[]; readonly assign: boolean; readonly cmds: Command[] }

function parsePipeline(toks: Tok[], pos = { i: 0 }, nested = false): Pipeline {
  const decl: string[] = [];
  let assign = false;
  // variable declarations
  let look = pos.i;
  const names: string[] = [];
  while (toks[look]?.k === 'var' && (toks[look] as { fields: string[] }).fields.length === 0) {
    names.push((toks[look] as { name: string }).name);
    look++;
    if (toks[look]?.k === 'punct' && (toks[look] as { v: string }).v === ',') { look++; continue; }
    break;
  }
  const p = toks[look];
  if (names.length > 0 && p?.k === 'punct' && (p.v === ':=' || p.v === '=')) {
    decl.push(...names);
    assign = p.v === '=';
    pos.i = look + 1;
  }
  const cmds: Command[] = [];
  let args: Operand[] = [];
  while (pos.i < toks.length) {
    const t = toks[pos.i];
    if (t.k === 'punct' && t.v === ')') {
      if (nested) break;
      pos.i++;
      continue;
    }
    pos.i++;
    if (t.k === 'punct' && t.v === '|') {
      cmds.push({ args });
      args = [];
    } else if (t.k === 'punct' && t.v === '(') {
      const sub = parsePipeline(toks, pos, true);
      pos.i++; // ')'
      // `(...).Field.Path`: a field token right after the parenthesis
      let path: string[] = [];
      const next = toks[pos.i];
      if (next?.k === 'field' && next.v.length > 0 && sub) {
        path = next.v;
        pos.i++;
      }
      args.push({ k: 'sub', pipe: sub, path });
    } else if (t.k === 'str' || t.k === 'num') {
      args.push({ k: 'lit', v: t.v });
    } else if (t.k === 'field') {
      args.push({ k: 'field', path: t.v });
    } else if (t.k === 'var') {
      args.push({ k: 'var', name: t.name, path: t.fields });
    } else if (t.k === 'id') {
      if (t.v === 'true' || t.v === 'false') args.push({ k: 'lit', v: t.v === 'true' });
      else if (t.v === 'nil') args.push({ k: 'lit', v: null });
      else args.push({ k: 'fn', name: t.v });
    }
  }
  if (args.length > 0) cmds.push({ args });
  return { decl, assign, cmds };
}

export function parseExpression(s: string): Pipeline {
  return parsePipeline(tokenize(s));
}

// ---------------------------------------------------------------------------------------------
// Parsing of the node tree

interface Parsed {
  readonly nodes: Node[];
  readonly defines: Map<string, Node[]>;
}

/** Deepest indentation a document head is read at (documentHeads). */
const HEAD_INDENT = 4;

/**
 * Drops the whole lines of a text piece that are indented deeper than a document head is read
 * (a CRD's schema is megabytes of them); the partial first and last lines are kept as they are.
 */
function headLines(text: string): string {
  const lines = text.split('\n');
  if (lines.length <= 2) return text;
  const inner = lines.slice(1, -1).filter((l) => /^\s*$/.test(l) ? false : l.length - l.trimStart().length <= HEAD_INDENT || l.startsWith('---'));
  return [lines[0], ...inner, lines[lines.length - 1]].join('\n');
}

/** Parses template text into nodes; `define`d templates go to `defines`. */
export function parseTemplate(src: string, defines: Map<string, Node[]> = new Map()): Parsed {
  const pieces = lex(src);
  let k = 0;
  function block(): { nodes: Node[]; end: string } {
    const nodes: Node[] = [];
    while (k < pieces.length) {
      const p = pieces[k++];
      if (typeof p === 'string') {
        if (p !== '') nodes.push({ t: 'text', text: headLines(p) });
        continue;
      }
      const a = p.text;
      if (a.startsWith('/*') || a === '') continue;
      const word = /^([a-z]+)\b\s*([\s\S]*)$/.exec(a);
      const kw = word?.[1];
      const rest = word?.[2] ?? '';
      if (kw === 'end') return { nodes, end: 'end' };
      if (kw === 'else') return { nodes, end: a };
      if (kw === 'if') {
        const node: IfNode = { t: 'if', branches: [], elseBody: [] };
        let cond = parseExpression(rest);
        for (;;) {
          const b = block();
          node.branches.push({ cond, body: b.nodes });
          const m = /^else\s+if\s+([\s\S]*)$/.exec(b.end);
          if (m) { cond = parseExpression(m[1]); continue; }
          if (b.end.startsWith('else')) node.elseBody = block().nodes;
          break;
        }
        nodes.push(node);
      } else if (kw === 'with' || kw === 'range') {
        const body = block();
        let elseBody: Node[] = [];
        const m = /^else\s+with\s+([\s\S]*)$/.exec(body.end);
        if (m) {
          // `else with X` is `else` + a nested with
          const inner = block();
          elseBody = [{ t: 'with', pipe: parseExpression(m[1]), body: inner.nodes, elseBody: inner.end.startsWith('else') ? block().nodes : [] }];
        } else if (body.end.startsWith('else')) {
          elseBody = block().nodes;
        }
        nodes.push(kw === 'with'
          ? { t: 'with', pipe: parseExpression(rest), body: body.nodes, elseBody }
          : { t: 'range', pipe: parseExpression(rest), body: body.nodes, elseBody });
      } else if (kw === 'define') {
        const name = /^"([^"]*)"/.exec(rest)?.[1] ?? '';
        defines.set(name, block().nodes);
      } else if (kw === 'block') {
        const m = /^"([^"]*)"\s*([\s\S]*)$/.exec(rest);
        const body = block().nodes;
        if (m) {
          if (!defines.has(m[1])) defines.set(m[1], body);
          nodes.push({ t: 'template', name: m[1], arg: parseExpression(m[2]) });
        }
      } else if (kw === 'template') {
        const m = /^"([^"]*)"\s*([\s\S]*)$/.exec(rest);
        if (m) nodes.push({ t: 'template', name: m[1], arg: m[2] ? parseExpression(m[2]) : undefined });
      } else if (kw === 'break' || kw === 'continue') {
        // loop control does not change which documents exist
      } else {
        nodes.push({ t: 'action', pipe: parseExpression(a) });
      }
    }
    return { nodes, end: 'eof' };
  }
  const nodes = block().nodes;
  return { nodes, defines };
}

// ---------------------------------------------------------------------------------------------
// Evaluation

function isMap(v: Value): v is Record<string, Value> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Unknown);
}

/** Go template truthiness; undefined for an unknown value. */
export function truth(v: Value): boolean | undefined {
  if (v instanceof Unknown) return undefined;
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isMap(v)) return Object.keys(v).length > 0;
  return true;
}

function toText(v: Value): string {
  if (v instanceof Unknown) return UNKNOWN_TEXT;
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return UNKNOWN_TEXT;
  return String(v);
}

function field(v: Value, path: readonly string[]): Value {
  let cur = v;
  for (const f of path) {
    if (cur instanceof Unknown) return cur;
    if (isMap(cur)) cur = cur[f];
    else if (cur === undefined || cur === null) return undefined;
    else return new Unknown(`field .${f} of a non-map`);
  }
  return cur;
}

function goKind(v: Value): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float64';
  if (Array.isArray(v)) return 'slice';
  if (isMap(v)) return 'map';
  return 'invalid';
}

function compare(a: Value, b: Value): number | Unknown {
  if (a instanceof Unknown) return a;
  if (b instanceof Unknown) return b;
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Environment of one evaluation: the chart's named templates and the notes collected. */
export interface EvalEnv {
  readonly defines: Map<string, Node[]>;
  /** Why something could not be evaluated (deduplicated by the caller). */
  readonly notes: string[];
  /** `fail` calls reached on the evaluated path: the chart refuses these values. */
  readonly failures: string[];
  /** Where we are, for notes. */
  file: string;
  /** `.Capabilities.APIVersions.Has`; undefined: unknown. */
  readonly hasApiVersion?: (gvk: string) => boolean | undefined;
  depth: number;
}

type Scope = Map<string, Value>;

const MAX_INCLUDE_DEPTH = 30;

function callFn(name: string, args: Value[], env: EvalEnv, scopes: Scope[]): Value {
  const unknownArg = args.find((a) => a instanceof Unknown) as Unknown | undefined;
  switch (name) {
    case 'not': {
      const t = truth(args[0]);
      return t === undefined ? unknownArg ?? new Unknown('not') : !t;
    }
    case 'and': {
      for (const a of args) {
        const t = truth(a);
        if (t === undefined) return a;
        if (!t) return a;
      }
      return args[args.length - 1];
    }
    case 'or': {
      let unknown: Value;
      for (const a of args) {
        const t = truth(a);
        if (t === true) return a;
        if (t === undefined) unknown ??= a;
      }
      return unknown ?? args[args.length - 1];
    }
    case 'eq':
      if (unknownArg) return unknownArg;
      return args.slice(1).some((b) => b === args[0] || (args[0] == null && b == null));
    case 'ne':
      if (unknownArg) return unknownArg;
      return !(args[0] === args[1] || (args[0] == null && args[1] == null));
    case 'lt': case 'le': case 'gt': case 'ge': {
      const c = compare(args[0], args[1]);
      if (c instanceof Unknown) return c;
      return name === 'lt' ? c < 0 : name === 'le' ? c <= 0 : name === 'gt' ? c > 0 : c >= 0;
    }
    case 'default': {
      const v = args[1];
      const t = truth(v);
      if (t === undefined) return v;
      return t ? v : args[0];
    }
    case 'empty': {
      const t = truth(args[0]);
      return t === undefined ? args[0] : !t;
    }
    case 'hasKey':
      if (unknownArg) return unknownArg;
      return isMap(args[0]) && Object.prototype.hasOwnProperty.call(args[0], String(args[1]));
    case 'has':
      if (unknownArg) return unknownArg;
      return Array.isArray(args[1]) && args[1].includes(args[0]);
    case 'kindIs':
      if (unknownArg) return unknownArg;
      return goKind(args[1]) === args[0];
    case 'typeIs':
      if (unknownArg) return unknownArg;
      return goKind(args[1]) === args[0];
    case 'contains':
      if (unknownArg) return unknownArg;
      return String(args[1] ?? '').includes(String(args[0] ?? ''));
    case 'hasPrefix':
      if (unknownArg) return unknownArg;
      return String(args[1] ?? '').startsWith(String(args[0] ?? ''));
    case 'hasSuffix':
      if (unknownArg) return unknownArg;
      return String(args[1] ?? '').endsWith(String(args[0] ?? ''));
    case 'quote': case 'squote': case 'toString':
      if (unknownArg) return unknownArg;
      return args.map((a) => toText(a)).join(' ');
    case 'int': case 'int64': case 'float64':
      if (unknownArg) return unknownArg;
      return Number(args[0] ?? 0);
    case 'len':
      if (unknownArg) return unknownArg;
      return Array.isArray(args[0]) || typeof args[0] === 'string' ? args[0].length : isMap(args[0]) ? Object.keys(args[0]).length : 0;
    case 'trunc': {
      if (unknownArg) return unknownArg;
      const n = Number(args[0]);
      const s = String(args[1] ?? '');
      return n >= 0 ? s.slice(0, n) : s.slice(n);
    }
    case 'trimSuffix':
      if (unknownArg) return unknownArg;
      return String(args[1] ?? '').endsWith(String(args[0])) ? String(args[1]).slice(0, -String(args[0]).length || undefined) : String(args[1] ?? '');
    case 'trimPrefix':
      if (unknownArg) return unknownArg;
      return String(args[1] ?? '').startsWith(String(args[0])) ? String(args[1]).slice(String(args[0]).length) : String(args[1] ?? '');
    case 'trim':
      if (unknownArg) return unknownArg;
      return String(args[0] ?? '').trim();
    case 'lower': case 'upper':
      if (unknownArg) return unknownArg;
      return name === 'lower' ? String(args[0] ?? '').toLowerCase() : String(args[0] ?? '').toUpperCase();
    case 'replace':
      if (unknownArg) return unknownArg;
      return String(args[2] ?? '').split(String(args[0])).join(String(args[1]));
    case 'print':
      if (unknownArg) return unknownArg;
      return args.map(toText).join('');
    case 'printf': {
      if (unknownArg) return unknownArg;
      let n = 1;
      return String(args[0]).replace(/%[-0-9.]*[sdvq]/g, () => toText(args[n++]));
    }
    case 'required':
      return args[1];
    case 'dict': {
      const out: Record<string, Value> = {};
      for (let i = 0; i + 1 < args.length; i += 2) out[String(args[i])] = args[i + 1];
      return out;
    }
    case 'list':
      return [...args];
    case 'toYaml': case 'toJson': case 'toPrettyJson':
      if (unknownArg) return unknownArg;
      return args[0] === undefined ? '' : stringifyYaml(args[0]).trimEnd();
    case 'fromYaml': case 'fromJson':
      if (unknownArg) return unknownArg;
      try {
        return parseYaml(String(args[0] ?? '')) ?? {};
      } catch {
        return new Unknown(`${name} of an unparsable string`);
      }
    case 'nindent': case 'indent': {
      if (args[1] instanceof Unknown) return args[1];
      const pad = ' '.repeat(Number(args[0]));
      const text = toText(args[1]).split('\n').map((l) => pad + l).join('\n');
      return name === 'nindent' ? `\n${text}` : text;
    }
    case 'include': {
      if (args[0] instanceof Unknown) return args[0];
      return includeTemplate(String(args[0]), args[1], env);
    }
    case 'fail':
      env.failures.push(`${env.file}: ${toText(args[0])}`);
      return new Unknown('fail');
    case 'index': {
      let cur = args[0];
      for (const k of args.slice(1)) {
        if (k instanceof Unknown) return k;
        if (cur instanceof Unknown) return cur;
        cur = Array.isArray(cur) ? cur[Number(k)] : isMap(cur) ? cur[String(k)] : undefined;
      }
      return cur;
    }
    case 'ternary': {
      const t = truth(args[2]);
      return t === undefined ? args[2] : t ? args[0] : args[1];
    }
    case 'coalesce':
      for (const a of args) {
        const t = truth(a);
        if (t !== false) return a;
      }
      return undefined;
    default:
      return new Unknown(`function ${name} is not evaluated`);
  }
  void scopes;
}

function lookupVar(scopes: Scope[], name: string): Value {
  for (let i = scopes.length - 1; i >= 0; i--) if (scopes[i].has(name)) return scopes[i].get(name);
  return new Unknown(`variable $${name}`);
}

function evalOperand(o: Operand, dot: Value, env: EvalEnv, scopes: Scope[]): Value {
  switch (o.k) {
    case 'lit': return o.v;
    case 'field': {
      if (o.path[0] === 'Capabilities' && o.path[1] === 'APIVersions' && o.path[2] === 'Has') return { __method: 'Has' };
      return field(dot, o.path);
    }
    case 'var': {
      const base = o.name === '' ? lookupVar(scopes, '') : lookupVar(scopes, o.name);
      if (o.path[0] === 'Capabilities' && o.path[1] === 'APIVersions' && o.path[2] === 'Has') return { __method: 'Has' };
      return field(base, o.path);
    }
    case 'sub': return field(evalPipe(o.pipe, dot, env, scopes), o.path);
    case 'fn': return callFn(o.name, [], env, scopes);
  }
}

function evalCommand(c: Command, dot: Value, env: EvalEnv, scopes: Scope[], piped: Value[]): Value {
  const [head, ...rest] = c.args;
  if (head === undefined) return piped[0];
  const args = (): Value[] => [...rest.map((a) => evalOperand(a, dot, env, scopes)), ...piped];
  if (head.k === 'fn') return callFn(head.name, args(), env, scopes);
  const v = evalOperand(head, dot, env, scopes);
  if (isMap(v) && v.__method === 'Has') {
    const a = args()[0];
    if (a instanceof Unknown) return a;
    return env.hasApiVersion?.(String(a)) ?? new Unknown(`.Capabilities.APIVersions.Has "${String(a)}"`);
  }
  return v;
}

/** Evaluates a pipeline; declares its variables in the innermost scope. */
export function evalPipe(p: Pipeline, dot: Value, env: EvalEnv, scopes: Scope[]): Value {
  let v: Value;
  let first = true;
  for (const c of p.cmds) {
    v = evalCommand(c, dot, env, scopes, first ? [] : [v]);
    first = false;
  }
  if (p.decl.length === 1) {
    if (p.assign) {
      for (let i = scopes.length - 1; i >= 0; i--) {
        if (scopes[i].has(p.decl[0])) { scopes[i].set(p.decl[0], v); break; }
      }
    } else {
      scopes[scopes.length - 1].set(p.decl[0], v);
    }
  }
  return v;
}

function includeTemplate(name: string, arg: Value, env: EvalEnv): Value {
  const body = env.defines.get(name);
  if (!body) return new Unknown(`template "${name}" is not defined`);
  if (env.depth > MAX_INCLUDE_DEPTH) return new Unknown(`template "${name}" recursion`);
  env.depth++;
  try {
    return renderNodes(body, arg, env, [new Map([['', arg]])]);
  } finally {
    env.depth--;
  }
}

function note(env: EvalEnv, what: string, u: Unknown): void {
  env.notes.push(`${env.file}: ${what} could not be evaluated (${u.why}); both branches kept`);
}

/** Renders nodes to text. */
export function renderNodes(nodes: readonly Node[], dot: Value, env: EvalEnv, scopes: Scope[]): string {
  let out = '';
  for (const n of nodes) {
    switch (n.t) {
      case 'text':
        out += n.text;
        break;
      case 'action': {
        const v = evalPipe(n.pipe, dot, env, scopes);
        if (n.pipe.decl.length === 0) out += toText(v);
        break;
      }
      case 'template':
        out += toText(includeTemplate(n.name, n.arg ? evalPipe(n.arg, dot, env, scopes) : undefined, env));
        break;
      case 'if': {
        let done = false;
        for (const b of n.branches) {
          const inner: Scope[] = [...scopes, new Map()];
          const c = evalPipe(b.cond, dot, env, inner);
          const t = truth(c);
          if (t === undefined) {
            note(env, 'an if condition', c as Unknown);
            out += renderNodes(b.body, dot, env, inner);
            continue; // later branches may be taken too
          }
          if (t) {
            out += renderNodes(b.body, dot, env, inner);
            done = true;
            break;
          }
        }
        if (!done) out += renderNodes(n.elseBody, dot, env, [...scopes, new Map()]);
        break;
      }
      case 'with': {
        const inner: Scope[] = [...scopes, new Map()];
        const v = evalPipe(n.pipe, dot, env, inner);
        const t = truth(v);
        if (t === undefined) {
          note(env, 'a with value', v as Unknown);
          out += renderNodes(n.body, v, env, inner) + renderNodes(n.elseBody, dot, env, inner);
        } else {
          out += t ? renderNodes(n.body, v, env, inner) : renderNodes(n.elseBody, dot, env, inner);
        }
        break;
      }
      case 'range': {
        const inner: Scope[] = [...scopes, new Map()];
        const pipe: Pipeline = { ...n.pipe, decl: [] };
        const v = evalPipe(pipe, dot, env, inner);
        const [kName, vName] = n.pipe.decl.length === 2 ? n.pipe.decl : [undefined, n.pipe.decl[0]];
        const entries: [Value, Value][] = v instanceof Unknown ? [[v, v]]
          : Array.isArray(v) ? v.map((x, i) => [i, x])
            : isMap(v) ? Object.keys(v).sort().map((k) => [k, v[k]])
              : typeof v === 'number' ? Array.from({ length: v }, (_, i) => [i, i]) : [];
        if (v instanceof Unknown) note(env, 'a range', v);
        if (entries.length === 0) out += renderNodes(n.elseBody, dot, env, inner);
        for (const [k, x] of entries) {
          const s = new Map<string, Value>();
          if (kName) s.set(kName, k);
          if (vName) s.set(vName, x);
          out += renderNodes(n.body, x, env, [...scopes, s]);
        }
        break;
      }
    }
  }
  return out;
}
