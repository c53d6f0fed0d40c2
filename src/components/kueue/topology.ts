import { Construct } from 'constructs';
import { TopologyV1Beta2 } from '../../../imports/kueue-topology-kueue.x-k8s.io';

export interface KueueTopologyProps {
  /** Topology name; ResourceFlavors refer to it with topologyName. */
  readonly name: string;
  /** Node label keys from the widest level (e.g. block) to the narrowest (kubernetes.io/hostname). */
  readonly levels: readonly string[];
}

/** A Kueue Topology (v1beta2) for topology-aware scheduling: jobs can ask to be packed within one level. */
export class KueueTopology extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: KueueTopologyProps) {
    super(scope, id);
    if (props.levels.length === 0) throw new Error(`KueueTopology ${props.name}: levels is empty`);
    const duplicate = props.levels.find((l, i) => props.levels.indexOf(l) !== i);
    if (duplicate) throw new Error(`KueueTopology ${props.name}: levels has "${duplicate}" twice`);
    this.name = props.name;
    new TopologyV1Beta2(this, 'Resource', {
      metadata: { name: props.name },
      spec: { levels: props.levels.map((nodeLabel) => ({ nodeLabel })) },
    });
  }
}
