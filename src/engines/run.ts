import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';

/** An engine run that failed: one line naming the command and why (timeout, output too large, its own error). */
export class EngineError extends Error {
  /**
   * @param reason why, without naming the command
   * @param what the command (`helm template gpu-operator v26.7.0`), when there is one
   */
  constructor(readonly reason: string, what?: string) {
    super(what ? `${what}: ${reason}` : reason);
    this.name = 'EngineError';
  }
}

export interface RunOptions {
  /** Working folder of the child. */
  readonly cwd?: string;
  /**
   * Wall time after which the child is killed (SIGKILL).
   * @default 120_000 (two minutes: a large chart on two shared cores takes a few seconds)
   */
  readonly timeoutMs?: number;
  /**
   * Largest standard output (and, separately, standard error) accepted; the child is killed beyond it.
   * @default 64 MiB (the largest pinned chart renders 3.2 MB with its CRDs)
   */
  readonly maxOutputBytes?: number;
  /** Environment of the child (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
  /** How the command is named in errors (default: the file's base name and the first argument). */
  readonly label?: string;
}

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
/** Longest error text kept from a failing engine (its first lines, joined). */
const MAX_ERROR_CHARS = 400;

/** The lines of an engine's standard error worth reporting, joined into one line. */
export function errorLine(stderr: string): string {
  const lines = stderr.split(/\r?\n/).map((l) => l.trim())
    // helm's informational log lines (level=INFO/WARN msg=...) and its --debug hint explain nothing
    .filter((l) => l !== '' && !/^level=(INFO|WARN|DEBUG)\b/.test(l) && !/^Use --debug flag/.test(l))
    // kubectl's klog header (`E1201 01:16:35.996346   10952 run.go:72] "command failed" err="..."`): the error alone
    .map((l) => l.replace(/^[EWIF]\d{4} [\d:.]+\s+\d+ [\w.-]+:\d+\] /, '').replace(/^"command failed" err="(.*)"$/, '$1').replace(/\\"/g, '"'));
  const text = lines.join('; ');
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}...` : text;
}

function describe(file: string, args: readonly string[], label?: string): string {
  return label ?? [file.split('/').pop(), args[0]].filter((s) => s !== undefined).join(' ');
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

/**
 * Runs an engine (never through a shell: `file` and an argument array), bounded in time and output, at most
 * one per core at a time. Resolves with its standard output; rejects with an EngineError of one line.
 */
export function runEngine(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return withCore(() => spawnEngine(file, args, opts));
}

function spawnEngine(file: string, args: readonly string[], opts: RunOptions): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxOutputBytes = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const what = describe(file, args, opts.label);
  return new Promise((resolve, reject) => {
    execFile(file, [...args], {
      cwd: opts.cwd,
      env: opts.env,
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
      maxBuffer: maxOutputBytes,
      encoding: 'utf8',
      windowsHide: true,
    }, (error, stdout, stderr) => {
      if (!error) {
        resolve(stdout);
        return;
      }
      const e = error as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: string | number | null };
      if (e.code === 'ENOENT') reject(new EngineError(`${file} not found`, what));
      else if (e.code === 'EACCES') reject(new EngineError(`${file} is not executable`, what));
      else if (e.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') reject(new EngineError(`output over ${Math.round(maxOutputBytes / 1024 / 1024)} MiB; stopped`, what));
      else if (e.killed && e.signal === 'SIGKILL') reject(new EngineError(`no answer within ${Math.round(timeoutMs / 1000)} s; stopped`, what));
      else if (typeof e.code === 'number') reject(new EngineError(`exit ${e.code}: ${errorLine(stderr) || 'no error text'}`, what));
      else if (e.signal) reject(new EngineError(`killed by ${e.signal}`, what));
      else reject(new EngineError(e.message.split('\n')[0], what));
    });
  });
}
