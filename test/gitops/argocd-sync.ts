import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Engine } from '../../src/engines';
import { Manifest } from '../../src/render/manifest';
import { argocdBuildEnv, withArgocdOptions } from '../../src/upstream/argocd-kustomize';
import { folderFiles, readKustomization } from '../../src/upstream/remote-bases';
import { HealthVm, LuaHealth } from '../argocd/lua';

/*
 * A replay of what Argo CD v3.5.1 does with a rendered gitops folder, to prove the order its sync waves give, with the
 * real health check (the Lua of the rendered argocd-cm, in a real Lua VM) and the real kustomize build of the folder.
 * Read from argoproj/argo-cd at tag v3.5.1, commit 109ca7ca71139e514114499d294a492e7910a965 (gitops-engine is a folder
 * of that repository since v3.2):
 *
 *   gitops-engine/pkg/sync/sync_context.go (syncContext.Sync): one call is one step of a sync operation. It updates the
 *     tasks applied and not done yet from the health of their live objects (Healthy: succeeded, Degraded: failed, no
 *     health at all: succeeded, anything else: still running); in a sync of more than one wave (tasks.multiStep) it
 *     returns while any task runs; it fails once a task failed; otherwise it applies the pending tasks of the first
 *     phase and wave left, and succeeds at once when no task is left after them (the last wave is not waited on).
 *   gitops-engine/pkg/sync/sync_tasks.go (syncTasks.Less, kindOrder): tasks sort by phase, wave, kind (Helm's order;
 *     a kind not listed, such as Application, after every listed one) and name. syncwaves/waves.go: the wave is the
 *     argocd.argoproj.io/sync-wave annotation, else 0.
 *   gitops-engine/pkg/health/health.go (GetResourceHealth): the argocd-cm override first; Argo CD has no health of its
 *     own for Application or AppProject (nil: the task succeeds once applied).
 *   controller/appcontroller.go: needRefreshAppStatus compares an Application again when spec.source differs from
 *     status.sync.comparedTo.source (and on a refresh: the webhook of a push, or the refresh timeout), autoSync starts a
 *     sync to status.sync.revision when the Application is OutOfSync and its last sync result was not of that revision
 *     and source (alreadyAttemptedSync; it sets `operation`, which processRequestedAppOperation turns into
 *     status.operationState).
 *   controller/state.go CompareAppState: status.sync.comparedTo is the spec's source, status.sync.revision the commit the
 *     targetRevision resolved to, Synced when the live objects equal the revision's manifests.
 *
 * The child controllers are modelled, not run: a child compares when its source changed or its branch moved (after
 * `lag` steps: the controller's queue), syncs what it has not synced, and its objects turn Healthy `readyAfter` steps
 * after a sync that changed them. What is replayed exactly is the parent's sync and the health check it waits on.
 */

/** A commit of the clusters repository: the rendered tree (an output root) as it is at that commit. */
export interface Commit {
  readonly sha: string;
  /** The output root (dist/) at this commit. */
  readonly dist: string;
}

/** A sha of a commit of the replay: 40 hex digits, from its name. */
export const shaOf = (name: string) => createHash('sha1').update(name).digest('hex');

/** The repository: the commits by sha, and the branch the Applications track. */
export class Repo {
  private readonly commits = new Map<string, Commit>();
  head!: Commit;

  push(c: Commit): void {
    this.commits.set(c.sha, c);
    this.head = c;
  }

  /** The commit a targetRevision names: the branch's head, or a commit by its sha. */
  resolve(targetRevision: string): Commit {
    return this.commits.get(targetRevision) ?? this.head;
  }
}

type Obj = Record<string, any>;
const clone = <T>(v: T): T => structuredClone(v);

/** Helm's kind order, as gitops-engine's sync_tasks.go lists it (negative; a kind not listed is 0, the last). */
const KIND_ORDER = ['Namespace', 'NetworkPolicy', 'ResourceQuota', 'LimitRange', 'PodSecurityPolicy', 'PodDisruptionBudget', 'ServiceAccount',
  'Secret', 'SecretList', 'ConfigMap', 'StorageClass', 'PersistentVolume', 'PersistentVolumeClaim', 'CustomResourceDefinition', 'ClusterRole',
  'ClusterRoleList', 'ClusterRoleBinding', 'ClusterRoleBindingList', 'Role', 'RoleList', 'RoleBinding', 'RoleBindingList', 'Service', 'DaemonSet',
  'Pod', 'ReplicationController', 'ReplicaSet', 'Deployment', 'HorizontalPodAutoscaler', 'StatefulSet', 'Job', 'CronJob', 'IngressClass', 'Ingress',
  'APIService'];
const kindOrder = (kind: string) => (KIND_ORDER.includes(kind) ? KIND_ORDER.indexOf(kind) - KIND_ORDER.length : 0);

export const waveOf = (m: Obj): number => {
  const v = Number.parseInt(m.metadata?.annotations?.['argocd.argoproj.io/sync-wave'] ?? '', 10);
  return Number.isNaN(v) ? 0 : v;
};

const keyOf = (m: Obj) => `${String(m.apiVersion).split('/').slice(0, -1).join('/')}/${m.kind}/${m.metadata.namespace ?? ''}/${m.metadata.name}`;

interface Task {
  readonly target: Obj;
  state: '' | 'Running' | 'Succeeded' | 'Failed';
}

/** The objects the live cluster holds, by group/kind/namespace/name. */
export class Cluster {
  readonly live = new Map<string, Obj>();

  /** Applies an object as Argo CD does: the manifest's fields, the live status kept (an Application has no status subresource). */
  apply(target: Obj): void {
    const key = keyOf(target);
    const existing = this.live.get(key);
    const kept = { ...(existing?.status ? { status: existing.status } : {}), ...(existing?.operation ? { operation: existing.operation } : {}) };
    this.live.set(key, { ...clone(target), ...kept });
  }

  get(target: Obj): Obj | undefined {
    return this.live.get(keyOf(target));
  }

  applications(): Obj[] {
    return [...this.live.values()].filter((m) => m.kind === 'Application');
  }
}

/** One sync operation of an Application over its targets, step by step (syncContext.Sync). */
export class SyncOperation {
  private readonly tasks: Task[];
  phase: 'Running' | 'Succeeded' | 'Failed' = 'Running';
  message = '';

  constructor(targets: readonly Obj[], private readonly cluster: Cluster, private readonly health: (live: Obj) => Promise<LuaHealth | undefined>) {
    const byName = (a: Obj, b: Obj) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0);
    this.tasks = targets.map((target) => ({ target, state: '' as const }))
      .sort((a, b) => waveOf(a.target) - waveOf(b.target) || kindOrder(a.target.kind) - kindOrder(b.target.kind) || byName(a.target, b.target));
  }

  async step(): Promise<void> {
    if (this.phase !== 'Running') return;
    for (const t of this.tasks.filter((x) => x.state === 'Running')) {
      const live = this.cluster.get(t.target);
      if (!live) continue;
      const h = await this.health(live);
      if (h === undefined || h.status === 'Healthy') t.state = 'Succeeded';
      else if (h.status === 'Degraded') t.state = 'Failed';
    }
    const multiStep = waveOf(this.tasks[0].target) !== waveOf(this.tasks[this.tasks.length - 1].target);
    const running = this.tasks.filter((t) => t.state === 'Running');
    if (multiStep && running.length > 0) {
      const first = running[0].target;
      this.message = `waiting for healthy state of ${String(first.apiVersion).split('/')[0]}/${first.kind}/${first.metadata.name}`
        + (running.length > 1 ? ` and ${running.length - 1} more resources` : '');
      return;
    }
    if (this.tasks.some((t) => t.state === 'Failed')) {
      [this.phase, this.message] = ['Failed', 'one or more synchronization tasks completed unsuccessfully'];
      return;
    }
    const pending = this.tasks.filter((t) => t.state === '');
    if (pending.length === 0) {
      [this.phase, this.message] = ['Succeeded', 'successfully synced (no more tasks)'];
      return;
    }
    const wave = waveOf(pending[0].target);
    const now = pending.filter((t) => waveOf(t.target) === wave);
    for (const t of now) {
      this.cluster.apply(t.target);
      t.state = 'Running';
    }
    if (pending.length === now.length) [this.phase, this.message] = ['Succeeded', 'successfully synced (all tasks run)'];
    else this.message = 'one or more tasks are running';
  }
}

/** What happened to an Application, step by step. */
export interface Event {
  readonly step: number;
  readonly app: string;
  /** `started`: its sync to `revision` started; `applied`: that sync applied its objects; `ready`: compared, Synced and Healthy at `revision`. */
  readonly what: 'started' | 'applied' | 'ready';
  readonly revision: string;
}

/** The content an Application's source has at a commit: the files of its folder, or (a chart) the source itself. */
function contentAt(source: Obj, commit: Commit, base: string): string {
  if (source.chart !== undefined || !String(source.path ?? '').startsWith(`${base}/`)) return JSON.stringify(source);
  const dir = path.join(commit.dist, String(source.path).slice(base.length + 1));
  const h = createHash('sha256');
  for (const f of readdirSync(dir).sort()) if (statSync(path.join(dir, f)).isFile()) h.update(f).update(readFileSync(path.join(dir, f)));
  return h.digest('hex');
}

/** The revision a source's targetRevision resolves to: a chart's version, else a commit of the repository. */
function revisionOf(source: Obj, repo: Repo, repoURL: string): string {
  return source.repoURL === repoURL && source.chart === undefined ? repo.resolve(String(source.targetRevision)).sha : String(source.targetRevision);
}

/**
 * What the events of an Application are keyed by: the commit, for a source of the repository; the version and the
 * source itself (its values) for a chart or another repository, whose version does not change with a commit.
 */
export function eventKey(source: Obj, revision: string, repoURL: string): string {
  if (source.repoURL === repoURL && source.chart === undefined) return revision;
  return `${revision}@${createHash('sha1').update(JSON.stringify(source)).digest('hex').slice(0, 12)}`;
}

interface ControllerState {
  applied?: string;
  readyAt?: number;
  queuedAt?: number;
  operation?: SyncOperation;
}

export interface ReplayOptions {
  /** The Application health check (the rendered argocd-cm's resource.customizations.health.argoproj.io_Application). */
  readonly applicationHealth: string;
  /** The repository URL the gitops folder's Applications read (the root's). */
  readonly repoURL: string;
  /** `<gitops.path>` without the cluster folder's name: the repository path of the output root (`dist`). */
  readonly base: string;
  /** Builds the gitops folder at a commit as Argo CD does for the root (the root's kustomize options, the commit substituted). */
  readonly build: (root: Obj, commit: Commit) => Promise<Obj[]>;
}

/**
 * Argo CD's application controller over a live cluster, modelled per Application, with the parent's sync replayed:
 * `step()` lets every Application act once (in name order).
 */
export class ArgoCd {
  static async start(repo: Repo, options: ReplayOptions): Promise<ArgoCd> {
    return new ArgoCd(await HealthVm.create(), repo, options);
  }

  readonly cluster = new Cluster();
  readonly events: Event[] = [];
  stepCount = 0;
  private readonly state = new Map<string, ControllerState>();

  private constructor(private readonly vm: HealthVm, readonly repo: Repo, private readonly options: ReplayOptions) {}

  close(): void {
    this.vm.close();
  }

  /** The health of a live object, as gitops-engine reads it: the argocd-cm check for Applications, none for the rest. */
  async health(live: Obj): Promise<LuaHealth | undefined> {
    return live.kind === 'Application' ? this.vm.run(this.options.applicationHealth, live) : undefined;
  }

  /** Steps between a change and the controller's comparison (its queue): 1 to 3, fixed per Application. */
  private lag(name: string): number {
    return 1 + (createHash('sha1').update(name).digest()[0] % 3);
  }

  async step(): Promise<void> {
    const n = this.stepCount++;
    for (const app of this.cluster.applications().sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) await this.reconcile(app, n);
  }

  /** Steps until `done` holds (or `max` steps): the number of steps taken, or undefined when it never held. */
  async runUntil(done: () => boolean, max = 400): Promise<number | undefined> {
    for (let i = 0; i < max; i++) {
      if (done()) return i;
      await this.step();
    }
    return done() ? max : undefined;
  }

  private async reconcile(app: Obj, n: number): Promise<void> {
    const name: string = app.metadata.name;
    const st = this.state.get(name) ?? {};
    this.state.set(name, st);
    const source = app.spec.source;
    app.status ??= {};
    const status = app.status;
    const event = (what: Event['what'], revision: string) => this.events.push({ step: n, app: name, what, revision: eventKey(source, revision, this.options.repoURL) });

    // the objects' health: Healthy some steps after a sync that changed them
    const health = st.applied === undefined ? 'Missing' : n >= st.readyAt! ? 'Healthy' : 'Progressing';
    status.health = { status: health };
    const ready = status.sync?.status === 'Synced' && health === 'Healthy' && status.operationState?.phase !== 'Running';
    if (ready && JSON.stringify(status.sync.comparedTo.source) === JSON.stringify(source) && this.when(name, 'ready', eventKey(source, status.sync.revision, this.options.repoURL)) === undefined) {
      event('ready', status.sync.revision);
    }

    // an operation runs: one step of it (the parent's sync is replayed; a child's sync applies its objects at once)
    if (status.operationState?.phase === 'Running') {
      const revision: string = status.operationState.operation.sync.revision;
      if (st.operation) {
        await st.operation.step();
        status.operationState.message = st.operation.message;
        if (st.operation.phase === 'Running') return;
        status.operationState.phase = st.operation.phase;
        if (st.operation.phase !== 'Succeeded') return;
      } else {
        status.operationState.phase = 'Succeeded';
      }
      const content = contentAt(source, this.repo.resolve(revision), this.options.base);
      if (st.applied !== content) st.readyAt = n + 3;
      st.applied = content;
      status.operationState.syncResult = { revision, source: clone(source) };
      status.sync.status = 'Synced';
      event('applied', revision);
      return;
    }
    if (app.operation?.sync) {
      const revision: string = app.operation.sync.revision;
      delete app.operation;
      status.operationState = { phase: 'Running', operation: { sync: { revision } } };
      const commit = this.repo.resolve(revision);
      const healthOf = (live: Obj) => this.health(live);
      st.operation = this.isParent(app) ? new SyncOperation(await this.options.build(app, commit), this.cluster, healthOf) : undefined;
      event('started', revision);
      return;
    }

    // a comparison: when the source differs from the one compared, or the branch it tracks moved
    const revision = revisionOf(source, this.repo, this.options.repoURL);
    const stale = JSON.stringify(source) !== JSON.stringify(status.sync?.comparedTo?.source) || revision !== status.sync?.revision;
    if (stale) {
      st.queuedAt ??= n;
      if (n - st.queuedAt < this.lag(name)) return;
      st.queuedAt = undefined;
      const desired = contentAt(source, this.repo.resolve(revision), this.options.base);
      status.sync = { status: desired === st.applied ? 'Synced' : 'OutOfSync', revision, comparedTo: { source: clone(source), destination: clone(app.spec.destination) } };
      return;
    }

    // automated sync of a revision and source not attempted yet (alreadyAttemptedSync: the last sync result)
    const result = status.operationState?.syncResult;
    const attempted = result !== undefined && result.revision === status.sync.revision && JSON.stringify(result.source) === JSON.stringify(source);
    if (app.spec.syncPolicy?.automated && status.sync.status === 'OutOfSync' && !attempted) {
      app.operation = { sync: { revision: status.sync.revision } };
    }
  }

  /** Whether an Application syncs the gitops folder (the root): its sync is the one replayed. */
  private isParent(app: Obj): boolean {
    return String(app.spec.source?.path ?? '').endsWith('/gitops');
  }

  /** The first step at which `what` happened to `app` at `key` (eventKey). */
  when(app: string, what: Event['what'], key: string): number | undefined {
    return this.events.find((e) => e.app === app && e.what === what && e.revision === key)?.step;
  }

  /**
   * The first step at which `what` happened to an Application as the root applies it at `commit`: at that commit, for
   * a source of the repository; at its version and values, for a chart.
   */
  at(app: Obj, what: Event['what'], commit: string): number | undefined {
    const source = app.spec.source;
    const own = source.repoURL === this.options.repoURL && source.chart === undefined;
    return this.when(app.metadata.name, what, own ? commit : eventKey(source, String(source.targetRevision), this.options.repoURL));
  }
}

/**
 * The gitops folder of a rendered tree built as Argo CD's repo server builds it for `root` at `commit`: its
 * kustomization with the root's kustomize options (commonAnnotations, `${ARGOCD_APP_REVISION}` the commit's sha),
 * by the real kustomize.
 */
export async function buildAsArgoCd(engine: Engine, root: Obj, dir: string, revision: string): Promise<Obj[]> {
  const env = argocdBuildEnv(root as Manifest, root.spec.source, revision);
  const kustomization = withArgocdOptions(readKustomization(dir) ?? {}, root.spec.source.kustomize ?? {}, env);
  const scratch = mkdtempSync(path.join(tmpdir(), 'argocd-build-'));
  try {
    for (const f of folderFiles(dir)) writeFileSync(path.join(scratch, f), readFileSync(path.join(dir, f)));
    writeFileSync(path.join(scratch, 'kustomization.yaml'), JSON.stringify(kustomization));
    const out = await engine.run(['--', scratch]);
    return parseAllDocuments(out).map((d) => d.toJSON() as Obj).filter((o) => o);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
