import { Construct } from 'constructs';
import { LocalQueueV1Beta2, LocalQueueV1Beta2SpecStopPolicy } from '../../../imports/kueue-localqueue-kueue.x-k8s.io';

export interface KueueLocalQueueProps {
  /** LocalQueue name; jobs name it in the kueue.x-k8s.io/queue-name label. */
  readonly name: string;
  /** Namespace of the LocalQueue (the namespace whose jobs it takes). */
  readonly namespace: string;
  /** ClusterQueue that admits the jobs of this queue. */
  readonly clusterQueue: string;
  /**
   * Extra labels of the LocalQueue.
   * @default - the chart's labels only
   */
  readonly labels?: Readonly<Record<string, string>>;
}

/** A Kueue LocalQueue (v1beta2): the namespaced entry point of a ClusterQueue. */
export class KueueLocalQueue extends Construct {
  readonly name: string;
  readonly namespace: string;
  readonly clusterQueue: string;

  constructor(scope: Construct, id: string, props: KueueLocalQueueProps) {
    super(scope, id);
    this.name = props.name;
    this.namespace = props.namespace;
    this.clusterQueue = props.clusterQueue;
    new LocalQueueV1Beta2(this, 'Resource', {
      metadata: { name: props.name, namespace: props.namespace, labels: props.labels ? { ...props.labels } : undefined },
      // stopPolicy is the CRD default, written out so that Argo CD sees no drift.
      spec: { clusterQueue: props.clusterQueue, stopPolicy: LocalQueueV1Beta2SpecStopPolicy.NONE },
    });
  }
}
