import { ClusterIndex } from './cluster-index';
import { ClusterView } from './cluster-view';
import { admissionChecksOf } from './kueue';
import { Finding, Rule, Severity } from './rule';
import { isJsonObject } from '../json';
import { workerIdentityName } from '../model/multikueue-role';
import { MULTIKUEUE, NAMESPACES } from '../model/names';
import { quantityNanos } from '../model/quantity';
import { Manifest } from '../render/manifest';

/*
 * Checks across a MultiKueue fleet: a manager's ClusterQueues admit Workloads and Kueue copies them to the workers of
 * their MultiKueueConfig, into the same namespace and LocalQueue. Each cluster is rendered (and checked) on its own;
 * what the fleet rules need of it is kept as plain data (MultiKueueFacts: it crosses render threads, and `check` holds
 * one cluster's tree at a time), and the rules run over the facts of the whole fleet once every cluster is done.
 */

const KUEUE = 'kueue.x-k8s.io';

export interface QueueFacts {
  readonly name: string;
  readonly admissionChecks: readonly string[];
  readonly covered: readonly string[];
  readonly flavors: readonly { readonly name: string; readonly resources: readonly { readonly name: string; readonly nominalQuota: string }[] }[];
}

/** What the fleet rules need of one rendered cluster, as plain data. */
export interface MultiKueueFacts {
  readonly cluster: string;
  /** The manager whose identity the cluster renders (it is that manager's worker). */
  readonly workerOf?: string;
  readonly localQueues: readonly { readonly namespace: string; readonly name: string; readonly clusterQueue: string }[];
  readonly clusterQueues: readonly QueueFacts[];
  readonly flavors: readonly { readonly name: string; readonly topologyName?: string }[];
  readonly topologies: readonly { readonly name: string; readonly levels: readonly string[] }[];
  /** MultiKueue's AdmissionChecks: name and MultiKueueConfig. */
  readonly admissionChecks: readonly { readonly name: string; readonly config?: string }[];
  readonly configs: readonly { readonly name: string; readonly clusters: readonly string[] }[];
  /** How the manager reaches each worker: its kubeconfig Secret (and the server the fleet names for it), or its ClusterProfile. */
  readonly clusters: readonly { readonly name: string; readonly secret?: string; readonly server?: string; readonly clusterProfile?: string }[];
  /** Job integrations of the cluster's rendered Kueue configuration (a Kueue the toolkit installs); undefined: not rendered. */
  readonly frameworks?: readonly string[];
  /** The multiKueue block of that configuration (dispatcherName, gcInterval, origin, workerLostTimeout), as strings. */
  readonly settings?: Readonly<Record<string, string>>;
  /** Job APIs of custom resources the cluster serves, as its description says (`kubeflow.org/MPIJob`); undefined: not known. */
  readonly jobApis?: readonly string[];
}

type Json = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const spec = (m: Manifest): Json => (isJsonObject(m.spec) ? m.spec : {});

/** The job kinds a Kueue integration's MultiKueue adapter watches on every worker (custom resources only; Jobs and Pods are built in). */
export const INTEGRATION_APIS: Readonly<Record<string, string>> = {
  'kubeflow.org/mpijob': 'kubeflow.org/MPIJob',
  'kubeflow.org/pytorchjob': 'kubeflow.org/PyTorchJob',
};

function queueFacts(cq: Manifest): QueueFacts {
  const groups = Array.isArray(spec(cq).resourceGroups) ? (spec(cq).resourceGroups as Json[]) : [];
  const covered = groups.flatMap((g) => (Array.isArray(g.coveredResources) ? g.coveredResources.filter((r): r is string => typeof r === 'string') : []));
  const flavors = groups.flatMap((g) => (Array.isArray(g.flavors) ? (g.flavors as Json[]) : [])).map((f) => ({
    name: str(f.name) ?? '',
    resources: (Array.isArray(f.resources) ? (f.resources as Json[]) : []).map((r) => ({ name: str(r.name) ?? '', nominalQuota: String(r.nominalQuota ?? '0') })),
  }));
  return { name: cq.metadata.name, admissionChecks: admissionChecksOf(cq), covered, flavors };
}

/**
 * The facts of one rendered cluster, or undefined when it takes no part in a MultiKueue fleet (no MultiKueue objects,
 * no identity of a manager): the fleet rules then have nothing to say about it.
 */
export function multiKueueFacts(view: ClusterView): MultiKueueFacts | undefined {
  let member = false;
  for (const f of view.folders) {
    for (const m of f.objects) {
      if ((m.kind === 'MultiKueueConfig' || m.kind === 'MultiKueueCluster') && m.apiVersion.startsWith(`${KUEUE}/`)) member = true;
      if (m.kind === 'ServiceAccount' && m.metadata.labels?.[MULTIKUEUE.managerLabel] !== undefined) member = true;
      if (m.kind === 'AdmissionCheck' && spec(m).controllerName === MULTIKUEUE.controllerName) member = true;
    }
  }
  if (!member) return undefined;
  const index = new ClusterIndex(view);
  const workerOf = index.ofKind('ServiceAccount').map((sa) => sa.metadata.labels?.[MULTIKUEUE.managerLabel]).find((m) => m !== undefined);
  const kueueConfigs = index.kueueConfigurations().map(({ config }) => config);
  const frameworks = kueueConfigs.length === 0 ? undefined : kueueConfigs.flatMap((c) => {
    const i = c.integrations;
    return isJsonObject(i) && Array.isArray(i.frameworks) ? i.frameworks.filter((f): f is string => typeof f === 'string') : [];
  });
  const block = kueueConfigs.map((c) => c.multiKueue).find(isJsonObject);
  const settings = block && Object.fromEntries(Object.entries(block).filter(([, v]) => typeof v === 'string') as [string, string][]);
  const installs = view.model?.description.installs;
  return {
    cluster: view.name,
    ...(workerOf !== undefined ? { workerOf } : {}),
    localQueues: index.ofKind('LocalQueue', KUEUE).map((lq) => ({ namespace: lq.metadata.namespace ?? '', name: lq.metadata.name, clusterQueue: str(spec(lq).clusterQueue) ?? '' })),
    clusterQueues: index.ofKind('ClusterQueue', KUEUE).map(queueFacts),
    flavors: index.ofKind('ResourceFlavor', KUEUE).map((rf) => ({ name: rf.metadata.name, ...(str(spec(rf).topologyName) ? { topologyName: str(spec(rf).topologyName) } : {}) })),
    topologies: index.ofKind('Topology', KUEUE).map((t) => ({
      name: t.metadata.name,
      levels: (Array.isArray(spec(t).levels) ? (spec(t).levels as Json[]) : []).map((l) => str(l.nodeLabel) ?? ''),
    })),
    admissionChecks: index.ofKind('AdmissionCheck', KUEUE).filter((ac) => spec(ac).controllerName === MULTIKUEUE.controllerName).map((ac) => {
      const p = isJsonObject(spec(ac).parameters) ? (spec(ac).parameters as Json) : {};
      return { name: ac.metadata.name, ...(p.kind === 'MultiKueueConfig' && str(p.name) ? { config: str(p.name) } : {}) };
    }),
    configs: index.ofKind('MultiKueueConfig', KUEUE).map((c) => ({
      name: c.metadata.name,
      clusters: Array.isArray(spec(c).clusters) ? (spec(c).clusters as unknown[]).map(String) : [],
    })),
    clusters: index.ofKind('MultiKueueCluster', KUEUE).map((c) => {
      const source = isJsonObject(spec(c).clusterSource) ? (spec(c).clusterSource as Json) : {};
      const kubeConfig = isJsonObject(source.kubeConfig) ? source.kubeConfig : undefined;
      const profile = isJsonObject(source.clusterProfileRef) ? source.clusterProfileRef : undefined;
      return {
        name: c.metadata.name,
        ...(kubeConfig && (kubeConfig.locationType ?? 'Secret') === 'Secret' && str(kubeConfig.location) ? { secret: str(kubeConfig.location) } : {}),
        ...(kubeConfig && str(c.metadata.annotations?.[MULTIKUEUE.serverAnnotation])
          ? { server: c.metadata.annotations![MULTIKUEUE.serverAnnotation] } : {}),
        ...(profile && str(profile.name) ? { clusterProfile: str(profile.name) } : {}),
      };
    }),
    ...(frameworks !== undefined ? { frameworks } : {}),
    ...(settings ? { settings } : {}),
    ...(installs ? { jobApis: ['kubeflow.org/MPIJob', ...(installs.trainingOperator !== 'none' ? ['kubeflow.org/PyTorchJob'] : [])] } : {}),
  };
}

/** The command that stores a worker's kubeconfig in its Secret on the manager (create or replace: it rotates the token too). */
export function kubeconfigSecretCommand(manager: string, secret: string, worker: string): string {
  // server-side, under a field manager of its own: a client-side apply (or kubectl's own manager, whose server-side
  // applies the API server mirrors into an existing last-applied annotation) would keep a copy of the token there
  return `kubectl --context ${manager} -n ${NAMESPACES.kueue} create secret generic ${secret} --from-file=${MULTIKUEUE.kubeconfigKey}=${worker}.kubeconfig `
    + `--dry-run=client -o yaml | kubectl --context ${manager} apply --server-side --force-conflicts --field-manager=${SECRET_FIELD_MANAGER} -f -`;
}

/** The field manager the fleet page's commands write a worker's kubeconfig Secret with. */
export const SECRET_FIELD_MANAGER = 'gpu-cluster-manifests';

/** What the fleet rules run over. */
export interface FleetInput {
  /** The facts of every cluster that takes part in a fleet. */
  readonly facts: readonly MultiKueueFacts[];
  /** Every cluster of the render or tree: with `complete`, a worker not among them is missing. */
  readonly clusters: ReadonlySet<string>;
  /** The whole fleet is here (a synth of every description, a check of the output root): absent workers and pages are missing. */
  readonly complete: boolean;
  /** The fleet page (dist/fleet/README.md), when there is one. */
  readonly fleetPage?: string;
}

/** One broken fact of the fleet: the cluster it is reported for, and the objects involved as `Kind name`. */
export interface FleetViolation {
  readonly cluster: string;
  readonly message: string;
  readonly objects: readonly string[];
}

export interface FleetRule {
  readonly id: string;
  readonly severity: Severity;
  readonly summary: string;
  check(fleet: Fleet): FleetViolation[];
}

/** A manager's ClusterQueue that dispatches, with its MultiKueueConfig's workers. */
interface Dispatching {
  readonly queue: QueueFacts;
  readonly config: string;
  readonly workers: readonly string[];
}

/** The facts of a fleet, looked up. */
export class Fleet {
  readonly byName: ReadonlyMap<string, MultiKueueFacts>;

  constructor(readonly input: FleetInput) {
    this.byName = new Map(input.facts.map((f) => [f.cluster, f]));
  }

  /** Clusters with MultiKueue objects of a manager. */
  managers(): MultiKueueFacts[] {
    return this.input.facts.filter((f) => f.configs.length > 0 || f.clusters.length > 0 || f.admissionChecks.length > 0);
  }

  /** A manager's ClusterQueues that pass one of its MultiKueue AdmissionChecks, with the workers of its config. */
  dispatching(manager: MultiKueueFacts): Dispatching[] {
    return manager.clusterQueues.flatMap((queue) => {
      const ac = manager.admissionChecks.find((a) => queue.admissionChecks.includes(a.name));
      if (!ac?.config) return [];
      const config = manager.configs.find((c) => c.name === ac.config);
      return config ? [{ queue, config: config.name, workers: [...new Set(config.clusters)] }] : [];
    });
  }

  /** The manager's LocalQueues feeding one of its ClusterQueues. */
  localQueuesOf(manager: MultiKueueFacts, queue: string): MultiKueueFacts['localQueues'] {
    return manager.localQueues.filter((lq) => lq.clusterQueue === queue);
  }

  /** The ClusterQueues of a worker behind the mirrors of the given LocalQueues (each once, as Kueue counts them). */
  mirroredQueues(worker: MultiKueueFacts, localQueues: MultiKueueFacts['localQueues']): QueueFacts[] {
    const mirrors = localQueues.flatMap((lq) => worker.localQueues.filter((w) => w.namespace === lq.namespace && w.name === lq.name));
    const names = new Set(mirrors.map((w) => w.clusterQueue));
    return worker.clusterQueues.filter((cq) => names.has(cq.name));
  }
}

const list = (xs: readonly string[]) => xs.join(', ');

const workersListed: FleetRule = {
  id: 'multikueue-workers',
  severity: 'error',
  summary: 'every worker of a MultiKueue manager is listed once in its MultiKueueConfigs, has a MultiKueueCluster, and is rendered as that manager\'s worker (no worker listed twice or missing)',
  check(fleet) {
    const out: FleetViolation[] = [];
    for (const m of fleet.managers()) {
      const listed = new Set<string>();
      for (const c of m.configs) {
        const twice = c.clusters.filter((x, i) => c.clusters.indexOf(x) !== i);
        for (const w of new Set(twice)) {
          out.push({ cluster: m.cluster, message: `MultiKueueConfig ${c.name}: lists worker "${w}" twice (Kueue refuses it: the clusters must be unique)`, objects: [`MultiKueueConfig ${c.name}`] });
        }
        for (const w of new Set(c.clusters)) {
          listed.add(w);
          if (!m.clusters.some((x) => x.name === w)) {
            out.push({
              cluster: m.cluster,
              message: `MultiKueueConfig ${c.name}: worker "${w}" has no MultiKueueCluster (MultiKueueClusters: ${list(m.clusters.map((x) => x.name)) || 'none'}); Kueue counts it as missing and never dispatches there`,
              objects: [`MultiKueueConfig ${c.name}`],
            });
          }
        }
      }
      for (const c of m.clusters) {
        if (!listed.has(c.name)) {
          out.push({ cluster: m.cluster, message: `MultiKueueCluster ${c.name}: no MultiKueueConfig lists it, so no Workload is ever dispatched there`, objects: [`MultiKueueCluster ${c.name}`] });
        } else if (fleet.input.complete && !fleet.input.clusters.has(c.name)) {
          out.push({ cluster: m.cluster, message: `MultiKueueCluster ${c.name}: worker "${c.name}" is missing from this fleet (no cluster of that name is rendered)`, objects: [`MultiKueueCluster ${c.name}`] });
        } else if (fleet.input.clusters.has(c.name) && fleet.byName.get(c.name)?.workerOf !== m.cluster) {
          out.push({
            cluster: m.cluster,
            message: `MultiKueueCluster ${c.name}: worker "${c.name}" is rendered without the identity this manager uses there (ServiceAccount ${NAMESPACES.kueue}/${workerIdentityName(m.cluster)}): re-render it with the fleet`,
            objects: [`MultiKueueCluster ${c.name}`],
          });
        }
      }
    }
    for (const w of fleet.input.facts.filter((f) => f.workerOf !== undefined)) {
      const m = fleet.byName.get(w.workerOf!);
      if (m ? m.clusters.some((c) => c.name === w.cluster) : !fleet.input.complete) continue;
      out.push({
        cluster: w.cluster,
        message: m ? `renders the identity of MultiKueue manager "${m.cluster}", which has no MultiKueueCluster for it: the worker is missing from the manager's fleet`
          : `renders the identity of MultiKueue manager "${w.workerOf}", which is not rendered in this fleet`,
        objects: [`ServiceAccount ${NAMESPACES.kueue}/${workerIdentityName(w.workerOf!)}`],
      });
    }
    return out;
  },
};

const queueMirrored: FleetRule = {
  id: 'multikueue-queue-mirrored',
  severity: 'error',
  summary: 'every LocalQueue of a MultiKueue manager\'s dispatching ClusterQueue exists on each of its workers (same namespace and name): Kueue creates the Workload there',
  check(fleet) {
    const out: FleetViolation[] = [];
    for (const m of fleet.managers()) {
      const missing = new Map<string, string[]>();
      for (const d of fleet.dispatching(m)) {
        for (const w of d.workers) {
          const worker = fleet.byName.get(w);
          if (!worker) continue;
          for (const lq of fleet.localQueuesOf(m, d.queue.name)) {
            if (worker.localQueues.some((x) => x.namespace === lq.namespace && x.name === lq.name)) continue;
            missing.set(w, [...(missing.get(w) ?? []), `${lq.namespace}/${lq.name} (ClusterQueue ${d.queue.name})`]);
          }
        }
      }
      for (const [w, lqs] of missing) {
        out.push({
          cluster: w,
          message: `has no LocalQueue ${list(lqs)} of MultiKueue manager "${m.cluster}": Kueue copies each Workload into the same namespace and LocalQueue on the worker, `
            + `so "${w}" never admits what those queues dispatch; give the worker the tenant (namespace and queue) too`,
          objects: lqs.map((x) => `LocalQueue ${x.split(' ')[0]}`),
        });
      }
    }
    return out;
  },
};

/** A sum in billionths as a short quantity for messages. */
function showNanos(n: bigint): string {
  return n % 1_000_000_000n === 0n ? String(n / 1_000_000_000n) : `${Number(n) / 1e9}`;
}

function nominalTotals(queues: readonly QueueFacts[]): Map<string, bigint> {
  const totals = new Map<string, bigint>();
  for (const q of queues) {
    for (const f of q.flavors) for (const r of f.resources) totals.set(r.name, (totals.get(r.name) ?? 0n) + (quantityNanos(r.nominalQuota) ?? 0n));
  }
  return totals;
}

const quotaSum: FleetRule = {
  id: 'multikueue-quota-sum',
  severity: 'error',
  summary: 'the nominal quota of a MultiKueue manager\'s dispatching ClusterQueue equals, per resource, the sum of its workers\' ClusterQueues behind the mirrored LocalQueues',
  check(fleet) {
    const out: FleetViolation[] = [];
    for (const m of fleet.managers()) {
      for (const d of fleet.dispatching(m)) {
        const workers = d.workers.map((w) => fleet.byName.get(w));
        if (workers.some((w) => w === undefined)) continue; // multikueue-workers names the missing one
        const lqs = fleet.localQueuesOf(m, d.queue.name);
        const sum = new Map<string, bigint>();
        const parts: string[] = [];
        for (const w of workers as MultiKueueFacts[]) {
          const behind = fleet.mirroredQueues(w, lqs);
          for (const [r, v] of nominalTotals(behind)) sum.set(r, (sum.get(r) ?? 0n) + v);
          if (behind.length > 0) parts.push(`${w.cluster} ${list(behind.map((q) => q.name))}`);
        }
        const own = nominalTotals([d.queue]);
        const resources = [...new Set([...own.keys(), ...sum.keys()])];
        const differ = resources.filter((r) => (own.get(r) ?? 0n) !== (sum.get(r) ?? 0n));
        if (differ.length === 0) continue;
        const high = differ.some((r) => (own.get(r) ?? 0n) > (sum.get(r) ?? 0n));
        out.push({
          cluster: m.cluster,
          message: `ClusterQueue ${d.queue.name}: nominal quota ${list(differ.map((r) => `${r} ${showNanos(own.get(r) ?? 0n)}`))}, but its workers hold `
            + `${list(differ.map((r) => `${showNanos(sum.get(r) ?? 0n)}`))} (${list(parts) || 'no mirrored queue'}): `
            + (high ? 'more than the workers hold dispatches Workloads that cannot run there' : 'less leaves the workers\' quota unused')
            + '; render the fleet again (synth without --config) after changing a worker',
          objects: [`ClusterQueue ${d.queue.name}`],
        });
      }
    }
    return out;
  },
};

const flavorsCompatible: FleetRule = {
  id: 'multikueue-flavors-compatible',
  severity: 'error',
  summary: 'a MultiKueue manager\'s dispatching ClusterQueue and its workers\' mirrored queues agree on topology-aware flavors (the same levels), and the manager covers every resource the workers quota',
  check(fleet) {
    const out: FleetViolation[] = [];
    const levelsOf = (f: MultiKueueFacts, q: QueueFacts): string | undefined => {
      const tas = q.flavors.map((x) => f.flavors.find((rf) => rf.name === x.name)?.topologyName).find((t) => t !== undefined);
      return tas === undefined ? undefined : (f.topologies.find((t) => t.name === tas)?.levels ?? []).join(', ');
    };
    for (const m of fleet.managers()) {
      const problems = new Map<string, string[]>();
      const add = (w: string, p: string) => problems.set(w, [...(problems.get(w) ?? []), p]);
      for (const d of fleet.dispatching(m)) {
        const managerLevels = levelsOf(m, d.queue);
        for (const w of d.workers) {
          const worker = fleet.byName.get(w);
          if (!worker) continue;
          for (const q of fleet.mirroredQueues(worker, fleet.localQueuesOf(m, d.queue.name))) {
            const workerLevels = levelsOf(worker, q);
            if (managerLevels !== workerLevels) {
              add(w, workerLevels === undefined
                ? `ClusterQueue ${q.name} schedules without topology, but the manager's ClusterQueue ${d.queue.name} admits topology requests (levels ${managerLevels}) the worker never admits`
                : managerLevels === undefined
                  ? `ClusterQueue ${q.name} schedules by topology (levels ${workerLevels}), but the manager's ClusterQueue ${d.queue.name} has no topology-aware flavor, so Kueue refuses every topology request at the manager`
                  : `ClusterQueue ${q.name} schedules by topology levels ${workerLevels}, the manager's ClusterQueue ${d.queue.name} by ${managerLevels}`);
            }
            const uncovered = q.covered.filter((r) => !d.queue.covered.includes(r));
            if (uncovered.length > 0) {
              add(w, `ClusterQueue ${q.name} quotas ${list(uncovered)}, which the manager's ClusterQueue ${d.queue.name} does not cover: a job requesting it is never admitted at the manager`);
            }
          }
        }
      }
      for (const [w, ps] of problems) {
        out.push({ cluster: w, message: `flavors incompatible with MultiKueue manager "${m.cluster}": ${ps.join('; ')}`, objects: [] });
      }
    }
    return out;
  },
};

const workerApis: FleetRule = {
  id: 'multikueue-worker-apis',
  severity: 'error',
  summary: 'every worker serves the job kinds its MultiKueue manager\'s Kueue integrates (MultiKueue watches each on every worker and connects to none that lacks one)',
  check(fleet) {
    const out: FleetViolation[] = [];
    for (const m of fleet.managers()) {
      if (m.frameworks === undefined) continue;
      const needed = m.frameworks.flatMap((f) => (INTEGRATION_APIS[f] ? [{ framework: f, api: INTEGRATION_APIS[f] }] : []));
      for (const c of m.clusters) {
        const worker = fleet.byName.get(c.name);
        if (!worker?.jobApis) continue;
        const lacking = needed.filter((n) => !worker.jobApis!.includes(n.api));
        if (lacking.length === 0) continue;
        out.push({
          cluster: c.name,
          message: `serves no ${list(lacking.map((n) => n.api))}, which MultiKueue manager "${m.cluster}" watches on every worker (its Kueue integrates ${list(lacking.map((n) => n.framework))}): `
            + `the manager never connects to "${c.name}"; install the operator there or leave the integration out on the manager`,
          objects: [],
        });
      }
    }
    return out;
  },
};

const secretRegistration: FleetRule = {
  id: 'multikueue-secret-registration',
  severity: 'error',
  summary: 'every kubeconfig Secret a MultiKueueCluster names is named in the fleet page (dist/fleet/README.md) with the command that creates it',
  check(fleet) {
    if (!fleet.input.complete) return [];
    const page = fleet.input.fleetPage ?? '';
    const named = (m: MultiKueueFacts, c: MultiKueueFacts['clusters'][number]) => page.includes(kubeconfigSecretCommand(m.cluster, c.secret!, c.name));
    const unnamed = (m: MultiKueueFacts) => m.clusters.filter((c) => c.secret !== undefined && !named(m, c));
    return fleet.managers().flatMap((m) => unnamed(m).map((c) => ({
      cluster: m.cluster,
      message: `MultiKueueCluster ${c.name}: the fleet page ${fleet.input.fleetPage === undefined ? '(dist/fleet/README.md) is missing' : 'does not give'} the command that creates its kubeconfig Secret `
        + `${NAMESPACES.kueue}/${c.secret}; render the fleet again (synth without --config)`,
      objects: [`MultiKueueCluster ${c.name}`],
    })));
  },
};

/** Every rule across a fleet, in order. */
export const FLEET_RULES: readonly FleetRule[] = [workersListed, queueMirrored, quotaSum, flavorsCompatible, workerApis, secretRegistration];

/** Runs the fleet rules; findings in rule order. */
export function checkFleet(input: FleetInput, rules: readonly FleetRule[] = FLEET_RULES): Finding[] {
  if (input.facts.length === 0) return [];
  const fleet = new Fleet(input);
  return rules.flatMap((rule) => rule.check(fleet).map((v) => ({
    rule: rule.id,
    severity: rule.severity,
    cluster: v.cluster,
    message: v.message,
    objects: v.objects,
  })));
}

/**
 * Per-cluster rule: a manager (it renders a MultiKueue AdmissionCheck) on Kubernetes before 1.32, as its description says,
 * rejects batch/Jobs: the API server drops spec.managedBy, which MultiKueue requires.
 */
const managerJobManagedBy: Rule = {
  id: 'multikueue-manager-job-managed-by',
  severity: 'warning',
  summary: 'a MultiKueue manager runs Kubernetes 1.32 or later (Jobs keep spec.managedBy, which MultiKueue requires; JobManagedBy is on by default from 1.32)',
  check(index) {
    const model = index.model;
    const acs = index.ofKind('AdmissionCheck', KUEUE).filter((ac) => spec(ac).controllerName === MULTIKUEUE.controllerName);
    if (!model || acs.length === 0) return [];
    const minor = Number(model.description.kubernetesVersion.split('.')[1]);
    if (minor >= 32) return [];
    return [{
      message: `kubernetesVersion ${model.description.kubernetesVersion}: before 1.32 the API server drops a Job's spec.managedBy unless the JobManagedBy feature gate is on, `
        + 'and MultiKueue rejects such Jobs ("The owner is not managed by Kueue"); MPIJobs and pods still dispatch. Enable the gate on the manager\'s API server and controller manager, or upgrade',
      objects: acs.slice(0, 1),
    }];
  },
};

export const MULTIKUEUE_RULES: readonly Rule[] = [managerJobManagedBy];
