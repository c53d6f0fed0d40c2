import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { SKYPILOT_IDENTITY } from './client-files';

const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

/**
 * What SkyPilot does in the namespace it launches into (its documented minimum): its pods (with
 * status, exec and port-forward for SSH), their Services and its SSH key Secrets; and reading events.
 */
export const SKYPILOT_NAMESPACE_RULES: readonly k8s.PolicyRule[] = [
  { apiGroups: [''], resources: ['pods', 'pods/status', 'pods/exec', 'pods/portforward', 'services', 'secrets'], verbs: ALL },
  { apiGroups: [''], resources: ['events'], verbs: ['get', 'list', 'watch'] },
];

export interface SkyPilotIdentityProps {
  /** Namespace SkyPilot launches into. */
  readonly namespace: string;
  /** The read-only ClusterRole (SkyPilotNodeReader) bound to the ServiceAccount. */
  readonly clusterRole: string;
  /**
   * Name of the ServiceAccount, the Role and the RoleBinding (`kubernetes.remote_identity`).
   * @default "skypilot"
   */
  readonly name?: string;
}

/**
 * A SkyPilot identity in one namespace: a ServiceAccount (SkyPilot runs as it: `remote_identity` for
 * its pods, and the user's kubeconfig for `sky launch`), a Role with SkyPilot's namespaced permissions, a RoleBinding, and a
 * ClusterRoleBinding to the read-only node reader. Nothing else cluster-wide.
 */
export class SkyPilotIdentity extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: SkyPilotIdentityProps) {
    super(scope, id);
    const name = props.name ?? SKYPILOT_IDENTITY;
    const ns = props.namespace;
    this.name = name;
    // The ServiceAccount only: users run SkyPilot with a kubeconfig for this ServiceAccount (README), so the
    // tenant groups keep their own narrower role and nothing cluster-scoped.
    const subjects: k8s.Subject[] = [{ kind: 'ServiceAccount', name, namespace: ns }];
    new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata: { name, namespace: ns } });
    new k8s.KubeRole(this, 'Role', {
      metadata: { name, namespace: ns },
      rules: SKYPILOT_NAMESPACE_RULES.map((r) => ({ apiGroups: [...r.apiGroups!], resources: [...r.resources!], verbs: [...r.verbs] })),
    });
    new k8s.KubeRoleBinding(this, 'RoleBinding', {
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects,
    });
    new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
      // One binding per namespace: ClusterRoleBinding names are cluster-wide.
      metadata: { name: `${props.clusterRole}-${ns}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: props.clusterRole },
      subjects,
    });
  }
}
