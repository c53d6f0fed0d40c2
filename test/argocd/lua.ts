import * as luaparse from 'luaparse';
import { LuaFactory } from 'wasmoon';

/**
 * Argo CD's Lua environment for health checks, in a real Lua VM (wasmoon: the reference Lua 5.4 compiled to
 * WebAssembly). Argo CD v3.5.1 runs them in gopher-lua (Lua 5.1) without the standard libraries
 * (util/lua/lua.go: SkipOpenLibs, then only package, base, table and a safe os with time and date): the same is
 * left here, with the string metatable removed (gopher-lua has no string methods without its string library).
 * `obj` is the object as a Lua table, built the way Argo CD's decodeValue builds it (JSON null is nil).
 */
export interface LuaHealth {
  readonly status?: string;
  readonly message?: string;
}

/**
 * Argo CD's globals. With `now` (seconds since the epoch), the clock stands still there: os.time() and os.date(format)
 * without a time read it, as they read the real clock in Argo CD, so that a check bounding a wait gives the same answer
 * on every run (its health_test.yaml cases are written against that instant).
 */
function prelude(now?: number): string {
  if (now !== undefined && !Number.isSafeInteger(now)) throw new Error(`now: expected whole seconds since the epoch, got ${now}`);
  const clock = now === undefined
    ? 'package.loaded.os = { time = time, date = date }'
    : `local now = ${now}\npackage.loaded.os = { time = function(t) if t == nil then return now end return time(t) end, date = function(f, t) return date(f, t or now) end }`;
  return [
    'local time, date = os.time, os.date',
    'debug.setmetatable("", nil)',
    // v3.5.1 has no global os: OpenSafeOs registers its functions under "table" (util/lua/oslib_safe.go); only
    // require("os") answers them (the module it preloads)
    'string, math, io, utf8, coroutine, debug, os = nil, nil, nil, nil, nil, nil, nil',
    clock,
  ].join('\n');
}

/** A Lua string literal of any text (bytes escaped, so the same literal reads the same in Lua 5.1 and 5.4). */
function luaString(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, 'utf8')) {
    if (b === 0x22) out += '\\"';
    else if (b === 0x5c) out += '\\\\';
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\${b}`;
  }
  return `${out}"`;
}

/** `value` as a Lua expression: tables for objects and arrays (1-based), nil for null. */
export function luaValue(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`no JSON number: ${value}`);
    return String(value);
  }
  if (typeof value === 'string') return luaString(value);
  if (Array.isArray(value)) return `{${value.map(luaValue).join(', ')}}`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== null && v !== undefined);
    return `{${entries.map(([k, v]) => `[${luaString(k)}] = ${luaValue(v)}`).join(', ')}}`;
  }
  throw new Error(`cannot pass ${typeof value} to Lua`);
}

/** One Lua VM for a test file; each run sets `obj` afresh. */
export class HealthVm {
  /** A VM on the real clock, or with the clock standing at `now` (seconds since the epoch). */
  static async create(options: { readonly now?: number } = {}): Promise<HealthVm> {
    const engine = await new LuaFactory().createEngine({ openStandardLibs: true, injectObjects: false, enableProxy: false });
    await engine.doString(prelude(options.now));
    return new HealthVm(engine);
  }

  private constructor(private readonly engine: Awaited<ReturnType<LuaFactory['createEngine']>>) {}

  /** Runs a health script on an object, as Argo CD does: the script's return value is the health. */
  async run(script: string, obj: unknown): Promise<LuaHealth | undefined> {
    await this.engine.doString(`obj = ${luaValue(obj)}\n__health = (function()\n${script}\nend)()`);
    const hs = this.engine.global.get('__health') as LuaHealth | undefined | null;
    await this.engine.doString('obj, __health = nil, nil');
    return hs ?? undefined;
  }

  close(): void {
    this.engine.global.close();
  }
}

/** Globals a health script may read in Argo CD (base and table libraries, require of the safe os, the object). */
const ALLOWED_GLOBALS: Readonly<Record<string, readonly string[] | true>> = {
  obj: true,
  ipairs: true,
  pairs: true,
  next: true,
  type: true,
  error: true,
  tonumber: true,
  table: ['insert', 'remove', 'concat', 'sort'],
  // the safe os: `local os = require("os")`, as Argo CD's own scripts do
  require: true,
};

/**
 * What keeps a script inside Lua 5.1 and Argo CD's environment, besides running it in Lua 5.4: a Lua 5.1 parser
 * (luaparse) refuses 5.2+ syntax (`goto`, `//`, bitwise operators, `<const>`, labels), and every global the script
 * reads must exist in Argo CD's VM (no `string`, `math`, `utf8`; no 5.1-or-5.4-only base functions); no global is
 * written. Returns the problems, empty when there are none.
 */
export function lua51Problems(script: string): string[] {
  let ast: luaparse.Chunk;
  try {
    ast = luaparse.parse(script, { luaVersion: '5.1', scope: true, locations: true, comments: false });
  } catch (e) {
    return [`not Lua 5.1: ${(e as Error).message}`];
  }
  const problems: string[] = [];
  const at = (n: luaparse.Node) => `line ${n.loc?.start.line ?? '?'}`;
  const visit = (node: unknown, parent?: luaparse.Node) => {
    if (Array.isArray(node)) {
      node.forEach((n) => visit(n, parent));
      return;
    }
    if (!node || typeof node !== 'object' || typeof (node as { type?: unknown }).type !== 'string') return;
    const n = node as luaparse.Node;
    if (n.type === 'Identifier' && !(n as luaparse.Identifier & { isLocal?: boolean }).isLocal) {
      const name = (n as luaparse.Identifier).name;
      const allowed = ALLOWED_GLOBALS[name];
      const member = parent?.type === 'MemberExpression' && (parent as luaparse.MemberExpression).base === n ? (parent as luaparse.MemberExpression).identifier.name : undefined;
      if (allowed === undefined) {
        problems.push(`${at(n)}: global "${name}" does not exist in Argo CD's Lua environment`);
      } else if (Array.isArray(allowed) && (member === undefined || !allowed.includes(member))) {
        problems.push(`${at(n)}: "${name}${member ? `.${member}` : ''}" is not in Argo CD's Lua environment (${name} has ${allowed.join(', ')})`);
      }
    }
    if (n.type === 'AssignmentStatement') {
      for (const v of (n as luaparse.AssignmentStatement).variables) {
        if (v.type === 'Identifier' && !(v as luaparse.Identifier & { isLocal?: boolean }).isLocal) {
          problems.push(`${at(v)}: writes the global "${v.name}"`);
        }
      }
    }
    for (const [k, v] of Object.entries(n)) {
      if (k === 'loc' || k === 'range') continue;
      if (n.type === 'MemberExpression' && k === 'identifier') continue;
      if (n.type === 'TableKeyString' && k === 'key') continue;
      visit(v, n);
    }
  };
  visit(ast.body);
  return problems;
}
