import { serviceAccountUser } from '../../model/helm-names';
import { TRAINING_OPERATOR_KINDS } from '../../model/names';
import { OPERATOR_SERVICE_ACCOUNTS } from '../../model/operator-accounts';

/** What the tenant guardrails let a controller do that a tenant may not. */
export type Trust =
  /**
   * Creates the pods of a workload Kueue admits as a whole (Job, MPIJob, PyTorchJob, whose object
   * carries the queue label and is suspended until admitted): its GPU pods need no label of their own.
   */
  | 'pods-of-queued-workloads'
  /** Creates and unsuspends Jobs that are parts of a queued workload (the MPIJob launcher Job). */
  | 'jobs-of-queued-workloads'
  /** Admits workloads: unsuspends queued jobs and removes Kueue's scheduling gates from queued pods. */
  | 'admits-workloads';

/** A controller whose requests the guardrails recognise by `request.userInfo.username`. */
export interface TrustedRequester {
  readonly who: string;
  /** `system:serviceaccount:<namespace>:<name>`. */
  readonly username: string;
  /** Empty: listed to say that its GPU pods are queued one by one, like a tenant's. */
  readonly trust: readonly Trust[];
  /** Workload kinds (`group/Kind`) whose pods it creates (the `tenant-guardrails-admit` check simulates them). */
  readonly createsPodsOf: readonly string[];
}

/**
 * kube-controller-manager's per-controller ServiceAccounts (kubeadm runs it with
 * `--use-service-account-credentials=true`, so each controller sends its own identity).
 */
export const KUBE_CONTROLLERS = {
  job: 'job-controller',
  replicaSet: 'replicaset-controller',
  statefulSet: 'statefulset-controller',
  daemonSet: 'daemon-set-controller',
} as const;

const kubeController = (name: string) => serviceAccountUser('kube-system', name);
const operator = (sa: { namespace: string; name: string }) => serviceAccountUser(sa.namespace, sa.name);

/**
 * Every requester the guardrails know, in one place. Trust goes by who sends the request, never by
 * what the object claims (a tenant may write any ownerReferences). ReplicaSets, StatefulSets and
 * DaemonSets get no trust: a tenant cannot create them, but an operator acting for a tenant can (the
 * Dynamo operator's component Deployments), so their GPU pods must carry the queue label and go
 * through Kueue's pod integration like a tenant's own pods.
 */
export const TRUSTED_REQUESTERS: readonly TrustedRequester[] = [
  { who: 'Job controller', username: kubeController(KUBE_CONTROLLERS.job), trust: ['pods-of-queued-workloads'], createsPodsOf: ['batch/Job'] },
  { who: 'ReplicaSet controller', username: kubeController(KUBE_CONTROLLERS.replicaSet), trust: [], createsPodsOf: ['apps/ReplicaSet', 'apps/Deployment'] },
  { who: 'StatefulSet controller', username: kubeController(KUBE_CONTROLLERS.statefulSet), trust: [], createsPodsOf: ['apps/StatefulSet'] },
  { who: 'DaemonSet controller', username: kubeController(KUBE_CONTROLLERS.daemonSet), trust: [], createsPodsOf: ['apps/DaemonSet'] },
  {
    who: 'MPI Operator',
    username: operator(OPERATOR_SERVICE_ACCOUNTS.mpiOperator),
    trust: ['pods-of-queued-workloads', 'jobs-of-queued-workloads'],
    // The launcher's pods come through its Job (the Job controller), the workers' from the operator.
    createsPodsOf: ['kubeflow.org/MPIJob'],
  },
  {
    who: 'Training Operator',
    username: operator(OPERATOR_SERVICE_ACCOUNTS.trainingOperator),
    trust: ['pods-of-queued-workloads'],
    createsPodsOf: TRAINING_OPERATOR_KINDS.map((k) => `kubeflow.org/${k}`),
  },
  { who: 'Kueue', username: operator(OPERATOR_SERVICE_ACCOUNTS.kueue), trust: ['admits-workloads'], createsPodsOf: [] },
];

/** User names of the requesters trusted with `trust`. */
export function usersTrustedWith(requesters: readonly TrustedRequester[], trust: Trust): string[] {
  return requesters.filter((r) => r.trust.includes(trust)).map((r) => r.username);
}
