import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { VENDORED_DIR } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { gateAt, parseFeatureGates } from '../../src/upgrade/feature-gates';
import { Finding, UpgradePlan } from '../../src/upgrade/types';
import { findObject, folderObjects, HAS_UPSTREAM, modelOf, REFERENCE_FILE, runCliInProcess } from '../helpers';
import { snapshotObjects } from '../preflight/snapshots';
import { previousChartRender, previousCrd, previousOperatorDeployment, previousRelease } from '../upstream/previous-charts';

/*
 * upgrade-plan --snapshot (issue 50, item 2 and 3): the old end is what the cluster runs. The cluster: the Instant
 * Cluster snapshot with the vendored previous releases in it: the GPU Operator's v26.3.3 Deployment, CRDs and the
 * DaemonSets its chart runs (as Helm leaves them), a Network Operator whose CRD is 26.1.2's, and the adopted CRs as
 * Argo CD applied this description's render of them (releases.<operator>: what init wrote).
 */

const work = mkdtempSync(path.join(tmpdir(), 'upgrade-plan-live-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const gpu = previousRelease('gpuOperator');
const net = previousRelease('networkOperator');

/** The reference description with the releases init records for the cluster, written to a file. */
function description(name: string, releases: Record<string, string> | undefined): string {
  const d = parse(readFileSync(REFERENCE_FILE, 'utf8'));
  if (releases) d.releases = releases;
  const file = path.join(work, `${name}.yaml`);
  writeFileSync(file, stringify(d));
  return file;
}

/** The adopted CRs as Argo CD applied them from the render for the running releases. */
function adopted(keep: boolean): Manifest[] {
  const c = renderCluster(modelOf((d) => { d.releases = { gpuOperator: gpu.version, networkOperator: net.version }; }));
  const policy = structuredClone(findObject(folderObjects(c, 'gpu-operator'), 'ClusterPolicy', 'cluster-policy')) as any;
  if (!keep) delete policy.metadata.annotations['helm.sh/resource-policy'];
  return [policy, structuredClone(findObject(folderObjects(c, 'network-operator'), 'NicClusterPolicy', 'nic-cluster-policy'))];
}

let chartObjects: Manifest[];
let operator: Manifest;
beforeAll(async () => {
  operator = await previousOperatorDeployment('gpuOperator', 'gpu-operator');
  chartObjects = await previousChartRender('gpuOperator', 'gpu-operator');
});

/** A snapshot of that cluster (the adopted ClusterPolicy with or without the keep annotation). */
function snapshot(name: string, keep: boolean): string {
  const kinds = new Set(['ClusterPolicy', 'NicClusterPolicy']);
  const objects = snapshotObjects().filter((o) => !(kinds.has(o.kind) || (o.kind === 'CustomResourceDefinition' && kinds.has(o.spec.names.kind))));
  // the chart's DaemonSets run (Node Feature Discovery's), with their namespace as Helm creates them
  const daemonSets = chartObjects.filter((o) => o.kind === 'DaemonSet').map((o) => ({ ...o, metadata: { ...o.metadata, namespace: 'gpu-operator' } }));
  const items = [...objects, previousCrd('gpuOperator', 'ClusterPolicy'), previousCrd('networkOperator', 'NicClusterPolicy'), operator, ...daemonSets, ...adopted(keep)];
  const file = path.join(work, `${name}.snapshot.yaml`);
  writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'List', items }));
  return file;
}

async function plan(...args: string[]): Promise<{ code: number; plan: UpgradePlan; err: string }> {
  const r = await runCliInProcess(['upgrade-plan', ...args, '--format', 'json']);
  if (r.code === 2) throw new Error(r.stderr);
  return { code: r.code, plan: JSON.parse(r.stdout), err: r.stderr };
}
const of = (p: UpgradePlan, pred: (f: Finding) => boolean) => p.findings.filter(pred);

describe.skipIf(!HAS_UPSTREAM)('upgrade-plan --snapshot: from what the cluster runs', () => {
  it('GPU Operator: from the release its Deployment runs; never toolkit or driver pods the cluster does not run', async () => {
    const r = await plan('--config', description('recorded', { gpuOperator: gpu.version, networkOperator: net.version }), '--snapshot', snapshot('keep', true), '--component', 'gpu-operator');
    expect(r.plan.components).toEqual([{ component: 'gpu-operator', from: gpu.version, to: expect.any(String), install: 'not-managed' }]);
    const impact = of(r.plan, (f) => f.section === 'gpu-node-impact');
    // the driver and the toolkit are on the host (disabled at both ends): nothing of them rolls, reloads or goes
    const claims = impact.filter((f) => /^spec\.(driver|toolkit)\b/.test(f.path ?? '') && f.type !== 'no-node-impact');
    expect(claims).toEqual([]);
    expect(impact.some((f) => f.type === 'kernel-module-reload')).toBe(false);
    expect(impact.map((f) => f.message).join('\n')).not.toMatch(/its pods go/);
    // what does roll: the operands the old form names (the device plugin), from the old release's images
    expect(impact.find((f) => f.path === 'spec.devicePlugin')?.type).toBe('device-plugin-restart');
  });

  it('ownership: Helm and Argo CD both own cluster-policy at the old release; the new chart lets go with clusterPolicy.deployCR=false, after keep', async () => {
    const r = await plan('--config', description('recorded', { gpuOperator: gpu.version, networkOperator: net.version }), '--snapshot', snapshot('keep', true), '--component', 'gpu-operator');
    const owners = of(r.plan, (f) => f.type === 'helm-owner');
    expect(owners.map((f) => `${f.severity} ${f.subject}`)).toEqual(['warning ClusterPolicy cluster-policy', 'warning ClusterPolicy cluster-policy']);
    expect(owners.map((f) => f.message).join('\n')).toMatch(/unless clusterPolicy\.deployCR is false.*helm\.sh\/resource-policy: keep/);
    const [order] = r.plan.order;
    // keep is on the live object already: the owner's upgrade first, with the value, and it deletes nothing Argo CD adopted
    expect(order.steps[0]).toMatchObject({ wave: null, application: null });
    expect(order.steps[0].what).toContain('--set clusterPolicy.deployCR=false');
    expect((order.steps[0].deletes ?? []).map((o) => o.kind)).not.toContain('ClusterPolicy');
    expect(order.steps.at(-1)).toMatchObject({ application: 'instant-cluster-gpu-operator' });
    expect(order.steps.flatMap((s) => s.objects).filter((o) => o.kind === 'ClusterPolicy').map((o) => o.source)).toEqual([expect.stringContaining('render ')]);
  });

  it('without the keep annotation on the live copy: a sync of the render (which carries it) comes before the owner\'s upgrade', async () => {
    const r = await plan('--config', description('recorded', { gpuOperator: gpu.version, networkOperator: net.version }), '--snapshot', snapshot('no-keep', false), '--component', 'gpu-operator');
    const [order] = r.plan.order;
    expect(order.steps.map((s) => s.application)).toEqual(['instant-cluster-gpu-operator', null, 'instant-cluster-gpu-operator']);
    expect(order.steps[0].what).toMatch(/helm\.sh\/resource-policy: keep/);
    expect((order.steps[1].deletes ?? []).map((o) => o.kind)).not.toContain('ClusterPolicy');
  });

  it('Network Operator: its release from the CRD it serves; the operator\'s upgrade, then the new form; the other way round rejected', async () => {
    const r = await plan('--config', description('recorded', { gpuOperator: gpu.version, networkOperator: net.version }), '--snapshot', snapshot('keep', true), '--component', 'network-operator');
    expect(r.code, JSON.stringify(of(r.plan, (f) => f.severity === 'blocker'))).toBe(0);
    expect(r.plan.components[0]).toMatchObject({ from: net.version });
    const [order] = r.plan.order;
    expect(order.steps.map((s) => s.application)).toEqual([null, 'instant-cluster-network-operator']);
    expect(order.steps[1].what).toContain('releases.networkOperator unset');
    expect(order.before.map((o) => o.source)).toContainEqual(expect.stringMatching(/NicClusterPolicy nic-cluster-policy$/));
    expect(order.rejected?.steps[0].objects.map((o) => o.kind)).toContain('NicClusterPolicy');
  });

  it('a description that renders the pinned form while the cluster runs the old release is blocked, naming releases.networkOperator', async () => {
    const r = await plan('--config', description('pinned', undefined), '--snapshot', snapshot('keep', true), '--component', 'network-operator');
    expect(r.code).toBe(1);
    const blocked = of(r.plan, (f) => f.type === 'order-blocked');
    expect(blocked).toHaveLength(1);
    expect(blocked[0].message).toContain(`set releases.networkOperator: ${net.version}`);
    expect(blocked[0].message).toMatch(/spec[./]global/);
  });

  it('Kueue: a gate the new release removed, set on the running manager, blocks (what stops at start); waitForPodsReady names recoveryTimeout', async () => {
    const kueue = previousRelease('kueue');
    const gates = (folder: string) => parseFeatureGates(readFileSync(path.join(VENDORED_DIR, folder, 'pkg/features/kube_features.go'), 'utf8'), folder);
    const [before, after] = [gates(kueue.folder), gates(`kueue-v${kueue.pinned.version}`)];
    const gone = [...before.gates.keys()].find((g) => gateAt(after.gates.get(g), kueue.pinned.version) === undefined)!;
    const manager = structuredClone(await previousOperatorDeployment('kueue', 'kueue-system')) as any;
    const container = manager.spec.template.spec.containers.find((c: { image: string }) => c.image.includes('/kueue:'));
    container.args = [...(container.args ?? []), `--feature-gates=${gone}=false`];
    const file = path.join(work, 'kueue.snapshot.yaml');
    writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'List', items: [...snapshotObjects(), manager] }));
    const r = await plan('--config', description('recorded', { gpuOperator: gpu.version, networkOperator: net.version }), '--snapshot', file, '--component', 'kueue');
    expect(r.code).toBe(1);
    const blocker = of(r.plan, (f) => f.type === 'feature-gate-removed');
    expect(blocker.map((f) => f.subject)).toEqual([`feature gate ${gone}`]);
    expect(blocker[0].message).toMatch(/refuses to start .* webhooks with failurePolicy Fail/);
    const ready = of(r.plan, (f) => f.subject.endsWith(': waitForPodsReady'));
    expect(ready.map((f) => f.message).join('\n')).toMatch(/waitForPodsReady\.recoveryTimeout "\S+"/);
  });

  it('--snapshot with --from is bad input', async () => {
    const r = await runCliInProcess(['upgrade-plan', '--config', REFERENCE_FILE, '--snapshot', snapshot('keep', true), '--from', gpu.version, '--component', 'gpu-operator']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the cluster tells what it runs; leave out --from');
  });
});
