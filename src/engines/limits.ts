import { InputError } from '../errors';
import { maxBytes, raiseHint } from '../input/limits';

/**
 * The bounds of every engine run (helm, kustomize), in one place (docs/upstream-installs.md
 * lists them): each can be changed with its environment variable. The largest pinned chart renders
 * 3.2 MB and some 300 documents with its CRDs in a few seconds on two shared cores; the bounds are far
 * above that and far below what would hang a command or exhaust its memory.
 */
export interface EngineLimitSpec {
  readonly env: string;
  readonly fallback: number;
  /** What the number counts, for messages. */
  readonly unit: string;
  readonly max: number;
  /** Whether fractions are allowed (seconds, MiB). */
  readonly fractions: boolean;
}

export const ENGINE_LIMITS = {
  /** Seconds one engine run may take. */
  timeout: { env: 'GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT', fallback: 120, unit: 'seconds', max: 3600, fractions: true },
  /** Seconds all engine runs of one command may take together (retries included), from its first run. */
  budget: { env: 'GPU_CLUSTER_MANIFESTS_ENGINE_BUDGET', fallback: 600, unit: 'seconds', max: 86_400, fractions: true },
  /**
   * MiB of data memory (the heap: RLIMIT_DATA) one run may allocate; the kernel refuses it more, and the engine
   * ends (Go: "out of memory"). The largest pinned chart renders in some 60 MiB.
   */
  memory: { env: 'GPU_CLUSTER_MANIFESTS_ENGINE_MEMORY_MIB', fallback: 1024, unit: 'MiB', max: 1_048_576, fractions: false },
  /** YAML documents one run may print (counted as they stream in). */
  documents: { env: 'GPU_CLUSTER_MANIFESTS_MAX_ENGINE_DOCUMENTS', fallback: 10_000, unit: 'documents', max: 10_000_000, fractions: false },
} as const satisfies Record<string, EngineLimitSpec>;

export type EngineLimit = keyof typeof ENGINE_LIMITS;

/**
 * Bytes of standard output (and, separately, of standard error) one run may print: the input limit of a
 * render (src/input/limits.ts, with its nesting and aliases), GPU_CLUSTER_MANIFESTS_MAX_ENGINE_OUTPUT_MIB.
 */
export function engineOutputBytes(): number {
  return maxBytes('render');
}

/** How to raise the output bound, for messages. */
export const RAISE_OUTPUT = raiseHint('render').replace('the limit', 'it');

/** A bound's value: its environment variable when set, else the default; a bad value is bad input (exit 2). */
export function engineLimit(name: EngineLimit): number {
  const spec: EngineLimitSpec = ENGINE_LIMITS[name];
  const raw = process.env[spec.env];
  if (raw === undefined || raw === '') return spec.fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > spec.max || (!spec.fractions && !Number.isInteger(n))) {
    throw new InputError(`${spec.env}=${raw}: expected ${spec.fractions ? 'a number' : 'a whole number'} of ${spec.unit} greater than 0 and at most ${spec.max}`);
  }
  return n;
}

/** How to raise a bound, for messages: `GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=<seconds> raises it`. */
export function raiseEngineLimit(name: EngineLimit): string {
  const spec: EngineLimitSpec = ENGINE_LIMITS[name];
  return `${spec.env}=<${spec.unit}> raises it`;
}

/** `120 s`, `0.5 s`. */
export function seconds(ms: number): string {
  const s = ms / 1000;
  return `${s >= 10 ? Math.round(s) : Number(s.toFixed(1))} s`;
}

/**
 * The time all engine runs of one command may take together: one deadline, from the first run on, that
 * every run's own bound is cut to, so a retry (the per-folder builds after a failed combined build) never
 * multiplies it.
 */
export class EngineBudget {
  private deadline: number | undefined;
  private passed = false;
  readonly totalMs: number;

  constructor(totalMs?: number) {
    this.totalMs = totalMs ?? engineLimit('budget') * 1000;
  }

  /** Milliseconds left (the clock starts at the first call). */
  remaining(): number {
    this.deadline ??= performance.now() + this.totalMs;
    return Math.max(0, this.deadline - performance.now());
  }

  /** Whether a run was stopped at the deadline or refused after it (what the command renders is incomplete). */
  get spent(): boolean {
    return this.passed;
  }

  /** Records that a run was stopped at (or refused after) the deadline; returns why, as message() says it. */
  stopped(): string {
    this.passed = true;
    return this.message();
  }

  /** Why a run was stopped at (or refused after) the deadline. */
  message(): string {
    return `the engines' work of this command passed its bound of ${seconds(this.totalMs)}; stopped (${raiseEngineLimit('budget')})`;
  }
}
