import { isJsonObject } from '../json';
import { ARGOCD_FIELD_MANAGER, ownSyncOptions, syncOptionsOf } from '../model/names';
import { Manifest } from '../render/manifest';

/*
 * What each apply of a sync sends to the API server, as verify sends it with dryRun=All. Argo CD (gitops-engine v3.5.1,
 * pkg/utils/kube/resource_ops.go newApplyOptions) runs kubectl's apply in the controller: client-side unless
 * ServerSideApply=true (the Application's syncOptions, or the object's own sync-options; its own ServerSideApply=false
 * wins), server-side with conflicts forced; field manager argocd-controller either way; and it never sets kubectl's
 * ValidationDirective, so no fieldValidation goes out and the API server takes its default, Warn: in a create or patch
 * an unknown or duplicate field is dropped with a Warning header, not refused (a server-side apply of an unknown
 * field is refused all the same: `field not declared in schema`, test/cluster/live-commands.test.ts). The bootstrap is the kubectl command line the
 * README gives, which sends kubectl's default, fieldValidation=Strict, as field manager `kubectl` (server-side) or
 * `kubectl-client-side-apply`.
 */

/** kubectl's annotation of client-side apply: the object as last applied. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** How an object is applied, and by whom. */
export interface ApplyMode {
  readonly serverSide: boolean;
  readonly fieldManager: string;
  /** The fieldValidation sent; undefined: none (the server's default, Warn). */
  readonly fieldValidation?: 'Strict';
  /** Who applies it, for a finding: `Argo CD (client-side apply)`, `kubectl apply --server-side`. */
  readonly by: string;
}

/** How Argo CD applies an object of an Application: its sync options and the object's own decide server- or client-side. */
export function argoApplyMode(object: Manifest, application: object | undefined): ApplyMode {
  const own = ownSyncOptions(object);
  const serverSide = !own.includes('ServerSideApply=false')
    && (own.includes('ServerSideApply=true') || (application !== undefined && syncOptionsOf(application).includes('ServerSideApply=true')));
  return { serverSide, fieldManager: ARGOCD_FIELD_MANAGER, by: `Argo CD (${serverSide ? 'server-side apply, ServerSideApply=true' : 'client-side apply'})` };
}

/** How a kubectl command line of the bootstrap applies its objects (`kubectl apply --server-side -k ...`). */
export function kubectlApplyMode(command: string): ApplyMode {
  const serverSide = /(^|\s)--server-side(=true)?(\s|$)/.test(command);
  return { serverSide, fieldManager: serverSide ? 'kubectl' : 'kubectl-client-side-apply', fieldValidation: 'Strict', by: command };
}

/** JSON with the keys of every object sorted, as Go encodes a map (kubectl's last-applied annotation). */
function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (isJsonObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${sortedJson(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

/** The object as client-side apply sends it: with its last-applied annotation (the object without that annotation, as kubectl encodes it). */
export function withLastApplied(o: Manifest): Manifest {
  const { [LAST_APPLIED]: _old, ...annotations } = o.metadata.annotations ?? {};
  const bare = { ...o, metadata: { ...o.metadata, annotations } };
  if (Object.keys(annotations).length === 0) delete (bare.metadata as { annotations?: unknown }).annotations;
  return { ...o, metadata: { ...o.metadata, annotations: { ...annotations, [LAST_APPLIED]: `${sortedJson(bare)}\n` } } };
}

/**
 * `patch` with null for every key `last` (what was applied before) has and `patch` has not, map by map, as kubectl's
 * three-way patch deletes what the last apply set and this one leaves out (a list is replaced, or merged by key, whole).
 */
function withDeletions(patch: Record<string, unknown>, last: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...patch };
  for (const [k, v] of Object.entries(last)) {
    if (!(k in patch)) out[k] = null;
    else if (isJsonObject(v) && isJsonObject(patch[k])) out[k] = withDeletions(patch[k] as Record<string, unknown>, v);
  }
  return out;
}

/** One request of a dry run: method, the query after the object's path, content type and body. */
export interface ApplyRequest {
  readonly method: 'POST' | 'PATCH';
  /** `POST` goes to the collection, `PATCH` to the object. */
  readonly collection: boolean;
  readonly query: string;
  readonly contentType: string;
  readonly body: string;
}

/**
 * The dry-run request of one apply. Server-side: the object as an apply patch, conflicts forced. Client-side: what
 * kubectl's apply sends, the object with its last-applied annotation, created when there is none (`live` undefined),
 * else patched: a strategic merge patch for a kind Kubernetes serves itself, a JSON merge patch for a custom resource
 * (`custom`), each deleting what the live object's last-applied annotation holds and this apply leaves out. An object
 * without a name (generateName) is created, as Argo CD creates it.
 */
export function applyRequest(o: Manifest, mode: ApplyMode, live: Record<string, unknown> | undefined, custom: boolean): ApplyRequest {
  const query = `?dryRun=All&fieldManager=${encodeURIComponent(mode.fieldManager)}${mode.fieldValidation ? `&fieldValidation=${mode.fieldValidation}` : ''}`;
  const named = typeof o.metadata.name === 'string' && o.metadata.name !== '';
  if (!named) return { method: 'POST', collection: true, query, contentType: 'application/json', body: JSON.stringify(o) };
  if (mode.serverSide) return { method: 'PATCH', collection: false, query: `${query}&force=true`, contentType: 'application/apply-patch+yaml', body: JSON.stringify(o) };
  const applied = withLastApplied(o);
  if (live === undefined) return { method: 'POST', collection: true, query, contentType: 'application/json', body: JSON.stringify(applied) };
  const annotations = isJsonObject(live.metadata) && isJsonObject(live.metadata.annotations) ? live.metadata.annotations : {};
  let last: unknown;
  try {
    last = typeof annotations[LAST_APPLIED] === 'string' ? JSON.parse(annotations[LAST_APPLIED]) : undefined;
  } catch {
    last = undefined;
  }
  const patch = isJsonObject(last) ? withDeletions(applied as unknown as Record<string, unknown>, last) : applied;
  return {
    method: 'PATCH',
    collection: false,
    query,
    contentType: custom ? 'application/merge-patch+json' : 'application/strategic-merge-patch+json',
    body: JSON.stringify(patch),
  };
}
