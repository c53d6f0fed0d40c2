import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ControlPlane, cpuSecondsOf, GO_GC_PERCENT, killGroup, killOnExit, kubeconfigText, tailOf } from './control-plane';
import { KubeClient, KubeObject } from './kube-client';
import { poll } from './poll';

/**
 * A controller of the twin run out of cluster as a process of its own (Kueue's manager, the MPI Operator): its log,
 * whether it exited, its CPU seconds, and a stop that kills its process group and removes its folder (kept with
 * `keep` or CONTROL_PLANE_KEEP=1).
 */
export class OperatorProcess {
  private stopped = false;

  constructor(
    /** What it is, in the line that says its folder was kept. */
    private readonly what: string,
    /** Its folder (kubeconfig, configuration, log). */
    readonly dir: string,
    private readonly child: ChildProcess,
    readonly logFile: string,
  ) {}

  /** The last lines of its log. */
  log(lines = 40): string {
    return tailOf(this.logFile, lines);
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** CPU seconds (user + system) the process has used so far (Linux /proc). */
  cpuSeconds(): number | undefined {
    return cpuSecondsOf(this.child.pid);
  }

  async stop(opts: { keep?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (!this.exited) {
      const exit = new Promise((r) => this.child.once('exit', r));
      killGroup(this.child);
      await exit;
    }
    if (opts.keep || process.env.CONTROL_PLANE_KEEP === '1') process.stderr.write(`${this.what} kept in ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The objects at `paths` (API paths) once every one of them is on the server, waited for up to `timeoutMs` (what a
 * controller starts on: a managed one's objects are Argo CD's to sync). Throws naming those still not there, or as soon
 * as `stopped` says the twin stopped.
 */
export async function untilOnServer(
  client: KubeClient, paths: readonly string[], what: string, opts: { readonly timeoutMs: number; readonly stopped?: () => boolean },
): Promise<KubeObject[]> {
  const found = await poll(async () => {
    if (opts.stopped?.()) throw new Error(`the twin stopped before ${what} was on the server`);
    return Promise.all(paths.map((u) => client.get(u)));
  }, (all) => all.every((o) => o !== undefined), opts.timeoutMs, 1000);
  const missing = paths.filter((_, i) => found[i] === undefined);
  if (missing.length > 0) throw new Error(`${what} was not on the server within ${opts.timeoutMs / 1000} s: not there: ${missing.join(', ')}`);
  return found as KubeObject[];
}

/**
 * How long the twin's controllers' tokens are asked to last (TokenRequest's expirationSeconds): a year, beyond any
 * twin (a test's lives minutes, a rehearsal's or a kept one's hours), so that none loses its credentials while it runs.
 * The test control plane sets no `--service-account-max-token-expiration`, so the API server grants it whole;
 * serviceAccountToken throws where a server grants less.
 */
export const TOKEN_SECONDS = 365 * 24 * 3600;

/**
 * A token of a ServiceAccount (TokenRequest) for a controller the twin runs out of cluster, asked for TOKEN_SECONDS.
 * Throws when the API server grants it for less (a cap of `--service-account-max-token-expiration`): the controller
 * would lose its rights while the twin still runs, failing later with nothing to say why.
 */
export async function serviceAccountToken(client: KubeClient, namespace: string, name: string): Promise<string> {
  const asked = Date.now();
  const r = await client.call('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: TOKEN_SECONDS } },
  }) as { status: { token: string; expirationTimestamp: string } };
  const lasts = (Date.parse(r.status.expirationTimestamp) - asked) / 1000;
  // the server's timestamp has whole seconds and its clock reads a moment after `asked`
  if (!(lasts >= TOKEN_SECONDS - 60)) {
    throw new Error(`the API server granted the token of ServiceAccount ${namespace}/${name} until ${r.status.expirationTimestamp} (${Math.round(lasts)} s), `
      + `not the ${TOKEN_SECONDS} s asked: a controller of the twin would lose its credentials while the twin runs (its --service-account-max-token-expiration?)`);
  }
  return r.status.token;
}

/** How the twin starts a controller out of cluster (startOperatorProcess). */
export interface OperatorCommand {
  /** Its name: `<name>.log` and `<name>.kubeconfig` in its folder; the line that says the folder was kept names it. */
  readonly name: string;
  /** What it is in a failure's message ("Kueue", "the MPI Operator"). */
  readonly title: string;
  /** Its folder (made by the caller), removed when it stops. */
  readonly dir: string;
  /** The ServiceAccount of its Deployment, whose token it runs with. */
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Its command line, given its kubeconfig's path (also `$KUBECONFIG`). */
  readonly argv: (kubeconfig: string) => string[];
  /** What runs that line under setpriv's parent-death signal, when not the line itself (kueue.ts visibilityNamespace). */
  readonly wrap?: (line: string[]) => string[];
  /** Its environment beyond PATH, HOME (its folder), GOGC and KUBECONFIG. */
  readonly env?: Readonly<Record<string, string>>;
}

/** When a started controller counts as up (startOperatorProcess). */
export interface OperatorReadiness<P extends OperatorProcess> {
  /** Whether it is up (its health or readiness endpoint answers, it holds its leader lease). */
  readonly check: (operator: P) => Promise<boolean>;
  /** The failure when it is not up in time ("did not become ready ... in time"). */
  readonly notUp: string;
  readonly timeoutMs: number;
  readonly stopped?: () => boolean;
}

/**
 * Starts a controller out of cluster as a pod would run it, with what a pod would have given it supplied: a kubeconfig
 * of its ServiceAccount's token (so it acts with exactly the rights its install's RBAC gives it), its log in its
 * folder, and setpriv's parent-death signal (it dies with the test process; killed too when this process exits), then
 * waits until `ready` says it is up. Fails, the process stopped and its folder kept, with the last lines of its log.
 */
export async function startOperatorProcess<P extends OperatorProcess>(
  cp: ControlPlane, command: OperatorCommand, made: (child: ChildProcess, logFile: string) => P, ready: OperatorReadiness<P>,
): Promise<P> {
  const { name, title, dir, namespace, serviceAccount } = command;
  const token = await serviceAccountToken(cp.client(), namespace, serviceAccount);
  const kubeconfig = path.join(dir, `${name}.kubeconfig`);
  writeFileSync(kubeconfig, kubeconfigText(cp.server, cp.caFile, `system:serviceaccount:${namespace}:${serviceAccount}`, token), { mode: 0o600 });
  const line = ['setpriv', '--pdeathsig', 'KILL', '--', ...command.argv(kubeconfig)];
  const [program, ...args] = command.wrap ? command.wrap(line) : line;
  const logFile = path.join(dir, `${name}.log`);
  const log = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(program, args, {
      cwd: dir,
      detached: true,
      stdio: ['ignore', log, log],
      env: { PATH: process.env.PATH, HOME: dir, GOGC: GO_GC_PERCENT, KUBECONFIG: kubeconfig, ...command.env },
    });
    child.on('error', () => {});
  } finally {
    closeSync(log);
  }
  const operator = made(child, logFile);
  killOnExit(child);
  try {
    const up = await poll(async () => {
      if (operator.exited) throw new Error(`${title} exited while it started`);
      if (ready.stopped?.()) throw new Error(`the twin stopped while ${title} started`);
      return ready.check(operator);
    }, (u) => u, ready.timeoutMs);
    if (!up) throw new Error(ready.notUp);
    return operator;
  } catch (e) {
    const tail = operator.log();
    await operator.stop({ keep: true });
    throw new Error(`${(e as Error).message} (${dir}); its log:\n${tail}`);
  }
}

/**
 * The controllers a twin starts once Argo CD has synced their installs (a managed Kueue, a managed MPI Operator),
 * followed: why the first that failed did not start (the first line of its failure), which ends a rehearsal with its
 * reason (rehearse.ts).
 */
export class ManagedStarts {
  failure?: string;

  /** Follows the start of `what` ("Kueue"): `started` once it runs, `failure` when it fails first. */
  follow<P>(what: string, start: Promise<P>, started: (operator: P) => void): Promise<P> {
    start.then(started, (e: Error) => {
      this.failure ??= `the managed ${what} did not start: ${e.message.split('\n')[0]}`;
    });
    return start;
  }
}

/** An operator's Deployment as its install renders it (deploymentOf). */
export interface OperatorDeployment {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Its container's arguments. */
  readonly args: readonly string[];
  /** What must be on the server before it starts: its ServiceAccount and the bindings of its rights (API paths). */
  readonly needs: readonly string[];
}

/**
 * The Deployment of `objects` (an install's) with a container `container`: its namespace, ServiceAccount, the
 * container's arguments, and the API paths of that ServiceAccount and of the install's role bindings. Throws, naming
 * `what`, when the install has no such Deployment.
 */
export function deploymentOf(objects: readonly KubeObject[], container: string, what: string): OperatorDeployment {
  type Json = Record<string, any>;
  const deployment = objects.find((o) => o.kind === 'Deployment' && ((o.spec as Json)?.template?.spec?.containers ?? []).some((c: Json) => c.name === container));
  if (!deployment) throw new Error(`${what}'s install has no Deployment with a container ${container}`);
  const pod = (deployment.spec as Json).template.spec as Json;
  const namespace = deployment.metadata.namespace!;
  const serviceAccount = (pod.serviceAccountName ?? 'default') as string;
  const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')
    .map((o) => (o.kind === 'ClusterRoleBinding' ? `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${o.metadata.name}` : `/apis/rbac.authorization.k8s.io/v1/namespaces/${o.metadata.namespace}/rolebindings/${o.metadata.name}`));
  return {
    namespace,
    serviceAccount,
    args: ((pod.containers as Json[]).find((c) => c.name === container)!.args ?? []) as string[],
    needs: [`/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}`, ...bindings],
  };
}
