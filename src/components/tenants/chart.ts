import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { LABELS, RESOURCES } from '../../model/names';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { Tenant } from './tenant';
import { TenantGuardrails } from './tenant-guardrails';

/** ValidatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) from Kubernetes 1.30. */
const ADMISSION_POLICY_MINOR = 30;

/**
 * Tenants: per tenant a labelled namespace, its LocalQueue and a namespaced role for its group;
 * and admission guardrails for every tenant namespace (on Kubernetes 1.30 and later).
 */
export class TenantsChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const minor = Number(props.model.description.kubernetesVersion.split('.')[1]);
    if (minor >= ADMISSION_POLICY_MINOR) {
      new TenantGuardrails(this, 'Guardrails', { tenantLabel: LABELS.tenant, queueLabel: LABELS.queueName, gpuResource: RESOURCES.gpu });
    }
    for (const t of props.model.tenants) {
      new Tenant(this, t.name, {
        name: t.name,
        namespace: t.namespace,
        localQueue: t.localQueue,
        clusterQueue: t.clusterQueue,
        group: t.group,
        labels: t.labels,
      });
    }
  }
}

export const tenants: ComponentDefinition = {
  folder: 'tenants',
  description: 'Tenant namespaces with their LocalQueue, a namespaced Role bound to the tenant group, and admission guardrails (no host access, jobs queued)',
  build: (scope: Construct, model: ClusterModel) => (model.tenants.length === 0 ? undefined : new TenantsChart(scope, 'tenants', { model })),
};
