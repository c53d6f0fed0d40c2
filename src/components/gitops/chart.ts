import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { RenderedFolder } from '../../render/manifest';
import { componentChartProps, ComponentChartProps, WiringDefinition } from '../component';
import { ClusterAppProject } from './cluster-app-project';
import { GitopsApplication } from './gitops-application';
import { GITOPS_FOLDER, planGitops, WAVES } from './plan';

export interface GitopsChartProps extends ComponentChartProps {
  /** The component folders rendered for this cluster (the gitops folder itself excluded). */
  readonly folders: readonly RenderedFolder[];
}

/**
 * The Argo CD objects of one cluster: its AppProject, a root Application (app-of-apps) that syncs this
 * folder, an Application per managed add-on, and one per component folder, in sync waves.
 */
export class GitopsChart extends Chart {
  constructor(scope: Construct, id: string, props: GitopsChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const plan = planGitops(props.model, props.folders);

    const project = new ClusterAppProject(this, 'Project', {
      name: plan.project.name,
      namespace: plan.namespace,
      description: `Cluster ${props.model.name}: the add-ons and configuration rendered by gpu-cluster-manifests`,
      sourceRepos: plan.project.sourceRepos,
      destinationServer: plan.destinationServer,
      namespaces: plan.project.namespaces,
      clusterKinds: plan.project.clusterKinds,
      wave: WAVES.project,
    });
    for (const app of plan.applications) {
      new GitopsApplication(this, app.name, {
        ...app,
        namespace: plan.namespace,
        project: project.name,
        destinationServer: plan.destinationServer,
      });
    }
  }
}

export const gitops: WiringDefinition = {
  folder: GITOPS_FOLDER,
  description: 'Argo CD: the AppProject, the root Application (app-of-apps), managed add-on installs and one Application per component folder, in sync waves',
  build: (scope: Construct, model: ClusterModel, folders: readonly RenderedFolder[]) =>
    new GitopsChart(scope, GITOPS_FOLDER, { model, folders }),
};
