import { ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { controlPlaneBinary, ControlPlaneBinary } from './binary';
import { KubeClient } from './kube-client';
import { sleep } from './poll';
import { issueCertificate } from './x509';
import { PolicyRule, PREFLIGHT_CLUSTER_ROLE, preflightRbacRules } from '../preflight/reads';

/**
 * A hermetic Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler of the pinned release (test/cluster/go.mod), on loopback with random free ports, TLS of its own
 * and token identities, in a temporary folder of its own. No kubelet runs: Node objects are what a test creates
 * (createNode), and no pod ever starts. Every child is killed when the control plane stops, and when this process
 * ends however it ends (their own process group, and the kernel's parent-death signal: see main.go).
 *
 *   const cp = await startControlPlane({ identities: { tenant: { user: 'alice', groups: ['tenant-research'] } } });
 *   const admin = cp.client();              // raw REST calls, server-side apply (kube-client.ts)
 *   const kc = cp.kubeConfig('preflight');  // @kubernetes/client-node, as that identity
 *   cp.identities.tenant.kubeconfig         // a kubeconfig file, for a command line under test
 *   await cp.stop();
 */

/** Who a token authenticates as (the apiserver's --token-auth-file). */
export interface IdentitySpec {
  readonly user: string;
  readonly groups: readonly string[];
}

/** An identity of the control plane: its token and a kubeconfig file that uses it. */
export interface Identity extends IdentitySpec {
  readonly name: string;
  readonly token: string;
  /** A kubeconfig file (server, CA, token; context `hermetic`). */
  readonly kubeconfig: string;
}

/** An RBAC rule, as rbac.authorization.k8s.io/v1 writes it. */
export type { PolicyRule };

/** A Node as a test registers it (createNode): metadata, spec (taints), status (capacity, allocatable, conditions). */
export interface NodeObject {
  readonly metadata: { readonly name: string; readonly labels?: Readonly<Record<string, string>> };
  readonly spec?: object;
  readonly status?: {
    readonly capacity?: Readonly<Record<string, string>>;
    readonly allocatable?: Readonly<Record<string, string>>;
    readonly conditions?: readonly object[];
  };
}

/** The group of the read-only preflight identity, bound to PREFLIGHT_ROLE. */
export const PREFLIGHT_GROUP = 'gpu-cluster-manifests:preflight';
/** The ClusterRole of the read-only preflight identity. */
export const PREFLIGHT_ROLE = PREFLIGHT_CLUSTER_ROLE;

/**
 * What the read-only preflight identity may do by default: the ClusterRole docs/commands.md gives users for preflight
 * and init (get and list on exactly what src/preflight/reads.ts reads; no Secret, no write; test/preflight/rbac.test.ts
 * proves the docs' ClusterRole is these rules).
 */
export function preflightRules(): PolicyRule[] {
  return preflightRbacRules().map((r) => ({ ...r }));
}

/** A ClusterRole of these rules, and its ClusterRoleBinding (of the same name) to a group. */
export async function bindClusterRole(
  client: KubeClient, name: string, rules: readonly PolicyRule[], group: string, fieldManager: string,
): Promise<void> {
  await client.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules }, { fieldManager });
  await client.apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
  }, { fieldManager });
}

export interface ControlPlaneOptions {
  /**
   * Identities besides the built-in ones, by name; a name of the defaults replaces it. Defaults: `admin`
   * (system:masters), `tenant` (user `tenant`, group `tenants`: pass the group a tenant RoleBinding of the render
   * binds), `preflight` (the read-only identity: group PREFLIGHT_GROUP, bound to PREFLIGHT_ROLE, the documented ClusterRole).
   */
  readonly identities?: Readonly<Record<string, IdentitySpec>>;
  /** @default preflightRules(): the documented ClusterRole */
  readonly preflightRules?: readonly PolicyRule[];
  /**
   * The controllers of kube-controller-manager (`--controllers`).
   * @default every default controller but the node lifecycle controller, which without kubelets would mark
   * every Node NotReady after 40 s, taint it and evict its pods
   */
  readonly controllers?: readonly string[];
  /**
   * An HTTP CONNECT proxy (a Unix socket) the API server reaches the cluster's network through: its egress selector's
   * `cluster` network (what a webhook Service and an aggregated API's Service are dialed on, at their ClusterIP).
   * cluster-network.ts serves one. @default none: the API server dials a ClusterIP itself, and nothing answers there
   */
  readonly clusterNetwork?: string;
  /** More kube-apiserver flags (`--feature-gates=...`, `--runtime-config=...`). */
  readonly apiserverArgs?: readonly string[];
  /**
   * How long the whole start may take before it fails naming what did not come up.
   * @default 180 s (2 shared cores: the apiserver alone needs some 10 s CPU)
   */
  readonly readyTimeoutMs?: number;
  /** Keep the folder (logs, kubeconfigs, etcd data) after stop. @default false, or when CONTROL_PLANE_KEEP=1 */
  readonly keep?: boolean;
}

const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
type Component = typeof COMPONENTS[number];

/** Every child of every control plane (and Kueue) of this process, killed when it exits. */
const children = new Set<ChildProcess>();

/** Kills a child started `detached` with its whole process group. */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // gone already
  }
}
let exitHook = false;

/** Kills the process group of every child launched so far (what killOnExit does at exit): a signal handler's first step. */
export function killLaunched(): void {
  for (const c of children) killGroup(c);
}

/** Kills `child`'s process group when this process exits, however the tests end. */
export function killOnExit(child: ChildProcess): void {
  children.add(child);
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const c of children) killGroup(c);
  });
}

/**
 * Starts a child in a process group of its own (killGroup ends it with what it started), its output appended to
 * `log`, killed when this process exits.
 */
export function launchLogged(command: string, args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv; log: string }): ChildProcess {
  const log = openSync(opts.log, 'a');
  try {
    const child = spawn(command, args, { cwd: opts.cwd, detached: true, stdio: ['ignore', log, log], env: opts.env });
    child.on('error', () => {});
    killOnExit(child);
    return child;
  } finally {
    closeSync(log);
  }
}

/**
 * The Go garbage collector's target (GOGC: the heap grows by this percentage of the live heap before a collection) of
 * every Go process the tests and `rehearse` start: the control plane's, Kueue's and the twin's. Go's default is 100;
 * at 100 the collector took about a fifth of the API server's and of Argo CD's application controller's CPU in a
 * bootstrap of the reference cluster (CPU profiles, bench/README.md "The twin's CPU"). 200 collects half as often for
 * a larger heap; it changes no behaviour of any process.
 */
export const GO_GC_PERCENT = '200';

/** CPU seconds (user + system) a running process has used so far (Linux /proc); undefined when it is not running. */
export function cpuSecondsOf(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** `n` free TCP ports of 127.0.0.1 (held together while they are chosen, so that they differ). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<net.Server>((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve(s));
  })));
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** The last lines of a log file. */
export function tailOf(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * A GET that answers status and body, or undefined while the server does not answer (5 s at most): over TLS for an
 * https: URL (its CA, a bearer token), plain HTTP otherwise (the loopback health and readiness endpoints).
 */
function probe(url: string, opts: { ca?: Buffer; token?: string } = {}): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const answer = (res: http.IncomingMessage) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(undefined));
    };
    const options = { headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {}, timeout: 5000 };
    const req = url.startsWith('https:') ? https.get(url, { ...options, ca: opts.ca }, answer) : http.get(url, options, answer);
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => {
      req.destroy();
      resolve(undefined);
    });
  });
}

/** A plain HTTP GET on loopback (health and readiness endpoints): status and body, or undefined while nothing answers. */
export const httpGet = (url: string): Promise<{ status: number; body: string } | undefined> => probe(url);

/** The body of a GET that answers 200, else undefined. */
const httpProbe = async (url: string): Promise<string | undefined> => {
  const r = await httpGet(url);
  return r?.status === 200 ? r.body : undefined;
};

/** A control plane that did not come up: names the component and quotes its log. */
export class ControlPlaneError extends Error {}

/** A running control plane (startControlPlane). */
export class ControlPlane {
  /** The apiserver's URL (https://127.0.0.1:PORT). */
  readonly server: string;
  /** The CA bundle of the apiserver's serving certificate (PEM file). */
  readonly caFile: string;
  /** Identities by name: admin, tenant, preflight and those of the options. */
  readonly identities: Readonly<Record<string, Identity>>;
  private readonly procs = new Map<Component, ChildProcess>();
  private readonly clients = new Map<string, KubeClient>();
  private stopped = false;

  /** @internal */
  constructor(
    /** The folder of this control plane: logs/, pki/, etcd/, kubeconfigs. */
    readonly dir: string,
    readonly binary: ControlPlaneBinary,
    server: string,
    caFile: string,
    identities: Record<string, Identity>,
    private readonly keep: boolean,
  ) {
    this.server = server;
    this.caFile = caFile;
    this.identities = identities;
  }

  /** The log file of a component. */
  logFile(component: Component): string {
    return path.join(this.dir, 'logs', `${component}.log`);
  }

  /** The last lines of every component's log, for a failure message. */
  logs(lines = 20): string {
    return COMPONENTS.map((c) => `--- ${c} (${this.logFile(c)})\n${tailOf(this.logFile(c), lines)}`).join('\n');
  }

  /** CPU seconds (user + system) each running component has used so far (Linux /proc), for measurements. */
  cpuSeconds(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [c, p] of this.procs) {
      const seconds = cpuSecondsOf(p.pid);
      if (seconds !== undefined) out[c] = seconds;
    }
    return out;
  }

  /** A REST client as an identity (kube-client.ts: raw objects, server-side apply, discovery). */
  client(identity = 'admin'): KubeClient {
    const id = this.identity(identity);
    let c = this.clients.get(identity);
    if (!c) {
      c = new KubeClient(this.server, readFileSync(this.caFile), id.token);
      this.clients.set(identity, c);
    }
    return c;
  }

  /** @kubernetes/client-node's KubeConfig of an identity (its kubeconfig file). */
  kubeConfig(identity = 'admin'): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.identity(identity).kubeconfig);
    return kc;
  }

  identity(name: string): Identity {
    const id = this.identities[name];
    if (!id) throw new Error(`no identity "${name}" (the control plane has ${Object.keys(this.identities).join(', ')})`);
    return id;
  }

  /**
   * Creates a Node object and sets its status (capacity, allocatable, conditions: Ready unless the status says
   * otherwise), as a kubelet would register it. `node` is a v1 Node manifest (metadata, spec, status).
   */
  async createNode(node: NodeObject): Promise<void> {
    const admin = this.client();
    const status = node.status ?? {};
    await admin.create({ apiVersion: 'v1', kind: 'Node', metadata: node.metadata, spec: node.spec ?? {} });
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const conditions = status.conditions ?? [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'hermetic test node', lastHeartbeatTime: now, lastTransitionTime: now }];
    const nodePath = `/api/v1/nodes/${encodeURIComponent(node.metadata.name)}`;
    await admin.call('PATCH', `${nodePath}/status`, {
      body: { status: { ...status, allocatable: status.allocatable ?? status.capacity, conditions } },
      contentType: 'application/merge-patch+json',
    });
    // the API server's TaintNodesByCondition admission gives a new Node node.kubernetes.io/not-ready:NoSchedule; the
    // node lifecycle controller takes it off once the Node is Ready, and does not run here (see controllers): the Node
    // keeps the taints it was given
    const ready = conditions.some((c) => (c as { type?: string; status?: string }).type === 'Ready' && (c as { status?: string }).status === 'True');
    if (ready) {
      const given = (node.spec as { taints?: object[] } | undefined)?.taints ?? [];
      await admin.call('PATCH', nodePath, { body: { spec: { taints: given.length > 0 ? given : null } }, contentType: 'application/merge-patch+json' });
    }
  }

  /** Stops every component (SIGKILL to each process group) and removes the folder unless kept. */
  async stop(opts: { keep?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const c of this.clients.values()) c.close();
    const exits = [...this.procs.values()].map((p) => (p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', r))));
    for (const p of this.procs.values()) killGroup(p);
    await Promise.all(exits);
    for (const p of this.procs.values()) children.delete(p);
    if (this.keep || opts.keep) process.stderr.write(`control plane kept in ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }

  /** @internal starts one component, its output into logs/<component>.log. */
  launch(component: Component, args: readonly string[]): ChildProcess {
    const child = launchLogged(this.binary.path, [component, ...args], {
      cwd: this.dir,
      log: this.logFile(component),
      env: { PATH: process.env.PATH, HOME: this.dir, GOGC: GO_GC_PERCENT, CONTROL_PLANE_PARENT_PID: String(process.pid) },
    });
    this.procs.set(component, child);
    return child;
  }

  /** @internal throws naming a component that has exited. */
  assertRunning(): void {
    for (const [c, p] of this.procs) {
      if (p.exitCode !== null || p.signalCode !== null) {
        throw new ControlPlaneError(`${c} exited (${p.signalCode ?? `exit ${p.exitCode}`}) while the control plane started; its log:\n${tailOf(this.logFile(c))}`);
      }
    }
  }
}

/** Waits until `ready` answers true, the components keep running, and the deadline holds. */
async function waitFor(cp: ControlPlane, what: Component, deadline: number, ready: () => Promise<boolean>): Promise<void> {
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    cp.assertRunning();
    if (await ready()) return;
    if (Date.now() > deadline) {
      throw new ControlPlaneError(`${what} did not become ready in time (${cp.dir}); its log:\n${tailOf(cp.logFile(what))}`);
    }
    await sleep(delay);
  }
}

/**
 * A kubeconfig of one token identity for a control plane; `embedCa`: the CA's certificate in it
 * (`certificate-authority-data`, for a kubeconfig read elsewhere, as a Secret's), else named as a file.
 */
export function kubeconfigText(server: string, caFile: string, user: string, token: string, opts: { embedCa?: boolean } = {}): string {
  const ca = opts.embedCa ? { 'certificate-authority-data': readFileSync(caFile).toString('base64') } : { 'certificate-authority': caFile };
  return stringify({
    'apiVersion': 'v1',
    'kind': 'Config',
    'clusters': [{ name: 'hermetic', cluster: { server, ...ca } }],
    'users': [{ name: user, user: { token } }],
    'contexts': [{ name: 'hermetic', context: { cluster: 'hermetic', user } }],
    'current-context': 'hermetic',
  });
}

/** The token-auth file's quoting of a field (groups is one quoted, comma-separated field). */
const csvField = (s: string) => (/[",\s]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/**
 * The controller manager's and scheduler's leader election: each takes its lease at start (what the harness waits
 * for) and renews it every retry period. A twin has one of each and never fails over, so the renewals are only
 * writes: every 10 s instead of the default 2 s (a lease of 60 s, renewed within 40 s), some 20 fewer API server
 * and etcd writes a minute for as long as a twin runs.
 */
const LEADER_ELECTION = ['--leader-elect=true', '--leader-elect-lease-duration=60s', '--leader-elect-renew-deadline=40s', '--leader-elect-retry-period=10s'];

/**
 * The front proxy as kubeadm configures it: the aggregator's client certificate, and the CA and names an aggregated
 * API server trusts the user headers of (the API server publishes them in kube-system's
 * extension-apiserver-authentication). Without them an aggregated API server sees the aggregator's requests, its
 * availability check's among them, as anonymous and refuses them (403: the APIService stays FailedDiscoveryCheck).
 */
function frontProxyArgs(pki: string): string[] {
  const ca = issueCertificate({ commonName: 'front-proxy-ca', ca: true });
  const client = issueCertificate({ commonName: 'front-proxy-client', usage: 'clientAuth', issuer: ca });
  writeFileSync(path.join(pki, 'front-proxy-ca.crt'), ca.cert);
  writeFileSync(path.join(pki, 'front-proxy-client.crt'), client.cert);
  writeFileSync(path.join(pki, 'front-proxy-client.key'), client.key, { mode: 0o600 });
  return [
    `--requestheader-client-ca-file=${path.join(pki, 'front-proxy-ca.crt')}`, '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group', '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${path.join(pki, 'front-proxy-client.crt')}`, `--proxy-client-key-file=${path.join(pki, 'front-proxy-client.key')}`,
  ];
}

/** The API server's egress selector: the `cluster` network through an HTTP CONNECT proxy on a Unix socket (ControlPlaneOptions.clusterNetwork). */
function clusterEgress(pki: string, socket: string): string {
  const file = path.join(pki, 'egress-selector.yaml');
  writeFileSync(file, stringify({
    apiVersion: 'apiserver.k8s.io/v1beta1',
    kind: 'EgressSelectorConfiguration',
    egressSelections: [{ name: 'cluster', connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: socket } } } }],
  }));
  return file;
}

/**
 * Starts a control plane (the binary from the cache, built first when missing: binary.ts) and waits until every
 * component is ready: etcd healthy, the apiserver's /readyz, the controller manager's and scheduler's leader
 * leases taken. Fails, everything stopped, with the component that did not come up and its log.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binary = await controlPlaneBinary();
  const t0 = Date.now();
  const deadline = t0 + (opts.readyTimeoutMs ?? 180_000);
  const dir = mkdtempSync(path.join(tmpdir(), 'control-plane-'));
  for (const d of ['logs', 'pki', 'etcd']) mkdirSync(path.join(dir, d));
  const [etcdPort, peerPort, apiPort] = await freePorts(3);
  const server = `https://127.0.0.1:${apiPort}`;
  const pki = path.join(dir, 'pki');
  const caFile = path.join(pki, 'apiserver.crt');

  // the service account signing key of this run (ES256)
  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  writeFileSync(path.join(pki, 'sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(path.join(pki, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));

  const specs: Record<string, IdentitySpec> = {
    'admin': { user: 'admin', groups: ['system:masters'] },
    'tenant': { user: 'tenant', groups: ['tenants'] },
    'preflight': { user: 'preflight', groups: [PREFLIGHT_GROUP] },
    ...opts.identities,
    // the components' own users, whose rights the bootstrap RBAC policy grants
    'kube-controller-manager': { user: 'system:kube-controller-manager', groups: [] },
    'kube-scheduler': { user: 'system:kube-scheduler', groups: [] },
  };
  const identities: Record<string, Identity> = {};
  const lines: string[] = [];
  for (const [name, spec] of Object.entries(specs)) {
    const token = randomBytes(24).toString('hex');
    const kubeconfig = path.join(dir, `${name}.kubeconfig`);
    writeFileSync(kubeconfig, kubeconfigText(server, caFile, spec.user, token), { mode: 0o600 });
    identities[name] = { name, ...spec, token, kubeconfig };
    lines.push([token, csvField(spec.user), csvField(spec.user), ...(spec.groups.length > 0 ? [csvField(spec.groups.join(','))] : [])].join(','));
  }
  writeFileSync(path.join(pki, 'tokens.csv'), `${lines.join('\n')}\n`, { mode: 0o600 });
  const frontProxy = frontProxyArgs(pki);
  const egress = opts.clusterNetwork === undefined ? [] : [`--egress-selector-config-file=${clusterEgress(pki, opts.clusterNetwork)}`];

  const cp = new ControlPlane(dir, binary, server, caFile, identities, opts.keep ?? process.env.CONTROL_PLANE_KEEP === '1');
  try {
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    cp.launch('etcd', [
      '--name=hermetic', `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`, `--initial-advertise-peer-urls=${peerUrl}`, `--initial-cluster=hermetic=${peerUrl}`,
      // throwaway data: no fsync (the suite's writes would otherwise wait on the disk)
      '--unsafe-no-fsync', '--log-level=warn',
    ]);
    await waitFor(cp, 'etcd', deadline, async () => (await httpProbe(`${etcdUrl}/health`))?.includes('"health":"true"') === true);

    cp.launch('kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1', `--secure-port=${apiPort}`,
      `--cert-dir=${pki}`,
      `--token-auth-file=${path.join(pki, 'tokens.csv')}`,
      // as kubeadm configures it
      '--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction', '--allow-privileged=true',
      '--service-cluster-ip-range=10.96.0.0/12',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${path.join(pki, 'sa.pub')}`, `--service-account-signing-key-file=${path.join(pki, 'sa.key')}`,
      // the default/kubernetes Endpoints may not name a loopback address, and no pod runs to reach it: none kept
      '--endpoint-reconciler-type=none',
      '--profiling=false',
      ...frontProxy, ...egress,
      ...(opts.apiserverArgs ?? []),
    ]);
    const admin = identities.admin;
    await waitFor(cp, 'kube-apiserver', deadline, async () => {
      if (!existsSync(caFile)) return false;
      return (await probe(`${server}/readyz`, { ca: readFileSync(caFile), token: admin.token }))?.status === 200;
    });

    const client = cp.client();
    const rules = opts.preflightRules ?? preflightRules();
    await bindClusterRole(client, PREFLIGHT_ROLE, rules, PREFLIGHT_GROUP, 'control-plane');

    const controllers = opts.controllers ?? ['*', '-node-lifecycle-controller'];
    cp.launch('kube-controller-manager', [
      `--kubeconfig=${identities['kube-controller-manager'].kubeconfig}`,
      '--secure-port=0', ...LEADER_ELECTION, '--use-service-account-credentials=true',
      `--service-account-private-key-file=${path.join(pki, 'sa.key')}`, `--root-ca-file=${caFile}`,
      `--controllers=${controllers.join(',')}`,
    ]);
    cp.launch('kube-scheduler', [
      `--kubeconfig=${identities['kube-scheduler'].kubeconfig}`,
      '--secure-port=0', ...LEADER_ELECTION,
    ]);
    const leader = (name: string) => async () => {
      const lease = await client.get(`/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${name}`);
      return typeof (lease?.spec as { holderIdentity?: unknown } | undefined)?.holderIdentity === 'string';
    };
    await waitFor(cp, 'kube-controller-manager', deadline, leader('kube-controller-manager'));
    await waitFor(cp, 'kube-scheduler', deadline, leader('kube-scheduler'));
    return cp;
  } catch (e) {
    // the logs stay for a look (the message names the folder)
    await cp.stop({ keep: true }).catch(() => {});
    if (e instanceof ControlPlaneError) throw e;
    throw new ControlPlaneError(`the control plane did not start (${(e as Error).message}); logs in ${dir}:\n${cp.logs()}`);
  }
}
