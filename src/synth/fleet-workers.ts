import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isMainThread, MessageChannel, MessagePort, receiveMessageOnPort, Worker, workerData } from 'node:worker_threads';
import { ClusterOutcome, ClusterStage, processCluster } from './cluster-stage';
import { InputError, WriteFailed, fsErrorText, isFsError } from '../errors';
import { ClusterDescription } from '../model/description';
import { buildModel, ClusterModel } from '../model/model';
import { stageTree, StagedTree } from '../render/write';
import { SchemaStore } from '../validate/schemas';
import { ManifestValidator } from '../validate/validator';

/**
 * A large fleet is shared out to worker threads: each takes the next cluster from a shared counter,
 * renders, validates and checks it and writes its folder to its temporary name in the output root,
 * whose lock the main thread holds (the main thread takes clusters too). Outcomes come back as plain
 * data. The first error stops every thread from writing; the main thread waits for all of them before
 * it deletes the temporary folders or swaps them in, so the write stays all or nothing.
 *
 * Synchronous like the rest of synth: the main thread blocks on the shared counters (Atomics.wait) and
 * reads the threads' messages with receiveMessageOnPort.
 */

/** Threads that render a fleet (the main thread included): a number, or 1 for none besides the main thread. */
export const THREADS_ENV = 'GPU_CLUSTER_MANIFESTS_THREADS';
/** Below this many clusters per thread a worker's start (loading the render stack) costs more than it saves. */
const MIN_CLUSTERS_PER_THREAD = 32;
const MAX_THREADS = 8;
/** A worker that has not said anything for this long has died. */
const STALL_MS = 300_000;
const TAG = 'gpu-cluster-manifests-render-worker';
/**
 * A worker keeps nothing from one cluster to the next (some 40 MB live: code and the validators), but
 * V8 lets a heap grow to hundreds of MB before it collects: a ceiling keeps the threads' memory together
 * near one process's.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 128 };

/** The compiled worker script (this module); absent when running from the TypeScript sources. */
const WORKER_FILE = __filename.endsWith('.js') ? __filename : undefined;

/** Slots of the shared counters. */
const NEXT = 0;
const FAILED = 1;
const DONE = 2;
const SIGNAL = 3;
const READY = 4;

/**
 * How many threads render `clusters` clusters: GPU_CLUSTER_MANIFESTS_THREADS, else the CPUs (at most 8)
 * with at least MIN_CLUSTERS_PER_THREAD clusters each, as build tools use every CPU; 1 (no workers)
 * from the TypeScript sources. Measured on the shared 2-CPU machine: two threads took 0.8x the time of
 * one when it was quiet, and up to 1.15x when other work left the process one CPU's worth.
 */
export function renderThreads(clusters: number): number {
  const given = process.env[THREADS_ENV];
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new InputError(`${THREADS_ENV}=${given}: expected a number of threads from 1 to 64`);
    return WORKER_FILE ? Math.min(n, clusters) : 1;
  }
  if (!WORKER_FILE) return 1;
  return Math.max(1, Math.min(availableParallelism(), MAX_THREADS, Math.floor(clusters / MIN_CLUSTERS_PER_THREAD)));
}

/** An error as it crosses threads. */
interface ThreadError {
  readonly kind: 'input' | 'write' | 'other';
  readonly message: string;
  readonly details?: readonly string[];
}

function toThreadError(e: unknown): ThreadError {
  if (e instanceof InputError) return { kind: 'input', message: e.message, details: e.details };
  if (e instanceof WriteFailed) return { kind: 'write', message: e.message };
  if (isFsError(e)) return { kind: 'write', message: fsErrorText(e) };
  return { kind: 'other', message: (e as Error)?.message ?? String(e) };
}

function fromThreadError(e: ThreadError): Error {
  if (e.kind === 'input') return new InputError(e.message, e.details ?? []);
  if (e.kind === 'write') return new WriteFailed(e.message);
  return new Error(`render thread: ${e.message}`);
}

type Message =
  | { readonly type: 'staged'; readonly staged: StagedTree }
  | { readonly type: 'outcome'; readonly outcome: ClusterOutcome }
  | { readonly type: 'error'; readonly index: number; readonly error: ThreadError };

interface WorkerData {
  readonly [TAG]: true;
  readonly descriptions: readonly ClusterDescription[];
  readonly out: string;
  readonly schemas: readonly string[] | false;
  readonly shared: Int32Array;
  readonly port: MessagePort;
}

/** What the render threads need besides the models. */
export interface ThreadPlan {
  readonly threads: number;
  /** The output root; the caller holds its lock. */
  readonly out: string;
  readonly schemas: readonly string[] | false;
  /** Whether the caller has seen an error (then no thread writes any more). */
  readonly failed: () => boolean;
}

/** Where the outcomes go, on the main thread. */
export interface ThreadSinks {
  /** Every cluster's outcome; the main thread's own carry their files (to write), the workers' do not (written). */
  outcome(o: ClusterOutcome): void;
  /** A tree a worker is about to write to a temporary folder: the caller's write adopts it. */
  staged(s: StagedTree): void;
}

/**
 * Renders every model on `plan.threads` threads (this one and plan.threads - 1 workers) and hands
 * each outcome to `sinks` on this thread. Returns once every worker is done, also when it throws: a
 * render error (the one of the lowest cluster), a worker's write error.
 */
export function renderOnThreads(models: readonly ClusterModel[], plan: ThreadPlan, stage: ClusterStage, sinks: ThreadSinks): void {
  const shared = new Int32Array(new SharedArrayBuffer(4 * 5));
  const total = models.length;
  const descriptions = models.map((m) => m.description);
  const ports: MessagePort[] = [];
  const workers: Worker[] = [];
  let error: { index: number; error: Error } | undefined;
  /** Blocks until `ready()`, reading the threads' messages meanwhile; false when a thread stopped answering. */
  const waitFor = (ready: () => boolean): boolean => {
    let heard = Date.now();
    while (!ready()) {
      const seen = Atomics.load(shared, SIGNAL);
      drain();
      if (ready()) break;
      if (Atomics.wait(shared, SIGNAL, seen, 1000) !== 'timed-out') heard = Date.now();
      else if (Date.now() - heard > STALL_MS) return false;
    }
    return true;
  };
  const fail = (index: number, e: Error) => {
    if (!error || index < error.index) error = { index, error: e };
    Atomics.store(shared, FAILED, 1);
    Atomics.store(shared, NEXT, total);
  };
  const handle = (m: Message) => {
    if (m.type === 'staged') sinks.staged(m.staged);
    else if (m.type === 'outcome') sinks.outcome(m.outcome);
    else fail(m.index, fromThreadError(m.error));
  };
  const drain = () => {
    for (const port of ports) {
      for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) {
        try {
          handle(m.message as Message);
        } catch (e) {
          fail(Number.MAX_SAFE_INTEGER, e as Error);
        }
      }
    }
  };
  try {
    for (let t = 1; t < plan.threads; t++) {
      const { port1, port2 } = new MessageChannel();
      const data: WorkerData = { [TAG]: true, descriptions, out: plan.out, schemas: plan.schemas, shared, port: port2 };
      workers.push(new Worker(WORKER_FILE!, { workerData: data, transferList: [port2], resourceLimits: WORKER_LIMITS }));
      ports.push(port1);
    }
    // Every thread starts together (a worker loads the render stack first): the clusters are shared
    // out the same way whatever the machine's load.
    if (!waitFor(() => Atomics.load(shared, READY) + Atomics.load(shared, DONE) >= workers.length)) {
      fail(Number.MAX_SAFE_INTEGER, new Error(`a render thread did not start within ${STALL_MS / 1000} s`));
    }
    for (;;) {
      if (plan.failed()) Atomics.store(shared, FAILED, 1);
      const i = Atomics.add(shared, NEXT, 1);
      if (i >= total) break;
      let o: ClusterOutcome;
      try {
        o = processCluster(models[i], i, stage, false);
      } catch (e) {
        fail(i, e as Error);
        break;
      }
      if (!o.valid) Atomics.store(shared, FAILED, 1);
      try {
        sinks.outcome(o);
      } catch (e) {
        fail(i, e as Error);
        break;
      }
      drain();
    }
  } finally {
    // no thread takes another cluster after a throw; every one finishes the one it has
    if (error) Atomics.store(shared, NEXT, total);
    let heard = Date.now();
    while (Atomics.load(shared, DONE) < workers.length) {
      const seen = Atomics.load(shared, SIGNAL);
      drain();
      if (Atomics.load(shared, DONE) >= workers.length) break;
      if (Atomics.wait(shared, SIGNAL, seen, 1000) !== 'timed-out') {heard = Date.now();} else if (Date.now() - heard > STALL_MS) {
        fail(Number.MAX_SAFE_INTEGER, new Error(`a render thread has not answered for ${STALL_MS / 1000} s`));
        break;
      }
    }
    drain();
    for (const w of workers) void w.terminate();
    for (const p of ports) p.close();
  }
  if (error) throw error.error;
}

/** The worker's side: clusters from the shared counter until there are none (or an error stops them). */
function runWorker(data: WorkerData): void {
  const { shared, port } = data;
  const post = (m: Message) => {
    port.postMessage(m);
    Atomics.add(shared, SIGNAL, 1);
    Atomics.notify(shared, SIGNAL);
  };
  const total = data.descriptions.length;
  let i = -1;
  try {
    const validator = data.schemas === false ? undefined : new ManifestValidator(SchemaStore.open(data.schemas), { requireNamespace: true });
    const stage: ClusterStage = { validator, out: data.out };
    Atomics.add(shared, READY, 1);
    Atomics.add(shared, SIGNAL, 1);
    Atomics.notify(shared, SIGNAL);
    for (i = Atomics.add(shared, NEXT, 1); i < total; i = Atomics.add(shared, NEXT, 1)) {
      const o = processCluster(buildModel(data.descriptions[i]), i, stage, false);
      if (!o.valid) Atomics.store(shared, FAILED, 1);
      const counted = o.files !== undefined && Atomics.load(shared, FAILED) === 0;
      // an unchanged folder is not written: the main thread keeps it when the outcome arrives
      if (counted && !o.unchanged) stageTree(data.out, o.summary.name, o.files!, (staged) => post({ type: 'staged', staged }), false);
      post({ type: 'outcome', outcome: { ...o, files: undefined, fileCount: counted ? o.fileCount : 0 } });
    }
  } catch (e) {
    Atomics.store(shared, FAILED, 1);
    Atomics.store(shared, NEXT, total);
    post({ type: 'error', index: i, error: toThreadError(e) });
  } finally {
    Atomics.add(shared, DONE, 1);
    Atomics.add(shared, SIGNAL, 1);
    Atomics.notify(shared, SIGNAL);
    port.close();
  }
}

if (!isMainThread && (workerData as Partial<WorkerData> | undefined)?.[TAG]) {
  runWorker(workerData as WorkerData);
}
