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
  /**
   * The flavor of a MultiKueue manager's ClusterQueues, whose Workloads run on the workers: it selects no node of its own
   * cluster, so nodeLabels may be empty (unless it is topology-aware: Kueue then needs a label).
   * @default false
   */
  readonly dispatchOnly?: boolean;
}

/** A Kueue ResourceFlavor (v1beta2): one kind of node, selected by its labels. */
export class KueueResourceFlavor extends Construct {
  readonly name: string;
  /** The Topology it names, if any. */
  readonly topologyName?: string;

  constructor(scope: Construct, id: string, props: KueueResourceFlavorProps) {
    super(scope, id);
    if (Object.keys(props.nodeLabels).length === 0 && (!props.dispatchOnly || props.topologyName !== undefined)) {
      throw new Error(`KueueResourceFlavor ${props.name}: nodeLabels is empty; a flavor must select its nodes (and a topology needs at least one label)`);
    }
    this.name = props.name;
    this.topologyName = props.topologyName;
    const tolerations = props.tolerations ?? [];
    new ResourceFlavorV1Beta2(this, 'Resource', {
      metadata: { name: props.name },
      spec: {
        nodeLabels: Object.keys(props.nodeLabels).length > 0 ? { ...props.nodeLabels } : undefined,
        tolerations: tolerations.length > 0 ? tolerations.map((t) => ({ ...t })) : undefined,
        topologyName: props.topologyName,
      },
    });
  }
}
