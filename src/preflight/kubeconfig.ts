import { ChildProcess, spawn, SpawnOptions } from 'node:child_process';
import { createPrivateKey, KeyObject, X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import type { Cluster, KubeConfig, User } from '@kubernetes/client-node';
import { InputError, maskCredentials, printable } from '../errors';
import { formatMiB, maxBytes } from '../input/limits';
import { asInputError, decodeInput, readInputBytes, readYamlInput } from '../input/read';
import { isJsonObject } from '../json';
import { killGroup, killTagged, RUN_TOKEN_ENV, runToken } from '../processes';

/*
 * The kubeconfig, read as kubectl reads it (--kubeconfig, else every file of $KUBECONFIG with the
 * first value of each name winning, else ~/.kube/config), through the one input reader: each file
 * and every file it names (certificates, keys, token files) is bounded like any input. The official
 * client then interprets it (contexts, TLS, tokens, exec credential plugins), with the exec plugin
 * started so that the live read's deadline can stop it.
 */

/** The in-cluster ServiceAccount token (the client's fallback when no kubeconfig exists, as in a pod). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A kubeconfig ready for requests: the client's config, where it came from, the server and user. */
export interface LoadedKubeConfig {
  readonly kc: KubeConfig;
  /** Where the kubeconfig came from, for messages (`--kubeconfig /x`, `$KUBECONFIG file /y`, `~/.kube/config`). */
  readonly where: string;
  /** The server's address as messages and files name it: its user-info masked (`https://***@host:6443`). */
  readonly server: string;
  /** The server's address as the requests go to it. */
  readonly url: string;
  /** The secrets of the user and the server's address (token, password): masked wherever an answer echoes them. */
  readonly secrets: readonly string[];
  readonly user: string;
  /** The exec credential plugin runs of this config (to stop them, and to explain a failure). */
  readonly plugins: ExecPlugins;
}

type Obj = Record<string, unknown>;

function entries(doc: Obj, key: string): Obj[] {
  const v = doc[key];
  return Array.isArray(v) ? v.filter(isJsonObject) : [];
}

/** The files to read and how to name them, or undefined when there is no kubeconfig at all. */
function kubeconfigFiles(explicit: string | undefined): { file: string; label: string }[] | undefined {
  if (explicit !== undefined) return [{ file: explicit, label: `--kubeconfig ${explicit}` }];
  const env = (process.env.KUBECONFIG ?? '').split(path.delimiter).filter((f) => f !== '');
  if (env.length > 0) {
    // as kubectl: files of the list that do not exist are skipped
    const present = env.filter((f) => existsSync(f));
    if (present.length === 0) {
      throw new InputError(`no kubeconfig: none of the files $KUBECONFIG names exists (${env.join(path.delimiter)}); `
        + 'set KUBECONFIG to your kubeconfig, or pass --kubeconfig PATH');
    }
    return present.map((file) => ({ file, label: `kubeconfig ${file} (from $KUBECONFIG)` }));
  }
  const home = path.join(process.env.HOME || homedir(), '.kube', 'config');
  return existsSync(home) ? [{ file: home, label: `kubeconfig ${home}` }] : undefined;
}

/** The file fields of a kubeconfig that name other files, and the inline field each becomes. */
const FILE_FIELDS: readonly { list: 'clusters' | 'users'; entry: 'cluster' | 'user'; file: string; data: string }[] = [
  { list: 'clusters', entry: 'cluster', file: 'certificate-authority', data: 'certificate-authority-data' },
  { list: 'users', entry: 'user', file: 'client-certificate', data: 'client-certificate-data' },
  { list: 'users', entry: 'user', file: 'client-key', data: 'client-key-data' },
  { list: 'users', entry: 'user', file: 'token-file', data: 'token' },
];

/** One kubeconfig file, parsed, with the files it names made absolute (relative to its folder, as kubectl does). */
function readKubeconfigFile(file: string, label: string): Obj {
  const [doc] = asInputError(label, () => readYamlInput(file, 'kubeconfig', false));
  if (doc === null || doc === undefined) {
    throw new InputError(`${label}: the kubeconfig is empty (no clusters, contexts or users); name another one, or write it with kubectl config (e.g. kubectl config set-cluster)`);
  }
  if (!isJsonObject(doc)) throw new InputError(`${label}: not a kubeconfig (expected a mapping with clusters, contexts, users and current-context)`);
  for (const f of FILE_FIELDS) {
    for (const e of entries(doc, f.list)) {
      const inner = e[f.entry];
      if (isJsonObject(inner) && typeof inner[f.file] === 'string' && inner[f.file] !== '') inner[f.file] = path.resolve(path.dirname(file), inner[f.file] as string);
    }
  }
  return doc;
}

/** kubectl's merge: the first file that sets a name (cluster, user, context) or the current context wins. */
function mergeKubeconfigs(docs: readonly Obj[]): Obj {
  const merged: Obj = { 'apiVersion': 'v1', 'kind': 'Config', 'clusters': [], 'users': [], 'contexts': [], 'current-context': undefined };
  for (const doc of docs) {
    for (const list of ['clusters', 'users', 'contexts'] as const) {
      const into = merged[list] as Obj[];
      for (const e of entries(doc, list)) if (!into.some((x) => x.name === e.name)) into.push(e);
    }
    if (!merged['current-context'] && typeof doc['current-context'] === 'string') merged['current-context'] = doc['current-context'];
  }
  return merged;
}

/** Reads the files the current cluster and user name (bounded like a kubeconfig) into their inline fields. */
function inlineFiles(merged: Obj, context: Obj, where: string): void {
  const named = { clusters: context.cluster, users: context.user };
  for (const f of FILE_FIELDS) {
    const inner = entries(merged, f.list).find((e) => e.name === named[f.list])?.[f.entry];
    if (!isJsonObject(inner) || typeof inner[f.file] !== 'string' || inner[f.file] === '') continue;
    const file = inner[f.file] as string;
    const bytes = asInputError(`${where}: ${f.entry}.${f.file} ${file}`, () => readInputBytes(file, 'kubeconfig'));
    inner[f.data] = f.data === 'token' ? asInputError(file, () => decodeInput(file, bytes)).trim() : bytes.toString('base64');
    delete inner[f.file];
  }
}

/**
 * Auth providers the client runs synchronously with no time limit (a command), which kubectl removed
 * in 1.26 in favour of exec credential plugins.
 */
const REMOVED_AUTH_PROVIDERS: Readonly<Record<string, string>> = {
  gcp: 'gke-gcloud-auth-plugin',
  azure: 'kubelogin',
};

/**
 * Refuses a server address the live read cannot ask (`file:///etc/passwd`, `ftp://`, no URL at all): an
 * API server is an https:// (or, through kubectl proxy, http://) address with a host.
 */
function checkServer(server: string, where: string): void {
  let url: URL | undefined;
  try {
    url = new URL(server);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.hostname === '') {
    throw new InputError(`${where}: server ${maskCredentials(JSON.stringify(server))} is no API server address: expected https://HOST[:PORT] (kubectl config view shows it; `
      + 'kubectl cluster-info prints the right one)');
  }
}

/** Loads the kubeconfig for a live read; every problem is bad input of one line that says what to do. */
export async function loadKubeConfig(opts: { readonly kubeconfig?: string; readonly context?: string }): Promise<LoadedKubeConfig> {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const plugins = new ExecPlugins();
  const files = kubeconfigFiles(opts.kubeconfig);
  if (!files) {
    if (!existsSync(SERVICE_ACCOUNT_TOKEN)) {
      throw new InputError('no kubeconfig: --kubeconfig names none, $KUBECONFIG is not set and ~/.kube/config does not exist; '
        + 'pass --kubeconfig PATH (or set KUBECONFIG), or compare with a snapshot: --snapshot FILE');
    }
    kc.loadFromCluster();
    plugins.install(kc);
    const url = kc.getCurrentCluster()!.server;
    return { kc, where: 'the in-cluster ServiceAccount', server: maskCredentials(url), url, user: 'the ServiceAccount', plugins, secrets: userSecrets(url, kc.getCurrentUser()) };
  }
  const where = files.length === 1 ? files[0].label : `the kubeconfig files of $KUBECONFIG (${files.map((f) => f.file).join(path.delimiter)})`;
  const merged = mergeKubeconfigs(files.map((f) => readKubeconfigFile(f.file, f.label)));
  const contexts = entries(merged, 'contexts');
  const names = contexts.map((c) => printable(String(c.name))).join(', ') || 'none';
  const name = opts.context ?? merged['current-context'];
  if (opts.context !== undefined && !contexts.some((c) => c.name === opts.context)) throw new InputError(`--context ${printable(opts.context)}: no such context in ${where} (contexts: ${names})`);
  if (typeof name !== 'string' || name === '') throw new InputError(`${where} sets no current-context: pass --context NAME (contexts: ${names})`);
  const context = contexts.find((c) => c.name === name)?.context;
  if (!isJsonObject(context)) throw new InputError(`${where}: the current-context "${printable(name)}" is not among its contexts (${names}): pass --context NAME, or kubectl config use-context NAME`);
  inlineFiles(merged, context, where);
  try {
    kc.loadFromString(JSON.stringify(merged));
  } catch (e) {
    // the client checks each entry (clusters[0].cluster.server is missing, ...)
    throw new InputError(`${where}: ${printable((e as Error).message.split('\n')[0])}: fix that entry (kubectl config view shows them)`);
  }
  kc.setCurrentContext(name);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new InputError(`${where}: context "${printable(name)}" names the cluster "${printable(String(context.cluster))}", which is not among its clusters`);
  checkServer(cluster.server, `${where}: cluster "${printable(cluster.name)}"`);
  const user = kc.getCurrentUser();
  const provider = user?.authProvider as { name?: string } | undefined;
  if (provider?.name && provider.name in REMOVED_AUTH_PROVIDERS) {
    throw new InputError(`${where}: user "${printable(user!.name)}" authenticates with the ${provider.name} auth provider, which kubectl removed in 1.26: `
      + `use the exec credential plugin ${REMOVED_AUTH_PROVIDERS[provider.name]} instead`);
  }
  checkCredentials(cluster, user, `${where}: `);
  plugins.install(kc);
  return { kc, where, server: maskCredentials(cluster.server), url: cluster.server, user: user?.name ?? '(none)', plugins, secrets: userSecrets(cluster.server, user) };
}

/** The secrets a run holds for a server and user: the token, the password, and the password (or token) of the server's user-info. */
function userSecrets(server: string, user: User | null | undefined): string[] {
  const info = /^[a-z]+:\/\/([^/?#\s]*)@/i.exec(server)?.[1];
  const fromUrl = info === undefined ? [] : [info, ...info.split(':').slice(1)].map((x) => { try { return decodeURIComponent(x); } catch { return x; } });
  return [user?.token, user?.password, ...fromUrl].filter((x): x is string => typeof x === 'string' && x.length >= 4);
}

/** What an HTTP header cannot carry: a line break or another control character. */
const NOT_IN_A_HEADER = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** The PEM blocks of a kubeconfig's base64 data field (certificate-authority-data, client-*-data), decoded. */
function pemOf(data: string): string {
  return Buffer.from(data, 'base64').toString('utf8');
}

/**
 * Refuses, before a request, credentials and TLS settings the client cannot use, each naming its field (the client
 * would fail on them inside a request, with a TLS library's words or an invalid header): a token with a line break or
 * a control character, certificate data that holds no certificate, key data that holds no private key, a client key
 * that does not match its certificate (or one without the other), and, as kubectl, a certificate authority beside
 * insecure-skip-tls-verify: true.
 */
function checkCredentials(cluster: Cluster, user: User | null, where: string): void {
  const clusterField = (field: string) => `${where}cluster "${printable(cluster.name)}": clusters[].cluster.${field}`;
  if (cluster.skipTLSVerify && (cluster.caData || cluster.caFile)) {
    throw new InputError(`${clusterField('insecure-skip-tls-verify')} is true beside a certificate-authority: kubectl refuses the two together `
      + '(a CA that is never checked); keep the certificate authority and remove insecure-skip-tls-verify, or the other way round');
  }
  if (cluster.caData) {
    try {
      new X509Certificate(pemOf(cluster.caData));
    } catch (e) {
      throw new InputError(`${clusterField('certificate-authority-data')} holds no PEM certificate (${printable((e as Error).message.split('\n')[0])}): give the cluster's CA (kubectl config view --raw --minify shows it)`);
    }
  }
  if (!user) return;
  const userField = (field: string) => `${where}user "${printable(user.name)}": users[].user.${field}`;
  if (user.token !== undefined && NOT_IN_A_HEADER.test(user.token)) {
    throw new InputError(`${userField('token')} holds a line break or another control character, which no request header carries: `
      + 'give the token on one line (a token-file\'s trailing line break is dropped)');
  }
  for (const field of ['username', 'password'] as const) {
    if (user[field] !== undefined && NOT_IN_A_HEADER.test(user[field]!)) {
      throw new InputError(`${userField(field)} holds a line break or another control character, which no request header carries: fix it`);
    }
  }
  if ((user.certData === undefined) !== (user.keyData === undefined)) {
    const [given, missing] = user.certData === undefined ? ['client-key-data', 'client-certificate-data'] : ['client-certificate-data', 'client-key-data'];
    throw new InputError(`${userField(given)} is given without ${missing}: a client certificate authenticates with its key; give both (or neither)`);
  }
  if (user.certData === undefined || user.keyData === undefined) return;
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pemOf(user.certData));
  } catch (e) {
    throw new InputError(`${userField('client-certificate-data')} holds no PEM certificate (${printable((e as Error).message.split('\n')[0])}): give the user's client certificate`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pemOf(user.keyData));
  } catch (e) {
    throw new InputError(`${userField('client-key-data')} holds no PEM private key (${printable((e as Error).message.split('\n')[0])}): give the key of the client certificate`);
  }
  if (!cert.checkPrivateKey(key)) {
    throw new InputError(`${userField('client-key-data')} is not the key of client-certificate-data (the key of another certificate?): give the pair kubectl config view --raw shows`);
  }
}

/** What an exec credential plugin did, to explain its failure. */
interface PluginRun {
  readonly command: string;
  readonly args: readonly string[];
  child?: ChildProcess;
  spawnError?: NodeJS.ErrnoException;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  stderr: string;
  stdoutBytes: number;
  /** Its output closed: the plugin and everything that held its output are gone. */
  closed?: boolean;
  /** Why it was stopped (deadline, too much output). */
  stopped?: string;
  /** The token of its run in its environment (processes.ts): what it started is found by it, also outside its group. */
  readonly token: string;
}

/**
 * Starts the client's exec credential plugins in their own process group, with stdin closed and
 * their output bounded (the kubeconfig limit), records what they did, and stops them (the whole
 * group: a script's children too) when asked. Each carries the token of its run (processes.ts), so
 * that what it started in a session or group of its own (`setsid`, a daemon) is found and killed too
 * when the read ends, however the plugin ended. The client reads the ExecCredential as usual.
 */
export class ExecPlugins {
  readonly runs: PluginRun[] = [];

  /** Replaces the spawn of the client's exec authenticator (its documented test seam `execFn`). */
  install(kc: KubeConfig): void {
    const authenticators = (kc as unknown as { authenticators?: unknown[] }).authenticators ?? [];
    const exec = authenticators.find((a): a is { execFn: unknown } => typeof a === 'object' && a !== null && 'execFn' in a);
    if (!exec) throw new Error('@kubernetes/client-node: no exec authenticator to bound (the client changed?)');
    exec.execFn = (command: string, args: readonly string[] | undefined, options: SpawnOptions) => this.start(command, args ?? [], options);
  }

  private start(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
    const run: PluginRun = { command, args, stderr: '', stdoutBytes: 0, token: runToken() };
    this.runs.push(run);
    const env = { ...(options.env ?? process.env), [RUN_TOKEN_ENV]: run.token };
    const child = spawn(command, [...args], { ...options, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    run.child = child;
    const max = maxBytes('kubeconfig');
    child.on('error', (e) => { run.spawnError = e; });
    child.on('exit', (code, signal) => { run.exit = { code, signal }; });
    child.on('close', () => { run.closed = true; });
    child.stdout!.on('data', (c: Buffer | string) => {
      run.stdoutBytes += Buffer.byteLength(c);
      if (run.stdoutBytes > max) this.stop(run, `it printed more than ${formatMiB(max)}`);
    });
    child.stderr!.on('data', (c: Buffer | string) => {
      if (run.stderr.length < 4096) run.stderr += String(c);
    });
    return child;
  }

  private stop(run: PluginRun, why: string): void {
    const child = run.child;
    // what left its group (setsid, a daemon) carries its token: found whether the plugin still runs or not
    const tagged = () => { if (child?.pid !== undefined) killTagged(run.token); };
    // once its output closed, the group may be gone and its id reused: only the token is asked for then
    if (!child || child.pid === undefined || run.closed) return tagged();
    run.stopped ??= why;
    // its process group (alive while its output is open): a script's children too, which may hold the output after the script ended
    killGroup(child.pid);
    tagged();
    child.stdout?.destroy();
    child.stderr?.destroy();
  }

  /** Stops every plugin still running. */
  stopAll(why: string): void {
    for (const r of this.runs) this.stop(r, why);
  }

  /** Why authentication failed, from the last plugin run (or the client's own message), and what to do. */
  explain(error: Error, user: string, where: string): string {
    const run = this.runs[this.runs.length - 1];
    const own = printable(error.message.split('\n').find((l) => l.trim() !== '')?.trim() ?? '');
    if (!run) return `user "${printable(user)}" in ${where} cannot authenticate: ${own || error.name}; fix users[].user in the kubeconfig`;
    const plugin = `the exec credential plugin "${printable(run.command)}" of user "${printable(user)}"`;
    const again = `run it yourself to see why: ${printable([run.command, ...run.args].join(' '))}`;
    if (run.spawnError) {
      return run.spawnError.code === 'ENOENT'
        ? `${plugin} is not installed or not on PATH: install it, or fix users[].user.exec.command in ${where}`
        : `${plugin} cannot be started (${run.spawnError.code ?? run.spawnError.message}): check users[].user.exec in ${where}`;
    }
    if (run.stopped) return `${plugin} was stopped: ${run.stopped}; ${again}`;
    const stderr = printable(run.stderr.split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(-1)[0] ?? '');
    if (run.exit && (run.exit.code !== 0 || run.exit.signal)) {
      const how = run.exit.signal ? `was killed by ${run.exit.signal}` : `exited with code ${run.exit.code}`;
      return `${plugin} ${how}${stderr ? `: ${stderr.slice(0, 300)}` : ' without a message'}; ${again}`;
    }
    return `${plugin} printed no valid ExecCredential (${own.slice(0, 200) || 'no output'}); ${again}`;
  }
}
