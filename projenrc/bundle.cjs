#!/usr/bin/env node
// Bundles the command line into one file (lib/bundle/cli.js) from the compiled lib/src/ and the dependencies it
// loads: the launcher runs it after each compilation that changed the CLI's code (projenrc/launch.cjs), and npm pack
// ships the bundle (the package's bin, lib/src/bin.js, loads it with its V8 code cache: src/cache/module-cache.ts).
//
//   node projenrc/bundle.cjs [--root DIR]
//
// Why a bundle: a synth loaded some 590 modules, and each cost a resolution, a read, a digest and a compilation of its
// own, more than running their top levels (bench/README.md, "The CLI's start, module by module"). One file is read,
// digested and handed its compiled code once. What the bundle keeps as it was:
// - every module is evaluated when it is first required, as before (esbuild wraps each CommonJS module), so a
//   command still loads only what it runs; the lazy requires of the sources (`const load = createRequire(__filename)`,
//   then `load('./cli')`) become plain requires of the bundle's own modules;
// - every module of lib/ keeps its own `__filename` and `__dirname` (its compiled file beside the bundle, which ships
//   too): the paths it finds its package and assets by, the code digests the caches are keyed by, the worker and
//   sandbox scripts it starts;
// - the typed imports (lib/imports/, 4 MB, the ApplicationSet's and Dynamo's 2.7 MB of it) stay files of their own,
//   each loaded when a component first uses what it exports (`const x_1 = require("../../imports/x")` becomes a view
//   that requires the file on its first use: the generated modules only define classes), so a cluster without a fleet
//   or Dynamo never reads theirs; they extend cdk8s's and constructs' classes, so before the first of them loads, the
//   bundle's own copies of cdk8s and constructs take their place in Node's module cache (the files the imports would
//   load from node_modules): one copy for the charts and the imports, and cdk8s's 95 modules are not loaded again;
// - what else is not bundled: the Kubernetes client (the live commands load it; 20 MB), TypeScript (the sandbox of a
//   TypeScript description loads it, in a process of its own);
// - its strings and names are written in ASCII (esbuild's \u escapes), and its comments dropped: what stays non-ASCII
//   is in regular expression literals, whose text a program may read back (`.source`: zod writes it into the
//   description's JSON Schema), so they stay as written; all of them Latin-1 (µ), the file still reads into a
//   one-byte string (a two-byte one takes twice the memory and work).
// Plain JavaScript, as the launcher: it runs right after the compiler, before the CLI.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const argRoot = process.argv.indexOf('--root');
const ROOT = argRoot > 0 ? path.resolve(process.argv[argRoot + 1]) : path.resolve(__dirname, '..');
const LIB = path.join(ROOT, 'lib');
const OUT = path.join(LIB, 'bundle');

/** Each bundle: its entry point, a compiled module of lib/src/. */
const BUNDLES = { cli: path.join(LIB, 'src', 'bin.js') };
/**
 * Loaded at run time from the installed package's node_modules (the ASN.1 libraries: only rehearse's control plane
 * issues certificates, so a synth's start does not parse them).
 */
const EXTERNAL = ['@kubernetes/client-node', 'typescript', '@peculiar/asn1-schema', '@peculiar/asn1-x509'];
const IMPORTS = path.join(LIB, 'imports');

const isLib = (file) => file.startsWith(LIB + path.sep);

/** A module's lazy requires (`const load = (0, node_module_1.createRequire)(__filename);` then `load('./x')`) as plain requires of the bundle. */
function plainRequires(text) {
  let out = text;
  for (const [, name] of text.matchAll(/\bconst (\w+) = \(0, node_module_1\.createRequire\)\(__filename\);/g)) {
    out = out.replace(new RegExp(`\\b${name}\\((['"][^'"\\n]+['"])\\)`, 'g'), 'require($1)');
  }
  return out.replace(/\(0, node_module_1\.createRequire\)\(__filename\)\((['"][^'"\n]+['"])\)/g, 'require($1)');
}

/** A module's typed imports (`const x_1 = require("../../imports/x");`, or `__importStar(require(...))` for `import * as`: what tsc writes for them), each loaded on its first use. */
const lazyImports = (text) => text.replace(/^const (\w+) = (__importStar\()?require\("((?:\.\.\/)+imports\/[^"]+)"\)(\))?;$/gm,
  (all, name, star, file, close) => (Boolean(star) !== Boolean(close) ? all
    : `const ${name} = __lazyExports(() => (__shareWithImports({ cdk8s: require("cdk8s"), constructs: require("constructs") }), ${star ?? ''}require("${file}")${close ?? ''}));`));

/**
 * The modules of the commands that src/cli.ts runs through `deferred` (a synth needs none of them): each loaded when
 * its command first runs. Read from the compiled cli.js itself, the one place that says which commands load lazily: the
 * module whose `run...` export a `deferred` entry reads (`deferred(() => check_1.runCheck)`). A binding it names that
 * cli.js also reads elsewhere would load its module with cli.js: refused.
 */
const DEFERRED_READ = /\bdeferred\(\(\) => [^\n]*?\b(\w+)\.run\w+\b/g;
function lazyCommands(file, text) {
  if (path.relative(LIB, file) !== path.join('src', 'cli.js')) return text;
  const deferredReads = [...text.matchAll(DEFERRED_READ)].map((m) => m[1]);
  const names = new Set(deferredReads);
  if (names.size === 0) throw new Error('lib/src/cli.js runs no command through deferred(...): every command would load with it');
  let out = text;
  for (const name of names) {
    const required = new RegExp(`^const ${name} = require\\("(\\./[^"]+)"\\);$`, 'm');
    const module = out.match(required)?.[1];
    if (module === undefined) throw new Error(`lib/src/cli.js: deferred(() => ${name}...) names no module required as "const ${name} = require(...)"`);
    const reads = out.match(new RegExp(`\\b${name}\\b`, 'g')).length;
    if (reads !== deferredReads.filter((n) => n === name).length + 1) throw new Error(`lib/src/cli.js reads ${name} outside deferred(...): its module would load with cli.js`);
    out = out.replace(required, `const ${name} = __lazyExports(() => require("${module}"));`);
  }
  return out;
}

/**
 * Once, before the first typed import loads: the bundle's cdk8s and constructs (`instances`, by package name) put in
 * Node's module cache under the files a module of lib/imports/ would load for them, so that the imports extend the
 * classes the bundle's charts use. One loaded there already (something else in the process loaded cdk8s first) stays:
 * cdk8s and constructs tell their objects apart by Symbol.for, not by the identity of a class.
 */
const SHARE_WITH_IMPORTS = 'var __sharedWithImports = false; var __shareWithImports = (instances) => {'
  + ' if (__sharedWithImports) return; __sharedWithImports = true;'
  + ' const Module = require("node:module"); const path = require("node:path");'
  + ' const from = path.join(__bundleDirname, "..", "imports", "index.js");'
  + ' const importer = { id: from, filename: from, paths: Module._nodeModulePaths(path.dirname(from)) };'
  + ' for (const [name, exports] of Object.entries(instances)) {'
  + '   let file; try { file = Module._resolveFilename(name, importer); } catch { continue; }'
  + '   if (Module._cache[file]) continue;'
  + '   const m = new Module(file); m.filename = file; m.exports = exports; m.loaded = true; Module._cache[file] = m; } };';

/**
 * The exports of a module required on their first use (a property read, `in`, a listing): the banner of each bundle
 * defines it for lazyImports.
 */
const LAZY_EXPORTS = 'var __lazyExports = (load) => { let m; const get = () => (m ??= load()); return new Proxy({}, {'
  + ' get: (_, k) => get()[k], has: (_, k) => k in get(), ownKeys: () => Reflect.ownKeys(get()),'
  + ' getOwnPropertyDescriptor: (_, k) => { const d = Object.getOwnPropertyDescriptor(get(), k); return d && { ...d, configurable: true }; } }); };';

/** The module's own file and folder, found from the bundle's folder at run time (the package may be anywhere). */
function ownPaths(file, outFile) {
  const rel = JSON.stringify(path.relative(path.dirname(outFile), file).split(path.sep).join('/'));
  return `var __filename = require("node:path").join(__bundleDirname, ${rel}), __dirname = require("node:path").dirname(__filename);\n`;
}

const libModules = (outFile) => ({
  name: 'lib-modules',
  setup(build) {
    // the typed imports: required at run time from beside the bundle (lib/imports/ ships as it is)
    build.onResolve({ filter: /\/imports\// }, (args) => {
      const file = path.resolve(args.resolveDir, args.path);
      if (!file.startsWith(IMPORTS + path.sep)) return undefined;
      return { path: `${path.relative(path.dirname(outFile), file).split(path.sep).join('/')}.js`, external: true };
    });
    build.onLoad({ filter: /\.js$/ }, (args) => {
      if (!isLib(args.path)) return undefined;
      const text = fs.readFileSync(args.path, 'utf8').replace(/^#!.*/, '');
      return { contents: ownPaths(args.path, outFile) + lazyImports(lazyCommands(args.path, plainRequires(text))), loader: 'js' };
    });
  },
});

function write(file, text) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

async function main() {
  let esbuild;
  try {
    esbuild = require(require.resolve('esbuild', { paths: [ROOT] }));
  } catch {
    process.stderr.write('error: esbuild is not installed (a devDependency): run npm ci first\n');
    return 1;
  }
  fs.mkdirSync(OUT, { recursive: true });
  for (const [name, entry] of Object.entries(BUNDLES)) {
    const outFile = path.join(OUT, `${name}.js`);
    const result = await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      outfile: outFile,
      external: EXTERNAL,
      // the ES module builds of dependencies that ship both (tree-shaken where they are imported as such)
      mainFields: ['module', 'main'],
      minifyWhitespace: true,
      charset: 'ascii',
      legalComments: 'eof',
      logLevel: 'silent',
      metafile: true,
      absWorkingDir: ROOT,
      // modules named by where they are found (node_modules/x/...), not where a link points: the same bytes from a copy
      // of the project whose node_modules are links
      preserveSymlinks: true,
      banner: { js: `"use strict";var __bundleDirname = __dirname;${LAZY_EXPORTS}${SHARE_WITH_IMPORTS}` },
      plugins: [libModules(outFile)],
    });
    for (const w of result.warnings) process.stderr.write(`bundle ${name}: warning: ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}\n`);
    const [js] = result.outputFiles;
    write(outFile, js.text);
    // what it was made of (relative to the root): the launcher rebuilds it when any of them changes (src/cache/compile-record.ts)
    write(path.join(OUT, `${name}.inputs.json`), `${JSON.stringify(Object.keys(result.metafile.inputs).sort(), undefined, 1)}\n`);
  }
  return 0;
}

main().then((code) => {
  process.exitCode = code;
}, (e) => {
  process.stderr.write(`error: bundling the CLI failed: ${e && e.message ? e.message : e}\n`);
  process.exitCode = 1;
});
