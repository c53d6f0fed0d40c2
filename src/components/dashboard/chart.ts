import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { DashboardNodePort } from './dashboard-node-port';
import { DashboardViewer } from './dashboard-viewer';

/**
 * The Kubernetes Dashboard's access: the NodePort Service the Instant Cluster documents and a
 * read-only ServiceAccount to browse with. The Dashboard itself is preinstalled (Helm chart v7).
 */
export class DashboardChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const dashboard = props.model.description.monitoring.dashboard;
    new DashboardNodePort(this, 'NodePort', { namespace: dashboard.namespace, release: dashboard.release, nodePort: dashboard.nodePort });
    new DashboardViewer(this, 'Viewer', { namespace: dashboard.namespace });
  }
}

export const dashboard: ComponentDefinition = {
  folder: 'dashboard',
  description: 'Kubernetes Dashboard on a NodePort (default 32443) and a read-only dashboard-viewer ServiceAccount',
  build: (scope: Construct, model: ClusterModel) => (model.description.monitoring.dashboard.enabled
    ? new DashboardChart(scope, 'dashboard', { model })
    : undefined),
};
