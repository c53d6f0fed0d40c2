import { ClusterModel, PodPlacement, podPlacement } from '../../model/model';
import { nodeFeatureDiscoveryHelmValues, NodeFeatureDiscoveryHelmValues } from '../gpu-operator/helm-values';

/**
 * The network-operator chart values this toolkit sets for a managed install. The chart renders no
 * NicClusterPolicy (since v24.10), so `nic-cluster-policy` comes only from dist/<cluster>/network-operator/.
 */
export interface NetworkOperatorHelmValues {
  /**
   * `enabled`: whether the chart deploys Node Feature Discovery (nodeFeatureDiscovery.deployedBy).
   * `deployNodeFeatureRules`: always on, independent of `enabled`: the chart's NodeFeatureRule
   * `nvidia-nics-rules` labels the nodes with Mellanox NICs (`feature.node.kubernetes.io/pci-15b3.present`),
   * the label the Network Operator relies on; NFD always runs (deployedBy has no "none"), so its CRD exists.
   * The rule is a cluster-scoped nfd.k8s-sigs.io/NodeFeatureRule, which the AppProject must whitelist.
   */
  readonly 'nfd': { readonly enabled: boolean; readonly deployNodeFeatureRules: true };
  /** The operator Deployment: on the service node. */
  readonly 'operator': PodPlacement;
  /** Placement of the NFD subchart; present only when the chart deploys NFD. */
  readonly 'node-feature-discovery'?: NodeFeatureDiscoveryHelmValues;
}

/** Helm values of the network-operator chart when installs.networkOperator is "managed". */
export function networkOperatorHelmValues(model: ClusterModel): NetworkOperatorHelmValues {
  const nfd = model.description.nodeFeatureDiscovery.deployedBy === 'network-operator';
  return {
    nfd: { enabled: nfd, deployNodeFeatureRules: true },
    operator: podPlacement(model.serviceNode),
    ...(nfd ? { 'node-feature-discovery': nodeFeatureDiscoveryHelmValues(model) } : {}),
  };
}
