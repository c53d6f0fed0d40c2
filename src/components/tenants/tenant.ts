import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { IngressSource, TenantNetworkPolicies } from './tenant-network-policies';
import { TenantRole } from './tenant-role';
import { TenantUnqueued, TenantUnqueuedProps } from './tenant-unqueued';
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
  /**
   * Namespace labels that say which priorities the tenant may use (the guardrails read them; set after the extra
   * labels, which cannot override them).
   * @default - none
   */
  readonly priorityLabels?: Readonly<Record<string, string>>;
  /** What the tenant may run outside Kueue: its ResourceQuota and LimitRange. */
  readonly unqueued: Omit<TenantUnqueuedProps, 'namespace'>;
}

/** One tenant: its namespace, its LocalQueue, its namespaced role, its ingress NetworkPolicies, and the bounds of what it runs outside Kueue. */
export class Tenant extends Construct {
  readonly namespace: string;

  constructor(scope: Construct, id: string, props: TenantProps) {
    super(scope, id);
    this.namespace = props.namespace;
    new k8s.KubeNamespace(this, 'Namespace', {
      // The tenant label comes last: extra labels cannot relabel the namespace as another tenant's.
      metadata: { name: props.namespace, labels: { ...(props.labels ?? {}), ...(props.priorityLabels ?? {}), [LABELS.tenant]: props.name } },
    });
    new KueueLocalQueue(this, 'LocalQueue', { name: props.localQueue, namespace: props.namespace, clusterQueue: props.clusterQueue });
    new TenantRole(this, 'Role', { namespace: props.namespace, group: props.group });
    new TenantNetworkPolicies(this, 'NetworkPolicies', { namespace: props.namespace, sources: props.ingressSources ?? [] });
    new TenantUnqueued(this, 'Unqueued', { ...props.unqueued, namespace: props.namespace });
  }
}
