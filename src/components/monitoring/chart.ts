import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { NAMESPACES, RELEASES } from '../../model/names';
import { VERSIONS } from '../../versions';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { gpuFleetDashboard, queueDashboard } from './dashboards';
import { ExporterScrapes } from './exporter-scrapes';
import { GpuClusterAlerts } from './gpu-cluster-alerts';
import { GrafanaDashboard } from './grafana-dashboard';
import { MetricsReader, vmAgentServiceAccount } from './metrics-reader';

/**
 * Monitoring: what makes the preinstalled VictoriaMetrics + Grafana useful for GPU work. Scrape
 * objects for the GPU, fabric and queueing exporters, one VMRule of alerts, two Grafana
 * dashboards and the right to read Kueue's /metrics (the DCGM exporter's metrics list syncs with the
 * ClusterPolicy, in gpu-operator/). Renders no pods: the stack itself runs on the service node.
 */
export class MonitoringChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const model = props.model;
    const d = model.description;
    const m = d.monitoring;
    const gpusPerNode = model.capacity.gpusPerNode;

    new ExporterScrapes(this, 'Scrapes', {
      namespace: m.namespace,
      targets: { gpuOperator: NAMESPACES.gpuOperator, networkOperator: NAMESPACES.networkOperator, kueue: NAMESPACES.kueue },
      interval: m.scrape.interval,
      nodeExporter: m.scrape.nodeExporter,
      kubeStateMetrics: m.scrape.kubeStateMetrics,
      // The Network Operator is deployed for InfiniBand only (NicClusterPolicy).
      networkOperator: model.rdma !== undefined && m.scrape.networkOperator,
      // The GPU Operator (v26.7.0) creates ServiceMonitors for itself and the node status exporter wherever the
      // ServiceMonitor CRD exists (it cannot be switched off for the operator), and the VictoriaMetrics operator
      // converts them into scrapes: a scrape of our own would collect every series twice.
      gpuOperator: !m.serviceMonitorCrd,
      // off by default in the ClusterPolicy: a scrape without targets would only mislead
      nodeStatusExporter: d.gpuOperator.nodeStatusExporter && !m.serviceMonitorCrd,
    });
    new MetricsReader(this, 'MetricsReader', {
      scraperNamespace: m.namespace,
      scraperServiceAccount: m.scraperServiceAccount ?? vmAgentServiceAccount(RELEASES.monitoring, VERSIONS.victoriaMetricsK8sStack.chart),
    });

    new GpuClusterAlerts(this, 'Alerts', {
      namespace: m.namespace,
      gpusPerNode,
      hcas: model.rdma?.hcas,
      networkOperatorNamespace: NAMESPACES.networkOperator,
      for: m.alerts.for,
      gpuTemperatureCelsius: m.alerts.gpuTemperatureCelsius,
      gpuMemoryTemperatureCelsius: m.alerts.gpuMemoryTemperatureCelsius,
      ignoredXids: m.alerts.ignoredXids,
      pendingWorkloadsFor: m.alerts.pendingWorkloadsFor,
      quotaUsageRatio: m.alerts.quotaUsageRatio,
      runbookBaseUrl: m.alerts.runbookBaseUrl,
    });

    const sidecarLabel = m.grafanaDashboardLabel;
    new GrafanaDashboard(this, 'GpuFleet', {
      namespace: m.namespace,
      sidecarLabel,
      dashboard: gpuFleetDashboard({ gpuTemperatureCelsius: m.alerts.gpuTemperatureCelsius, gpusPerNode }),
    });
    new GrafanaDashboard(this, 'Queues', { namespace: m.namespace, sidecarLabel, dashboard: queueDashboard() });
  }
}

export const monitoring: ComponentDefinition = {
  folder: 'monitoring',
  description: 'VictoriaMetrics scrapes (DCGM, GPU/Network Operator, Kueue; node exporter and kube-state-metrics only when the stack does not), GPU/fabric/queue alerts, Grafana dashboards',
  build: (scope: Construct, model: ClusterModel) => new MonitoringChart(scope, 'monitoring', { model }),
};
