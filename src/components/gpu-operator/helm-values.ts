import { ClusterModel, PodPlacement, podPlacement, TolerationSpec } from '../../model/model';

/** Values of the bundled node-feature-discovery subchart that this toolkit sets. */
export interface NodeFeatureDiscoveryHelmValues {
  /** nfd-master: on the service node. */
  readonly master: PodPlacement;
  /** nfd-gc: on the service node. */
  readonly gc: PodPlacement;
  /** nfd-worker: on the GPU workers (tolerates their taints). */
  readonly worker: { readonly tolerations: readonly TolerationSpec[] };
}

/** The gpu-operator chart values this toolkit sets for a managed install (everything else: chart defaults). */
export interface GpuOperatorHelmValues {
  /**
   * `deployCR: false`: the chart renders no ClusterPolicy. The `cluster-policy` rendered into
   * dist/<cluster>/gpu-operator/ is the only one, so Helm values and the rendered object can never disagree.
   */
  readonly 'clusterPolicy': { readonly deployCR: false };
  /** Whether the chart deploys Node Feature Discovery (nodeFeatureDiscovery.deployedBy). */
  readonly 'nfd': { readonly enabled: boolean };
  /** Mirrors ClusterPolicy spec.driver.enabled for the chart's own templates (NVIDIADriver CR, validations). */
  readonly 'driver': { readonly enabled: boolean };
  /** Mirrors ClusterPolicy spec.toolkit.enabled. */
  readonly 'toolkit': { readonly enabled: boolean };
  /**
   * `dcgmExporter.serviceMonitor.enabled: false` (chart default true). The chart reads it only into the
   * ClusterPolicy it renders, which `deployCR: false` switches off; set anyway so values and the rendered
   * ClusterPolicy (serviceMonitor off: the monitoring component scrapes the exporter) agree.
   */
  readonly 'dcgmExporter': { readonly serviceMonitor: { readonly enabled: false } };
  /** The operator Deployment: on the service node. */
  readonly 'operator': PodPlacement;
  /** Placement of the NFD subchart; present only when the chart deploys NFD. */
  readonly 'node-feature-discovery'?: NodeFeatureDiscoveryHelmValues;
}

/** Placement of a chart's NFD subchart: control plane parts on the service node, workers on the GPU nodes. */
export function nodeFeatureDiscoveryHelmValues(model: ClusterModel): NodeFeatureDiscoveryHelmValues {
  const service = podPlacement(model.serviceNode);
  return {
    master: service,
    gc: service,
    worker: { tolerations: model.gpuWorkers.tolerations.map((t) => ({ ...t })) },
  };
}

/**
 * Helm values of the gpu-operator chart when installs.gpuOperator is "managed" (consumed by the Argo CD
 * component). The chart's ClusterPolicy is switched off: the rendered ClusterPolicy is the one source of truth.
 */
export function gpuOperatorHelmValues(model: ClusterModel): GpuOperatorHelmValues {
  const d = model.description;
  const nfd = d.nodeFeatureDiscovery.deployedBy === 'gpu-operator';
  return {
    clusterPolicy: { deployCR: false },
    nfd: { enabled: nfd },
    driver: { enabled: d.gpuOperator.driver === 'managed' },
    toolkit: { enabled: d.gpuOperator.toolkit === 'managed' },
    dcgmExporter: { serviceMonitor: { enabled: false } },
    operator: podPlacement(model.serviceNode),
    ...(nfd ? { 'node-feature-discovery': nodeFeatureDiscoveryHelmValues(model) } : {}),
  };
}
