import {
  ARGOCD_FIELD_MANAGER, crdKey, placeObjects, SyncObject, syncSources, SyncStep, syncSteps,
} from '../check/argocd-sync';
import { ClusterView } from '../check/cluster-view';
import { InputError, printable } from '../errors';
import { isJsonObject, jsonDifferences } from '../json';
import { skipsDryRunOnMissing } from '../model/names';
import { LiveSession } from '../preflight/live';
import { pathSegment } from '../preflight/reads';
import { apiGroup, describeObject, Manifest } from '../render/manifest';
import { RenderedSource } from '../upstream/render';

/*
 * verify: every object of a rendered cluster sent to the live API server as Argo CD sends it (server-side apply,
 * field manager argocd-controller, conflicts forced, strict field validation), but as a dry run (dryRun=All: every
 * admission and validation step, nothing persisted), in Argo CD's order (src/check/argocd-sync.ts). A dry run keeps
 * nothing, so an object whose CRD or namespace an earlier step of the same rollout brings cannot be checked yet:
 * it is named with the wave that brings it.
 */

/** What a finding is. */
export type VerifyFindingType =
  /** The API server refuses the object (schema, CEL rule, immutable field, admission policy or webhook). */
  | 'refused'
  /** Its kind is not served and nothing of the render brings its CRD. */
  | 'kind-not-served'
  /** Its CRD comes with the render, in a step Argo CD syncs after the object's own: that sync fails until then. */
  | 'crd-after-object'
  /** Its CRD comes with the render, before it: not checkable by a dry run until that step has synced. */
  | 'crd-pending'
  /** Its namespace comes with the render, before it (a Namespace object, or CreateNamespace=true). */
  | 'namespace-pending'
  /** It exists and the sync would change it: the fields that differ. */
  | 'drift';

export interface VerifyFinding {
  readonly severity: 'error' | 'info';
  readonly type: VerifyFindingType;
  /** The Application that applies it. */
  readonly application: string;
  /** The Application's sync wave; null for the bootstrap (kubectl apply of the argocd and gitops folders). */
  readonly wave: number | null;
  readonly apiVersion: string;
  /** `Kind namespace/name`. */
  readonly object: string;
  readonly message: string;
  /** The HTTP status and reason of a refusal. */
  readonly status?: number;
  readonly reason?: string;
  /** The fields that would change (drift). */
  readonly paths?: readonly string[];
  /** What brings its CRD or namespace, earlier in the sync (crd-pending, namespace-pending): `wave 0 (Application x)`, `the bootstrap (...)`. */
  readonly after?: string;
}

/** What a verification found, and what it did. */
export interface VerifyResult {
  readonly findings: readonly VerifyFinding[];
  readonly counts: {
    /** Objects sent (dry run). */
    readonly checked: number;
    /** Accepted, not compared with a live object (a Secret, which verify never reads; a name the server generates). */
    readonly accepted: number;
    readonly unchanged: number;
    readonly changed: number;
    readonly created: number;
    readonly refused: number;
    /** Waiting for a CRD or namespace of an earlier step. */
    readonly pending: number;
  };
}

/** Objects sent at once. */
const CONCURRENCY = 8;

/** What a kind is served as. */
interface Served {
  readonly plural: string;
  readonly namespaced: boolean;
}

/** Kinds the server serves, by group version, read once each (discovery). */
class Discovery {
  private readonly versions = new Map<string, Promise<Map<string, Served> | undefined>>();

  constructor(private readonly session: LiveSession) {}

  /** `/apis/GROUP/VERSION` or `/api/VERSION`, each segment encoded (an apiVersion of a file may hold anything). */
  private groupVersionPath(apiVersion: string): string {
    const parts = apiVersion.split('/');
    if (parts.length > 2) throw new InputError(`verify: apiVersion ${JSON.stringify(printable(apiVersion))} is no GROUP/VERSION: fix the rendered file`);
    const seg = (value: string, what: string) => pathSegment(value, `the apiVersion's ${what}`);
    return parts.length === 2 ? `/apis/${seg(parts[0], 'group')}/${seg(parts[1], 'version')}` : `/api/${seg(parts[0], 'version')}`;
  }

  /** The resources of a group version; undefined when the server does not serve it. */
  of(apiVersion: string): Promise<Map<string, Served> | undefined> {
    let known = this.versions.get(apiVersion);
    if (!known) {
      known = this.session.get(this.groupVersionPath(apiVersion)).then((body) => {
        if (body === undefined) return undefined;
        const out = new Map<string, Served>();
        const resources = isJsonObject(body) && Array.isArray(body.resources) ? body.resources : [];
        for (const r of resources as { name?: unknown; kind?: unknown; namespaced?: unknown }[]) {
          if (typeof r.name === 'string' && !r.name.includes('/') && typeof r.kind === 'string') out.set(r.kind, { plural: r.name, namespaced: r.namespaced === true });
        }
        return out;
      });
      this.versions.set(apiVersion, known);
    }
    return known;
  }

  async kind(apiVersion: string, kind: string): Promise<Served | undefined> {
    return (await this.of(apiVersion))?.get(kind);
  }

  /** The path of an object (or of its collection), under the served resource. */
  path(o: Manifest, res: Served, collection = false): string {
    const what = `${printable(describeObject(o))}:`;
    const ns = res.namespaced ? `/namespaces/${pathSegment(o.metadata.namespace ?? '', `${what} its namespace`)}` : '';
    const name = collection ? '' : `/${pathSegment(o.metadata.name, `${what} its name`)}`;
    return `${this.groupVersionPath(o.apiVersion)}${ns}/${pathSegment(res.plural, `the server's resource name of ${o.kind}`)}${name}`;
  }
}

/** An object without what the server and its controllers keep up to date: status, resourceVersion, generation, managedFields. */
function comparable(o: Record<string, unknown>): Record<string, unknown> {
  const { status: _status, ...rest } = o;
  const metadata = isJsonObject(o.metadata) ? o.metadata : {};
  const { resourceVersion: _rv, managedFields: _mf, generation: _g, ...kept } = metadata;
  return { ...rest, metadata: kept };
}

/** One object to verify, where it comes in the sync, and the Application that brings it. */
interface Item {
  readonly object: SyncObject;
  readonly step: number;
  readonly bootstrap: boolean;
}

/** Where the render brings something (a CRD, a namespace): the step and its Application. */
interface Provider {
  readonly step: number;
  readonly bootstrap: boolean;
  readonly application: string;
  readonly wave: number;
  /** The bootstrap's command (`kubectl apply -k dist/lab/argocd`): it applies the object, not Argo CD in a wave. */
  readonly command?: string;
}

const identity = (m: Manifest) => `${apiGroup(m.apiVersion)}/${m.kind}/${m.metadata.namespace ?? ''}/${m.metadata.name ?? m.metadata.generateName}`;

/**
 * Each object once, at its first step (the bootstrap's objects come again in their Applications' syncs), in the
 * form Argo CD applies it (with its tracking annotation) when Argo CD applies it at all.
 */
function itemsOf(steps: readonly SyncStep[]): Item[] {
  const argo = new Map<string, SyncObject>();
  steps.forEach((s) => {
    if (!s.bootstrap) for (const o of s.objects) if (!argo.has(identity(o.object))) argo.set(identity(o.object), o);
  });
  const seen = new Set<string>();
  const items: Item[] = [];
  steps.forEach((s, step) => {
    for (const o of s.objects) {
      const id = identity(o.object);
      if (seen.has(id)) continue;
      seen.add(id);
      items.push({ object: argo.get(id) ?? o, step, bootstrap: s.bootstrap });
    }
  });
  return items;
}

/** The first step that brings each CRD (by `group/Kind`) and each namespace, rendered or by an install at run time. */
function providers(
  steps: readonly SyncStep[], sources: readonly RenderedSource[],
): { crds: Map<string, Provider>; namespaces: Map<string, Provider> } {
  const crds = new Map<string, Provider>();
  const namespaces = new Map<string, Provider>();
  steps.forEach((s, step) => {
    const command = s.bootstrap ? bootstrapCommand(s.label) : undefined;
    const at = { step, bootstrap: s.bootstrap, application: s.application, wave: s.wave, command };
    for (const o of s.objects) {
      if (o.object.kind === 'CustomResourceDefinition' && !crds.has(crdKey(o.object))) crds.set(crdKey(o.object), at);
      if (o.object.kind === 'Namespace' && o.object.apiVersion === 'v1' && !namespaces.has(o.object.metadata.name)) namespaces.set(o.object.metadata.name, at);
    }
  });
  // CRDs an install brings that its render does not show (crds/ not vendored, or applied by its operator)
  for (const src of sources) {
    const step = steps.findIndex((s) => !s.bootstrap && s.application === src.application.metadata.name);
    if (step < 0) continue;
    for (const c of src.unrenderedCrds) {
      const key = `${c.group}/${c.kind}`;
      if (!crds.has(key)) crds.set(key, { step, bootstrap: false, application: steps[step].application, wave: steps[step].wave });
    }
  }
  return { crds, namespaces };
}


/**
 * Whether what a provider brings is in place when Argo CD syncs an item: an earlier step of the bootstrap, the
 * same Application (its CRDs and namespaces go first), an Application of an earlier wave, or of the same wave
 * when the item's sync skips the dry run of missing kinds (SkipDryRunOnMissingResource=true).
 */
function inPlaceBefore(p: Provider, item: Item, app: Manifest | undefined): boolean {
  if (p.bootstrap) return p.step < item.step;
  if (item.bootstrap) return false;
  if (p.application === item.object.application) return true;
  return p.wave < item.object.wave || (p.wave === item.object.wave && skipsDryRunOnMissing(item.object.object, app));
}

/** The kubectl command of a bootstrap step's label (`bootstrap: kubectl apply -k folder dist/lab/argocd (on <base>): Namespaces`). */
const bootstrapCommand = (label: string): string => label.replace(/^bootstrap: /, '').replace(/: [^:]*$/, '').replace(' -k folder ', ' -k ').replace(/ \(on [^()]*\)$/, '');

const where = (p: Provider) => (p.bootstrap ? `the bootstrap (${p.command ?? 'kubectl apply'})` : `wave ${p.wave} (Application ${p.application})`);

/** A refusal that is the identity's lack of rights (RBAC), not the object's: bad input naming what verify needs. */
function rightsProblem(session: LiveSession, message: string, status: number, request: string): InputError | undefined {
  if (status === 401) return new InputError(`${session.server}: HTTP 401: the server refuses the credentials of user "${printable(session.user)}": log in again so that ${session.where} holds valid ones`);
  if (status !== 403) return undefined;
  const rbac = /cannot (\w+) resource "([^"]+)"/.exec(message);
  const escalate = /attempting to grant RBAC permissions not currently held|not allowed to (bind|escalate)/.test(message);
  if (!rbac && !escalate) return undefined;
  const need = escalate ? 'escalate and bind on roles and clusterroles (the render grants rights this identity lacks)' : `${rbac![1]} on ${rbac![2]}`;
  return new InputError(`${session.server}: HTTP 403 for ${request}: user "${printable(session.user)}" may not do it (${printable(message.slice(0, 300))}); `
    + `verify needs ${need}: docs/commands.md#verify gives the ClusterRole (a dry run never persists anything)`);
}

/** The first line of a Status message, without control characters. */
function statusOf(body: unknown): { message: string; reason: string; details?: { kind?: string; name?: string } } {
  const s = isJsonObject(body) ? body : {};
  const message = typeof s.message === 'string' ? s.message : typeof body === 'string' ? body.slice(0, 500) : '';
  return { message: printable(message.replace(/\s+/g, ' ').trim()), reason: typeof s.reason === 'string' ? s.reason : '', details: isJsonObject(s.details) ? s.details as { kind?: string; name?: string } : undefined };
}

/** Runs `fn` over `items`, at most `limit` at a time; the first error stops the rest and is thrown. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (!failed && next < items.length) {
      const t = items[next++];
      try {
        await fn(t);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  }));
}

/**
 * Dry-runs a rendered cluster (its view and the renders of its Applications' sources) against a live API server,
 * in Argo CD's order: the refusals, what waits for an earlier wave, and what would change. `progress`: told before
 * each object is sent (how many were, of how many).
 */
export async function verifyCluster(
  view: ClusterView, rendered: readonly RenderedSource[], session: LiveSession, progress?: (done: number, total: number) => void,
): Promise<VerifyResult> {
  const discovery = new Discovery(session);
  const { sources } = syncSources(rendered, view.name);
  // the scope of each kind as the server serves it (a kind it does not serve yet: from the render's CRD, or unknown)
  const apiVersions = [...new Set(sources.flatMap((s) => s.objects.map((o) => o.object.apiVersion)))].sort();
  const served = new Map(await Promise.all(apiVersions.map(async (v) => [v, await discovery.of(v)] as const)));
  placeObjects(sources, (apiVersion, kind) => {
    const res = served.get(apiVersion)?.get(kind);
    return res === undefined ? undefined : res.namespaced ? 'Namespaced' : 'Cluster';
  });
  const steps = syncSteps(view, sources, { tracking: true });
  const items = itemsOf(steps);
  const { crds, namespaces } = providers(steps, rendered);
  const apps = new Map(rendered.map((s) => [s.application.metadata.name, s.application]));

  const results: { item: Item; finding?: VerifyFinding; outcome: 'accepted' | 'unchanged' | 'changed' | 'created' | 'refused' | 'pending' }[] = [];
  let sent = 0;
  await eachLimited(items, CONCURRENCY, async (item) => {
    progress?.(sent++, items.length);
    const o = item.object.object;
    const base = {
      application: item.object.application, wave: item.bootstrap ? null : item.object.wave, apiVersion: o.apiVersion, object: describeObject(o),
    };
    const pending = (type: 'crd-pending' | 'namespace-pending', p: Provider, what: string) => {
      const before = p.bootstrap ? 'which applies it first' : 'which syncs before it';
      results.push({ item, outcome: 'pending', finding: { ...base, severity: 'info', type, after: where(p), message: `not verified yet: ${what} arrives with ${where(p)}, ${before}` } });
    };
    const res = await discovery.kind(o.apiVersion, o.kind);
    if (!res) {
      const key = `${apiGroup(o.apiVersion)}/${o.kind}`;
      const p = crds.get(key);
      if (p && inPlaceBefore(p, item, apps.get(item.object.application))) return pending('crd-pending', p, 'its CRD');
      if (p) {
        results.push({
          item,
          outcome: 'refused',
          finding: {
            ...base,
            severity: 'error',
            type: 'crd-after-object',
            message: `its CRD arrives only in ${where(p)}, which does not sync before ${item.bootstrap ? 'the bootstrap applies it' : `this object's Application (wave ${item.object.wave})`}: `
              + 'that sync fails on a kind the server does not serve; give it a later sync wave',
          },
        });
        return;
      }
      results.push({
        item,
        outcome: 'refused',
        finding: { ...base, severity: 'error', type: 'kind-not-served', message: `the server does not serve ${o.apiVersion} ${o.kind}, and nothing of the render brings its CRD: install it first (or render without it)` },
      });
      return;
    }
    const ns = o.metadata.namespace;
    if (res.namespaced && !ns) {
      results.push({ item, outcome: 'refused', finding: { ...base, severity: 'error', type: 'refused', message: 'a namespaced object without a namespace (its Application names no destination namespace)' } });
      return;
    }
    const query = `?dryRun=All&fieldManager=${ARGOCD_FIELD_MANAGER}&fieldValidation=Strict`;
    const named = typeof o.metadata.name === 'string' && o.metadata.name !== '';
    const path = discovery.path(o, res, !named);
    // the live object, to tell what the sync would change (a Secret is never read: its dry run alone)
    const secret = o.kind === 'Secret' && o.apiVersion === 'v1';
    const before = named && !secret ? await session.request('GET', path) : undefined;
    if (before) {
      const problem = rightsProblem(session, statusOf(before.body).message, before.status, `GET ${path}`);
      if (problem) throw problem;
      if (before.status !== 200 && before.status !== 404) throw new InputError(`${session.server}: HTTP ${before.status} for GET ${path} (${statusOf(before.body).message}): the API server failed; run again`);
    }
    const request = named ? `PATCH ${path}` : `POST ${path}`;
    const answer = await session.request(named ? 'PATCH' : 'POST', `${path}${query}${named ? '&force=true' : ''}`, {
      text: JSON.stringify(o),
      contentType: named ? 'application/apply-patch+yaml' : 'application/json',
    });
    if (answer.status >= 200 && answer.status < 300) {
      if (!before || before.status === 404) {
        results.push({ item, outcome: before ? 'created' : 'accepted' });
        return;
      }
      const paths = jsonDifferences(comparable(before.body as Record<string, unknown>), comparable(answer.body as Record<string, unknown>));
      if (paths.length === 0) results.push({ item, outcome: 'unchanged' });
      else results.push({ item, outcome: 'changed', finding: { ...base, severity: 'info', type: 'drift', paths, message: `the sync would change ${paths.join(', ')}` } });
      return;
    }
    const status = statusOf(answer.body);
    const problem = rightsProblem(session, status.message, answer.status, request);
    if (problem) throw problem;
    if (answer.status === 404 && status.details?.kind === 'namespaces' && ns !== undefined) {
      const p = namespaces.get(ns);
      if (p && inPlaceBefore(p, item, apps.get(item.object.application))) return pending('namespace-pending', p, `its namespace ${ns}`);
      const why = p ? `its namespace ${ns} arrives only in ${where(p)}, after it` : `its namespace ${ns} does not exist and nothing of the render creates it`;
      results.push({ item, outcome: 'refused', finding: { ...base, severity: 'error', type: 'refused', status: 404, reason: status.reason, message: `${why} (${status.message})` } });
      return;
    }
    if (answer.status === 429 || answer.status >= 501) {
      throw new InputError(`${session.server}: HTTP ${answer.status} for ${request} (${status.message}): the API server is unavailable or overloaded; run again`);
    }
    results.push({
      item,
      outcome: 'refused',
      finding: { ...base, severity: 'error', type: 'refused', status: answer.status, reason: status.reason, message: `refused (HTTP ${answer.status}${status.reason ? ` ${status.reason}` : ''}): ${status.message}` },
    });
  });
  const order = new Map(items.map((item, i) => [item, i]));
  results.sort((a, b) => order.get(a.item)! - order.get(b.item)!);
  const count = (outcome: string) => results.filter((r) => r.outcome === outcome).length;
  return {
    findings: results.flatMap((r) => (r.finding ? [r.finding] : [])),
    counts: { checked: items.length, accepted: count('accepted'), unchanged: count('unchanged'), changed: count('changed'), created: count('created'), refused: count('refused'), pending: count('pending') },
  };
}

/** One line of a finding: `error: app (wave 1): ClusterQueue research: refused (HTTP 422 Invalid): ...`. */
export function formatVerifyFinding(f: VerifyFinding): string {
  return `${f.severity}: ${f.application}${f.wave === null ? ' (bootstrap)' : ` (wave ${f.wave})`}: ${f.object}: ${f.message}`;
}
