import { describe, KubeClient, KubeObject } from './kube-client';
import { KUEUE_API } from './kueue';
import { Interruptions, ListWatch, ListWatchChange, ListWatchClient } from './list-watch';
import { jobState, WorkloadState } from './sample-jobs';
import { Manifest } from '../render/manifest';

/**
 * The sample jobs `rehearse --from` (issue 51) submitted, watched from their submission until the change has converged:
 * their Workloads, the ClusterQueues that admit them and the jobs themselves; before the push, until Kueue has decided
 * each (`until`); from the mark at the push, each state Kueue gives a job's Workload as it writes it (an eviction
 * re-admitted a moment later too), without reading them again and again. A job's state is read as
 * sample-jobs.ts readJobs reads it: its Workload (the one it owns), or none: unmanaged while the job is there, gone when
 * not; an admitted one with its ClusterQueue's nominal quota as it is then.
 *
 * Imports no test framework.
 */

type Json = Record<string, any>;

const WORKLOADS = `${KUEUE_API}/workloads`;
const CLUSTER_QUEUES = `${KUEUE_API}/clusterqueues`;

export class JobWatch {
  private readonly workloads: ListWatch;
  private readonly queues: ListWatch;
  /** One watch per kind and namespace of the jobs. */
  private readonly jobWatches = new Map<string, ListWatch>();
  /** The states of each job since the mark, each one different from the one before. */
  private readonly states = new Map<string, WorkloadState[]>();
  private marked = false;
  /** The waits of `until`, each woken by every change the streams deliver. */
  private readonly waiters = new Set<() => void>();
  private stopped = false;
  /** Lists again and failures since the mark: a state Kueue gave a job and took back while a watch was down is not seen. */
  private readonly interruptions = new Interruptions();

  constructor(client: ListWatchClient & Pick<KubeClient, 'resource'>, private readonly jobs: readonly KubeObject[]) {
    const opts = { onError: this.interruptions.failed };
    const changed = (source: string) => (type: ListWatchChange) => {
      if (type === 'SYNC') this.interruptions.synced(source);
      this.changed();
    };
    this.workloads = new ListWatch(client, WORKLOADS, changed(WORKLOADS), opts);
    this.queues = new ListWatch(client, CLUSTER_QUEUES, changed(CLUSTER_QUEUES), opts);
    for (const j of jobs) {
      const key = `${j.apiVersion} ${j.kind} ${j.metadata.namespace ?? ''}`;
      if (this.jobWatches.has(key)) continue;
      this.jobWatches.set(key, new ListWatch(client, async () => {
        const res = await client.resource(j.apiVersion, j.kind);
        if (!res) return undefined;
        const base = j.apiVersion.includes('/') ? `/apis/${j.apiVersion}` : `/api/${j.apiVersion}`;
        return `${base}${res.namespaced ? `/namespaces/${encodeURIComponent(j.metadata.namespace ?? 'default')}` : ''}/${res.plural}`;
      }, changed(key), opts));
    }
  }

  private get all(): ListWatch[] {
    return [this.workloads, this.queues, ...this.jobWatches.values()];
  }

  start(): this {
    for (const w of this.all) w.start();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of [...this.waiters]) wake();
    await Promise.all(this.all.map((w) => w.stop()));
  }

  /**
   * Waits until `done` holds, looked at when the watches have listed and on each change their streams deliver (no
   * request of its own), at most `ms`; answers whether it held. A stop ends the wait (false, unless it held).
   */
  async until(done: () => boolean, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (this.synced && done()) return true;
      const left = deadline - Date.now();
      if (left <= 0 || this.stopped) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.waiters.add(wake);
      });
    }
  }

  /** Every collection listed at least once. */
  get synced(): boolean {
    return this.all.every((w) => w.synced);
  }

  /** The first failure of a list or watch that fails still, if one does. */
  get lastError(): string | undefined {
    return this.all.map((w) => w.lastError).find((e) => e !== undefined);
  }

  /** From now on each job's states are recorded, from the state it has now. */
  mark(): void {
    this.marked = true;
    this.states.clear();
    this.interruptions.mark();
    this.changed();
  }

  /** Each job's states since the mark (`Kind namespace/name`): the one at the mark first, then each different one. */
  seen(): Map<string, WorkloadState[]> {
    return new Map([...this.states].map(([job, s]) => [job, [...s]]));
  }

  /**
   * When a watch was interrupted since the mark (a list again after a failure or an expired version), what it says: a
   * state a job had meanwhile (an eviction re-admitted) was not seen. Undefined when none was.
   */
  gaps(): string | undefined {
    return this.interruptions.describe('the sample jobs and their Workloads', 'a state a job had meanwhile (an eviction re-admitted) is not reported');
  }

  /** Each job's state now, as the watches have it. */
  now(): Map<string, WorkloadState> {
    const queues = new Map([...this.queues.objects.values()].map((q) => [q.metadata.name, q as Manifest]));
    return new Map([...this.live()].map(([job, { there, workload }]) => [job, jobState(workload, there, queues)]));
  }

  /** Each job's Workload now, as the watches have it (kueue.ts workloadOwnedBy's reading): undefined when none, or the job is gone. */
  workloadsNow(): Map<string, Json | undefined> {
    return new Map([...this.live()].map(([job, { workload }]) => [job, workload]));
  }

  /** Each job (`Kind namespace/name`): whether it is there, and the Workload it owns. */
  private live(): Map<string, { there: boolean; workload?: Json }> {
    const out = new Map<string, { there: boolean; workload?: Json }>();
    for (const job of this.jobs) {
      const ns = job.metadata.namespace ?? 'default';
      const live = this.jobWatches.get(`${job.apiVersion} ${job.kind} ${job.metadata.namespace ?? ''}`)?.objects.get(`${ns}/${job.metadata.name}`);
      const workload = live && [...this.workloads.objects.values()].find((x) => x.metadata.namespace === ns
        && ((x.metadata.ownerReferences ?? []) as Json[]).some((r) => r.uid === live.metadata.uid));
      out.set(describe(job), { there: live !== undefined, ...(workload ? { workload } : {}) });
    }
    return out;
  }

  private changed(): void {
    for (const wake of [...this.waiters]) wake();
    if (!this.marked || !this.synced) return;
    for (const [job, s] of this.now()) {
      const seen = this.states.get(job) ?? [];
      if (seen.length > 0 && JSON.stringify(seen.at(-1)) === JSON.stringify(s)) continue;
      this.states.set(job, [...seen, s]);
    }
  }
}
