import { describe, expect, it } from 'vitest';
import { StubStreams, until } from './stub-streams';
import { ApplicationWatch, REFRESH_ANNOTATION, shortRevision } from '../../src/twin/applications';
import { KubeObject } from '../../src/twin/kube-client';

/*
 * The Applications of Argo CD's namespace, watched against a stub API server whose stream the test drives: the
 * collection listed once at its path, each change taken in as it comes (one deleted is gone from the states).
 */

const PATH = '/apis/argoproj.io/v1alpha1/namespaces/gitops/applications';
let version = 100;

const application = (name: string, health: string): KubeObject => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  metadata: { name, namespace: 'gitops', resourceVersion: String(++version), annotations: { 'argocd.argoproj.io/sync-wave': '1', [REFRESH_ANNOTATION]: 'normal' } },
  status: { sync: { status: 'Synced', revision: 'abc1234' }, health: { status: health } },
});

describe('ApplicationWatch', () => {
  it('lists the Applications of its namespace once, then takes in each change the stream delivers', async () => {
    const s = new StubStreams();
    s.itemsOf = (p) => (p === PATH ? [application('lab-kueue', 'Progressing')] : []);
    const w = new ApplicationWatch(s, 'gitops').start();
    try {
      await until(() => s.watching(PATH) && w.state('lab-kueue') !== undefined);
      s.send({ type: 'MODIFIED', object: application('lab-kueue', 'Healthy') }, PATH);
      s.send({ type: 'ADDED', object: application('lab-gpu-operator', 'Progressing') }, PATH);
      s.send({ type: 'DELETED', object: application('lab-gpu-operator', 'Progressing') }, PATH);
      expect(w.states().map((x) => `${x.name} ${x.health}`)).toEqual(['lab-kueue Healthy']);
      expect(w.timeline(0, () => 'abc1234')[0].healthyAt).toBeGreaterThan(0);
      // a timeline from a later moment (a change pushed since) does not count what was reached before it
      expect(w.timeline(Date.now() + 1, () => 'abc1234')[0]).toEqual({ application: 'lab-kueue', wave: 1, syncedAt: undefined, healthyAt: undefined });
      expect(s.lists).toEqual([PATH]);
    } finally {
      await w.stop();
    }
  });
});

describe('shortRevision', () => {
  it('shortens a Git commit and an OCI digest, and keeps a chart version whole', () => {
    expect(shortRevision('8dec27f0c1b2a3d4e5f60718293a4b5c6d7e8f90')).toBe('8dec27f');
    expect(shortRevision(`sha256:${'ab12'.repeat(16)}`)).toBe('sha256:ab12ab1');
    expect(shortRevision('26.7.0')).toBe('26.7.0');
    expect(shortRevision('v0.19.2-rc.1')).toBe('v0.19.2-rc.1');
  });
});
