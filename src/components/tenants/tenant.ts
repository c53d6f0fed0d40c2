import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { IngressSource, TenantNetworkPolicies } from './tenant-network-policies';
import { TenantRole } from './tenant-role';
import { LABELS } from '../../model/names';
import { KueueLocalQueue } from '../kueue/local-queue';

export interface TenantProps {
  /** Tenant name; labels the namespace (gpu-cluster.dev/tenant). */
  readonly name: string;
  /** The tenant's namespace (created here). */
  readonly namespace: string;
  /** LocalQueue name in the namespace (tenants[].queue; "default" makes Kueue queue every unlabelled pod there). */
  readonly localQueue: string;
  /** The tenant's ClusterQueue. */
  readonly clusterQueue: string;
  /** Group bound to the tenant role. */
  readonly group: string;
  /**
   * Extra namespace labels.
   * @default - none
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * Namespaces besides its own whose pods may connect to the tenant's pods.
   * @default - none: only the tenant's own pods
   */
  readonly ingressSources?: readonly IngressSource[];
}

/** One tenant: its namespace, its LocalQueue, its namespaced role and its ingress NetworkPolicies. */
export class Tenant extends Construct {
  readonly namespace: string;

  constructor(scope: Construct, id: string, props: TenantProps) {
    super(scope, id);
    this.namespace = props.namespace;
    new k8s.KubeNamespace(this, 'Namespace', {
      // The tenant label comes last: extra labels cannot relabel the namespace as another tenant's.
      metadata: { name: props.namespace, labels: { ...(props.labels ?? {}), [LABELS.tenant]: props.name } },
    });
    new KueueLocalQueue(this, 'LocalQueue', { name: props.localQueue, namespace: props.namespace, clusterQueue: props.clusterQueue });
    new TenantRole(this, 'Role', { namespace: props.namespace, group: props.group });
    new TenantNetworkPolicies(this, 'NetworkPolicies', { namespace: props.namespace, sources: props.ingressSources ?? [] });
  }
}
