import { ApplyMode, applyRequest, argoApplyMode, kubectlApplyMode, LAST_APPLIED } from './apply-request';
import {
  Arrival, arrival, crdKey, placeObjects, SyncObject, syncSources, SyncStep, syncSteps,
} from '../check/argocd-sync';
import { ClusterView } from '../check/cluster-view';
import { isBuiltInGroup } from '../components/gitops/api-kinds';
import { InputError, printable } from '../errors';
import { isJsonObject, jsonDifferences } from '../json';
import { ARGOCD_FIELD_MANAGER, skipsDryRunOnMissing } from '../model/names';
import { LiveSession } from '../preflight/live';
import { pathSegment } from '../preflight/reads';
import { apiGroup, describeObject, Manifest } from '../render/manifest';
import { RenderedSource } from '../upstream/render';

/*
 * verify: every object of a rendered cluster sent to the live API server as Argo CD sends it (client-side apply, or
 * server-side where ServerSideApply=true says so; field manager argocd-controller; no fieldValidation, so the server's
 * default: src/verify/apply-request.ts), the bootstrap's and the root Application as the README's kubectl commands send
 * them, but as a dry run (dryRun=All: every admission and validation step, nothing persisted), in Argo CD's order
 * (src/check/argocd-sync.ts). A dry run keeps nothing, so an object whose CRD or namespace an earlier step of the same
 * rollout brings cannot be checked yet: it is named with the wave that brings it; one whose CRD another Application of
 * the same wave brings is the race it is.
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
  /**
   * Its CRD comes with another Application of the same sync wave: both sync at once, and this object's sync fails until
   * the CRD is Established (an error, as check's crd-before-cr says: a retry converges at best).
   */
  | 'crd-same-wave'
  /** The API server accepts it with a Warning: an unknown or duplicate field it drops (a warning), a deprecated API or other advice (info). */
  | 'server-warning'
  /** Its namespace comes with the render, before it (a Namespace object, or CreateNamespace=true). */
  | 'namespace-pending'
  /** It exists and the sync would change it: the fields that differ. */
  | 'drift'
  /**
   * A binding whose roleRef changes, which the API server refuses to patch (immutable), but which Argo CD's
   * client-side apply of RBAC (`kubectl auth reconcile` first) deletes and creates again.
   */
  | 'recreated';

export interface VerifyFinding {
  readonly severity: 'error' | 'warning' | 'info';
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
  /** The texts of the API server's Warning headers (server-warning). */
  readonly warnings?: readonly string[];
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
    /** Refused, or bound to fail as Argo CD syncs it (a CRD of the same wave: crd-same-wave). */
    readonly refused: number;
    /** Waiting for a CRD or namespace of an earlier wave (or of the bootstrap). */
    readonly pending: number;
    /** Accepted with a Warning of the API server. */
    readonly warned: number;
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

/**
 * An object without what the server and its controllers keep up to date (status, resourceVersion, generation,
 * managedFields) and without client-side apply's bookkeeping (its last-applied annotation, which an object synced
 * server-side lacks).
 */
function comparable(o: Record<string, unknown>): Record<string, unknown> {
  const { status: _status, ...rest } = o;
  const metadata = isJsonObject(o.metadata) ? o.metadata : {};
  const { resourceVersion: _rv, managedFields: _mf, generation: _g, ...kept } = metadata;
  if (isJsonObject(kept.annotations)) {
    const { [LAST_APPLIED]: _la, ...annotations } = kept.annotations;
    if (Object.keys(annotations).length === 0) delete kept.annotations;
    else kept.annotations = annotations;
  }
  return { ...rest, metadata: kept };
}

/** One object to verify, where it comes in the sync, the Application that brings it, and how it is applied. */
interface Item {
  readonly object: SyncObject;
  readonly step: number;
  readonly bootstrap: boolean;
  readonly mode: ApplyMode;
}

/** Where the render brings something (a CRD, a namespace): the step and its Application. */
interface Provider {
  readonly step: number;
  readonly bootstrap: boolean;
  readonly application: string;
  readonly wave: number;
  /** The bootstrap's command (`kubectl apply -k dist/lab/argocd`): it applies the object, not Argo CD in a wave. */
  readonly command?: string;
  /** A CRD its Application's operator applies at run time, not its sync. */
  readonly atRunTime?: boolean;
}

const identity = (m: Manifest) => `${apiGroup(m.apiVersion)}/${m.kind}/${m.metadata.namespace ?? ''}/${m.metadata.name ?? m.metadata.generateName}`;

/**
 * Each object once, at its first step (the bootstrap's objects come again in their Applications' syncs), in the
 * form Argo CD applies it (with its tracking annotation) and as Argo CD applies it (argoApplyMode) when Argo CD
 * applies it at all, else as the bootstrap's kubectl command does. Then every Application of `applications` that
 * nothing applies (the root, and any other the README has applied by hand), in the bootstrap's last step, as
 * `kubectl apply -f` applies it.
 */
function itemsOf(steps: readonly SyncStep[], applications: ReadonlyMap<string, Manifest>): Item[] {
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
      const synced = argo.get(id);
      const mode = synced ? argoApplyMode(synced.object, applications.get(synced.application)) : kubectlApplyMode(bootstrapCommand(s.label));
      items.push({ object: synced ?? o, step, bootstrap: s.bootstrap, mode });
    }
  });
  const last = steps.map((s) => s.bootstrap).lastIndexOf(true);
  if (last < 0) return items;
  for (const app of applications.values()) {
    if (seen.has(identity(app))) continue;
    seen.add(identity(app));
    const object = { object: app, application: app.metadata.name, source: 'applied by hand', wave: steps[last].wave };
    items.push({ object, step: last, bootstrap: true, mode: kubectlApplyMode(`kubectl apply -f (Application ${app.metadata.name}, applied by hand)`) });
  }
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
      if (!crds.has(key)) crds.set(key, { step, bootstrap: false, application: steps[step].application, wave: steps[step].wave, atRunTime: c.from === 'operator' });
    }
  }
  return { crds, namespaces };
}


/**
 * When what a provider brings (a CRD, a namespace) is there for an item: the bootstrap's steps in their order (before
 * any Application), an Application's as Argo CD's waves order them (arrival, the rule check's crd-before-cr applies).
 */
function timing(p: Provider, item: Item): Arrival {
  if (p.bootstrap) return p.step < item.step ? 'before' : 'after';
  if (item.bootstrap) return 'after';
  return arrival(p, item.object);
}

/**
 * The race of a custom resource whose CRD another Application of its wave brings: the root syncs both Applications
 * at once, and this one's sync fails (its dry run on a kind not served, or with SkipDryRunOnMissingResource=true its
 * apply) until the CRD is Established. Argo CD's retry (syncPolicy.retry) syncs it then at best; without one the sync
 * stays failed (an automated sync does not try a failed revision again). An error either way, as crd-before-cr says.
 */
function sameWaveRace(p: Provider, item: Item, app: Manifest | undefined): { severity: 'error'; message: string } {
  const skips = skipsDryRunOnMissing(item.object.object, app);
  const retries = isJsonObject(app?.spec) && isJsonObject(app.spec.syncPolicy) && isJsonObject(app.spec.syncPolicy.retry);
  const fails = skips ? 'its apply fails (SkipDryRunOnMissingResource=true skips only the dry run)' : 'its dry run fails on a kind the server does not serve';
  return {
    severity: 'error',
    message: `its CRD arrives with ${where(p)}, the same sync wave: both sync at once, and ${fails} until that CRD is Established; `
      + (retries ? `Argo CD's retry (syncPolicy.retry of ${item.object.application}) syncs it then at best` : `${item.object.application} has no syncPolicy.retry, so that sync stays failed`)
      + ': give it a later sync wave',
  };
}

/** The API server's warnings of what it drops from what the render says: a field unknown to the schema, or given twice (fieldValidation=Warn). */
const FIELD_WARNING = /^(unknown|duplicate) field "/;

/**
 * A finding of the API server's Warning headers: a warning when it drops a field of the render (the sync keeps
 * dropping it: the render says what the cluster never gets), else info (a deprecated API, the advice on a finalizer
 * name that Argo CD's own Applications carry).
 */
function serverWarning(base: Omit<VerifyFinding, 'severity' | 'type' | 'message'>, mode: ApplyMode, warnings: readonly string[]): VerifyFinding {
  const dropped = warnings.some((w) => FIELD_WARNING.test(w));
  return {
    ...base,
    severity: dropped ? 'warning' : 'info',
    type: 'server-warning',
    warnings,
    message: dropped
      ? `accepted with a warning of the API server, as ${mode.by} applies it${mode.fieldValidation ? '' : ' (no fieldValidation: an unknown field is dropped, not refused)'}: ${warnings.join('; ')}`
      : `the API server warns, as ${mode.by} applies it: ${warnings.join('; ')}`,
  };
}

/**
 * Whether a refusal is of a (Cluster)RoleBinding's changed roleRef that Argo CD's sync gets past: gitops-engine applies
 * an rbac.authorization.k8s.io/v1 object client-side with `kubectl auth reconcile` before `kubectl apply`, and reconcile
 * deletes and creates a binding whose roleRef differs (server-side apply has no such step: refused).
 */
function recreatedByReconcile(o: Manifest, mode: ApplyMode, message: string): boolean {
  return !mode.serverSide && mode.fieldManager === ARGOCD_FIELD_MANAGER && o.apiVersion === 'rbac.authorization.k8s.io/v1'
    && (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && / is invalid: roleRef: Invalid value: .*: cannot change roleRef$/.test(message);
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
  const apps = new Map(rendered.map((s) => [s.application.metadata.name, s.application]));
  const items = itemsOf(steps, apps);
  const { crds, namespaces } = providers(steps, rendered);

  const results: { item: Item; finding?: VerifyFinding; warning?: VerifyFinding; outcome: 'accepted' | 'unchanged' | 'changed' | 'created' | 'refused' | 'pending' }[] = [];
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
      const when = p && timing(p, item);
      if (p && when === 'before') return pending('crd-pending', p, 'its CRD');
      if (p && when === 'same-wave') {
        const race = sameWaveRace(p, item, apps.get(item.object.application));
        // an error: counted as refused, as its headline says (the apply Argo CD makes fails), not as not verified yet
        results.push({ item, outcome: 'refused', finding: { ...base, ...race, type: 'crd-same-wave', after: where(p) } });
        return;
      }
      if (p) {
        const ownOperator = p.atRunTime && !p.bootstrap && !item.bootstrap && p.application === item.object.application;
        results.push({
          item,
          outcome: 'refused',
          finding: {
            ...base,
            severity: 'error',
            type: 'crd-after-object',
            message: ownOperator
              ? 'its operator applies its CRD at run time, after this Application\'s sync has applied it: that sync fails on a kind the server does not serve; '
                + 'apply it from an Application of a later sync wave'
              : `its CRD arrives only in ${where(p)}, which does not sync before ${item.bootstrap ? 'the bootstrap applies it' : `this object's Application (wave ${item.object.wave})`}: `
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
    const named = typeof o.metadata.name === 'string' && o.metadata.name !== '';
    // the live object, to tell what the sync would change (a Secret is never read: its dry run alone)
    const secret = o.kind === 'Secret' && o.apiVersion === 'v1';
    const objectPath = named ? discovery.path(o, res) : undefined;
    const before = objectPath && !secret ? await session.request('GET', objectPath) : undefined;
    if (before) {
      const problem = rightsProblem(session, statusOf(before.body).message, before.status, `GET ${objectPath}`);
      if (problem) throw problem;
      if (before.status !== 200 && before.status !== 404) throw new InputError(`${session.server}: HTTP ${before.status} for GET ${objectPath} (${statusOf(before.body).message}): the API server failed; run again`);
    }
    // what the apply sends: a Secret, never read, is patched as if it were there, and created when it is not
    const live = before ? (before.status === 200 && isJsonObject(before.body) ? before.body : undefined) : secret ? {} : undefined;
    const custom = crds.has(`${apiGroup(o.apiVersion)}/${o.kind}`) || !isBuiltInGroup(apiGroup(o.apiVersion));
    const send = async (current: Record<string, unknown> | undefined) => {
      const r = applyRequest(o, item.mode, current, custom);
      const path = r.collection ? discovery.path(o, res, true) : objectPath!;
      return { request: `${r.method} ${path}`, answer: await session.request(r.method, `${path}${r.query}`, { text: r.body, contentType: r.contentType }) };
    };
    let { request, answer } = await send(live);
    if (secret && !item.mode.serverSide && answer.status === 404 && statusOf(answer.body).details?.kind !== 'namespaces') ({ request, answer } = await send(undefined));
    const accepted = answer.status >= 200 && answer.status < 300;
    const warned = accepted && (answer.warnings ?? []).length > 0 ? serverWarning(base, item.mode, answer.warnings!) : undefined;
    if (answer.status >= 200 && answer.status < 300) {
      if (!before || before.status === 404) {
        results.push({ item, outcome: before ? 'created' : 'accepted', warning: warned });
        return;
      }
      const paths = jsonDifferences(comparable(before.body as Record<string, unknown>), comparable(answer.body as Record<string, unknown>));
      if (paths.length === 0) results.push({ item, outcome: 'unchanged', warning: warned });
      else results.push({ item, outcome: 'changed', warning: warned, finding: { ...base, severity: 'info', type: 'drift', paths, message: `the sync would change ${paths.join(', ')}` } });
      return;
    }
    const status = statusOf(answer.body);
    const problem = rightsProblem(session, status.message, answer.status, request);
    if (problem) throw problem;
    if (answer.status === 404 && status.details?.kind === 'namespaces' && ns !== undefined) {
      const p = namespaces.get(ns);
      const when = p && timing(p, item);
      if (p && when === 'before') return pending('namespace-pending', p, `its namespace ${ns}`);
      const why = !p ? `its namespace ${ns} does not exist and nothing of the render creates it`
        : when === 'same-wave' ? `its namespace ${ns} arrives with ${where(p)}, the same sync wave: both sync at once, and its apply fails until that namespace exists; give it a later sync wave`
          : `its namespace ${ns} arrives only in ${where(p)}, after it`;
      results.push({ item, outcome: 'refused', finding: { ...base, severity: 'error', type: 'refused', status: 404, reason: status.reason, message: `${why} (${status.message})` } });
      return;
    }
    if (answer.status === 422 && recreatedByReconcile(o, item.mode, status.message)) {
      results.push({
        item,
        outcome: 'changed',
        finding: {
          ...base,
          severity: 'info',
          type: 'recreated',
          paths: ['.roleRef'],
          message: 'the sync would change .roleRef, which is immutable: Argo CD\'s client-side apply of RBAC runs kubectl auth reconcile first, which deletes the binding and creates it again',
        },
      });
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
    findings: results.flatMap((r) => [r.warning, r.finding].filter((f): f is VerifyFinding => f !== undefined)),
    counts: {
      checked: items.length,
      accepted: count('accepted'),
      unchanged: count('unchanged'),
      changed: count('changed'),
      created: count('created'),
      refused: count('refused'),
      pending: count('pending'),
      warned: results.filter((r) => r.warning).length,
    },
  };
}

/** One line of a finding: `error: app (wave 1): ClusterQueue research: refused (HTTP 422 Invalid): ...`. */
export function formatVerifyFinding(f: VerifyFinding): string {
  return `${f.severity}: ${f.application}${f.wave === null ? ' (bootstrap)' : ` (wave ${f.wave})`}: ${f.object}: ${f.message}`;
}
