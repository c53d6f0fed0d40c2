import { MultiKueueDescription } from './fleet';

/**
 * A cluster's part in a MultiKueue fleet (fleet.yaml), as plain data: it is worked out once from every member's
 * description (load-fleet.ts) and travels with the cluster's model, render threads included.
 */
export type MultiKueueRole = MultiKueueManagerRole | MultiKueueWorkerRole;

/** How the manager reaches one worker (its MultiKueueCluster). */
export interface WorkerLink {
  readonly cluster: string;
  /** Secret in the manager's Kueue namespace, key `kubeconfig`. */
  readonly kubeconfigSecret?: string;
  /** The worker's API server as the manager reaches it (fleet.yaml), for the Secret's kubeconfig. */
  readonly server?: string;
  /** ClusterProfile in the manager's Kueue namespace. */
  readonly clusterProfile?: string;
}

/** One AdmissionCheck and its MultiKueueConfig (same name): the workers some ClusterQueues dispatch to, in order. */
export interface DispatchGroup {
  readonly name: string;
  readonly workers: readonly string[];
}

/** A resource of a dispatching ClusterQueue and its nominal quota (canonical quantity). */
export interface DispatchedResource {
  readonly name: string;
  readonly nominalQuota: string;
}

/** One ClusterQueue of the manager: where it dispatches, and the quota its workers hold for it. */
export interface QueueDispatch {
  readonly clusterQueue: string;
  /** The DispatchGroup (AdmissionCheck) of the queue. */
  readonly group: string;
  /** Covered resources in the order of a ClusterQueue of this toolkit, each with the sum of its workers' nominal quotas. */
  readonly resources: readonly DispatchedResource[];
  /**
   * Topology levels of its workers' topology-aware flavors, when every worker of the queue has one and all have the same
   * levels: the manager's flavor is then topology-aware too (Kueue refuses topology requests on a ClusterQueue without).
   */
  readonly topologyLevels?: readonly string[];
}

export interface MultiKueueSettings {
  readonly dispatcher: MultiKueueDescription['dispatcher'];
  readonly gcInterval: string;
  readonly origin: string;
  readonly workerLostTimeout: string;
}

/** A credential plugin of the manager's Kueue for ClusterProfile workers. */
export interface AccessProvider {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly apiVersion: string;
}

export interface MultiKueueManagerRole {
  readonly role: 'manager';
  /** Every worker in dispatch order, with how the manager reaches it. */
  readonly workers: readonly WorkerLink[];
  readonly groups: readonly DispatchGroup[];
  /** One per ClusterQueue of the manager (the default queue's first, then the tenants'). */
  readonly queues: readonly QueueDispatch[];
  readonly settings: MultiKueueSettings;
  readonly accessProviders: readonly AccessProvider[];
  /**
   * Every worker serves PyTorchJobs (a Training Operator): MultiKueue watches the kind of each job integration on every
   * worker and does not connect to a worker that lacks one, so the manager enables the integration only then.
   */
  readonly pytorchJobs: boolean;
}

export interface MultiKueueWorkerRole {
  readonly role: 'worker';
  /** The manager cluster that dispatches to it. */
  readonly manager: string;
}

/** Name of the AdmissionCheck and MultiKueueConfig of the ClusterQueues dispatching to every worker. */
export const MULTIKUEUE_GROUP = 'multikueue';

/** The group of a ClusterQueue with workers of its own (multiKueue.queues). */
export const queueGroupName = (clusterQueue: string) => `${MULTIKUEUE_GROUP}-${clusterQueue}`;

/** Name of the manager's identity on each worker: its ServiceAccount, ClusterRole and ClusterRoleBinding there. */
export const workerIdentityName = (manager: string) => `multikueue-${manager}`;

