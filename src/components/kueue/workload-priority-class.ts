import { Construct } from 'constructs';
import { WorkloadPriorityClassV1Beta2 } from '../../../imports/kueue-workloadpriorityclass-kueue.x-k8s.io';

/** Kubernetes and Kueue accept priorities in this range for user classes (higher values are system classes). */
export const PRIORITY_RANGE = { min: -2147483648, max: 1_000_000_000 } as const;

export interface KueueWorkloadPriorityClassProps {
  /** Class name; jobs name it in the kueue.x-k8s.io/priority-class label. */
  readonly name: string;
  /** Priority value; higher is admitted first and may preempt lower. */
  readonly value: number;
  /**
   * What the class is for (shown by kubectl).
   * @default - none
   */
  readonly description?: string;
}

/** A Kueue WorkloadPriorityClass (v1beta2): the priority of a queued workload, independent of pod priority. */
export class KueueWorkloadPriorityClass extends Construct {
  readonly name: string;
  readonly value: number;

  constructor(scope: Construct, id: string, props: KueueWorkloadPriorityClassProps) {
    super(scope, id);
    if (!Number.isInteger(props.value) || props.value < PRIORITY_RANGE.min || props.value > PRIORITY_RANGE.max) {
      throw new Error(`KueueWorkloadPriorityClass ${props.name}: value must be an integer from ${PRIORITY_RANGE.min} to ${PRIORITY_RANGE.max}, got ${props.value}`);
    }
    this.name = props.name;
    this.value = props.value;
    new WorkloadPriorityClassV1Beta2(this, 'Resource', {
      metadata: { name: props.name },
      value: props.value,
      description: props.description,
    });
  }
}
