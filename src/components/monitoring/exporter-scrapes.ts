import { Construct } from 'constructs';
import { VmNodeScrape, VmNodeScrapeSpecScheme } from '../../../imports/vm-nodescrape-operator.victoriametrics.com';
import { VmPodScrape, VmPodScrapeSpecPodMetricsEndpointsScheme } from '../../../imports/vm-podscrape-operator.victoriametrics.com';
import {
  VmServiceScrape, VmServiceScrapeSpecEndpoints, VmServiceScrapeSpecEndpointsScheme,
} from '../../../imports/vm-servicescrape-operator.victoriametrics.com';

/** Where the add-ons whose metrics are scraped run. */
export interface ScrapedNamespaces {
  readonly gpuOperator: string;
  readonly networkOperator: string;
  readonly kueue: string;
}

export interface ExporterScrapesProps {
  /** Namespace of the scrape objects (the monitoring stack's own). */
  readonly namespace: string;
  /** Namespaces of the GPU Operator, the Network Operator and Kueue. */
  readonly targets: ScrapedNamespaces;
  /**
   * Scrape interval.
   * @default "30s"
   */
  readonly interval?: string;
  /**
   * Scrape node exporter on every node (port 9100). The victoria-metrics-k8s-stack scrapes it already.
   * @default false
   */
  readonly nodeExporter?: boolean;
  /**
   * Scrape kube-state-metrics (any namespace, Service label app.kubernetes.io/name=kube-state-metrics). The
   * victoria-metrics-k8s-stack scrapes it already.
   * @default false
   */
  readonly kubeStateMetrics?: boolean;
  /**
   * Scrape the Network Operator controller (only meaningful when it runs: clusters with InfiniBand).
   * @default true
   */
  readonly networkOperator?: boolean;
  /**
   * Scrape the GPU Operator's node status exporter (only meaningful when the ClusterPolicy runs it).
   * @default true
   */
  readonly nodeStatusExporter?: boolean;
  /**
   * Scrape the GPU Operator itself (its metrics Service). Off where the GPU Operator's own ServiceMonitor is
   * converted into a scrape already (clusters that serve the ServiceMonitor CRD).
   * @default true
   */
  readonly gpuOperator?: boolean;
}

/** Token of the scraper's own ServiceAccount, presented to endpoints that authorise /metrics (Kueue). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Adds the node the target runs on as label `node`, so every per-node metric joins on the same label. */
const NODE_LABEL_FROM_ENDPOINT = { sourceLabels: ['__meta_kubernetes_endpoint_node_name'], targetLabel: 'node' };

/**
 * VictoriaMetrics scrape objects for the exporters a GPU cluster's alerts and dashboards read
 * (metric-catalogue.ts). Selectors and ports are the ones upstream renders:
 * - DCGM exporter: Service `nvidia-dcgm-exporter` (label app=nvidia-dcgm-exporter), port `gpu-metrics` (9400);
 * - GPU Operator: Service `gpu-operator` (label app=gpu-operator), port `gpu-operator-metrics` (8080);
 * - node status exporter: Service `nvidia-node-status-exporter`, port `node-status` (8000);
 * - Kueue: Service `kueue-controller-manager-metrics-service` (app.kubernetes.io/component=metrics-service),
 *   port `https` (8443), self-signed serving certificate, /metrics authorised by token (see MetricsReader);
 * - Network Operator: controller-runtime's plain-HTTP :8080 on the operator pod (no Service, no named port);
 * - node exporter: every node's port 9100 (host network);
 * - kube-state-metrics: its Service port `http`.
 */
export class ExporterScrapes extends Construct {
  /** Names of the rendered scrape objects. */
  readonly names: readonly string[];

  constructor(scope: Construct, id: string, props: ExporterScrapesProps) {
    super(scope, id);
    const ns = props.namespace;
    const interval = props.interval ?? '30s';
    const nodeExporter = props.nodeExporter ?? false;
    const kubeStateMetrics = props.kubeStateMetrics ?? false;
    const networkOperator = props.networkOperator ?? true;
    const names: string[] = [];

    type Selector = Record<string, string>;
    const serviceScrape = (name: string, targetNamespace: string | undefined, matchLabels: Selector, endpoint: VmServiceScrapeSpecEndpoints) => {
      names.push(name);
      new VmServiceScrape(this, name, {
        metadata: { name, namespace: ns },
        spec: {
          namespaceSelector: targetNamespace === undefined ? { any: true } : { matchNames: [targetNamespace] },
          selector: { matchLabels },
          endpoints: [{ path: '/metrics', interval, ...endpoint }],
        },
      });
    };

    // honorLabels keeps the exporter's own pod/namespace labels (the workload holding the GPU).
    serviceScrape('dcgm-exporter', props.targets.gpuOperator, { app: 'nvidia-dcgm-exporter' }, {
      port: 'gpu-metrics',
      scheme: VmServiceScrapeSpecEndpointsScheme.HTTP,
      honorLabels: true,
      relabelConfigs: [NODE_LABEL_FROM_ENDPOINT],
    });
    if (props.gpuOperator ?? true) {
      serviceScrape('gpu-operator', props.targets.gpuOperator, { app: 'gpu-operator' }, {
        port: 'gpu-operator-metrics', scheme: VmServiceScrapeSpecEndpointsScheme.HTTP,
      });
    }
    if (props.nodeStatusExporter ?? true) {
      serviceScrape('gpu-node-status-exporter', props.targets.gpuOperator, { app: 'nvidia-node-status-exporter' }, {
        port: 'node-status', scheme: VmServiceScrapeSpecEndpointsScheme.HTTP, honorLabels: true,
      });
    }
    serviceScrape('kueue-controller', props.targets.kueue, {
      'app.kubernetes.io/name': 'kueue',
      'app.kubernetes.io/component': 'metrics-service',
    }, {
      port: 'https',
      scheme: VmServiceScrapeSpecEndpointsScheme.HTTPS,
      bearerTokenFile: SERVICE_ACCOUNT_TOKEN,
      // Kueue's internal certificate manager issues a self-signed serving certificate.
      tlsConfig: { insecureSkipVerify: true },
    });
    if (kubeStateMetrics) {
      serviceScrape('kube-state-metrics', undefined, { 'app.kubernetes.io/name': 'kube-state-metrics' }, {
        port: 'http', scheme: VmServiceScrapeSpecEndpointsScheme.HTTP, honorLabels: true,
      });
    }

    if (networkOperator) {
      const name = 'network-operator';
      names.push(name);
      new VmPodScrape(this, name, {
        metadata: { name, namespace: ns },
        spec: {
          namespaceSelector: { matchNames: [props.targets.networkOperator] },
          selector: { matchLabels: { 'app.kubernetes.io/name': 'network-operator' } },
          podMetricsEndpoints: [{ portNumber: 8080, path: '/metrics', scheme: VmPodScrapeSpecPodMetricsEndpointsScheme.HTTP, interval }],
        },
      });
    }

    if (nodeExporter) {
      const name = 'node-exporter';
      names.push(name);
      new VmNodeScrape(this, name, {
        metadata: { name, namespace: ns },
        spec: {
          selector: {},
          port: '9100',
          path: '/metrics',
          scheme: VmNodeScrapeSpecScheme.HTTP,
          interval,
          relabelConfigs: [{ sourceLabels: ['__meta_kubernetes_node_name'], targetLabel: 'node' }],
        },
      });
    }
    this.names = names;
  }
}
