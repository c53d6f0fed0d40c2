import { describe, expect, it } from 'vitest';
import { StubStreams, until } from './stub-streams';
import { KubeObject } from '../../src/twin/kube-client';
import { PodWatch, podsOf } from '../../src/twin/pod-watch';
import { changeReport } from '../../src/twin/rehearse';

/*
 * The pods of `rehearse --from`, watched against a stub API server whose stream the test drives: every pod created
 * after the mark is seen, a short-lived one too, with the node it is bound to after its creation; nothing is listed
 * again while the stream runs; a stream that had to list again says a pod may have been missed.
 */

const PODS = '/api/v1/pods';
let version = 100;

const pod = (uid: string, name: string, node?: string, owner = { kind: 'DaemonSet', name: 'nvidia-device-plugin-daemonset' }): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { uid, name, namespace: 'gpu-operator', resourceVersion: String(++version), ownerReferences: [owner] },
  spec: node ? { nodeName: node } : {},
});

function stub(items: KubeObject[]): StubStreams {
  const s = new StubStreams();
  s.itemsOf = (p) => (p === PODS ? items : []);
  return s;
}

describe('PodWatch', () => {
  it('sees every pod created after the mark, one created and deleted between two looks too, with the node it was bound to after its creation', async () => {
    const s = stub([pod('a', 'dp-a', 'gpu-1'), pod('gone-early', 'dp-x', 'gpu-2')]);
    const w = new PodWatch(s).start();
    try {
      await until(() => w.synced);
      // a pod gone before the mark is not the change's
      s.send({ type: 'DELETED', object: pod('gone-early', 'dp-x', 'gpu-2') });
      w.mark();
      // the roll: a deleted, b created unbound, then bound; c created, bound and deleted again before the end
      s.send({ type: 'DELETED', object: pod('a', 'dp-a', 'gpu-1') });
      s.send({ type: 'ADDED', object: pod('b', 'dp-b') });
      s.send({ type: 'MODIFIED', object: pod('b', 'dp-b', 'gpu-1') });
      s.send({ type: 'ADDED', object: pod('c', 'dp-c') });
      s.send({ type: 'MODIFIED', object: pod('c', 'dp-c', 'gpu-3') });
      s.send({ type: 'DELETED', object: pod('c', 'dp-c', 'gpu-3') });
      expect([...w.before()]).toEqual([['a', { name: 'gpu-operator/dp-a', node: 'gpu-1', owner: 'DaemonSet gpu-operator/nvidia-device-plugin-daemonset' }]]);
      expect([...w.seen()].map(([uid, p]) => `${uid} ${p.node}`)).toEqual(['a gpu-1', 'b gpu-1', 'c gpu-3']);
      // one list, then the stream: nothing listed again
      expect(s.lists).toEqual([PODS]);
      expect(w.gaps()).toBeUndefined();
    } finally {
      await w.stop();
    }
  });

  it('takes in the pods read after the change (what the stream had not delivered yet): a new one, and the node of one it saw unbound', async () => {
    const s = stub([]);
    const w = new PodWatch(s).start();
    try {
      await until(() => w.synced);
      w.mark();
      s.send({ type: 'ADDED', object: pod('b', 'dp-b') });
      w.record([pod('b', 'dp-b', 'gpu-1'), pod('d', 'dp-d', 'gpu-2')]);
      expect([...w.seen()].map(([uid, p]) => `${uid} ${p.node}`)).toEqual(['b gpu-1', 'd gpu-2']);
      expect(w.before().size).toBe(0);
    } finally {
      await w.stop();
    }
  });

  it('a stream that failed or whose version expired is listed again, and gaps() says a pod created and gone meanwhile is not counted', async () => {
    const items = [pod('a', 'dp-a', 'gpu-1')];
    const s = stub(items);
    const w = new PodWatch(s).start();
    try {
      await until(() => w.synced);
      w.mark();
      // the version expired (410): the pods there now are taken in from the new list
      items.push(pod('e', 'dp-e', 'gpu-2'));
      s.end({ reason: 'gone' });
      await until(() => s.lists.length === 2 && s.watching());
      expect([...w.seen().keys()]).toEqual(['a', 'e']);
      expect(w.gaps()).toBe('the watch of the pods was interrupted (1 list(s) again): a pod created and gone meanwhile is not counted');
      // a failure is named
      s.end({ reason: 'error', error: new Error('socket hang up') });
      await until(() => s.lists.length === 3 && s.watching());
      expect(w.gaps()).toBe('the watch of the pods was interrupted (2 list(s) again; the last failure: socket hang up): a pod created and gone meanwhile is not counted');
      // a new mark starts afresh
      w.mark();
      expect(w.gaps()).toBeUndefined();
    } finally {
      await w.stop();
    }
  });

  it('while the pods cannot be listed: not synced, the failure in lastError', async () => {
    const s = stub([]);
    s.failList = new Error('connect ECONNREFUSED 127.0.0.1:6443');
    const w = new PodWatch(s).start();
    try {
      await until(() => w.lastError !== undefined);
      expect(w.synced).toBe(false);
      expect(w.lastError).toBe('connect ECONNREFUSED 127.0.0.1:6443');
    } finally {
      await w.stop();
    }
  });

  it('in the change report: a roll\'s pod replaced again before the change converged is counted among those created and those deleted', async () => {
    const s = stub([pod('a', 'dp-a', 'gpu-1'), pod('b', 'dp-b', 'gpu-2')]);
    const w = new PodWatch(s).start();
    try {
      await until(() => w.synced);
      w.mark();
      for (const [old, next, node] of [['a', 'c', 'gpu-1'], ['b', 'd', 'gpu-2'], ['c', 'e', 'gpu-1']]) {
        s.send({ type: 'DELETED', object: pod(old, `dp-${old}`, node) });
        s.send({ type: 'ADDED', object: pod(next, `dp-${next}`) });
        s.send({ type: 'MODIFIED', object: pod(next, `dp-${next}`, node) });
      }
      const after = podsOf([pod('d', 'dp-d', 'gpu-2'), pod('e', 'dp-e', 'gpu-1')]);
      const lines = changeReport({
        apps: { before: [], after: [] },
        stillThere: new Set(),
        clusterPath: 'dist/lab',
        changedFiles: [],
        pods: { before: w.before(), seen: w.seen(), after },
        nodeRole: new Map([['gpu-1', 'gpu'], ['gpu-2', 'gpu']]),
        timeline: [],
      });
      expect(lines[0]).toBe('pods: GPU workers: DaemonSet gpu-operator/nvidia-device-plugin-daemonset rolled on 2 of 2 (gpu-1, gpu-2; 3 pod(s) deleted, 3 created)');
    } finally {
      await w.stop();
    }
  });
});
