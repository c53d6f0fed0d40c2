import { Construct } from 'constructs';
import { ResourceFlavorV1Beta2 } from '../../../imports/kueue-resourceflavor-kueue.x-k8s.io';
import { TolerationSpec } from '../../model/model';

export interface KueueResourceFlavorProps {
  /** ResourceFlavor name; ClusterQueues refer to it. */
  readonly name: string;
  /** Node labels of the nodes this flavor stands for; Kueue adds them to admitted pods as a node selector. */
  readonly nodeLabels: Readonly<Record<string, string>>;
  /**
   * Tolerations Kueue adds to admitted pods, for the taints of these nodes.
   * @default - none
   */
  readonly tolerations?: readonly TolerationSpec[];
  /**
   * Topology (by name) for topology-aware scheduling on these nodes.
   * @default - no topology-aware scheduling
   */
  readonly topologyName?: string;
}

/** A Kueue ResourceFlavor (v1beta2): one kind of node, selected by its labels. */
export class KueueResourceFlavor extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: KueueResourceFlavorProps) {
    super(scope, id);
    if (Object.keys(props.nodeLabels).length === 0) {
      throw new Error(`KueueResourceFlavor ${props.name}: nodeLabels is empty; a flavor must select its nodes (and a topology needs at least one label)`);
    }
    this.name = props.name;
    const tolerations = props.tolerations ?? [];
    new ResourceFlavorV1Beta2(this, 'Resource', {
      metadata: { name: props.name },
      spec: {
        nodeLabels: { ...props.nodeLabels },
        tolerations: tolerations.length > 0 ? tolerations.map((t) => ({ ...t })) : undefined,
        topologyName: props.topologyName,
      },
    });
  }
}
