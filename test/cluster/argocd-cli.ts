import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { freePorts, httpGet, killGroup, killOnExit, kubeconfigText, tailOf } from '../../src/twin/control-plane';
import { serviceAccountToken } from '../../src/twin/operator-process';
import { poll } from '../../src/twin/poll';
import { Twin } from '../../src/twin/twin';
import { runCommand } from '../../src/twin/twin-cluster';

/**
 * The `argocd` CLI and `kubectl` of the twin (Argo CD v3.5.1's CLI and k8s.io/kubectl, from the twin binary): what the
 * escape hatches the docs print are run with, as an operator runs them, `kubectl` with the admin's kubeconfig (its
 * current namespace Argo CD's).
 *
 * The README says `argocd login --core`; the CLI runs here against an Argo CD API server of the twin's own instead,
 * because core mode cannot serve any command on a twin: it starts the API server in the CLI's process
 * (cmd/argocd/commands/headless/headless.go MaybeStartLocalServer), whose Redis cache and repo server client each
 * port-forward to the `argocd-redis` and `argocd-repo-server` pods (forwardCacheClient, forwardRepoClientset,
 * util/kube/portforwarder.go), and a port-forward needs a kubelet: the twin's pods are KWOK's, its Nodes have no
 * addresses, and `argocd app terminate-op` and `argocd app confirm-deletion` in core mode failed on the twin with
 * "error upgrading connection: unable to upgrade connection: no preferred addresses found; known addresses: []".
 * The API server runs out of cluster beside the twin's controller and repo server (its Redis, its repo server), with
 * a token of the rendered `argocd-server` ServiceAccount (the rights the render gives it), plaintext on loopback and
 * without login (`--disable-auth`); each command is the README's, with the connection flags added (`--server`,
 * `--plaintext`).
 *
 * Imports no test framework.
 */

/** What a CLI command did. */
export interface CliRun {
  readonly command: string;
  readonly code: number;
  readonly output: string;
}

/**
 * The twin's `argocd` CLI (against its API server, started at the first command) and `kubectl` (startArgoCdCli), each
 * run in the twin's work tree (where a README's relative `-f dist/...` is read, as the operator runs it in the clusters
 * repository).
 */
export class ArgoCdCli {
  private server?: { process: ChildProcess; port: number };
  private starting?: Promise<{ process: ChildProcess; port: number }>;
  private stopped = false;

  /** @internal */
  constructor(private readonly twin: Twin, private readonly namespace: string, readonly kubeconfig: string, private readonly workTree: string) {}

  /** The log of the twin's API server (empty until a command needed it). */
  get log(): string {
    return path.join(this.twin.dir, 'logs', 'argocd-server.log');
  }

  private env(): NodeJS.ProcessEnv {
    return this.twin.env({ KUBECONFIG: this.kubeconfig });
  }

  /** Runs `argocd <args>` against the twin's API server, as the operator would with a login (its output bounded). Never throws on an exit status. */
  async run(args: readonly string[], timeoutMs = 180_000): Promise<CliRun> {
    const { port } = await this.apiServer();
    const { code, output } = await runCommand(path.join(this.twin.dir, 'bin', 'argocd'), [...args, '--server', `127.0.0.1:${port}`, '--plaintext'], this.workTree, this.env(), timeoutMs);
    return { command: `argocd ${args.join(' ')}`, code, output };
  }

  /** Runs `kubectl <args>` (the twin's: k8s.io/kubectl of Argo CD's module graph) with the admin's kubeconfig. Never throws on an exit status. */
  async kubectl(args: readonly string[], timeoutMs = 180_000): Promise<CliRun> {
    const { code, output } = await runCommand(path.join(this.twin.dir, 'bin', 'kubectl'), args, this.workTree, this.env(), timeoutMs);
    return { command: `kubectl ${args.join(' ')}`, code, output };
  }

  /**
   * Runs a command line as printed (`kubectl ...` or `argocd ...`, shell quoting and `$(date ...)` included) with
   * `sh -c`, the twin's `kubectl` and `argocd` first on PATH and the admin's kubeconfig; `argocd` against the twin's API
   * server. Never throws on an exit status.
   */
  async shell(line: string, timeoutMs = 180_000): Promise<CliRun> {
    const argocd = line.trim().startsWith('argocd ');
    const full = argocd ? `${line} --server 127.0.0.1:${(await this.apiServer()).port} --plaintext` : line;
    // exec: the command replaces the shell, so that the twin binary's parent is this process (TWIN_PARENT_PID) and the bound kills it
    const { code, output } = await runCommand('/bin/sh', ['-c', `exec ${full}`], this.workTree, this.env(), timeoutMs);
    return { command: line, code, output };
  }

  private apiServer(): Promise<{ process: ChildProcess; port: number }> {
    if (this.stopped) return Promise.reject(new Error('the twin\'s argocd CLI is stopped'));
    this.starting ??= startApiServer(this.twin, this.namespace, this.log).then((s) => {
      this.server = s;
      return s;
    });
    return this.starting;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.starting?.catch(() => undefined);
    const p = this.server?.process;
    if (!p) return;
    const exited = p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', r));
    killGroup(p);
    await exited;
  }
}

/**
 * The twin's `argocd` CLI and `kubectl` with `kubeconfig` (the admin's; its current namespace `namespace`), run in
 * `workTree` (the clusters repository's working tree), the twin's Argo CD running (startArgoCd).
 */
export async function startArgoCdCli(twin: Twin, kubeconfig: string, workTree: string, namespace = 'argocd'): Promise<ArgoCdCli> {
  if (!twin.ports) throw new Error('the twin\'s Argo CD is not started');
  const config = parse(readFileSync(kubeconfig, 'utf8')) as { 'contexts': { name: string; context: Record<string, unknown> }[]; 'current-context': string };
  for (const c of config.contexts) if (c.name === config['current-context']) c.context.namespace = namespace;
  const own = path.join(twin.dir, 'operator.kubeconfig');
  writeFileSync(own, stringify(config), { mode: 0o600 });
  return new ArgoCdCli(twin, namespace, own, workTree);
}

/** Starts the twin's Argo CD API server (its controller and repo server running: startArgoCd); answers it once healthy. */
async function startApiServer(twin: Twin, namespace: string, log: string): Promise<{ process: ChildProcess; port: number }> {
  if (!twin.ports) throw new Error('the twin\'s Argo CD is not started: its API server needs its Redis and repo server');
  const [port, metrics] = await freePorts(2);
  const token = await serviceAccountToken(twin.cp.client(), namespace, 'argocd-server');
  const kubeconfig = path.join(twin.dir, 'argocd-server.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigText(twin.cp.server, twin.cp.caFile, `system:serviceaccount:${namespace}:argocd-server`, token), { mode: 0o600 });
  const fd = openSync(log, 'a');
  let server: ChildProcess;
  try {
    server = spawn(path.join(twin.dir, 'bin', 'argocd-server'), [
      `--kubeconfig=${kubeconfig}`, `--namespace=${namespace}`, '--address=127.0.0.1', `--port=${port}`, `--metrics-port=${metrics}`,
      `--redis=127.0.0.1:${twin.ports.redis}`, `--repo-server=127.0.0.1:${twin.ports.repoServer}`, '--insecure', '--disable-auth',
      `--staticassets=${path.join(twin.dir, 'tmp')}`,
    ], { cwd: twin.dir, detached: true, stdio: ['ignore', fd, fd], env: twin.env({ ARGOCD_FAKE_IN_CLUSTER: 'true', KUBECONFIG: kubeconfig }) });
  } finally {
    closeSync(fd);
  }
  server.on('error', () => {});
  killOnExit(server);
  const ready = await poll(async () => {
    if (server.exitCode !== null || server.signalCode !== null) throw new Error(`the twin's argocd-server exited; its log:\n${tailOf(log)}`);
    return (await httpGet(`http://127.0.0.1:${port}/healthz`))?.status === 200;
  }, (v) => v, 120_000, 500);
  if (!ready) {
    killGroup(server);
    throw new Error(`the twin's argocd-server did not answer within 120 s; its log:\n${tailOf(log)}`);
  }
  return { process: server, port };
}
