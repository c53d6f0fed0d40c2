import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import {
  deviceRules, everyContainer, jobPriorityRules, JobTemplates, list, placementRules, podPriorityRules, PriorityRuleProps, ReservedTaint,
  runtimeClassRule, Validation,
} from './lane-rules';
import { TRUSTED_REQUESTERS, TrustedRequester, usersTrustedWith } from './trusted-requesters';
import { KUBEFLOW_JOB_GVK, NVIDIA_RUNTIME_CLASSES } from '../../model/names';

export interface TenantGuardrailsProps {
  /** Label key every tenant namespace carries (the policies bind to namespaces with it). */
  readonly tenantLabel: string;
  /** Label that puts a job or pod into a Kueue LocalQueue. */
  readonly queueLabel: string;
  /** Extended resource of the GPUs. */
  readonly gpuResource: string;
  /**
   * Prefix of the RDMA device resources (`rdma/`): a pod requesting one must go through Kueue like a GPU pod.
   * @default "rdma/"
   */
  readonly rdmaResourcePrefix?: string;
  /**
   * RuntimeClasses that run a pod under the NVIDIA container runtime, which hands a container the GPUs its
   * NVIDIA_VISIBLE_DEVICES names (an image's own `ENV NVIDIA_VISIBLE_DEVICES=all` included): only pods that request
   * GPUs may use them.
   * @default the GPU Operator's: nvidia, nvidia-cdi, nvidia-legacy
   */
  readonly nvidiaRuntimeClasses?: readonly string[];
  /** Scheduling gates Kueue puts on queued pods; the first is the admission gate a queued pod must carry. */
  readonly kueueGates: readonly [string, ...string[]];
  /** Taints no tenant pod may tolerate (the service node's and the description's reserved taints). */
  readonly reservedTaints: readonly ReservedTaint[];
  /** Labels of the service node: no tenant pod may select it. */
  readonly serviceNodeLabels: Readonly<Record<string, string>>;
  /**
   * Priorities: Kueue's WorkloadPriorityClass label, the PriorityClass and ResourceQuota of pods outside Kueue, and
   * the namespace labels that say which priorities the namespace's tenant may use.
   */
  readonly priorities: Omit<PriorityRuleProps, 'queueLabel'>;
  /**
   * Controllers recognised by `request.userInfo.username`, and what each may do that a tenant may not.
   * @default TRUSTED_REQUESTERS
   */
  readonly requesters?: readonly TrustedRequester[];
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
/** The "safe" sysctls the baseline profile allows (Kubernetes 1.29 and later). */
const BASELINE_SYSCTLS = [
  'kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
];
/** SELinux types the baseline profile allows (user and role must stay unset). */
const BASELINE_SELINUX_TYPES = ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'];
const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/** A job kind Kueue admits as a whole: it must name a queue, and only Kueue may start it. */
interface QueuedJobKind {
  readonly apiGroup: string;
  /** The version its controller serves (the one the API server type-checks the kind's policy against). */
  readonly version: string;
  readonly resource: string;
  /** Where it keeps its suspend flag: batch/v1 `spec.suspend`, the Kubeflow kinds `spec.runPolicy.suspend`. */
  readonly suspend: 'spec' | 'runPolicy';
  readonly templates: JobTemplates;
}

/** The Training Operator (v1) serves all its kinds at one version, PyTorchJob's. */
const TRAINING_OPERATOR_VERSION = KUBEFLOW_JOB_GVK.pyTorchJob.apiVersion.split('/')[1];
const trainingOperatorKind = (resource: string, replicaSpecs: string): QueuedJobKind => ({
  apiGroup: 'kubeflow.org', version: TRAINING_OPERATOR_VERSION, resource, suspend: 'runPolicy', templates: { replicaSpecs },
});

/**
 * The job kinds Kueue admits as a whole. Each gets a policy of its own: the API server type-checks every expression of
 * a policy against each kind the policy matches, so an expression may read only the fields of its own kind (a Job has
 * no runPolicy, an MPIJob no pytorchReplicaSpecs).
 */
export const QUEUED_JOB_KINDS: readonly QueuedJobKind[] = [
  { apiGroup: 'batch', version: 'v1', resource: 'jobs', suspend: 'spec', templates: { template: 'template' } },
  { apiGroup: 'kubeflow.org', version: KUBEFLOW_JOB_GVK.mpiJob.apiVersion.split('/')[1], resource: 'mpijobs', suspend: 'runPolicy', templates: { replicaSpecs: 'mpiReplicaSpecs' } },
  trainingOperatorKind('pytorchjobs', 'pytorchReplicaSpecs'),
  trainingOperatorKind('tfjobs', 'tfReplicaSpecs'),
  trainingOperatorKind('xgboostjobs', 'xgbReplicaSpecs'),
  trainingOperatorKind('paddlejobs', 'paddleReplicaSpecs'),
  trainingOperatorKind('jaxjobs', 'jaxReplicaSpecs'),
];

const API_VERSION = 'admissionregistration.k8s.io/v1';
/** Placeholder for "the security context" in the predicates below (CEL has no lambdas to bind it). */
const SC = '$sc';
/** `pred` over the pod's security context (`$sc`), when it has one. */
function podContext(pred: string): string {
  return `(!has(object.spec.securityContext) || (${pred.split(SC).join('object.spec.securityContext')}))`;
}
/** `pred` over each container's security context (`$sc`), when it has one. */
function containerContexts(pred: string): string {
  return everyContainer(`!has(c.securityContext) || (${pred.split(SC).join('c.securityContext')})`);
}

/**
 * Admission guardrails for tenant namespaces (ValidatingAdmissionPolicy, GA since Kubernetes 1.30).
 *
 * Pod security: the Pod Security "baseline" profile, except that IPC_LOCK may be added (RDMA),
 * for every pod whoever creates it (a controller creates what the tenant's Job template says).
 *
 * Queueing: trust goes by who sends the request (`request.userInfo.username`), never by what the
 * object claims, since a tenant may write any ownerReferences. A pod requesting GPUs or the RDMA
 * device is admitted when Kueue queues it (the queue label, and Kueue's admission gate, which
 * proves the pod integration took it), or when a controller creates it for a workload Kueue admits
 * as a whole (a Job, MPIJob or PyTorchJob). Jobs must name a queue and be suspended by Kueue; only
 * Kueue starts them or lifts its gates.
 *
 * In their lane (lane-rules.ts): no toleration of a reserved taint, no nodeName, no node selection
 * onto the service node; a queued pod names only its tenant's priorities, a pod outside Kueue the
 * unqueued class (counted by the namespace's ResourceQuota); no device variable naming devices (env,
 * and envFrom without a safe prefix), the NVIDIA runtime classes only for pods whose every container
 * requests GPUs. What admission cannot see (an image's own ENV) only the node's toolkit setting
 * accept-nvidia-visible-devices-envvar-when-unprivileged = false closes.
 *
 * Services: ClusterIP only and no externalIPs (a Service with externalIPs intercepts traffic to
 * any address, CVE-2020-8554; node ports are cluster-wide and the Dashboard's is taken).
 */
export class TenantGuardrails extends Construct {
  readonly podPolicyName: string;
  /** One per job kind Kueue admits as a whole (QUEUED_JOB_KINDS): `<prefix>-queue-required-<resource>`. */
  readonly queuePolicyNames: readonly string[];
  readonly servicePolicyName: string;

  constructor(scope: Construct, id: string, props: TenantGuardrailsProps) {
    super(scope, id);
    const prefix = props.namePrefix ?? 'tenant';
    const allowed = props.allowedCapabilities ?? [...BASELINE_CAPABILITIES, 'IPC_LOCK'];
    if (allowed.includes('SYS_ADMIN')) throw new Error('allowedCapabilities: SYS_ADMIN lets a tenant pod escape to the node');
    const requesters = props.requesters ?? TRUSTED_REQUESTERS;
    const trusted = (t: Parameters<typeof usersTrustedWith>[1]) => {
      const users = usersTrustedWith(requesters, t);
      if (users.length === 0) throw new Error(`requesters: none is trusted with "${t}"`);
      return `request.userInfo.username in ${list(users)}`;
    };
    this.podPolicyName = `${prefix}-pod-guardrails`;
    this.queuePolicyNames = QUEUED_JOB_KINDS.map((k) => `${prefix}-queue-required-${k.resource}`);
    this.servicePolicyName = `${prefix}-service-guardrails`;
    const tenantNamespaces = { matchExpressions: [{ key: props.tenantLabel, operator: 'Exists' }] };
    const gpu = JSON.stringify(props.gpuResource);
    const rdmaPrefix = JSON.stringify(props.rdmaResourcePrefix ?? 'rdma/');
    const runtimeClasses = props.nvidiaRuntimeClasses ?? Object.values(NVIDIA_RUNTIME_CLASSES);
    const queueLabel = JSON.stringify(props.queueLabel);
    const priorities: PriorityRuleProps = { ...props.priorities, queueLabel: props.queueLabel };
    // A container's own request for GPUs: a non-zero nvidia.com/gpu limit or request (quantities are strings in admission).
    const requestsGpus = (c: string) => `(has(${c}.resources) && ((has(${c}.resources.limits) && ${gpu} in ${c}.resources.limits && ${c}.resources.limits[${gpu}] != '0') `
      + `|| (has(${c}.resources.requests) && ${gpu} in ${c}.resources.requests && ${c}.resources.requests[${gpu}] != '0')))`;
    const [admissionGate] = props.kueueGates;
    const queuedObject = `has(object.metadata.labels) && ${queueLabel} in object.metadata.labels && object.metadata.labels[${queueLabel}] != ''`;
    const onCreate = (expression: string) => `request.operation != 'CREATE' || ${expression}`;
    const onUpdate = (expression: string) => `request.operation != 'UPDATE' || ${expression}`;

    const podChecks: Validation[] = [
      { expression: '!has(object.spec.hostNetwork) || !object.spec.hostNetwork', message: 'tenant pods may not use the host network' },
      { expression: '!has(object.spec.hostPID) || !object.spec.hostPID', message: 'tenant pods may not use the host PID namespace' },
      { expression: '!has(object.spec.hostIPC) || !object.spec.hostIPC', message: 'tenant pods may not use the host IPC namespace' },
      { expression: '!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))', message: 'tenant pods may not mount hostPath volumes' },
      {
        expression: containerContexts('!has($sc.privileged) || !$sc.privileged'),
        message: 'tenant containers may not be privileged (add IPC_LOCK for RDMA instead)',
      },
      {
        expression: containerContexts(`!has($sc.capabilities) || !has($sc.capabilities.add) || $sc.capabilities.add.all(cap, cap in ${list(allowed)})`),
        message: `tenant containers may add only these capabilities: ${allowed.join(', ')}`,
      },
      {
        expression: everyContainer('!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0)'),
        message: 'tenant containers may not use host ports',
      },
      {
        expression: `${podContext("!has($sc.seccompProfile) || $sc.seccompProfile.type != 'Unconfined'")} && `
          + containerContexts("!has($sc.seccompProfile) || $sc.seccompProfile.type != 'Unconfined'"),
        message: 'tenant pods may not run without seccomp (seccompProfile type Unconfined)',
      },
      {
        expression: `${podContext("!has($sc.appArmorProfile) || $sc.appArmorProfile.type in ['RuntimeDefault', 'Localhost']")} && `
          + containerContexts("!has($sc.appArmorProfile) || $sc.appArmorProfile.type in ['RuntimeDefault', 'Localhost']")
          + ` && (!has(object.metadata.annotations) || object.metadata.annotations.all(k, !k.startsWith('${APPARMOR_ANNOTATION_PREFIX}') `
          + "|| object.metadata.annotations[k] == 'runtime/default' || object.metadata.annotations[k].startsWith('localhost/')))",
        message: 'tenant pods may not run without AppArmor (profile Unconfined or annotation unconfined)',
      },
      {
        expression: containerContexts("!has($sc.procMount) || $sc.procMount == 'Default'"),
        message: 'tenant containers may not unmask /proc (procMount other than Default)',
      },
      {
        expression: podContext(`!has($sc.sysctls) || $sc.sysctls.all(x, x.name in ${list(BASELINE_SYSCTLS)})`),
        message: `tenant pods may set only the safe sysctls: ${BASELINE_SYSCTLS.join(', ')}`,
      },
      {
        expression: [podContext, containerContexts].map((f) => f(`!has($sc.seLinuxOptions) || ((!has($sc.seLinuxOptions.type) || $sc.seLinuxOptions.type in ${list(BASELINE_SELINUX_TYPES)}) `
          + "&& (!has($sc.seLinuxOptions.user) || $sc.seLinuxOptions.user == '') && (!has($sc.seLinuxOptions.role) || $sc.seLinuxOptions.role == ''))")).join(' && '),
        message: 'tenant pods may not set an SELinux user or role, or a type other than the container types',
      },
      {
        expression: [podContext, containerContexts].map((f) => f('!has($sc.windowsOptions) || !has($sc.windowsOptions.hostProcess) || !$sc.windowsOptions.hostProcess')).join(' && '),
        message: 'tenant pods may not run as Windows host processes',
      },
      {
        expression: onCreate('!variables.accelerated || variables.podOfQueuedWorkload || variables.queued'),
        message: `a pod requesting ${props.gpuResource} or ${props.rdmaResourcePrefix ?? 'rdma/'}* must name a LocalQueue with the ${props.queueLabel} label `
          + '(Kueue then admits it within the quota), or belong to a Job, MPIJob or PyTorchJob that does',
      },
      {
        expression: onCreate('!variables.accelerated || variables.podOfQueuedWorkload || !variables.queued || variables.gated'),
        message: `Kueue did not gate this queued GPU or RDMA pod (no ${admissionGate} scheduling gate): its pod integration is off `
          + 'or does not manage this namespace, so the pod would run outside the quota',
      },
      ...deviceRules(props.gpuResource, requestsGpus),
      runtimeClassRule(runtimeClasses, props.gpuResource, requestsGpus),
      ...placementRules(props.reservedTaints, props.serviceNodeLabels),
      ...podPriorityRules(priorities),
      {
        expression: onUpdate(`variables.admitter || !has(oldObject.spec.schedulingGates) || oldObject.spec.schedulingGates.all(g, !(g.name in ${list(props.kueueGates)}) `
          + '|| (has(object.spec.schedulingGates) && object.spec.schedulingGates.exists(n, n.name == g.name)))'),
        message: 'only Kueue lifts its scheduling gates (the pod starts when Kueue admits it)',
      },
    ];
    this.policy(this.podPolicyName, {
      matchConstraints: {
        resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods', 'pods/ephemeralcontainers'] }],
      },
      variables: [
        { name: 'containers', expression: 'object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])' },
        { name: 'ephemeralContainers', expression: 'has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : []' },
        {
          name: 'gpu',
          expression: `variables.containers.exists(c, has(c.resources) && ((has(c.resources.limits) && ${gpu} in c.resources.limits) `
            + `|| (has(c.resources.requests) && ${gpu} in c.resources.requests)))`,
        },
        {
          name: 'rdma',
          expression: `variables.containers.exists(c, has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, r.startsWith(${rdmaPrefix}))) `
            + `|| (has(c.resources.requests) && c.resources.requests.exists(r, r.startsWith(${rdmaPrefix})))))`,
        },
        { name: 'accelerated', expression: 'variables.gpu || variables.rdma' },
        { name: 'queued', expression: queuedObject },
        { name: 'gated', expression: `has(object.spec.schedulingGates) && object.spec.schedulingGates.exists(g, g.name == ${JSON.stringify(admissionGate)})` },
        { name: 'podOfQueuedWorkload', expression: trusted('pods-of-queued-workloads') },
        { name: 'admitter', expression: trusted('admits-workloads') },
        // Part of a workload Kueue admits: created for a queued job by its controller, or queued and gated by Kueue's pod webhook.
        { name: 'admitted', expression: 'variables.podOfQueuedWorkload || (variables.queued && variables.gated)' },
        { name: 'priorityClass', expression: "has(object.spec.priorityClassName) ? object.spec.priorityClassName : ''" },
      ],
      validations: podChecks,
    }, tenantNamespaces);

    QUEUED_JOB_KINDS.forEach((kind, i) => {
      const suspended = (o: string) => (kind.suspend === 'spec'
        ? `(has(${o}.spec.suspend) && ${o}.spec.suspend == true)`
        : `(has(${o}.spec.runPolicy) && has(${o}.spec.runPolicy.suspend) && ${o}.spec.runPolicy.suspend == true)`);
      const rule = (apiVersions: string[]) => ({ apiGroups: [kind.apiGroup], apiVersions, resources: [kind.resource], operations: ['CREATE', 'UPDATE'] });
      this.policy(this.queuePolicyNames[i], {
        // the served version, which the API server type-checks (it skips a rule with a wildcard version), and any
        // other version the cluster may serve the same resource at
        matchConstraints: { resourceRules: kind.apiGroup === 'batch' ? [rule([kind.version])] : [rule([kind.version]), rule(['*'])] },
        variables: [
          { name: 'queued', expression: queuedObject },
          { name: 'suspended', expression: suspended('object') },
          { name: 'partOfQueuedWorkload', expression: trusted('jobs-of-queued-workloads') },
          { name: 'admitter', expression: trusted('admits-workloads') },
        ],
        validations: [
          {
            expression: onCreate('variables.partOfQueuedWorkload || variables.queued'),
            message: `tenant jobs must name a LocalQueue with the ${props.queueLabel} label (kubectl get localqueues)`,
          },
          {
            expression: onCreate('variables.partOfQueuedWorkload || !variables.queued || variables.suspended'),
            message: 'Kueue did not suspend this queued job: its integration for this kind is off or does not manage this namespace, so the job would run outside the quota',
          },
          {
            expression: onUpdate(`!(has(oldObject.metadata.labels) && ${queueLabel} in oldObject.metadata.labels) || variables.queued`),
            message: `the ${props.queueLabel} label of a job may be changed but not removed`,
          },
          {
            expression: onUpdate(`!${suspended('oldObject')} || variables.suspended || variables.admitter || variables.partOfQueuedWorkload`),
            message: 'only Kueue starts a suspended job (it does when the queue admits it)',
          },
          ...jobPriorityRules(priorities, kind.templates),
        ],
      }, tenantNamespaces);
    });

    this.policy(this.servicePolicyName, {
      matchConstraints: {
        resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['services'] }],
      },
      validations: [
        {
          expression: "!has(object.spec.type) || object.spec.type == 'ClusterIP'",
          message: 'tenant Services must be ClusterIP (use kubectl port-forward to reach them): node ports and load balancers are shared by the whole cluster',
        },
        {
          expression: '!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0',
          message: 'tenant Services may not set externalIPs (they would capture traffic to those addresses)',
        },
      ],
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
