import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
