/**
 * What a CEL rule costs before it runs: the API server's idea (k8s.io/apiserver's CEL cost estimator: every step of a
 * rule weighted by the size of what it reads, each comprehension by the elements it walks, and a rule refused when its
 * estimate passes the budget) applied to the value the rule is about to read. The API server estimates from the
 * schema's maxItems, maxLength and maxProperties when a CRD is written, and counts the real cost while a rule runs
 * (per call at most PER_CALL_LIMIT; all rules of one object at most OBJECT_BUDGET); a rule of a CRD we are handed
 * (upgrade-plan --from-crds, --to-crds) has no bound of ours but this one, so it is estimated from the sizes of the
 * value itself, and not run past the budgets: a nested walk over a list, or a value that doubles with each
 * `cel.bind`, is stopped by its estimate, never by the machine.
 *
 * The unit is a step (a node of the rule evaluated once) plus an element of a string, list or map read or made; an
 * estimate is an upper bound: a step is counted for every element a comprehension could walk, whether or not
 * `exists` stops early.
 */

/** The API server's limit of one evaluation of one rule (apiextensions-apiserver PerCallLimit). */
export const CEL_PER_CALL_LIMIT = 1_000_000;
/** The API server's budget of all the rules of one object (apiextensions-apiserver RuntimeCELCostBudget). */
export const CEL_OBJECT_BUDGET = 10_000_000;

/** What an expression's value may be: its largest size, and the values it can take when they are known (of `self`). */
interface Shape {
  /** Characters of a string, elements of a list, entries of a map; 1 for a scalar. */
  readonly size: number;
  /** The concrete values it can be (derived from `self`), when known. */
  readonly values?: readonly unknown[];
  /** Any element, when the values are not known (a list the rule builds). */
  readonly item?: Shape;
}

interface Estimate {
  readonly cost: number;
  readonly shape: Shape;
}

/** A node of the library's parse tree (`parse(...).ast`): an operator and its arguments. */
interface Node {
  readonly op: string;
  readonly args: unknown;
}

const isNode = (n: unknown): n is Node => typeof n === 'object' && n !== null && !Array.isArray(n) && typeof (n as Node).op === 'string';

const SCALAR: Shape = { size: 1 };

function sizeOf(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (Array.isArray(v)) return v.length;
  if (v instanceof Map) return v.size;
  if (typeof v === 'object' && v !== null) return Object.keys(v).length;
  return 1;
}

function shapeOf(values: readonly unknown[]): Shape {
  return { size: values.reduce<number>((m, v) => Math.max(m, sizeOf(v)), 0), values };
}

/** The shape of any of several (the largest of each). */
function merge(shapes: readonly Shape[]): Shape {
  if (shapes.length === 0) return SCALAR;
  const known = shapes.every((s) => s.values !== undefined);
  const items = shapes.map((s) => s.item).filter((i): i is Shape => i !== undefined);
  return {
    size: Math.max(...shapes.map((s) => s.size)),
    ...(known ? { values: shapes.flatMap((s) => s.values!) } : {}),
    ...(items.length > 0 ? { item: merge(items) } : {}),
  };
}

/** Any element of a list (or key of a map, which a comprehension over a map walks). */
function elementsOf(s: Shape): Shape {
  if (s.values !== undefined) {
    return shapeOf(s.values.flatMap((v) => (Array.isArray(v) ? v : v instanceof Map ? [...v.keys()] : typeof v === 'object' && v !== null ? Object.keys(v) : [])));
  }
  // unknown: an element is at most as large as the whole
  return s.item ?? { size: s.size };
}

/** A field (or map value, or list element by index) of a value. */
function memberOf(s: Shape, key: unknown): Shape {
  if (s.values === undefined) return s.item ?? { size: s.size };
  return shapeOf(s.values.flatMap((v) => {
    if (Array.isArray(v)) return typeof key === 'bigint' || typeof key === 'number' ? [v[Number(key)]] : v;
    if (v instanceof Map) return v.has(key) ? [v.get(key)] : [...v.values()];
    if (typeof v === 'object' && v !== null) return typeof key === 'string' ? (key in v ? [(v as Record<string, unknown>)[key]] : []) : Object.values(v);
    return [];
  }).filter((x) => x !== undefined));
}

/** The macros that walk a list: a step for each element of the receiver. */
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/** Saturating sum and product: an estimate past any budget stays finite and comparable. */
const add = (...xs: number[]) => Math.min(Number.MAX_SAFE_INTEGER, xs.reduce((a, b) => a + b, 0));
const times = (a: number, b: number) => Math.min(Number.MAX_SAFE_INTEGER, a * b);

function estimate(node: unknown, vars: ReadonlyMap<string, Shape>): Estimate {
  if (!isNode(node)) return { cost: 1, shape: SCALAR };
  const args = node.args;
  const arr = Array.isArray(args) ? (args as unknown[]) : [];
  switch (node.op) {
    case 'value':
      return { cost: 1, shape: shapeOf([args]) };
    case 'id':
      return { cost: 1, shape: vars.get(String(args)) ?? SCALAR };
    case '.':
    case '.?': {
      const r = estimate(arr[0], vars);
      return { cost: add(r.cost, 1), shape: memberOf(r.shape, arr[1]) };
    }
    case '[]':
    case '[?]': {
      const r = estimate(arr[0], vars);
      const i = estimate(arr[1], vars);
      const key = isNode(arr[1]) && arr[1].op === 'value' ? arr[1].args : undefined;
      return { cost: add(r.cost, i.cost, 1), shape: memberOf(r.shape, key) };
    }
    case 'list': {
      const items = arr.map((a) => estimate(a, vars));
      return { cost: add(1, ...items.map((e) => e.cost)), shape: { size: items.length, item: merge(items.map((e) => e.shape)) } };
    }
    case 'map': {
      const entries = (arr as unknown[][]).map((kv) => [estimate(kv[0], vars), estimate(kv[1], vars)]);
      return { cost: add(1, ...entries.flat().map((e) => e.cost)), shape: { size: entries.length, item: merge(entries.map(([k]) => k.shape)) } };
    }
    case 'rcall':
    case 'call':
      return call(node, vars);
    case '?:': {
      const [c, a, b] = arr.map((x) => estimate(x, vars));
      return { cost: add(1, c.cost, Math.max(a.cost, b.cost)), shape: merge([a.shape, b.shape]) };
    }
    case '!_':
    case '-_': {
      const a = estimate(args, vars);
      return { cost: add(1, a.cost), shape: SCALAR };
    }
    default: {
      // a binary operator: `+` makes a string or list as long as both, a comparison or `in` reads both
      const [l, r] = arr.map((x) => estimate(x, vars));
      if (!l || !r) return { cost: 1, shape: SCALAR };
      const read = add(l.shape.size, r.shape.size);
      if (node.op === '+') {
        const items = [l.shape.item, r.shape.item].filter((i): i is Shape => i !== undefined);
        return { cost: add(1, l.cost, r.cost, read), shape: { size: read, ...(items.length > 0 ? { item: merge(items) } : {}) } };
      }
      const reads = ['==', '!=', 'in', '<', '<=', '>', '>='].includes(node.op);
      return { cost: add(1, l.cost, r.cost, reads ? read : 0), shape: SCALAR };
    }
  }
}

/** A function, method or macro call: `name`, its receiver (methods), its arguments. */
function call(node: Node, vars: ReadonlyMap<string, Shape>): Estimate {
  const a = node.args as unknown[];
  const name = String(a[0]);
  const receiver = node.op === 'rcall' ? a[1] : undefined;
  const params = (node.op === 'rcall' ? a[2] : a[1]) as unknown[];
  const idOf = (n: unknown) => (isNode(n) && n.op === 'id' ? String(n.args) : undefined);
  // cel.bind(var, value, body): the body with the variable bound to the value
  if (name === 'bind' && idOf(receiver) === 'cel' && params.length === 3 && idOf(params[0]) !== undefined) {
    const value = estimate(params[1], vars);
    const body = estimate(params[2], new Map(vars).set(idOf(params[0])!, value.shape));
    return { cost: add(1, value.cost, body.cost), shape: body.shape };
  }
  // a comprehension: its body once for each element of the receiver
  if (receiver !== undefined && COMPREHENSIONS.has(name) && params.length >= 2 && idOf(params[0]) !== undefined) {
    const range = estimate(receiver, vars);
    const element = elementsOf(range.shape);
    const inner = new Map(vars).set(idOf(params[0])!, element);
    // two-variable forms bind the second name too (an index or key, and a value)
    const second = params.length === 3 && name !== 'map' ? idOf(params[1]) : undefined;
    if (second !== undefined) inner.set(second, element);
    const steps = params.slice(second !== undefined ? 2 : 1).map((p) => estimate(p, inner));
    const n = range.shape.size;
    const each = add(1, ...steps.map((s) => s.cost));
    const last = steps[steps.length - 1].shape;
    const shape: Shape = name === 'map' ? { size: n, item: last } : name === 'filter' ? { size: n, item: element } : SCALAR;
    return { cost: add(range.cost, times(n, each)), shape };
  }
  // any other function reads its arguments once (size, contains, matches, split, join, ...): its result is no larger
  const all = [...(receiver === undefined ? [] : [receiver]), ...(Array.isArray(params) ? params : [])].map((p) => estimate(p, vars));
  const read = add(...all.map((e) => e.shape.size));
  const largest = all.length === 0 ? SCALAR : merge(all.map((e) => e.shape));
  return { cost: add(1, ...all.map((e) => e.cost), read), shape: name === 'split' ? { size: largest.size, item: { size: largest.size } } : largest };
}

/** The estimated cost of evaluating a parsed rule with its variables (`self`, `oldSelf`) bound to these values. */
export function celCost(ast: unknown, vars: Readonly<Record<string, unknown>>): number {
  const shapes = new Map(Object.entries(vars).map(([k, v]) => [k, shapeOf([v])]));
  return estimate(ast, shapes).cost;
}
