import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { bootTwin, stopTwin } from './twin-file';
import { ApplicationState, describeState, formatTimeline } from '../../src/twin/applications';
import { TwinCluster } from '../../src/twin/twin-cluster';
import { TRAINING_FILE } from '../paths';

/**
 * The training cluster (every add-on managed: the GPU and Network Operators', Kueue's and Dynamo's charts, the MPI and
 * Training Operators' kustomize overlays) bootstrapped as its README says on a twin, synced by the real Argo CD v3.5.1:
 * every managed install's source is read from loopback (the chart mirror of the vendored charts, the Git mirror of the
 * vendored overlays), so each wave-0 install compares and syncs instead of ending in a ComparisonError.
 */

/** How long the bootstrap may take, from the root's apply to its end state. */
const BOOTSTRAP_BOUND_MS = 8 * 60 * 1000;

let twin: TwinCluster;
let pushed: string;

beforeAll(async () => {
  ({ twin, head: pushed } = await bootTwin({ description: TRAINING_FILE }));
}, 30 * 60 * 1000);

afterAll(() => stopTwin(twin));

/** The managed installs' Applications as Argo CD reports them (those of wave 0: the root holds the later waves). */
const installs = () => twin.watch.states().filter((s) => s.name.endsWith('-install'));
const compared = (s: ApplicationState) => (s.sync === 'Synced' || s.sync === 'OutOfSync') && s.conditions.every((c) => !/ComparisonError/.test(c));
const healthy = (s: ApplicationState) => s.sync === 'Synced' && s.health === 'Healthy';
/** The installs that converge on the twin: nothing but KWOK's pod lifecycle decides their health. */
const CONVERGING = ['dynamo-platform-install', 'gpu-operator-install', 'mpi-operator-install', 'training-operator-install'];
/** The managed installs of wave 0: the converging ones and kueue-install. */
const WAVE_ZERO = [...CONVERGING, 'kueue-install'].sort();

describe('the training cluster (managed installs) on the twin', () => {
  it('every managed install is read from loopback (the chart mirror, the Git mirror): each compares, none ends in a ComparisonError; those with nothing but pods to wait on turn Synced and Healthy', async () => {
    const done = await twin.watch.waitFor((states) => {
      const i = states.filter((s) => s.name.endsWith('-install'));
      return i.length === WAVE_ZERO.length && i.every(compared) && CONVERGING.every((n) => i.some((s) => s.name === `${twin.name}-${n}` && healthy(s)));
    }, BOOTSTRAP_BOUND_MS);
    console.log(`${twin.name}: the installs\n${installs().map(describeState).join('\n')}`);
    expect(installs().filter((s) => !compared(s)).map(describeState)).toEqual([]);
    expect(installs().map((s) => s.name).sort()).toEqual(WAVE_ZERO.map((n) => `${twin.name}-${n}`));
    expect(done.ok, 'the converging installs').toBe(true);
    // every chart of wave 0 came from the mirror: the two Helm repository archives and Kueue's OCI manifest
    const pulled = twin.chartMirror!.requests.filter((r) => r.status === 200).map((r) => r.path);
    for (const chart of [/gpu-operator-v[\d.]+\.tgz$/, /dynamo-platform-[\d.]+\.tgz$/, /\/v2\/.*kueue\/manifests\//]) expect(pulled.some((p) => chart.test(p)), String(chart)).toBe(true);
    // the GPU Operator's package carries NFD's CRDs as published (chart-crds.ts): served once gpu-operator-install synced,
    // before network-operator-install's NodeFeatureRule (wave 1) needs one
    for (const crd of ['nodefeatures', 'nodefeaturegroups', 'nodefeaturerules']) {
      expect(await twin.cp.client().get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}.nfd.k8s-sigs.io`), crd).toBeDefined();
    }
  }, BOOTSTRAP_BOUND_MS + 60_000);

  it('what waits, and on what: kueue-install on Kueue\'s visibility APIServices (no Kueue runs for a managed Kueue), so the root holds every later wave', async () => {
    const kueueWaits = (s?: ApplicationState) => s?.sync === 'Synced' && s.health === 'Progressing' && s.waitingOn.some((w) => /APIService v1beta\d\.visibility\.kueue\.x-k8s\.io.*FailedDiscoveryCheck/.test(w));
    const done = await twin.watch.waitFor(() => kueueWaits(twin.watch.state(`${twin.name}-kueue-install`)), BOOTSTRAP_BOUND_MS);
    const states = twin.watch.states();
    console.log(`${twin.name}: bootstrap timeline\n${formatTimeline(twin.watch.timeline(twin.rootAppliedAt!, () => pushed))}\n${states.map(describeState).join('\n')}`);
    expect(done.ok, describeState(twin.watch.state(`${twin.name}-kueue-install`)!)).toBe(true);
    const root = twin.watch.state(twin.name)!;
    expect(root.phase).not.toBe('Succeeded');
    expect(root.health).not.toBe('Healthy');
    // no Application of a later wave exists: the root's wave 0 never completes
    expect(states.map((s) => s.name).sort()).toEqual([twin.name, ...installs().map((s) => s.name)].sort());
    // network-operator-install is of wave 1 (its NodeFeatureRule needs the NFD CRD gpu-operator-install brings), so it
    // is among the later waves the root holds
    const networkInstall = parse(readFileSync(path.join(twin.workTree, twin.applicationFile(`${twin.name}-network-operator-install`)), 'utf8'));
    expect(networkInstall.metadata.annotations['argocd.argoproj.io/sync-wave']).toBe('1');
  }, BOOTSTRAP_BOUND_MS + 60_000);
});
