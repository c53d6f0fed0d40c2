import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { DASHBOARD } from '../../model/names';

export interface DashboardNodePortProps {
  /** Namespace of the Kubernetes Dashboard. */
  readonly namespace: string;
  /** Helm release name of the Dashboard (its Kong proxy pods carry it as app.kubernetes.io/instance). */
  readonly release: string;
  /** NodePort the UI is reachable on (30000-32767). */
  readonly nodePort: number;
  /**
   * Render the chart's own `<release>-kong-proxy` Service (its name, selector and ports) on the node port,
   * taking it over, instead of a separate Service beside it.
   * @default false
   */
  readonly adoptChartService?: boolean;
}

/**
 * The Kong proxy Service exactly as the Dashboard chart renders it (kubernetes-dashboard 7.13.0 with its
 * kong 2.46.0 subchart, `templates/service-kong-proxy.yaml` through the `kong.service` helper), with the
 * chart defaults the Dashboard's values keep: TLS on (servicePort 443, containerPort 8443, port name
 * `kong-<serviceName>-tls`), plain HTTP off (`kong.proxy.http.enabled: false`). A test derives these from
 * the vendored charts.
 */
export const KONG_PROXY = {
  /** `kong.selectorLabels`: name (the chart name), component, instance (the release). */
  selector: (release: string) => ({ 'app.kubernetes.io/name': 'kong', 'app.kubernetes.io/component': 'app', 'app.kubernetes.io/instance': release }),
  portName: 'kong-proxy-tls',
  port: 443,
  targetPort: 8443,
} as const;

const NODE_PORT_MIN = 30000;
const NODE_PORT_MAX = 32767;

/**
 * Exposes the Kubernetes Dashboard (Helm chart v7) on a NodePort. Since v7 the UI, API and auth containers
 * sit behind a Kong gateway whose proxy pods terminate TLS on 8443; the Service selects them as the chart's
 * own `<release>-kong-proxy` Service does.
 *
 * - Separate (default): a `<release>-nodeport` Service beside the chart's; the node port must be free.
 * - `adoptChartService`: the chart's `<release>-kong-proxy` Service itself, typed NodePort, so the node port
 *   stays with one Service and the API server never refuses it as "already allocated". The model marks it
 *   adopted (never pruned or deleted by Argo CD). A later `helm upgrade` of the Dashboard release resets
 *   the type to its values' (ClusterIP).
 */
export class DashboardNodePort extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: DashboardNodePortProps) {
    super(scope, id);
    if (!Number.isInteger(props.nodePort) || props.nodePort < NODE_PORT_MIN || props.nodePort > NODE_PORT_MAX) {
      throw new Error(`DashboardNodePort: nodePort must be from ${NODE_PORT_MIN} to ${NODE_PORT_MAX}, got ${props.nodePort}`);
    }
    const adopt = props.adoptChartService ?? false;
    this.name = adopt ? DASHBOARD.kongProxyService(props.release) : `${props.release}-nodeport`;
    new k8s.KubeService(this, 'Resource', {
      metadata: { name: this.name, namespace: props.namespace },
      spec: {
        type: 'NodePort',
        selector: KONG_PROXY.selector(props.release),
        ports: [{
          name: adopt ? KONG_PROXY.portName : 'https',
          protocol: 'TCP',
          port: KONG_PROXY.port,
          targetPort: k8s.IntOrString.fromNumber(KONG_PROXY.targetPort),
          nodePort: props.nodePort,
        }],
      },
    });
  }
}
