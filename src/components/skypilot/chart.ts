import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { skypilotClientFiles } from './client-files';
import { SkyPilotIdentity } from './skypilot-identity';
import { SkyPilotNodeReader } from './skypilot-node-reader';
import { ClusterModel } from '../../model/model';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';

/**
 * The cluster side of the SkyPilot tutorial: a SkyPilot identity in every namespace with a LocalQueue
 * ("default" and each tenant's), all bound to one read-only ClusterRole. The client side (config and
 * task files) is rendered to dist/<cluster>/tutorials/skypilot/.
 */
export class SkyPilotChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const reader = new SkyPilotNodeReader(this, 'NodeReader');
    for (const q of props.model.queueing.queues) {
      new SkyPilotIdentity(this, `Identity-${q.namespace}`, { namespace: q.namespace, clusterRole: reader.name });
    }
  }
}

export const skypilot: ComponentDefinition = {
  folder: 'skypilot',
  description: 'SkyPilot tutorial: a SkyPilot ServiceAccount and Role per queue namespace and one read-only ClusterRole (client files in tutorials/skypilot/)',
  build: (scope: Construct, model: ClusterModel) =>
    (model.description.tutorials.skypilot.enabled ? new SkyPilotChart(scope, 'skypilot', { model }) : undefined),
  clientFiles: skypilotClientFiles,
};
