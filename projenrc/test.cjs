#!/usr/bin/env node
// The test task's checks after compiling (generated into .projen/tasks.json by .projenrc.ts):
//
//   node projenrc/test.cjs [VITEST ARGS...]
//
// The type check of the tests and eslint are one process, single-threaded; vitest's workers wait on
// child processes much of the time. So the static checks run beside vitest instead of before it:
// their output is held and printed once vitest has finished (vitest's own output goes straight
// through), and the exit code is the first failure's, vitest's first. Plain JavaScript: it runs
// what is installed, nothing of lib/.
//
// The static checks start first (they need no Go binary). Before vitest, the Kubernetes control plane of
// the cluster tests is taken from its cache or built (test/cluster/README.md: a few minutes, once per
// machine), when the run includes those tests: its progress line goes straight through, and a build that
// fails is said in one line and fails the run (vitest still runs; the cluster tests then fail with the same line).
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const bin = (name) => path.join(ROOT, 'node_modules', '.bin', name);

/**
 * The checks beside vitest: the type check of the tests and eslint, one process over one TypeScript program
 * (projenrc/static-checks.cjs: the program tsc builds is the one eslint's type-aware rules read).
 */
const CHECKS = [
  { name: 'static checks (projenrc/static-checks.cjs)', command: process.execPath, args: [path.join(__dirname, 'static-checks.cjs')], env: {} },
];

function run(command, args, env, capture) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let output = '';
    if (capture) {
      child.stdout.on('data', (c) => { output += c; });
      child.stderr.on('data', (c) => { output += c; });
    }
    child.on('error', (e) => resolve({ code: 1, output: `${output}${e.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

/**
 * Whether the run may include the cluster tests: unless every word of the arguments is a flag or a path of a test
 * outside test/cluster/ (no such word: the whole suite; a word that is no path, such as `-t NAME`'s: it may).
 */
function includesClusterTests(args) {
  const words = args.filter((a) => !a.startsWith('-'));
  const paths = words.filter((w) => w.includes('/') || w.endsWith('.ts'));
  if (paths.length === 0 || paths.length < words.length) return true;
  return paths.some((p) => path.resolve(ROOT, p).startsWith(path.join(ROOT, 'test', 'cluster')));
}

async function main() {
  const args = process.argv.slice(2);
  // the suite reads the pinned upstream files of ../shared: without them, one line saying how to lay them out
  const missing = require('./shared.cjs').missingShared('npm test');
  if (missing) {
    process.stderr.write(`error: ${missing}\n`);
    process.exitCode = 1;
    return;
  }
  // the static checks need no Go binary: they start first, beside the builds of a first run as beside vitest
  const checks = CHECKS.map((c) => run(c.command, c.args, c.env, true).then((r) => ({ ...r, name: c.name })));
  let prepared = 0;
  if (includesClusterTests(args)) {
    const prepare = await run(process.execPath, ['-r', 'ts-node/register/transpile-only', path.join('test', 'cluster', 'prepare.ts')], {}, false);
    prepared = prepare.code;
  }
  const vitest = await run(bin('vitest'), ['run', ...args], {}, false);
  let code = vitest.code || prepared;
  for (const c of await Promise.all(checks)) {
    process.stdout.write(`\n${c.code === 0 ? 'passed' : 'FAILED'}: ${c.name}\n`);
    if (c.output.trim() !== '') process.stdout.write(c.output.endsWith('\n') ? c.output : `${c.output}\n`);
    if (code === 0) code = c.code;
  }
  process.exitCode = code;
}

void main();
