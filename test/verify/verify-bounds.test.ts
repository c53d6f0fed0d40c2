import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli';
import { InputError } from '../../src/errors';
import { LiveSession } from '../../src/preflight/live';
import { listPath } from '../../src/preflight/reads';
import { Manifest } from '../../src/render/manifest';
import { RenderedSource } from '../../src/upstream/render';
import { verifyCluster } from '../../src/verify/dry-run';
import { renderedFixtures, runCliInProcess } from '../helpers';
import { REFERENCE_FILE } from '../paths';
import { kubeconfigFor } from '../preflight/api-server';

/*
 * verify against servers that are no API server, or answer slowly, and against names that would climb a request path
 * (issue 52, hostile input round five, 12): /version must be an API server's, --timeout bounds the run's sessions
 * together (the question asked before the renders and the dry run after them), and every segment of a request path
 * that comes from the server or a file is encoded and never "", "." or "..".
 */

let dir: string;
const servers: Server[] = [];
beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'verify-bounds-')); });
afterAll(() => {
  for (const s of servers) s.closeAllConnections();
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function kubeconfig(name: string, url: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, kubeconfigFor(url));
  return file;
}

const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const VERSION = { major: '1', minor: '31', gitVersion: 'v1.31.4' };

describe('verify asks /version first, and refuses a server that answers as no API server does', () => {
  it.each([
    ['404 (a web server, a proxy with a path)', (res: ServerResponse) => json(res, 404, { kind: 'Status', code: 404 }), /GET \/version answers HTTP 404, as no Kubernetes API server does/],
    ['an empty JSON object', (res: ServerResponse) => json(res, 200, {}), /GET \/version answers no Kubernetes version \(gitVersion, major, minor\), as no Kubernetes API server does/],
    ['a version that is none', (res: ServerResponse) => json(res, 200, { ...VERSION, gitVersion: 'hello' }), /answers no Kubernetes version/],
    ['a list', (res: ServerResponse) => json(res, 200, [VERSION]), /answers no Kubernetes version/],
    ['an HTML page', (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hi</html>'), /the answer to GET \/version is not JSON/],
  ])('%s: exit 2, one line, nothing rendered', async (_, answer, says) => {
    const url = await serve((_req, res) => answer(res));
    const r = await runCliInProcess(['verify', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig('version', url), '--timeout', '30'], { cwd: dir });
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(says)]);
    expect(r.stdout).toBe('');
  }, 60_000);
});

describe('--timeout bounds verify\'s live sessions together, not each', () => {
  it('the dry run gets what the question before the renders left of it', async () => {
    // a rendered cluster of one Application (a folder the engines build at once): the renders take no time to speak of
    const tree = path.join(dir, 'small', 'instant-cluster');
    const from = path.join(renderedFixtures(), 'instant-cluster');
    mkdirSync(path.join(tree, 'gitops'), { recursive: true });
    cpSync(path.join(from, 'storage'), path.join(tree, 'storage'), { recursive: true });
    for (const f of ['application.argocd.instant-cluster-storage.yaml', 'appproject.argocd.instant-cluster.yaml']) cpSync(path.join(from, 'gitops', f), path.join(tree, 'gitops', f));
    // /version answers after 2.5 s of the 4; every request after it is never answered
    let hung: number | undefined;
    let ended: number | undefined;
    const url = await serve((req, res) => {
      if (req.url === '/version') {
        setTimeout(() => json(res, 200, VERSION), 2500);
        return;
      }
      hung ??= performance.now();
      req.on('close', () => { ended ??= performance.now(); });
    });
    const r = await runCliInProcess(['verify', tree, '--kubeconfig', kubeconfig('slow', url), '--timeout', '4'], { cwd: dir });
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/^error: http:\/\/127\.0\.0\.1:\d+: no answer within 4 s \(--timeout\) while waiting for the answer to GET /);
    expect(hung).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // the second session had the 1.5 s left (and a grace for a busy machine), never the whole 4 s again
    expect(ended! - hung!).toBeLessThan(3000);
  }, 120_000);
});

/** A live session of the test's own: it serves `served` (apiVersion -> kind -> plural) and records every request path. */
function fakeSession(served: Record<string, Record<string, string>>, paths: string[]): LiveSession {
  return {
    server: 'https://fake:6443',
    user: 'admin',
    where: '--kubeconfig fake',
    get: async (p) => {
      paths.push(p);
      const v = /^\/apis?\/(.+)$/.exec(p)?.[1];
      const kinds = v === undefined ? undefined : served[v];
      return kinds && { resources: Object.entries(kinds).map(([kind, name]) => ({ kind, name, namespaced: true })) };
    },
    request: async (method, p) => {
      paths.push(`${method} ${p}`);
      return method === 'GET' ? { status: 404, body: { kind: 'Status', code: 404 } } : { status: 200, body: {} };
    },
    list: async () => [],
    close: () => {},
  };
}

/** One folder source of an Application holding `objects`. */
function sourceOf(objects: Manifest[]): RenderedSource {
  const application: Manifest = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'probe', namespace: 'argocd' },
    spec: { source: { path: 'dist/lab/probe' }, destination: { namespace: 'probe' } },
  };
  return { application, index: 0, type: 'folder', what: 'folder dist/lab/probe', namespace: 'probe', objects, unrenderedCrds: [] };
}

const configMap = (name: string, namespace = 'probe'): Manifest => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } });

describe('verify encodes every segment of a request path from the server or a file, and refuses one that would climb it', () => {
  const view = { name: 'lab', folders: [] };

  it('names with "/", "?", "#" and "%" stay in their segment', async () => {
    const paths: string[] = [];
    await verifyCluster(view, [sourceOf([configMap('a/b?c#d%e'), configMap('plain', 'ns/x')])], fakeSession({ v1: { ConfigMap: 'configmaps' } }, paths));
    expect(paths).toContain('GET /api/v1/namespaces/probe/configmaps/a%2Fb%3Fc%23d%25e');
    expect(paths).toContain('GET /api/v1/namespaces/ns%2Fx/configmaps/plain');
  });

  it.each([
    ['a name ".." (the namespace itself)', [configMap('..')], { v1: { ConfigMap: 'configmaps' } }, /ConfigMap probe\/\.\.: its name "\.\." cannot be part of a request path/],
    ['a namespace "."', [configMap('x', '.')], { v1: { ConfigMap: 'configmaps' } }, /its namespace "\." cannot be part of a request path/],
    ['an apiVersion that climbs', [{ ...configMap('x'), apiVersion: '../v1' }], { v1: { ConfigMap: 'configmaps' } }, /the apiVersion's group "\.\." cannot be part of a request path/],
    ['an apiVersion of three segments', [{ ...configMap('x'), apiVersion: 'a/b/c' }], {}, /apiVersion "a\/b\/c" is no GROUP\/VERSION/],
    ['a resource name ".." from the server', [configMap('x')], { v1: { ConfigMap: '..' } }, /the server's resource name of ConfigMap "\.\." cannot be part of a request path/],
  ])('%s: refused before a request is sent', async (_, objects, served, says) => {
    const paths: string[] = [];
    const run = verifyCluster(view, [sourceOf(objects as Manifest[])], fakeSession(served, paths));
    await expect(run).rejects.toThrow(InputError);
    await expect(run).rejects.toThrow(says);
    // discovery aside, nothing was sent
    expect(paths.filter((p) => / /.test(p))).toEqual([]);
  });
});

describe('the live reads of preflight and init encode the CRD names the server gives', () => {
  const read = { group: 'kueue.x-k8s.io', version: 'v1beta2', kind: 'ClusterQueue', namespaced: false };

  it('a plural that would climb to the Secrets stays one segment', () => {
    expect(listPath({ ...read, plural: '../../../api/v1/secrets' })).toBe('/apis/kueue.x-k8s.io/v1beta2/..%2F..%2F..%2Fapi%2Fv1%2Fsecrets');
    expect(listPath({ ...read, plural: 'clusterqueues' })).toBe('/apis/kueue.x-k8s.io/v1beta2/clusterqueues');
  });

  it.each(['..', '.', ''])('a plural or group %j is refused', (name) => {
    expect(() => listPath({ ...read, plural: name })).toThrow(/the plural of ClusterQueue .* cannot be part of a request path/);
    // (an empty group is the core API's: /api/VERSION)
    if (name !== '') expect(() => listPath({ ...read, group: name, plural: 'x' })).toThrow(/the group of ClusterQueue/);
  });
});
