import { describe, expect, it } from 'vitest';
import { StubStreams, until } from './stub-streams';
import { JobWatch } from '../../src/twin/job-watch';
import { KubeObject, Resource } from '../../src/twin/kube-client';
import { KUEUE_API } from '../../src/twin/kueue';
import { undecidedJobs } from '../../src/twin/rehearse';

/*
 * The sample jobs of `rehearse --from`, watched against a stub API server whose streams the test drives: each state
 * Kueue writes to a job's Workload after the mark is seen as it comes (an eviction re-admitted a moment later too), a
 * ClusterQueue's quota change is read into the admitted state, a Workload or job gone reads as readJobs reads it, and
 * nothing is listed again while the streams run; before the push, the wait for Kueue to decide each job ends on the
 * change that decides the last one, or names each it did not decide when its bound runs out.
 */

const WORKLOADS = `${KUEUE_API}/workloads`;
const QUEUES = `${KUEUE_API}/clusterqueues`;
const MPIJOBS = '/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs';
let version = 100;
const rv = () => String(++version);

const job: KubeObject = { apiVersion: 'kubeflow.org/v2beta1', kind: 'MPIJob', metadata: { name: 'nccl-all-reduce', namespace: 'default' } };
const live = (): KubeObject => ({ ...job, metadata: { ...job.metadata, uid: 'job-uid', resourceVersion: rv() } });

const workload = (conditions: Record<string, string>, admitted: boolean): KubeObject => ({
  apiVersion: 'kueue.x-k8s.io/v1beta2',
  kind: 'Workload',
  metadata: { name: 'mpijob-nccl-all-reduce-1a2b3', namespace: 'default', resourceVersion: rv(), ownerReferences: [{ uid: 'job-uid' }] },
  status: {
    conditions: Object.entries(conditions).map(([type, status]) => ({ type, status, reason: type === 'Evicted' ? 'Preempted' : type })),
    ...(admitted ? { admission: { clusterQueue: 'default', podSetAssignments: [{ flavors: { 'nvidia.com/gpu': 'h100' }, resourceUsage: { 'nvidia.com/gpu': '16' } }] } } : {}),
  },
});

const queue = (gpus: string): KubeObject => ({
  apiVersion: 'kueue.x-k8s.io/v1beta2',
  kind: 'ClusterQueue',
  metadata: { name: 'default', resourceVersion: rv() },
  spec: { resourceGroups: [{ coveredResources: ['nvidia.com/gpu'], flavors: [{ name: 'h100', resources: [{ name: 'nvidia.com/gpu', nominalQuota: gpus }] }] }] },
});

class Stub extends StubStreams {
  async resource(apiVersion: string, kind: string): Promise<Resource | undefined> {
    return apiVersion === 'kubeflow.org/v2beta1' && kind === 'MPIJob' ? { plural: 'mpijobs', namespaced: true } : undefined;
  }
}

const admitted = { state: 'admitted', clusterQueue: 'default' };
const holding = (nominal: string) => [{ resource: 'nvidia.com/gpu', flavor: 'h100', amount: 16, written: '16', nominal: Number(nominal), nominalWritten: nominal }];

describe('JobWatch', () => {
  it('sees each state of a job\'s Workload after the mark as Kueue writes it, its queue\'s quota as it changes, and a Workload or job gone', async () => {
    const s = new Stub();
    const items: Record<string, KubeObject[]> = { [WORKLOADS]: [workload({ QuotaReserved: 'True', Admitted: 'True' }, true)], [QUEUES]: [queue('4')], [MPIJOBS]: [live()] };
    s.itemsOf = (p) => items[p] ?? [];
    const w = new JobWatch(s, [job]).start();
    try {
      await until(() => w.synced && [WORKLOADS, QUEUES, MPIJOBS].every((p) => s.watching(p)));
      // before the mark: nothing recorded
      s.send({ type: 'MODIFIED', object: queue('8') }, QUEUES);
      expect(w.seen().size).toBe(0);
      w.mark();
      // evicted, then admitted again a moment later (a per-second read would likely see neither)
      s.send({ type: 'MODIFIED', object: workload({ QuotaReserved: 'False', Admitted: 'False', Evicted: 'True' }, false) }, WORKLOADS);
      s.send({ type: 'MODIFIED', object: workload({ QuotaReserved: 'True', Admitted: 'True', Evicted: 'False' }, true) }, WORKLOADS);
      // a quota cut: the admitted state with the queue's new nominal quota
      s.send({ type: 'MODIFIED', object: queue('0') }, QUEUES);
      // a change that keeps the state records nothing
      s.send({ type: 'MODIFIED', object: queue('0') }, QUEUES);
      s.send({ type: 'DELETED', object: workload({}, false) }, WORKLOADS);
      s.send({ type: 'DELETED', object: live() }, MPIJOBS);
      expect(w.seen().get('MPIJob default/nccl-all-reduce')).toEqual([
        { ...admitted, holds: holding('8') },
        { state: 'evicted', reason: 'Preempted' },
        { ...admitted, holds: holding('8') },
        { ...admitted, holds: holding('0') },
        { state: 'unmanaged' },
        { state: 'gone' },
      ]);
      expect(s.lists.sort()).toEqual([MPIJOBS, QUEUES, WORKLOADS]);
      expect(w.gaps()).toBeUndefined();
    } finally {
      await w.stop();
    }
  });

  it('a watch that had to list again since the mark: gaps() says a state the job had meanwhile is not reported; a new mark starts afresh', async () => {
    const s = new Stub();
    s.itemsOf = (p) => (p === WORKLOADS ? [workload({ QuotaReserved: 'True', Admitted: 'True' }, true)] : p === QUEUES ? [queue('4')] : p === MPIJOBS ? [live()] : []);
    const w = new JobWatch(s, [job]).start();
    try {
      await until(() => w.synced && [WORKLOADS, QUEUES, MPIJOBS].every((p) => s.watching(p)));
      w.mark();
      s.end({ reason: 'gone' }, WORKLOADS);
      await until(() => s.lists.filter((p) => p === WORKLOADS).length === 2 && s.watching(WORKLOADS));
      expect(w.gaps()).toBe('the watch of the sample jobs and their Workloads was interrupted (1 list(s) again): a state a job had meanwhile (an eviction re-admitted) is not reported');
      s.end({ reason: 'error', error: new Error('socket hang up') }, QUEUES);
      await until(() => s.lists.filter((p) => p === QUEUES).length === 2 && s.watching(QUEUES));
      expect(w.gaps()).toMatch(/\(2 list\(s\) again; the last failure: socket hang up\)/);
      w.mark();
      expect(w.gaps()).toBeUndefined();
    } finally {
      await w.stop();
    }
  });

  it('a job whose kind is not served is not synced; another\'s Workload in its namespace is not its own', async () => {
    const s = new Stub();
    const other: KubeObject = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'x', namespace: 'default' } };
    const theirs = { ...workload({ QuotaReserved: 'True', Admitted: 'True' }, true), metadata: { ...workload({}, false).metadata, ownerReferences: [{ uid: 'another-uid' }] } };
    s.itemsOf = (p) => (p === WORKLOADS ? [theirs] : p === MPIJOBS ? [live()] : []);
    const unserved = new JobWatch(s, [other]).start();
    const mine = new JobWatch(s, [job]).start();
    try {
      await until(() => mine.synced);
      expect(unserved.synced).toBe(false);
      expect(mine.now().get('MPIJob default/nccl-all-reduce')).toEqual({ state: 'unmanaged' });
    } finally {
      await unserved.stop();
      await mine.stop();
    }
  });
});

describe('JobWatch before the push: the wait for Kueue to decide each sample job (rehearse undecidedJobs)', () => {
  const other: KubeObject = { ...job, metadata: { name: 'other', namespace: 'default' } };
  const otherLive = (): KubeObject => ({ ...other, metadata: { ...other.metadata, uid: 'other-uid', resourceVersion: rv() } });
  const otherWorkload = (conditions: Record<string, string>): KubeObject => {
    const w = workload(conditions, false);
    return { ...w, metadata: { ...w.metadata, name: 'mpijob-other-4c5d6', ownerReferences: [{ uid: 'other-uid' }] } };
  };

  it('ends on the change the stream delivers that decides the last job (admitted, or pending with Kueue\'s reason), long before its bound; nothing listed again', async () => {
    const s = new Stub();
    const items: Record<string, KubeObject[]> = { [WORKLOADS]: [], [QUEUES]: [queue('4')], [MPIJOBS]: [live(), otherLive()] };
    s.itemsOf = (p) => items[p] ?? [];
    const w = new JobWatch(s, [job, other]).start();
    try {
      let lines: string[] | undefined;
      const started = Date.now();
      const waiting = undecidedJobs(w, 60_000).then((l) => { lines = l; });
      await until(() => w.synced && [WORKLOADS, QUEUES, MPIJOBS].every((p) => s.watching(p)));
      // Kueue made the Workloads, decided one (admitted): the other is not decided yet
      s.send({ type: 'ADDED', object: workload({ QuotaReserved: 'True', Admitted: 'True' }, true) }, WORKLOADS);
      s.send({ type: 'ADDED', object: otherWorkload({}) }, WORKLOADS);
      await new Promise((r) => setTimeout(r, 50));
      expect(lines).toBeUndefined();
      // its scheduler says why not (QuotaReserved False, with a reason): decided
      s.send({ type: 'MODIFIED', object: otherWorkload({ QuotaReserved: 'False' }) }, WORKLOADS);
      await waiting;
      expect(lines).toEqual([]);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(s.lists.sort()).toEqual([MPIJOBS, QUEUES, WORKLOADS]);
    } finally {
      await w.stop();
    }
  });

  it('when its bound runs out: a line for each job Kueue did not decide, saying whether it has a Workload', async () => {
    const s = new Stub();
    s.itemsOf = (p) => (p === WORKLOADS ? [otherWorkload({})] : p === MPIJOBS ? [live(), otherLive()] : []);
    const w = new JobWatch(s, [job, other]).start();
    try {
      await until(() => w.synced);
      expect(await undecidedJobs(w, 1_000)).toEqual([
        'MPIJob default/nccl-all-reduce: not decided by Kueue within 1 s before the push (no Workload: is Kueue\'s integration for its kind enabled?)',
        'MPIJob default/other: not decided by Kueue within 1 s before the push (its Workload has no QuotaReserved condition yet)',
      ]);
    } finally {
      await w.stop();
    }
  });

  it('a job deleted before Kueue decided it is not waited for and reads as gone, not as "no Workload"; the line names the bound, not the time --timeout left', async () => {
    const s = new Stub();
    s.itemsOf = (p) => (p === WORKLOADS ? [otherWorkload({})] : p === MPIJOBS ? [live(), otherLive()] : []);
    const w = new JobWatch(s, [job, other]).start();
    try {
      await until(() => w.synced && [WORKLOADS, QUEUES, MPIJOBS].every((p) => s.watching(p)));
      // the first job goes (deleted by hand) before it has a Workload; the other is decided: the wait ends at once
      let lines: string[] | undefined;
      const started = Date.now();
      const waiting = undecidedJobs(w, 120_000, 60_000).then((l) => { lines = l; });
      s.send({ type: 'DELETED', object: live() }, MPIJOBS);
      s.send({ type: 'MODIFIED', object: otherWorkload({ QuotaReserved: 'False' }) }, WORKLOADS);
      await waiting;
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(lines).toEqual(['MPIJob default/nccl-all-reduce: not decided by Kueue before the push: the job is gone (deleted before Kueue decided it)']);
      // the time left (1 s) shorter than the bound (120 s): the wait ends with the time left, the line names the bound
      s.send({ type: 'MODIFIED', object: otherWorkload({}) }, WORKLOADS);
      expect(await undecidedJobs(w, 120_000, 1_000)).toEqual([
        'MPIJob default/nccl-all-reduce: not decided by Kueue before the push: the job is gone (deleted before Kueue decided it)',
        'MPIJob default/other: not decided by Kueue within 120 s before the push (its Workload has no QuotaReserved condition yet)',
      ]);
    } finally {
      await w.stop();
    }
  });

  it('a stop ends a wait at once; a wait does not end before every collection is listed', async () => {
    const s = new Stub();
    s.failList = new Error('connect ECONNREFUSED 127.0.0.1:6443');
    const w = new JobWatch(s, [job]).start();
    try {
      expect(await w.until(() => true, 300)).toBe(false);
      const waiting = w.until(() => false, 60_000);
      await w.stop();
      expect(await waiting).toBe(false);
    } finally {
      await w.stop();
    }
  });
});
