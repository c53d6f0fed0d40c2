import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { MULTIKUEUE } from '../../model/names';

export interface KubeconfigReaderProps {
  /** Role and RoleBinding name. */
  readonly name: string;
  /** The Kueue namespace: where the kubeconfig Secrets are and the controller runs. */
  readonly namespace: string;
  /** The Kueue controller's ServiceAccount (in `namespace`). */
  readonly serviceAccount: string;
  /** The Secrets the MultiKueueClusters name (listed in the Role's description only: Kueue lists and watches the namespace's Secrets). */
  readonly secrets: readonly string[];
}

/**
 * What the manager's Kueue needs to read the workers' kubeconfig Secrets: get, list and watch Secrets in its own
 * namespace (Kueue v0.19 caches Secrets of that namespace only and watches them, so a rotated kubeconfig is picked up),
 * nothing else and nowhere else. Kueue's chart grants this among more (update, for its webhook certificate); a
 * pre-installed Kueue's RBAC is not in the tree, so the need is written here, whoever installed Kueue.
 */
export class KubeconfigReader extends Construct {
  constructor(scope: Construct, id: string, props: KubeconfigReaderProps) {
    super(scope, id);
    if (props.secrets.length === 0) throw new Error(`KubeconfigReader ${props.name}: no Secrets to read`);
    new k8s.KubeRole(this, 'Role', {
      metadata: {
        name: props.name,
        namespace: props.namespace,
        annotations: { [MULTIKUEUE.kubeconfigSecretsAnnotation]: [...props.secrets].sort().join(',') },
      },
      // resourceNames cannot narrow list and watch, which Kueue's Secret cache needs
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }],
    });
    new k8s.KubeRoleBinding(this, 'Binding', {
      metadata: { name: props.name, namespace: props.namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: props.name },
      subjects: [{ kind: 'ServiceAccount', name: props.serviceAccount, namespace: props.namespace }],
    });
  }
}
