import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { ApplicationWatch, applicationsPath, REFRESH_ANNOTATION } from './applications';
import { applySteps, ARGOCD_MANAGER, planSync, refusalText, SyncPlan, vendoredCrds } from './argocd-sync';
import { twinBinary } from './binary';
import { ChartMirror, packageChart, startChartMirror } from './chart-mirror';
import { ClusterNetwork } from './cluster-network';
import { ControlPlane, startControlPlane } from './control-plane';
import { bareRepository, commitTree, GitServer, startGitServer } from './git-server';
import { KueueProcess, loopbackKueue, planOf, requireUserNamespace, startKueue, startManagedKueue } from './kueue';
import { victoriaMetricsStages } from './kwok-stages';
import { MPI_OPERATOR_INSTALL, mpiOperatorInstallOf, MpiOperatorProcess, startMpiOperator } from './mpi-operator';
import { ManagedStarts } from './operator-process';
import { OperatorStandIns } from './operator-stand-ins';
import { HermeticNode, nodesOf } from './placement';
import { startTrainingOperator, trainingOperatorInstallOf, TrainingOperatorProcess } from './training-operator';
import { startTwin, Twin } from './twin';
import { defaultCacheDir } from '../cache/compiled-cache';
import { ClusterView, readClusters, renderClusterSources } from '../check';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { EngineBudget } from '../engines';
import { unpackedLayer } from '../engines/packaged';
import { MirrorMap, unmirrorUrl } from '../model/mirrors';
import { ClusterModel } from '../model/model';
import { LABELS, NODE_NAME_PLACEHOLDER } from '../model/names';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../paths';
import { manifestFileName } from '../render/manifest';
import { toYaml } from '../render/yaml';
import { loadModels, synth } from '../synth/pipeline';
import { ApplicationSource, releaseOfSource, VendoredChart } from '../upstream/releases';
import { ClusterRenders } from '../upstream/render';
import { RenderSession } from '../upstream/render-session';
import { VERSIONS } from '../versions';

/**
 * A twin of a described cluster: a hermetic control plane (control-plane.ts) with the cluster's Nodes run by KWOK,
 * what the cluster has before Argo CD, a clusters repository on a loopback Git server holding the render, and Argo CD
 * (twin.ts) bootstrapped from it exactly as the rendered README says. What the cluster tests run the real Argo CD on,
 * and what a test drives on day two: a commit pushed (render, push), a Node made NotReady, the Applications watched
 * (applications.ts).
 *
 * - **The repository.** The description, with `gitops.repoURL` naming `platform/clusters.git` on the loopback Git
 *   server and `mirrors.git` mapping `https://github.com/` to the server's `github/` folder (a site's own Git mirror),
 *   rendered by `synth` into the work tree's `dist/` and committed; Argo CD reads it over smart HTTP. Argo CD's install
 *   base (the argocd folder's remote base) is served from a mirror of the vendored release tree
 *   (`../shared/upstream-installs/argo-cd-<tag>/`), tagged as upstream tags it. Nothing reaches out.
 * - **The Nodes** of the description: the service node, `count` GPU workers (the description's sample node names,
 *   then `gpu-worker-<n>`) and the CPU workers, with the labels, taints and allocatable of the placement model
 *   (placement.ts nodesOf), Ready, run by KWOK.
 * - **Before Argo CD** (as on an Instant Cluster image): the CRDs of kinds nothing of the tree installs (but Argo CD's,
 *   which the bootstrap brings) and the namespaces it uses and nothing creates (argocd-sync.ts planSync); a
 *   pre-installed Kueue running for real (kueue.ts: its install as the toolkit renders it when it manages Kueue, its
 *   webhooks on loopback); a pre-installed MPI Operator running for real (mpi-operator.ts: its install as the toolkit
 *   renders it when it manages it, the operator with its ServiceAccount's rights); the GPU and Network Operator
 *   stand-ins (operator-stand-ins.ts); the VictoriaMetrics
 *   operator's status of scrapes and rules as KWOK stages (kwok-stages.ts).
 * - **A managed Kueue** (`installs.kueue: managed`): the same manager started once Argo CD has synced its install
 *   (kueue.ts startManagedKueue), its Configuration from the synced ConfigMap; the API server reaches its webhooks and
 *   visibility API at their Services' ClusterIPs through the twin's cluster network (cluster-network.ts, the stand-in
 *   for kube-proxy; the control plane's egress selector), so its APIServices turn Available as in a cluster.
 * - **A managed MPI Operator** (`installs.mpiOperator: managed`): the same command started once Argo CD has synced its
 *   install's ServiceAccount and bindings. Either way the MPIJobs Kueue admits get their launcher and workers from it
 *   (the launcher's pod runs until the MPIJob goes: kwok-stages.ts podCompleteButMpiLaunchers).
 * - **Not run**: the Training Operator (a PyTorchJob Kueue admits gets no pods on a twin; placement.ts placeSamples
 *   makes them by hand only where no twin runs), Dynamo's operator, and the VictoriaMetrics operator (its status of
 *   scrapes and rules: the KWOK stages above).
 * - **The bootstrap**: the commands of dist/<cluster>/README.md's "One cluster" block, run as written (kubectl of the
 *   toolkit's pinned engines, the admin kubeconfig), from the repository's work tree; Argo CD's processes start once
 *   its first command has applied Argo CD's install (its ServiceAccounts and argocd-cm are then there).
 *
 * Imports no test framework (issue 51's `rehearse` runs the same).
 */

type Json = Record<string, any>;

/** How long a managed Kueue waits for Argo CD to sync its install (wave 0: the first sync, with the charts' renders). */
const MANAGED_KUEUE_SYNC_MS = 10 * 60 * 1000;

/** The clusters repository's path on the Git server. */
const CLUSTERS_REPO = 'platform/clusters.git';
/** The Git server's folder of GitHub mirrors (mirrors.git maps https://github.com/ to it). */
const GITHUB_MIRROR = 'github';

export interface TwinClusterOptions {
  /** The description file (a fixture): read, pointed at the loopback repository and mirrors, rendered. */
  readonly description: string;
  /** Told what the start is doing, one line at a time. */
  readonly progress?: (line: string) => void;
  /** Keep the folders (control plane, twin, work tree) after stop. @default CONTROL_PLANE_KEEP=1 */
  readonly keep?: boolean;
  /** Edits the description before its first render (after it is pointed at the loopback repository). */
  readonly edit?: (d: Json) => void;
  /** The control plane's controllers (ControlPlaneOptions.controllers). @default its default: no node lifecycle controller */
  readonly controllers?: readonly string[];
  /** The Nodes to run (rehearse --snapshot/--kubeconfig: the cluster's own, cluster-nodes.ts). @default twinNodes: those the description implies */
  readonly nodes?: (model: ClusterModel) => HermeticNode[];
  /**
   * The description is a member of the fleet of its folder (fleet.yaml beside it): the folder's descriptions and
   * fleet.yaml are copied beside it into the work tree and rendered as `synth` renders a fleet (every member's
   * dist/<cluster>/ and dist/fleet/); Argo CD syncs the description's own folder. @default false: the description alone
   */
  readonly fleet?: boolean;
}

/** One command of the README's bootstrap, as run: its text, exit code and output. */
export interface BootstrapCommand {
  readonly command: string;
  readonly code: number;
  readonly output: string;
  readonly ms: number;
}

/**
 * The Nodes of the twin: those of the placement model (nodesOf), one per GPU worker of the description (the sample
 * node names first, then `gpu-worker-<n>`) and one per CPU worker, the MIG-enabled variant the model adds beside a
 * plain GPU worker left out (it is a simulation of one node kind, not a node of the cluster).
 */
export function twinNodes(model: ClusterModel): HermeticNode[] {
  const d = model.description;
  const named = d.samples.nodeNames;
  const counted = (prefix: string, count: number, given: readonly string[] = []) => [...given, ...Array.from({ length: count }, (_, i) => `${prefix}-${i + 1}`)].slice(0, count);
  const out: HermeticNode[] = [];
  for (const n of nodesOf(model)) {
    if (n.kind.migEnabled) continue;
    const names = n.kind.role === 'gpu' ? counted('gpu-worker', d.nodes.gpuWorkers.count, named.filter((x) => x !== NODE_NAME_PLACEHOLDER))
      : n.kind.role === 'cpu' ? counted('cpu-worker', d.nodes.cpuWorkers?.count ?? 0)
        : [n.node.metadata.name];
    for (const name of names) {
      out.push({ kind: n.kind, node: { ...n.node, metadata: { name, labels: { ...n.node.metadata.labels, [LABELS.hostname]: name } } } });
    }
  }
  return out;
}

/** The bootstrap commands of a rendered cluster's README ("One cluster" block): each an argument list, the comment cut. */
export function readmeBootstrap(readme: string): string[][] {
  const block = /### One cluster\s*\n+```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('the README has no "One cluster" bootstrap block');
  return block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l !== '').map((l) => {
    if (/["'`$\\|;&<>]/.test(l)) throw new Error(`the README's bootstrap command is not a plain argument list: ${l}`);
    return l.split(/\s+/);
  });
}

/** A twin of a described cluster (startTwinCluster). */
export class TwinCluster {
  /** The Applications as Argo CD reports them (started by bootstrap). */
  readonly watch: ApplicationWatch;
  /** The commands the bootstrap ran. */
  readonly bootstrapped: BootstrapCommand[] = [];
  /** When the root Application was applied (the README's second command): the bootstrap timeline's zero. */
  rootAppliedAt?: number;
  /**
   * A managed Kueue (`installs.kueue: managed`), started by bootstrap once Argo CD has synced its install
   * (kueue.ts startManagedKueue); fails naming what was not synced in time, or Kueue's log.
   */
  managedKueue?: Promise<KueueProcess>;
  /** The managed Kueue once it runs. */
  private startedKueue?: KueueProcess;
  /** The managed controllers' starts (Kueue, the MPI Operator), once Argo CD has synced their installs. */
  private readonly managedStarts = new ManagedStarts();
  /**
   * The MPI Operator running for real (mpi-operator.ts): a pre-installed one started with the twin, a managed one by
   * bootstrap once Argo CD has synced its install; fails naming what was not synced in time, or its log.
   */
  mpiOperator?: Promise<MpiOperatorProcess>;
  private startedMpiOperator?: MpiOperatorProcess;
  /**
   * The Training Operator running for real (training-operator.ts), started by bootstrap once Argo CD has synced its
   * install (a managed one: `installs.trainingOperator: managed`); fails naming what was not synced in time, or its log.
   */
  trainingOperator?: Promise<TrainingOperatorProcess>;
  private startedTrainingOperator?: TrainingOperatorProcess;
  private stopped = false;

  /** @internal */
  constructor(
    /** The folder of the work tree (`repo/`: clusters/, dist/) and the Git server's repositories (`git/`). */
    readonly dir: string,
    readonly cp: ControlPlane,
    readonly twin: Twin,
    readonly git: GitServer,
    /** The description as rendered (the fixture, pointed at the loopback repository and mirrors). */
    readonly description: Json,
    readonly model: ClusterModel,
    readonly nodes: readonly HermeticNode[],
    readonly standIns: OperatorStandIns,
    readonly kueue: KueueProcess | undefined,
    /** The sync plan of the first render: what the cluster had before Argo CD. */
    readonly plan: SyncPlan,
    private readonly keep: boolean,
    /** The managed installs' charts on loopback (none when the description manages no chart). */
    readonly chartMirror?: ChartMirror,
    /** The description is rendered with its fleet (TwinClusterOptions.fleet). */
    readonly fleet = false,
    /** The cluster network the API server reaches a managed Kueue's Services through (cluster-network.ts). */
    readonly network?: ClusterNetwork,
    /** A pre-installed MPI Operator, started with the twin. */
    runningMpiOperator?: MpiOperatorProcess,
  ) {
    this.watch = new ApplicationWatch(cp.client(), model.description.gitops.namespace);
    if (runningMpiOperator) this.mpiOperator = Promise.resolve(this.startedMpiOperator = runningMpiOperator);
  }

  /**
   * Why a managed controller the twin starts once Argo CD has synced its install (Kueue, the MPI Operator) did not start:
   * the first line of its failure, once its start has failed.
   */
  get managedStartFailure(): string | undefined {
    return this.managedStarts.failure;
  }

  /** The work tree of the clusters repository. */
  get workTree(): string {
    return path.join(this.dir, 'repo');
  }

  get bare(): string {
    return path.join(this.dir, 'git', CLUSTERS_REPO);
  }

  get name(): string {
    return this.model.name;
  }

  /** The description file in the work tree. */
  get descriptionFile(): string {
    return path.join(this.workTree, 'clusters', `${this.name}.yaml`);
  }

  /** The rendered cluster folder in the work tree (dist/<cluster>). */
  get clusterDir(): string {
    return path.join(this.workTree, 'dist', this.name);
  }

  /** The rendered file of one of the cluster's Applications (in dist/<cluster>/gitops/), relative to the work tree: what the README's commands name. */
  applicationFile(name: string): string {
    const file = manifestFileName({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: this.model.description.gitops.namespace } });
    return path.posix.join('dist', this.name, GITOPS_FOLDER, file);
  }

  /**
   * Renders the description again after `edit` (synth into the work tree's dist/, removing what the description no
   * longer renders), as a user does before a commit.
   */
  render(edit: (d: Json) => void = () => {}): void {
    edit(this.description);
    writeFileSync(this.descriptionFile, toYaml(this.description));
    renderInto(this.descriptionFile, path.join(this.workTree, 'dist'), this.fleet);
  }

  /**
   * Commits the work tree as the next commit of main (a push) and answers its SHA. Once the root Application exists,
   * the push is announced as a Git host's webhook announces it to Argo CD (util/webhook/webhook.go at v3.5.1: a merge
   * patch of the `argocd.argoproj.io/refresh: normal` annotation on each Application that tracks the pushed branch,
   * here the root: the others are pinned to commits), instead of leaving it to the next poll (timeout.reconciliation,
   * 120 s and more).
   */
  async push(message: string): Promise<string> {
    const sha = commitTree(this.bare, this.workTree, message);
    if (this.rootAppliedAt !== undefined) await this.refresh(this.name);
    return sha;
  }

  /** Asks Argo CD to compare an Application again now (its refresh annotation, as the webhook and `argocd app get --refresh` do). */
  async refresh(application: string): Promise<void> {
    await this.cp.client().call('PATCH', applicationsPath(this.model.description.gitops.namespace, application), {
      body: { metadata: { annotations: { [REFRESH_ANNOTATION]: 'normal' } } }, contentType: 'application/merge-patch+json',
    });
  }

  /** The rendered views of the work tree's clusters (check's reading), each with its model. */
  view(): ClusterView {
    const raw = readClusters(path.join(this.workTree, 'dist')).find((c) => c.name === this.name);
    if (!raw) throw new Error(`${this.name}: no rendered cluster in ${this.workTree}/dist`);
    return { ...raw, model: this.model };
  }

  /**
   * The bootstrap as dist/<cluster>/README.md says: each command of its "One cluster" block run as written (`kubectl
   * ... -w`, which watches, is the watch of this harness instead), with the toolkit's pinned kubectl and the admin
   * kubeconfig, from the work tree. Argo CD's processes start after the first command (its install); the Applications
   * are watched from the root's apply on. Throws naming a command that fails, with its output.
   */
  async bootstrap(opts: { readonly controllerArgs?: readonly string[] } = {}): Promise<void> {
    const kubectl = (await unpackedLayer(defaultCacheDir() || undefined)).kubectl;
    const commands = readmeBootstrap(readFileSync(path.join(this.clusterDir, 'README.md'), 'utf8'));
    let started = false;
    for (const argv of commands) {
      if (argv.includes('-w') || argv.includes('--watch')) continue;
      if (argv[0] !== 'kubectl') throw new Error(`the README's bootstrap runs ${argv[0]}, not kubectl: ${argv.join(' ')}`);
      if (!started && argv.includes('-f') && argv.some((a) => a.includes('/gitops/application.'))) {
        await this.twin.startArgoCd({ namespace: this.model.description.gitops.namespace, controllerArgs: opts.controllerArgs });
        await this.ociMirrorRepositories();
        started = true;
        this.rootAppliedAt = Date.now();
        this.watch.start();
        if (this.network && this.model.description.installs.kueue === 'managed') {
          const stopped = () => this.stopped;
          this.managedKueue = this.managedStarts.follow('Kueue', startManagedKueue(this.cp, this.plan, this.network, { syncedTimeoutMs: MANAGED_KUEUE_SYNC_MS, stopped }), (k) => {
            this.startedKueue = k;
          });
        }
        if (this.model.description.installs.trainingOperator === 'managed' && this.network) {
          const stopped = () => this.stopped;
          const network = this.network;
          this.trainingOperator = this.managedStarts.follow('Training Operator', startTrainingOperator(this.cp, trainingOperatorInstallOf(this.plan), network, { syncedTimeoutMs: MANAGED_KUEUE_SYNC_MS, stopped }), (t) => {
            this.startedTrainingOperator = t;
          });
        }
        if (this.model.description.installs.mpiOperator === 'managed') {
          const stopped = () => this.stopped;
          this.mpiOperator = this.managedStarts.follow('MPI Operator', startMpiOperator(this.cp, mpiOperatorInstallOf(this.plan), { syncedTimeoutMs: MANAGED_KUEUE_SYNC_MS, stopped }), (m) => {
            this.startedMpiOperator = m;
          });
        }
      }
      const run = await runCommand(kubectl, argv.slice(1), this.workTree, this.twin.env({ KUBECONFIG: this.cp.identity('admin').kubeconfig }));
      this.bootstrapped.push({ command: argv.join(' '), ...run });
      if (run.code !== 0) throw new Error(`the README's bootstrap command failed (exit ${run.code}): ${argv.join(' ')}\n${run.output}`);
    }
    if (!started) throw new Error('the README\'s bootstrap applies no root Application (dist/<cluster>/gitops/application.*.yaml)');
  }

  /**
   * The chart mirror's OCI repositories as Argo CD's repository Secrets (`type: oci`, `insecureOCIForceHttp`): Argo CD
   * reads an `oci://` source over HTTPS unless its repository says otherwise (reposerver/repository/repository.go,
   * util/oci/client.go at v3.5.1), and the mirror serves plain HTTP on loopback. A site's mirror is HTTPS, its
   * credentials in such a Secret (the description never holds them): the one object of the twin's own in Argo CD's
   * namespace.
   */
  private async ociMirrorRepositories(): Promise<void> {
    if (!this.chartMirror) return;
    const prefix = this.chartMirror.ociUrl('');
    const namespace = this.model.description.gitops.namespace;
    const urls = new Set(applicationSources(this.view()).map((src) => src.repoURL).filter((u): u is string => u?.startsWith(prefix) === true));
    let n = 0;
    for (const url of [...urls].sort()) {
      await this.cp.client().apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `twin-chart-mirror-${++n}`, namespace, labels: { 'argocd.argoproj.io/secret-type': 'repository' } },
        stringData: { type: 'oci', name: `twin-chart-mirror-${n}`, url, insecureOCIForceHttp: 'true' },
      }, { fieldManager: 'twin' });
    }
  }

  /** CPU seconds so far of every process of the twin: the control plane's, Argo CD's, KWOK's, Kueue's. */
  cpuSeconds(): Record<string, number> {
    const out: Record<string, number> = { ...this.cp.cpuSeconds() };
    for (const [c, u] of Object.entries(this.twin.resources())) out[c] = u.cpuSeconds;
    const k = (this.kueue ?? this.startedKueue)?.cpuSeconds();
    if (k !== undefined) out.kueue = k;
    const m = this.startedMpiOperator?.cpuSeconds();
    if (m !== undefined) out['mpi-operator'] = m;
    const t = this.startedTrainingOperator?.cpuSeconds();
    if (t !== undefined) out['training-operator'] = t;
    return out;
  }

  /** Stops everything: the watch, the stand-ins, Kueue, the MPI Operator, the twin, the Git server, the control plane; the folder unless kept. */
  async stop(opts: { keep?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const keep = this.keep || opts.keep === true;
    await this.watch.stop();
    await this.standIns.stop();
    await this.kueue?.stop({ keep });
    await this.managedKueue?.then((k) => k.stop({ keep }), () => {});
    await this.mpiOperator?.then((m) => m.stop({ keep }), () => {});
    await this.trainingOperator?.then((t) => t.stop({ keep }), () => {});
    await this.network?.stop();
    await this.twin.stop({ keep });
    await this.git.stop();
    await this.chartMirror?.stop();
    await this.cp.stop({ keep });
    if (keep) process.stderr.write(`twin cluster kept in ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs a command; answers its exit code and combined output (bounded), never throws on a status. */
export function runCommand(
  file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 300_000,
): Promise<{ code: number; output: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (c: Buffer) => { output = (output + c.toString()).slice(-64 * 1024); };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => { output += e.message; });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), output, ms: Date.now() - t0 });
    });
  });
}

/**
 * Renders one description into `out` as `synth --config` does (its cluster folder replaced, objects it no longer
 * renders removed), or with `fleet` every description of its folder as `synth` renders a fleet (the whole of `out`).
 * Schema validation is off: the API server of the twin is the validation here, and it costs some 10 s a render.
 */
export function renderInto(file: string, out: string, fleet = false): void {
  if (fleet) synth({ clustersDir: path.dirname(file), out, schemas: false, allowDelete: true });
  else synth({ configs: [file], out, schemas: false, allowDelete: true });
}

/** Argo CD's install tree (the vendored release) as a repository of the GitHub mirror, tagged as upstream tags it. */
function mirrorArgoCd(gitRoot: string): void {
  const release = VERSIONS.argocd;
  const repo = release.repoURL.replace(/^https:\/\/github\.com\//, '');
  const bare = bareRepository(path.join(gitRoot, GITHUB_MIRROR), repo);
  commitTree(bare, path.join(DEFAULT_UPSTREAM, `argo-cd-${release.version}`), `argo-cd ${release.version} (vendored tree)`, { tag: release.version });
}

/**
 * What the cluster has before Argo CD, applied as its installs left it: the CRDs of kinds nothing of the tree installs
 * and the namespaces nothing creates (planSync's pre-installed layer), but Argo CD's own CRDs, which the bootstrap's
 * first command brings.
 */
async function preinstall(cp: ControlPlane, plan: SyncPlan): Promise<void> {
  const steps = plan.steps.filter((s) => s.manager === 'pre-installed')
    .map((s) => ({ ...s, objects: s.objects.filter((o) => !(o.object.kind === 'CustomResourceDefinition' && ((o.object.spec as Json).group === 'argoproj.io'))) }));
  const report = await applySteps(cp.client(), steps);
  if (report.refused.length > 0) throw new Error(`what the cluster has before Argo CD was refused:\n${report.refused.map(refusalText).join('\n')}`);
}

/**
 * The sync plan of an install the description says is pre-installed, as the toolkit renders it when it manages it (the
 * same description with `installs.<install>: managed`: the upstream release the toolkit pins, with the toolkit's
 * settings), rendered in `work/<install>-install`: what the twin applies before Argo CD for a pre-installed operator
 * that runs for real.
 */
async function managedPlanOf(cp: ControlPlane, description: Json, install: 'kueue' | 'mpiOperator', work: string, fleet?: string): Promise<SyncPlan> {
  const managed = structuredClone(description);
  managed.installs = { ...managed.installs, [install]: 'managed' };
  const dir = path.join(work, `${install}-install`);
  // a fleet's member with its fleet beside it (rendered alone, as synth --config renders it: its role is read from the
  // fleet): a manager's Kueue configuration has the fleet's multiKueue block
  if (fleet) cpSync(fleet, path.join(dir, 'clusters'), { recursive: true });
  mkdirSync(path.join(dir, 'clusters'), { recursive: true });
  const file = path.join(dir, 'clusters', `${managed.name}.yaml`);
  writeFileSync(file, toYaml(managed));
  const { view, renders } = await renderedView(file, path.join(dir, 'dist'));
  return planSync(view, renders, vendoredCrds(DEFAULT_SCHEMAS), await cp.client().servedKinds());
}

/**
 * A pre-installed Kueue running for real: its install as the toolkit renders it when it manages Kueue (managedPlanOf:
 * the chart of the pinned release with the toolkit's Configuration), applied before Argo CD with its webhooks on
 * loopback (kueue.ts), and its manager started.
 */
async function preinstalledKueue(cp: ControlPlane, description: Json, work: string, fleet?: string): Promise<KueueProcess> {
  const full = await managedPlanOf(cp, description, 'kueue', work, fleet);
  // without its on-demand visibility API (kueue.ts turns its server off): an APIService nothing serves makes the
  // namespace controller's discovery fail, and no namespace could be deleted
  const withApi = planOf(full, /-kueue-install$/);
  const plan = { ...withApi, steps: withApi.steps.map((st) => ({ ...st, objects: st.objects.filter((o) => o.object.kind !== 'APIService') })) };
  const loopback = await loopbackKueue(plan);
  const report = await applySteps(cp.client(), [...plan.steps, { label: 'admission webhooks of Kueue', manager: ARGOCD_MANAGER, objects: plan.webhooks }]);
  if (report.refused.length > 0) throw new Error(`the pre-installed Kueue was refused:\n${report.refused.map(refusalText).join('\n')}`);
  return startKueue(cp, loopback);
}

/**
 * A pre-installed MPI Operator running for real: its install as the toolkit renders it when it manages the MPI Operator
 * (managedPlanOf: the upstream kustomize overlay of the pinned release: namespace, ServiceAccount, RBAC, Deployment),
 * applied before Argo CD as the cluster's image installed it, and its command started with that ServiceAccount's rights
 * (mpi-operator.ts).
 */
async function preinstalledMpiOperator(cp: ControlPlane, description: Json, work: string, fleet?: string): Promise<MpiOperatorProcess> {
  const plan = planOf(await managedPlanOf(cp, description, 'mpiOperator', work, fleet), MPI_OPERATOR_INSTALL);
  const report = await applySteps(cp.client(), plan.steps.map((st) => ({ ...st, objects: st.objects.filter((o) => o.application !== 'pre-installed') })));
  if (report.refused.length > 0) throw new Error(`the pre-installed MPI Operator was refused:\n${report.refused.map(refusalText).join('\n')}`);
  return startMpiOperator(cp, mpiOperatorInstallOf(plan));
}

/**
 * The upstream sources of a rendered cluster's Applications, each with the upstream URL a mirror of the description
 * stands for (unmirrorUrl), but the twin's own repositories: the managed installs' charts (a Helm repository or an
 * `oci://` artifact) and kustomize overlays (a Git repository at a tag).
 */
export function upstreamSourcesOf(view: ClusterView, mirrors: { readonly charts?: MirrorMap; readonly git?: MirrorMap }): ApplicationSource[] {
  return applicationSources(view)
    .map((s) => ({ ...s, repoURL: unmirrorUrl(unmirrorUrl(s.repoURL ?? '', mirrors.charts ?? {}), mirrors.git ?? {}) }))
    .filter((s) => s.repoURL !== '' && !/^(https?|oci):\/\/127\.0\.0\.1[:/]/.test(s.repoURL));
}

/** Every source of every Application a rendered cluster holds. */
function applicationSources(view: ClusterView): ApplicationSource[] {
  return view.folders.flatMap((f) => f.objects.filter((o) => o.kind === 'Application'))
    .flatMap((o) => {
      const spec = (o as Json).spec ?? {};
      return [spec.source, ...(spec.sources ?? [])].filter((s): s is ApplicationSource => s !== undefined);
    });
}

/** The Helm repository (http) or registry path (oci) a chart mirror serves an upstream chart repository under: its host and path. */
const mirrorPathOf = (repoURL: string) => repoURL.replace(/^[a-z]+:\/\//, '').replace(/\/+$/, '');

/**
 * Loopback mirrors of a rendered cluster's managed installs, made from the vendored releases (the package's copy of
 * ../shared/upstream-installs): each chart packaged as published into a chart mirror (chart-mirror.ts: a Helm
 * repository per upstream repository, an OCI registry for `oci://` ones), each kustomize overlay's vendored tree a
 * repository of the Git server's GitHub mirror, tagged as upstream tags it. Answers the `mirrors.charts` entries that
 * point the description at the chart mirror (none when nothing needs one), and the chart mirror when one was started.
 * A source with no vendored release is an error: the twin reaches nothing else.
 */
async function mirrorManagedInstalls(
  view: ClusterView, mirrors: Json, gitRoot: string, work: string,
): Promise<{ charts: Record<string, string>; mirror?: ChartMirror }> {
  const sources = upstreamSourcesOf(view, mirrors);
  const charts: Record<string, string> = {};
  const packaged: { release: VendoredChart; repoURL: string }[] = [];
  for (const s of sources) {
    const release = releaseOfSource(s);
    if (!release) throw new Error(`the twin serves no mirror of ${s.repoURL} ${s.chart ?? s.path ?? ''} ${s.targetRevision ?? ''}: no vendored release of it`);
    if (release.type === 'kustomize') {
      const repo = release.repoURL.replace(/^https:\/\/github\.com\//, '');
      if (repo === release.repoURL) throw new Error(`the twin mirrors Git repositories of github.com only, not ${release.repoURL}`);
      const bare = bareRepository(path.join(gitRoot, GITHUB_MIRROR), repo);
      if (!existsSync(path.join(bare, 'refs', 'tags', release.version))) {
        commitTree(bare, path.join(DEFAULT_UPSTREAM, release.folder), `${repo} ${release.version} (vendored tree)`, { tag: release.version });
      }
      continue;
    }
    // an oci:// source names the chart as its last segment; the mirror maps the repository above it
    const repoURL = s.repoURL!.startsWith('oci://') ? s.repoURL!.replace(/\/[^/]+\/?$/, '') : s.repoURL!;
    if (!packaged.some((p) => p.release === release && p.repoURL === repoURL)) packaged.push({ release, repoURL });
  }
  if (packaged.length === 0) return { charts };
  const helm = path.join(work, 'bin', 'helm');
  mkdirSync(path.dirname(helm), { recursive: true });
  const twin = await twinBinary();
  if (!existsSync(helm)) symlinkSync(twin.path, helm);
  const mirror = await startChartMirror(path.join(work, 'mirror'));
  try {
    for (const { release, repoURL } of packaged) {
      const archive = packageChart(release, { upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, helm, work: path.join(work, 'package'), crdFiles: twin.companions });
      const at = mirrorPathOf(repoURL);
      if (repoURL.startsWith('oci://')) {
        mirror.addToRegistry(`${at}/${release.chart}`, archive);
        charts[repoURL] = mirror.ociUrl(at);
      } else {
        mirror.addToHelmRepository(at, [archive], helm);
        charts[repoURL] = mirror.helmUrl(at);
      }
    }
  } catch (e) {
    await mirror.stop();
    throw e;
  }
  return { charts, mirror };
}

/** A description rendered into `out`, read as check reads it, and its sources rendered as check renders them. */
async function renderedView(
  file: string, out: string, rendered = false,
): Promise<{ view: ClusterView; renders: ClusterRenders; model: ClusterModel }> {
  if (!rendered) renderInto(file, out);
  const [model] = loadModels([file]);
  const raw = readClusters(out).find((c) => c.name === model.name);
  if (!raw) throw new Error(`${file}: synth rendered no cluster folder`);
  const view = { ...raw, model };
  // planSync reads the renders Argo CD applies; no rule runs here, so no second render of each chart
  const session = new RenderSession(defaultCacheDir(), new EngineBudget());
  const renders = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, session, reruns: false });
  return { view, renders, model };
}

/**
 * Brings up the twin of a description up to the bootstrap (TwinCluster.push commits the render, TwinCluster.bootstrap
 * runs the README's commands): the Git server and the rendered work tree, the control plane with the cluster's Nodes under KWOK, what the cluster has before Argo CD,
 * the stand-ins. Everything started is stopped again when a step fails.
 */
export async function startTwinCluster(opts: TwinClusterOptions): Promise<TwinCluster> {
  const say = opts.progress ?? (() => {});
  const dir = mkdtempSync(path.join(tmpdir(), 'twin-cluster-'));
  const keep = opts.keep ?? process.env.CONTROL_PLANE_KEEP === '1';
  const cleanup: (() => Promise<void>)[] = [];
  try {
    const gitRoot = path.join(dir, 'git');
    const git = await startGitServer(gitRoot);
    cleanup.push(() => git.stop());
    mirrorArgoCd(gitRoot);
    bareRepository(gitRoot, CLUSTERS_REPO);

    const description = parse(readFileSync(opts.description, 'utf8')) as Json;
    description.gitops = { ...description.gitops, repoURL: git.repoUrl(CLUSTERS_REPO) };
    description.mirrors = { ...description.mirrors, git: { ...description.mirrors?.git, 'https://github.com/': `${git.repoUrl(GITHUB_MIRROR)}/` } };
    opts.edit?.(description);
    const workTree = path.join(dir, 'repo');
    const clusters = path.join(workTree, 'clusters');
    const fleet = opts.fleet ? path.dirname(path.resolve(opts.description)) : undefined;
    if (fleet) {
      cpSync(fleet, clusters, { recursive: true });
      rmSync(path.join(clusters, path.basename(opts.description)));
    }
    const file = path.join(clusters, `${description.name}.yaml`);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, toYaml(description));
    say(`rendering ${description.name}${fleet ? ' with its fleet' : ''}`);
    const dist = path.join(workTree, 'dist');
    renderInto(file, dist, opts.fleet);
    const first = readClusters(dist).find((c) => c.name === description.name);
    if (!first) throw new Error(`${opts.description}: synth rendered no cluster folder`);
    const managed = await mirrorManagedInstalls(first, description.mirrors, gitRoot, path.join(dir, 'charts'));
    const chartMirror = managed.mirror;
    if (chartMirror) {
      cleanup.push(() => chartMirror.stop());
      say(`serving the managed installs' charts on ${chartMirror.helmUrl('').replace(/\/helm\/$/, '')}`);
      description.mirrors = { ...description.mirrors, charts: { ...description.mirrors?.charts, ...managed.charts } };
      writeFileSync(file, toYaml(description));
      renderInto(file, dist, opts.fleet);
    }
    const { view, renders, model } = await renderedView(file, dist, true);

    say('starting the control plane');
    const tenant = model.tenants[0];
    // checked first: where the machine refuses the namespace a managed Kueue runs in, the twin says so before it starts
    if (model.description.installs.kueue === 'managed') requireUserNamespace(dir);
    // a managed Kueue's webhooks and visibility API, a managed Training Operator's webhook, are reached at their
    // Services' ClusterIPs (cluster-network.ts)
    const network = model.description.installs.kueue === 'managed' || model.description.installs.trainingOperator === 'managed' ? await ClusterNetwork.start() : undefined;
    if (network) cleanup.push(() => network.stop());
    const cp = await startControlPlane({
      ...(tenant ? { identities: { tenant: { user: 'tenant', groups: [tenant.group] } } } : {}), controllers: opts.controllers, clusterNetwork: network?.socket,
    });
    cleanup.push(() => cp.stop({ keep }));
    const twin = await startTwin(cp, { keep });
    cleanup.push(() => twin.stop({ keep }));
    const nodes = opts.nodes?.(model) ?? twinNodes(model);
    for (const n of nodes) await cp.createNode(n.node);

    say('applying what the cluster has before Argo CD');
    const plan = planSync(view, renders, vendoredCrds(DEFAULT_SCHEMAS), await cp.client().servedKinds());
    await preinstall(cp, plan);
    const served = await cp.client().servedKinds();
    await twin.startKwok({ stages: victoriaMetricsStages(model.description.monitoring.namespace, (kind) => served.has(`operator.victoriametrics.com/v1beta1/${kind}`)) });
    // their failed passes and recoveries, with the time, beside the control plane's logs (kept with the twin's folder)
    const standInsLog = path.join(dir, 'operator-stand-ins.log');
    const standIns = new OperatorStandIns(cp.client(), { log: (line) => appendFileSync(standInsLog, `${new Date().toISOString()} ${line}\n`) });
    standIns.start();
    cleanup.push(() => standIns.stop());
    let kueue: KueueProcess | undefined;
    if (model.description.installs.kueue === 'preinstalled') {
      say('starting the pre-installed Kueue');
      kueue = await preinstalledKueue(cp, description, dir, fleet ? clusters : undefined);
      const started = kueue;
      cleanup.push(() => started.stop({ keep }));
    }
    let mpiOperator: MpiOperatorProcess | undefined;
    if (model.description.installs.mpiOperator === 'preinstalled') {
      say('starting the pre-installed MPI Operator');
      mpiOperator = await preinstalledMpiOperator(cp, description, dir, fleet ? clusters : undefined);
      const started = mpiOperator;
      cleanup.push(() => started.stop({ keep }));
    }
    return new TwinCluster(dir, cp, twin, git, description, model, nodes, standIns, kueue, plan, keep, chartMirror, opts.fleet, network, mpiOperator);
  } catch (e) {
    for (const c of cleanup.reverse()) await c().catch(() => {});
    if (!keep) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

