import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';

export interface DashboardNodePortProps {
  /** Namespace of the Kubernetes Dashboard. */
  readonly namespace: string;
  /** Helm release name of the Dashboard (its Kong proxy pods carry it as app.kubernetes.io/instance). */
  readonly release: string;
  /** NodePort the UI is reachable on (30000-32767). */
  readonly nodePort: number;
  /**
   * Service name.
   * @default "<release>-nodeport"
   */
  readonly name?: string;
}

/** Kong proxy's TLS listener in the Dashboard v7 chart (kong.proxy.tls.containerPort, port name `proxy-tls`). */
const KONG_PROXY_TLS_PORT = 8443;
const NODE_PORT_MIN = 30000;
const NODE_PORT_MAX = 32767;

/**
 * Exposes the Kubernetes Dashboard (Helm chart v7) on a NodePort. Since v7 the UI, API and auth
 * containers sit behind a Kong gateway; Kong's proxy pods (labels app.kubernetes.io/name=kong,
 * component=app, instance=<release>) terminate TLS on 8443 and route to the rest, so this Service
 * selects them, as the chart's own `<release>-kong-proxy` Service does.
 */
export class DashboardNodePort extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: DashboardNodePortProps) {
    super(scope, id);
    if (!Number.isInteger(props.nodePort) || props.nodePort < NODE_PORT_MIN || props.nodePort > NODE_PORT_MAX) {
      throw new Error(`DashboardNodePort: nodePort must be from ${NODE_PORT_MIN} to ${NODE_PORT_MAX}, got ${props.nodePort}`);
    }
    this.name = props.name ?? `${props.release}-nodeport`;
    new k8s.KubeService(this, 'Resource', {
      metadata: { name: this.name, namespace: props.namespace },
      spec: {
        type: 'NodePort',
        selector: {
          'app.kubernetes.io/name': 'kong',
          'app.kubernetes.io/component': 'app',
          'app.kubernetes.io/instance': props.release,
        },
        ports: [{
          name: 'https',
          protocol: 'TCP',
          port: 443,
          targetPort: k8s.IntOrString.fromNumber(KONG_PROXY_TLS_PORT),
          nodePort: props.nodePort,
        }],
      },
    });
  }
}
