import { Environment, Optional, serialize } from '@marcbachmann/cel-js';
import { CEL_OBJECT_BUDGET, CEL_PER_CALL_LIMIT, celCost } from './cel-cost';
import { re2Find } from './patterns';

/**
 * The CEL rules of a CRD schema (`x-kubernetes-validations`), with the project's CEL library: compiled as the API
 * server compiles them when a CRD is written, and evaluated against an object the way it does on create: each rule
 * at every node the object has, with `self` the node's value. Transition rules (those reading `oldSelf`) run on
 * create only when they are `optionalOldSelf`, with `oldSelf` absent; the others are skipped, as on create.
 */

type Json = Record<string, unknown>;

/** The parts of a structural schema the CEL rules depend on. */
export interface CelSchemaNode {
  'type'?: string;
  'properties'?: Record<string, CelSchemaNode>;
  'items'?: CelSchemaNode;
  'additionalProperties'?: CelSchemaNode | boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-validations'?: { rule: string; message?: string; optionalOldSelf?: boolean }[];
}

export interface CelViolation {
  /** Field path of the node the rule is on (`<root>` for the object itself). */
  readonly path: string;
  readonly rule: string;
  readonly message: string;
}

export interface CelRuleCount {
  /** Rules evaluated on this object. */
  evaluated: number;
}

const env = new Environment({ enableOptionalTypes: true, unlistedVariablesAreDyn: true, homogeneousAggregateLiterals: false });

/**
 * The name CEL's `matches` is evaluated under. The library's own `matches` is JavaScript's backtracking RegExp (a
 * rule such as `self.matches('^(a+)+$')` takes time exponential in the value) and its registry refuses a second
 * overload of the name; this one is RE2, as the API server evaluates it (Go's regexp: linear in the value, Go's
 * syntax such as `(?i)`, no lookarounds or backreferences).
 */
const RE2_MATCHES = 'matchesRE2';

env.registerFunction(`string.${RE2_MATCHES}(string): bool`, (text: string, pattern: string) => {
  try {
    return re2Find(pattern, text);
  } catch (e) {
    throw new Error(`invalid regular expression ${JSON.stringify(pattern)} (RE2): ${(e as Error).message.split('\n')[0]}`);
  }
});

/** A node of the library's syntax tree (parse(...).ast): an operator and its arguments. */
interface CelAst {
  op: string;
  args: unknown;
}

const isAst = (n: unknown): n is CelAst => typeof n === 'object' && n !== null && !Array.isArray(n) && typeof (n as CelAst).op === 'string';

/** Renames every `x.matches(p)` call of a syntax tree to RE2_MATCHES; true when there was one. */
function renameMatches(node: unknown): boolean {
  if (Array.isArray(node)) return node.map(renameMatches).some(Boolean);
  if (!isAst(node)) return false;
  let found = false;
  if (node.op === 'rcall' && Array.isArray(node.args) && node.args[0] === 'matches') {
    node.args[0] = RE2_MATCHES;
    found = true;
  }
  return renameMatches(node.args) || found;
}

type Program = (vars: Record<string, unknown>) => unknown;
const programs = new Map<string, Program>();
/** The parse tree of each expression whose cost was estimated, as written (cel-cost.ts): parsed on first need. */
const trees = new Map<string, unknown>();

/**
 * An expression compiled once (a CRD's rules and a policy's expressions are evaluated at many nodes and objects),
 * its `matches` calls evaluated by RE2 (RE2_MATCHES): the tree is written back as CEL with the calls renamed. Only an
 * expression whose text names `matches` can call it (CEL has no escapes in names), so the others are parsed once and
 * not walked. Throws when it does not parse.
 */
export function celProgram(expression: string): Program {
  let program = programs.get(expression);
  if (!program) {
    const parsed = env.parse(expression);
    program = (expression.includes('matches') && renameMatches(parsed.ast) ? env.parse(serialize(parsed.ast)) : parsed) as Program;
    programs.set(expression, program);
  }
  return program;
}

/** The parse tree of a compiled expression as written (celProgram renames its `matches`; an evaluation annotates its own). */
function treeOf(expression: string): unknown {
  let tree = trees.get(expression);
  if (tree === undefined) {
    tree = env.parse(expression).ast;
    trees.set(expression, tree);
  }
  return tree;
}

/** An evaluation error's first line, in the words of the rule (RE2_MATCHES is `matches` there). */
export function celErrorText(e: unknown): string {
  return String((e as Error)?.message ?? e).split('\n')[0].split(RE2_MATCHES).join('matches');
}

/** Whether a rule compares with the stored object (a transition rule). */
export function isTransitionRule(rule: string): boolean {
  return /\boldSelf\b/.test(rule);
}

/** Why a rule does not compile (its first line), or undefined when it does. */
export function celCompileError(rule: string): string | undefined {
  try {
    env.parse(rule);
    return undefined;
  } catch (e) {
    return String((e as Error).message ?? e).split('\n')[0];
  }
}

/** A rule's estimated cost with its variables (0 when it does not parse: its evaluation says why). */
function costOf(rule: string, vars: Json): number {
  try {
    celProgram(rule);
  } catch {
    return 0;
  }
  return celCost(treeOf(rule), vars);
}

/** JSON as CEL sees it under a schema: integers are CEL ints (BigInt). */
function celValue(value: unknown, schema: CelSchemaNode | undefined): unknown {
  if (Array.isArray(value)) return value.map((v) => celValue(v, schema?.items));
  if (value !== null && typeof value === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) {
      const child = schema?.properties?.[k] ?? (typeof schema?.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      out[k] = celValue(v, child);
    }
    return out;
  }
  if (typeof value === 'number' && schema?.type === 'integer') return BigInt(value);
  return value;
}

/**
 * Every create-time rule the object breaks (empty: the API server's CEL admits it); `count` gets the rules run. Each
 * evaluation is bounded as the API server bounds it (cel-cost.ts): a rule whose estimated cost on the value passes the
 * per-call limit is refused without running, and once the object's rules together pass its budget the rest are not run
 * (one violation says so).
 */
export function celViolations(schema: CelSchemaNode, object: unknown, count: CelRuleCount = { evaluated: 0 }): CelViolation[] {
  const out: CelViolation[] = [];
  let spent = 0;
  let exhausted = false;
  // `self`: the value as CEL sees it, converted once for the whole object and walked beside it
  const walk = (node: CelSchemaNode, value: unknown, self: unknown, path: string) => {
    if (value === undefined || value === null || exhausted) return;
    for (const r of node['x-kubernetes-validations'] ?? []) {
      const transition = isTransitionRule(r.rule);
      if (transition && !r.optionalOldSelf) continue;
      count.evaluated++;
      const vars: Json = { self };
      if (transition) vars.oldSelf = Optional.none();
      const at = path || '<root>';
      const cost = costOf(r.rule, vars);
      if (cost > CEL_PER_CALL_LIMIT) {
        out.push({ path: at, rule: r.rule, message: `the rule's estimated cost on this value, ${cost}, passes the API server's per-call CEL cost limit of ${CEL_PER_CALL_LIMIT}: refused, not run` });
        continue;
      }
      spent += cost;
      if (spent > CEL_OBJECT_BUDGET) {
        exhausted = true;
        out.push({ path: at, rule: r.rule, message: `the object's CEL rules together pass the API server's cost budget of ${CEL_OBJECT_BUDGET} (estimated on its values): this rule and the rest not run` });
        return;
      }
      let ok: unknown;
      try {
        ok = celProgram(r.rule)(vars);
      } catch (e) {
        ok = `error: ${celErrorText(e)}`;
      }
      if (ok !== true) out.push({ path: path || '<root>', rule: r.rule, message: r.message ?? String(ok) });
    }
    if (Array.isArray(value)) {
      if (node.items) value.forEach((v, i) => walk(node.items!, v, (self as unknown[])[i], `${path}[${i}]`));
      return;
    }
    if (typeof value !== 'object') return;
    for (const [k, v] of Object.entries(value as Json)) {
      const child = node.properties?.[k] ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
      if (child) walk(child, v, (self as Json)[k], path ? `${path}.${k}` : k);
    }
  };
  walk(schema, object, celValue(object, schema), '');
  return out;
}
