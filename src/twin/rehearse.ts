import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { applicationsPath, applicationState, ApplicationState, describeState, formatTimeline, REFRESH_ANNOTATION, shortRevision } from './applications';
import { killLaunched } from './control-plane';
import { JobWatch } from './job-watch';
import { ApiError, describe as describeObject, KubeClient, KubeObject } from './kube-client';
import { OperatorStandIns } from './operator-stand-ins';
import { HermeticNode } from './placement';
import { PodRecord, PodWatch, podsOf } from './pod-watch';
import { poll, sleep } from './poll';
import { decided, JobHistory, jobsReport, queuedSamples, readJobs, WorkloadState } from './sample-jobs';
import { startTwinCluster, TwinCluster } from './twin-cluster';
import { CheckFailed } from '../check/engine';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { InputError } from '../errors';
import { scratchFolder } from '../files';
import { readRawDescription } from '../model/load';
import { ClusterModel } from '../model/model';
import { crdStays } from '../render/deletions';
import { isCrd } from '../render/manifest';
import { toYaml } from '../render/yaml';
import { ValidationFailed } from '../synth/pipeline';

/** The description as it is at a commit (change mode's starting point): its text, and where it comes from as `REV:path`. */
export interface DescriptionAtRevision {
  readonly text: string;
  readonly label: string;
  readonly commit: string;
}

/**
 * `rehearse` (issue 51): the bootstrap of a described cluster synced by a real Argo CD on a twin of the cluster
 * (twin-cluster.ts), watched until every Application is Synced and Healthy or the time is up. Everything it starts
 * lives in one scratch folder (the process's TMPDIR while it runs) and in child processes of this one: both go on
 * every way out (the end, the time limit, SIGINT, SIGTERM, an uncaught error).
 */

export interface RehearsalOptions {
  /** The description file (YAML, JSON or TypeScript), read and never written. */
  readonly description: string;
  /**
   * Change mode: the description at a commit (command.ts descriptionAtRevision). Its render converges first; then the
   * render of `description` (the working tree) is pushed as the next commit and what that push does is reported.
   */
  readonly from?: DescriptionAtRevision;
  /**
   * The Nodes to run, from the cluster itself (--snapshot, --kubeconfig: cluster-nodes.ts nodesFromCluster), for the
   * model of the description the twin starts from. @default those the description implies (twin-cluster.ts twinNodes)
   */
  readonly nodes?: (model: ClusterModel) => HermeticNode[];
  /** The whole rehearsal: the twin's start, the bootstrap and every wave. */
  readonly timeoutMs: number;
  readonly verbose?: boolean;
  /** Errors only: what does not converge (no progress, no timeline, no summary). */
  readonly quiet?: boolean;
  /** Output lines (the timeline, the summary). */
  readonly out: (line: string) => void;
  /** Message lines (progress without a terminal, what did not converge). */
  readonly err: (line: string) => void;
  /** A terminal: the live display is drawn on it (instead of progress lines). */
  readonly terminal?: (text: string) => void;
}

/** How long the root's sync stays succeeded past an unhealthy Application before the rehearsal takes it as the verdict. */
const ROOT_SETTLED_MS = 15_000;

/** How long Kueue may take to decide the sample jobs submitted before a change (admit each, or say why not). */
const JOBS_DECIDED_MS = 120_000;
/** The longest a rehearsal that did not converge waits for Argo CD's refresh of the Applications it reports. */
const REFRESH_MS = 60_000;
/** How long the first lists of change mode's watches (every pod, the sample jobs' Workloads) may take. */
const WATCHES_LISTED_MS = 30_000;

/** The time limit passed while `what` was under way. */
class OutOfTime extends Error {}

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

/** The Applications the root's folder lists (dist/<cluster>/gitops/kustomization.yaml), by name, and the root. */
function expectedApplications(twin: TwinCluster): string[] {
  const gitops = path.join(twin.clusterDir, GITOPS_FOLDER);
  const listed = ((parse(readFileSync(path.join(gitops, 'kustomization.yaml'), 'utf8')) as { resources?: string[] }).resources ?? []);
  const names = listed.filter((f) => f.startsWith('application.'))
    .map((f) => (parse(readFileSync(path.join(gitops, f), 'utf8')) as { metadata: { name: string } }).metadata.name);
  return [twin.name, ...names];
}

/** One Application on one line of the live display: name, wave, sync, health and what it waits on. */
function displayLine(s: ApplicationState, width: number): string {
  const waiting = s.health !== 'Healthy' ? (s.healthMessage || s.waitingOn[0] || s.operationMessage || s.conditions[0] || '')
    : s.sync !== 'Synced' ? (s.conditions[0] || s.operationMessage || s.waitingOn[0] || '') : '';
  const line = `  ${s.name.padEnd(width)}  wave ${String(s.wave).padStart(2)}  ${(s.sync || '-').padEnd(10)} ${(s.health || '-').padEnd(11)} ${waiting}`;
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

const cpuLine = (twin: TwinCluster) => Object.entries(twin.cpuSeconds()).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');

/** Every file of a rendered cluster folder, by path relative to the folder, with its text. */
function renderedFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const file = path.join(e.parentPath, e.name);
    out.set(path.relative(dir, file).split(path.sep).join('/'), readFileSync(file, 'utf8'));
  }
  return out;
}

const ROLE_TEXT: Record<string, string> = { gpu: 'GPU workers', service: 'service node', cpu: 'CPU workers' };

/**
 * Waits until Kueue has decided each sample job submitted before a change (admitted, or its scheduler said why not:
 * sample-jobs.ts decided), as the job watch's streams deliver the jobs' Workloads, at most `bound` (or the time `left`
 * of --timeout, when less: the caller then ends out of time); a job gone meanwhile is not waited for (nothing is left
 * to decide). Answers a line for each it did not decide, for the report (which then does not take the job's state for
 * one Kueue reported): a gone job as gone, one without a Workload as unmanaged, each with the bound it was given.
 */
export async function undecidedJobs(watch: Pick<JobWatch, 'until' | 'now' | 'workloadsNow'>, bound: number, left = bound): Promise<string[]> {
  const open = () => {
    const workloads = watch.workloadsNow();
    return [...watch.now()].filter(([job, s]) => s.state !== 'gone' && !decided(workloads.get(job)));
  };
  await watch.until(() => open().length === 0, Math.min(bound, left));
  const workloads = watch.workloadsNow();
  return [...watch.now()].filter(([job]) => !decided(workloads.get(job))).map(([job, s]) => (s.state === 'gone'
    ? `${job}: not decided by Kueue before the push: the job is gone (deleted before Kueue decided it)`
    : `${job}: not decided by Kueue within ${seconds(bound)} before the push (${s.state === 'unmanaged'
      ? 'no Workload: is Kueue\'s integration for its kind enabled?' : 'its Workload has no QuotaReserved condition yet'})`));
}

/**
 * What a pushed change did, between the two converged states: the pods replaced on each node kind (by owner; a
 * DaemonSet on the GPU workers first), the Applications whose rendered folder changed with when each was Synced and
 * Healthy at the new commit, and what was pruned (an Application's resource before and not after, or Pruned in its
 * last sync's results) or left in the cluster all the same (`stillThere`: a CRD, which Argo CD never prunes; what a
 * deleted Application leaves behind).
 */
export function changeReport(c: {
  readonly apps: { readonly before: readonly KubeObject[]; readonly after: readonly KubeObject[] };
  /** resourceKey of each goneResources entry the twin still has (and is not deleting) after the change. */
  readonly stillThere: ReadonlySet<string>;
  readonly clusterPath: string;
  readonly changedFiles: readonly string[];
  readonly pods: {
    /** The pods at the push, by uid. */
    readonly before: ReadonlyMap<string, PodRecord>;
    /** Those (each one of `before`) and every pod created after the push (pod-watch.ts PodWatch: one gone again too), by uid. */
    readonly seen: ReadonlyMap<string, PodRecord>;
    readonly after: ReadonlyMap<string, PodRecord>;
  };
  readonly nodeRole: ReadonlyMap<string, string>;
  readonly timeline: readonly { application: string; wave: number; syncedAt?: number; healthyAt?: number }[];
}): string[] {
  const out: string[] = [];
  // pods: deleted (there before the push or created after it, and gone after) and created (seen after the push, not
  // before), by owner and node kind
  const touched = new Map<string, { role: string; owner: string; nodes: Set<string>; deleted: number; created: number }>();
  const touch = (p: PodRecord, what: 'deleted' | 'created') => {
    if (!p.node) return;
    const role = c.nodeRole.get(p.node) ?? 'other';
    const key = `${role}\u0000${p.owner}`;
    const t = touched.get(key) ?? { role, owner: p.owner, nodes: new Set<string>(), deleted: 0, created: 0 };
    t.nodes.add(p.node);
    t[what]++;
    touched.set(key, t);
  };
  for (const [uid, p] of c.pods.seen) if (!c.pods.after.has(uid)) touch(p, 'deleted');
  for (const [uid, p] of c.pods.seen) if (!c.pods.before.has(uid)) touch(p, 'created');
  const ofRole = (role: string) => [...c.nodeRole.values()].filter((r) => r === role).length;
  const rank = (t: { role: string; owner: string }) => (t.role === 'gpu' ? 0 : 1) * 2 + (t.owner.startsWith('DaemonSet ') ? 0 : 1);
  const rows = [...touched.values()].sort((a, b) => rank(a) - rank(b) || a.role.localeCompare(b.role) || a.owner.localeCompare(b.owner));
  if (rows.length === 0) out.push('pods: none replaced');
  for (const t of rows) {
    const verb = t.deleted > 0 && t.created > 0 ? (t.owner.startsWith('DaemonSet ') ? 'rolled' : 'replaced') : t.created > 0 ? 'started' : 'removed';
    const nodes = [...t.nodes].sort();
    out.push(`pods: ${ROLE_TEXT[t.role] ?? t.role}: ${t.owner} ${verb} on ${nodes.length} of ${ofRole(t.role)} (${nodes.join(', ')}; ${t.deleted} pod(s) deleted, ${t.created} created)`);
  }
  // the Applications whose rendered folder changed, by wave, with when each converged at the new commit
  const sourcePath = (a: KubeObject) => String((a.spec as Record<string, any>)?.source?.path ?? '');
  const changed = c.apps.after.filter((a) => {
    const p = path.posix.relative(c.clusterPath, sourcePath(a));
    return p !== '' && !p.startsWith('..') && c.changedFiles.some((f) => f.startsWith(`${p}/`));
  }).map((a) => a.metadata.name);
  const s = (ms?: number) => (ms === undefined ? 'not yet' : `${(ms / 1000).toFixed(1)} s`);
  const entries = [...c.timeline].filter((e) => changed.includes(e.application))
    .sort((a, b) => a.wave - b.wave || (a.healthyAt ?? Infinity) - (b.healthyAt ?? Infinity));
  out.push(`changed: ${entries.length} Application(s) whose rendered folder changed${entries.length > 0 ? ', in the order they converged:' : ''}`);
  for (const e of entries) out.push(`  wave ${e.wave}: ${e.application}: Synced ${s(e.syncedAt)}, Healthy ${s(e.healthyAt)} after the push`);
  // pruned, or left in the cluster all the same
  const pruned: string[] = [];
  const kept: string[] = [];
  for (const g of goneResources(c.apps.before, c.apps.after)) {
    const what = `${g.kind} ${g.namespace ? `${g.namespace}/` : ''}${g.name}`;
    if (!c.stillThere.has(resourceKey(g))) {
      pruned.push(`pruned: ${g.application}: ${what}`);
    } else if (isCrd({ apiVersion: `${g.group}/${g.version}`, kind: g.kind })) {
      kept.push(`not pruned: ${g.application}: ${what}: ${crdStays(g.name)}`);
    } else {
      kept.push(`not pruned: ${g.application}: ${what}: still in the cluster${c.apps.after.some((a) => a.metadata.name === g.application)
        ? '' : ' (its Application was deleted without deleting what it applied)'}`);
    }
  }
  if (pruned.length === 0) out.push('pruned: nothing');
  out.push(...pruned, ...kept);
  return out;
}

/** A resource of an Application as its status.resources (or its sync's results) names it. */
export interface ResourceRef {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
}

/** The identity of a resource across reads (group, kind, namespace, name). */
export const resourceKey = (r: ResourceRef): string => `${r.group}/${r.kind} ${r.namespace ?? ''}/${r.name}`;

/** A resource as an object to read from the cluster (its apiVersion from group and version). */
export const resourceObject = (r: ResourceRef): KubeObject => ({
  apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
  kind: r.kind,
  metadata: { name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) },
});

/**
 * The resources each Application had before the change and no longer has after (its status.resources; every one of
 * an Application gone), or that its last sync pruned, by Application then identity.
 */
export function goneResources(before: readonly KubeObject[], after: readonly KubeObject[]): (ResourceRef & { readonly application: string })[] {
  const refs = (list: unknown): ResourceRef[] => ((list ?? []) as Record<string, any>[])
    .map((r) => ({ group: String(r.group ?? ''), version: String(r.version ?? ''), kind: String(r.kind), ...(r.namespace ? { namespace: String(r.namespace) } : {}), name: String(r.name) }));
  const out: (ResourceRef & { application: string })[] = [];
  for (const b of before) {
    const a = after.find((x) => x.metadata.name === b.metadata.name);
    const now = new Set(refs((a?.status as Record<string, any>)?.resources).map(resourceKey));
    const results = refs((((a?.status as Record<string, any>)?.operationState?.syncResult?.resources ?? []) as Record<string, any>[]).filter((r) => r.status === 'Pruned'));
    const gone = new Map<string, ResourceRef>();
    const left = refs((b.status as Record<string, any>)?.resources).filter((r) => !now.has(resourceKey(r)));
    for (const r of [...left, ...results]) gone.set(resourceKey(r), r);
    const label = (r: ResourceRef) => `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
    out.push(...[...gone.values()].sort((x, y) => label(x).localeCompare(label(y))).map((r) => ({ ...r, application: b.metadata.name })));
  }
  return out;
}

/**
 * Of the resources that left their Application, those still in the cluster (a CRD: Argo CD never prunes one; what a
 * deleted Application left), by resourceKey. One being deleted (a deletionTimestamp), not found, or of a kind no longer
 * served counts as pruned; any other error of the read is thrown.
 */
export async function stillInCluster(client: Pick<KubeClient, 'read'>, gone: readonly ResourceRef[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const g of gone) {
    const live = await client.read(resourceObject(g)).catch((e: unknown) => {
      if (e instanceof ApiError && e.status === 404) return undefined;
      throw e;
    });
    if (live && !live.metadata.deletionTimestamp) out.add(resourceKey(g));
  }
  return out;
}

/** The revision each Application is to be at once it has synced a commit (atCommit). */
export type RevisionOf = (s: ApplicationState) => string;

/**
 * `commit` for the Applications whose source is the cluster's repository `repoURL` (the root and every folder of the
 * render); one of another source (a managed install: a chart at its release, an upstream overlay at its tag) at the
 * revision it compared, which a commit of the cluster's repository never is. Without `repoURL`, `commit` for every one.
 */
export const atCommit = (commit: string, repoURL?: string): RevisionOf => (s) =>
  (repoURL === undefined || s.repoURL === repoURL ? commit : s.revision || commit);

const revisionOf = (rev: string | RevisionOf): RevisionOf => (typeof rev === 'string' ? atCommit(rev) : rev);

/** Whether an Application is Synced and Healthy at `rev` (a commit: every Application at it; or each at its own, atCommit). */
export const convergedAt = (rev: string | RevisionOf) => (s: ApplicationState): boolean => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === revisionOf(rev)(s);

/**
 * Whether an Application is settled at `rev`: converged, or Synced there and Suspended with the root reporting it held
 * on purpose (a Kueue queue held by its stop policy, as the description says: the root's waves go ahead of it).
 */
export const settledAt = (rev: string | RevisionOf, root: ApplicationState | undefined) => (s: ApplicationState): boolean => convergedAt(rev)(s)
  || (s.sync === 'Synced' && s.health === 'Suspended' && s.revision === revisionOf(rev)(s) && (root?.heldOnPurpose.includes(s.name) ?? false));

/**
 * Whether the root's sync has gone past, at `rev`, every Application that is not converged there: the root converged
 * with its sync Succeeded at `rev`, every Application of `names` (the root's folder) there, and each one not converged
 * compared at `rev`, not Healthy, and reported by the root as gone ahead of (its health check's message after
 * gitops.waveWait, applications.ts wentAheadOf). The root does not wait on it again for this commit: the verdict is in.
 * One that is only behind in its sync, or that turned unhealthy after the root passed its wave Healthy (an operator that
 * reacts late) and has not yet waited the bound, is not: it may still converge.
 */
export function rootWentPast(rev: string | RevisionOf, rootName: string, names: readonly string[], states: readonly ApplicationState[]): boolean {
  const at = revisionOf(rev);
  const root = states.find((x) => x.name === rootName);
  if (!root || root.phase !== 'Succeeded' || root.operationRevision !== at(root) || !convergedAt(at)(root)) return false;
  if (!names.every((n) => states.some((x) => x.name === n))) return false;
  const behind = states.filter((x) => !settledAt(at, root)(x));
  return behind.length > 0 && behind.every((x) => x.health !== 'Healthy' && x.revision === at(x) && root.wentAheadOf.includes(x.name));
}

/**
 * The states of the Applications `names`, as Argo CD sees them now: a refresh of each asked for (the webhook's
 * annotation, twin-cluster.ts refresh) and each read again until the annotation is gone, within what --timeout leaves
 * (`deadline`) and at most REFRESH_MS; by name, those refreshed in time (not one whose refresh could not be asked
 * for). Argo CD re-reads an Application when one of
 * its resources changes, but not on a change of a resource's status that keeps its health status (Argo CD's default
 * `resource.customizations.ignoreResourceUpdates.all: /status`; controller/cache/cache.go `skipResourceUpdate`): a
 * ClusterPolicy that turns "ready" without GPU nodes stays Progressing, so its Application's message would be the one
 * before the operator wrote its status, until its next periodic comparison (timeout.reconciliation, minutes).
 */
export async function refreshedStates(c: {
  readonly client: Pick<KubeClient, 'get'>;
  readonly namespace: string;
  readonly names: readonly string[];
  readonly refresh: (application: string) => Promise<void>;
  /** When --timeout ends (ms since the epoch). */
  readonly deadline: number;
}): Promise<Map<string, ApplicationState>> {
  const fresh = new Map<string, ApplicationState>();
  const bound = Math.min(REFRESH_MS, c.deadline - Date.now());
  if (c.names.length === 0 || bound <= 0) return fresh;
  // an Application whose refresh was not asked for (the patch failed) carries no annotation to wait for: it is not
  // read as refreshed, and the caller keeps the state it had
  const asked = (await Promise.all(c.names.map((n) => c.refresh(n).then(() => n, () => undefined)))).filter((n): n is string => n !== undefined);
  if (asked.length === 0) return fresh;
  // the annotation our patch set is gone only once Argo CD's controller has done the refresh: it removes it with the
  // status it writes, so the Application read then is the refreshed one (the watch may deliver it a moment later)
  await poll(async () => {
    for (const n of asked.filter((x) => !fresh.has(x))) {
      const app = await c.client.get(applicationsPath(c.namespace, n)).catch(() => undefined);
      const annotations = (app?.metadata.annotations ?? {}) as Record<string, unknown>;
      if (app && annotations[REFRESH_ANNOTATION] === undefined) fresh.set(n, applicationState(app));
    }
    return fresh.size === asked.length;
  }, (ok) => ok, bound, 500);
  return fresh;
}

/**
 * What the twin's operator stand-ins did, for the report of a rehearsal that did not converge (the status a stand-in
 * did not write is why a wave waits): the last state each wrote of each resource, and the passes that failed, with
 * times since `since` (the root's apply).
 */
export function standInLines(standIns: Pick<OperatorStandIns, 'writes' | 'failedPasses' | 'errors' | 'lastError'>, since: number): string[] {
  const out: string[] = [];
  const lastWrites = new Map(standIns.writes.map((w) => [`${w.kind} ${w.name}`, w]));
  if (lastWrites.size > 0) {
    out.push(`rehearse: the twin's operator stand-ins last wrote: ${[...lastWrites].map(([k, w]) => `${k} ${w.state} at ${seconds(w.at - since)}`).join(', ')} (after the root's apply)`);
  }
  if (standIns.failedPasses > 0) {
    const last = standIns.errors[standIns.errors.length - 1];
    out.push(`rehearse: the twin's operator stand-ins: ${standIns.failedPasses} pass(es) failed${standIns.lastError !== undefined ? ', failing still' : ', then one succeeded'}; the last at ${last ? seconds(last.at - since) : '?'} after the root's apply: ${last?.message ?? standIns.lastError}`);
  }
  return out;
}

/** Runs one rehearsal; answers its exit code (0: every Application converged, 1: not). */
export async function rehearse(opts: RehearsalOptions): Promise<number> {
  const t0 = Date.now();
  const deadline = t0 + opts.timeoutMs;
  // a scratch folder of this process: what a run killed with SIGKILL leaves (its children die with it: the kernel's
  // parent-death signal, control-plane.ts) is removed by the next rehearsal (files.ts scratchFolder)
  const scratch = scratchFolder('gpu-cluster-manifests-rehearse');
  const tmpBefore = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  let twin: TwinCluster | undefined;
  let podWatch: PodWatch | undefined;
  let jobWatch: JobWatch | undefined;
  let step = 'starting';
  /** The --from commit's bootstrap converged: what fails from here fails the change's rehearsal. */
  let changing = false;
  // once out of time, the twin's start stops at its next step (its progress callback throws: its clean-up runs)
  let outOfTime = false;
  const progress = (line: string) => {
    if (!opts.quiet && !opts.terminal) opts.err(`rehearse: ${seconds(Date.now() - t0)}: ${line}`);
  };
  const say = (line: string) => {
    step = line;
    if (opts.terminal && !opts.quiet) opts.terminal(`\r\x1b[Krehearse: ${line} (${seconds(Date.now() - t0)})`);
    progress(line);
  };
  const removeScratch = () => {
    for (let i = 0; i < 5; i++) {
      try {
        rmSync(scratch, { recursive: true, force: true });
        return;
      } catch {
        // a process killed a moment ago may still be writing: again
      }
    }
  };
  // however this process ends: its children killed, the scratch folder removed
  const onExit = () => {
    killLaunched();
    removeScratch();
  };
  process.on('exit', onExit);
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    opts.err(`rehearse: ${signal}: stopping the twin`);
    const code = signal === 'SIGINT' ? 130 : 143;
    const stop = twin ? twin.stop().catch(() => {}) : Promise.resolve();
    // a stop that hangs does not hold the exit: the exit handler kills what is left
    void Promise.race([stop, sleep(10_000)]).finally(() => process.exit(code));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  /**
   * `work` within the time left, else OutOfTime naming `what`: then what was launched is killed, which ends the work's
   * own steps (its clean-up runs), and the work is waited for, so that nothing it starts outlives the rehearsal.
   */
  const bounded = async <T>(what: string, work: Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const out = new Promise<'out'>((resolve) => {
      timer = setTimeout(() => resolve('out'), Math.max(0, deadline - Date.now()));
    });
    try {
      const first = await Promise.race([work.then((v) => ({ v })), out]);
      if (first !== 'out') return first.v;
    } finally {
      clearTimeout(timer);
    }
    outOfTime = true;
    killLaunched();
    await work.then((v) => (v instanceof TwinCluster ? v.stop() : undefined), () => {});
    throw new OutOfTime(what);
  };

  try {
    // change mode: the twin starts from the description at the commit (a file of the scratch folder)
    let first = opts.description;
    if (opts.from) {
      mkdirSync(path.join(scratch, 'from'));
      first = path.join(scratch, 'from', path.basename(opts.description));
      writeFileSync(first, opts.from.text);
    }
    twin = await bounded('starting the twin', startTwinCluster({
      description: asYamlDescription(first, path.join(scratch, 'evaluated')),
      nodes: opts.nodes,
      progress: (line) => {
        if (outOfTime) throw new OutOfTime('starting the twin');
        say(line);
      },
    }));
    const pushed = await twin.push(opts.from ? `rehearse: the render at ${opts.from.label} (${opts.from.commit.slice(0, 12)})` : 'rehearse: the render of the working tree');
    say('running the bootstrap of the cluster\'s README');
    await bounded('running the bootstrap', twin.bootstrap());
    const rootAt = twin.rootAppliedAt ?? Date.now();
    // the revision each Application is to be at once a commit is synced: the commit, or a managed install's own release
    const clusterRepo = String(twin.description.gitops?.repoURL ?? '');
    const at = (commit: string) => atCommit(commit, clusterRepo);
    const expected = expectedApplications(twin);
    /**
     * What a watch ended on: the last states; whether every Application the root's folder lists was Synced and Healthy
     * at the revision and the root's sync Succeeded (done); or whether the root's sync succeeded past one that is not
     * Healthy (passedOver: it waited gitops.waveWait on it).
     */
    interface Watched { readonly states: ApplicationState[]; readonly done: boolean; readonly passedOver: boolean }
    /**
     * Watches until every Application is Synced and Healthy at `rev`, the root's sync succeeded past one that is not, or
     * the time is up, drawing the display.
     */
    const watchUntil = async (rev: string, since: number): Promise<Watched> => {
      // the work tree does not change while it is watched: the root's folder is read once
      const names = expectedApplications(twin!);
      const listed = (states: readonly ApplicationState[]) => names.every((n) => states.some((x) => x.name === n));
      const settled = () => settledAt(at(rev), twin!.watch.state(twin!.name));
      const done = (states: readonly ApplicationState[]) => listed(states) && states.every(settled())
        && twin!.watch.state(twin!.name)?.phase === 'Succeeded' && twin!.watch.state(twin!.name)?.operationRevision === rev;
      const shown = new Map<string, string>();
      let drawn = 0;
      let states: ApplicationState[] = [];
      let settledSince: number | undefined;
      for (;;) {
        states = twin!.watch.states();
        if (states.length > 0 && done(states)) return finish({ states, done: true, passedOver: false });
        // the root's sync succeeded at `rev` past what is still not Healthy at `rev`, each reported gone ahead of after
        // gitops.waveWait: the verdict is in whatever --timeout leaves (held for a while: the watch reads each Application
        // a moment apart)
        if (rootWentPast(at(rev), twin!.name, names, states)) {
          settledSince ??= Date.now();
          if (Date.now() - settledSince >= ROOT_SETTLED_MS) return finish({ states, done: false, passedOver: true });
        } else {
          settledSince = undefined;
        }
        // a managed Kueue or MPI Operator starts once Argo CD has synced its install: its failure to start ends the watch
        // with its reason (Kueue's install would stay Progressing on its visibility APIServices until --timeout, saying
        // nothing of why; without the MPI Operator no MPIJob would get a pod)
        if (twin!.managedStartFailure !== undefined) throw new Error(twin!.managedStartFailure);
        if (Date.now() > deadline) return finish({ states, done: false, passedOver: false });
        if (opts.terminal) {
          const width = Math.max(0, ...states.map((s) => s.name.length));
          const ok = states.filter(settled()).length;
          const lines = [`rehearse: ${twin!.name}: ${ok}/${expected.length} Applications Synced and Healthy at ${rev.slice(0, 7)} (${seconds(Date.now() - since)}, time left ${seconds(Math.max(0, deadline - Date.now()))})`,
            ...states.map((s) => displayLine(s, width))];
          opts.terminal(`${drawn > 0 ? `\x1b[${drawn}A` : '\r'}\x1b[J${lines.join('\n')}\n`);
          drawn = lines.length;
        } else if (!opts.quiet) {
          for (const s of states) {
            const text = opts.verbose ? describeState(s) : `${s.name} (wave ${s.wave}): ${s.sync || 'not compared'}, ${s.health || 'no health'}${s.revision && s.revision !== at(rev)(s) ? ` at ${shortRevision(s.revision)}` : ''}`;
            if (shown.get(s.name) === text) continue;
            shown.set(s.name, text);
            progress(text);
          }
        }
        await sleep(1000);
      }
      function finish(w: Watched): Watched {
        if (opts.terminal) opts.terminal(`${drawn > 0 ? `\x1b[${drawn}A` : '\r'}\x1b[J`);
        return w;
      }
    };

    /** What a converged watch says of the Applications held on purpose (Suspended, the root going ahead of them). */
    const held = ({ states }: Watched): string => {
      const names = states.filter((x) => x.health === 'Suspended').map((x) => x.name);
      return names.length > 0 ? ` (or Suspended, held on purpose as the description says: ${names.join(', ')})` : '';
    };

    /** The states of the Applications not converged at `rev`, as Argo CD sees them now (refreshedStates). */
    const refreshed = async (states: ApplicationState[], rev: string): Promise<ApplicationState[]> => {
      const converged = settledAt(at(rev), twin!.watch.state(twin!.name));
      const stuck = states.filter((x) => !converged(x)).map((x) => x.name);
      if (stuck.length === 0) return states;
      const fresh = await refreshedStates({
        client: twin!.cp.client(), namespace: twin!.model.description.gitops.namespace, names: stuck, refresh: (n) => twin!.refresh(n), deadline,
      });
      return twin!.watch.states().map((x) => fresh.get(x.name) ?? x);
    };

    /** Exit 1: each Application not converged at `rev`, with what it waits on (as Argo CD sees it now). */
    const notConverged = async (watched: Watched, rev: string, what: string): Promise<number> => {
      const { passedOver } = watched;
      const states = await refreshed(watched.states, rev);
      const root = twin!.watch.state(twin!.name);
      const converged = settledAt(at(rev), root);
      const names = expectedApplications(twin!);
      const missing = names.filter((n) => !states.some((s) => s.name === n));
      for (const s of states.filter((x) => !converged(x))) opts.err(`rehearse: not converged: ${describeState(s)}`);
      for (const n of missing) opts.err(`rehearse: not converged: ${n}: never created (the root's sync did not reach it)`);
      if (states.every(converged) && missing.length === 0 && root) opts.err(`rehearse: not converged: ${twin!.name}: its sync is ${root.phase || 'not started'}${root.operationRevision && root.operationRevision !== rev ? ` at ${root.operationRevision.slice(0, 7)}` : ''}`);
      for (const line of standInLines(twin!.standIns, rootAt)) opts.err(line);
      if (passedOver) {
        opts.err(`rehearse: ${twin!.name}: ${what}: the root's sync succeeded past each Application above: not Healthy within gitops.waveWait (${twin!.model.description.gitops.waveWait}), the longest its waves wait`);
      } else {
        opts.err(`rehearse: ${twin!.name}: ${what}: not every Application Synced and Healthy within ${seconds(opts.timeoutMs)} (--timeout)`);
      }
      return 1;
    };

    say(`every Application of ${twin.name} syncing (${expected.length}: the root and ${expected.length - 1} it lists)`);
    const bootstrapped = await watchUntil(pushed, rootAt);
    const bootstrapHead = opts.from ? `${twin.name}: the bootstrap of ${opts.from.label} (${opts.from.commit.slice(0, 12)}) on the twin` : `${twin.name}: the bootstrap on the twin`;
    if (!opts.quiet) opts.out(`${bootstrapHead}, from the root's apply (Argo CD ${twin.twin.binary.versions['github.com/argoproj/argo-cd/v3'] ?? ''})`);
    if (!opts.quiet) opts.out(formatTimeline(twin.watch.timeline(rootAt, at(pushed))));
    if (!bootstrapped.done) {
      if (opts.verbose) opts.out(`CPU seconds: ${cpuLine(twin)}`);
      return await notConverged(bootstrapped, pushed, opts.from ? `the bootstrap of ${opts.from.label}, before the change` : 'the bootstrap');
    }
    if (!opts.quiet) opts.out(`${twin.name}: every Application (${expected.length}) Synced and Healthy${held(bootstrapped)} ${seconds(Date.now() - rootAt)} after the root's apply (${seconds(Date.now() - t0)} in all)`);
    if (!opts.from) {
      if (opts.verbose) opts.out(`CPU seconds: ${cpuLine(twin)}`);
      return 0;
    }

    // change mode: the working tree's render pushed as the next commit, its effect read between the two converged states
    changing = true;
    const client = twin.cp.client();
    const namespace = twin.model.description.gitops.namespace;
    // the samples Kueue queues, submitted as a user would and each decided by Kueue (admitted, or pending with its
    // reason) before the push: what the change does to queued and admitted work
    const jobs: KubeObject[] = [];
    const notSubmitted: string[] = [];
    for (const job of queuedSamples(twin.clusterDir)) {
      try {
        await client.apply(job, { fieldManager: 'gpu-cluster-manifests-rehearse' });
        jobs.push(job);
      } catch (e) {
        notSubmitted.push(`${describeObject(job)}: not submitted: ${(e as Error).message.split('\n')[0]}`);
      }
    }
    // every pod and the jobs' Workloads from here on, watched: Kueue's decision on each job before the push, and after
    // it each state Kueue gives a job while the change converges; a pod that a roll starts and replaces a moment later
    // is counted too
    podWatch = new PodWatch(client).start();
    jobWatch = jobs.length > 0 ? new JobWatch(client, jobs).start() : undefined;
    const listed = () => podWatch!.synced && (jobWatch?.synced ?? true);
    if (!await bounded('listing the pods and the jobs', poll(async () => listed(), (ok) => ok, WATCHES_LISTED_MS, 100))) {
      throw new Error(`the pods and the sample jobs were not listed within ${seconds(WATCHES_LISTED_MS)}: ${podWatch.lastError ?? jobWatch?.lastError ?? 'no answer'}`);
    }
    // the jobs Kueue did not decide within the bound: said in the report, not taken for a state Kueue reported
    let undecided: string[] = [];
    if (jobWatch) {
      say(`${jobs.length} sample job(s) submitted to Kueue: waiting until it has decided each`);
      undecided = await undecidedJobs(jobWatch, JOBS_DECIDED_MS, deadline - Date.now());
      if (Date.now() >= deadline) throw new OutOfTime('waiting for Kueue to decide the sample jobs');
    }
    const appsBefore = await client.list(applicationsPath(namespace));
    const renderedBefore = renderedFiles(twin.clusterDir);
    say('rendering the working tree\'s description');
    const next = readRawDescription(opts.description).raw as Record<string, any>;
    twin.render((d) => {
      const pointed = onTheTwin(next, d);
      for (const k of Object.keys(d)) delete d[k];
      Object.assign(d, pointed);
    });
    const renderedAfter = renderedFiles(twin.clusterDir);
    const changedFiles = [...new Set([...renderedBefore.keys(), ...renderedAfter.keys()])]
      .filter((f) => renderedBefore.get(f) !== renderedAfter.get(f));
    podWatch.mark();
    jobWatch?.mark();
    // each job's state at the push, as the watch has it
    const jobsBefore = jobWatch?.now() ?? new Map<string, WorkloadState>();
    const changeAt = Date.now();
    const head = await twin.push('rehearse: the render of the working tree');
    say(`the working tree's render pushed as ${head.slice(0, 12)} (${changedFiles.length} rendered file(s) changed): every Application syncing`);
    const changed = await watchUntil(head, changeAt);
    const jobsAfter = await readJobs(client, jobs);
    const jobsSeen = jobWatch?.seen() ?? new Map<string, WorkloadState[]>();
    const jobGaps = jobWatch?.gaps();
    await jobWatch?.stop();
    // each state after the one before it that differs (the watch's first is the one at the push)
    const between = (before: WorkloadState, seen: readonly WorkloadState[]) => seen
      .filter((s, i) => JSON.stringify(s) !== JSON.stringify(i === 0 ? before : seen[i - 1]));
    const histories: JobHistory[] = [...jobsBefore]
      .map(([job, before]) => ({ job, before, seen: between(before, jobsSeen.get(job) ?? []), after: jobsAfter.get(job)! }));
    // the pods as they are now, read once: what the watch may not have delivered yet is taken in
    const podsNow = await client.list('/api/v1/pods');
    podWatch.record(podsNow);
    const podsAfter = podsOf(podsNow);
    const gaps = podWatch.gaps();
    await podWatch.stop();
    const submitted = new Set(jobs.map(describeObject));
    // the Jobs their controllers made for them (the MPI Operator's launcher Job of an MPIJob): their pods are the jobs' too
    for (const j of await client.list('/apis/batch/v1/jobs')) {
      const refs = (j.metadata.ownerReferences ?? []) as { kind: string; name: string }[];
      if (refs.some((r) => submitted.has(`${r.kind} ${j.metadata.namespace}/${r.name}`))) submitted.add(describeObject(j));
    }
    const withoutJobs = (pods: Map<string, PodRecord>) => new Map([...pods].filter(([, p]) => !submitted.has(p.owner)));
    const appsAfter = await client.list(applicationsPath(namespace));
    const stillThere = await stillInCluster(client, goneResources(appsBefore, appsAfter));
    const report = changeReport({
      apps: { before: appsBefore, after: appsAfter },
      stillThere,
      clusterPath: path.relative(twin.workTree, twin.clusterDir),
      changedFiles,
      // the pods of the jobs rehearse submitted are the jobs line's (their controllers start them around the push)
      pods: { before: withoutJobs(podWatch.before()), seen: withoutJobs(podWatch.seen()), after: withoutJobs(podsAfter) },
      nodeRole: new Map(twin.nodes.map((n) => [n.node.metadata.name, n.kind.role])),
      timeline: twin.watch.timeline(changeAt, at(head)),
    });
    // the jobs after the pods (a DaemonSet roll on the GPU workers stays the first line)
    const podLines = report.filter((l) => l.startsWith('pods: '));
    report.splice(podLines.length, 0, ...jobsReport(histories, opts.verbose ?? false, notSubmitted, undecided));
    for (const g of [gaps, jobGaps]) if (g) opts.err(`rehearse: warning: ${g}`);
    if (!opts.quiet) {
      opts.out(`${twin.name}: the change from ${opts.from.label} (${opts.from.commit.slice(0, 12)}) to the working tree, pushed as ${head.slice(0, 12)}`);
      for (const l of report) opts.out(l);
      opts.out(formatTimeline(twin.watch.timeline(changeAt, at(head))));
    }
    if (opts.verbose) opts.out(`CPU seconds: ${cpuLine(twin)}`);
    if (!changed.done) return await notConverged(changed, head, 'the change');
    if (!opts.quiet) opts.out(`${twin.name}: the change converged: every Application (${expectedApplications(twin).length}) Synced and Healthy${held(changed)} at ${head.slice(0, 12)} ${seconds(Date.now() - changeAt)} after the push (${seconds(Date.now() - t0)} in all)`);
    return 0;
  } catch (e) {
    if (e instanceof OutOfTime) {
      opts.err(`rehearse: out of time (--timeout ${seconds(opts.timeoutMs)}) while ${e.message} (at: ${step})`);
      return 1;
    }
    // a description that does not load is bad input (exit 2, one line, as synth says it); a render that fails its schemas
    // is synth's exit 1 (the twin renders without them today); anything else of the twin is one line
    if (e instanceof InputError || e instanceof ValidationFailed) throw e;
    // command.ts checked the descriptions' own renders before the twin (bad input, exit 2); the twin's render, its sources
    // pointed at the twin's loopback Git and chart servers, is the twin's: a finding there is the rehearsal's failure
    if (e instanceof CheckFailed) {
      for (const line of e.lines()) opts.err(line);
      opts.err(`rehearse: the twin did not start (at: ${step}): the twin's render (its sources pointed at the twin's own Git and chart servers) fails `
        + `the cross-object checks that the description's render passes (${e.message})`);
      return 1;
    }
    opts.err(`rehearse: the twin did not ${!twin ? 'start' : changing ? 'rehearse the change (its bootstrap at --from converged)' : 'run the bootstrap'} (at: ${step}): `
      + `${(e as Error).message.split('\n')[0]}`);
    return 1;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    if (!stopping) {
      await podWatch?.stop();
      await jobWatch?.stop();
      await twin?.stop().catch(() => {});
      killLaunched();
      removeScratch();
      process.removeListener('exit', onExit);
      if (tmpBefore === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpBefore;
    }
  }
}

/**
 * The working tree's description as the twin renders it: `next` pointed where the twin's description `twin` points, at
 * the twin's loopback Git repository (gitops.repoURL), its GitHub mirror (mirrors.git) and its managed installs' chart
 * mirror (mirrors.charts): without the last, a managed install's source would be the upstream registry again, which the
 * twin never reaches (a ComparisonError after the push).
 */
export function onTheTwin(next: Record<string, any>, twin: Record<string, any>): Record<string, any> {
  const mirrors = {
    ...next.mirrors,
    git: { ...next.mirrors?.git, ...twin.mirrors?.git },
    ...(twin.mirrors?.charts ? { charts: { ...next.mirrors?.charts, ...twin.mirrors.charts } } : {}),
  };
  return { ...next, gitops: { ...next.gitops, repoURL: twin.gitops.repoURL }, mirrors };
}

/**
 * The description as the twin reads it (YAML): a YAML or JSON file as it is, a TypeScript description's evaluated
 * default export written as YAML into `dir` (the twin renders and edits the value, as synth renders it).
 */
export function asYamlDescription(file: string, dir: string): string {
  if (path.extname(file).toLowerCase() !== '.ts') return file;
  const out = path.join(dir, `${path.basename(file, path.extname(file))}.yaml`);
  mkdirSync(dir, { recursive: true });
  // the value's shared objects written out in full: aliases would count against the description reader's limit
  writeFileSync(out, toYaml(readRawDescription(file).raw));
  return out;
}
