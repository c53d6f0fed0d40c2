import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { snapshotObjects } from './snapshots';
import { main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { preflight } from '../../src/preflight/engine';
import { runningReleases } from '../../src/preflight/operator-releases';
import { PreflightFinding } from '../../src/preflight/rule';
import { ClusterState } from '../../src/preflight/state';
import { Manifest } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { VERSIONS } from '../../src/versions';
import { HAS_UPSTREAM, modelOf } from '../helpers';
import { pinnedCrds, previousCrd, previousOperatorDeployment, previousRelease } from '../upstream/previous-charts';

/*
 * The operators the cluster really runs (issue 50, item 1), without a control plane: the Instant Cluster snapshot with
 * the vendored previous releases put in: the GPU Operator Deployment its v26.3.3 chart renders (as Helm leaves it), and
 * the CRDs of the previous releases' charts. test/cluster/operator-releases.test.ts runs the same against a real API server.
 */

const work = mkdtempSync(path.join(tmpdir(), 'operator-releases-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const gpu = previousRelease('gpuOperator');
const net = previousRelease('networkOperator');
const kueue = previousRelease('kueue');

/** The snapshot's objects with the CRDs of `crds` in place of its schema-less ones, and `extra` added. */
function clusterWith(crds: readonly Manifest[], extra: readonly Manifest[] = []): ClusterState {
  const kinds = new Set(crds.map((c) => (c.spec as { names: { kind: string } }).names.kind));
  const objects = snapshotObjects().filter((o) => !(o.kind === 'CustomResourceDefinition' && kinds.has(o.spec.names.kind)));
  return new ClusterState('cluster.yaml', [...objects, ...crds, ...extra]);
}

const findingsOf = (state: ClusterState, edit?: Parameters<typeof modelOf>[0]) => preflight(renderCluster(modelOf(edit)), state)
  .filter((f) => f.rule === 'operator-release' || f.rule === 'crd-schema');
const brief = (fs: readonly PreflightFinding[]) => fs.map((f) => `${f.severity} ${f.rule} ${f.object}`);

describe.skipIf(!HAS_UPSTREAM)('the release each pre-installed operator runs', () => {
  let deployment: Manifest;
  let old: ClusterState;
  beforeAll(async () => {
    deployment = await previousOperatorDeployment('gpuOperator', 'gpu-operator');
    // the GPU Operator v26.3.3 (its Deployment and its CRD), a Network Operator whose NicClusterPolicy CRD is 26.1.2's
    old = clusterWith([previousCrd('gpuOperator', 'ClusterPolicy'), previousCrd('networkOperator', 'NicClusterPolicy')], [deployment]);
  });

  it('is read from the operator Deployment (image, Helm release) and, without one, from the CRD the cluster serves', () => {
    const r = runningReleases(old, { schemas: DEFAULT_SCHEMAS, upstream: DEFAULT_UPSTREAM });
    expect(r.gpuOperator.version).toBe(gpu.version);
    expect(r.gpuOperator.deployment).toMatchObject({ namespace: 'gpu-operator', helm: { release: gpu.chart.chart, namespace: 'gpu-operator' } });
    expect(r.gpuOperator.evidence).toContain(`:${gpu.version}`);
    // the served ClusterPolicy CRD is the vendored one of the same release
    expect(r.gpuOperator.crd?.release).toBe(gpu.version);
    expect(r.networkOperator.version).toBe(net.version);
    expect(r.networkOperator.evidence).toMatch(/NicClusterPolicy CRD .* no operator Deployment seen/);
    expect(r.kueue.version).toBeUndefined();
  });

  it('init records them (releases.<operator>, the evidence beside), a TODO where nothing tells; the description it writes validates', () => {
    const snapshot = path.join(work, 'old.yaml');
    writeFileSync(snapshot, stringify({ apiVersion: 'v1', kind: 'List', items: old.objects }));
    const out: string[] = [];
    expect(main(['init', '--snapshot', snapshot, '--name', 'lab', '--repo', 'https://git.example.com/lab.git', '--out', '-'], { out: (l) => out.push(l), err: () => {} })).toBe(EXIT.ok);
    const text = out.join('\n');
    const d = parse(text);
    expect(d.releases).toEqual({ gpuOperator: gpu.version, networkOperator: net.version, kueue: VERSIONS.kueue.version });
    expect(text).toMatch(new RegExp(`gpuOperator: ${gpu.version} # from Deployment gpu-operator/\\S+: image \\S+:${gpu.version}; Helm release gpu-operator/${gpu.chart.chart}`));
    expect(text).toMatch(/networkOperator: \S+ # from the NicClusterPolicy CRD the cluster serves/);
    expect(text).toMatch(new RegExp(`kueue: ${VERSIONS.kueue.version.replace(/\./g, '\\.')} # TODO\\(init\\): the Kueue release the cluster runs`));
  });

  it('preflight: the pinned form blocks, naming the field the served CRD refuses and the upgrade-plan; the running releases\' form passes', () => {
    const pinned = findingsOf(old);
    expect(brief(pinned)).toEqual([
      'error operator-release Deployment gpu-operator/gpu-operator',
      'error operator-release CustomResourceDefinition nicclusterpolicies.mellanox.com',
      'error crd-schema NicClusterPolicy nic-cluster-policy',
    ]);
    const schema = pinned.find((f) => f.rule === 'crd-schema')!;
    expect(schema.message).toMatch(/refuses the render \(network-operator\/\) at spec[./]global/);
    expect(schema.message).toContain(`the one of Network Operator ${net.version}`);
    expect(schema.fix).toContain(`releases.networkOperator: ${net.version}`);
    expect(schema.fix).toContain('upgrade-plan --config <description> --component network-operator --kubeconfig');
    expect(pinned[0].message).toContain(`cluster runs ${gpu.version}`);
    expect(pinned[0].fix).toContain(`set releases.gpuOperator: ${gpu.version}`);

    expect(findingsOf(old, (d) => { d.releases = { gpuOperator: gpu.version, networkOperator: net.version }; })).toEqual([]);
  });

  it('a patch release of a carried one: a warning to record it; a release of no carried minor blocks naming the nearest', () => {
    const patch = gpu.version.replace(/\d+$/, (n) => String(Number(n) + 1));
    const patched = clusterWith([previousCrd('gpuOperator', 'ClusterPolicy')], [retagged(deployment, patch)]);
    expect(brief(findingsOf(patched, (d) => { d.releases = { gpuOperator: gpu.version }; }))).toEqual(['warning operator-release Deployment gpu-operator/gpu-operator']);
    const [major] = gpu.version.replace(/^v/, '').split('.').map(Number);
    const unknown = findingsOf(clusterWith([], [retagged(deployment, `v${major - 1}.1.0`)]), (d) => { d.releases = { gpuOperator: gpu.version }; });
    expect(brief(unknown)).toEqual(['error operator-release Deployment gpu-operator/gpu-operator']);
    expect(unknown[0].message).toContain(`nearest supported: ${gpu.version}`);
  });

  it('Kueue: a release other than the description\'s is a warning (its CRs do not change with it)', async () => {
    const k = await previousOperatorDeployment('kueue', 'kueue-system');
    const fs = findingsOf(clusterWith([], [k]));
    expect(brief(fs)).toEqual([`warning operator-release Deployment kueue-system/${k.metadata.name}`]);
    expect(fs[0].fix).toContain(`releases.kueue: v${kueue.version.replace(/^v/, '')}`);
  });

  it('the pinned CRDs and no Deployment: nothing to say', () => {
    expect(findingsOf(clusterWith([...pinnedCrds('gpu-operator'), ...pinnedCrds('network-operator')].map((c) => c.object)))).toEqual([]);
  });
});

/** A Deployment with its operator image tagged `tag`. */
function retagged(d: Manifest, tag: string): Manifest {
  const copy = structuredClone(d) as any;
  for (const c of copy.spec.template.spec.containers) c.image = c.image.replace(/:[^:/]+$/, `:${tag}`);
  return copy;
}
