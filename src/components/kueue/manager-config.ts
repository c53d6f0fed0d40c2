import { stringify } from 'yaml';
import { MULTIKUEUE_DISPATCHERS } from '../../model/fleet';
import { ClusterModel, podPlacement, TolerationSpec } from '../../model/model';
import { LABELS, NAMESPACES, RESOURCES } from '../../model/names';

/** API version of the Kueue manager configuration read by Kueue v0.19 (`controller_manager_config.yaml`). */
export const KUEUE_CONFIG_API_VERSION = 'config.kueue.x-k8s.io/v1beta2';

/**
 * Job integrations the toolkit's workloads need; pytorchjob is off in Kueue's defaults. `pod` admits the
 * plain pods SkyPilot and the Dynamo operator create (one Workload per pod, or per pod group for a
 * SkyPilot multi-node cluster); it touches the pods that carry a queue label (manageJobsWithoutQueueName: false)
 * and, through LocalQueue defaulting, every pod of a namespace whose LocalQueue is named "default".
 */
export const KUEUE_FRAMEWORKS = ['batch/job', 'kubeflow.org/mpijob', 'kubeflow.org/pytorchjob', 'pod'] as const;
export type KueueFramework = (typeof KUEUE_FRAMEWORKS)[number];

export type FairSharingPreemptionStrategy = 'LessThanOrEqualToFinalShare' | 'LessThanInitialShare';

/** The part of Kueue's `Configuration` (config.kueue.x-k8s.io/v1beta2) this toolkit sets. */
export interface KueueConfiguration {
  readonly apiVersion: typeof KUEUE_CONFIG_API_VERSION;
  readonly kind: 'Configuration';
  readonly health: { readonly healthProbeBindAddress: string };
  readonly metrics: { readonly bindAddress: string; readonly enableClusterQueueResources: boolean };
  readonly webhook: { readonly port: number };
  readonly leaderElection: { readonly leaderElect: boolean; readonly resourceName: string };
  readonly clientConnection: { readonly qps: number; readonly burst: number };
  /** true: jobs without a kueue.x-k8s.io/queue-name label are queued too (in the namespaces selected below). */
  readonly manageJobsWithoutQueueName: boolean;
  /** Namespaces where Kueue manages jobs and pods at all (and where its webhooks run): the queue namespaces. */
  readonly managedJobsNamespaceSelector: {
    readonly matchExpressions: ReadonlyArray<{ readonly key: string; readonly operator: 'In'; readonly values: readonly string[] }>;
  };
  readonly integrations: { readonly frameworks: readonly KueueFramework[] };
  /** Present only when fair sharing is on (in v1beta2 its presence switches it on). */
  readonly fairSharing?: { readonly preemptionStrategies: readonly FairSharingPreemptionStrategy[] };
  /** Present only when queueing.rdma is "excluded". */
  readonly resources?: { readonly excludeResourcePrefixes: readonly string[] };
  /** Present only on a MultiKueue manager (fleet.yaml), every setting written out. */
  readonly multiKueue?: {
    readonly gcInterval: string;
    readonly origin: string;
    readonly workerLostTimeout: string;
    readonly dispatcherName: string;
    readonly clusterProfile?: {
      readonly accessProviders: readonly {
        readonly name: string;
        readonly execConfig: { readonly apiVersion: string; readonly command: string; readonly args: readonly string[]; readonly interactiveMode: 'Never' };
      }[];
    };
  };
}

/** A Kueue feature gate as the chart takes it (controllerManager.featureGates). */
export interface KueueFeatureGate {
  readonly name: string;
  readonly enabled: boolean;
}

/** Kueue's feature gate of MultiKueue workers reached through a ClusterProfile (alpha in v0.19, off by default). */
export const CLUSTER_PROFILE_GATE = 'MultiKueueClusterProfile';

/** Values of the Kueue Helm chart (oci://registry.k8s.io/kueue/charts/kueue) this toolkit sets. */
export interface KueueHelmValues {
  readonly managerConfig: {
    /** The whole manager configuration as YAML; the chart adds internalCertManagement. */
    readonly controllerManagerConfigYaml: string;
  };
  readonly controllerManager: {
    readonly nodeSelector: Readonly<Record<string, string>>;
    readonly tolerations: readonly TolerationSpec[];
    /** Present only when a gate differs from Kueue's default (a MultiKueue manager with ClusterProfile workers). */
    readonly featureGates?: readonly KueueFeatureGate[];
  };
}

function requireManaged(model: ClusterModel, what: string): void {
  const mode = model.description.installs.kueue;
  if (mode !== 'managed') {
    throw new Error(`${what}: installs.kueue is "${mode}"; the Kueue manager configuration exists only for installs.kueue: managed`);
  }
}

/**
 * The Kueue manager configuration for a Kueue this toolkit installs: the chart's own settings
 * (ports, leader election lease) kept as the chart has them, plus the integrations, RDMA handling
 * and fair sharing from the description.
 */
export function kueueManagerConfig(model: ClusterModel): KueueConfiguration {
  requireManaged(model, 'kueueManagerConfig');
  const q = model.description.queueing;
  return {
    apiVersion: KUEUE_CONFIG_API_VERSION,
    kind: 'Configuration',
    health: { healthProbeBindAddress: ':8081' },
    // ClusterQueue usage and quota metrics feed the quota alerts.
    metrics: { bindAddress: ':8443', enableClusterQueueResources: true },
    webhook: { port: 9443 },
    // The chart's lease name: changing it would let two managers lead during an upgrade.
    leaderElection: { leaderElect: true, resourceName: 'c1f6bfd2.kueue.x-k8s.io' },
    clientConnection: { qps: 50, burst: 100 },
    // With the pod integration on, "true" would gate every pod of these namespaces (an interactive debug pod,
    // the Dynamo operator's own helpers) behind a queue. Unlabelled GPU work is refused by the tenant
    // guardrails instead, and every rendered job and tutorial pod carries its queue label. LocalQueue defaulting
    // (always on) still queues every unlabelled pod of a namespace whose LocalQueue is named "default".
    manageJobsWithoutQueueName: false,
    managedJobsNamespaceSelector: kueueManagedNamespaceSelector(model),
    integrations: { frameworks: kueueFrameworks(model) },
    fairSharing: q.fairSharing ? { preemptionStrategies: ['LessThanOrEqualToFinalShare', 'LessThanInitialShare'] } : undefined,
    resources: q.rdma === 'excluded' ? { excludeResourcePrefixes: [RESOURCES.rdmaPrefix] } : undefined,
    multiKueue: multiKueueSettings(model),
  };
}

/**
 * The job integrations of a cluster's Kueue. A MultiKueue manager watches the kind of every integration on every worker
 * and connects to none that lacks one: it enables PyTorchJobs only when every worker has a Training Operator.
 */
export function kueueFrameworks(model: ClusterModel): KueueFramework[] {
  const role = model.multiKueue;
  if (role?.role !== 'manager' || role.pytorchJobs) return [...KUEUE_FRAMEWORKS];
  return KUEUE_FRAMEWORKS.filter((f) => f !== 'kubeflow.org/pytorchjob');
}

function multiKueueSettings(model: ClusterModel): KueueConfiguration['multiKueue'] {
  const role = model.multiKueue;
  if (role?.role !== 'manager') return undefined;
  const s = role.settings;
  return {
    gcInterval: s.gcInterval,
    origin: s.origin,
    workerLostTimeout: s.workerLostTimeout,
    dispatcherName: MULTIKUEUE_DISPATCHERS[s.dispatcher],
    ...(role.accessProviders.length > 0 ? {
      clusterProfile: {
        accessProviders: role.accessProviders.map((p) => ({
          name: p.name,
          execConfig: { apiVersion: p.apiVersion, command: p.command, args: [...p.args], interactiveMode: 'Never' as const },
        })),
      },
    } : {}),
  };
}

/** Feature gates of the cluster's Kueue that differ from Kueue's defaults. */
export function kueueFeatureGates(model: ClusterModel): KueueFeatureGate[] {
  const role = model.multiKueue;
  return role?.role === 'manager' && role.workers.some((w) => w.clusterProfile !== undefined) ? [{ name: CLUSTER_PROFILE_GATE, enabled: true }] : [];
}

/**
 * The namespaces Kueue manages: those with a LocalQueue ("default" and the tenants'), selected by name
 * so that kube-system, Kueue's own and the operators' namespaces are never managed.
 */
export function kueueManagedNamespaces(model: ClusterModel): string[] {
  return [...new Set(model.queueing.queues.map((q) => q.namespace))];
}

function kueueManagedNamespaceSelector(model: ClusterModel): KueueConfiguration['managedJobsNamespaceSelector'] {
  return { matchExpressions: [{ key: LABELS.namespaceName, operator: 'In', values: kueueManagedNamespaces(model) }] };
}

/**
 * What the Kueue manager configuration of a pre-installed Kueue must have for the tutorials' plain pods
 * (SkyPilot pod groups, Dynamo component pods) to be queued, one line each (the report prints them).
 */
export function kueuePodIntegrationRequirements(model: ClusterModel): string[] {
  return [
    '`integrations.frameworks` contains `pod` (off in Kueue\'s defaults)',
    '`manageJobsWithoutQueueName: false` (true would gate every pod of the managed namespaces)',
    `\`managedJobsNamespaceSelector\` selects ${kueueManagedNamespaces(model).map((n) => `\`${n}\``).join(', ')} and never \`kube-system\` or \`${NAMESPACES.kueue}\``,
  ];
}

/** Helm values for the Kueue chart (VERSIONS.kueue; the key managerConfig.controllerManagerConfigYaml), for the Argo CD Application of a managed Kueue. */
export function kueueHelmValues(model: ClusterModel): KueueHelmValues {
  requireManaged(model, 'kueueHelmValues');
  const config = kueueManagerConfig(model);
  // Drop the unset optional sections so that the YAML carries no nulls.
  const present = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
  const featureGates = kueueFeatureGates(model);
  return {
    managerConfig: { controllerManagerConfigYaml: stringify(present, { lineWidth: 0 }) },
    controllerManager: { ...podPlacement(model.serviceNode), ...(featureGates.length > 0 ? { featureGates } : {}) },
  };
}
