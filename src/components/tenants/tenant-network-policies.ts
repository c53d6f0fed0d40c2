import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { LABELS } from '../../model/names';

/** A namespace whose pods may open connections to every pod of an isolated namespace, and why. */
export interface IngressSource {
  readonly namespace: string;
  readonly why: string;
}

export interface TenantNetworkPoliciesProps {
  /** The namespace to isolate. */
  readonly namespace: string;
  /** Other namespaces allowed in (the monitoring scrapes, later a Dynamo platform namespace). */
  readonly sources: readonly IngressSource[];
}

/**
 * Ingress isolation of one namespace (networking.k8s.io/v1, enforced by Cilium): deny by default,
 * then allow the namespace's own pods (MPI launcher to workers over SSH, NCCL bootstrap, torchrun
 * rendezvous, SkyPilot's pods) and the listed namespaces. Egress stays open (DNS, registries, the
 * API server): another tenant's ingress policy is what keeps a tenant out. Kubelet probes come from
 * the node itself, which Cilium always lets in.
 */
export class TenantNetworkPolicies extends Construct {
  constructor(scope: Construct, id: string, props: TenantNetworkPoliciesProps) {
    super(scope, id);
    const namespace = props.namespace;
    const everyPod = {};
    new k8s.KubeNetworkPolicy(this, 'DefaultDeny', {
      metadata: { name: 'default-deny-ingress', namespace },
      spec: { podSelector: everyPod, policyTypes: ['Ingress'] },
    });
    new k8s.KubeNetworkPolicy(this, 'SameNamespace', {
      metadata: { name: 'allow-same-namespace', namespace },
      spec: { podSelector: everyPod, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: everyPod }] }] },
    });
    const sources = [...new Set(props.sources.map((s) => s.namespace))].filter((ns) => ns !== namespace);
    if (sources.length > 0) {
      new k8s.KubeNetworkPolicy(this, 'Platform', {
        metadata: { name: 'allow-from-platform', namespace },
        spec: {
          podSelector: everyPod,
          policyTypes: ['Ingress'],
          ingress: [{ from: sources.map((ns) => ({ namespaceSelector: { matchLabels: { [LABELS.namespaceName]: ns } } })) }],
        },
      });
    }
  }
}
