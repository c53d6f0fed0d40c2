import { existsSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { isMainThread, MessageChannel, MessagePort, receiveMessageOnPort, Worker, workerData } from 'node:worker_threads';
import type { ClusterOutcome, ClusterStage } from './cluster-stage';
import { installModuleCache } from '../cache/module-cache';
import { currentWatch, WATCHED_WORKER, Watcher, WatchReport } from '../cache/read-watch';
import { InputError, WriteFailed, fsErrorText, isFsError } from '../errors';
import type { ClusterDescription } from '../model/description';
import type { ClusterModel } from '../model/model';
import type { MultiKueueRole } from '../model/multikueue-role';
import type { StagedTree } from '../render/write';

/*
 * The render stack is loaded lazily: a worker records its thread first (THREAD_IDS), so that the main
 * thread sees it die even while it loads the modules.
 */
const load = createRequire(__filename);
const stack = () => ({
  processCluster: (load('./cluster-stage') as typeof import('./cluster-stage')).processCluster,
  buildModel: (load('../model/model') as typeof import('../model/model')).buildModel,
  withMultiKueue: (load('../model/model') as typeof import('../model/model')).withMultiKueue,
  stageTree: (load('../render/write') as typeof import('../render/write')).stageTree,
  SchemaStore: (load('../validate/schemas') as typeof import('../validate/schemas')).SchemaStore,
  ManifestValidator: (load('../validate/validator') as typeof import('../validate/validator')).ManifestValidator,
});

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
/** Set (to 1) to use GPU_CLUSTER_MANIFESTS_THREADS threads even when there are fewer CPUs. */
export const THREADS_FORCE_ENV = 'GPU_CLUSTER_MANIFESTS_THREADS_FORCE';
/** MB of JavaScript heap each render thread may use. */
export const THREAD_MEMORY_ENV = 'GPU_CLUSTER_MANIFESTS_THREAD_MEMORY';
/** Below this many clusters per thread a worker's start (loading the render stack) costs more than it saves. */
const MIN_CLUSTERS_PER_THREAD = 32;
const MAX_THREADS = 8;
/** A worker that has not said anything for this long is stuck (where the OS cannot tell whether its thread is alive). */
const STALL_MS = 300_000;
/** How often the main thread looks whether a worker's thread is still alive while it waits. */
const LOOK_MS = 200;
const TAG = 'gpu-cluster-manifests-render-worker';
/**
 * A worker keeps nothing from one cluster to the next (some 40 MB live: code and the validators), but
 * V8 lets a heap grow to hundreds of MB before it collects: a ceiling keeps the threads' memory together
 * near one process's.
 */
const DEFAULT_THREAD_MEMORY_MB = 128;

/** Each render thread's heap ceiling: GPU_CLUSTER_MANIFESTS_THREAD_MEMORY, else 128 MB. */
export function threadMemoryMb(): number {
  const given = process.env[THREAD_MEMORY_ENV];
  if (given === undefined || given === '') return DEFAULT_THREAD_MEMORY_MB;
  const n = Number(given);
  if (!Number.isInteger(n) || n < 32 || n > 65_536) throw new InputError(`${THREAD_MEMORY_ENV}=${given}: expected a number of MB from 32 to 65536`);
  return n;
}

/** The compiled worker script (this module); absent when running from the TypeScript sources. */
const WORKER_FILE = __filename.endsWith('.js') ? __filename : undefined;

/** Slots of the shared counters. */
const NEXT = 0;
const FAILED = 1;
const DONE = 2;
const SIGNAL = 3;
const READY = 4;
/** Then three slots per worker: its OS thread id (Linux), the cluster it renders (index + 1, 0: none), whether it is done. */
const PER_WORKER = 5;
const slot = (worker: number, field: 0 | 1 | 2) => PER_WORKER + 3 * worker + field;
const THREAD_ID = 0;
const CURRENT = 1;
const FINISHED = 2;

/** This thread's id in the OS (`/proc/thread-self`), or 0 where there is none to read. */
function osThreadId(): number {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop()) || 0;
  } catch {
    return 0;
  }
}

/**
 * How many threads render `clusters` clusters: GPU_CLUSTER_MANIFESTS_THREADS, else the CPUs (at most 8)
 * with at least MIN_CLUSTERS_PER_THREAD clusters each, as build tools use every CPU; 1 (no workers)
 * from the TypeScript sources. Measured on the shared 2-CPU machine: two threads took 0.8x the time of
 * one when it was quiet, and up to 1.15x when other work left the process one CPU's worth.
 */
export function renderThreads(clusters: number, notify?: (line: string) => void): number {
  const given = process.env[THREADS_ENV];
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new InputError(`${THREADS_ENV}=${given}: expected a number of threads from 1 to 64`);
    const cpus = availableParallelism();
    const forced = /^(1|true|yes)$/i.test(process.env[THREADS_FORCE_ENV] ?? '');
    // more threads than CPUs only share the CPUs, each with its own heap and copy of the render stack
    const used = forced ? n : Math.min(n, cpus);
    if (used < n && WORKER_FILE && clusters > cpus) notify?.(`note: ${THREADS_ENV}=${n}: rendering on ${cpus} threads, one per CPU (${THREADS_FORCE_ENV}=1 uses ${n})`);
    return WORKER_FILE ? Math.min(used, clusters) : 1;
  }
  if (!WORKER_FILE) return 1;
  return Math.max(1, Math.min(availableParallelism(), MAX_THREADS, Math.floor(clusters / MIN_CLUSTERS_PER_THREAD)));
}

/** An error as it crosses threads. */
interface ThreadError {
  readonly kind: 'input' | 'write' | 'other';
  readonly message: string;
  readonly details?: readonly string[];
  /** An error's code (MODULE_NOT_FOUND: the installed package is incomplete, exit 2 and reinstall, not an internal error). */
  readonly code?: string;
}

function toThreadError(e: unknown): ThreadError {
  if (e instanceof InputError) return { kind: 'input', message: e.message, details: e.details };
  if (e instanceof WriteFailed) return { kind: 'write', message: e.message };
  if (isFsError(e)) return { kind: 'write', message: fsErrorText(e) };
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return { kind: 'other', message: (e as Error)?.message ?? String(e), ...(typeof code === 'string' ? { code } : {}) };
}

function fromThreadError(e: ThreadError): Error {
  if (e.kind === 'input') return new InputError(e.message, e.details ?? []);
  if (e.kind === 'write') return new WriteFailed(e.message);
  return Object.assign(new Error(`render thread: ${e.message}`), e.code ? { code: e.code } : {});
}

type Message =
  | { readonly type: 'staged'; readonly staged: StagedTree }
  | { readonly type: 'outcome'; readonly outcome: ClusterOutcome }
  | { readonly type: 'watched'; readonly report: WatchReport }
  | { readonly type: 'error'; readonly index: number; readonly error: ThreadError };

interface WorkerData {
  readonly [TAG]: true;
  readonly descriptions: readonly ClusterDescription[];
  /** Each description's part in a MultiKueue fleet (worked out from the whole fleet by the loader). */
  readonly roles: readonly (MultiKueueRole | undefined)[];
  readonly out: string;
  readonly schemas: readonly string[] | false;
  /** The whole fleet is rendered (ClusterStage.fleet). */
  readonly fleet: boolean;
  readonly shared: Int32Array;
  readonly port: MessagePort;
  /** This worker's slots in `shared`. */
  readonly slot: number;
  /** The main thread's run is watched (the up-to-date record): the worker watches what it reads too (excluding these paths) and reports it. */
  readonly watch?: readonly string[];
  readonly [WATCHED_WORKER]?: true;
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
  const { processCluster } = stack();
  const workerCount = Math.max(0, plan.threads - 1);
  const shared = new Int32Array(new SharedArrayBuffer(4 * (PER_WORKER + 3 * workerCount)));
  const total = models.length;
  const descriptions = models.map((m) => m.description);
  const roles = models.map((m) => m.multiKueue);
  const ports: MessagePort[] = [];
  const workers: Worker[] = [];
  const memoryMb = threadMemoryMb();
  /** Workers whose thread ended without saying it was done (killed by its heap limit, or crashed). */
  const dead = new Set<number>();
  let error: { index: number; error: Error } | undefined;
  const fail = (index: number, e: Error) => {
    if (!error || index < error.index) error = { index, error: e };
    Atomics.store(shared, FAILED, 1);
    Atomics.store(shared, NEXT, total);
  };
  /** Looks whether each worker's thread still lives (Linux: /proc/self/task/<tid>); a dead one fails the render at once. */
  const lookAtThreads = () => {
    for (let t = 0; t < workers.length; t++) {
      const tid = Atomics.load(shared, slot(t, THREAD_ID));
      if (dead.has(t) || tid === 0 || Atomics.load(shared, slot(t, FINISHED)) === 1 || existsSync(`/proc/self/task/${tid}`)) continue;
      // it may have finished between the two loads
      if (Atomics.load(shared, slot(t, FINISHED)) === 1) continue;
      dead.add(t);
      const current = Atomics.load(shared, slot(t, CURRENT)) - 1;
      const name = current >= 0 ? models[current].name : undefined;
      fail(current >= 0 ? current : Number.MAX_SAFE_INTEGER, new InputError(`${name ?? 'a render thread'}: ${name ? 'its render thread ended while rendering it' : 'ended before it took a cluster'}, `
        + `most likely out of memory (each render thread's heap is limited to ${memoryMb} MB: ${THREAD_MEMORY_ENV}=<MB> raises it, `
        + `${THREADS_ENV}=1 renders on the main thread alone)`));
    }
  };
  /** Workers that are done, or dead. */
  const settled = () => Atomics.load(shared, DONE) + dead.size;
  const handle = (m: Message) => {
    if (m.type === 'staged') sinks.staged(m.staged);
    else if (m.type === 'outcome') sinks.outcome(m.outcome);
    else if (m.type === 'watched') currentWatch()?.merge(m.report);
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
  /** Blocks until `ready()`, reading the threads' messages and looking at their threads meanwhile; false when none answered for STALL_MS. */
  const waitFor = (ready: () => boolean): boolean => {
    let heard = Date.now();
    while (!ready()) {
      const seen = Atomics.load(shared, SIGNAL);
      drain();
      lookAtThreads();
      if (ready()) break;
      if (Atomics.wait(shared, SIGNAL, seen, LOOK_MS) !== 'timed-out') heard = Date.now();
      else if (Date.now() - heard > STALL_MS) return false;
    }
    return true;
  };
  const watch = currentWatch();
  try {
    for (let t = 0; t < workerCount; t++) {
      const { port1, port2 } = new MessageChannel();
      const data: WorkerData = {
        [TAG]: true,
        descriptions,
        roles,
        out: plan.out,
        schemas: plan.schemas,
        fleet: stage.fleet ?? false,
        shared,
        port: port2,
        slot: t,
        ...(watch ? { watch: watch.excluded, [WATCHED_WORKER]: true as const } : {}),
      };
      const worker = new Worker(WORKER_FILE!, { workerData: data, transferList: [port2], resourceLimits: { maxOldGenerationSizeMb: memoryMb } });
      // its death is seen through its thread (lookAtThreads), at once; the event comes later, if at all
      worker.on('error', () => undefined);
      workers.push(worker);
      ports.push(port1);
    }
    // Every thread starts together (a worker loads the render stack first): the clusters are shared
    // out the same way whatever the machine's load.
    if (!waitFor(() => Atomics.load(shared, READY) + settled() >= workers.length)) {
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
      lookAtThreads();
    }
  } finally {
    // no thread takes another cluster after a throw; every one finishes the one it has
    if (error) Atomics.store(shared, NEXT, total);
    if (!waitFor(() => settled() >= workers.length)) {
      fail(Number.MAX_SAFE_INTEGER, new Error(`a render thread has not answered for ${STALL_MS / 1000} s`));
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
  // first of all: the main thread sees this thread die from now on
  Atomics.store(shared, slot(data.slot, THREAD_ID), osThreadId());
  // the render stack compiled with V8's code from the cache, as the main thread's (read before the watch: no input of the run)
  const moduleCache = installModuleCache('synth-worker');
  // before anything is loaded or read: what this thread reads is part of the watched run
  const watcher = data.watch ? new Watcher(data.watch) : undefined;
  watcher?.start();
  const post = (m: Message) => {
    port.postMessage(m);
    Atomics.add(shared, SIGNAL, 1);
    Atomics.notify(shared, SIGNAL);
  };
  const total = data.descriptions.length;
  let i = -1;
  try {
    const { processCluster, buildModel, withMultiKueue, stageTree, SchemaStore, ManifestValidator } = stack();
    const validator = data.schemas === false ? undefined : new ManifestValidator(SchemaStore.open(data.schemas), { requireNamespace: true });
    const stage: ClusterStage = { validator, out: data.out, fleet: data.fleet };
    Atomics.add(shared, READY, 1);
    Atomics.add(shared, SIGNAL, 1);
    Atomics.notify(shared, SIGNAL);
    for (i = Atomics.add(shared, NEXT, 1); i < total; i = Atomics.add(shared, NEXT, 1)) {
      Atomics.store(shared, slot(data.slot, CURRENT), i + 1);
      const o = processCluster(withMultiKueue(buildModel(data.descriptions[i]), data.roles[i]), i, stage, false);
      if (!o.valid) Atomics.store(shared, FAILED, 1);
      const counted = o.files !== undefined && Atomics.load(shared, FAILED) === 0;
      // an unchanged folder is not written: the main thread keeps it when the outcome arrives
      if (counted && !o.unchanged) stageTree(data.out, o.summary.name, o.files!, (staged) => post({ type: 'staged', staged }), false);
      post({ type: 'outcome', outcome: { ...o, files: undefined, fileCount: counted ? o.fileCount : 0 } });
      Atomics.store(shared, slot(data.slot, CURRENT), 0);
    }
  } catch (e) {
    Atomics.store(shared, FAILED, 1);
    Atomics.store(shared, NEXT, total);
    post({ type: 'error', index: i, error: toThreadError(e) });
  } finally {
    if (watcher) {
      watcher.addLoadedModules();
      watcher.stop();
      post({ type: 'watched', report: { seen: watcher.seen, unsound: watcher.whyUnsound() } });
    }
    // written now: the main thread ends this thread (terminate) once it is done, before an exit handler would run
    moduleCache?.save();
    Atomics.store(shared, slot(data.slot, FINISHED), 1);
    Atomics.add(shared, DONE, 1);
    Atomics.add(shared, SIGNAL, 1);
    Atomics.notify(shared, SIGNAL);
    port.close();
  }
}

if (!isMainThread && (workerData as Partial<WorkerData> | undefined)?.[TAG]) {
  runWorker(workerData as WorkerData);
}
