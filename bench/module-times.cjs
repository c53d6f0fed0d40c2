// Where a command's start goes, module by module, without a profiler's distortion (under --cpu-prof V8 logs
// every function it compiles or deserializes, which triples a start):
//
//   node -r ./bench/module-times.cjs lib/src/bin.js synth --config FILE --out DIR
//   MODULE_TIMES=30 node -r ./bench/module-times.cjs ...     (the 30 largest rows; default 25)
//
// Every require() is timed by the process's CPU clock (user + system); a module's own time excludes the modules
// it requires. The bundle of the command line (lib/bundle/cli.js, loaded by requireBundle of
// lib/src/cache/module-cache.js, not by require) is timed as one module: reading, digesting and compiling it and
// running its top level; the modules inside it are evaluated later, as the command first requires them, and count
// as the command's work, as does the entry point (the main module is not timed: it runs the command). At exit, on
// stderr: the CPU before the first require (Node's own start), the modules' time by package or folder (own time
// summed: what loading that part costs), the slowest modules, and the rest (the command's work). Plain JavaScript:
// it runs before anything is compiled, on any entry point.
'use strict';
const Module = require('node:module');
const path = require('node:path');

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const startCpu = cpu();
const rows = new Map();
const stack = [];
let loadedCount = 0;
const original = Module._load;

/** `zod`, `@kubernetes/client-node`, `lib/src/synth`, `lib/imports`, `node:` builtins: where a module lives. */
function area(file) {
  if (!path.isAbsolute(file)) return 'node: (builtins)';
  const nm = file.lastIndexOf(`${path.sep}node_modules${path.sep}`);
  if (nm >= 0) {
    const rest = file.slice(nm + 14).split(path.sep);
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  // the toolkit's own: lib/src/<folder>, lib/imports, lib/bundle (of whichever checkout or install it is)
  const own = /[/\\]lib[/\\](src|imports|bundle)[/\\](.*)$/.exec(file);
  if (own) return own[1] === 'src' ? `lib/src/${own[2].split(/[/\\]/)[0]}` : `lib/${own[1]}`;
  return path.relative(process.cwd(), file);
}

/** Runs `load` as the load of `file`, its own time and its children's kept apart. */
function timed(file, load) {
  const frame = { file, child: 0, t0: cpu() };
  stack.push(frame);
  try {
    return load();
  } finally {
    stack.pop();
    const total = cpu() - frame.t0;
    const own = total - frame.child;
    if (stack.length > 0) stack[stack.length - 1].child += total;
    loadedCount++;
    const r = rows.get(file) ?? { own: 0, total: 0 };
    r.own += own;
    r.total += total;
    rows.set(file, r);
  }
}

Module._load = function timedLoad(request, parent, isMain) {
  let file = request;
  try {
    file = Module._resolveFilename(request, parent, isMain);
  } catch {
    // the real load reports it
  }
  // the entry point runs the command from its top level: its load is the command's work, not a module's
  const known = isMain || Module._cache[file] !== undefined || !path.isAbsolute(file);
  if (known) return original.apply(this, arguments);
  const args = arguments;
  const exports = timed(file, () => original.apply(this, args));
  // the bundle's loader: each bundle it loads timed as one module
  if (file.endsWith(path.join('lib', 'src', 'cache', 'module-cache.js')) && typeof exports.requireBundle === 'function' && !exports.requireBundle.timed) {
    const requireBundle = exports.requireBundle;
    exports.requireBundle = Object.assign((bundle) => (Module._cache[bundle] ? requireBundle(bundle) : timed(bundle, () => requireBundle(bundle))), { timed: true });
  }
  return exports;
};

process.on('exit', () => {
  const end = cpu();
  const byArea = new Map();
  let modules = 0;
  for (const [file, r] of rows) {
    const a = byArea.get(area(file)) ?? { own: 0, count: 0 };
    a.own += r.own;
    a.count++;
    byArea.set(area(file), a);
    modules += r.own;
  }
  const top = Number(process.env.MODULE_TIMES ?? 25);
  const out = [];
  out.push(`\nmodule-times: CPU ${end.toFixed(0)} ms in all: Node's start ${startCpu.toFixed(0)} ms, loading ${loadedCount} modules ${modules.toFixed(0)} ms, the rest (the command's work) ${(end - startCpu - modules).toFixed(0)} ms`);
  out.push('| package or folder | modules | own CPU ms |', '| --- | ---: | ---: |');
  for (const [a, r] of [...byArea].sort((x, y) => y[1].own - x[1].own).slice(0, top)) out.push(`| ${a} | ${r.count} | ${r.own.toFixed(0)} |`);
  out.push('', '| module | own CPU ms |', '| --- | ---: |');
  const shown = (f) => /[/\\]((lib|node_modules)[/\\].*)$/.exec(f)?.[1] ?? path.relative(process.cwd(), f);
  for (const [f, r] of [...rows].sort((x, y) => y[1].own - x[1].own).slice(0, top)) out.push(`| ${shown(f)} | ${r.own.toFixed(0)} |`);
  process.stderr.write(`${out.join('\n')}\n`);
});
