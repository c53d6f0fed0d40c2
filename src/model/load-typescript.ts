import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { deserialize } from 'node:v8';
import type { SandboxRequest } from './typescript-sandbox';
import { compiledDescription } from '../cache/compile-record';
import { sha256 } from '../cache/digests';
import { InputError } from '../errors';
import { PACKAGE_NAME, PACKAGE_ROOT } from '../paths';
import { killTagged, RUN_TOKEN_ENV, runToken } from '../processes';

/** Seconds a TypeScript description may run (transpiling included). */
export const TS_TIME_ENV = 'GPU_CLUSTER_MANIFESTS_TS_TIMEOUT';
export const DEFAULT_TS_SECONDS = 10;
/** MiB of JavaScript heap a TypeScript description may use. */
export const TS_MEMORY_ENV = 'GPU_CLUSTER_MANIFESTS_TS_MEMORY';
export const DEFAULT_TS_MEMORY_MIB = 512;
/** Address space of the sandbox beyond its heap (Node itself, buffers): Linux only (ulimit -v). */
const ADDRESS_SPACE_EXTRA_MIB = 2048;
/** Output a description may print (it is passed through to stderr), and the largest value it may export (serialised). */
const MAX_OUTPUT_BYTES = 16 * 2 ** 20;
/** Index of the sandbox's answer pipe (file descriptor 3, RESULT_FD) among spawnSync's outputs. */
const RESULT_FD_INDEX = 3;

/** A TypeScript description that cannot be evaluated (the loader turns the issues into a DescriptionError). */
export class TypeScriptDescriptionFailed extends Error {
  constructor(readonly issues: Array<{ readonly path: string; readonly message: string }>) {
    super(issues.map((i) => i.message).join('; '));
  }
}

const fail = (...messages: string[]): never => {
  throw new TypeScriptDescriptionFailed(messages.map((message) => ({ path: '', message })));
};

function limit(name: string, fallback: number, unit: string, max: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || n > max) throw new InputError(`${name}=${v}: expected ${unit} between 1 and ${max}`);
  return n;
}

/** The limits a TypeScript description runs under (environment variables, else the defaults). */
export function typeScriptLimits(): { seconds: number; memoryMiB: number } {
  return {
    seconds: limit(TS_TIME_ENV, DEFAULT_TS_SECONDS, 'a number of seconds', 3600),
    memoryMiB: Math.round(limit(TS_MEMORY_ENV, DEFAULT_TS_MEMORY_MIB, 'a number of MiB', 65536)),
  };
}

/** The sandbox's entry point: compiled, also when this module runs from the sources (tests). */
const SANDBOX = __filename.endsWith('.ts')
  ? path.join(PACKAGE_ROOT, 'lib', 'src', 'model', 'typescript-sandbox.js')
  : path.join(__dirname, 'typescript-sandbox.js');

/** The command that starts the sandbox: on Linux under ulimit (address space, no core dump). */
function sandboxCommand(memoryMiB: number): [string, string[]] {
  const node = [`--max-old-space-size=${memoryMiB}`, SANDBOX];
  if (process.platform !== 'linux' || !existsSync('/bin/sh')) return [process.execPath, node];
  const kib = (memoryMiB + ADDRESS_SPACE_EXTRA_MIB) * 1024;
  return ['/bin/sh', ['-c', 'ulimit -c 0 2>/dev/null; ulimit -v "$1" 2>/dev/null; shift; exec "$@"', 'sh', String(kib), process.execPath, ...node]];
}

/** Results of this process: the launcher's early check and the CLI load the same descriptions. */
const evaluated = new Map<string, unknown>();

/**
 * Evaluates a TypeScript description (`export default defineCluster({ ... })`) and returns its
 * default export (the raw description). It runs in a process of its own, bounded in time and
 * memory, so a description that loops, exits, allocates without end or leaves a timer running is
 * bad input naming the file and the reason, never a hang or a crash of the CLI. A description
 * under src/ runs as its compiled twin in lib/ while that is current (the launcher compiles changed
 * sources and records the compiler's type errors in descriptions, reported here); any other is
 * transpiled.
 */
export function evaluateTypeScriptDescription(file: string, source: string): unknown {
  const abs = path.resolve(file);
  const twin = compiledDescription(abs);
  if (twin && twin.typeErrors.length > 0) fail(...twin.typeErrors.map((e) => `line ${e.line}, column ${e.column}: ${e.message}`));
  const key = `${abs}\0${sha256(source)}\0${twin?.js ?? ''}`;
  if (evaluated.has(key)) return evaluated.get(key);
  const value = runSandbox({ file: abs, twin: twin?.js, source: twin ? undefined : source, root: PACKAGE_ROOT, packageName: PACKAGE_NAME });
  evaluated.set(key, value);
  return value;
}

/**
 * Runs the sandbox and reads its answer. The sandbox carries a run token in its environment (which every
 * process it starts inherits): it ends those processes itself before it answers, and this process ends any
 * left after it (a detached child of the description), so nothing the description starts outlives the
 * command. The answer starts with a nonce sent on stdin: anything else on the answer channel (a description
 * writing to file descriptor 3) is refused as garbage, as is an answer that does not decode.
 */
function runSandbox(request: Omit<SandboxRequest, 'nonce'>): unknown {
  const { seconds, memoryMiB } = typeScriptLimits();
  const outOfMemory = `the description used more than ${memoryMiB} MiB of memory (an allocation loop?); ${TS_MEMORY_ENV}=<MiB> changes the limit`;
  const [command, args] = sandboxCommand(memoryMiB);
  const nonce = randomBytes(16).toString('hex');
  const token = runToken();
  let r: ReturnType<typeof spawnSync>;
  try {
    r = spawnSync(command, args, {
      input: JSON.stringify({ ...request, nonce }),
      env: { ...process.env, [RUN_TOKEN_ENV]: token },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      timeout: seconds * 1000,
      killSignal: 'SIGKILL',
      maxBuffer: MAX_OUTPUT_BYTES,
      windowsHide: true,
    });
  } finally {
    killTagged(token);
  }
  const answer = r.output[RESULT_FD_INDEX] as Buffer | null;
  const code = (r.error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ETIMEDOUT') fail(`the description did not finish within ${seconds} s (an endless loop?); ${TS_TIME_ENV}=<seconds> changes the limit`);
  if (code === 'ENOBUFS') {
    if ((answer?.length ?? 0) > MAX_OUTPUT_BYTES) fail(`the description's exported value is larger than ${MAX_OUTPUT_BYTES / 2 ** 20} MiB when serialised, far more than a cluster description needs`);
    fail(`the description printed more than ${MAX_OUTPUT_BYTES / 2 ** 20} MiB`);
  }
  if (r.error) fail(`cannot start a process to evaluate the description: ${r.error.message}`);
  const head = nonce.length;
  const tagged = answer !== null && answer.length > head && answer.subarray(0, head).toString('latin1') === nonce;
  const tag = tagged ? String.fromCharCode(answer[head]) : undefined;
  if (tag === 'M') fail(outOfMemory);
  if (answer && answer.length > 0 && (tag === undefined || !['V', 'E'].includes(tag))) {
    fail('the description wrote something else than its value on the sandbox\'s answer channel (file descriptor 3): a description only exports its value');
  }
  if (tag === undefined) {
    if (/heap out of memory|Reached heap limit|allocation failed/i.test(String(r.stderr))) fail(outOfMemory);
    if (r.signal) fail(`the description's process was killed (${r.signal})`);
    fail(`the description ended its process (exit code ${r.status}) before exporting its value`);
  }
  // what the description printed is its own: passed on once it ran
  for (const out of [r.stdout, r.stderr]) if (out && out.length > 0) process.stderr.write(out);
  const body = answer!.subarray(head + 1);
  if (tag === 'E') {
    let problems: unknown;
    try {
      problems = JSON.parse(body.toString('utf8'));
    } catch {
      problems = undefined;
    }
    if (!Array.isArray(problems) || !problems.every((p) => typeof p === 'string')) fail('the sandbox\'s answer is garbled (its problems do not decode)');
    fail(...(problems as string[]));
  }
  try {
    return deserialize(body);
  } catch (e) {
    return fail(`the sandbox's answer is garbled (its value does not decode: ${(e as Error).message.split('\n')[0]})`);
  }
}
