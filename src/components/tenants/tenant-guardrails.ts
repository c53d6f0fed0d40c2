import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

export interface TenantGuardrailsProps {
  /** Label key every tenant namespace carries (the policies bind to namespaces with it). */
  readonly tenantLabel: string;
  /** Label that puts a job into a Kueue LocalQueue. */
  readonly queueLabel: string;
  /** Extended resource of the GPUs. */
  readonly gpuResource: string;
  /**
   * Capabilities a tenant container may add: the Pod Security "baseline" set plus IPC_LOCK, which
   * RDMA memory registration needs (baseline itself would reject every NCCL job).
   * @default baseline + IPC_LOCK
   */
  readonly allowedCapabilities?: readonly string[];
  /**
   * Name prefix of the policies and bindings.
   * @default "tenant"
   */
  readonly namePrefix?: string;
}

/** Capabilities the Pod Security "baseline" profile allows to add. */
const BASELINE_CAPABILITIES = [
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
  'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
];

const API_VERSION = 'admissionregistration.k8s.io/v1';

interface Validation {
  readonly expression: string;
  readonly message: string;
}

/**
 * Admission guardrails for tenant namespaces (ValidatingAdmissionPolicy, GA since Kubernetes 1.30):
 * tenants' RBAC lets them create Pods and Jobs, so the policy is what keeps those pods off the
 * host (no privileged containers, host namespaces, hostPath volumes, or capabilities beyond
 * baseline + IPC_LOCK) and inside Kueue's quota (jobs carry a queue label; a pod no controller
 * owns may not take GPUs). Pods created by a controller (Job, MPIJob, PyTorchJob) inherit the
 * queue admission of their owner, so ownership exempts them from the queue rules only.
 */
export class TenantGuardrails extends Construct {
  readonly podPolicyName: string;
  readonly queuePolicyName: string;

  constructor(scope: Construct, id: string, props: TenantGuardrailsProps) {
    super(scope, id);
    const prefix = props.namePrefix ?? 'tenant';
    const allowed = props.allowedCapabilities ?? [...BASELINE_CAPABILITIES, 'IPC_LOCK'];
    if (allowed.includes('SYS_ADMIN')) throw new Error('allowedCapabilities: SYS_ADMIN lets a tenant pod escape to the node');
    this.podPolicyName = `${prefix}-pod-guardrails`;
    this.queuePolicyName = `${prefix}-queue-required`;
    const tenantNamespaces = { matchExpressions: [{ key: props.tenantLabel, operator: 'Exists' }] };
    const owned = 'has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0';
    const capabilityList = allowed.map((c) => `'${c}'`).join(', ');
    const gpu = JSON.stringify(props.gpuResource);

    const podChecks: Validation[] = [
      { expression: '!has(object.spec.hostNetwork) || !object.spec.hostNetwork', message: 'tenant pods may not use the host network' },
      { expression: '!has(object.spec.hostPID) || !object.spec.hostPID', message: 'tenant pods may not use the host PID namespace' },
      { expression: '!has(object.spec.hostIPC) || !object.spec.hostIPC', message: 'tenant pods may not use the host IPC namespace' },
      { expression: '!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))', message: 'tenant pods may not mount hostPath volumes' },
      {
        expression: 'variables.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)',
        message: 'tenant containers may not be privileged (add IPC_LOCK for RDMA instead)',
      },
      {
        expression: 'variables.containers.all(c, !has(c.securityContext) || !has(c.securityContext.capabilities) '
          + `|| !has(c.securityContext.capabilities.add) || c.securityContext.capabilities.add.all(cap, cap in [${capabilityList}]))`,
        message: `tenant containers may add only these capabilities: ${allowed.join(', ')}`,
      },
      {
        expression: `${owned} || variables.containers.all(c, !has(c.resources) `
          + `|| ((!has(c.resources.limits) || !(${gpu} in c.resources.limits)) && (!has(c.resources.requests) || !(${gpu} in c.resources.requests))))`,
        message: `a pod no controller owns may not request ${props.gpuResource}: submit a Job, MPIJob or PyTorchJob with the ${props.queueLabel} label, so Kueue admits it within the quota`,
      },
    ];
    this.policy(this.podPolicyName, {
      matchConstraints: {
        resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] }],
      },
      variables: [{
        name: 'containers',
        expression: 'object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])',
      }],
      validations: podChecks,
    }, tenantNamespaces);

    this.policy(this.queuePolicyName, {
      matchConstraints: {
        resourceRules: [
          { apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['jobs'] },
          { apiGroups: ['kubeflow.org'], apiVersions: ['*'], operations: ['CREATE'], resources: ['mpijobs', 'pytorchjobs'] },
        ],
      },
      validations: [{
        expression: `${owned} || (has(object.metadata.labels) && ${JSON.stringify(props.queueLabel)} in object.metadata.labels)`,
        message: `tenant jobs must name a LocalQueue with the ${props.queueLabel} label (kubectl get localqueues)`,
      }],
    }, tenantNamespaces);
  }

  private policy(name: string, spec: Record<string, unknown>, namespaceSelector: Record<string, unknown>): void {
    new ApiObject(this, name, {
      apiVersion: API_VERSION,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: { failurePolicy: 'Fail', ...spec },
    });
    new ApiObject(this, `${name}-binding`, {
      apiVersion: API_VERSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector } },
    });
  }
}
