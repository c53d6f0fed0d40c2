import { ClusterModel, PodPlacement, podPlacement } from '../../model/model';
import { nodeFeatureDiscoveryHelmValues, NodeFeatureDiscoveryHelmValues } from '../gpu-operator/helm-values';

/**
 * The network-operator chart values this toolkit sets for a managed install. The chart renders no
 * NicClusterPolicy (since v24.10), so `nic-cluster-policy` comes only from dist/<cluster>/network-operator/.
 */
export interface NetworkOperatorHelmValues {
  /** Whether the chart deploys Node Feature Discovery (nodeFeatureDiscovery.deployedBy). */
  readonly 'nfd': { readonly enabled: boolean };
  /** The operator Deployment: on the service node. */
  readonly 'operator': PodPlacement;
  /** Placement of the NFD subchart; present only when the chart deploys NFD. */
  readonly 'node-feature-discovery'?: NodeFeatureDiscoveryHelmValues;
}

/** Helm values of the network-operator chart when installs.networkOperator is "managed". */
export function networkOperatorHelmValues(model: ClusterModel): NetworkOperatorHelmValues {
  const nfd = model.description.nodeFeatureDiscovery.deployedBy === 'network-operator';
  return {
    nfd: { enabled: nfd },
    operator: podPlacement(model.serviceNode),
    ...(nfd ? { 'node-feature-discovery': nodeFeatureDiscoveryHelmValues(model) } : {}),
  };
}
