import { existsSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNetwork } from '../../src/twin/cluster-network';

// the twin's cluster network (the API server's egress selector's `cluster` network): a routed ClusterIP and port reach
// a process of the twin on loopback; nothing else is dialed
let network: ClusterNetwork;
let backend: http.Server;
let backendPort: number;

beforeAll(async () => {
  network = await ClusterNetwork.start();
  backend = http.createServer((req, res) => res.end(`served ${req.url}`));
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  backendPort = (backend.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await network.stop();
  await new Promise((r) => backend.close(r));
});

/** A CONNECT through the proxy's socket, as the API server's egress dialer sends it; answers the status line and, once connected, a GET's body. */
function through(target: string): Promise<{ status: string; body?: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(network.socket);
    let data = '';
    let connected = false;
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (!connected && data.includes('\r\n\r\n')) {
        const status = data.split('\r\n')[0];
        if (!/ 200 /.test(status)) {
          socket.destroy();
          resolve({ status });
          return;
        }
        connected = true;
        data = '';
        socket.write('GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      }
    });
    socket.on('end', () => resolve({ status: 'HTTP/1.1 200 Connection established', body: data.split('\r\n\r\n').slice(1).join('') }));
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}

describe('ClusterNetwork', () => {
  it('carries a routed ClusterIP and port to its loopback port, IPv4 and IPv6', async () => {
    network.route('10.96.12.34', 443, backendPort);
    network.route('fd00::1234', 443, backendPort);
    expect(await through('10.96.12.34:443')).toEqual({ status: 'HTTP/1.1 200 Connection established', body: 'served /readyz' });
    expect(await through('[fd00::1234]:443')).toEqual({ status: 'HTTP/1.1 200 Connection established', body: 'served /readyz' });
  });

  it('answers 502 at once for any target not routed, a loopback port or a bad port among them, and dials nothing', async () => {
    for (const target of ['10.96.12.34:8443', '10.96.99.99:443', `127.0.0.1:${backendPort}`, '10.96.12.34:0', '10.96.12.34:99999', 'no-port']) {
      expect((await through(target)).status).toBe('HTTP/1.1 502 Bad Gateway');
    }
    expect(network.connects).toContain('10.96.99.99:443');
  });

  it('keeps each target it was asked for once, however often it is asked', async () => {
    for (let i = 0; i < 5; i++) await through('10.96.77.77:443');
    expect(network.connects.filter((c) => c === '10.96.77.77:443')).toHaveLength(1);
  });

  it('removes its socket\'s folder when stopped', async () => {
    const other = await ClusterNetwork.start();
    expect(existsSync(other.socket)).toBe(true);
    await other.stop();
    expect(existsSync(path.dirname(other.socket))).toBe(false);
  });
});
