import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { ARGOCD_FIELD_MANAGER } from '../../src/check/argocd-sync';
import { loadModels } from '../../src/model/load-models';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { applySteps, refusalText, SyncStep } from '../../src/twin/argocd-sync';
import { controlPlaneBinary } from '../../src/twin/binary';
import { ControlPlane, startControlPlane } from '../../src/twin/control-plane';
import { KubeObject } from '../../src/twin/kube-client';
import { PlanResult, planUpgrade } from '../../src/upgrade/plan';
import { ComponentOrder, ObjectRef } from '../../src/upgrade/types';
import { TRAINING_FILE } from '../helpers';

/*
 * Issue 41 on the real API server: upgrade-plan's order of each component, applied. The cluster before (the old
 * CRDs and the CRs the old release renders) is accepted; the rejected order (the new CRs before their new CRDs) is
 * refused by the server, naming the object; then the planned steps, in order, are accepted. One control plane: the
 * components' CRDs are of different API groups, and a refused apply changes nothing.
 */

const work = mkdtempSync(path.join(tmpdir(), 'upgrade-order-'));
let cp: ControlPlane | undefined;
let result: PlanResult;

afterAll(async () => {
  await cp?.stop();
  rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  await controlPlaneBinary();
  // the training fixture with the driver run by the operator, as test/upgrade plans it (the kernel module path)
  const d = parse(readFileSync(TRAINING_FILE, 'utf8'));
  d.gpuOperator = { ...d.gpuOperator, driver: 'managed', toolkit: 'managed' };
  const config = path.join(work, 'training-driver-managed.yaml');
  writeFileSync(config, stringify(d));
  const [model] = loadModels([config]);
  const planned = planUpgrade({
    model, components: ['gpu-operator', 'network-operator', 'kueue'], upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, cacheDir: defaultCacheDir(),
  });
  [result, cp] = await Promise.all([planned, startControlPlane()]);
}, 600_000);

/** The objects of refs as one step of Argo CD's apply (its field manager), with the namespaces they need first. */
function stepOf(label: string, refs: readonly ObjectRef[]): SyncStep {
  const objects = refs.map((r) => {
    const object = result.manifests.get(r.ref) as KubeObject | undefined;
    if (!object) throw new Error(`the plan names ${r.ref}, which planUpgrade did not return`);
    return { object, application: label, source: r.source, wave: 0 };
  });
  return { label, manager: ARGOCD_FIELD_MANAGER, objects };
}

function namespacesOf(refs: readonly ObjectRef[]): SyncStep {
  const names = [...new Set(refs.flatMap((r) => (r.namespace ? [r.namespace] : [])))].sort();
  const objects = names.map((name) => ({ object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, application: 'namespaces', source: 'test', wave: 0 }));
  return { label: 'namespaces', manager: ARGOCD_FIELD_MANAGER, objects };
}

const orderOf = (component: string): ComponentOrder => {
  const order = result.plan.order.find((o) => o.component === component);
  if (!order) throw new Error(`no order of ${component} in the plan`);
  return order;
};

describe.each(['network-operator', 'gpu-operator', 'kueue'])('upgrade-plan\'s order of %s, applied to the real API server', (component) => {
  it('the cluster before (old CRDs, CRs of the old release), the rejected order refused, the planned steps accepted', async () => {
    const order = orderOf(component);
    const client = cp!.client();
    const all = [...order.before, ...order.steps.flatMap((s) => s.objects)];
    const crds = (refs: readonly ObjectRef[]) => refs.filter((r) => r.kind === 'CustomResourceDefinition');
    const crs = (refs: readonly ObjectRef[]) => refs.filter((r) => r.kind !== 'CustomResourceDefinition');
    const before = await applySteps(client, [namespacesOf(all), stepOf('old CRDs', crds(order.before)), stepOf('old CRs', crs(order.before))]);
    expect(before.refused.map(refusalText)).toEqual([]);
    expect(crds(order.before).length).toBeGreaterThan(0);

    if (order.rejected) {
      // its first step sends the new CRs to the old CRDs: every new-form CR of it refused, by the server's validation
      const first = order.rejected.steps[0];
      const refused = await applySteps(cp!.client(), [stepOf(`rejected: ${first.what}`, first.objects)]);
      expect(refused.refused.length, order.rejected.why).toBeGreaterThan(0);
      // server-side apply refuses a field the old schema does not declare (HTTP 500, "failed to create typed patch
      // object"), validation a required one missing (422)
      for (const r of refused.refused) expect(refusalText(r)).toMatch(/field not declared in schema|Required value|Unsupported value|Invalid value/);
    }

    const steps = order.steps.map((s) => stepOf(`step ${s.step}: ${s.what}`, s.objects));
    const after = await applySteps(cp!.client(), steps);
    expect(after.refused.map(refusalText)).toEqual([]);
    expect(after.applied.length).toBe(order.steps.reduce((n, s) => n + s.objects.length, 0));
  });
});

describe('the order that needs it', () => {
  it('has a rejected order: the network operator\'s new NicClusterPolicy before its CRD (its old CRD refuses the new form)', () => {
    expect(orderOf('network-operator').rejected?.steps[0].objects.map((o) => o.kind)).toContain('NicClusterPolicy');
  });
});
