import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { BUILT_IN_RESOURCES, crdFacts } from '../../src/preflight/reads';
import { ClusterState } from '../../src/preflight/state';
import { apiGroup } from '../../src/render/manifest';

/** A read-only fake API server on 127.0.0.1 that answers list calls from a cluster state; records every request. */
export interface FakeApiServer {
  readonly url: string;
  readonly requests: { method: string; path: string; query: URLSearchParams; authorization?: string }[];
  close(): Promise<void>;
}

export async function serveState(state: ClusterState): Promise<FakeApiServer> {
  const resources = [
    ...BUILT_IN_RESOURCES.map((r) => ({ group: r.group, kind: r.kind, plural: r.plural })),
    ...state.list('apiextensions.k8s.io', 'CustomResourceDefinition').map(crdFacts).filter((f) => f !== undefined),
  ];
  const requests: FakeApiServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    requests.push({ method: req.method ?? '', path, query: url.searchParams, authorization: req.headers.authorization });
    // /api/v1[/namespaces/NS]/PLURAL or /apis/GROUP/VERSION[/namespaces/NS]/PLURAL
    const m = /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)$/.exec(path);
    const r = m && resources.find((x) => x.group === (m[1] ?? '') && x.plural === m[3]);
    if (req.method !== 'GET' || !m || !r) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
      return;
    }
    const items = state.objects
      .filter((o) => o.kind === r.kind && apiGroup(o.apiVersion) === r.group && (m[2] === undefined || o.metadata.namespace === m[2]))
      // list items carry no apiVersion/kind, as a real API server's lists
      .map(({ apiVersion: _v, kind: _k, ...rest }) => rest);
    // pages as the API server gives them: ?limit=N, then ?continue=<token> from metadata.continue
    const from = Number(url.searchParams.get('continue') ?? 0);
    const limit = Number(url.searchParams.get('limit') ?? 0) || items.length;
    const page = items.slice(from, from + limit);
    const metadata = from + limit < items.length ? { continue: String(from + limit) } : {};
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: `${r.kind}List`, apiVersion: 'v1', metadata, items: page }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A kubeconfig pointing at `server` with a bearer token. */
export function kubeconfigFor(server: string, token = 'preflight-test-token'): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    // the client speaks plain http (kubectl proxy, this test) only with TLS verification off
    `- name: test\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
    'users:',
    `- name: admin\n  user:\n    token: ${token}`,
    'contexts:',
    '- name: test\n  context:\n    cluster: test\n    user: admin',
    'current-context: test',
    '',
  ].join('\n');
}
