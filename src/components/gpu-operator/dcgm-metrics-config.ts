import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { DCGM_EXPORTER_METRICS } from '../../model/names';
import { dcgmMetricsCsv } from '../monitoring/metric-catalogue';

export interface DcgmMetricsConfigProps {
  /** Namespace of the GPU Operator (the exporter mounts ConfigMaps of its own namespace only). */
  readonly namespace: string;
}

/**
 * The DCGM exporter's metrics list, generated from the monitoring metric catalogue, so the exporter
 * publishes every DCGM field the alerts and dashboards use (its default list leaves the
 * throttling and ECC counters out). It syncs with the ClusterPolicy that mounts it (a missing
 * ConfigMap would keep the exporter from starting). The ClusterPolicy selects it with
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
