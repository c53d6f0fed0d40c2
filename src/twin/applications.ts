import { KubeObject } from './kube-client';
import { ListWatch, ListWatchClient } from './list-watch';
import { sleep } from './poll';
import { HELD_ON_PURPOSE, WAVES_GO_AHEAD } from '../components/argocd/health-checks';

/** The API path of the Applications of a namespace (Argo CD's namespace: gitops.namespace), or of one of them. */
export function applicationsPath(namespace: string, name?: string): string {
  return `/apis/argoproj.io/v1alpha1/namespaces/${encodeURIComponent(namespace)}/applications${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/** The annotation that asks Argo CD to compare an Application again (the webhook's, `argocd app get --refresh`'s). */
export const REFRESH_ANNOTATION = 'argocd.argoproj.io/refresh';

/**
 * The Applications of a twin as Argo CD reports them, watched (a list, then the API server's watch stream: each change
 * as it is made, kube-client.ts `watch`): each one's sync and health status, the
 * revision it synced, its operation, and when each first became Synced and Healthy at a revision (the timeline of a
 * bootstrap or of a pushed commit). What a test waits on and asserts; what `rehearse` (issue 51) will display.
 *
 * Imports no test framework.
 */

type Json = Record<string, any>;

/** One Application as Argo CD reports it. */
export interface ApplicationState {
  readonly name: string;
  /** Its sync wave (argocd.argoproj.io/sync-wave; 0 when unset). */
  readonly wave: number;
  /** The revision it asks for (spec.source.targetRevision). */
  readonly targetRevision: string;
  /** The repository of its (first) source (spec.source.repoURL). */
  readonly repoURL: string;
  /** status.sync.status: Synced, OutOfSync, Unknown. */
  readonly sync: string;
  /** The revision it compared last (status.sync.revision). */
  readonly revision: string;
  /** status.health.status: Healthy, Progressing, Degraded, Missing, Suspended, Unknown. */
  readonly health: string;
  readonly healthMessage: string;
  /** status.operationState.phase: Running, Succeeded, Failed, Error, Terminating; '' when none ran yet. */
  readonly phase: string;
  readonly operationMessage: string;
  /** The revision the last operation synced. */
  readonly operationRevision: string;
  /** The conditions Argo CD reports (ComparisonError, SyncError, ...), `type: message`. */
  readonly conditions: readonly string[];
  /** Resources of the Application that are not Healthy or not Synced: `Kind namespace/name: health (message)`. */
  readonly waitingOn: readonly string[];
  /**
   * The child Applications this one (an app-of-apps: the root) reports gone ahead of: Healthy in its status.resources
   * with the toolkit's Application health check's message of a child it no longer waits on (WAVES_GO_AHEAD).
   */
  readonly wentAheadOf: readonly string[];
  /** Of those, the ones it reports held on purpose (Suspended: HELD_ON_PURPOSE): settled, not stuck. */
  readonly heldOnPurpose: readonly string[];
}

/** When an Application first reached a state at a revision, in ms since the watch's `since`. */
export interface TimelineEntry {
  readonly application: string;
  readonly wave: number;
  readonly syncedAt?: number;
  readonly healthyAt?: number;
}

/** Reads one Application into its state. */
export function applicationState(app: KubeObject): ApplicationState {
  const spec = (app.spec ?? {}) as Json;
  const status = (app.status ?? {}) as Json;
  const op = (status.operationState ?? {}) as Json;
  const waitingOn = ((status.resources ?? []) as Json[])
    .filter((r) => (r.health?.status !== undefined && r.health.status !== 'Healthy') || r.status === 'OutOfSync')
    .map((r) => `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${r.status ?? '?'}${r.health?.status ? `, ${r.health.status}` : ''}${r.health?.message ? ` (${r.health.message})` : ''}`);
  return {
    name: app.metadata.name,
    wave: Number(((app.metadata.annotations ?? {}) as Json)['argocd.argoproj.io/sync-wave'] ?? 0),
    targetRevision: String(spec.source?.targetRevision ?? spec.sources?.[0]?.targetRevision ?? ''),
    repoURL: String(spec.source?.repoURL ?? spec.sources?.[0]?.repoURL ?? ''),
    sync: String(status.sync?.status ?? ''),
    revision: String(status.sync?.revision ?? ''),
    health: String(status.health?.status ?? ''),
    healthMessage: String(status.health?.message ?? ''),
    phase: String(op.phase ?? ''),
    operationMessage: String(op.message ?? ''),
    operationRevision: String(op.syncResult?.revision ?? op.operation?.sync?.revision ?? ''),
    conditions: ((status.conditions ?? []) as Json[]).map((c) => `${c.type}: ${c.message}`),
    waitingOn,
    wentAheadOf: childrenSaid(status, WAVES_GO_AHEAD),
    heldOnPurpose: childrenSaid(status, HELD_ON_PURPOSE),
  };
}

/** The child Applications an app-of-apps reports Healthy with the health check's message ending in `ending`. */
function childrenSaid(status: Json, ending: string): string[] {
  return ((status.resources ?? []) as Json[])
    .filter((r) => r.kind === 'Application' && r.health?.status === 'Healthy' && String(r.health?.message ?? '').endsWith(ending))
    .map((r) => String(r.name));
}

/**
 * A revision as people read it: a Git commit's first 7 hex digits, an OCI artifact's digest as `sha256:` and its first
 * 7, anything else (a Helm chart's version) whole.
 */
export function shortRevision(revision: string): string {
  if (/^[0-9a-f]{40}$/.test(revision)) return revision.slice(0, 7);
  const digest = /^(sha256:)([0-9a-f]{64})$/.exec(revision);
  return digest ? `${digest[1]}${digest[2].slice(0, 7)}` : revision;
}

/** A state as one line: `name (wave w): Synced at abc1234, Healthy; operation Succeeded`. */
export function describeState(s: ApplicationState): string {
  const rev = s.revision ? ` at ${shortRevision(s.revision)}` : '';
  const op = s.phase ? `; operation ${s.phase}${s.operationMessage ? ` (${s.operationMessage})` : ''}` : '';
  const health = `${s.health || 'no health'}${s.healthMessage ? ` (${s.healthMessage})` : ''}`;
  const conditions = s.conditions.length > 0 ? `; ${s.conditions.join('; ')}` : '';
  const waiting = s.waitingOn.length > 0 ? `; waiting on ${s.waitingOn.slice(0, 5).join('; ')}${s.waitingOn.length > 5 ? ` and ${s.waitingOn.length - 5} more` : ''}` : '';
  return `${s.name} (wave ${s.wave}): ${s.sync || 'not compared'}${rev}, ${health}${op}${conditions}${waiting}`;
}

/**
 * Every Application of a namespace, watched, with the first time each was Synced and Healthy at each revision (the
 * moment its change arrived, where reading every second saw it up to a second late).
 */
export class ApplicationWatch {
  private readonly latest = new Map<string, ApplicationState>();
  /** `application@revision` -> first Synced, first Healthy (ms since epoch). */
  private readonly reached = new Map<string, { synced?: number; healthy?: number }>();
  private watch?: ListWatch;
  /** The last list's or watch's error, while they fail. */
  get lastError(): string | undefined {
    return this.watch?.lastError;
  }

  /** `intervalMs`: how often waitFor looks at the states (in memory: no request). */
  constructor(private readonly client: ListWatchClient, readonly namespace = 'argocd', private readonly intervalMs = 1000) {}

  start(): this {
    if (this.watch) return this;
    this.watch = new ListWatch(this.client, applicationsPath(this.namespace), (type, o) => {
      if (type === 'SYNC' || !o) this.seen([...this.watch!.objects.values()], true);
      else if (type === 'DELETED') this.latest.delete(o.metadata.name);
      else this.seen([o], false);
    }).start();
    return this;
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }

  /** Takes in Applications as read: every one of the namespace (`all`: the ones not among them are gone), or one changed. */
  private seen(apps: readonly KubeObject[], all: boolean): void {
    const now = Date.now();
    const names = new Set<string>();
    for (const a of apps) {
      const s = applicationState(a);
      names.add(s.name);
      this.latest.set(s.name, s);
      if (!s.revision) continue;
      const key = `${s.name}@${s.revision}`;
      const r = this.reached.get(key) ?? {};
      if (r.synced === undefined && s.sync === 'Synced') r.synced = now;
      if (r.healthy === undefined && s.sync === 'Synced' && s.health === 'Healthy') r.healthy = now;
      this.reached.set(key, r);
    }
    if (all) for (const name of [...this.latest.keys()]) if (!names.has(name)) this.latest.delete(name);
  }

  /** The latest state of every Application, by name. */
  states(): ApplicationState[] {
    return [...this.latest.values()].sort((a, b) => a.wave - b.wave || a.name.localeCompare(b.name));
  }

  state(name: string): ApplicationState | undefined {
    return this.latest.get(name);
  }

  /**
   * When each Application first was Synced, and Synced and Healthy, at the revision `revisionOf` names for it (the
   * root: the pushed commit; a child: the commit the root pinned it to), in ms since `since`.
   */
  timeline(since: number, revisionOf: (s: ApplicationState) => string): TimelineEntry[] {
    return this.states().map((s) => {
      const r = this.reached.get(`${s.name}@${revisionOf(s)}`) ?? {};
      // reached before `since`: not this timeline's (a managed install at its own release, untouched by a change)
      const after = (t?: number) => (t === undefined || t < since ? undefined : t - since);
      return { application: s.name, wave: s.wave, syncedAt: after(r.synced), healthyAt: after(r.healthy) };
    });
  }

  /**
   * Waits until `done` holds for the states (looked at every interval) or `timeoutMs` passes; answers the last states and
   * whether it held.
   */
  async waitFor(done: (states: ApplicationState[]) => boolean, timeoutMs: number): Promise<{ ok: boolean; states: ApplicationState[] }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const states = this.states();
      if (states.length > 0 && done(states)) return { ok: true, states };
      if (Date.now() > deadline) return { ok: false, states };
      await sleep(this.intervalMs);
    }
  }
}

/** A timeline as a table: Application, wave, Synced at, Healthy at (seconds). */
export function formatTimeline(entries: readonly TimelineEntry[]): string {
  const s = (ms?: number) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
  const rows = [...entries]
    .sort((a, b) => a.wave - b.wave || (a.healthyAt ?? Infinity) - (b.healthyAt ?? Infinity) || a.application.localeCompare(b.application))
    .map((e) => [e.application, String(e.wave), s(e.syncedAt), s(e.healthyAt)]);
  const header = ['Application', 'wave', 'Synced at', 'Healthy at'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n');
}
