import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';

/** Verbs of a workload the tenant owns. */
const MANAGE = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const READ = ['get', 'list', 'watch'];

/**
 * What a tenant may do in its namespace: run Jobs, MPIJobs, PyTorchJobs and Pods (with logs, exec
 * and port-forward for debugging and for reaching its ClusterIP Services), keep ConfigMaps (scripts), PersistentVolumeClaims (RWX volumes), Secrets
 * (image pull credentials, model tokens), Services (inference endpoints; the guardrails keep them
 * ClusterIP) and ServiceAccounts, and read events, its LocalQueue and its Workloads. Nothing else:
 * no RBAC, no quota objects, no NetworkPolicies, and no ClusterRole at all. Pods (and so SkyPilot's
 * pods) stay creatable: the guardrails decide by who sends the request, not by ownerReferences.
 */
export const TENANT_RULES: readonly k8s.PolicyRule[] = [
  { apiGroups: ['batch'], resources: ['jobs'], verbs: MANAGE },
  { apiGroups: ['kubeflow.org'], resources: ['mpijobs', 'pytorchjobs'], verbs: MANAGE },
  { apiGroups: [''], resources: ['pods', 'configmaps', 'persistentvolumeclaims', 'secrets', 'services', 'serviceaccounts'], verbs: MANAGE },
  { apiGroups: [''], resources: ['pods/log'], verbs: READ },
  // exec is "create" (SPDY) and "get" (WebSocket upgrade, Kubernetes 1.30+).
  { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
  // kubectl port-forward (the way the service guardrails point tenants to their ClusterIP Services): the same two verbs.
  { apiGroups: [''], resources: ['pods/portforward'], verbs: ['create', 'get'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: READ },
  { apiGroups: ['kueue.x-k8s.io'], resources: ['localqueues', 'workloads'], verbs: READ },
];

export interface TenantRoleProps {
  /** Namespace of the Role and its RoleBinding. */
  readonly namespace: string;
  /** Group (from the identity provider: OIDC, Kanidm) bound to the Role. */
  readonly group: string;
  /**
   * Role and RoleBinding name.
   * @default "tenant"
   */
  readonly name?: string;
  /**
   * Rules of the Role.
   * @default TENANT_RULES
   */
  readonly rules?: readonly k8s.PolicyRule[];
}

/** A namespaced Role and the RoleBinding that grants it to a group. Never cluster-scoped. */
export class TenantRole extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: TenantRoleProps) {
    super(scope, id);
    if (props.group.trim() === '') throw new Error(`TenantRole in ${props.namespace}: group is empty`);
    const name = props.name ?? 'tenant';
    const rules = props.rules ?? TENANT_RULES;
    if (rules.length === 0) throw new Error(`TenantRole ${props.namespace}/${name}: rules is empty`);
    this.name = name;
    new k8s.KubeRole(this, 'Role', {
      metadata: { name, namespace: props.namespace },
      rules: rules.map((r) => ({
        ...r, apiGroups: r.apiGroups && [...r.apiGroups], resources: r.resources && [...r.resources], verbs: [...r.verbs],
      })),
    });
    new k8s.KubeRoleBinding(this, 'Binding', {
      metadata: { name, namespace: props.namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: props.group }],
    });
  }
}
