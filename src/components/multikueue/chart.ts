import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { MultiKueueAdmissionCheck } from './admission-check';
import { KubeconfigReader } from './kubeconfig-reader';
import { MultiKueueCluster } from './multikueue-cluster';
import { MultiKueueConfig } from './multikueue-config';
import { WorkerAccess } from './worker-access';
import { ClusterModel } from '../../model/model';
import { MultiKueueManagerRole, workerIdentityName } from '../../model/multikueue-role';
import { NAMESPACES } from '../../model/names';
import { OPERATOR_SERVICE_ACCOUNTS } from '../../model/operator-accounts';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';

/** Role and RoleBinding of the manager's Kueue for the workers' kubeconfig Secrets. */
export const KUBECONFIG_READER = 'multikueue-kubeconfigs';

/**
 * A cluster's part in a MultiKueue fleet (fleet.yaml). On the manager: an AdmissionCheck and MultiKueueConfig per
 * group of workers, a MultiKueueCluster per worker (by Secret or ClusterProfile name, never credentials), and the Role
 * that lets Kueue read the kubeconfig Secrets; its ClusterQueues pass the AdmissionCheck (kueue folder). On a worker:
 * the identity the manager uses there.
 */
export class MultiKueueChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const model = props.model;
    const role = model.multiKueue;
    if (role?.role === 'manager') {
      this.manager(role);
    } else if (role?.role === 'worker') {
      new WorkerAccess(this, 'ManagerAccess', {
        name: workerIdentityName(role.manager),
        namespace: NAMESPACES.kueue,
        manager: role.manager,
        pytorchJobs: model.description.installs.trainingOperator !== 'none',
      });
    }
  }

  private manager(role: MultiKueueManagerRole): void {
    for (const g of role.groups) {
      new MultiKueueConfig(this, `Config-${g.name}`, { name: g.name, clusters: g.workers });
      new MultiKueueAdmissionCheck(this, `AdmissionCheck-${g.name}`, { name: g.name, config: g.name });
    }
    for (const w of role.workers) {
      new MultiKueueCluster(this, `Cluster-${w.cluster}`, { name: w.cluster, kubeconfigSecret: w.kubeconfigSecret, clusterProfile: w.clusterProfile, server: w.server });
    }
    const secrets = role.workers.flatMap((w) => (w.kubeconfigSecret === undefined ? [] : [w.kubeconfigSecret]));
    if (secrets.length > 0) {
      new KubeconfigReader(this, 'KubeconfigReader', {
        name: KUBECONFIG_READER,
        namespace: OPERATOR_SERVICE_ACCOUNTS.kueue.namespace,
        serviceAccount: OPERATOR_SERVICE_ACCOUNTS.kueue.name,
        secrets: [...new Set(secrets)],
      });
    }
  }
}

export const multiKueue: ComponentDefinition = {
  folder: 'multikueue',
  description: 'MultiKueue (fleet.yaml): on the manager the AdmissionChecks, MultiKueueConfigs and MultiKueueClusters of its workers and Kueue\'s read access to their kubeconfig Secrets; on a worker the identity the manager uses there',
  build: (scope: Construct, model: ClusterModel) => (model.multiKueue ? new MultiKueueChart(scope, 'multikueue', { model }) : undefined),
};
