import { afterEach, describe, expect, it, vi } from 'vitest';
import { REFRESH_ANNOTATION } from '../../src/twin/applications';
import { KubeObject } from '../../src/twin/kube-client';
import { refreshedStates, standInLines } from '../../src/twin/rehearse';

/*
 * What a rehearsal that did not converge reads before it reports (against a stub API server): each Application not
 * converged refreshed and read again until the refresh annotation is gone (the state Argo CD wrote with the refresh),
 * within 60 s and what --timeout leaves; and the report's lines of the twin's operator stand-ins.
 */

const NS = 'argocd';
const PATH = (name: string) => `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/${name}`;

const application = (name: string, health: string, message: string, refreshing: boolean): KubeObject => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  metadata: { name, annotations: { 'argocd.argoproj.io/sync-wave': '2', ...(refreshing ? { [REFRESH_ANNOTATION]: 'normal' } : {}) } },
  status: { sync: { status: 'Synced', revision: 'abc1234' }, health: { status: health, message } },
});

/**
 * A stub of the Applications: `annotated` reads of each still carry the refresh annotation (the stub's stand-in for
 * "not refreshed yet"), then it reads with `after`'s health message; every read and refresh recorded.
 */
function stub(annotated: Record<string, number>) {
  const reads: string[] = [];
  const refreshes: string[] = [];
  /** Each path read (asserted by the tests: an expect here would be swallowed by refreshedStates' catch of a failed read). */
  const paths: string[] = [];
  const client = {
    get: async (p: string): Promise<KubeObject | undefined> => {
      const name = p.slice(p.lastIndexOf('/') + 1);
      paths.push(p);
      reads.push(name);
      const left = annotated[name]--;
      return left > 0 ? application(name, 'Progressing', 'before the refresh', true) : application(name, 'Progressing', `${name}: refreshed`, false);
    },
  };
  return { client, reads, paths, refreshes, refresh: async (n: string) => { refreshes.push(n); } };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('rehearse: the refresh before the not-converged report', () => {
  it('asks a refresh of each Application and reads each until Argo CD has removed the annotation: the state it wrote then', async () => {
    const s = stub({ 'lab-gpu-operator': 3, 'lab-kueue': 0 });
    const fresh = await refreshedStates({ client: s.client, namespace: NS, names: ['lab-gpu-operator', 'lab-kueue'], refresh: s.refresh, deadline: Date.now() + 600_000 });
    expect(s.refreshes).toEqual(['lab-gpu-operator', 'lab-kueue']);
    expect([...fresh.keys()].sort()).toEqual(['lab-gpu-operator', 'lab-kueue']);
    expect(fresh.get('lab-gpu-operator')?.healthMessage).toBe('lab-gpu-operator: refreshed');
    // each read again only while it is not refreshed
    expect(s.reads.filter((n) => n === 'lab-kueue')).toHaveLength(1);
    expect(s.reads.filter((n) => n === 'lab-gpu-operator')).toHaveLength(4);
    // each read is of the Application's own path (applications.ts applicationsPath)
    expect(new Set(s.paths)).toEqual(new Set([PATH('lab-gpu-operator'), PATH('lab-kueue')]));
  });

  it('an Application whose refresh could not be asked for is neither read nor answered (no annotation to wait for: its state would be the old one)', async () => {
    const s = stub({ 'lab-gpu-operator': 1, 'lab-kueue': 0 });
    const refresh = async (n: string) => {
      if (n === 'lab-kueue') throw new Error('the patch was refused');
      await s.refresh(n);
    };
    const fresh = await refreshedStates({ client: s.client, namespace: NS, names: ['lab-gpu-operator', 'lab-kueue'], refresh, deadline: Date.now() + 600_000 });
    expect([...fresh.keys()]).toEqual(['lab-gpu-operator']);
    expect(s.reads.filter((n) => n === 'lab-kueue')).toEqual([]);
    const none = stub({ 'lab-kueue': 0 });
    expect((await refreshedStates({ client: none.client, namespace: NS, names: ['lab-kueue'], refresh: async () => { throw new Error('refused'); }, deadline: Date.now() + 600_000 })).size).toBe(0);
    expect(none.reads).toEqual([]);
  });

  it('waits at most 60 s, and at most what --timeout leaves; answers those refreshed in time; nothing when the time is up', async () => {
    vi.useFakeTimers();
    const never = () => stub({ 'lab-gpu-operator': Infinity, 'lab-kueue': 0 });
    const settle = async (deadlineIn: number) => {
      const s = never();
      let done: Map<string, unknown> | undefined;
      void refreshedStates({ client: s.client, namespace: NS, names: ['lab-gpu-operator', 'lab-kueue'], refresh: s.refresh, deadline: Date.now() + deadlineIn })
        .then((m) => { done = m; });
      let waited = 0;
      while (done === undefined && waited < 700_000) {
        await vi.advanceTimersByTimeAsync(500);
        waited += 500;
      }
      return { waited, fresh: done!, s };
    };
    const long = await settle(600_000);
    expect(long.waited).toBeGreaterThanOrEqual(60_000);
    expect(long.waited).toBeLessThanOrEqual(61_000);
    expect([...long.fresh.keys()]).toEqual(['lab-kueue']);
    const short = await settle(5_000);
    expect(short.waited).toBeGreaterThanOrEqual(5_000);
    expect(short.waited).toBeLessThanOrEqual(6_000);
    const none = never();
    expect((await refreshedStates({ client: none.client, namespace: NS, names: ['lab-kueue'], refresh: none.refresh, deadline: Date.now() - 1 })).size).toBe(0);
    expect(none.refreshes).toEqual([]);
    expect(none.reads).toEqual([]);
  });
});

describe('rehearse: the operator stand-ins\' lines of the not-converged report', () => {
  const rootAt = 1_000_000;
  const write = (kind: string, name: string, state: string, s: number) => ({ kind, name, state, at: rootAt + s * 1000 });

  it('the last state each stand-in wrote of each resource, in the order first written, with its time after the root\'s apply', () => {
    const writes = [write('ClusterPolicy', 'cluster-policy', 'notReady', 10), write('NicClusterPolicy', 'nic-cluster-policy', 'ready', 12), write('ClusterPolicy', 'cluster-policy', 'ready', 20)];
    expect(standInLines({ writes, failedPasses: 0, errors: [], lastError: undefined }, rootAt)).toEqual([
      'rehearse: the twin\'s operator stand-ins last wrote: ClusterPolicy cluster-policy ready at 20 s, NicClusterPolicy nic-cluster-policy ready at 12 s (after the root\'s apply)',
    ]);
    expect(standInLines({ writes: [], failedPasses: 0, errors: [], lastError: undefined }, rootAt)).toEqual([]);
  });

  it('failed passes: how many, whether they fail still, the last failure and when', () => {
    const errors = [{ at: rootAt + 3000, message: 'the GPU Operator stand-in: connect ECONNREFUSED' }, { at: rootAt + 7000, message: 'the GPU Operator stand-in: 409 Conflict' }];
    expect(standInLines({ writes: [], failedPasses: 2, errors, lastError: undefined }, rootAt)).toEqual([
      'rehearse: the twin\'s operator stand-ins: 2 pass(es) failed, then one succeeded; the last at 7 s after the root\'s apply: the GPU Operator stand-in: 409 Conflict',
    ]);
    expect(standInLines({ writes: [], failedPasses: 2, errors, lastError: 'the GPU Operator stand-in: 409 Conflict' }, rootAt)[0])
      .toMatch(/^rehearse: the twin's operator stand-ins: 2 pass\(es\) failed, failing still; the last at 7 s /);
  });
});
