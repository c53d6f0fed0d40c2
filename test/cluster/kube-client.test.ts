import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createServer, Server, TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../src/twin/kube-client';

/*
 * The harness's client and a server that closes a kept-alive connection under it (what the API server's idle timeout
 * does on a busy machine, and what once failed Kueue's start with `write EPIPE`): the request is sent again on a new
 * connection. A server that drops a request on a new connection is an error at once (it was not a stale connection).
 * Its watch streams against a server that streams, ends, refuses and expires them as the API server does.
 */

const work = mkdtempSync(path.join(tmpdir(), 'kube-client-'));
let cert: Buffer;
let key: Buffer;

beforeAll(() => {
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-keyout', path.join(work, 'key.pem'), '-out', path.join(work, 'cert.pem')], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  cert = readFileSync(path.join(work, 'cert.pem'));
  key = readFileSync(path.join(work, 'key.pem'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A TLS server that answers `{}` to the requests `answer(connection, request)` allows and drops the connection on the others. */
async function server(answer: (connection: number, request: number) => boolean): Promise<{ server: Server; url: string; connections: () => number }> {
  let connections = 0;
  const s = createServer({ cert, key }, (socket: TLSSocket) => {
    const connection = ++connections;
    let request = 0;
    let pending = '';
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      pending += String(chunk);
      while (pending.includes('\r\n\r\n')) {
        pending = pending.slice(pending.indexOf('\r\n\r\n') + 4);
        if (!answer(connection, ++request)) {
          socket.destroy();
          return;
        }
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{}');
      }
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { server: s, url: `https://127.0.0.1:${(s.address() as AddressInfo).port}`, connections: () => connections };
}

describe('the cluster harness client', () => {
  it('sends a request again on a new connection when its kept-alive one was closed under it', async () => {
    // every connection answers its first request only
    const s = await server((_, request) => request === 1);
    const client = new KubeClient(s.url, cert, 'token');
    try {
      expect((await client.request('GET', '/version')).status).toBe(200);
      expect((await client.request('GET', '/version')).status).toBe(200);
      expect(s.connections()).toBe(2);
    } finally {
      client.close();
      s.server.close();
    }
  });

  it('a request dropped on a new connection is an error at once', async () => {
    const s = await server(() => false);
    const client = new KubeClient(s.url, cert, 'token');
    try {
      await expect(client.request('GET', '/version')).rejects.toThrow(/socket hang up|ECONNRESET/);
      expect(s.connections()).toBe(1);
    } finally {
      client.close();
      s.server.close();
    }
  });
});

describe('a watch stream (?watch=1)', () => {
  /** An HTTPS server that answers each watch with `reply(url, res)`. */
  async function watchServer(reply: (url: URL, res: import('node:http').ServerResponse) => void): Promise<{ server: import('node:https').Server; url: string; urls: URL[] }> {
    const urls: URL[] = [];
    const s = createHttpsServer({ cert, key }, (req, res) => {
      const url = new URL(req.url ?? '/', 'https://127.0.0.1');
      urls.push(url);
      reply(url, res);
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return { server: s, url: `https://127.0.0.1:${(s.address() as AddressInfo).port}`, urls };
  }
  const line = (type: string, name: string, rv: string) => `${JSON.stringify({ type, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, resourceVersion: rv } } })}\n`;

  it('tells each event as it arrives (a line split across chunks too), asks from the version given with bookmarks, and ends as closed when the server ends it', async () => {
    const s = await watchServer((_u, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const text = line('ADDED', 'a', '11') + line('BOOKMARK', '', '12') + line('MODIFIED', 'a', '13');
      res.write(text.slice(0, 30));
      setTimeout(() => {
        res.write(text.slice(30));
        setTimeout(() => res.end(), 20);
      }, 20);
    });
    const client = new KubeClient(s.url, cert, 'token');
    try {
      const events: string[] = [];
      const w = client.watch('/api/v1/configmaps', { resourceVersion: '10', timeoutSeconds: 30, onEvent: (e) => events.push(`${e.type} ${e.object.metadata.resourceVersion as string}`) });
      expect(await w.done).toEqual({ reason: 'closed' });
      expect(events).toEqual(['ADDED 11', 'BOOKMARK 12', 'MODIFIED 13']);
      const q = s.urls[0].searchParams;
      expect([q.get('watch'), q.get('resourceVersion'), q.get('allowWatchBookmarks'), q.get('timeoutSeconds')]).toEqual(['1', '10', 'true', '30']);
    } finally {
      client.close();
      s.server.close();
    }
  });

  it('a version too old is "gone", whether the server says it as an ERROR event (410 Expired) or as the status of its answer', async () => {
    let n = 0;
    const s = await watchServer((_u, res) => {
      if (n++ === 0) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.write(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (5)' } })}\n`);
      } else {
        res.writeHead(410, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Gone', message: 'too old' }));
      }
    });
    const client = new KubeClient(s.url, cert, 'token');
    try {
      expect(await client.watch('/api/v1/configmaps', { resourceVersion: '1', onEvent: () => {} }).done).toEqual({ reason: 'gone' });
      expect(await client.watch('/api/v1/configmaps', { resourceVersion: '1', onEvent: () => {} }).done).toEqual({ reason: 'gone' });
    } finally {
      client.close();
      s.server.close();
    }
  });

  it('a receiver that throws ends its stream as an error naming the failure, and the process goes on', async () => {
    const s = await watchServer((_u, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(line('ADDED', 'a', '2') + line('MODIFIED', 'a', '3'));
    });
    const client = new KubeClient(s.url, cert, 'token');
    try {
      const told: string[] = [];
      const done = await client.watch('/api/v1/configmaps', {
        onEvent: (e) => {
          told.push(e.type);
          throw new Error('cannot read the object');
        },
      }).done;
      expect(done.reason).toBe('error');
      expect(done.reason === 'error' && done.error.message).toBe('watch of /api/v1/configmaps: the receiver of an event failed: cannot read the object');
      expect(told).toEqual(['ADDED']);
    } finally {
      client.close();
      s.server.closeAllConnections();
      s.server.close();
    }
  });

  it('a refusal is an error with the server\'s message; close() ends a stream the server keeps open', async () => {
    let serverSawClose = false;
    const s = await watchServer((u, res) => {
      if (u.pathname.includes('clusterpolicies')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'the server could not find the requested resource' }));
        return;
      }
      res.on('close', () => { serverSawClose = true; });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(line('ADDED', 'a', '2'));
    });
    const client = new KubeClient(s.url, cert, 'token');
    try {
      const refused = await client.watch('/apis/nvidia.com/v1/clusterpolicies', { onEvent: () => {} }).done;
      expect(refused.reason).toBe('error');
      expect(refused.reason === 'error' && refused.error.message).toBe('watch of /apis/nvidia.com/v1/clusterpolicies: the server could not find the requested resource');
      const events: string[] = [];
      const w = client.watch('/api/v1/configmaps', { onEvent: (e) => events.push(e.type) });
      for (let i = 0; i < 200 && events.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      w.close();
      expect(await w.done).toEqual({ reason: 'closed' });
      expect(events).toEqual(['ADDED']);
      // the connection itself is gone, not only the stream's promise settled
      for (let i = 0; i < 200 && !serverSawClose; i++) await new Promise((r) => setTimeout(r, 10));
      expect(serverSawClose).toBe(true);
    } finally {
      client.close();
      s.server.closeAllConnections();
      s.server.close();
    }
  });
});
