import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { Tenant } from './tenant';

/** Tenants: per tenant a labelled namespace, its LocalQueue and a namespaced role for its group. */
export class TenantsChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
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
  description: 'Tenant namespaces with their LocalQueue and a namespaced Role bound to the tenant group',
  build: (scope: Construct, model: ClusterModel) => (model.tenants.length === 0 ? undefined : new TenantsChart(scope, 'tenants', { model })),
};
