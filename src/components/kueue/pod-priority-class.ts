import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { PRIORITY_RANGE } from './workload-priority-class';

export interface PodPriorityClassProps {
  /** PriorityClass name (pods name it in priorityClassName). */
  readonly name: string;
  /** Pod priority; the scheduler preempts lower-priority pods for higher ones. */
  readonly value: number;
  /**
   * Makes this the priority of every pod without a priorityClassName, in every namespace (the
   * pre-installed stack's included); Kueue also takes it as the priority of workloads without a
   * kueue.x-k8s.io/priority-class label. The API server refuses a second one.
   * @default false
   */
  readonly globalDefault?: boolean;
  /**
   * What the class is for.
   * @default - none
   */
  readonly description?: string;
  /**
   * Whether its pods preempt lower-priority pods to be scheduled.
   * @default "PreemptLowerPriority"
   */
  readonly preemptionPolicy?: 'PreemptLowerPriority' | 'Never';
}

/** A Kubernetes PriorityClass (scheduling.k8s.io/v1). */
export class PodPriorityClass extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: PodPriorityClassProps) {
    super(scope, id);
    if (props.name.startsWith('system-')) throw new Error(`PodPriorityClass ${props.name}: the "system-" prefix is reserved by Kubernetes`);
    if (!Number.isInteger(props.value) || props.value < PRIORITY_RANGE.min || props.value > PRIORITY_RANGE.max) {
      throw new Error(`PodPriorityClass ${props.name}: value must be an integer from ${PRIORITY_RANGE.min} to ${PRIORITY_RANGE.max}, got ${props.value}`);
    }
    this.name = props.name;
    new k8s.KubePriorityClass(this, 'Resource', {
      metadata: { name: props.name },
      value: props.value,
      globalDefault: props.globalDefault ?? false,
      // The API default, written out so that Argo CD sees no drift.
      preemptionPolicy: props.preemptionPolicy ?? 'PreemptLowerPriority',
      description: props.description,
    });
  }
}
