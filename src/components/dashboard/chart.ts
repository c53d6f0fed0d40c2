import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { DashboardNodePort } from './dashboard-node-port';
import { DashboardViewer } from './dashboard-viewer';

/**
 * The Kubernetes Dashboard's access: a read-only ServiceAccount to browse with and, as
 * monitoring.dashboard.service says, no Service (the pre-installed one serves the node port), the
 * chart's Kong proxy Service adopted, or a NodePort Service of our own. The Dashboard itself is
 * preinstalled (Helm chart v7).
 */
export class DashboardChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const dashboard = props.model.description.monitoring.dashboard;
    if (dashboard.service !== 'preinstalled') {
      new DashboardNodePort(this, 'NodePort', {
        namespace: dashboard.namespace,
        release: dashboard.release,
        nodePort: dashboard.nodePort,
        adoptChartService: dashboard.service === 'adopt',
      });
    }
    new DashboardViewer(this, 'Viewer', { namespace: dashboard.namespace });
  }
}

export const dashboard: ComponentDefinition = {
  folder: 'dashboard',
  description: 'Kubernetes Dashboard access: a read-only dashboard-viewer ServiceAccount, and the NodePort Service when adopted or owned (monitoring.dashboard.service)',
  build: (scope: Construct, model: ClusterModel) => (model.description.monitoring.dashboard.enabled
    ? new DashboardChart(scope, 'dashboard', { model })
    : undefined),
};
