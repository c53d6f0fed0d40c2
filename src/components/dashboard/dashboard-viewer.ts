import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';

export interface DashboardViewerProps {
  /** Namespace of the ServiceAccount (the Dashboard's). */
  readonly namespace: string;
  /**
   * ServiceAccount name.
   * @default "dashboard-viewer"
   */
  readonly name?: string;
}

/** The built-in aggregated read-only role (no Secrets, no exec, no writes). */
const BUILT_IN_VIEW_ROLE = 'view';

/**
 * A read-only identity for browsing the Dashboard: a ServiceAccount bound to the built-in `view`
 * ClusterRole, plus read access to the cluster-scoped kinds `view` leaves out (nodes,
 * namespaces, persistent volumes, storage classes), so the node and storage pages work. No token
 * Secret: users ask for a short-lived token (`kubectl -n <ns> create token dashboard-viewer`);
 * administration stays with the admin kubeconfig.
 */
export class DashboardViewer extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: DashboardViewerProps) {
    super(scope, id);
    this.name = props.name ?? 'dashboard-viewer';
    const subjects = [{ kind: 'ServiceAccount', name: this.name, namespace: props.namespace }];
    const clusterReader = `${this.name}-cluster-read`;

    new k8s.KubeServiceAccount(this, 'ServiceAccount', {
      metadata: { name: this.name, namespace: props.namespace },
      automountServiceAccountToken: false,
    });
    new k8s.KubeClusterRoleBinding(this, 'View', {
      metadata: { name: `${this.name}-view` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: BUILT_IN_VIEW_ROLE },
      subjects,
    });
    new k8s.KubeClusterRole(this, 'ClusterRead', {
      metadata: { name: clusterReader },
      rules: [
        { apiGroups: [''], resources: ['nodes', 'namespaces', 'persistentvolumes'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    new k8s.KubeClusterRoleBinding(this, 'ClusterReadBinding', {
      metadata: { name: clusterReader },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterReader },
      subjects,
    });
  }
}
