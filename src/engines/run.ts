import { ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { availableParallelism } from 'node:os';
import { EngineBudget, engineLimit, engineOutputBytes, RAISE_OUTPUT, raiseEngineLimit, seconds } from './limits';
import { stripControl } from '../errors';
import { endRun, RUN_TOKEN_ENV, runToken } from '../processes';

/** An engine run that failed: one line naming the command and why (timeout, output too large, its own error). */
export class EngineError extends Error {
  /**
   * @param reason why, without naming the command
   * @param what the command (`helm template gpu-operator v26.7.0`), when there is one
   * @param bounded the run was stopped by a bound (time, budget, output), not refused by the engine: running
   * it again would only spend the bound again
   */
  constructor(readonly reason: string, what?: string, readonly bounded = false) {
    super(what ? `${what}: ${reason}` : reason);
    this.name = 'EngineError';
  }
}

export interface RunOptions {
  /** Working folder of the child. */
  readonly cwd?: string;
  /**
   * Wall time after which the child's whole process group is killed (SIGKILL).
   * @default ENGINE_LIMITS.timeout: GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT seconds, else 120
   */
  readonly timeoutMs?: number;
  /**
   * Largest standard output (and, separately, standard error) accepted; the child is killed beyond it.
   * @default engineOutputBytes(): GPU_CLUSTER_MANIFESTS_MAX_ENGINE_OUTPUT_MIB, else 32 MiB
   */
  readonly maxOutputBytes?: number;
  /**
   * Largest number of YAML documents standard output may hold, counted as it streams in (`---` lines);
   * the child is killed beyond it, before its output is parsed.
   * @default no count
   */
  readonly maxDocuments?: number;
  /**
   * The command's engine budget: the run is bounded by what is left of it too (and refused when nothing is).
   * @default none
   */
  readonly budget?: EngineBudget;
  /** Environment of the child (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
  /** How the command is named in errors (default: the file's base name and the first argument). */
  readonly label?: string;
}

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 32 * 1024 * 1024;
/** Longest error text kept from a failing engine. */
const MAX_ERROR_CHARS = 400;
/** Standard error kept for the message: its end (the error is the last line). */
const STDERR_TAIL_BYTES = 64 * 1024;

/** The engine's last line worth reporting (its error), without control characters. */
export function errorLine(stderr: string): string {
  const lines = stderr.split(/\r?\n/).map((l) => stripControl(l).trim())
    // helm's informational log lines (level=INFO/WARN msg=...) and its --debug hint explain nothing
    // (and Node's banner after an uncaught error: the toolkit's children of upgrade-plan --from-toolkit)
    .filter((l) => l !== '' && !/^level=(INFO|WARN|DEBUG)\b/.test(l) && !/^Use --debug flag/.test(l) && !/^Node\.js v\d+\.\d+\.\d+$/.test(l))
    // kubectl's klog header (`E1201 01:16:35.996346   10952 run.go:72] "command failed" err="..."`): the error alone
    .map((l) => l.replace(/^[EWIF]\d{4} [\d:.]+\s+\d+ [\w.-]+:\d+\] /, '').replace(/^"command failed" err="(.*)"$/, '$1').replace(/\\"/g, '"'));
  const text = lines[lines.length - 1] ?? '';
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}...` : text;
}

function describe(file: string, args: readonly string[], label?: string): string {
  return stripControl(label ?? [file.split('/').pop(), args[0]].filter((s) => s !== undefined).join(' '));
}

/** Engines running now, and those waiting for a core: at most one engine per core in the whole process. */
let running = 0;
const waiting: (() => void)[] = [];

async function withCore<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= Math.max(1, availableParallelism())) await new Promise<void>((resolve) => waiting.push(resolve));
  running += 1;
  try {
    return await fn();
  } finally {
    running -= 1;
    waiting.shift()?.();
  }
}

/** Runs still going, ended when this process exits (whatever the reason: an error, Ctrl-C handled, a normal end). */
const live = new Map<ChildProcess, string>();
let exitHook = false;

function track(child: ChildProcess, token: string): void {
  live.set(child, token);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const [c, t] of live) endRun(c.pid, t);
    });
  }
}

/**
 * Runs an engine (never through a shell: `file` and an argument array), at most one per core at a time,
 * in a process group of its own, bounded in time (its own bound and the command's budget), in the bytes of
 * its standard output and error and in the YAML documents it prints. When it ends, is stopped or this
 * process exits, its whole group is killed, and any process that carries its run's token (a child that
 * left the group): nothing it started outlives it or keeps its output open. Resolves with its standard
 * output; rejects with an EngineError of one line (the engine's last line of standard error, without
 * control characters).
 */
export function runEngine(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return withCore(() => spawnEngine(file, args, opts));
}

type Stop = { readonly kind: 'timeout' | 'budget' | 'output' | 'stderr' | 'documents' | 'lingering' };

/** Where prlimit (util-linux) may be: the wrapper that caps an engine's memory before it starts (Node has no setrlimit). */
const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'];
let prlimit: string | null | undefined;

/**
 * The command line that runs `file` with its data memory capped at `bytes` (RLIMIT_DATA, which the engine's process
 * and whatever it starts inherit), never through a shell interpreting anything given: prlimit, which sets the limit
 * on itself and executes the engine (the same process: its group and token stay), else sh with a fixed script and
 * the engine and its arguments as positional parameters. Either fails closed: a limit that cannot be set is an
 * engine that does not start.
 */
export function cappedCommand(file: string, args: readonly string[], bytes: number): [string, string[]] {
  prlimit ??= PRLIMIT.find((p) => isExecutable(p)) ?? null;
  if (prlimit) return [prlimit, [`--data=${bytes}`, '--', file, ...args]];
  return ['/bin/sh', ['-c', 'ulimit -d "$0" && exec "$@"', String(Math.floor(bytes / 1024)), file, ...args]];
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Go's and C's words for an allocation the limit refused. */
const OUT_OF_MEMORY = /out of memory|cannot allocate memory|bad_alloc/i;

function spawnEngine(file: string, args: readonly string[], opts: RunOptions): Promise<string> {
  const what = describe(file, args, opts.label);
  const own = opts.timeoutMs ?? engineLimit('timeout') * 1000;
  const left = opts.budget?.remaining();
  if (left !== undefined && left <= 0) return Promise.reject(new EngineError(opts.budget!.stopped(), what, true));
  const byBudget = left !== undefined && left < own;
  const timeoutMs = byBudget ? left : own;
  const maxOutputBytes = opts.maxOutputBytes ?? engineOutputBytes();
  const maxDocuments = opts.maxDocuments;
  const memory = engineLimit('memory') * 1024 * 1024;
  // the wrapper starts the engine: what would stop spawn itself is said before it (a missing or non-executable file)
  if (file.includes('/')) {
    try {
      accessSync(file, constants.X_OK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return Promise.reject(new EngineError(code === 'ENOENT' ? `${file} not found` : code === 'EACCES' ? `${file} is not executable` : `cannot start ${file}: ${code}`, what));
    }
  }
  const token = runToken();
  const [command, argv] = cappedCommand(file, args, memory);
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(command, argv, {
        cwd: opts.cwd,
        env: { ...(opts.env ?? process.env), [RUN_TOKEN_ENV]: token },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (e) {
      reject(new EngineError(`cannot start ${file}: ${(e as Error).message.split('\n')[0]}`, what));
      return;
    }
    track(child, token);
    const out: Buffer[] = [];
    let outBytes = 0;
    let errTail: Buffer = Buffer.alloc(0);
    let errBytes = 0;
    let documents = 1;
    let carry: Buffer = Buffer.alloc(0);
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let stopped: Stop | undefined;
    let spawnError: NodeJS.ErrnoException | undefined;
    let settled = false;

    const end = () => endRun(child.pid, token);
    const stop = (kind: Stop['kind']) => {
      stopped ??= { kind };
      end();
      child.stdout?.destroy();
      child.stderr?.destroy();
    };
    const timer = setTimeout(() => stop(exit ? 'lingering' : byBudget ? 'budget' : 'timeout'), timeoutMs);

    child.stdout!.on('data', (chunk: Buffer) => {
      if (stopped) return;
      outBytes += chunk.length;
      if (outBytes > maxOutputBytes) return stop('output');
      out.push(chunk);
      if (maxDocuments !== undefined) {
        // a document starts at every line that begins with `---`
        const scan = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
        for (let i = scan.indexOf('\n---'); i !== -1; i = scan.indexOf('\n---', i + 4)) documents += 1;
        carry = scan.subarray(Math.max(0, scan.length - 3));
        if (documents > maxDocuments) stop('documents');
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stopped) return;
      errBytes += chunk.length;
      if (errBytes > maxOutputBytes) return stop('stderr');
      errTail = Buffer.concat([errTail, chunk]);
      if (errTail.length > STDERR_TAIL_BYTES) errTail = errTail.subarray(errTail.length - STDERR_TAIL_BYTES);
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      spawnError = e;
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // what it started goes with it, so that nothing keeps its output open
      end();
    });
    child.on('close', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      live.delete(child);
      end();
      const stderr = new TextDecoder('utf-8').decode(errTail);
      const mib = (n: number) => `${Number((n / 1024 / 1024).toFixed(2))} MiB`;
      const fail = (reason: string) => reject(new EngineError(reason, what, stopped !== undefined));
      if (spawnError?.code === 'ENOENT') return fail(`${file} not found`);
      if (spawnError?.code === 'EACCES') return fail(`${file} is not executable`);
      if (spawnError) return fail(`cannot start ${file}: ${spawnError.message.split('\n')[0]}`);
      if (stopped?.kind === 'budget') return fail(opts.budget!.stopped());
      if (stopped?.kind === 'timeout') return fail(`no answer within ${seconds(timeoutMs)}; stopped (${raiseEngineLimit('timeout')})`);
      if (stopped?.kind === 'lingering') return fail(`it ended, but a process it started kept its output open for ${seconds(timeoutMs)}; stopped`);
      if (stopped?.kind === 'output') return fail(`output over ${mib(maxOutputBytes)}; stopped (${RAISE_OUTPUT})`);
      if (stopped?.kind === 'stderr') return fail(`error output over ${mib(maxOutputBytes)}; stopped (${RAISE_OUTPUT})`);
      if (stopped?.kind === 'documents') return fail(`output over ${maxDocuments} YAML documents; stopped (${raiseEngineLimit('documents')})`);
      const last = errorLine(stderr);
      if (exit?.code !== 0 && OUT_OF_MEMORY.test(stderr)) {
        return reject(new EngineError(`its memory passed the bound of ${engineLimit('memory')} MiB; stopped (${raiseEngineLimit('memory')})`, what, true));
      }
      if (exit?.signal) return fail(`killed by ${exit.signal}${last ? `: ${last}` : ''}`);
      if (exit?.code !== 0) return fail(`exit ${exit?.code ?? '?'}: ${last || 'no error text'}`);
      const bytes = Buffer.concat(out);
      out.length = 0;
      resolve(new TextDecoder('utf-8').decode(bytes));
    });
  });
}
