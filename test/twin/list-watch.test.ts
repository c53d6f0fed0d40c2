import { describe, expect, it } from 'vitest';
import { StubStreams, until } from './stub-streams';
import { KubeObject } from '../../src/twin/kube-client';
import { ListWatch, ListWatchChange } from '../../src/twin/list-watch';

/*
 * The list-and-watch loop against a stub client whose streams the test drives: a change told as it comes, a stream the
 * server ends watched again from the last version seen (no change lost, no relist), a version gone (410) listed again,
 * a failure listed again after the backoff, a kind not served tried again when kicked.
 */

const obj = (name: string, rv: string, extra: Record<string, unknown> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', resourceVersion: rv }, ...extra });

/** One collection's stub: what a list answers is `items`. */
class Streams extends StubStreams {
  items: KubeObject[] = [];
  constructor() {
    super();
    this.itemsOf = () => this.items;
  }
}

describe('ListWatch', () => {
  it('lists, then tells each watched change as it comes; a stream the server ends is watched again from the last version seen', async () => {
    const s = new Streams();
    s.items = [obj('a', '5')];
    const seen: string[] = [];
    const w = new ListWatch(s, '/api/v1/namespaces/ns/configmaps', (t: ListWatchChange, o?: KubeObject) => seen.push(`${t}${o ? ` ${o.metadata.name}` : ''}`)).start();
    try {
      await until(() => s.watching());
      expect(s.watches).toEqual(['10']);
      expect([...w.objects.keys()]).toEqual(['ns/a']);
      s.send({ type: 'ADDED', object: obj('b', '11') });
      s.send({ type: 'MODIFIED', object: obj('a', '12', { data: { x: '1' } }) });
      s.send({ type: 'BOOKMARK', object: obj('', '15') });
      s.send({ type: 'DELETED', object: obj('b', '16') });
      // ended after a while (the server's timeoutSeconds): watched again from the last version, without a list
      await new Promise((r) => setTimeout(r, 1100));
      s.end({ reason: 'closed' });
      await until(() => s.watches.length === 2);
      expect(s.watches).toEqual(['10', '16']);
      expect(s.lists).toHaveLength(1);
      expect(seen).toEqual(['SYNC', 'ADDED b', 'MODIFIED a', 'DELETED b']);
      expect([...w.objects.keys()]).toEqual(['ns/a']);
      expect((w.objects.get('ns/a') as { data?: unknown }).data).toEqual({ x: '1' });
    } finally {
      await w.stop();
    }
  });

  it('a version gone (410) is listed again (one SYNC: what changed meanwhile is in the list), then watched from the new list', async () => {
    const s = new Streams();
    s.items = [obj('a', '5')];
    const seen: string[] = [];
    const w = new ListWatch(s, '/p', (t) => seen.push(t)).start();
    try {
      await until(() => s.watching());
      s.items = [obj('c', '40')];
      s.listVersion = '41';
      s.end({ reason: 'gone' });
      await until(() => s.watches.length === 2);
      expect(s.lists).toHaveLength(2);
      expect(s.watches).toEqual(['10', '41']);
      expect(seen).toEqual(['SYNC', 'SYNC']);
      expect([...w.objects.keys()]).toEqual(['ns/c']);
    } finally {
      await w.stop();
    }
  });

  it('a failed stream or list is named in lastError and tried again after the backoff; a success clears it', async () => {
    const s = new Streams();
    const errors: string[] = [];
    const w = new ListWatch(s, '/p', () => {}, { retryMs: 10, onError: (m) => errors.push(m) }).start();
    try {
      await until(() => s.watching());
      s.failList = new Error('connect ECONNREFUSED');
      s.end({ reason: 'error', error: new Error('socket hang up') });
      await until(() => s.lists.length >= 3);
      expect(w.lastError).toBe('connect ECONNREFUSED');
      expect(errors).toEqual(['socket hang up', 'connect ECONNREFUSED']);
      s.failList = undefined;
      await until(() => s.watching());
      expect(w.lastError).toBeUndefined();
    } finally {
      await w.stop();
    }
  });

  it('a kind not served (its path unknown yet) is tried again at once when kicked', async () => {
    const s = new Streams();
    let served = false;
    const w = new ListWatch(s, async () => (served ? '/apis/nvidia.com/v1/clusterpolicies' : undefined), () => {}, { retryMs: 60_000 }).start();
    try {
      await new Promise((r) => setTimeout(r, 50));
      expect(s.lists).toEqual([]);
      served = true;
      w.kick();
      await until(() => s.watching());
      expect(s.lists).toEqual(['/apis/nvidia.com/v1/clusterpolicies']);
    } finally {
      await w.stop();
    }
  });
});
