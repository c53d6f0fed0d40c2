import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { freePorts, httpGet, killGroup, killOnExit, kubeconfigText, tailOf } from '../../src/twin/control-plane';
import { serviceAccountToken } from '../../src/twin/kueue';
import { poll } from '../../src/twin/poll';
import { Twin } from '../../src/twin/twin';
import { runCommand } from '../../src/twin/twin-cluster';

/**
 * The `argocd` CLI of the twin (Argo CD v3.5.1's, from the twin binary) against an Argo CD API server of the twin's own:
 * what the escape hatches a cluster's README prints are run with, as an operator runs them. The API server runs out of
 * cluster beside the twin's controller and repo server (its Redis, its repo server), with a token of the rendered
 * `argocd-server` ServiceAccount (the rights the render gives it), plaintext on loopback and without login
 * (`--disable-auth`): how the CLI reaches and authenticates to an Argo CD is the operator's (`argocd login`), not what
 * is under test. Each command is the README's, with the connection flags added (`--server`, `--plaintext`).
 *
 * Imports no test framework.
 */

/** What a CLI command did. */
export interface CliRun {
  readonly command: string;
  readonly code: number;
  readonly output: string;
}

/** The API server of a twin and its CLI (startArgoCdServer). */
export class ArgoCdCli {
  private stopped = false;

  /** @internal */
  constructor(private readonly twin: Twin, private readonly server: ChildProcess, readonly port: number, readonly log: string) {}

  /**
   * Runs `argocd <args>` against the API server (its output bounded), as the operator would with a login: never
   * throws on an exit status.
   */
  run(args: readonly string[], timeoutMs = 180_000): Promise<CliRun> {
    const full = [...args, '--server', `127.0.0.1:${this.port}`, '--plaintext'];
    return runCommand(path.join(this.twin.dir, 'bin', 'argocd'), full, this.twin.dir, this.twin.env(), timeoutMs)
      .then(({ code, output }) => ({ command: `argocd ${args.join(' ')}`, code, output }));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const exited = this.server.exitCode !== null || this.server.signalCode !== null ? Promise.resolve() : new Promise((r) => this.server.once('exit', r));
    killGroup(this.server);
    await exited;
  }
}

/** Starts the twin's Argo CD API server (its controller and repo server running: startArgoCd) and answers its CLI. */
export async function startArgoCdServer(twin: Twin, namespace = 'argocd'): Promise<ArgoCdCli> {
  if (!twin.ports) throw new Error('the twin\'s Argo CD is not started: its API server needs its Redis and repo server');
  const [port, metrics] = await freePorts(2);
  const token = await serviceAccountToken(twin.cp.client(), namespace, 'argocd-server');
  const kubeconfig = path.join(twin.dir, 'argocd-server.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigText(twin.cp.server, twin.cp.caFile, `system:serviceaccount:${namespace}:argocd-server`, token), { mode: 0o600 });
  const log = path.join(twin.dir, 'logs', 'argocd-server.log');
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
  const cli = new ArgoCdCli(twin, server, port, log);
  const ready = await poll(async () => {
    if (server.exitCode !== null || server.signalCode !== null) throw new Error(`the twin's argocd-server exited; its log:\n${tailOf(log)}`);
    return (await httpGet(`http://127.0.0.1:${port}/healthz`))?.status === 200;
  }, (v) => v, 120_000, 500);
  if (!ready) {
    await cli.stop();
    throw new Error(`the twin's argocd-server did not answer within 120 s; its log:\n${tailOf(log)}`);
  }
  return cli;
}
