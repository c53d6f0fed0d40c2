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
    /**
     * The admin credentials from a Secret created by hand (monitoring.grafanaAdminSecret): without it the subchart renders a
     * Secret with `randAlphaNum 40` (its `lookup` of the old one answers nothing under `helm template`) and a checksum of it on
     * the Deployment, different on every render (charts/grafana/templates/_helpers.tpl "grafana.password", secret.yaml).
     */
    readonly admin: { readonly existingSecret: string; readonly userKey: string; readonly passwordKey: string };
  };
  /** The control-plane scrapes (monitoring.controlPlaneScrapes; the chart's default is on, and so are their alerts). */
  readonly 'kubeScheduler': ControlPlaneScrape;
  readonly 'kubeControllerManager': ControlPlaneScrape;
  readonly 'kubeEtcd': ControlPlaneScrape & { readonly service?: { readonly port: number; readonly targetPort: number } };
  readonly 'kube-state-metrics': PodPlacement;
  readonly 'prometheus-node-exporter': { readonly tolerations: readonly TolerationSpec[] };
  readonly 'vmsingle': CrSpec;
  readonly 'vmagent': CrSpec;
  readonly 'vmalert': CrSpec;
  readonly 'alertmanager': CrSpec;
}

/** A control-plane component's scrape: on or off, and when on, its endpoints as kubeadm serves them. */
interface ControlPlaneScrape {
  readonly enabled: boolean;
  readonly vmScrape?: { readonly spec: { readonly endpoints: readonly Record<string, unknown>[] } };
}

/** The keys of the admin Secret Grafana reads (the subchart's defaults, stated). */
export const GRAFANA_ADMIN_KEYS = { user: 'admin-user', password: 'admin-password' } as const;

/** etcd's plain-HTTP metrics listener on kubeadm (`--listen-metrics-urls`, default http://127.0.0.1:2381). */
export const ETCD_METRICS_PORT = 2381;

const TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * The scrapes of kube-scheduler (10259), kube-controller-manager (10257) and etcd on a kubeadm control plane: off, or
 * (monitoring.controlPlaneScrapes) on as kubeadm serves them once bound to 0.0.0.0: the first two over https with the
 * ServiceAccount token and the self-signed serving certificate each generates (no CA to verify it by), etcd's metrics
 * over plain http on 2381 (its client port 2379 wants client certificates).
 */
function controlPlaneScrapes(on: boolean): Pick<VictoriaMetricsHelmValues, 'kubeScheduler' | 'kubeControllerManager' | 'kubeEtcd'> {
  if (!on) return { kubeScheduler: { enabled: false }, kubeControllerManager: { enabled: false }, kubeEtcd: { enabled: false } };
  const https = { vmScrape: { spec: { endpoints: [{ bearerTokenFile: TOKEN, port: 'http-metrics', scheme: 'https', tlsConfig: { insecureSkipVerify: true } }] } } };
  return {
    kubeScheduler: { enabled: true, ...https },
    kubeControllerManager: { enabled: true, ...https },
    kubeEtcd: {
      enabled: true,
      service: { port: ETCD_METRICS_PORT, targetPort: ETCD_METRICS_PORT },
      vmScrape: { spec: { endpoints: [{ port: 'http-metrics', scheme: 'http' }] } },
    },
  };
}

/** Tolerates every taint: node exporter belongs on every node. */
const EVERY_TAINT: TolerationSpec = { operator: 'Exists' };

export function victoriaMetricsHelmValues(model: ClusterModel): VictoriaMetricsHelmValues {
  const m = model.description.monitoring;
  const service = () => podPlacement(model.serviceNode);
  return {
    'victoria-metrics-operator': { ...service(), admissionWebhooks: { enabled: false } },
    'grafana': {
      ...service(),
      sidecar: { dashboards: { enabled: true, label: m.grafanaDashboardLabel.key, labelValue: m.grafanaDashboardLabel.value } },
      admin: { existingSecret: m.grafanaAdminSecret, userKey: GRAFANA_ADMIN_KEYS.user, passwordKey: GRAFANA_ADMIN_KEYS.password },
    },
    ...controlPlaneScrapes(m.controlPlaneScrapes),
    'kube-state-metrics': service(),
    'prometheus-node-exporter': { tolerations: [EVERY_TAINT] },
    'vmsingle': { spec: service() },
    'vmagent': { spec: service() },
    'vmalert': { spec: service() },
    'alertmanager': { spec: service() },
  };
}
