import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel, RdmaFacts } from '../../model/model';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { NicClusterPolicy } from './nic-cluster-policy';

export interface NetworkOperatorChartProps extends ComponentChartProps {
  /** The cluster's RDMA shared device (the chart exists only with InfiniBand). */
  readonly rdma: RdmaFacts;
}

/**
 * Network Operator: the NicClusterPolicy `nic-cluster-policy` with the RDMA shared device of the
 * description, on the GPU workers.
 */
export class NetworkOperatorChart extends Chart {
  constructor(scope: Construct, id: string, props: NetworkOperatorChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const { model, rdma } = props;
    const d = model.description;
    const selectors = d.network.infiniband?.rdmaSharedDevice;

    new NicClusterPolicy(this, 'NicClusterPolicy', {
      name: d.networkOperator.nicClusterPolicyName,
      rdmaSharedDevices: [{
        resourceName: rdma.deviceName,
        rdmaHcaMax: rdma.hcaMax,
        selectors: {
          vendors: selectors?.vendors,
          deviceIDs: selectors?.deviceIDs,
          drivers: selectors?.drivers,
          ifNames: selectors?.ifNames,
          linkTypes: selectors?.linkTypes,
        },
      }],
      nodeSelector: model.gpuWorkers.selector,
      tolerations: model.gpuWorkers.tolerations,
      docaDriver: d.networkOperator.docaDriver,
      secondaryNetwork: d.network.secondaryNetwork,
    });
  }
}

export const networkOperator: ComponentDefinition = {
  folder: 'network-operator',
  description: 'Network Operator NicClusterPolicy nic-cluster-policy: RDMA shared device plugin on the GPU workers (only with InfiniBand)',
  build: (scope: Construct, model: ClusterModel) => (model.rdma
    ? new NetworkOperatorChart(scope, 'network-operator', { model, rdma: model.rdma })
    : undefined),
};
