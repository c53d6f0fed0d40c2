import { RenderCache, RenderOutput } from './render-cache';
import { EngineBudget, EngineError } from '../engines';

/** A chart made renderable (renderableChart): the folder helm renders and its digest. */
export interface PreparedChart {
  readonly dir: string;
  readonly digest: string;
}

/**
 * What a render renders: a chart (helm template), an overlay of a vendored release, a folder of the tree (alone, or
 * several in one kustomize run), a folder built on remote bases (a cluster's argocd folder over Argo CD's install).
 */
export type RenderKind = 'chart' | 'overlay' | 'folder' | 'remote-based';

/** Where a run's renders of one kind came from. */
export interface RenderCount {
  /** Engine runs (a build of several folders together is one run; the determinism rule's second renders count). */
  runs: number;
  /** Renders read from the cache (and verified) instead. */
  cached: number;
  /** Renders this run had made already, or was making, given again (another cluster's, another Application's). */
  shared: number;
}

const RENDER_KINDS: readonly RenderKind[] = ['chart', 'overlay', 'folder', 'remote-based'];

/** Finished renders kept in memory, the ones used last (each some MB of objects: Argo CD's install is 5 MB). */
const KEPT_RENDERS = 16;

/**
 * What the engines render for one command, shared by all the clusters it checks: each distinct engine input
 * (a chart with its version, values, flags and Kubernetes version; an overlay with its patches; a folder's
 * content) is rendered, or read from the cache and verified, once per run, also when several clusters ask for
 * it at the same time; a prepared chart is made (or verified) once per run. It also holds the command's one
 * engine budget: sharing renders never multiplies the bound, and never skips a check of what a render gives.
 *
 * Renders of charts and overlays stay in memory (a fleet asks for the same few again and again), the
 * KEPT_RENDERS used last: a fleet whose every cluster has its own (its name in the values, say) holds a few of
 * them at a time, not the fleet's; a folder's build only until its clusters took it (each cluster's folders are
 * its own).
 */
export class RenderSession {
  readonly cache: RenderCache;
  readonly budget: EngineBudget;
  /** Renders running, and the ones kept (in the order used, the last used last). */
  private readonly renders = new Map<string, Promise<RenderOutput>>();
  private readonly kept = new Map<string, Promise<RenderOutput>>();
  private readonly charts = new Map<string, PreparedChart>();
  private readonly reruns = new Map<string, Promise<RenderOutput>>();
  private readonly rerunsKept = new Map<string, Promise<RenderOutput>>();
  /**
   * Renders a bound stopped (a hang at its timeout, a flood, the memory cap, the budget): never run again in this
   * run, neither when asked again nor as the determinism rule's second render; each asker gets the same failure.
   */
  private readonly stopped = new Map<string, Promise<RenderOutput>>();
  /** Where this run's renders came from, by kind (check --format json reports it). */
  readonly counts = Object.fromEntries(RENDER_KINDS.map((k) => [k, { runs: 0, cached: 0, shared: 0 }])) as Readonly<Record<RenderKind, RenderCount>>;

  constructor(cacheDir: string | undefined, budget: EngineBudget = new EngineBudget()) {
    this.cache = new RenderCache(cacheDir);
    this.budget = budget;
  }

  /**
   * The output of the render of `key`: this run's (also one still running), else the cache's, else `run`'s,
   * which is then cached. A render that fails fails every caller that asked for it at the same time; the next
   * one runs it again. `keep`: stays in memory for the rest of the run (otherwise only while it runs).
   */
  render(key: string, kind: RenderKind, run: () => Promise<RenderOutput>, keep: boolean): Promise<RenderOutput> {
    const known = this.renders.get(key) ?? this.kept.get(key) ?? this.stopped.get(key);
    if (known) {
      if (this.kept.delete(key)) this.kept.set(key, known);
      this.counts[kind].shared += 1;
      return known;
    }
    const hit = this.cache.get(key);
    this.counts[kind][hit ? 'cached' : 'runs'] += 1;
    const pending = hit ? Promise.resolve(hit) : run().then((output) => {
      this.cache.put(key, output);
      return output;
    });
    this.renders.set(key, pending);
    const forget = () => {
      if (this.renders.get(key) === pending) this.renders.delete(key);
    };
    pending.then(() => {
      forget();
      if (keep) this.keep(this.kept, key, pending);
    }, (e: unknown) => {
      forget();
      this.noteStopped(key, pending, e);
    });
    return pending;
  }

  /** A render that failed because a bound stopped it is remembered as failed (running it again would spend the bound again). */
  private noteStopped(key: string, pending: Promise<RenderOutput>, e: unknown): void {
    if (e instanceof EngineError && e.bounded) this.stopped.set(key, pending);
  }

  private keep(into: Map<string, Promise<RenderOutput>>, key: string, output: Promise<RenderOutput>): void {
    into.delete(key);
    into.set(key, output);
    while (into.size > KEPT_RENDERS) into.delete(into.keys().next().value!);
  }

  /**
   * A second render of `key`, afresh (the determinism rule compares it with the first): `run`'s output, whatever
   * the cache holds, never cached, and kept in memory as the first renders are (the KEPT_RENDERS used last): once
   * per run for what a fleet shares; a failed one runs again when asked again.
   */
  rerun(key: string, kind: RenderKind, run: () => Promise<RenderOutput>): Promise<RenderOutput> {
    const known = this.reruns.get(key) ?? this.rerunsKept.get(key) ?? this.stopped.get(key);
    if (known) {
      if (this.rerunsKept.delete(key)) this.rerunsKept.set(key, known);
      this.counts[kind].shared += 1;
      return known;
    }
    this.counts[kind].runs += 1;
    const pending = run();
    this.reruns.set(key, pending);
    const forget = () => {
      if (this.reruns.get(key) === pending) this.reruns.delete(key);
    };
    pending.then(() => {
      forget();
      this.keep(this.rerunsKept, key, pending);
    }, (e: unknown) => {
      forget();
      this.noteStopped(key, pending, e);
    });
    return pending;
  }

  /** A render's output known to this run or to the cache (nothing is run). */
  known(key: string, kind: RenderKind): RenderOutput | undefined {
    const hit = this.cache.get(key);
    if (hit) this.counts[kind].cached += 1;
    return hit;
  }

  /** Counts an engine run made by other means (a combined build of several folders). */
  ran(kind: RenderKind): void {
    this.counts[kind].runs += 1;
  }

  /** Records a render this run made by other means (a combined build), under its key. */
  put(key: string, output: RenderOutput): void {
    this.cache.put(key, output);
  }

  /** A chart prepared once per run: `prepare` runs (and verifies the cache's copy) the first time a chart folder is asked for. */
  chart(dir: string, prepare: () => PreparedChart): PreparedChart {
    let prepared = this.charts.get(dir);
    if (!prepared) {
      prepared = prepare();
      this.charts.set(dir, prepared);
    }
    return prepared;
  }
}
