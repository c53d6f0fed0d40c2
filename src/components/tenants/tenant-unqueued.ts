import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { RESOURCES } from '../../model/names';

export interface TenantUnqueuedProps {
  /** The tenant's namespace. */
  readonly namespace: string;
  /** PriorityClass every pod outside Kueue names (the guardrails require it); the ResourceQuota's scope. */
  readonly priorityClass: string;
  /** ResourceQuota name. */
  readonly quotaName: string;
  /** CPU and memory requests, and pods, of all pods outside Kueue together. */
  readonly hard: { readonly cpu: string; readonly memory: string; readonly pods: number };
  /** LimitRange name. */
  readonly limitRangeName: string;
  /** Requests a container without any gets (the LimitRange's defaultRequest), so that Kueue and the quota count it. */
  readonly defaultRequest: { readonly cpu: string; readonly memory: string };
}

/**
 * What a tenant runs outside Kueue, bounded: a ResourceQuota scoped to the unqueued PriorityClass (a quota cannot
 * select "not queued"; Kubernetes scopes quotas by priority class, so the guardrails make every pod outside Kueue name
 * that class and no queued pod name it), and a LimitRange that gives every container without requests the default
 * ones (the quota refuses a pod in its scope that omits a resource it limits; Kueue applies the same defaults when it
 * sizes a workload). The LimitRange sets no default limits: a CPU or memory limit a training container did not ask for
 * would throttle or kill it.
 */
export class TenantUnqueued extends Construct {
  constructor(scope: Construct, id: string, props: TenantUnqueuedProps) {
    super(scope, id);
    new k8s.KubeResourceQuota(this, 'Quota', {
      metadata: { name: props.quotaName, namespace: props.namespace },
      spec: {
        hard: {
          [`requests.${RESOURCES.cpu}`]: k8s.Quantity.fromString(props.hard.cpu),
          [`requests.${RESOURCES.memory}`]: k8s.Quantity.fromString(props.hard.memory),
          pods: k8s.Quantity.fromNumber(props.hard.pods),
        },
        scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: [props.priorityClass] }] },
      },
    });
    new k8s.KubeLimitRange(this, 'LimitRange', {
      metadata: { name: props.limitRangeName, namespace: props.namespace },
      spec: {
        limits: [{
          type: 'Container',
          defaultRequest: {
            [RESOURCES.cpu]: k8s.Quantity.fromString(props.defaultRequest.cpu),
            [RESOURCES.memory]: k8s.Quantity.fromString(props.defaultRequest.memory),
          },
        }],
      },
    });
  }
}
