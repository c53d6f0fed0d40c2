import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';

const READ = ['get', 'list', 'watch'];

/**
 * What SkyPilot reads cluster-wide (its documented minimum): nodes (GPU type from
 * nvidia.com/gpu.product, allocatable GPUs), RuntimeClasses and StorageClasses. Read-only.
 */
export const SKYPILOT_CLUSTER_RULES: readonly k8s.PolicyRule[] = [
  { apiGroups: [''], resources: ['nodes'], verbs: READ },
  { apiGroups: ['node.k8s.io'], resources: ['runtimeclasses'], verbs: READ },
  { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: READ },
];

export interface SkyPilotNodeReaderProps {
  /**
   * ClusterRole name.
   * @default "skypilot-node-reader"
   */
  readonly name?: string;
}

/** The one cluster-scoped role of the SkyPilot tutorial: read nodes, RuntimeClasses, StorageClasses. Nothing else. */
export class SkyPilotNodeReader extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: SkyPilotNodeReaderProps = {}) {
    super(scope, id);
    this.name = props.name ?? 'skypilot-node-reader';
    new k8s.KubeClusterRole(this, 'ClusterRole', {
      metadata: { name: this.name },
      rules: SKYPILOT_CLUSTER_RULES.map((r) => ({ apiGroups: [...r.apiGroups!], resources: [...r.resources!], verbs: [...r.verbs] })),
    });
  }
}
