import { IngressSource } from './tenant-network-policies';
import { ClusterModel } from '../../model/model';

/**
 * The namespaces whose pods may connect to pods in tenant namespaces (and in `default`), derived
 * from the description in this one place. Add a platform namespace here when an add-on must reach
 * tenant pods (a Dynamo platform namespace, say).
 */
export function tenantIngressSources(model: ClusterModel): IngressSource[] {
  return [
    { namespace: model.description.monitoring.namespace, why: 'VMAgent scrapes the metrics endpoints of tenant pods' },
  ];
}
