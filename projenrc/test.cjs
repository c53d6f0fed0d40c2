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
// The whole suite on a machine that must build some of those binaries (a first run, a cold CI: some 30 minutes of Go
// that leave part of the two cores idle) runs in two vitest runs: the files that need no Go binary beside the builds,
// then the files that do.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const bin = (name) => path.join(ROOT, 'node_modules', '.bin', name);
/** vitest.config.mts's tiers (.projenrc.ts): `beside-builds` leaves out the files that need the Go binaries, `after-builds` runs only those. */
const TIER_ENV = 'GPU_CLUSTER_MANIFESTS_TEST_TIER';

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
    let stdout = '';
    if (capture) {
      child.stdout.on('data', (c) => { output += c; stdout += c; });
      child.stderr.on('data', (c) => { output += c; });
    }
    child.on('error', (e) => resolve({ code: 1, output: `${output}${e.message}\n`, stdout }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output, stdout }));
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
  const prepare = (...flags) => run(process.execPath, ['-r', 'ts-node/register/transpile-only', path.join('test', 'cluster', 'prepare.ts'), ...flags], {}, flags.length > 0);
  let code;
  // what a run would build: prepare's stdout only (a warning of Node's on stderr is no binary)
  const toBuild = args.length === 0 ? await prepare('--pending') : { code: 0, stdout: '' };
  if (toBuild.code === 0 && toBuild.stdout.trim() !== '') {
    // the whole suite on a machine without the Go binaries: the files that need none run beside their builds
    const names = toBuild.stdout.trim().split('\n');
    const what = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names[0];
    process.stderr.write(`building ${what} first (once per machine); the test files that need no Go binary run meanwhile\n`);
    const [prepared, beside] = await Promise.all([prepare(), run(bin('vitest'), ['run'], { [TIER_ENV]: 'beside-builds' }, false)]);
    const after = await run(bin('vitest'), ['run'], { [TIER_ENV]: 'after-builds' }, false);
    code = beside.code || after.code || prepared.code;
  } else {
    const prepared = includesClusterTests(args) ? (await prepare()).code : 0;
    code = (await run(bin('vitest'), ['run', ...args], {}, false)).code || prepared;
  }
  for (const c of await Promise.all(checks)) {
    process.stdout.write(`\n${c.code === 0 ? 'passed' : 'FAILED'}: ${c.name}\n`);
    if (c.output.trim() !== '') process.stdout.write(c.output.endsWith('\n') ? c.output : `${c.output}\n`);
    if (code === 0) code = c.code;
  }
  process.exitCode = code;
}

void main();
