import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { helmFullname } from '../../model/helm-names';

export interface MetricsReaderProps {
  /** Namespace of the scraper's ServiceAccount. */
  readonly scraperNamespace: string;
  /** The scraper's ServiceAccount (the VMAgent's): the only subject bound. */
  readonly scraperServiceAccount: string;
  /**
   * ClusterRole and ClusterRoleBinding name.
   * @default "monitoring-metrics-reader"
   */
  readonly name?: string;
}

/**
 * The VMAgent's ServiceAccount in the victoria-metrics-k8s-stack chart: the chart names the VMAgent
 * after its fullname (`vm.fullname` of victoria-metrics-common), and the operator creates
 * `vmagent-<VMAgent name>` when the spec names no ServiceAccount (the chart's default values name none).
 */
export function vmAgentServiceAccount(release: string, chart: string): string {
  return `vmagent-${helmFullname(release, chart)}`;
}

/**
 * Lets the scraper read metrics endpoints that authorise callers (Kueue's controller-runtime
 * metrics server checks `get` on the non-resource URL /metrics with a SubjectAccessReview).
 * It grants exactly that, to the scraper's ServiceAccount only: Grafana and everything else in the
 * monitoring namespace stay out of the API server's and the controllers' metrics.
 */
export class MetricsReader extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: MetricsReaderProps) {
    super(scope, id);
    this.name = props.name ?? 'monitoring-metrics-reader';
    new k8s.KubeClusterRole(this, 'ClusterRole', {
      metadata: { name: this.name },
      rules: [{ nonResourceUrLs: ['/metrics'], verbs: ['get'] }],
    });
    new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
      metadata: { name: this.name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: this.name },
      subjects: [{ kind: 'ServiceAccount', name: props.scraperServiceAccount, namespace: props.scraperNamespace }],
    });
  }
}
