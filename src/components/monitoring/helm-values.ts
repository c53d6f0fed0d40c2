import { ClusterModel, PodPlacement, podPlacement, TolerationSpec } from '../../model/model';

/** What the chart puts into a VictoriaMetrics CR's spec (the operator copies it into the pods it runs). */
interface CrSpec {
  readonly spec: PodPlacement;
}

/**
 * The victoria-metrics-k8s-stack values this toolkit sets for a managed install (everything else: chart
 * defaults). Every workload of the stack on the service node, which on an Instant Cluster is the only node
 * that runs add-ons and is tainted: the operator (and its CRD clean-up hook Job), Grafana, kube-state-metrics,
 * and the pods the operator runs for VMSingle, VMAgent, VMAlert and VMAlertmanager (their CRs' spec); node
 * exporter on every node, whatever its taints (it reads each node's own metrics).
 */
export interface VictoriaMetricsHelmValues {
  readonly 'victoria-metrics-operator': PodPlacement & {
    /** The chart would generate a new webhook certificate on every render: perpetual drift under Argo CD. */
    readonly admissionWebhooks: { readonly enabled: false };
  };
  readonly 'grafana': PodPlacement & {
    /** Grafana's sidecar loads the dashboard ConfigMaps the monitoring component renders. */
    readonly sidecar: { readonly dashboards: { readonly enabled: true; readonly label: string; readonly labelValue: string } };
  };
  readonly 'kube-state-metrics': PodPlacement;
  readonly 'prometheus-node-exporter': { readonly tolerations: readonly TolerationSpec[] };
  readonly 'vmsingle': CrSpec;
  readonly 'vmagent': CrSpec;
  readonly 'vmalert': CrSpec;
  readonly 'alertmanager': CrSpec;
}

/** Tolerates every taint: node exporter belongs on every node. */
const EVERY_TAINT: TolerationSpec = { operator: 'Exists' };

export function victoriaMetricsHelmValues(model: ClusterModel): VictoriaMetricsHelmValues {
  const m = model.description.monitoring;
  const service = () => podPlacement(model.serviceNode);
  return {
    'victoria-metrics-operator': { ...service(), admissionWebhooks: { enabled: false } },
    'grafana': { ...service(), sidecar: { dashboards: { enabled: true, label: m.grafanaDashboardLabel.key, labelValue: m.grafanaDashboardLabel.value } } },
    'kube-state-metrics': service(),
    'prometheus-node-exporter': { tolerations: [EVERY_TAINT] },
    'vmsingle': { spec: service() },
    'vmagent': { spec: service() },
    'vmalert': { spec: service() },
    'alertmanager': { spec: service() },
  };
}
