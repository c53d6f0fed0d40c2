import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ArgoCd, buildAsArgoCd, Commit, Repo, shaOf, waveOf } from './argocd-sync';
import { checkClusterRendered } from '../../src/check';
import { readClusterFolder } from '../../src/check/tree';
import { healthKey } from '../../src/components/argocd/health-checks';
import { Engine, resolveEngines } from '../../src/engines';
import { parseDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { clusterFiles } from '../../src/synth/layout';
import { renderCluster } from '../../src/synth/render';
import { TRAINING_FILE } from '../helpers';

/*
 * The order Argo CD v3.5.1 applies a rendered cluster in, replayed (argocd-sync.ts: gitops-engine's sync of the root, the
 * Application health check of the rendered argocd-cm in a real Lua VM, the gitops folder built by the real kustomize as
 * Argo CD's repo server builds it), at the bootstrap and on a later commit. A wave must start only when every
 * Application of the waves before has compared, synced and turned Healthy at the commit the root applies.
 */

type Obj = Record<string, any>;
const CLUSTER = 'training-cluster';
let engine: Engine;
const temp = mkdtempSync(path.join(tmpdir(), 'waves-'));

/** A commit: the training cluster rendered (with an edit of its description) into an output root of its own. */
function commit(name: string, edit: (d: Obj) => void = () => {}): Commit {
  const raw = parse(readFileSync(TRAINING_FILE, 'utf8')) as Obj;
  edit(raw);
  const dist = path.join(temp, name, 'dist');
  for (const [file, content] of clusterFiles(renderCluster(buildModel(parseDescription(raw))))) {
    mkdirSync(path.dirname(path.join(dist, file)), { recursive: true });
    writeFileSync(path.join(dist, file), content);
  }
  return { sha: shaOf(name), dist };
}

/** A copy of a commit's tree, its gitops folder changed by `change` (the forms of the folder before the fix). */
function variant(c: Commit, name: string, change: (gitops: string) => void): Commit {
  const dist = path.join(temp, name, 'dist');
  cpSync(c.dist, dist, { recursive: true });
  change(path.join(dist, CLUSTER, 'gitops'));
  return { sha: shaOf(name), dist };
}

const readYaml = (file: string): Obj => parse(readFileSync(file, 'utf8'));
const gitopsDir = (c: Commit) => path.join(c.dist, CLUSTER, 'gitops');
const rootFile = (c: Commit) => path.join(gitopsDir(c), `application.argocd.${CLUSTER}.yaml`);

/** The bootstrap the cluster's README prints: the files of its `kubectl apply -f` line, applied to the cluster. */
function bootstrapFiles(c: Commit): string[] {
  const readme = readFileSync(path.join(c.dist, CLUSTER, 'README.md'), 'utf8');
  const line = readme.split('\n').find((l) => /^kubectl apply -f \S+ -f \S+/.test(l));
  if (!line) throw new Error('no kubectl apply -f line in the README');
  return [...line.matchAll(/-f (\S+)/g)].map((m) => path.join(c.dist, m[1].slice('dist/'.length)));
}

async function argoCd(repo: Repo, first: Commit): Promise<ArgoCd> {
  const cm = readYaml(path.join(first.dist, CLUSTER, 'argocd', 'configmap.argocd.argocd-cm.yaml'));
  return ArgoCd.start(repo, {
    applicationHealth: cm.data[healthKey('argoproj.io', 'Application')],
    repoURL: readYaml(rootFile(first)).spec.source.repoURL,
    base: 'dist',
    build: (root, c) => buildAsArgoCd(engine, root, gitopsDir(c), c.sha),
  });
}

/** The children the root applies at a commit: the gitops folder as Argo CD builds it, without the AppProject. */
async function children(c: Commit): Promise<Obj[]> {
  return (await buildAsArgoCd(engine, readYaml(rootFile(c)), gitopsDir(c), c.sha)).filter((m) => m.kind === 'Application');
}

/**
 * Where the order broke at a commit: an Application that started syncing it before an Application of an earlier wave
 * was ready (compared, Synced, Healthy) at it. `since`: the step the commit was pushed at; a chart's Application whose
 * version and values the commit leaves alone started before it, and does not sync again (nothing to order).
 */
function orderViolations(argo: ArgoCd, apps: readonly Obj[], sha: string, since = 0): string[] {
  const out: string[] = [];
  for (const b of apps) {
    const started = argo.at(b, 'started', sha);
    if (started === undefined || started < since) continue;
    for (const a of apps.filter((x) => waveOf(x) < waveOf(b))) {
      const ready = argo.at(a, 'ready', sha);
      if (ready === undefined || ready >= started) out.push(`${b.metadata.name} (wave ${waveOf(b)}) started at step ${started}, ${a.metadata.name} (wave ${waveOf(a)}) ready at ${ready ?? 'never'}`);
    }
  }
  return out;
}

const allReady = (argo: ArgoCd, apps: readonly Obj[], sha: string) => () => apps.every((a) => argo.at(a, 'ready', sha) !== undefined);

/**
 * Bootstraps `first` as the README says and runs until every child is ready at it, then pushes `next` and runs until
 * every child is ready at that (or the steps run out): what `check` gets, the replay still open (the caller closes it).
 */
async function bootstrapThenPush(first: Commit, next: Commit): Promise<{ argo: ArgoCd; apps: Obj[]; pushedAt: number }> {
  const repo = new Repo();
  repo.push(first);
  const argo = await argoCd(repo, first);
  for (const f of bootstrapFiles(first)) argo.cluster.apply(readYaml(f));
  expect(await argo.runUntil(allReady(argo, await children(first), first.sha))).toBeDefined();
  repo.push(next);
  const pushedAt = argo.stepCount;
  const apps = await children(next);
  await argo.runUntil(allReady(argo, apps, next.sha));
  return { argo, apps, pushedAt };
}

beforeAll(async () => {
  engine = (await resolveEngines()).kustomize;
});
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe('sync waves, replayed as Argo CD v3.5.1 runs them', () => {
  const c1 = commit('c1');
  // a new tenant: a ClusterQueue in the kueue folder (wave 1), its namespace and LocalQueue in tenants (wave 2)
  const c2 = commit('c2', (d) => d.tenants.push({ name: 'audio', gpus: 8, borrowingOnly: true }));

  it('the bootstrap the README prints applies the AppProject and the root only; every wave waits for the one before at the root\'s commit', async () => {
    const files = bootstrapFiles(c1);
    expect(files.map((f) => path.basename(f))).toEqual([`appproject.argocd.${CLUSTER}.yaml`, `application.argocd.${CLUSTER}.yaml`]);
    const repo = new Repo();
    repo.push(c1);
    const argo = await argoCd(repo, c1);
    try {
      for (const f of files) argo.cluster.apply(readYaml(f));
      const apps = await children(c1);
      expect(new Set(apps.map(waveOf)).size).toBeGreaterThanOrEqual(3);
      // every child is pinned to the commit the root synced
      const own = apps.filter((a) => a.spec.source.chart === undefined && a.spec.source.repoURL === readYaml(rootFile(c1)).spec.source.repoURL);
      expect(own.map((a) => a.spec.source.targetRevision)).toEqual(own.map(() => c1.sha));
      expect(await argo.runUntil(allReady(argo, apps, c1.sha))).toBeDefined();
      expect(orderViolations(argo, apps, c1.sha)).toEqual([]);
      // and the waves did wait: the last wave started well after the first
      const first = Math.min(...apps.map((a) => argo.at(a, 'started', c1.sha) ?? Infinity));
      const last = Math.max(...apps.map((a) => argo.at(a, 'started', c1.sha) ?? -Infinity));
      expect(last - first).toBeGreaterThan(6);
    } finally {
      argo.close();
    }
  });

  it('on a later commit, each wave waits until the waves before have synced that commit (not their previous Healthy)', async () => {
    const { argo, apps, pushedAt } = await bootstrapThenPush(c1, c2);
    try {
      expect(allReady(argo, apps, c2.sha)()).toBe(true);
      expect(orderViolations(argo, apps, c2.sha, pushedAt)).toEqual([]);
      // the new tenant's folder was applied after the kueue folder had synced the commit and was Healthy
      const named = (n: string) => apps.find((a) => a.metadata.name === `${CLUSTER}-${n}`)!;
      expect(argo.at(named('kueue'), 'ready', c2.sha)).toBeLessThan(argo.at(named('tenants'), 'started', c2.sha)!);
    } finally {
      argo.close();
    }
  });

  it('before the fix, children tracking the branch sync a commit on their own: the tenants before the kueue folder is ready', async () => {
    // the gitops folder as it was: no replacements pinning the children, and a root without the kustomize options
    const unpin = (gitops: string) => {
      const k = readYaml(path.join(gitops, 'kustomization.yaml'));
      delete k.replacements;
      writeFileSync(path.join(gitops, 'kustomization.yaml'), stringify(k));
      const root = readYaml(path.join(gitops, `application.argocd.${CLUSTER}.yaml`));
      delete root.spec.source.kustomize;
      writeFileSync(path.join(gitops, `application.argocd.${CLUSTER}.yaml`), stringify(root));
    };
    const old2 = variant(c2, 'old2', unpin);
    const { argo, apps } = await bootstrapThenPush(variant(c1, 'old1', unpin), old2);
    try {
      expect(apps.find((a) => a.metadata.name === `${CLUSTER}-tenants`)!.spec.source.targetRevision).toBe('main');
      expect(orderViolations(argo, apps, old2.sha).join('\n')).toContain(`${CLUSTER}-tenants (wave 2) started`);
    } finally {
      argo.close();
    }
  });

  it('before the fix, a root its own folder lists waits for itself for ever, and check says so', async () => {
    const selfTracking = variant(c1, 'self', (gitops) => {
      const k = readYaml(path.join(gitops, 'kustomization.yaml'));
      k.resources.push(`application.argocd.${CLUSTER}.yaml`);
      writeFileSync(path.join(gitops, 'kustomization.yaml'), stringify(k));
    });
    const repo = new Repo();
    repo.push(selfTracking);
    const argo = await argoCd(repo, selfTracking);
    try {
      for (const f of bootstrapFiles(selfTracking)) argo.cluster.apply(readYaml(f));
      const apps = (await children(selfTracking)).filter((a) => a.metadata.name !== CLUSTER);
      expect(await argo.runUntil(allReady(argo, apps, selfTracking.sha), 150)).toBeUndefined();
      const root = argo.cluster.applications().find((a) => a.metadata.name === CLUSTER)!;
      expect(root.status.operationState).toMatchObject({ phase: 'Running', message: `waiting for healthy state of argoproj.io/Application/${CLUSTER}` });
    } finally {
      argo.close();
    }
    // check builds the folder as Argo CD does (the charts need not be rendered for this rule: no upstream folder)
    const { findings } = await checkClusterRendered(
      { ...readClusterFolder(path.join(selfTracking.dist, CLUSTER)), model: buildModel(parseDescription(parse(readFileSync(TRAINING_FILE, 'utf8')))) },
      { upstream: path.join(temp, 'no-upstream') },
    );
    expect(findings.filter((f) => f.rule === 'self-tracking-application').map((f) => f.message)).toEqual([
      expect.stringMatching(new RegExp(`^Application argocd/${CLUSTER}: applies itself in wave 0 of its own sync`)),
    ]);
  });

  it('kubectl apply -k of the gitops folder (the bootstrap before the fix) is refused: the commit to pin the children to is missing', async () => {
    await expect(engine.run(['--', gitopsDir(c1)])).rejects.toThrow(/gpu-cluster.dev\/revision\]` is missing for replacement source AppProject/);
  });
});
