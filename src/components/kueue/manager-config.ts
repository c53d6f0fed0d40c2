import { stringify } from 'yaml';
import { ClusterModel, podPlacement, TolerationSpec } from '../../model/model';
import { LABELS, RESOURCES } from '../../model/names';

/** API version of the Kueue manager configuration read by Kueue v0.19 (`controller_manager_config.yaml`). */
export const KUEUE_CONFIG_API_VERSION = 'config.kueue.x-k8s.io/v1beta2';

/** Job integrations the toolkit's workloads need; pytorchjob is off in Kueue's defaults. */
export const KUEUE_FRAMEWORKS = ['batch/job', 'kubeflow.org/mpijob', 'kubeflow.org/pytorchjob'] as const;
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
  /** Namespaces where Kueue also manages unlabelled jobs: the tenant namespaces. */
  readonly managedJobsNamespaceSelector: { readonly matchExpressions: ReadonlyArray<{ readonly key: string; readonly operator: 'Exists' }> };
  readonly integrations: { readonly frameworks: readonly KueueFramework[] };
  /** Present only when fair sharing is on (in v1beta2 its presence switches it on). */
  readonly fairSharing?: { readonly preemptionStrategies: readonly FairSharingPreemptionStrategy[] };
  /** Present only when queueing.rdma is "excluded". */
  readonly resources?: { readonly excludeResourcePrefixes: readonly string[] };
}

/** Values of the Kueue Helm chart (oci://registry.k8s.io/kueue/charts/kueue) this toolkit sets. */
export interface KueueHelmValues {
  readonly managerConfig: {
    /** The whole manager configuration as YAML; the chart adds internalCertManagement. */
    readonly controllerManagerConfigYaml: string;
  };
  readonly controllerManager: {
    readonly nodeSelector: Readonly<Record<string, string>>;
    readonly tolerations: readonly TolerationSpec[];
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
    // A tenant Job, MPIJob or PyTorchJob without a queue label would otherwise run outside its quota.
    manageJobsWithoutQueueName: true,
    managedJobsNamespaceSelector: { matchExpressions: [{ key: LABELS.tenant, operator: 'Exists' }] },
    integrations: { frameworks: [...KUEUE_FRAMEWORKS] },
    fairSharing: q.fairSharing ? { preemptionStrategies: ['LessThanOrEqualToFinalShare', 'LessThanInitialShare'] } : undefined,
    resources: q.rdma === 'excluded' ? { excludeResourcePrefixes: [RESOURCES.rdmaPrefix] } : undefined,
  };
}

/** Helm values for the Kueue chart (VERSIONS.kueue; the key managerConfig.controllerManagerConfigYaml), for the Argo CD Application of a managed Kueue. */
export function kueueHelmValues(model: ClusterModel): KueueHelmValues {
  requireManaged(model, 'kueueHelmValues');
  const config = kueueManagerConfig(model);
  // Drop the unset optional sections so that the YAML carries no nulls.
  const present = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
  return {
    managerConfig: { controllerManagerConfigYaml: stringify(present, { lineWidth: 0 }) },
    controllerManager: podPlacement(model.serviceNode),
  };
}
