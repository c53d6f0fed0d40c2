import { Construct } from 'constructs';
import { GroupKind } from './api-kinds';
import { AppProject } from '../../../imports/argocd-appproject-argoproj.io';
import { IN_CLUSTER_SERVER } from '../../model/description';
import { RESOURCES_FINALIZER } from '../../model/names';

export interface FleetAppProjectProps {
  readonly name: string;
  /** Namespace of the hub's Argo CD. */
  readonly namespace: string;
  readonly sourceRepos: readonly string[];
  /** Each cluster (by its registered name) and its Argo CD namespace; a hub-managed cluster's go to the hub itself. */
  readonly destinations: readonly { readonly cluster: string; readonly namespace: string; readonly hubManaged: boolean }[];
  /** The namespaced kinds the clusters' gitops folders hold (AppProject, Application); nothing cluster-scoped. */
  readonly namespacedKinds: readonly GroupKind[];
}

/** The hub's project for the fleet: it may write only Argo CD objects, only into each cluster's Argo CD namespace (or the hub's). */
export class FleetAppProject extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: FleetAppProjectProps) {
    super(scope, id);
    this.name = props.name;
    new AppProject(this, 'Resource', {
      metadata: { name: props.name, namespace: props.namespace, finalizers: [RESOURCES_FINALIZER] },
      spec: {
        description: 'The fleet: each cluster\'s AppProject and Applications, applied to its Argo CD',
        sourceRepos: [...props.sourceRepos],
        destinations: props.destinations.map((d) => (d.hubManaged
          ? { server: IN_CLUSTER_SERVER, namespace: d.namespace }
          : { name: d.cluster, namespace: d.namespace })),
        clusterResourceWhitelist: [],
        namespaceResourceWhitelist: props.namespacedKinds.map((gk) => ({ group: gk.group, kind: gk.kind })),
      },
    });
  }
}
