import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { MULTIKUEUE } from '../../model/names';

const WATCH_AND_RUN = ['create', 'delete', 'get', 'list', 'watch'];
const READ = ['get', 'list', 'watch'];

export interface WorkerAccessProps {
  /** ServiceAccount, ClusterRole and ClusterRoleBinding name. */
  readonly name: string;
  /** Namespace of the ServiceAccount (the worker's Kueue namespace). */
  readonly namespace: string;
  /** The manager cluster whose Kueue uses this identity (a label on all three objects). */
  readonly manager: string;
  /** The worker serves PyTorchJobs (a Training Operator runs there): the manager may create them. */
  readonly pytorchJobs: boolean;
}


/**
 * The identity a MultiKueue manager uses on a worker: a ServiceAccount (its token goes into the kubeconfig Secret on
 * the manager; no pod mounts it) and the least a v0.19 manager needs, as Kueue's own create-multikueue-kubeconfig.sh
 * grants it, for the job kinds this toolkit queues: create, watch and delete the jobs and Workloads it dispatches
 * (and their status), read ClusterQueues and LocalQueues. MultiKueue watches every integration's kind on every worker.
 */
export class WorkerAccess extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: WorkerAccessProps) {
    super(scope, id);
    this.name = props.name;
    const labels = { [MULTIKUEUE.managerLabel]: props.manager };
    const jobs: k8s.PolicyRule[] = [
      { apiGroups: ['batch'], resources: ['jobs'], verbs: WATCH_AND_RUN },
      { apiGroups: ['batch'], resources: ['jobs/status'], verbs: ['get'] },
      { apiGroups: ['kubeflow.org'], resources: props.pytorchJobs ? ['mpijobs', 'pytorchjobs'] : ['mpijobs'], verbs: WATCH_AND_RUN },
      { apiGroups: ['kubeflow.org'], resources: props.pytorchJobs ? ['mpijobs/status', 'pytorchjobs/status'] : ['mpijobs/status'], verbs: ['get'] },
      { apiGroups: [''], resources: ['pods'], verbs: WATCH_AND_RUN },
    ];
    new k8s.KubeServiceAccount(this, 'ServiceAccount', {
      metadata: { name: props.name, namespace: props.namespace, labels },
      automountServiceAccountToken: false,
    });
    new k8s.KubeClusterRole(this, 'ClusterRole', {
      metadata: { name: props.name, labels },
      rules: [
        ...jobs,
        { apiGroups: ['kueue.x-k8s.io'], resources: ['workloads'], verbs: [...WATCH_AND_RUN, 'update', 'patch'] },
        { apiGroups: ['kueue.x-k8s.io'], resources: ['workloads/status'], verbs: ['get', 'patch', 'update'] },
        { apiGroups: ['kueue.x-k8s.io'], resources: ['clusterqueues', 'localqueues'], verbs: READ },
      ],
    });
    new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
      metadata: { name: props.name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: props.name },
      subjects: [{ kind: 'ServiceAccount', name: props.name, namespace: props.namespace }],
    });
  }
}
