import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ApiError, describe, KubeClient, KubeObject, Resource } from './kube-client';
import { poll } from './poll';
import { ARGOCD_FIELD_MANAGER, crdKey, placeObjects, syncOptionsOf, syncSources, syncSteps, syncWave } from '../check/argocd-sync';
import { ClusterView } from '../check/cluster-view';
import { ARGO } from '../check/gitops';
import { isBuiltInGroup } from '../components/gitops/api-kinds';
import { jsonDifferences } from '../json';
import { apiGroup } from '../render/manifest';
import { ClusterRenders } from '../upstream/render';

/**
 * A rendered cluster applied to the hermetic control plane directly, in the order check reads off the render
 * (src/check/argocd-sync.ts syncSteps), every object server-side applied: **not Argo CD**. The real Argo CD v3.5.1 syncs
 * the reference cluster on the twin (twin.ts, twin-cluster.ts: argocd-twin.test.ts, gitops-waves.test.ts), and there
 * it answers what this file answered for that cluster: every object accepted, in wave order, and a second comparison that
 * changes nothing (every Application Synced with `ServerSideDiff=true`). What this file still stands in for, each
 * precisely:
 *
 * - **What a cluster has before Argo CD** (planSync's `pre-installed` steps: the CRDs of the kinds the tree uses and
 *   nothing of it installs, from ../shared/crds, and the namespaces it uses and nothing of it creates): the Instant
 *   Cluster image's own installs (GPU, Network and MPI Operators, Kueue, VictoriaMetrics), applied as `kubectl`. The
 *   twin applies this layer before its bootstrap (twin-cluster.ts `preinstall`), and its pre-installed Kueue's install
 *   with planSync and applySteps (twin-cluster.ts `preinstalledKueue`): a stand-in for the Helm install that put Kueue
 *   on the image, not for Argo CD.
 * - **Argo CD's sync of the clusters the twin does not run yet**: every example and fixture but the reference cluster
 *   (apply-as-argocd.test.ts; the managed installs' charts need the chart mirror, chart-mirror.ts, wired into the twin).
 * - **A loader** for the tests about something other than the sync (placement, admission, the policies' type checks,
 *   the installs' webhooks, Kueue, MultiKueue, the live commands, the operator releases, the upgrade order): they need
 *   the render in the API server, in an order that works.
 * - What it proves that Argo CD does not show: every apply is `fieldValidation=Strict` (kube-client.ts), so a field the
 *   server's schema does not know is refused here; Argo CD sends no fieldValidation (the server's default, Warn:
 *   gitops-engine pkg/utils/kube/resource_ops.go), drops the field with a warning and reports Synced.
 *
 * How it differs from Argo CD v3.5.1's sync (gitops-engine pkg/sync/sync_context.go, argo-cd controller/sync.go,
 * controller/state.go), all of it:
 *
 * - server-side apply with Argo CD's field manager (`argocd-controller`), conflicts forced, for every object; Argo CD
 *   applies client-side (kubectl's three-way merge, `last-applied-configuration`, an `Update` of `argocd-controller`)
 *   unless the Application or the object says `ServerSideApply=true` (the rendered `<cluster>-argocd` Application does);
 * - no comparison and no dry run of an Application before its apply: a refused object is a refusal of its own apply,
 *   where Argo CD reports a change to an existing object that the API server refuses as a ComparisonError of the
 *   server-side diff's dry run (sync status Unknown, no automated sync) and a refused new object as a failed sync of
 *   its dry run (test/cluster/README.md, "A refused object on the real Argo CD");
 * - the Applications of one wave applied one after the other, and between waves only the CRDs waited for (Established
 *   and served), never health: Argo CD syncs the Applications of a wave together and starts the next wave once each is
 *   Healthy by the toolkit's health check (or gitops.waveWait has passed);
 * - Helm hooks applied as objects of their phase (PreSync, PostSync), never run: no Job waited for, no hook deletion
 *   policy; hooks that run only on deletion or rollback left out;
 * - no prune, no self-heal, no retries;
 * - the bootstrap (the README's `argocd` and `gitops` folders) applied with Argo CD's field manager instead of kubectl's
 *   (a `kubectl apply --server-side` would own the fields as `kubectl`, and Argo CD's first sync take them over: a write
 *   of every object that only moves ownership), and what it applied not applied again;
 * - the installs' admission webhooks registered last, after every Application: their Services' pods never run here (no
 *   kubelet), so a webhook registered when Argo CD registers it would refuse every later object it intercepts with "no
 *   endpoints", a fact of this test bed, not of the render. interceptedObjects says which objects each would intercept
 *   once registered.
 *
 * secondApply is the request Argo CD's `ServerSideDiff=true` comparison sends for an object that exists (gitops-engine
 * pkg/diff/diff.go `serverSideDiff`: a server-side apply dry run with `argocd-controller`), here with conflicts forced.
 */

/** Argo CD's field manager with ServerSideApply=true. */
export const ARGOCD_MANAGER = ARGOCD_FIELD_MANAGER;
/** The field manager of `kubectl apply --server-side`: the README's bootstrap. */
export const KUBECTL_MANAGER = 'kubectl';

const WEBHOOK_KINDS = new Set(['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']);
/** Namespaces every cluster has. */
const SYSTEM_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);

/** One object to apply, and where it comes from. */
export interface PlannedObject {
  readonly object: KubeObject;
  /** The Application that applies it (`pre-installed` for the cluster's own). */
  readonly application: string;
  /** `chart kueue 0.19.2`, `folder dist/x/storage`, `../shared/crds/kueue/...`. */
  readonly source: string;
  /** The sync wave of its Application (the pre-installed layer and the bootstrap: -Infinity). */
  readonly wave: number;
}

/** A step of the sync: objects applied together, with one field manager. */
export interface SyncStep {
  readonly label: string;
  readonly manager: string;
  readonly objects: readonly PlannedObject[];
}

/** What cannot be checked here, and why (the test lists them, and asserts nothing else is left out). */
export interface LeftOut {
  readonly object: PlannedObject;
  readonly why: string;
}

export interface SyncPlan {
  readonly cluster: string;
  readonly steps: readonly SyncStep[];
  /** The admission webhook configurations of the installs, registered after every step. */
  readonly webhooks: readonly PlannedObject[];
  /** Objects not applied: helm hooks Argo CD runs only on deletion, kinds whose CRD is vendored nowhere. */
  readonly leftOut: readonly LeftOut[];
}

/** A CRD of ../shared/crds, with the file it was read from. */
export interface VendoredCrd {
  readonly crd: KubeObject;
  readonly file: string;
}

/** Every CustomResourceDefinition of the vendored schema folder (../shared/crds), by `group/Kind`. */
export function vendoredCrds(dir: string): Map<string, VendoredCrd[]> {
  const out = new Map<string, VendoredCrd[]>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) {
        walk(p);
        continue;
      }
      if (!/\.ya?ml$/.test(name)) continue;
      const text = readFileSync(p, 'utf8');
      if (!text.includes('CustomResourceDefinition')) continue;
      for (const doc of parseAllDocuments(text)) {
        const o = doc.toJS({ maxAliasCount: 100 }) as KubeObject | null;
        if (o?.kind !== 'CustomResourceDefinition') continue;
        const spec = o.spec as { group: string; names: { kind: string } };
        const key = `${spec.group}/${spec.names.kind}`;
        out.set(key, [...(out.get(key) ?? []), { crd: o, file: p }]);
      }
    }
  };
  walk(dir);
  return out;
}

/** Of several vendored files of one kind: the one whose name carries the providing release's version, else the plain one. */
function pickCrd(candidates: readonly VendoredCrd[], version: string | undefined): VendoredCrd {
  const versioned = version === undefined ? undefined : candidates.find((c) => path.basename(c.file).includes(version));
  return versioned ?? candidates.find((c) => !/\d+\.\d+\.\d+/.test(path.basename(c.file))) ?? candidates[0];
}

/**
 * Plans the sync of one rendered cluster (the view as check reads it, and its renders as check renders them) in the
 * order src/check/argocd-sync.ts gives, with what the cluster has before Argo CD in front. `crds`: the vendored CRDs
 * (vendoredCrds), for the pre-installed add-ons' kinds and the CRDs an install brings that its render does not show.
 * `tracking`: Argo CD's tracking annotation on what Argo CD applies (what `verify` sends), so that a sync of the
 * Applications takes over what the bootstrap applied as Argo CD does.
 */
export function planSync(
  view: ClusterView, renders: ClusterRenders, crds: ReadonlyMap<string, readonly VendoredCrd[]>, served: ReadonlyMap<string, Resource>,
  opts: { readonly tracking?: boolean } = {},
): SyncPlan {
  const { sources: plans, leftOut } = syncSources(renders.sources, view.name);

  // the CRDs of the tree, and those an install brings that its render does not show (from the vendored copies)
  const provided = new Set<string>();
  for (const p of plans) for (const o of p.objects) if (o.object.kind === 'CustomResourceDefinition') provided.add(crdKey(o.object));
  for (const p of plans) {
    for (const ref of p.source.unrenderedCrds) {
      const key = `${ref.group}/${ref.kind}`;
      if (provided.has(key)) continue;
      const candidates = crds.get(key);
      if (!candidates) continue; // reported below, when an object needs it
      const pick = pickCrd(candidates, p.source.release?.version);
      provided.add(key);
      p.objects.push({ object: structuredClone(pick.crd), application: p.source.application.metadata.name, source: `${p.source.what}, ${ref.from === 'operator' ? 'applied by its operator at run time' : 'crds/'}: ${pick.file}`, wave: syncWave(p.source.application) });
    }
  }

  // what the cluster has before Argo CD: the CRDs of kinds nothing of the tree installs, the namespaces nothing creates
  const preinstalled: PlannedObject[] = [];
  const needed = new Set<string>();
  for (const p of plans) for (const o of p.objects) if (!isBuiltInGroup(apiGroup(o.object.apiVersion))) needed.add(`${apiGroup(o.object.apiVersion)}/${o.object.kind}`);
  for (const key of [...needed].sort()) {
    if (provided.has(key)) continue;
    const candidates = crds.get(key);
    if (!candidates) continue;
    const pick = pickCrd(candidates, undefined);
    provided.add(key);
    preinstalled.push({ object: structuredClone(pick.crd), application: 'pre-installed', source: pick.file, wave: -Infinity });
  }
  // objects of kinds an install brings the CRD of, where no copy of that CRD is vendored: left out, named (a kind no
  // one brings stays in the plan: the server refuses it, as a cluster would)
  const declared = new Set(plans.flatMap((p) => p.source.unrenderedCrds.map((c) => `${c.group}/${c.kind}`)));
  for (const p of plans) {
    p.objects.splice(0, p.objects.length, ...p.objects.filter((o) => {
      const key = `${apiGroup(o.object.apiVersion)}/${o.object.kind}`;
      if (isBuiltInGroup(apiGroup(o.object.apiVersion)) || provided.has(key) || !declared.has(key)) return true;
      leftOut.push({ object: o, why: `its CRD (${key}) comes with an install whose CRDs are not vendored, and ../shared/crds has no copy of it` });
      return false;
    }));
  }

  // namespaces: each namespaced object in its own or its Application's destination namespace
  const preinstalledScope = (apiVersion: string, kind: string) => {
    const crd = preinstalled.find((x) => x.object.kind === 'CustomResourceDefinition' && crdKey(x.object) === `${apiGroup(apiVersion)}/${kind}`);
    if (crd) return (crd.object.spec as { scope: 'Namespaced' | 'Cluster' }).scope;
    const res = served.get(`${apiVersion}/${kind}`);
    return res === undefined ? undefined : res.namespaced ? 'Namespaced' : 'Cluster';
  };
  const used = placeObjects(plans, preinstalledScope);
  const created = new Set<string>(SYSTEM_NAMESPACES);
  for (const p of plans) {
    for (const o of p.objects) if (o.object.kind === 'Namespace' && o.object.apiVersion === 'v1') created.add(o.object.metadata.name);
    if (syncOptionsOf(p.source.application).includes('CreateNamespace=true')) created.add(p.source.namespace);
  }
  for (const ns of [...used].sort()) {
    if (!created.has(ns)) preinstalled.push({ object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, application: 'pre-installed', source: 'a namespace the tree uses and nothing of it creates', wave: -Infinity });
  }

  // the bootstrap (README, step 5) and every Application's sync, in order (src/check/argocd-sync.ts); the webhooks
  // of the installs set aside (registered last), and an object applied already as it is, by the same manager, not
  // applied again (the Argo CD pass over what the bootstrap applied): that apply changes nothing, the second apply
  // shows it, and it costs the API server seconds for each large CRD
  const webhooks: PlannedObject[] = [];
  const steps: SyncStep[] = [];
  if (preinstalled.length > 0) {
    steps.push({ label: 'pre-installed: Namespaces', manager: 'pre-installed', objects: preinstalled.filter((o) => o.object.kind === 'Namespace') });
    steps.push({ label: 'pre-installed: CustomResourceDefinitions', manager: 'pre-installed', objects: preinstalled.filter((o) => o.object.kind === 'CustomResourceDefinition') });
  }
  const done = new Set<string>();
  const fresh = (o: PlannedObject) => {
    const key = JSON.stringify(o.object);
    if (done.has(key)) return false;
    done.add(key);
    return true;
  };
  for (const step of syncSteps(view, plans, { tracking: opts.tracking })) {
    const objects = step.objects as PlannedObject[];
    if (!step.bootstrap) webhooks.push(...objects.filter((o) => WEBHOOK_KINDS.has(o.object.kind)));
    steps.push({ label: step.label, manager: ARGOCD_MANAGER, objects: objects.filter((o) => !WEBHOOK_KINDS.has(o.object.kind)).filter(fresh) });
  }
  return { cluster: view.name, steps: steps.filter((s) => s.objects.length > 0), webhooks, leftOut: leftOut as LeftOut[] };
}

/** An object the API server refused, with its message. */
export interface Refusal {
  readonly object: PlannedObject;
  readonly step: string;
  readonly status: number;
  readonly message: string;
}

/** Runs `fn` over `items`, at most `limit` at a time. */
export async function eachLimited<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }));
  return out;
}

/** Waits until every CRD applied is Established and its kind is served (discovery); false on timeout. */
async function waitEstablished(client: KubeClient, defs: readonly KubeObject[], timeoutMs: number): Promise<string[]> {
  const pending = new Set(defs.map((d) => d.metadata.name));
  await poll(async () => {
    for (const name of [...pending]) {
      const live = await client.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      if (!live) continue;
      const conditions = ((live?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions) ?? [];
      if (!conditions.some((c) => c.type === 'Established' && c.status === 'True')) continue;
      const spec = live.spec as { group: string; names: { kind: string }; versions: { name: string; served: boolean }[] };
      const served = spec.versions.filter((v) => v.served);
      const known = await Promise.all(served.map((v) => client.resource(`${spec.group}/${v.name}`, spec.names.kind)));
      if (known.every((k) => k !== undefined)) pending.delete(name);
    }
    return pending.size;
  }, (left) => left === 0, timeoutMs, 200);
  return [...pending];
}

export interface ApplyReport {
  /** The live objects as the server answered each apply, in plan order. */
  readonly applied: { readonly object: PlannedObject; readonly live: KubeObject }[];
  readonly refused: Refusal[];
}

/** The message of a refusal, one line. */
export function refusalText(r: Refusal): string {
  return `${r.object.application} (${r.step}): ${describe(r.object.object)}: ${r.status} ${r.message}`;
}

/** Applies the steps in order, each step's objects together (a few at a time); a refused object is recorded, the rest go on. */
export async function applySteps(
  client: KubeClient,
  steps: readonly SyncStep[],
  opts: { dryRun?: boolean; concurrency?: number; onStep?: (step: SyncStep, ms: number) => void } = {},
): Promise<ApplyReport> {
  const applied: ApplyReport['applied'][number][] = [];
  const refused: Refusal[] = [];
  for (const step of steps) {
    const t0 = Date.now();
    type Result = { object: PlannedObject; live: KubeObject; refusal?: undefined } | { object: PlannedObject; live?: undefined; refusal: Refusal };
    const results = await eachLimited(step.objects, opts.concurrency ?? 8, async (o): Promise<Result> => {
      try {
        const live = await client.apply(o.object, { fieldManager: step.manager === 'pre-installed' ? KUBECTL_MANAGER : step.manager, dryRun: opts.dryRun });
        return { object: o, live };
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        return { object: o, refusal: { object: o, step: step.label, status: e.status, message: e.message } };
      }
    });
    for (const r of results) {
      if (r.refusal) refused.push(r.refusal);
      else applied.push({ object: r.object, live: r.live });
    }
    const defs = results.filter((r) => !r.refusal && r.object.object.kind === 'CustomResourceDefinition').map((r) => r.object.object);
    if (defs.length > 0 && !opts.dryRun) {
      const late = await waitEstablished(client, defs, 120_000);
      for (const name of late) {
        refused.push({ object: step.objects.find((o) => o.object.metadata.name === name)!, step: step.label, status: 0, message: 'not Established (and served) within 120 s' });
      }
    }
    opts.onStep?.(step, Date.now() - t0);
  }
  return { applied, refused };
}

/** An object without what the server and its controllers keep up to date: status, resourceVersion, managedFields. */
function comparable(o: KubeObject): KubeObject {
  const { status: _status, ...rest } = o;
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = o.metadata;
  return { ...rest, metadata } as KubeObject;
}


/** An object whose second apply changed it: the fields that changed. */
export interface Drift {
  readonly object: PlannedObject;
  readonly paths: readonly string[];
}

/**
 * Applies every object of the plan once more as a dry run (`dryRun=All`: every admission and validation step, nothing
 * written), as Argo CD's server-side diff (ServerSideDiff=true) predicts its next sync or self-heal, and compares what
 * the server would keep with the live object, without status, resourceVersion and managedFields: a rendered tree that
 * is in sync changes nothing. A difference is read again once (a controller's write between the read and the apply).
 */
export async function secondApply(client: KubeClient, steps: readonly SyncStep[]): Promise<{ drift: Drift[]; refused: Refusal[] }> {
  const drift: Drift[] = [];
  const refused: Refusal[] = [];
  for (const step of steps) {
    await eachLimited(step.objects, 8, async (o) => {
      const manager = step.manager === 'pre-installed' ? KUBECTL_MANAGER : step.manager;
      for (let attempt = 0; ; attempt++) {
        try {
          const before = await client.read(o.object);
          const after = await client.apply(o.object, { fieldManager: manager, dryRun: true });
          const paths = before ? jsonDifferences(comparable(before), comparable(after)) : ['(the object is gone)'];
          if (paths.length === 0) return;
          if (attempt > 0) {
            drift.push({ object: o, paths });
            return;
          }
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          refused.push({ object: o, step: step.label, status: e.status, message: e.message });
          return;
        }
      }
    });
  }
  return { drift, refused };
}

/** The webhooks of a configuration that refuse what they cannot reach (failurePolicy Fail, the default). */
export function failingWebhooks(config: KubeObject): string[] {
  return ((config.webhooks ?? []) as { name: string; failurePolicy?: string }[]).filter((w) => (w.failurePolicy ?? 'Fail') === 'Fail').map((w) => w.name);
}

export { ARGO };

/**
 * The refusals of a CRD's conversion webhook that cannot be reached (its pods never run here), for objects whose
 * version is not their CRD's storage version (so the API server must call it to store them); the rest. An object
 * refused so is accepted by a cluster whose operator runs: the test names these objects, and they are checked no
 * further here.
 */
export function splitConversionRefusals(plan: SyncPlan, refusals: readonly Refusal[]): { conversion: Refusal[]; rest: Refusal[] } {
  const crdOf = (o: KubeObject) => plan.steps.flatMap((s) => s.objects).find((x) => x.object.kind === 'CustomResourceDefinition' && crdKey(x.object) === `${apiGroup(o.apiVersion)}/${o.kind}`)?.object;
  const needsConversion = (o: KubeObject) => {
    const spec = crdOf(o)?.spec as { conversion?: { strategy?: string }; versions: { name: string; storage: boolean }[] } | undefined;
    const version = o.apiVersion.split('/').pop();
    return spec?.conversion?.strategy === 'Webhook' && spec.versions.find((v) => v.storage)?.name !== version;
  };
  const conversion = refusals.filter((r) => /conversion webhook for .+ failed/.test(r.message) && needsConversion(r.object.object));
  return { conversion, rest: refusals.filter((r) => !conversion.includes(r)) };
}

/** Whether an admission webhook rule (groups and resources, `*` for any) covers a resource. */
function ruleCovers(rule: { apiGroups?: string[]; resources?: string[] }, group: string, plural: string): boolean {
  const any = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v || x === `${v}/*`);
  return any(rule.apiGroups, group) && any(rule.resources, plural);
}

/** The objects of the plan that a webhook configuration's failing webhooks intercept (by group and resource). */
export async function interceptedObjects(client: KubeClient, plan: SyncPlan, webhooks: readonly KubeObject[]): Promise<PlannedObject[]> {
  const rules = webhooks.flatMap((w) => ((w.webhooks ?? []) as { failurePolicy?: string; rules?: { apiGroups?: string[]; resources?: string[] }[] }[])
    .filter((h) => (h.failurePolicy ?? 'Fail') === 'Fail').flatMap((h) => h.rules ?? []));
  const out: PlannedObject[] = [];
  for (const o of plan.steps.flatMap((s) => s.objects)) {
    const res = await client.resource(o.object.apiVersion, o.object.kind);
    if (res && rules.some((r) => ruleCovers(r, apiGroup(o.object.apiVersion), res.plural))) out.push(o);
  }
  return out;
}
