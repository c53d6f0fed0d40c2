import { mkdtempSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/**
 * The cluster's network as the API server of a twin reaches it: an HTTP CONNECT proxy on a Unix socket, the API
 * server's egress selector's `cluster` network (control-plane.ts ControlPlaneOptions.clusterNetwork). The API server
 * dials what a webhook Service or an aggregated API's Service names at its ClusterIP and service port (the default
 * resolver, as in a cluster); in a cluster kube-proxy or Cilium carries that to a pod, and no pod runs here. This
 * proxy is the stand-in for that part only: a ClusterIP and port routed to a process of the twin (`route`) is carried
 * to its loopback port; every other target is answered 502 at once, never dialed (no other process of the twin serves
 * the cluster's network, and a ClusterIP dialed on the host could reach something outside the twin).
 */
export class ClusterNetwork {
  /**
   * Starts the proxy on a socket of a folder of its own (kept short: a Unix socket's path has at most 107 bytes; under
   * a TMPDIR too long for that, a folder of /tmp, removed by stop like the other). Linux's abstract namespace would
   * leave no file at all, but the API server's egress dialer of v1.36.3 does not reach one (tried: no CONNECT came).
   */
  static async start(): Promise<ClusterNetwork> {
    let dir = mkdtempSync(path.join(tmpdir(), 'net-'));
    if (path.join(dir, 'proxy.sock').length > 100) {
      rmSync(dir, { recursive: true, force: true });
      dir = mkdtempSync('/tmp/net-');
    }
    const server = http.createServer((_req, res) => res.writeHead(405).end());
    const network = new ClusterNetwork(path.join(dir, 'proxy.sock'), dir, server);
    server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => network.connect(req.url ?? '', client, head));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(network.socket, resolve);
    });
    return network;
  }

  private readonly routes = new Map<string, number>();
  private readonly sockets = new Set<net.Socket>();
  private readonly targets = new Set<string>();
  private stopped = false;

  private constructor(readonly socket: string, private readonly dir: string, private readonly server: http.Server) {}

  /**
   * Every distinct CONNECT target asked for, in the order first asked (a test reads what the API server dialed):
   * distinct, so a twin that runs for hours keeps a few Services' addresses, not one entry per connection.
   */
  get connects(): string[] {
    return [...this.targets];
  }

  /** Carries `clusterIP:port` to `127.0.0.1:localPort` from now on. */
  route(clusterIP: string, port: number, localPort: number): void {
    // the API server asks for an IPv6 address in brackets (net.JoinHostPort)
    this.routes.set(`${clusterIP.includes(':') ? `[${clusterIP}]` : clusterIP}:${port}`, localPort);
  }

  private connect(target: string, client: net.Socket, head: Buffer): void {
    this.targets.add(target);
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => client.destroy());
    const local = this.routes.get(target);
    if (local === undefined) {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = net.connect(local, '127.0.0.1');
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => {
      if (!client.destroyed) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    });
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    client.on('close', () => upstream.destroy());
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
