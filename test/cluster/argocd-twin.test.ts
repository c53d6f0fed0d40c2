import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ApplicationState, describeState, formatTimeline, TimelineEntry } from './applications';
import { twinBinary } from './binary';
import { startTwinCluster, TwinCluster } from './twin-cluster';
import { REFERENCE_FILE } from '../paths';

/**
 * The bootstrap of the reference cluster synced by a real Argo CD (v3.5.1, out of cluster) on a twin of the cluster
 * (twin-cluster.ts: a hermetic control plane, the described Nodes run by KWOK, Kueue running for real, the GPU and
 * Network Operator stand-ins), from a loopback Git repository holding the render: exactly the README's commands, then
 * every Application Synced and Healthy in wave order within a bound, with the timeline printed.
 */

/** How long the whole bootstrap may take, from the root's apply to every Application Synced and Healthy. */
const BOOTSTRAP_BOUND_MS = 6 * 60 * 1000;

let twin: TwinCluster;
let pushed: string;

beforeAll(async () => {
  // the binary first: without Go, or when it does not build, every test here fails with this one line
  await twinBinary();
  twin = await startTwinCluster({ description: REFERENCE_FILE });
  pushed = await twin.push('instant-cluster: the bootstrap commit');
  await twin.bootstrap();
}, 30 * 60 * 1000);

afterAll(async () => {
  await twin?.stop();
});

/** The revision an Application is at when the bootstrap has converged: the root at the pushed commit, each child pinned to it. */
const converged = (s: ApplicationState) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === pushed;

describe('the reference cluster, bootstrapped as its README says, synced by the real Argo CD', () => {
  it('every Application is Synced and Healthy at the pushed commit, and the root\'s sync Succeeded, within the bound; the timeline is printed', async () => {
    const t0 = twin.rootAppliedAt!;
    const root = twin.name;
    const done = await twin.watch.waitFor((states) => states.every(converged) && twin.watch.state(root)?.phase === 'Succeeded', BOOTSTRAP_BOUND_MS);
    const timeline = twin.watch.timeline(t0, () => pushed);
    console.log(`${root}: bootstrap timeline (from the root's apply; Argo CD ${twin.twin.binary.versions['github.com/argoproj/argo-cd/v3']})\n${formatTimeline(timeline)}\nCPU seconds: ${JSON.stringify(twin.cpuSeconds())}\npeak MiB: ${JSON.stringify(Object.fromEntries(Object.entries(twin.twin.resources()).map(([k, v]) => [k, v!.peakMiB])))}`);
    expect(done.states.filter((s) => !converged(s)).map(describeState), 'not converged').toEqual([]);
    expect(done.ok).toBe(true);
    // the root and every Application its folder's kustomization lists (not the samples: applied by hand), each pinned
    const listed = (parse(readFileSync(path.join(twin.clusterDir, 'gitops', 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources;
    const expected = listed.filter((f) => f.startsWith('application.')).map((f) => (parse(readFileSync(path.join(twin.clusterDir, 'gitops', f), 'utf8')) as { metadata: { name: string } }).metadata.name);
    expect(done.states.map((s) => s.name).sort()).toEqual([root, ...expected].sort());
    for (const s of done.states.filter((x) => x.name !== root)) expect(s.targetRevision, s.name).toBe(pushed);
  }, BOOTSTRAP_BOUND_MS + 60_000);

  it('the waves ran in order: no Application of a wave synced before every Application of the waves before it was Healthy', () => {
    const timeline: TimelineEntry[] = twin.watch.timeline(twin.rootAppliedAt!, () => pushed).filter((e) => e.application !== twin.name);
    const waves = [...new Set(timeline.map((e) => e.wave))].sort((a, b) => a - b);
    const late: string[] = [];
    for (let i = 1; i < waves.length; i++) {
      const before = timeline.filter((e) => e.wave < waves[i]);
      const lastHealthy = Math.max(...before.map((e) => e.healthyAt ?? Infinity));
      for (const e of timeline.filter((x) => x.wave === waves[i])) if ((e.syncedAt ?? -Infinity) < lastHealthy) late.push(`${e.application} (wave ${e.wave}) synced at ${e.syncedAt} ms, before wave < ${waves[i]} was Healthy (${lastHealthy} ms)`);
    }
    expect(late).toEqual([]);
    expect(waves.length).toBeGreaterThan(1);
  });
});
