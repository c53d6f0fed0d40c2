import { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { GoBinary, KWOK_STAGES, twinBinary } from './binary';
import { ControlPlane, cpuSecondsOf, freePorts, GO_GC_PERCENT, httpGet, killGroup, kubeconfigText, launchLogged, tailOf } from './control-plane';
import { podCompleteButMpiLaunchers } from './kwok-stages';
import { serviceAccountToken } from './operator-process';
import { poll } from './poll';

/** What KWOK's start reads of a Stage document. */
interface KwokStage { readonly spec: { readonly resourceRef: { readonly apiGroup: string } } }

/**
 * The Argo CD twin's processes on a hermetic control plane (control-plane.ts), from one binary (binary.ts,
 * twinBinary; test/cluster/twin/): KWOK for the Nodes and the pods bound to them, and Argo CD's application controller
 * and repo server out of cluster, the way the release's Procfile runs them (`ARGOCD_FAKE_IN_CLUSTER=true`, a
 * kubeconfig), with Redis (miniredis) in a process of its own. Each process runs in its own process group with its log
 * in `<dir>/logs/<name>.log`, dies with this process (the twin's parent-death signal), and is stopped with stop().
 *
 * Imports no test framework: the twin's process management is what `rehearse` will run (issue 51).
 *
 * What the twin's processes see of the machine: PATH is the twin's own bin/ (Argo CD's names, kustomize and helm as
 * links to the one binary, Argo CD's git and gpg wrappers) and the system's folders (git); HOME, TMPDIR and Argo CD's
 * data folders are the twin's own; HTTP(S)_PROXY names a closed port of 127.0.0.1 for everything but loopback, so
 * that nothing reaches out (a source not mirrored on loopback fails, as it would on an air-gapped site).
 */

/** The names the one binary answers to (symbolic links in bin/, as Argo CD's image links its binary). */
const COMMANDS = ['argocd', 'argocd-application-controller', 'argocd-repo-server', 'argocd-applicationset-controller', 'argocd-server', 'argocd-git-ask-pass', 'kubectl', 'kwok', 'kustomize', 'helm', 'redis'] as const;

/** A process of the twin. */
export type TwinComponent = 'kwok' | 'redis' | 'argocd-repo-server' | 'argocd-application-controller';

/** A closed port: where every request that would leave the machine is sent. */
const NOWHERE = 'http://127.0.0.1:9';

export interface ArgoCdOptions {
  /** The namespace Argo CD runs in (its Applications, argocd-cm). @default 'argocd' */
  readonly namespace?: string;
  /** The ServiceAccount whose token the application controller uses. @default 'argocd-application-controller' */
  readonly serviceAccount?: string;
  /** More application controller flags. */
  readonly controllerArgs?: readonly string[];
  /** The controller's and the repo server's log level. @default 'info' */
  readonly logLevel?: string;
}

export interface KwokOptions {
  /** Stage documents besides KWOK's own (KWOK_STAGES), YAML. */
  readonly stages?: readonly string[];
  /**
   * Keep each Node's Lease as a kubelet does (KWOK's lease heartbeat, and its node-heartbeat-with-lease stage), so that
   * the node lifecycle controller may run: a Node whose lease KWOK stops renewing turns NotReady. @default true
   */
  readonly leases?: boolean;
  /** How long KWOK's start waits for the API server's OpenAPI to have every stage's group-version. @default 120000 */
  readonly openApiWaitMs?: number;
}

/** CPU seconds and peak resident memory of one process (its waited-for children included in the CPU). */
export interface ProcessUsage {
  readonly cpuSeconds: number;
  readonly peakMiB: number;
}

/** CPU seconds of a process and of its children it has waited for (Linux /proc: utime, stime, cutime, cstime). */
function cpuWithChildren(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return cpuSecondsOf(pid);
  }
}

/** Peak resident memory of a process (VmHWM), in MiB. */
export function peakMiB(pid: number | undefined): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** The twin of one control plane (startTwin): KWOK, then Argo CD once the bootstrap brought its ServiceAccount. */
export class Twin {
  private readonly procs = new Map<TwinComponent, ChildProcess>();
  private readonly usage = new Map<TwinComponent, ProcessUsage>();
  private stopped = false;
  /** Argo CD's ports on 127.0.0.1, once started. */
  ports?: { readonly redis: number; readonly repoServer: number; readonly repoServerMetrics: number; readonly controllerMetrics: number };

  /** @internal */
  constructor(
    readonly cp: ControlPlane,
    readonly binary: GoBinary,
    /** The twin's folder: bin/, logs/, home/, tmp/, Argo CD's data folders, kubeconfigs. */
    readonly dir: string,
    private readonly keep: boolean,
  ) {}

  /** The log file of a component. */
  logFile(c: TwinComponent): string {
    return path.join(this.dir, 'logs', `${c}.log`);
  }

  /** The last lines of each running component's log, for a failure message. */
  logs(lines = 30): string {
    return [...this.procs.keys()].map((c) => `--- ${c} (${this.logFile(c)})\n${tailOf(this.logFile(c), lines)}`).join('\n');
  }

  /** The environment of every process of the twin: its own PATH, HOME and TMPDIR, nothing reaching out. */
  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      PATH: `${path.join(this.dir, 'bin')}:/usr/local/bin:/usr/bin:/bin`,
      HOME: path.join(this.dir, 'home'),
      TMPDIR: path.join(this.dir, 'tmp'),
      HTTP_PROXY: NOWHERE,
      HTTPS_PROXY: NOWHERE,
      http_proxy: NOWHERE,
      https_proxy: NOWHERE,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
      GIT_CONFIG_NOSYSTEM: '1',
      GOGC: GO_GC_PERCENT,
      TWIN_PARENT_PID: String(process.pid),
      ...extra,
    };
  }

  /** Starts one component (`command` of the binary, run by that name), its output into its log. */
  private launch(component: TwinComponent, command: typeof COMMANDS[number], args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
    if (this.procs.has(component)) throw new Error(`the twin's ${component} runs already`);
    const child = launchLogged(path.join(this.dir, 'bin', command), args, { cwd: this.dir, log: this.logFile(component), env: this.env(env) });
    this.procs.set(component, child);
    return child;
  }

  /** Throws naming a component that has exited, with the tail of its log. */
  assertRunning(): void {
    for (const [c, p] of this.procs) {
      if (p.exitCode !== null || p.signalCode !== null) throw new Error(`the twin's ${c} exited (${p.signalCode ?? `exit ${p.exitCode}`}); its log:\n${tailOf(this.logFile(c))}`);
    }
  }

  /** Waits until `ready` answers true while every component runs; throws naming `what` and quoting its log. */
  private async waitReady(what: TwinComponent, ready: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
    const ok = await poll(async () => {
      this.assertRunning();
      return ready();
    }, (v) => v, timeoutMs, 250);
    if (!ok) throw new Error(`the twin's ${what} did not become ready within ${timeoutMs / 1000} s; its log:\n${tailOf(this.logFile(what))}`);
  }

  /**
   * KWOK with KWOK's own stages of the pinned release (node initialisation, the lease heartbeat, the fast pod
   * lifecycle: pods Running and Ready, pods of Jobs Succeeded but an MPIJob's launcher (kwok-stages.ts
   * podCompleteButMpiLaunchers), deleted pods gone, and the chaos stage that turns a labelled Node NotReady) and
   * `opts.stages`, managing every Node, as the admin.
   */
  async startKwok(opts: KwokOptions = {}): Promise<void> {
    const leases = opts.leases ?? true;
    const own = Object.entries(KWOK_STAGES)
      .filter(([k]) => leases || k !== 'nodeHeartbeatWithLease')
      .map(([k, f]) => {
        const stage = readFileSync(this.binary.companions[path.basename(f)], 'utf8').trim().replace(/^---\n/, '');
        return k === 'podComplete' ? podCompleteButMpiLaunchers(stage) : stage;
      });
    const stages = [...own, ...(opts.stages ?? []).map((s) => s.trim())];
    await this.waitForOpenApi(stages, opts.openApiWaitMs ?? 120_000);
    const config = path.join(this.dir, 'kwok-stages.yaml');
    writeFileSync(config, `${stages.join('\n---\n')}\n`);
    const [server] = await freePorts(1);
    this.launch('kwok', 'kwok', [
      `--kubeconfig=${this.cp.identity('admin').kubeconfig}`,
      `--config=${config}`,
      // a KwokConfiguration document setting only this exits at once (its parallelism defaults are not applied): a flag
      '--manage-all-nodes=true',
      `--server-address=127.0.0.1:${server}`,
      ...(leases ? ['--node-lease-duration-seconds=40'] : []),
    ]);
    await this.waitReady('kwok', async () => (await httpGet(`http://127.0.0.1:${server}/healthz`))?.status === 200);
  }

  /**
   * Waits until the API server's OpenAPI has the group-version of every stage's resource: KWOK reads each stage kind's
   * schema at its start and exits without it ("failed to get openapi spec: GroupVersion ... not found"), which a CRD
   * applied a moment before, served by discovery already, can still be.
   */
  private async waitForOpenApi(stages: readonly string[], timeoutMs: number): Promise<void> {
    const wanted = [...new Set(stages.map((s) => (parse(s) as KwokStage).spec.resourceRef.apiGroup))]
      .map((gv) => (gv.includes('/') ? `apis/${gv}` : `api/${gv}`));
    const missing = (index: unknown) => wanted.filter((p) => !Object.keys((index as { paths?: object } | undefined)?.paths ?? {}).includes(p));
    const index = await poll(() => this.cp.client().get('/openapi/v3'), (i) => missing(i).length === 0, timeoutMs, 250);
    if (missing(index).length > 0) throw new Error(`the API server's OpenAPI has no ${missing(index).join(', ')} within ${timeoutMs / 1000} s: KWOK cannot start its stages for them`);
  }

  /**
   * Argo CD out of cluster: Redis, the repo server, then the application controller with a token of the rendered
   * controller ServiceAccount (so with exactly the rights the render gives it), once the bootstrap has applied it.
   * Ready when the repo server answers its health check and the controller its own.
   */
  async startArgoCd(opts: ArgoCdOptions = {}): Promise<void> {
    const namespace = opts.namespace ?? 'argocd';
    const logLevel = opts.logLevel ?? 'info';
    const [redis, repoServer, repoServerMetrics, controllerMetrics] = await freePorts(4);
    this.ports = { redis, repoServer, repoServerMetrics, controllerMetrics };
    this.launch('redis', 'redis', [`--addr=127.0.0.1:${redis}`]);
    const data = (d: string) => path.join(this.dir, 'argocd', d);
    this.launch('argocd-repo-server', 'argocd-repo-server', [
      '--address=127.0.0.1', `--port=${repoServer}`, '--metrics-address=127.0.0.1', `--metrics-port=${repoServerMetrics}`,
      `--redis=127.0.0.1:${redis}`, `--loglevel=${logLevel}`,
    ], {
      ARGOCD_GPG_ENABLED: 'false',
      ARGOCD_GNUPGHOME: data('gpg'),
      ARGOCD_GPG_DATA_PATH: data('gpg-source'),
      ARGOCD_PLUGINSOCKFILEPATH: data('plugins'),
      ARGOCD_TLS_DATA_PATH: data('tls'),
      ARGOCD_SSH_DATA_PATH: data('ssh'),
    });
    await this.waitReady('argocd-repo-server', async () => (await httpGet(`http://127.0.0.1:${repoServerMetrics}/healthz?full=true`))?.status === 200);

    const admin = this.cp.client();
    const account = opts.serviceAccount ?? 'argocd-application-controller';
    const token = await serviceAccountToken(admin, namespace, account);
    const kubeconfig = path.join(this.dir, 'argocd-application-controller.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigText(this.cp.server, this.cp.caFile, `system:serviceaccount:${namespace}:${account}`, token), { mode: 0o600 });
    this.launch('argocd-application-controller', 'argocd-application-controller', [
      `--kubeconfig=${kubeconfig}`, `--namespace=${namespace}`, `--redis=127.0.0.1:${redis}`, `--repo-server=127.0.0.1:${repoServer}`,
      `--metrics-port=${controllerMetrics}`, '--persist-resource-health=true', `--loglevel=${logLevel}`,
      ...(opts.controllerArgs ?? []),
    ], {
      // the in-cluster destination (https://kubernetes.default.svc) is this process's own configuration: with
      // ARGOCD_FAKE_IN_CLUSTER, client-go's default loading rules ($KUBECONFIG), not --kubeconfig
      ARGOCD_FAKE_IN_CLUSTER: 'true', KUBECONFIG: kubeconfig, ARGOCD_TLS_DATA_PATH: data('tls'), ARGOCD_SSH_DATA_PATH: data('ssh'),
    });
    await this.waitReady('argocd-application-controller', async () => (await httpGet(`http://127.0.0.1:${controllerMetrics}/healthz`))?.status === 200);
  }

  /** CPU seconds and peak memory of each component so far (a stopped one: at its stop). */
  resources(): Partial<Record<TwinComponent, ProcessUsage>> {
    const out: Partial<Record<TwinComponent, ProcessUsage>> = {};
    for (const [c, p] of this.procs) {
      const cpu = cpuWithChildren(p.pid);
      const peak = peakMiB(p.pid);
      if (cpu !== undefined && peak !== undefined) this.usage.set(c, { cpuSeconds: cpu, peakMiB: peak });
      const u = this.usage.get(c);
      if (u) out[c] = u;
    }
    return out;
  }

  /** Stops every component (SIGKILL to each process group) and removes the folder unless kept. */
  async stop(opts: { keep?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.resources();
    const exits = [...this.procs.values()].map((p) => (p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', r))));
    for (const p of this.procs.values()) killGroup(p);
    await Promise.all(exits);
    if (this.keep || opts.keep) process.stderr.write(`twin kept in ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The twin's folder for a control plane, with the binary (built first when missing: binary.ts) linked under each of its
 * names and Argo CD's wrappers beside them; nothing runs yet (startKwok, startArgoCd).
 */
export async function startTwin(cp: ControlPlane, opts: { keep?: boolean } = {}): Promise<Twin> {
  const binary = await twinBinary();
  const dir = mkdtempSync(path.join(tmpdir(), 'twin-'));
  for (const d of ['bin', 'logs', 'home', 'tmp', 'argocd/gpg', 'argocd/gpg-source', 'argocd/plugins', 'argocd/tls', 'argocd/ssh']) mkdirSync(path.join(dir, d), { recursive: true });
  for (const c of COMMANDS) symlinkSync(binary.path, path.join(dir, 'bin', c));
  for (const w of ['git-verify-wrapper.sh', 'gpg-wrapper.sh']) symlinkSync(binary.companions[w], path.join(dir, 'bin', w));
  return new Twin(cp, binary, dir, process.env.CONTROL_PLANE_KEEP === '1' || opts.keep === true);
}
