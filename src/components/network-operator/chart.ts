import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel, RdmaFacts } from '../../model/model';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { NicClusterPolicy, NicClusterPolicyProps } from './nic-cluster-policy';
import { CarriedRelease, previousEntry } from '../../model/releases';

export interface NetworkOperatorChartProps extends ComponentChartProps {
  /** The cluster's RDMA shared device (the chart exists only with InfiniBand). */
  readonly rdma: RdmaFacts;
}

/**
 * The NicClusterPolicy form of a Network Operator release this toolkit carries (releases.networkOperator): its images'
 * registry and tag, and whether its CRD has spec.global (the pinned release's defaults: nothing to set).
 */
export function networkOperatorForm(release: CarriedRelease): Pick<NicClusterPolicyProps, 'global' | 'specGlobal'> {
  if (release.pinned) return {};
  const entry = previousEntry<{ global: { repository: string; version: string }; specGlobal: boolean }>('networkOperator', release.version);
  if (!entry?.global) throw new Error(`src/versions.ts networkOperator.previous ${release.version}: no global`);
  return { global: entry.global, specGlobal: entry.specGlobal ?? true };
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
      ...networkOperatorForm(model.releases.networkOperator),
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
