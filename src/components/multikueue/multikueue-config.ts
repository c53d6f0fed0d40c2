import { Construct } from 'constructs';
import { MultiKueueConfigV1Beta2 } from '../../../imports/kueue-multikueueconfig-kueue.x-k8s.io';
import { MAX_MULTIKUEUE_WORKERS } from '../../model/fleet';

export interface MultiKueueConfigProps {
  /** MultiKueueConfig name (an AdmissionCheck's parameters name it). */
  readonly name: string;
  /** MultiKueueCluster names in dispatch order: unique, 1 to 20. */
  readonly clusters: readonly string[];
}

/** A Kueue MultiKueueConfig (v1beta2): the workers a ClusterQueue's Workloads go to, in the order the Incremental dispatcher nominates them. */
export class MultiKueueConfig extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: MultiKueueConfigProps) {
    super(scope, id);
    if (props.clusters.length === 0 || props.clusters.length > MAX_MULTIKUEUE_WORKERS) {
      throw new Error(`MultiKueueConfig ${props.name}: clusters must list 1 to ${MAX_MULTIKUEUE_WORKERS} workers, got ${props.clusters.length}`);
    }
    const twice = props.clusters.find((c, i) => props.clusters.indexOf(c) !== i);
    if (twice !== undefined) throw new Error(`MultiKueueConfig ${props.name}: clusters lists "${twice}" twice`);
    this.name = props.name;
    new MultiKueueConfigV1Beta2(this, 'Resource', {
      metadata: { name: props.name },
      spec: { clusters: [...props.clusters] },
    });
  }
}
