import { Construct } from 'constructs';
import { GroupKind } from './api-kinds';
import { AppProject } from '../../../imports/argocd-appproject-argoproj.io';
import { LABELS, RESOURCES_FINALIZER } from '../../model/names';

export interface ClusterAppProjectProps {
  readonly name: string;
  /** Namespace Argo CD runs in. */
  readonly namespace: string;
  readonly description: string;
  /** Repositories the Applications may read, listed explicitly. */
  readonly sourceRepos: readonly string[];
  /** API server the Applications deploy to. */
  readonly destinationServer: string;
  /** Namespaces the Applications may write to, listed explicitly (never `*`). */
  readonly namespaces: readonly string[];
  /**
   * Destinations on the API server of the Argo CD that runs the Applications, when that is not the cluster (a hub):
   * its Argo CD namespace, where the root applies the AppProject and the Applications.
   * @default []
   */
  readonly argocdDestinations?: readonly { readonly server: string; readonly namespace: string }[];
  /** Cluster-scoped kinds the Applications may write; every other cluster-scoped kind is refused. */
  readonly clusterKinds: readonly GroupKind[];
  /**
   * Sync wave inside the root Application.
   * @default - none
   */
  readonly wave?: number;
}

/**
 * The AppProject of one cluster: exactly the destinations and cluster-scoped kinds its rendered objects
 * and managed installs need, so an Application can never write outside the cluster's own namespaces.
 */
export class ClusterAppProject extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: ClusterAppProjectProps) {
    super(scope, id);
    const wildcard = props.namespaces.find((ns) => ns.includes('*'));
    if (wildcard !== undefined) throw new Error(`namespaces: "${wildcard}" is a pattern; list the namespaces explicitly`);
    if (props.sourceRepos.length === 0) throw new Error('sourceRepos: an AppProject needs at least one repository');
    this.name = props.name;

    new AppProject(this, 'Resource', {
      metadata: {
        name: props.name,
        namespace: props.namespace,
        ...(props.wave !== undefined ? { annotations: { [LABELS.syncWave]: String(props.wave) } } : {}),
        // Argo CD keeps the project while Applications still refer to it.
        finalizers: [RESOURCES_FINALIZER],
      },
      spec: {
        description: props.description,
        sourceRepos: [...props.sourceRepos],
        destinations: [
          ...props.namespaces.map((namespace) => ({ server: props.destinationServer, namespace })),
          ...(props.argocdDestinations ?? []).map((d) => ({ server: d.server, namespace: d.namespace })),
        ],
        clusterResourceWhitelist: props.clusterKinds.map((gk) => ({ group: gk.group, kind: gk.kind })),
      },
    });
  }
}
