import * as http from 'node:http';
import * as https from 'node:https';
import { crdFacts, listItems, listPath, listReads, ListRead, BUILT_IN_RESOURCES } from './reads';
import { ClusterState } from './state';
import { InputError } from '../errors';
import { Manifest } from '../render/manifest';

export interface LiveOptions {
  /** Kubeconfig file; default: $KUBECONFIG or ~/.kube/config (as kubectl). */
  readonly kubeconfig?: string;
  /** Context of the kubeconfig; default: its current context. */
  readonly context?: string;
  /** Milliseconds one request may take before the read gives up. */
  readonly timeoutMs: number;
}

/** Default time one API request may take. */
export const LIVE_TIMEOUT_MS = 10_000;

type KubeConfigLike = {
  getCurrentCluster(): { server: string } | null;
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
};

/** Loads the kubeconfig with the official client (contexts, certificates, tokens, exec plugins). */
async function loadKubeConfig(opts: LiveOptions): Promise<KubeConfigLike> {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const where = opts.kubeconfig ?? 'the default kubeconfig';
  try {
    if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
    else kc.loadFromDefault();
  } catch (e) {
    throw new InputError(`--kubeconfig ${where}: cannot load (${(e as Error).message.split('\n')[0]})`);
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context)) throw new InputError(`--context ${opts.context}: no such context in ${where}`);
    kc.setCurrentContext(opts.context);
  }
  if (!kc.getCurrentCluster()) throw new InputError(`--kubeconfig ${where}: no cluster for context "${kc.getCurrentContext()}"`);
  return kc;
}

/** One GET: the parsed JSON body, or undefined on 404 (the resource is not served). */
async function getJson(kc: KubeConfigLike, server: string, path: string, timeoutMs: number): Promise<unknown> {
  const url = new URL(server.replace(/\/+$/, '') + path);
  const opts: https.RequestOptions = { method: 'GET', headers: { Accept: 'application/json' } };
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (e) {
    // e.g. an exec credential plugin that fails, or plain http without insecure-skip-tls-verify
    throw new InputError(`${server}: cannot authenticate: ${(e as Error).message.split('\n')[0]}`);
  }
  // The client prepares an https agent; plain http (kubectl proxy, tests) takes none.
  if (url.protocol === 'http:') delete opts.agent;
  const lib = url.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { ...opts, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 404) return resolve(undefined);
        if (res.statusCode !== 200) return reject(new InputError(`${server}: GET ${path}: HTTP ${res.statusCode} ${body.slice(0, 200).replace(/\s+/g, ' ')}`));
        try {
          resolve(JSON.parse(body));
        } catch {
          reject(new InputError(`${server}: GET ${path}: the answer is not JSON`));
        }
      });
      res.on('error', (e) => reject(new InputError(`${server}: GET ${path}: ${e.message}`)));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
    req.on('error', (e) => reject(e instanceof InputError ? e : new InputError(`cannot reach the API server ${server}: ${(e as NodeJS.ErrnoException).code ?? e.message}`)));
    req.end();
  });
}

/**
 * Reads the cluster live, read-only (GET list calls only): nodes, CRDs, StorageClasses,
 * PriorityClasses, Services, the Kueue queues and configuration, the operator singletons, and every
 * kind the render contains.
 */
export async function readLive(opts: LiveOptions, rendered: readonly Manifest[]): Promise<ClusterState> {
  const kc = await loadKubeConfig(opts);
  const server = kc.getCurrentCluster()!.server;
  const crdRead = BUILT_IN_RESOURCES.find((b) => b.kind === 'CustomResourceDefinition')!;
  const get = (r: ListRead) => getJson(kc, server, listPath(r), opts.timeoutMs).then((body) => (body === undefined ? [] : listItems(r, body)));
  const crds = await get(crdRead);
  const reads = listReads(crds, rendered).filter((r) => r.kind !== 'CustomResourceDefinition');
  const lists = await Promise.all(reads.map(get));
  return new ClusterState(server, [...crds.filter((c) => crdFacts(c) !== undefined), ...lists.flat()]);
}
