import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, Server as HttpServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { AddressInfo, createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigFor, serveState } from './api-server';
import { SNAPSHOT, snapshotObjects } from './snapshots';
import { EXIT } from '../../src/commands/io';
import { INPUT_LIMITS } from '../../src/input/limits';
import { readSnapshot } from '../../src/preflight/snapshot';
import { ClusterState } from '../../src/preflight/state';
import { runCliChild } from '../child-cli';
import { REFERENCE_FILE, runCliInProcess } from '../helpers';

/*
 * Live reads against hostile servers of the test's own, on loopback: each command ends within its
 * --timeout (+ a small grace for tearing down) with exit 2 and one line that says what to do, and
 * the child's peak memory stays bounded. The commands run as a child (test/child-cli.ts), which
 * reports the time of its live read by its own clock and its peak RSS. Nothing here measures speed:
 * only the bound. The cases run concurrently: each child mostly waits for its deadline. What a process
 * adds nothing to (a kubeconfig refused before any request, a plugin that cannot start, a second message
 * of a failure a child shows, two working reads) runs through the CLI's entry in this process.
 */

/** Seconds each hostile case may take (--timeout). */
const TIMEOUT_S = 2;
/**
 * --timeout of the cases run in this process, which are refused before anything could wait: long, so that the bound
 * below tells a run that waited from one that only shared a loaded machine (its first case also loads the CLI).
 */
const IN_PROCESS_TIMEOUT_S = 30;
/** Tearing down after the deadline: destroying sockets, stopping a plugin's process group. */
const GRACE_MS = 3000;
/** The child's peak RSS: the CLI with its render stack is about 200 MiB; an unbounded body reaches GiBs within the timeout. */
const MAX_RSS = 768 * 1024 * 1024;

let dir: string;
const closers: Array<() => void> = [];

const run = (args: string[], env?: Record<string, string | undefined>) => runCliChild(dir, args, env);

/**
 * The command through the CLI's entry in this process, with `env` this process's while it runs (so: one at a
 * time, never beside a child being started), and for init --out - (it prints, as outside a project): its exit code,
 * what it printed, and how long it took.
 */
async function runHere(
  args: string[], env: Record<string, string | undefined> = {},
): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const t0 = performance.now();
  const r = await runCliInProcess(args[0] === 'init' ? [...args, '--out', '-'] : args, { env });
  return { ...r, ms: performance.now() - t0 };
}

async function listen<S extends Server | HttpServer>(server: S): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Sockets a server holds open, destroyed at the end so that the servers close. */
function tracked(handler: (s: Socket) => void): Server {
  const sockets = new Set<Socket>();
  closers.push(() => { for (const s of sockets) s.destroy(); });
  return createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    handler(s);
  });
}

/** Writes a byte every `ms` until the peer goes away. */
function drip(s: Socket, bytes: string, ms: number): void {
  let i = 0;
  const t = setInterval(() => {
    if (s.destroyed) return clearInterval(t);
    s.write(bytes[i % bytes.length]);
    i++;
  }, ms);
  s.on('close', () => clearInterval(t));
}

const servers = {
  /** A port nobody listens on any more. */
  async refusing(): Promise<string> {
    const s = createServer();
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const { port } = s.address() as AddressInfo;
    await new Promise<void>((resolve) => s.close(() => resolve()));
    return `127.0.0.1:${port}`;
  },
  /** Accepts and never says a word. */
  silent: () => listen(tracked(() => {})),
  /** The status line one byte at a time (the headers never complete). */
  dripHeaders: () => listen(tracked((s) => drip(s, 'HTTP/1.1 200 OK\r\nX-Slow: ', 100))),
  /** Headers at once, then one byte of body every 100 ms, forever (never idle for long). */
  dripBody: () => listen(tracked((s) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"items": [');
    drip(s, ' ', 100);
  })),
  /** An endless body as fast as the client reads it. */
  endless: () => listen(tracked((s) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"items": ["');
    const chunk = 'x'.repeat(65536);
    const pump = () => { while (!s.destroyed && s.write(chunk)); };
    s.on('drain', pump);
    pump();
  })),
  /** Every request refused with 401 and a Status. */
  unauthorized: () => listen(createHttpServer((_, res) => {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"kind":"Status","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}');
  })),
  /** Every request answered 404 with a Status (a web server, a proxy with a path, no API server). */
  notFound: () => listen(createHttpServer((_, res) => {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}');
  })),
  /** Every list answered with an empty list of another kind. */
  wrongKind: () => listen(createHttpServer((_, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}');
  })),
  /** Plain HTTP (the client will speak TLS to it). */
  plainHttp: () => listen(createHttpServer((_, res) => res.writeHead(404).end())),
};

function certificate(): { key: string; cert: string } | undefined {
  const key = path.join(dir, 'tls.key');
  const cert = path.join(dir, 'tls.crt');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], { encoding: 'utf8' });
  return r.status === 0 ? { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') } : undefined;
}

function kubeconfigFile(name: string, text: string): string {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
}

/** A kubeconfig whose user authenticates with an exec credential plugin (a shell script). */
function execKubeconfig(name: string, server: string, script: string): string {
  const plugin = path.join(dir, `${name}.sh`);
  writeFileSync(plugin, `#!/bin/sh\n${script}\n`);
  chmodSync(plugin, 0o755);
  return kubeconfigFile(name, kubeconfigFor(server).replace(/ {4}token: .*\n/, `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ${plugin}\n      interactiveMode: Never\n`));
}

interface Case {
  readonly name: string;
  /** The kubeconfig (servers are started lazily, per case). */
  readonly kubeconfig: () => Promise<string>;
  /** The one line: the reason, naming what to do. */
  readonly says: RegExp;
  readonly command?: 'init' | 'preflight';
  /** --timeout in seconds (default TIMEOUT_S; in this process IN_PROCESS_TIMEOUT_S). */
  readonly timeout?: number;
  readonly env?: Record<string, string | undefined>;
  /** After the command: what must hold (e.g. the plugin's processes are gone). */
  readonly after?: () => void;
  readonly skip?: boolean;
  /**
   * Run through the CLI's entry in this process (after the children, one at a time: `env` is this process's
   * while it runs), with --out - (as outside a project): a case that never waits on a connection (the
   * kubeconfig refused before any request, a plugin that cannot start) or a variation of a case a child
   * runs (another message of the same failure). A child proves the process ends and its memory; these
   * prove the line and the exit code, which the same code prints here.
   */
  readonly inProcess?: boolean;
}

const at = (scheme: 'http' | 'https', server: () => Promise<string>) => async () => `${scheme}://${await server()}`;
const plain = (name: string, server: () => Promise<string>) => async () => kubeconfigFile(name, kubeconfigFor(await server()));

/** Whether a process still runs (a killed one may linger as a zombie until init reaps it). */
function alive(pid: number): boolean {
  if (existsSync('/proc/self/stat')) {
    const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    return stat !== '' && !/^\d+ \(.*\) [ZX] /.test(stat);
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const pidsIn = (file: string) => readFileSync(path.join(dir, file), 'utf8').trim().split(/\s+/).map(Number);
const sleeperPids = () => pidsIn('sleeper.pids');
const HAS_SETSID = ['/usr/bin/setsid', '/bin/setsid'].some((f) => existsSync(f));
/** An ExecCredential a plugin prints. */
const CREDENTIAL = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-the-plugin' } });
const HAS_OPENSSL = spawnSync('openssl', ['version']).status === 0;

const CASES: Case[] = [
  { name: 'a refusing port', kubeconfig: plain('refusing', at('http', servers.refusing)), says: /connection refused: is the API server up, and are the address and port in --kubeconfig .* right\?/ },
  { name: 'silent after accepting', kubeconfig: plain('silent', at('http', servers.silent)), says: /no answer within 2 s \(--timeout\) while waiting for the answer to GET .*: the server took the request but did not answer in full.*raise --timeout/ },
  { name: 'silent after accepting, preflight', command: 'preflight', kubeconfig: plain('silent-pf', at('http', servers.silent)), says: /no answer within 2 s \(--timeout\) while waiting for the answer/ },
  // longer than the grace: a timeout counted once for the TLS handshake and again for the request would pass the bound
  { name: 'TLS to a silent socket (the timeout is not counted twice)', timeout: 5, kubeconfig: plain('silent-tls', at('https', servers.silent)), says: /no answer within 5 s \(--timeout\) while in the TLS handshake with .*: check that the address and port are the API server's/ },
  { name: 'TLS to a plain HTTP socket', kubeconfig: plain('plain', at('https', servers.plainHttp)), says: /the server does not speak TLS at this address: check the scheme \(https:\/\/\) and the port in --kubeconfig/ },
  { name: 'headers dripping a byte at a time', kubeconfig: plain('drip-headers', at('http', servers.dripHeaders)), says: /no answer within 2 s \(--timeout\) while waiting for the answer to GET/ },
  // the headers come at once, the body never ends: a longer timeout, so that a child starved of CPU for 2 s still gets to the body
  { name: 'a body dripping a byte at a time', timeout: 5, kubeconfig: plain('drip-body', at('http', servers.dripBody)), says: /no answer within 5 s \(--timeout\) while reading the answer to GET .* bytes so far\)/ },
  { name: 'a body dripping, preflight', command: 'preflight', timeout: 5, kubeconfig: plain('drip-body-pf', at('http', servers.dripBody)), says: /no answer within 5 s \(--timeout\) while reading the answer/ },
  // the size limit ends these, not the clock: a timeout far beyond the time the bytes take even on a busy machine
  { name: 'an endless body (the default size limit)', timeout: 120, kubeconfig: plain('endless', at('http', servers.endless)), says: new RegExp(`the answers passed 64 MiB in all .*${INPUT_LIMITS.snapshot.env}=<MiB> raises it`) },
  { name: 'an endless body (a lowered size limit)', timeout: 120, env: { [INPUT_LIMITS.snapshot.env]: '1' }, kubeconfig: plain('endless-1', at('http', servers.endless)), says: /the answers passed 1 MiB in all/ },
  { name: 'HTTP 401', kubeconfig: plain('unauthorized', at('http', servers.unauthorized)), says: /HTTP 401: the server refuses the credentials of user "admin" \(Unauthorized\): log in again so that --kubeconfig .* holds valid ones/ },
  {
    name: 'an untrusted certificate',
    skip: !HAS_OPENSSL,
    kubeconfig: async () => {
      const tls = certificate()!;
      const url = await listen(createTlsServer(tls, (_, res) => res.end('{}')));
      return kubeconfigFile('untrusted', kubeconfigFor(`https://${url}`).replace('    insecure-skip-tls-verify: true\n', ''));
    },
    says: /the server's certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\): give the cluster's CA as certificate-authority-data/,
  },
  {
    name: 'plain http without insecure-skip-tls-verify',
    inProcess: true,
    kubeconfig: async () => kubeconfigFile('http-strict', kubeconfigFor(`http://${await servers.refusing()}`).replace('    insecure-skip-tls-verify: true\n', '')),
    says: /a plain http:\/\/ address, which the client reads only with insecure-skip-tls-verify: true .* use the API server's https:\/\/ address/,
  },
  // a server that reads as an empty cluster is no cluster: preflight would find nothing to block on
  { name: 'every read answered 404, preflight', command: 'preflight', inProcess: true, kubeconfig: plain('not-found-pf', at('http', servers.notFound)), says: /GET \/apis\/apiextensions\.k8s\.io\/v1\/customresourcedefinitions\?limit=500: HTTP 404 \(not found\), which no Kubernetes API server answers to this list: is the address in --kubeconfig .* the API server's .*\? The cluster cannot be read/ },
  { name: 'every read answered 404, init', inProcess: true, kubeconfig: plain('not-found', at('http', servers.notFound)), says: /HTTP 404 \(not found\), which no Kubernetes API server answers to this list/ },
  { name: 'every list of the wrong kind, preflight', command: 'preflight', inProcess: true, kubeconfig: plain('wrong-kind-pf', at('http', servers.wrongKind)), says: /customresourcedefinitions\?limit=500: the answer is a PodList, not a CustomResourceDefinitionList: is this a Kubernetes API server\? The cluster cannot be read/ },
  {
    name: 'a server address of file:///etc/passwd',
    command: 'preflight',
    inProcess: true,
    kubeconfig: async () => kubeconfigFile('file-server', kubeconfigFor('file:///etc/passwd')),
    says: /^error: --kubeconfig .*file-server: cluster "test": server "file:\/\/\/etc\/passwd" is no API server address: expected https:\/\/HOST\[:PORT\]/,
  },
  { name: 'a server address that is no URL', inProcess: true, kubeconfig: async () => kubeconfigFile('no-url', kubeconfigFor('kubernetes:6443')), says: /server "kubernetes:6443" is no API server address/ },
  { name: 'an exec plugin that fails without a word', kubeconfig: async () => execKubeconfig('fails', `http://${await servers.refusing()}`, 'exit 3'), says: /the exec credential plugin ".*fails\.sh" of user "admin" exited with code 3 without a message; run it yourself to see why: .*fails\.sh/ },
  { name: 'an exec plugin that fails with a reason', inProcess: true, kubeconfig: async () => execKubeconfig('fails-why', `http://${await servers.refusing()}`, 'echo "token expired: run aws sso login" >&2; exit 1'), says: /exited with code 1: token expired: run aws sso login; run it yourself/ },
  { name: 'an exec plugin that is not installed', inProcess: true, kubeconfig: async () => kubeconfigFile('missing-plugin', readFileSync(execKubeconfig('x', `http://${await servers.refusing()}`, 'exit 0'), 'utf8').replace(/command: .*/, 'command: no-such-credential-plugin-xyz')), says: /the exec credential plugin "no-such-credential-plugin-xyz" of user "admin" is not installed or not on PATH: install it, or fix users\[\]\.user\.exec\.command/ },
  {
    name: 'an exec plugin that sleeps (its process group is stopped)',
    kubeconfig: async () => execKubeconfig('sleeper', `http://${await servers.refusing()}`, `sleep 600 & echo $$ $! > ${path.join(dir, 'sleeper.pids')}; wait`),
    says: /no answer within 2 s \(--timeout\) while waiting for the exec credential plugin ".*sleeper\.sh" of user "admin": run it yourself \(.*sleeper\.sh\): does it wait for a login or for input\?/,
    after: () => expect(sleeperPids().filter(alive)).toEqual([]),
  },
  {
    // a grandchild in a session of its own leaves the plugin's process group: the token of the plugin's run finds it
    name: 'an exec plugin whose setsid grandchild would outlive it',
    command: 'preflight',
    skip: !HAS_SETSID,
    kubeconfig: async () => execKubeconfig('setsid', `http://${await servers.refusing()}`,
      `setsid sleep 600 < /dev/null > /dev/null 2>&1 & echo $! > ${path.join(dir, 'setsid.pids')}; echo '${CREDENTIAL}'`),
    says: /connection refused: is the API server up/,
    after: () => expect(pidsIn('setsid.pids').filter(alive)).toEqual([]),
  },
  {
    name: 'an exec plugin that sleeps, preflight',
    command: 'preflight',
    kubeconfig: async () => execKubeconfig('sleeper-pf', `http://${await servers.refusing()}`, 'exec sleep 600'),
    says: /while waiting for the exec credential plugin ".*sleeper-pf\.sh"/,
  },
  { name: 'an exec plugin that prints without end', kubeconfig: async () => execKubeconfig('yes', `http://${await servers.refusing()}`, 'exec yes'), says: /the exec credential plugin ".*yes\.sh" of user "admin" was stopped: it printed more than 4 MiB/ },
  { name: 'an exec plugin that prints no credential', kubeconfig: async () => execKubeconfig('garbage', `http://${await servers.refusing()}`, 'echo hello'), says: /the exec credential plugin ".*garbage\.sh" of user "admin" printed no valid ExecCredential/ },
  {
    name: 'no kubeconfig at all',
    inProcess: true,
    kubeconfig: async () => '',
    env: { KUBECONFIG: undefined, HOME: '/nonexistent-home' },
    says: /^error: no kubeconfig: --kubeconfig names none, \$KUBECONFIG is not set and ~\/\.kube\/config does not exist; pass --kubeconfig PATH/,
    skip: existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token'),
  },
  {
    name: '$KUBECONFIG naming only files that do not exist',
    inProcess: true,
    kubeconfig: async () => '',
    env: { KUBECONFIG: '/nonexistent/a:/nonexistent/b' },
    says: /^error: no kubeconfig: none of the files \$KUBECONFIG names exists \(\/nonexistent\/a:\/nonexistent\/b\); set KUBECONFIG/,
  },
];

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'live-bounds-'));
});
afterAll(() => {
  for (const close of closers) close();
  rmSync(dir, { recursive: true, force: true });
});

/** The command line of a case. */
function timeoutOf(c: Case): number {
  return c.timeout ?? (c.inProcess ? IN_PROCESS_TIMEOUT_S : TIMEOUT_S);
}

function argsOf(c: Case, kubeconfig: string): string[] {
  const source = kubeconfig === '' ? ['--kubeconfig'] : ['--kubeconfig', kubeconfig];
  const timeout = timeoutOf(c);
  return c.command === 'preflight'
    ? ['preflight', '--config', REFERENCE_FILE, ...source, '--timeout', String(timeout)]
    : ['init', ...source, '--timeout', String(timeout)];
}

function expectOneLine(c: Case, r: { code: number; stdout: string; stderr: string }): void {
  expect(r.code, r.stderr).toBe(EXIT.badInput);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(c.says);
  expect(lines[0]).not.toMatch(/internal error|undefined|\[object/);
  expect(r.stdout).toBe('');
}

describe.concurrent('live reads end within --timeout with exit 2 and a reason that names the fix; memory stays bounded', () => {
  it.each(CASES.filter((c) => !c.skip && !c.inProcess))('$name', async (c) => {
    const r = await run(argsOf(c, await c.kubeconfig()), c.env);
    expectOneLine(c, r);
    if (r.liveMs !== undefined) expect(r.liveMs).toBeLessThan((c.timeout ?? TIMEOUT_S) * 1000 + GRACE_MS);
    expect(r.maxRSS).toBeLessThan(MAX_RSS);
    c.after?.();
  }, 120_000);
});

describe('in this process: refused before a connection waits, another message of a failure a child shows, and what the bounds leave working', () => {
  it.each(CASES.filter((c) => !c.skip && c.inProcess))('$name', async (c) => {
    const r = await runHere(argsOf(c, await c.kubeconfig()), c.env);
    expectOneLine(c, r);
    expect(r.ms).toBeLessThan(timeoutOf(c) * 1000 + GRACE_MS);
    c.after?.();
  }, 120_000);

  // what the bounds leave working, where the process adds nothing (a child reads the large cluster below)
  it('an exec plugin that prints an ExecCredential authenticates every request', async () => {
    const server = await serveState(readSnapshot(SNAPSHOT));
    closers.push(() => void server.close());
    const kubeconfig = execKubeconfig('good-plugin', server.url, `echo '${CREDENTIAL}'`);
    const r = await runHere(['init', '--kubeconfig', kubeconfig, '--name', 'lab', '--timeout', '60']);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(r.stdout).toContain('gpusPerNode: 8');
    expect(server.requests.length).toBeGreaterThan(5);
    expect(server.requests.every((q) => q.authorization === 'Bearer from-the-plugin')).toBe(true);
    // a large cluster is read in pages, as kubectl does
    expect(server.requests.every((q) => q.query.get('limit') === '500')).toBe(true);
  }, 120_000);

  it('$KUBECONFIG files merge as kubectl merges them: the first to set a name wins, missing files are skipped', async () => {
    const server = await serveState(readSnapshot(SNAPSHOT));
    closers.push(() => void server.close());
    const first = kubeconfigFile('first', kubeconfigFor(server.url));
    const second = kubeconfigFile('second', kubeconfigFor(`http://${await servers.refusing()}`).replace('current-context: test', 'current-context: other'));
    const r = await runHere(['init', '--kubeconfig', '--name', 'lab'], { KUBECONFIG: [first, path.join(dir, 'missing'), second].join(path.delimiter) });
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(r.stdout).toContain('gpusPerNode: 8');
  }, 120_000);
});

describe.concurrent('what the bounds leave working', () => {
  it('a cluster larger than a page is read whole, page by page', async () => {
    const objects = snapshotObjects();
    const node = objects.find((o) => o.kind === 'Node' && o.status.allocatable['nvidia.com/gpu']);
    for (let i = 0; i < 1200; i++) objects.push({ ...structuredClone(node), metadata: { ...structuredClone(node.metadata), name: `gpu-extra-${i}` } });
    const server = await serveState(new ClusterState('large', objects));
    closers.push(() => void server.close());
    const r = await run(['init', '--kubeconfig', kubeconfigFile('large', kubeconfigFor(server.url)), '--name', 'lab', '--timeout', '60']);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    // nothing but the CLI's own lines: no warning of Node's (e.g. listeners on the deadline's signal)
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('count: 1203');
    const pages = server.requests.filter((q) => q.path === '/api/v1/nodes').map((q) => q.query.get('continue'));
    expect(pages).toEqual([null, '500', '1000']);
  }, 120_000);
});
