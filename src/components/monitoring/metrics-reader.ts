import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';

export interface MetricsReaderProps {
  /** Namespace whose ServiceAccounts (the scraper's) may read /metrics. */
  readonly scraperNamespace: string;
  /**
   * ClusterRole and ClusterRoleBinding name.
   * @default "monitoring-metrics-reader"
   */
  readonly name?: string;
}

/**
 * Lets the scraper read metrics endpoints that authorise callers (Kueue's controller-runtime
 * metrics server checks `get` on the non-resource URL /metrics with a SubjectAccessReview).
 * It grants exactly that, to the ServiceAccounts of the monitoring namespace as a group, so it
 * works whatever the VMAgent's ServiceAccount is called.
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
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: `system:serviceaccounts:${props.scraperNamespace}` }],
    });
  }
}
