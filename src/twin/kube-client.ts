import * as https from 'node:https';
import { serverWarnings } from '../preflight/live';

/**
 * A small REST client of the hermetic control plane (control-plane.ts) that keeps objects as they are: what a
 * test applies is the rendered object byte for byte (a typed client would drop the fields its model lacks, and a
 * field the server does not know must be refused by the server, not lost on the way). Discovery maps kinds to
 * resources, and is read again when a kind is missing (a CRD established since).
 */

/** A Kubernetes object as rendered or as the server answers it. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** A refusal of the API server: its status code and metav1.Status (reason, message, details.causes). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** What a kind is served as. */
export interface Resource {
  readonly plural: string;
  readonly namespaced: boolean;
}

/** How a server-side apply is made. */
export interface ApplyOptions {
  /** @default 'argocd-controller' (Argo CD's field manager with ServerSideApply=true) */
  readonly fieldManager?: string;
  /** Take over fields another manager owns (Argo CD does). @default true */
  readonly force?: boolean;
  /** Run every admission and validation step, persist nothing (`dryRun=All`). @default false */
  readonly dryRun?: boolean;
  /** @default 'Strict' (kubectl's default: an unknown or duplicate field is refused) */
  readonly fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly contentType?: string;
  readonly query?: Readonly<Record<string, string>>;
  /** @default 60 s */
  readonly timeoutMs?: number;
}

/** Describes an object in messages: `Kind namespace/name`. */
export function describe(o: { kind: string; metadata: { name: string; namespace?: string } }): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}

/** Who a client acts as through impersonation (its token's identity must be allowed to impersonate). */
export interface Impersonation {
  readonly user: string;
  readonly groups?: readonly string[];
}

/** Attempts of a request whose kept-alive connections turned out closed: each pooled one (at most 16), then a new one. */
const STALE_CONNECTION_RETRIES = 17;

/** One event of a watch stream (`?watch=1`): metav1.WatchEvent. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: KubeObject;
}

/**
 * How a watch stream ended: the server closed it (its timeout: watch again from the last resourceVersion), the
 * resourceVersion is too old (410 Gone, as a status or an ERROR event: list again), or a failure (a refusal, a
 * connection lost).
 */
export type WatchEnd = { readonly reason: 'closed' } | { readonly reason: 'gone' } | { readonly reason: 'error'; readonly error: Error };

/** A watch stream in progress. */
export interface WatchHandle {
  /** Resolves once the stream ended (never rejects). */
  readonly done: Promise<WatchEnd>;
  /** Ends it (done resolves as closed). */
  close(): void;
}

export interface WatchOptions {
  /** Events after this version (a list's metadata.resourceVersion, or the last event's). */
  readonly resourceVersion?: string;
  /**
   * The server ends the stream after this long (the watch is opened again by the caller).
   * @default 300
   */
  readonly timeoutSeconds?: number;
  readonly onEvent: (e: WatchEvent) => void;
}

export class KubeClient {
  private readonly agent: https.Agent;
  /** Watch streams hold their connection for minutes: apart from the request pool, so they never starve it. */
  private watchAgent?: https.Agent;
  private readonly discovery = new Map<string, Promise<Map<string, Resource> | undefined>>();

  constructor(
    readonly server: string,
    ca: Buffer | https.Agent,
    private readonly token: string,
    private readonly impersonation?: Impersonation,
  ) {
    this.agent = ca instanceof https.Agent ? ca : new https.Agent({ ca, keepAlive: true, maxSockets: 16 });
  }

  close(): void {
    this.agent.destroy();
    this.watchAgent?.destroy();
  }

  /**
   * A client that sends the same token and impersonates `user` (and `groups`): what the API server's admission sees of
   * the request is that user (`request.userInfo`). It shares this client's connections (close this one).
   */
  as(user: string, groups: readonly string[] = []): KubeClient {
    return new KubeClient(this.server, this.agent, this.token, { user, groups });
  }

  /**
   * One request; answers the status, the parsed body (text when it is not JSON) and the texts of its Warning headers.
   * Never throws on a status. A request written to a kept-alive connection the server had closed meanwhile (its idle
   * timeout, a busy machine: `write EPIPE`, or ECONNRESET before any answer) never reached it, and is sent again on a
   * new connection (what Node's documentation advises for `request.reusedSocket`).
   */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<{ status: number; body: any; warnings: string[] }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.send(method, path, opts);
      } catch (e) {
        const { code, reusedSocket } = e as NodeJS.ErrnoException & { reusedSocket?: boolean };
        if (!reusedSocket || (code !== 'EPIPE' && code !== 'ECONNRESET') || attempt >= STALE_CONNECTION_RETRIES) throw e;
      }
    }
  }

  /** Every request's headers: the token, JSON, the impersonation. */
  private headers(): Record<string, string | string[]> {
    return {
      Authorization: `Bearer ${this.token}`,
      Accept: 'application/json',
      ...(this.impersonation ? { 'Impersonate-User': this.impersonation.user } : {}),
      ...(this.impersonation?.groups?.length ? { 'Impersonate-Group': [...this.impersonation.groups] } : {}),
    };
  }

  private send(method: string, path: string, opts: RequestOptions): Promise<{ status: number; body: any; warnings: string[] }> {
    const url = new URL(path, this.server);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    return new Promise((resolve, reject) => {
      const req = https.request(url, {
        method,
        agent: this.agent,
        headers: {
          ...this.headers(),
          ...(payload !== undefined ? { 'Content-Type': opts.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}),
        },
        timeout: opts.timeoutMs ?? 60_000,
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: the text
          }
          resolve({ status: res.statusCode ?? 0, body, warnings: serverWarnings(res.rawHeaders) });
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${(opts.timeoutMs ?? 60_000) / 1000} s`)));
      req.on('error', (e) => reject(Object.assign(e, { reusedSocket: req.reusedSocket })));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** A request whose answer must be 2xx: the body, else an ApiError with the server's message. */
  async call(method: string, path: string, opts: RequestOptions = {}): Promise<any> {
    const r = await this.request(method, path, opts);
    if (r.status >= 200 && r.status < 300) return r.body;
    const status = (typeof r.body === 'object' && r.body !== null ? r.body : {}) as { reason?: string; message?: string };
    throw new ApiError(r.status, status.reason ?? String(r.status), status.message ?? String(r.body).slice(0, 500), r.body);
  }

  /** GET of a path; undefined on 404. */
  async get(path: string): Promise<KubeObject | undefined> {
    const r = await this.request('GET', path);
    if (r.status === 404) return undefined;
    if (r.status >= 200 && r.status < 300) return r.body as KubeObject;
    throw new ApiError(r.status, r.body?.reason ?? String(r.status), r.body?.message ?? String(r.body).slice(0, 500), r.body);
  }

  private groupVersionPath(apiVersion: string): string {
    return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  }

  private fetchResources(apiVersion: string): Promise<Map<string, Resource> | undefined> {
    return this.request('GET', this.groupVersionPath(apiVersion)).then((r) => {
      if (r.status === 404) return undefined;
      if (r.status !== 200) throw new ApiError(r.status, r.body?.reason ?? '', `discovery of ${apiVersion}: ${r.body?.message ?? r.status}`, r.body);
      const out = new Map<string, Resource>();
      for (const res of (r.body.resources ?? []) as { name: string; kind: string; namespaced: boolean }[]) {
        if (!res.name.includes('/')) out.set(res.kind, { plural: res.name, namespaced: res.namespaced });
      }
      return out;
    });
  }

  /** The resource of a kind, or undefined when the server does not serve it (discovery read again once on a miss). */
  async resource(apiVersion: string, kind: string): Promise<Resource | undefined> {
    let known = this.discovery.get(apiVersion);
    if (known) {
      const hit = (await known.catch(() => undefined))?.get(kind);
      if (hit) return hit;
    }
    known = this.fetchResources(apiVersion);
    this.discovery.set(apiVersion, known);
    return (await known)?.get(kind);
  }

  /**
   * Every kind the server serves now, by `apiVersion/Kind` (discovery of every group version; an aggregated API
   * whose service does not answer, 503, serves nothing).
   */
  async servedKinds(): Promise<Map<string, Resource>> {
    const groups = await this.call('GET', '/apis') as { groups: { versions: { groupVersion: string }[] }[] };
    const versions = ['v1', ...groups.groups.flatMap((g) => g.versions.map((v) => v.groupVersion))];
    const out = new Map<string, Resource>();
    await Promise.all(versions.map(async (v) => {
      this.discovery.delete(v);
      let resources: Map<string, Resource> | undefined;
      try {
        resources = await this.resourcesOf(v);
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 503) throw e;
        this.discovery.delete(v);
      }
      for (const [kind, res] of resources ?? []) out.set(`${v}/${kind}`, res);
    }));
    return out;
  }

  private resourcesOf(apiVersion: string): Promise<Map<string, Resource> | undefined> {
    let known = this.discovery.get(apiVersion);
    if (!known) {
      known = this.fetchResources(apiVersion);
      this.discovery.set(apiVersion, known);
    }
    return known;
  }

  /** The path of an object (`/apis/g/v/namespaces/ns/plural/name`), or of its collection. */
  async pathOf(o: KubeObject, collection = false): Promise<string> {
    const res = await this.resource(o.apiVersion, o.kind);
    if (!res) throw new ApiError(404, 'NotFound', `the server does not serve ${o.apiVersion} ${o.kind}`, undefined);
    const ns = o.metadata.namespace;
    if (res.namespaced && !ns) throw new Error(`${describe(o)}: a namespaced kind without metadata.namespace`);
    const base = `${this.groupVersionPath(o.apiVersion)}${res.namespaced ? `/namespaces/${encodeURIComponent(ns!)}` : ''}/${res.plural}`;
    return collection ? base : `${base}/${encodeURIComponent(o.metadata.name)}`;
  }

  /** Server-side apply of an object as it is; answers the object the server keeps (or would keep, on a dry run). */
  async apply(o: KubeObject, opts: ApplyOptions = {}): Promise<KubeObject> {
    return this.call('PATCH', await this.pathOf(o), {
      body: o,
      contentType: 'application/apply-patch+yaml',
      query: {
        fieldManager: opts.fieldManager ?? 'argocd-controller',
        force: String(opts.force ?? true),
        fieldValidation: opts.fieldValidation ?? 'Strict',
        ...(opts.dryRun ? { dryRun: 'All' } : {}),
      },
    }) as Promise<KubeObject>;
  }

  /** POST of a new object. */
  async create(o: KubeObject): Promise<KubeObject> {
    return this.call('POST', await this.pathOf(o, true), { body: o }) as Promise<KubeObject>;
  }

  /** The live object, or undefined when there is none. */
  async read(o: KubeObject): Promise<KubeObject | undefined> {
    return this.get(await this.pathOf(o));
  }

  /**
   * Deletes an object (foreground by default: its dependents first); false when there was none. Background: at once,
   * whatever the garbage collector knows of its kind (it discovers a new CRD's kinds only at its next resync).
   */
  async delete(o: KubeObject, propagationPolicy: 'Foreground' | 'Background' = 'Foreground'): Promise<boolean> {
    const r = await this.request('DELETE', await this.pathOf(o), { body: { propagationPolicy } });
    if (r.status === 404) return false;
    if (r.status >= 200 && r.status < 300) return true;
    throw new ApiError(r.status, r.body?.reason ?? '', r.body?.message ?? String(r.status), r.body);
  }

  /** Items of a collection path (`/api/v1/nodes`), every page. */
  async list(path: string): Promise<KubeObject[]> {
    return (await this.listAt(path)).items;
  }

  /** Items of a collection path, every page, and the resourceVersion of the list (where a watch of it starts). */
  async listAt(path: string): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const out: KubeObject[] = [];
    let token: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.call('GET', path, { query: { limit: '500', ...(token ? { continue: token } : {}) } }) as { apiVersion?: string; kind?: string; items: KubeObject[]; metadata?: { continue?: string } };
      // a list's items carry no apiVersion and kind of their own: the list's
      const kind = page.kind?.replace(/List$/, '');
      out.push(...page.items.map((i) => ({ ...i, apiVersion: i.apiVersion ?? page.apiVersion ?? '', kind: i.kind ?? kind ?? '' })));
      token = page.metadata?.continue || undefined;
      resourceVersion = (page.metadata as { resourceVersion?: string } | undefined)?.resourceVersion ?? resourceVersion;
    } while (token);
    return { items: out, resourceVersion };
  }

  /**
   * A watch stream of a collection path (`?watch=1`, with bookmarks): each event as it arrives, until the server ends
   * it, the version is gone (410) or it fails. On a connection of its own (list-watch.ts keeps one open per kind).
   */
  watch(path: string, opts: WatchOptions): WatchHandle {
    const timeoutSeconds = opts.timeoutSeconds ?? 300;
    const url = new URL(path, this.server);
    url.searchParams.set('watch', '1');
    url.searchParams.set('allowWatchBookmarks', 'true');
    url.searchParams.set('timeoutSeconds', String(timeoutSeconds));
    if (opts.resourceVersion) url.searchParams.set('resourceVersion', opts.resourceVersion);
    this.watchAgent ??= new https.Agent({ ...this.agent.options, keepAlive: false, maxSockets: Infinity });
    let settle!: (end: WatchEnd) => void;
    let ended = false;
    const done = new Promise<WatchEnd>((resolve) => {
      settle = (end) => {
        if (ended) return;
        ended = true;
        resolve(end);
      };
    });
    const req = https.request(url, {
      method: 'GET',
      agent: this.watchAgent,
      headers: this.headers(),
      // bookmarks come about once a minute: a stream silent for longer than its own timeout is a lost connection
      timeout: (timeoutSeconds + 60) * 1000,
    }, (res) => {
      if (res.statusCode !== 200) {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: { reason?: string; message?: string } = {};
          try {
            body = JSON.parse(text) as typeof body;
          } catch {
            // not JSON
          }
          if (res.statusCode === 410) settle({ reason: 'gone' });
          else settle({ reason: 'error', error: new ApiError(res.statusCode ?? 0, body.reason ?? String(res.statusCode), `watch of ${path}: ${body.message ?? text.slice(0, 500)}`, body) });
        });
        res.on('error', (e) => settle({ reason: 'error', error: e }));
        return;
      }
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        for (let nl = pending.indexOf('\n'); nl >= 0 && !ended; nl = pending.indexOf('\n')) {
          const line = pending.slice(0, nl).trim();
          pending = pending.slice(nl + 1);
          if (line === '') continue;
          let e: WatchEvent;
          try {
            e = JSON.parse(line) as WatchEvent;
          } catch {
            settle({ reason: 'error', error: new Error(`watch of ${path}: not a watch event: ${line.slice(0, 200)}`) });
            req.destroy();
            return;
          }
          if (e.type === 'ERROR') {
            const status = e.object as unknown as { code?: number; reason?: string; message?: string };
            settle(status.code === 410 ? { reason: 'gone' } : { reason: 'error', error: new ApiError(status.code ?? 0, status.reason ?? '', `watch of ${path}: ${status.message ?? line.slice(0, 200)}`, status) });
            req.destroy();
            return;
          }
          try {
            opts.onEvent(e);
          } catch (err) {
            // a receiver that throws ends the stream as a failure (its list-and-watch lists again), never the process
            settle({ reason: 'error', error: new Error(`watch of ${path}: the receiver of an event failed: ${(err as Error).message}`) });
            req.destroy();
            return;
          }
        }
      });
      res.on('end', () => settle({ reason: 'closed' }));
      res.on('close', () => settle({ reason: 'closed' }));
      res.on('error', (e) => settle({ reason: 'error', error: e }));
    });
    req.on('timeout', () => req.destroy(new Error(`watch of ${path}: silent for ${timeoutSeconds + 60} s`)));
    req.on('error', (e) => settle({ reason: 'error', error: e }));
    req.end();
    return {
      done,
      close: () => {
        settle({ reason: 'closed' });
        req.destroy();
      },
    };
  }
}
