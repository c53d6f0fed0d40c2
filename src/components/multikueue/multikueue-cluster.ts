import { Construct } from 'constructs';
import { MultiKueueClusterV1Beta2, MultiKueueClusterV1Beta2SpecClusterSourceKubeConfigLocationType } from '../../../imports/kueue-multikueuecluster-kueue.x-k8s.io';
import { MULTIKUEUE } from '../../model/names';

export interface MultiKueueClusterProps {
  /** MultiKueueCluster name: the worker cluster's name. */
  readonly name: string;
  /**
   * Secret in the Kueue namespace whose key `kubeconfig` holds the worker's kubeconfig (never rendered).
   * @default - clusterProfile
   */
  readonly kubeconfigSecret?: string;
  /**
   * ClusterProfile in the Kueue namespace (feature gate MultiKueueClusterProfile).
   * @default - kubeconfigSecret
   */
  readonly clusterProfile?: string;
  /**
   * The worker's API server as the manager reaches it, for the fleet page's commands that write the Secret (an
   * annotation: the Secret itself is never rendered).
   * @default - the worker context's own server
   */
  readonly server?: string;
}

/** A Kueue MultiKueueCluster (v1beta2): how the manager reaches one worker, by reference only (exactly one of the two). */
export class MultiKueueCluster extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: MultiKueueClusterProps) {
    super(scope, id);
    if ((props.kubeconfigSecret === undefined) === (props.clusterProfile === undefined)) {
      throw new Error(`MultiKueueCluster ${props.name}: give exactly one of kubeconfigSecret and clusterProfile`);
    }
    this.name = props.name;
    new MultiKueueClusterV1Beta2(this, 'Resource', {
      metadata: { name: props.name, ...(props.server !== undefined ? { annotations: { [MULTIKUEUE.serverAnnotation]: props.server } } : {}) },
      spec: {
        clusterSource: props.kubeconfigSecret !== undefined
          // locationType is the CRD default, written out so that Argo CD sees no drift
          ? { kubeConfig: { location: props.kubeconfigSecret, locationType: MultiKueueClusterV1Beta2SpecClusterSourceKubeConfigLocationType.SECRET } }
          : { clusterProfileRef: { name: props.clusterProfile! } },
      },
    });
  }
}
