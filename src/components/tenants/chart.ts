import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { KUEUE_POD, LABELS, NAMESPACES, RESOURCES } from '../../model/names';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { tenantIngressSources } from './ingress-sources';
import { Tenant } from './tenant';
import { TenantGuardrails } from './tenant-guardrails';
import { TenantNetworkPolicies } from './tenant-network-policies';

/**
 * Tenants: per tenant a labelled namespace, its LocalQueue, a namespaced role for its group and
 * ingress NetworkPolicies; admission guardrails for every tenant namespace (on Kubernetes 1.30 and
 * later). `default` gets the same NetworkPolicies: the samples and the administrators' own jobs run
 * there, and tenants must not reach them either.
 */
export class TenantsChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    if (props.model.admissionPolicies) {
      new TenantGuardrails(this, 'Guardrails', {
        tenantLabel: LABELS.tenant,
        queueLabel: LABELS.queueName,
        gpuResource: RESOURCES.gpu,
        rdmaResourcePrefix: RESOURCES.rdmaPrefix,
        kueueGates: [KUEUE_POD.admissionGate, KUEUE_POD.topologyGate],
      });
    }
    const ingressSources = tenantIngressSources(props.model);
    new TenantNetworkPolicies(this, 'DefaultNamespacePolicies', { namespace: NAMESPACES.default, sources: ingressSources });
    for (const t of props.model.tenants) {
      new Tenant(this, t.name, {
        name: t.name,
        namespace: t.namespace,
        localQueue: t.localQueue,
        clusterQueue: t.clusterQueue,
        group: t.group,
        labels: t.labels,
        ingressSources,
      });
    }
  }
}

export const tenants: ComponentDefinition = {
  folder: 'tenants',
  description: 'Tenant namespaces with their LocalQueue, a namespaced Role bound to the tenant group, and admission guardrails (Pod Security baseline + IPC_LOCK, GPUs only through Kueue), ingress NetworkPolicies',
  build: (scope: Construct, model: ClusterModel) => (model.tenants.length === 0 ? undefined : new TenantsChart(scope, 'tenants', { model })),
};
