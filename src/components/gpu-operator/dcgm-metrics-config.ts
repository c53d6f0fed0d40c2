import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { dcgmMetricsCsv } from './metric-catalogue';
import { DCGM_EXPORTER_METRICS } from '../../model/names';

export interface DcgmMetricsConfigProps {
  /** Namespace of the GPU Operator (the exporter mounts ConfigMaps of its own namespace only). */
  readonly namespace: string;
}

/**
 * The DCGM exporter's metrics list, generated from the metric catalogue, so the exporter
 * publishes every DCGM field the alerts and dashboards use (its default list leaves the
 * throttling and ECC counters out). The ClusterPolicy selects it with
 * `dcgmExporter.config.name` and `DCGM_EXPORTER_COLLECTORS` (DCGM_EXPORTER_METRICS in names.ts).
 */
export class DcgmMetricsConfig extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: DcgmMetricsConfigProps) {
    super(scope, id);
    this.name = DCGM_EXPORTER_METRICS.configMap;
    new k8s.KubeConfigMap(this, 'Resource', {
      metadata: { name: this.name, namespace: props.namespace },
      data: { [DCGM_EXPORTER_METRICS.file]: dcgmMetricsCsv() },
    });
  }
}
