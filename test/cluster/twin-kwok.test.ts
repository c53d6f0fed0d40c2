import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { twinBinary } from '../../src/twin/binary';
import { ControlPlane, startControlPlane } from '../../src/twin/control-plane';
import { poll, sleep } from '../../src/twin/poll';
import { startTwin, Twin } from '../../src/twin/twin';

/*
 * KWOK's start on the twin: KWOK reads the schema of every stage's kind from the API server's OpenAPI when it starts
 * and exits without it ("failed to get openapi spec: GroupVersion ... not found"), which a CRD applied a moment before
 * can still be while discovery serves it. startKwok waits for every stage's group-version, bounded, and names the
 * ones that never come.
 */

let cp: ControlPlane;
let twin: Twin;

beforeAll(async () => {
  await twinBinary();
  cp = await startControlPlane();
  twin = await startTwin(cp);
}, 15 * 60 * 1000);

afterAll(async () => {
  await twin?.stop();
  await cp?.stop();
});

const GROUP = 'widgets.example.com';
const stage = stringify({
  apiVersion: 'kwok.x-k8s.io/v1alpha1',
  kind: 'Stage',
  metadata: { name: 'widget-ready' },
  spec: {
    resourceRef: { apiGroup: `${GROUP}/v1`, kind: 'Widget' },
    selector: { matchExpressions: [{ key: '.status.phase', operator: 'DoesNotExist' }] },
    next: { statusTemplate: 'phase: Ready' },
  },
});
const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [{
      name: 'v1',
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: { 'type': 'object', 'x-kubernetes-preserve-unknown-fields': true }, status: { type: 'object', properties: { phase: { type: 'string' } } } } } },
    }],
  },
};

describe('KWOK on the twin starts once the API server\'s OpenAPI has its stages\' kinds', () => {
  it('a stage of a kind that is never served: the start fails at its bound naming the group-version, and KWOK was not started', async () => {
    await expect(twin.startKwok({ stages: [stage], openApiWaitMs: 3000 })).rejects.toThrow(`the API server's OpenAPI has no apis/${GROUP}/v1 within 3 s`);
    expect(() => twin.assertRunning()).not.toThrow();
  }, 60_000);

  it('the same stage once its CRD is applied: KWOK starts at once after it and acts on the kind', async () => {
    const admin = cp.client();
    await admin.apply(crd);
    // at once: no wait for discovery or the OpenAPI here, startKwok's own wait is what is proven
    await twin.startKwok({ stages: [stage] });
    await admin.apply({ apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec: {} });
    const widget = await poll(() => admin.get(`/apis/${GROUP}/v1/namespaces/default/widgets/w`), (w) => (w?.status as { phase?: string } | undefined)?.phase === 'Ready', 60_000, 250);
    expect((widget?.status as { phase?: string } | undefined)?.phase).toBe('Ready');
    twin.assertRunning();
  }, 180_000);
});

describe('the control plane\'s leader leases', () => {
  it('the controller manager and the scheduler hold theirs for 60 s (renewed every 10 s, not the default 2 s: a twin never fails over)', async () => {
    const admin = cp.client();
    for (const name of ['kube-controller-manager', 'kube-scheduler']) {
      const lease = await admin.get(`/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${name}`);
      const spec = lease?.spec as { holderIdentity?: string; leaseDurationSeconds?: number } | undefined;
      expect(typeof spec?.holderIdentity, name).toBe('string');
      expect(spec?.leaseDurationSeconds, name).toBe(60);
    }
    // renewed every 10 s: over 12 s the renew time takes at most three values (every 2 s, the default, it would take six or more)
    const renewals = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const lease = await admin.get('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler');
      renewals.add(String((lease?.spec as { renewTime?: string } | undefined)?.renewTime));
      await sleep(1000);
    }
    expect(renewals.size).toBeLessThanOrEqual(3);
  }, 60_000);
});
