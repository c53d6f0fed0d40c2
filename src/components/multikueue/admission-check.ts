import { Construct } from 'constructs';
import { AdmissionCheckV1Beta2 } from '../../../imports/kueue-admissioncheck-kueue.x-k8s.io';
import { MULTIKUEUE } from '../../model/names';


export interface MultiKueueAdmissionCheckProps {
  /** AdmissionCheck name; ClusterQueues name it in spec.admissionChecksStrategy. */
  readonly name: string;
  /** The MultiKueueConfig naming the workers. */
  readonly config: string;
}

/**
 * A Kueue AdmissionCheck (v1beta2) run by MultiKueue: a Workload that passes it has been admitted by one of the
 * workers of its MultiKueueConfig and runs there. The controllerName is immutable (CRD rule `self == oldSelf`).
 */
export class MultiKueueAdmissionCheck extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: MultiKueueAdmissionCheckProps) {
    super(scope, id);
    this.name = props.name;
    new AdmissionCheckV1Beta2(this, 'Resource', {
      metadata: { name: props.name },
      spec: {
        controllerName: MULTIKUEUE.controllerName,
        parameters: { apiGroup: 'kueue.x-k8s.io', kind: 'MultiKueueConfig', name: props.config },
      },
    });
  }
}
