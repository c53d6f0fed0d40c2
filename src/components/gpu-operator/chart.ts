import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel, tolerates } from '../../model/model';
import { DCGM_EXPORTER_METRICS, NAMESPACES } from '../../model/names';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { ClusterPolicy, ClusterPolicyImages } from './cluster-policy';
import { DcgmMetricsConfig } from './dcgm-metrics-config';
import { CarriedRelease, previousEntry } from '../../model/releases';
import { VERSIONS } from '../../versions';

/** The operand images of a GPU Operator release this toolkit carries (releases.gpuOperator): the pinned ones, or a previous release's. */
export function operandImages(release: CarriedRelease): ClusterPolicyImages {
  if (release.pinned) return VERSIONS.gpuOperator.images;
  const images = previousEntry<{ images: ClusterPolicyImages }>('gpuOperator', release.version)?.images;
  if (!images) throw new Error(`src/versions.ts gpuOperator.previous ${release.version}: no images`);
  return images;
}

/**
 * GPU Operator: the ClusterPolicy `cluster-policy`, derived from `gpuOperator` in the description.
 * The operand DaemonSets tolerate the GPU workers' taints only, so they never run on the service node.
 */
export class GpuOperatorChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const { model } = props;
    const d = model.description;
    const tolerations = model.gpuWorkers.tolerations;

    for (const taint of d.nodes.service.taints) {
      if (tolerations.some((t) => tolerates(t, taint))) {
        throw new Error(`nodes.gpuWorkers.taints: the GPU operands would tolerate the service node taint ${taint.key}:${taint.effect}; give the GPU workers taints of their own`);
      }
    }

    const dcgmMetrics = d.gpuOperator.dcgmExporter
      ? new DcgmMetricsConfig(this, 'DcgmExporterMetrics', { namespace: NAMESPACES.gpuOperator })
      : undefined;

    new ClusterPolicy(this, 'ClusterPolicy', {
      tolerations,
      driver: d.gpuOperator.driver,
      // NCCL over InfiniBand wants GPUDirect RDMA: a managed driver loads nvidia-peermem against the NIC driver in use.
      gpuDirectRdma: model.rdma ? (d.networkOperator.docaDriver ? 'docaDriver' : 'hostMofed') : 'off',
      toolkit: d.gpuOperator.toolkit,
      devicePlugin: d.gpuOperator.devicePlugin,
      gfd: d.gpuOperator.gfd,
      dcgmExporter: d.gpuOperator.dcgmExporter,
      // the alerts need the throttling and ECC counters the exporter's default list leaves out
      dcgmExporterMetrics: dcgmMetrics && { configMap: dcgmMetrics.name, path: DCGM_EXPORTER_METRICS.path },
      dcgm: d.gpuOperator.dcgm,
      migManager: d.gpuOperator.migManager,
      migStrategy: d.gpuOperator.migStrategy,
      nodeStatusExporter: d.gpuOperator.nodeStatusExporter,
      cdi: d.gpuOperator.cdi,
      acceptVisibleDevicesEnvvarWhenUnprivileged: d.gpuOperator.acceptVisibleDevicesEnvvarWhenUnprivileged,
      devicePluginEnv: d.gpuOperator.devicePluginEnv,
      toolkitEnv: d.gpuOperator.toolkitEnv,
      // the operands of the release the cluster runs (releases.gpuOperator), never another release's
      images: operandImages(model.releases.gpuOperator),
      // every ClusterQueue of a MultiKueue manager hands its jobs to the workers: its own GPUs, if any, run none of them
      gpuNodesOptional: model.multiKueue?.role === 'manager' ? 'a MultiKueue manager, whose queues run every job on its workers' : undefined,
    });
  }
}

export const gpuOperator: ComponentDefinition = {
  folder: 'gpu-operator',
  description: 'GPU Operator ClusterPolicy cluster-policy: driver/toolkit as described, device plugin, GFD, DCGM exporter (with its metrics list), MIG manager, pinned operand images',
  build: (scope: Construct, model: ClusterModel) => new GpuOperatorChart(scope, 'gpu-operator', { model }),
};
