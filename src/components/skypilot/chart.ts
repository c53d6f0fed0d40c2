import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { skypilotClientFiles } from './client-files';
import { SkyPilotIdentity } from './skypilot-identity';
import { SkyPilotIdentityGuard } from './skypilot-identity-guard';
import { SkyPilotNodeReader } from './skypilot-node-reader';
import { ClusterModel } from '../../model/model';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';

/**
 * The cluster side of the SkyPilot tutorial: the SkyPilot identities (launcher and workload) in every
 * namespace with a LocalQueue ("default" and each tenant's), the launchers bound to one read-only
 * ClusterRole, and (Kubernetes 1.30 and later) the admission policies that keep their rights with
 * SkyPilot. The client side (config and task files) is rendered to dist/<cluster>/tutorials/skypilot/.
 */
export class SkyPilotChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const reader = new SkyPilotNodeReader(this, 'NodeReader');
    const namespaces = props.model.queueing.queues.map((q) => q.namespace);
    for (const ns of namespaces) new SkyPilotIdentity(this, `Identity-${ns}`, { namespace: ns, clusterRole: reader.name });
    if (props.model.admissionPolicies) {
      new SkyPilotIdentityGuard(this, 'IdentityGuard', { namespaces });
    }
  }
}

export const skypilot: ComponentDefinition = {
  folder: 'skypilot',
  description: 'SkyPilot tutorial: per queue namespace a launcher and a workload ServiceAccount with their Roles, one read-only ClusterRole, and the admission policies that keep their rights with SkyPilot (client files in tutorials/skypilot/)',
  build: (scope: Construct, model: ClusterModel) =>
    (model.description.tutorials.skypilot.enabled ? new SkyPilotChart(scope, 'skypilot', { model }) : undefined),
  clientFiles: skypilotClientFiles,
};
