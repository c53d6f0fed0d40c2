import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { KUEUE_POD, LABELS, NAMESPACES, RESOURCES, TENANCY } from '../../model/names';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { tenantIngressSources } from './ingress-sources';
import { Tenant } from './tenant';
import { TenantGuardrails } from './tenant-guardrails';
import { TenantNetworkPolicies } from './tenant-network-policies';
import { PodPriorityClass } from '../kueue/pod-priority-class';
import { PRIORITY_RANGE } from '../kueue/workload-priority-class';

/**
 * Tenants: per tenant a labelled namespace, its LocalQueue, a namespaced role for its group, ingress
 * NetworkPolicies, and a ResourceQuota and LimitRange for what it runs outside Kueue (pods of the
 * unqueued PriorityClass, rendered here once: below every priority, never preempting); admission
 * guardrails for every tenant namespace (on Kubernetes 1.30 and later). `default` gets the same
 * NetworkPolicies: the samples and the administrators' own jobs run there, and tenants must not reach
 * them either.
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
        reservedTaints: props.model.reservedTaints,
        serviceNodeLabels: props.model.serviceNode.selector,
        priorities: {
          priorityLabel: LABELS.priorityClass,
          unqueuedClass: TENANCY.unqueuedPriorityClass,
          unqueuedQuota: TENANCY.unqueuedQuota,
          allowedPrefix: TENANCY.priorityLabelPrefix,
          allowed: TENANCY.priorityAllowed,
        },
      });
    }
    new PodPriorityClass(this, 'UnqueuedPriority', {
      name: TENANCY.unqueuedPriorityClass,
      value: unqueuedPriorityValue(props.model),
      preemptionPolicy: 'Never',
      description: 'Pods outside Kueue in tenant namespaces (debugging, data preparation): below every queued priority, never preempting; '
        + `counted by the namespace's ResourceQuota ${TENANCY.unqueuedQuota}.`,
    });
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
        priorityLabels: Object.fromEntries(t.priorities.map((p) => [`${TENANCY.priorityLabelPrefix}${p}`, TENANCY.priorityAllowed])),
        unqueued: {
          priorityClass: TENANCY.unqueuedPriorityClass,
          quotaName: TENANCY.unqueuedQuota,
          hard: t.unqueued,
          limitRangeName: TENANCY.limitRange,
          defaultRequest: t.defaultRequest,
        },
      });
    }
  }
}

/** Below every described priority and below 0, the priority of a pod that names none (no class is globalDefault). */
export function unqueuedPriorityValue(model: ClusterModel): number {
  return Math.max(PRIORITY_RANGE.min, Math.min(0, ...model.queueing.priorities.map((p) => p.value)) - 1);
}

export const tenants: ComponentDefinition = {
  folder: 'tenants',
  description: 'Tenant namespaces with their LocalQueue, a namespaced Role bound to the tenant group, a ResourceQuota and LimitRange for pods outside Kueue (PriorityClass unqueued), '
    + 'admission guardrails (Pod Security baseline + IPC_LOCK, GPUs only through Kueue, no placement, priority or device escape), ingress NetworkPolicies',
  build: (scope: Construct, model: ClusterModel) => (model.tenants.length === 0 ? undefined : new TenantsChart(scope, 'tenants', { model })),
};
