import { setMaxListeners } from 'node:events';
import * as http from 'node:http';
import * as https from 'node:https';
import { loadKubeConfig, LoadedKubeConfig } from './kubeconfig';
import { asStateObject, nodeLimitExceeded } from './objects';
import { crdFacts, listItems, listPath, listReads, ListRead, BUILT_IN_RESOURCES } from './reads';
import { ClusterState } from './state';
import { InputError, maskCredentials, printable } from '../errors';
import { formatMiB, INPUT_LIMITS, maxBytes } from '../input/limits';
import { asInputError, checkNesting } from '../input/read';
import { isJsonObject } from '../json';
import { Manifest } from '../render/manifest';

export interface LiveOptions {
  /** Kubeconfig file; default: $KUBECONFIG or ~/.kube/config (as kubectl). */
  readonly kubeconfig?: string;
  /** Context of the kubeconfig; default: its current context. */
  readonly context?: string;
  /**
   * Milliseconds the whole read may take once the kubeconfig is loaded: the exec credential plugin,
   * connecting, TLS, every request and every byte of every answer.
   */
  readonly timeoutMs: number;
  /** Nodes the cluster may have (counted page by page: a larger one is refused, not read to the end); default: no bound. */
  readonly maxNodes?: number;
  /**
   * The clock of a command's whole live run when it opens more than one session (verify asks the server first, renders,
   * then sends): each session gets what is left of timeoutMs, so the sessions together stay within it.
   * @default none: the session alone has timeoutMs
   */
  readonly clock?: LiveClock;
}

/** The time a command's live sessions have spent of its --timeout, together (LiveOptions.clock). */
export class LiveClock {
  private spentMs = 0;

  constructor(readonly totalMs: number) {}

  /** Milliseconds left for the next session. */
  get leftMs(): number {
    return Math.max(0, this.totalMs - this.spentMs);
  }

  /** Records the time a session took. */
  spend(ms: number): void {
    this.spentMs += ms;
  }
}

/** Items per list call (as kubectl's --chunk-size): a large cluster is read in pages, each answer stays small. */
const PAGE_SIZE = 500;

/** Status bodies kept for a message (the answer to a failed request may be anything). */
const MAX_ERROR_BODY = 64 * 1024;

/** One deadline for the whole read: it aborts every request and stops the exec plugins when it passes. */
class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;

  /** @param ms the bound messages name (--timeout); @param leftMs what is left of it (less, after earlier sessions of the run) */
  constructor(readonly ms: number, onExpiry: () => void, leftMs = ms) {
    // every request in flight listens to it (about 20 lists read at once): no leak warning on stderr
    setMaxListeners(0, this.controller.signal);
    this.timer = setTimeout(() => {
      onExpiry();
      this.controller.abort();
    }, leftMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get expired(): boolean {
    return this.controller.signal.aborted;
  }

  /** `p`, or the error of `onExpiry` once the deadline passed (whichever comes first). */
  race<T>(p: Promise<T>, onExpiry: () => Error): Promise<T> {
    if (this.expired) return Promise.reject(onExpiry());
    return new Promise<T>((resolve, reject) => {
      const expire = () => reject(onExpiry());
      this.signal.addEventListener('abort', expire, { once: true });
      p.then(resolve, reject).finally(() => this.signal.removeEventListener('abort', expire));
    });
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** What a live read shares: the config, the request options, the deadline, the bytes left to read. */
interface Reader {
  readonly config: LoadedKubeConfig;
  readonly request: https.RequestOptions;
  readonly deadline: Deadline;
  readonly maxNodes: number;
  bytesLeft: number;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** Where a request is, and what to check when the deadline passes there. */
interface Phase {
  readonly doing: string;
  readonly check: string;
}

const CONNECTING = (host: string): Phase => ({ doing: `connecting to ${host}`, check: 'check that the address is reachable from here (firewall, VPN)' });
const HANDSHAKE = (host: string): Phase => ({ doing: `in the TLS handshake with ${host}`, check: 'the server accepted the connection but did not complete TLS: check that the address and port are the API server\'s' });
const ANSWERING = (doing: string): Phase => ({ doing, check: 'the server took the request but did not answer in full: is it an API server, and is it overloaded?' });

/** The deadline passed: where the read was, and what to do. */
function timedOut(r: Pick<Reader, 'config' | 'deadline'>, phase: Phase): InputError {
  return new InputError(`${r.config.server}: no answer within ${seconds(r.deadline.ms)} (--timeout) while ${phase.doing}: ${phase.check}; `
    + 'or raise --timeout SECONDS for a slow link');
}

/** Credentials for the requests: the client applies the kubeconfig's certificates, token or exec plugin. */
async function authenticate(config: LoadedKubeConfig, deadline: Deadline): Promise<https.RequestOptions> {
  const opts: https.RequestOptions = {};
  const plugin = () => config.plugins.runs[config.plugins.runs.length - 1];
  try {
    await deadline.race(config.kc.applyToHTTPSOptions(opts), () => timedOut({ config, deadline }, plugin()
      ? {
        doing: `waiting for the exec credential plugin "${printable(plugin().command)}" of user "${printable(config.user)}"`,
        check: `run it yourself (${printable([plugin().command, ...plugin().args].join(' '))}): does it wait for a login or for input?`,
      }
      : { doing: 'authenticating', check: `check users[].user in ${config.where}` }));
  } catch (e) {
    if (e instanceof InputError) throw e;
    const message = (e as Error).message ?? '';
    if (/HTTP protocol is not allowed/.test(message)) {
      throw new InputError(`${config.server}: a plain http:// address, which the client reads only with insecure-skip-tls-verify: true on the cluster `
        + `(kubectl proxy); use the API server's https:// address in ${config.where}`);
    }
    throw new InputError(`${config.server}: ${config.plugins.explain(e as Error, config.user, config.where)}`);
  }
  return opts;
}

/** TLS errors of a server certificate the kubeconfig's CA does not vouch for. */
const UNTRUSTED = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ALTNAME|HOSTNAME|ISSUER/;

/** Why a request failed (not an HTTP status), and what to do. */
function requestProblem(e: NodeJS.ErrnoException, r: Reader, phase: Phase): string {
  const code = e.code ?? '';
  const where = r.config.where;
  if (code === 'ECONNREFUSED') return `connection refused: is the API server up, and are the address and port in ${where} right? (kubectl cluster-info)`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `the host name is not known (DNS, ${code}): check clusters[].cluster.server in ${where}`;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `no route to the host (${code}): check the network or VPN`;
  if (/wrong version number|packet length too long|unknown protocol|WRONG_VERSION/i.test(`${code} ${e.message}`)) {
    return `the server does not speak TLS at this address: check the scheme (https://) and the port in ${where}`;
  }
  if (UNTRUSTED.test(code)) {
    return `the server's certificate is not trusted (${code}): give the cluster's CA as certificate-authority-data in ${where} (kubectl config view --raw --minify shows it)`;
  }
  if (code.startsWith('HPE_')) return `the answer is not HTTP (${code}; a TLS port behind an http:// address?): check the scheme and the port in ${where}`;
  if (code === 'ECONNRESET' || /socket hang up/.test(e.message)) return `the server closed the connection while ${phase.doing}: is this an API server? check the address and port in ${where}`;
  return `${printable(e.message.split('\n')[0])}${code ? ` (${code})` : ''} while ${phase.doing}: check the cluster entry in ${where}`;
}

/** The message of an API server's Status answer, or the start of whatever it answered. */
function statusMessage(body: string): string {
  try {
    const s = JSON.parse(body) as { message?: unknown };
    if (typeof s.message === 'string') return printable(s.message.slice(0, 300));
  } catch {
    // not a Status: its start
  }
  return printable(body.slice(0, 200).replace(/\s+/g, ' ').trim());
}

/** Why an HTTP status is not an answer, and what to do. */
function statusProblem(status: number, path: string, body: string, r: Reader): string {
  const user = printable(r.config.user);
  const said = statusMessage(body);
  const detail = said ? ` (${said})` : '';
  if (status === 401) return `HTTP 401: the server refuses the credentials of user "${user}"${detail}: log in again so that ${r.config.where} holds valid ones`;
  if (status === 403) return `HTTP 403 for GET ${path}: user "${user}" may not list it${detail}; preflight and init need get and list on it (kubectl auth can-i list ...), or use --snapshot FILE`;
  if (status === 410) return `HTTP 410 for GET ${path}: the list changed while it was read in pages; run again`;
  return `HTTP ${status} for GET ${path}${detail}: the API server failed; run again, or see its logs`;
}

/** An answer of the API server: its status, its body as text (at most MAX_ERROR_BODY of it unless 2xx), the texts of its Warning headers. */
export interface LiveAnswer {
  readonly status: number;
  readonly text: string;
  readonly warnings: readonly string[];
}

/** The most Warning headers of one answer that are kept (the API server sends one per unknown field, deprecation, ...). */
const MAX_WARNINGS = 50;

/**
 * The texts of the Warning headers of an answer (`299 - "unknown field \"spec.x\""`, RFC 7234): what the API server
 * says of a request it accepts (an unknown or duplicate field under fieldValidation=Warn, a deprecated API), as
 * kubectl prints them; a header of another form as it is.
 */
export function serverWarnings(rawHeaders: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length && out.length < MAX_WARNINGS; i += 2) {
    if (rawHeaders[i].toLowerCase() !== 'warning') continue;
    const m = /^\d{3} \S+ "((?:[^"\\]|\\.)*)"/.exec(rawHeaders[i + 1]);
    out.push(m ? m[1].replace(/\\(.)/g, '$1') : rawHeaders[i + 1]);
  }
  return out;
}

/** A request's body: JSON text and its content type. */
export interface LiveBody {
  readonly text: string;
  readonly contentType: string;
}

/**
 * One request, bounded by the read's deadline and byte budget: its status and body. Connecting, TLS and transport
 * failures are bad input saying what to do; a status is the caller's to judge.
 */
function send(r: Reader, method: string, path: string, body?: LiveBody): Promise<LiveAnswer> {
  const { server } = r.config;
  const url = new URL(r.config.url.replace(/\/+$/, '') + path);
  const lib = url.protocol === 'http:' ? http : https;
  const request = `${method} ${path}`;
  return new Promise((resolve, reject) => {
    let phase = CONNECTING(url.host);
    const fail = (e: Error) => reject(r.deadline.expired ? timedOut(r, phase)
      : e instanceof InputError ? e : new InputError(`${server}: ${requestProblem(e as NodeJS.ErrnoException, r, phase)}`));
    const headers = {
      ...r.request.headers,
      Accept: 'application/json',
      ...(body ? { 'Content-Type': body.contentType, 'Content-Length': Buffer.byteLength(body.text) } : {}),
    };
    let req: http.ClientRequest;
    try {
      req = lib.request(url, { ...r.request, method, headers, signal: r.deadline.signal }, answer);
    } catch (e) {
      // what the client made of the credentials cannot be sent (an exec plugin's token with a line break)
      reject(new InputError(`${server}: the credentials of user "${printable(r.config.user)}" cannot be sent `
        + `(${printable((e as Error).message.split('\n')[0])}): check users[].user in ${r.config.where}`));
      return;
    }
    function answer(res: http.IncomingMessage): void {
      const status = res.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      const chunks: Buffer[] = [];
      let bytes = 0;
      phase = ANSWERING(`reading the answer to ${request}`);
      const tooBig = () => new InputError(`${server}: the answers passed ${formatMiB(maxBytes('snapshot'))} in all (the limit of a cluster state: `
        + `${INPUT_LIMITS.snapshot.env}=<MiB> raises it), at ${request}`);
      if (Number(res.headers['content-length']) > r.bytesLeft) {
        req.destroy(tooBig());
        return;
      }
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        r.bytesLeft -= c.length;
        phase = ANSWERING(`reading the answer to ${request} (${bytes} bytes so far)`);
        if (r.bytesLeft < 0) req.destroy(tooBig());
        else if (ok || bytes <= MAX_ERROR_BODY) chunks.push(c);
      });
      res.on('error', fail);
      // an answer that is no success is read for its message: a secret it echoes (the token refused) is masked
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const warnings = serverWarnings(res.rawHeaders).map((w) => printable(maskCredentials(w, secretsOf(r)).slice(0, MAX_ERROR_BODY)));
        resolve({ status, text: ok ? text : maskCredentials(text, secretsOf(r)), warnings });
      });
    }
    req.on('socket', (s) => {
      const tls = url.protocol === 'https:';
      const waiting = () => { phase = ANSWERING(`waiting for the answer to ${request}`); };
      if (!s.connecting) return waiting();
      s.once('connect', () => (tls ? (phase = HANDSHAKE(url.host)) : waiting()));
      if (tls) s.once('secureConnect', waiting);
    });
    req.on('error', fail);
    req.end(body?.text);
  });
}

/** The secrets an answer may echo: the kubeconfig's (token, password, the server's user-info), and what the client sends (an exec plugin's token). */
function secretsOf(r: Reader): string[] {
  const headers = r.request.headers as http.OutgoingHttpHeaders | undefined;
  const sent = String(headers?.Authorization ?? headers?.authorization ?? '');
  const credential = /^(?:Bearer|Basic)\s+(.+)$/i.exec(sent)?.[1];
  const basic = /^Basic\s/i.test(sent) && credential ? Buffer.from(credential, 'base64').toString('utf8').split(':').slice(1).join(':') : undefined;
  return [...r.config.secrets, ...[credential, basic].filter((x): x is string => x !== undefined && x.length >= 4)];
}

/** API groups every Kubernetes API server serves (the core API, CRDs): a 404 for one of their lists means no cluster answers. */
const ALWAYS_SERVED: ReadonlySet<string> = new Set(['', 'apiextensions.k8s.io']);

/** The JSON of an answer (whose body is an API server's), or bad input saying it is none. */
function parseAnswer(r: Reader, request: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const why = e instanceof RangeError ? 'nested too deeply to parse' : 'not JSON';
    throw new InputError(`${r.config.server}: the answer to ${request} is ${why}: is this a Kubernetes API server? check the address in ${r.config.where}`);
  }
}

/** One GET: the parsed JSON answer, or undefined on 404 (the resource is not served). */
async function getJson(r: Reader, path: string): Promise<unknown> {
  const { status, text } = await send(r, 'GET', path);
  if (status === 404) return undefined;
  if (status !== 200) throw new InputError(`${r.config.server}: ${statusProblem(status, path, text, r)}`);
  return parseAnswer(r, `GET ${path}`, text);
}

/** Every item of a list call, page by page, as checked state objects. */
async function getList(r: Reader, read: ListRead): Promise<Manifest[]> {
  const out: Manifest[] = [];
  let next: string | undefined;
  do {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...(next ? { continue: next } : {}) });
    const path = `${listPath(read)}?${query}`;
    const body = await getJson(r, path);
    const where = `${r.config.server}: GET ${path}`;
    if (body === undefined) {
      // every Kubernetes API server serves the core API and CRDs: without them nothing preflight reads is there
      if (!ALWAYS_SERVED.has(read.group)) return out;
      throw new InputError(`${where}: HTTP 404 (not found), which no Kubernetes API server answers to this list: is the address in ${r.config.where} `
        + 'the API server\'s (no path after the port, not a proxy or a web server)? The cluster cannot be read');
    }
    if (!isJsonObject(body) || !Array.isArray(body.items)) throw new InputError(`${where}: the answer is not a list (no items): is this a Kubernetes API server?`);
    // a list of another kind is no answer to this one (a CRD may name its list kind as it likes: a list all the same)
    const builtIn = BUILT_IN_RESOURCES.some((b) => b.group === read.group && b.kind === read.kind);
    if (typeof body.kind === 'string' && (builtIn ? body.kind !== `${read.kind}List` : !body.kind.endsWith('List'))) {
      throw new InputError(`${where}: the answer is a ${printable(body.kind.slice(0, 100))}, not a ${read.kind}List: is this a Kubernetes API server? The cluster cannot be read`);
    }
    asInputError(where, () => checkNesting(where, body, 'snapshot'));
    listItems(read, body).forEach((o, i) => out.push(asStateObject(o, `${where}: items[${i}]`)));
    // counted page by page: a larger cluster is not read to the end
    if (read.group === '' && read.kind === 'Node' && out.length > r.maxNodes) throw nodeLimitExceeded(r.config.server, r.maxNodes);
    const cont = isJsonObject(body.metadata) ? body.metadata.continue : undefined;
    next = typeof cont === 'string' && cont !== '' ? cont : undefined;
  } while (next);
  return out;
}

/** What LiveSession.request answers: the status, the body parsed when it is JSON (else the text), the Warning headers' texts. */
export interface LiveReply {
  readonly status: number;
  readonly body: unknown;
  readonly warnings?: readonly string[];
}

/**
 * A connection to a live API server: the kubeconfig loaded, its credentials applied, one deadline (--timeout) for
 * everything after loading the kubeconfig and one byte budget (the size limit of a cluster state) for all answers.
 * Every failure to reach the server is bad input saying what to do; close() ends it (the exec plugins stopped).
 */
export interface LiveSession {
  readonly server: string;
  readonly user: string;
  /** Where the kubeconfig came from (`--kubeconfig /x`). */
  readonly where: string;
  /** A GET's parsed answer, undefined on 404; any other status than 200 is bad input naming the path. */
  get(path: string): Promise<unknown>;
  /** A request whose status the caller judges: its status, its body parsed when it is JSON (else the text), its Warning headers' texts. */
  request(method: string, path: string, body?: LiveBody): Promise<LiveReply>;
  /** Every item of a list, page by page. */
  list(read: ListRead): Promise<Manifest[]>;
  close(): void;
}

/** Opens a live session (LiveSession); the caller closes it. */
export async function openLive(opts: LiveOptions): Promise<LiveSession> {
  const config = await loadKubeConfig(opts);
  const started = performance.now();
  const deadline = new Deadline(opts.timeoutMs, () => config.plugins.stopAll(`no credential within ${seconds(opts.timeoutMs)} (--timeout)`), opts.clock?.leftMs);
  let agent: http.Agent | undefined;
  let closed = false;
  const close = () => {
    if (!closed) opts.clock?.spend(performance.now() - started);
    closed = true;
    deadline.clear();
    config.plugins.stopAll('the read ended');
    agent?.destroy();
  };
  try {
    const request = await authenticate(config, deadline);
    agent = request.agent instanceof http.Agent ? request.agent : undefined;
    const r: Reader = { config, request, deadline, maxNodes: opts.maxNodes ?? Infinity, bytesLeft: maxBytes('snapshot') };
    return {
      server: config.server,
      user: config.user,
      where: config.where,
      get: (path) => getJson(r, path),
      request: async (method, path, body) => {
        const answer = await send(r, method, path, body);
        let parsed: unknown = answer.text;
        try {
          parsed = JSON.parse(answer.text);
        } catch {
          // not JSON: the text
        }
        return { status: answer.status, body: parsed, warnings: answer.warnings };
      },
      list: (read) => getList(r, read),
      close,
    };
  } catch (e) {
    close();
    throw e;
  }
}

/**
 * Reads the cluster live, read-only (GET list calls only): nodes, CRDs, StorageClasses,
 * PriorityClasses, Services, the Kueue queues and configuration, the operator singletons, and every
 * kind the render contains. Bounded: --timeout for everything after loading the kubeconfig, the size
 * limit of a cluster state for all answers together; every failure is bad input saying what to do.
 */
export async function readLive(opts: LiveOptions, rendered: readonly Manifest[]): Promise<ClusterState> {
  const session = await openLive(opts);
  try {
    const crdRead = BUILT_IN_RESOURCES.find((b) => b.kind === 'CustomResourceDefinition')!;
    const crds = await session.list(crdRead);
    const reads = listReads(crds, rendered).filter((x) => x.kind !== 'CustomResourceDefinition');
    const lists = await Promise.all(reads.map((x) => session.list(x)));
    return new ClusterState(session.server, [...crds.filter((c) => crdFacts(c) !== undefined), ...lists.flat()], true);
  } finally {
    session.close();
  }
}
