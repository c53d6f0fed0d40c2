import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { SKYPILOT_IDENTITY, SKYPILOT_WORKLOAD_IDENTITY } from './client-files';

const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

/**
 * What SkyPilot does in the namespace it launches into (its documented minimum, v0.10): its pods (with
 * status, exec and port-forward for SSH), their Services and its SSH key Secrets; and reading events.
 * The launcher identity: the kubeconfig `sky launch` runs with.
 */
export const SKYPILOT_NAMESPACE_RULES: readonly k8s.PolicyRule[] = [
  { apiGroups: [''], resources: ['pods', 'pods/status', 'pods/exec', 'pods/portforward', 'services', 'secrets'], verbs: ALL },
  { apiGroups: [''], resources: ['events'], verbs: ['get', 'list', 'watch'] },
];

/**
 * What SkyPilot's pods do with their own identity (`kubernetes.remote_identity`): autodown. On an idle
 * cluster the head pod's skylet tears the cluster down itself (v0.10 `terminate_instances`): it lists
 * the cluster's pods by label, lists Deployments (an HA controller is one), deletes each pod's Services
 * (`<pod>`, `<pod>-ssh`) and then the pods. Nothing else: no Secrets, no exec, nothing cluster-wide.
 */
export const SKYPILOT_WORKLOAD_RULES: readonly k8s.PolicyRule[] = [
  { apiGroups: [''], resources: ['pods', 'services'], verbs: ['get', 'list', 'delete'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] },
];

export interface SkyPilotIdentityProps {
  /** Namespace SkyPilot launches into. */
  readonly namespace: string;
  /** The read-only ClusterRole (SkyPilotNodeReader) bound to the launcher ServiceAccount. */
  readonly clusterRole: string;
}

/** A ServiceAccount with a Role of the same name and the RoleBinding between them. */
function namespacedIdentity(scope: Construct, id: string, namespace: string, name: string, rules: readonly k8s.PolicyRule[]): k8s.Subject {
  const subject: k8s.Subject = { kind: 'ServiceAccount', name, namespace };
  new k8s.KubeServiceAccount(scope, `${id}ServiceAccount`, { metadata: { name, namespace } });
  new k8s.KubeRole(scope, `${id}Role`, {
    metadata: { name, namespace },
    rules: rules.map((r) => ({ apiGroups: [...r.apiGroups!], resources: [...r.resources!], verbs: [...r.verbs] })),
  });
  new k8s.KubeRoleBinding(scope, `${id}RoleBinding`, {
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [subject],
  });
  return subject;
}

/**
 * The SkyPilot identities of one namespace, each a ServiceAccount with a Role and RoleBinding of its name:
 *
 * - `skypilot`, the launcher: users run `sky launch` with a kubeconfig for it (README). SkyPilot's
 *   documented minimum in the namespace, and the read-only node reader cluster-wide. No pod runs as it
 *   (SkyPilotIdentityGuard), so its rights stay with whoever holds its token.
 * - `skypilot-workload`, what SkyPilot's pods run as (`remote_identity`): autodown only. Only the
 *   launcher creates pods running as it.
 *
 * The tenant groups get nothing new and no RBAC at all, so they cannot bind either Role to themselves
 * (`bind`, `escalate`) or impersonate either account.
 */
export class SkyPilotIdentity extends Construct {
  constructor(scope: Construct, id: string, props: SkyPilotIdentityProps) {
    super(scope, id);
    const ns = props.namespace;
    const launcher = namespacedIdentity(this, '', ns, SKYPILOT_IDENTITY, SKYPILOT_NAMESPACE_RULES);
    namespacedIdentity(this, 'Workload', ns, SKYPILOT_WORKLOAD_IDENTITY, SKYPILOT_WORKLOAD_RULES);
    new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
      // One binding per namespace: ClusterRoleBinding names are cluster-wide.
      metadata: { name: `${props.clusterRole}-${ns}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: props.clusterRole },
      subjects: [launcher],
    });
  }
}
