/**
 * The CEL of the guardrails that keep a tenant's pods in their lane outside Kueue: no placement onto the nodes the
 * platform keeps (tolerations, nodeName, node selection), no priority but the tenant's own and none at all outside
 * Kueue, no GPUs but the device plugin's (device variables, runtime classes). The pod policy of TenantGuardrails
 * puts them together with Pod Security and queueing; `test/tenants/lane.test.ts` evaluates each on probe pods.
 *
 * Read at the pinned tags:
 * - Kueue v0.19.2 (8eab68778fc1b52affe165fdf5af29d1e9b4f3cb): pkg/controller/jobs/pod/pod_webhook.go (Default: a pod
 *   with the queue label, or defaulted to LocalQueue "default", gets the label kueue.x-k8s.io/managed=true, the
 *   finalizer of that name and the scheduling gate kueue.x-k8s.io/admission, plus kueue.x-k8s.io/topology with TAS;
 *   pods whose ancestor job Kueue manages get none of it), pkg/podset/podset.go (FromAssignment, Merge: on admission
 *   the flavor's nodeLabels and tolerations, and TAS's gate and annotation, are added to the pod templates; never a
 *   priority class). The managed label is anyone's to write, so "admitted" is told by requester and gate only.
 * - Kubernetes v1.31.0, kubernetes/api v0.31.0 (2df39ffd2977494f6e7b8dc38206eec1a1129e38): core/v1/types.go (EnvFrom:
 *   "Values defined by an Env with a duplicate key will take precedence"; Toleration semantics; schedulingGates set
 *   at creation and only removed), admissionregistration/v1/types.go (`namespaceObject` in a policy's CEL).
 * - NVIDIA container toolkit v1.20.0 (5505e2f94d9aaa08561490db974ba3cd676af209), the GPU Operator v26.7.0's: see
 *   DEVICE_VARIABLES.
 */

/** One validation of a ValidatingAdmissionPolicy. */
export interface Validation {
  readonly expression: string;
  readonly message: string;
}

/** A node taint as the description writes it. */
export interface ReservedTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
}

/** A CEL string literal. */
export const lit = (s: string) => JSON.stringify(s);
/** A CEL list of string literals. */
export const list = (items: readonly string[]) => `[${items.map(lit).join(', ')}]`;

/**
 * `pred` over every container. Containers and init containers are one type; ephemeral containers
 * another, so they get their own list (CEL lists are homogeneous once type-checked).
 */
export function everyContainer(pred: string): string {
  return `variables.containers.all(c, ${pred}) && variables.ephemeralContainers.all(c, ${pred})`;
}

/** `a:NoSchedule`, `a=b:NoExecute`. */
export const taintText = (t: ReservedTaint) => `${t.key}${t.value === undefined ? '' : `=${t.value}`}:${t.effect}`;

/**
 * CEL: toleration `t` tolerates `taint`, as the scheduler decides (model.ts `tolerates`, which a test compares it
 * with): an empty effect matches every effect; an empty key with operator Exists matches every taint; otherwise the
 * keys match and the operator is Exists or (Equal, the default) the values match.
 */
export function toleratesCel(t: string, taint: ReservedTaint): string {
  const effect = `(!has(${t}.effect) || ${t}.effect == '' || ${t}.effect == ${lit(taint.effect)})`;
  const exists = `(has(${t}.operator) && ${t}.operator == 'Exists')`;
  const anyKey = `((!has(${t}.key) || ${t}.key == '') && ${exists})`;
  const sameValue = `(has(${t}.value) ? ${t}.value : '') == ${lit(taint.value ?? '')}`;
  const sameKey = `(has(${t}.key) && ${t}.key == ${lit(taint.key)} && (${exists} || ${sameValue}))`;
  return `(${effect} && (${anyKey} || ${sameKey}))`;
}

/**
 * Placement: no toleration of a reserved taint (the service node's and nodes.reservedTaints), no `nodeName` (it skips
 * the scheduler, the taints and Kueue), no node selection onto the service node (nodeSelector, or required node
 * affinity that selects its labels). On an update only what the update adds counts (tolerations may be added to a
 * running pod; the API server's DefaultTolerationSeconds tolerations of not-ready and unreachable are no reserved
 * taint), so a pod created before the policy is not stranded.
 */
export function placementRules(reserved: readonly ReservedTaint[], serviceLabels: Readonly<Record<string, string>>): Validation[] {
  const out: Validation[] = [];
  if (reserved.length > 0) {
    const tolerated = reserved.map((taint) => toleratesCel('t', taint)).join(' || ');
    const added = "(request.operation != 'UPDATE' || !has(oldObject.spec.tolerations) || !(t in oldObject.spec.tolerations))";
    out.push({
      expression: `!has(object.spec.tolerations) || object.spec.tolerations.all(t, !(${tolerated}) || !${added})`,
      message: `tenant pods may not tolerate the taints the platform keeps (${reserved.map(taintText).join(', ')}): `
        + 'the service node runs the control plane, Kueue, monitoring and Argo CD (a toleration with an empty key and operator Exists tolerates them all)',
    });
  }
  out.push({
    expression: "request.operation != 'CREATE' || !has(object.spec.nodeName) || object.spec.nodeName == ''",
    message: 'tenant pods may not set spec.nodeName: it binds the pod to a node past the scheduler, the taints and Kueue (Kueue places a queued pod on its flavor\'s nodes)',
  });
  const labels = Object.entries(serviceLabels);
  if (labels.length > 0) {
    const selected = labels.map(([k, v]) => `(${lit(k)} in object.spec.nodeSelector && object.spec.nodeSelector[${lit(k)}] == ${lit(v)})`).join(' || ');
    const matched = labels.map(([k, v]) => `(e.key == ${lit(k)} && (e.operator == 'Exists' || (e.operator == 'In' && has(e.values) && ${lit(v)} in e.values)))`).join(' || ');
    const required = 'object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution';
    const shown = labels.map(([k, v]) => `${k}=${v}`).join(', ');
    out.push({
      expression: `(!has(object.spec.nodeSelector) || !(${selected})) && (!has(object.spec.affinity) || !has(object.spec.affinity.nodeAffinity) `
        + `|| !has(${required}) || !has(${required}.nodeSelectorTerms) `
        + `|| ${required}.nodeSelectorTerms.all(term, !has(term.matchExpressions) || !term.matchExpressions.exists(e, ${matched})))`,
      message: `tenant pods may not select the service node (${shown}) with a nodeSelector or a required node affinity; NotIn and DoesNotExist, which keep a pod off it, are fine`,
    });
  }
  return out;
}

export interface PriorityRuleProps {
  /** The queue label, and Kueue's WorkloadPriorityClass label. */
  readonly queueLabel: string;
  readonly priorityLabel: string;
  /** The PriorityClass of pods outside Kueue, and the ResourceQuota that counts them. */
  readonly unqueuedClass: string;
  readonly unqueuedQuota: string;
  /** Namespace label `<prefix><name>: <allowed>` for each priority the namespace's tenant may use. */
  readonly allowedPrefix: string;
  readonly allowed: string;
}

/** CEL: the namespace's tenant may use priority `name` (a CEL string); read from the namespace's labels. */
export function allowedPriority(p: PriorityRuleProps, name: string): string {
  const key = `${lit(p.allowedPrefix)} + ${name}`;
  return `(${name} != ${lit(p.unqueuedClass)} && has(namespaceObject.metadata.labels) && (${key}) in namespaceObject.metadata.labels `
    + `&& namespaceObject.metadata.labels[${key}] == ${lit(p.allowed)})`;
}

/** The priority words of a message: where the tenant's priorities come from. */
const allowedWhere = (p: PriorityRuleProps) => `its tenant may use (tenants[].priorities, the namespace's ${p.allowedPrefix}<name> labels)`;

/**
 * Priorities of pods. A pod Kueue admits (variables.admitted) may name a priority class of its tenant, or none; a pod
 * outside Kueue must name the unqueued class (lowest priority, never preempting, counted by the ResourceQuota; Kubernetes
 * resolves spec.priority from the class and refuses a pod that sets it itself). The class is immutable: checked at
 * creation. Kueue's WorkloadPriorityClass label must name one of the tenant's priorities whenever it is set.
 */
export function podPriorityRules(p: PriorityRuleProps): Validation[] {
  const wpc = lit(p.priorityLabel);
  return [
    {
      expression: `request.operation != 'CREATE' || !variables.admitted || variables.priorityClass == '' || ${allowedPriority(p, 'variables.priorityClass')}`,
      message: `a queued pod may name only a priority class ${allowedWhere(p)}; ${p.unqueuedClass} is for pods outside Kueue`,
    },
    {
      // A GPU or RDMA pod outside Kueue is refused by the queueing rules already.
      expression: `request.operation != 'CREATE' || variables.admitted || variables.accelerated || variables.priorityClass == ${lit(p.unqueuedClass)}`,
      message: `a pod outside Kueue (no ${p.queueLabel} label, or one Kueue did not gate) must set priorityClassName: ${p.unqueuedClass}: it then runs at the lowest `
        + `priority, never preempts, and counts against the namespace's ResourceQuota ${p.unqueuedQuota}; or name a LocalQueue to run it through Kueue`,
    },
    {
      expression: `!has(object.metadata.labels) || !(${wpc} in object.metadata.labels) || ${allowedPriority(p, `object.metadata.labels[${wpc}]`)}`,
      message: `the ${p.priorityLabel} label must name a priority ${allowedWhere(p)}`,
    },
  ];
}

/**
 * Where a queued job kind keeps its pod templates: batch/v1 Jobs one `spec.template`, a Kubeflow kind a map of replica
 * specs (`spec.mpiReplicaSpecs`, `spec.pytorchReplicaSpecs`, ...), each with a `template`.
 */
export type JobTemplates = { readonly template: string } | { readonly replicaSpecs: string };

/**
 * Priorities of queued jobs, refused at submission rather than when the controller creates the pods: a template's
 * priorityClassName (which Kueue also takes as the workload's priority without a priority label) and the
 * WorkloadPriorityClass label must be the tenant's. `templates` names the fields of the one kind the policy matches
 * (the API server type-checks every expression against each kind its policy matches).
 */
export function jobPriorityRules(p: PriorityRuleProps, templates: JobTemplates): Validation[] {
  const wpc = lit(p.priorityLabel);
  const template = (t: string) => `(!has(${t}.spec) || !has(${t}.spec.priorityClassName) || ${t}.spec.priorityClassName == '' `
    + `|| ${allowedPriority(p, `${t}.spec.priorityClassName`)})`;
  const f = 'template' in templates ? templates.template : templates.replicaSpecs;
  const expression = 'template' in templates
    ? `!has(object.spec.${f}) || ${template(`object.spec.${f}`)}`
    // A map iterates its keys; the one-element list binds the value to a name has() can select on.
    : `!has(object.spec.${f}) || object.spec.${f}.all(r, [object.spec.${f}[r]].all(x, !has(x.template) || ${template('x.template')}))`;
  return [
    {
      expression,
      message: `the pods of a job may name only a priority class ${allowedWhere(p)}; ${p.unqueuedClass} is for pods outside Kueue`,
    },
    {
      expression: `!has(object.metadata.labels) || !(${wpc} in object.metadata.labels) || ${allowedPriority(p, `object.metadata.labels[${wpc}]`)}`,
      message: `the ${p.priorityLabel} label must name a priority ${allowedWhere(p)}`,
    },
  ];
}

/** An environment variable through which the NVIDIA container runtime hands a container devices, and its values that hand none. */
interface DeviceVariable {
  readonly name: string;
  readonly noDevices: readonly string[];
}

/**
 * NVIDIA container toolkit v1.20.0 (internal/config/image/cuda_image.go, envvars.go, devices.go): a container gets
 * the GPUs NVIDIA_VISIBLE_DEVICES names ("all", indices, UUIDs, CDI names) and the IMEX channels NVIDIA_IMEX_CHANNELS
 * names; unset, empty and "void" mean none, "none" no GPU but the driver's libraries. Honoured for unprivileged
 * containers unless the node sets accept-nvidia-visible-devices-envvar-when-unprivileged = false.
 * NVIDIA_MIG_CONFIG_DEVICES and NVIDIA_MIG_MONITOR_DEVICES need a privileged container (the hook refuses them
 * otherwise), which the Pod Security rules already refuse.
 */
export const DEVICE_VARIABLES: readonly DeviceVariable[] = [
  { name: 'NVIDIA_VISIBLE_DEVICES', noDevices: ['', 'void', 'none'] },
  { name: 'NVIDIA_IMEX_CHANNELS', noDevices: ['', 'void', 'none'] },
];

/**
 * The toolkit's "legacy image": CUDA_VERSION set and NVIDIA_REQUIRE_CUDA not (IsLegacy). An unset
 * NVIDIA_VISIBLE_DEVICES then means all GPUs (devicesFromEnvvars), so a container that makes itself legacy through
 * its env must pin NVIDIA_VISIBLE_DEVICES or request GPUs (whose device plugin allocation the runtime uses instead).
 */
export const LEGACY_SWITCHES = { cudaVersion: 'CUDA_VERSION', requireCuda: 'NVIDIA_REQUIRE_CUDA' } as const;

/** Every variable name a ConfigMap or Secret key could set through envFrom to reach a device. */
const REACHING_DEVICES = [...DEVICE_VARIABLES.map((v) => v.name), LEGACY_SWITCHES.cudaVersion, LEGACY_SWITCHES.requireCuda];

/** CEL: env entry `e` sets a device variable to a value that hands no device. */
function noDeviceValue(e: string, v: DeviceVariable): string {
  return `(${e}.name == ${lit(v.name)} && !has(${e}.valueFrom) && (!has(${e}.value) || ${e}.value in ${list(v.noDevices)}))`;
}

/** CEL: container `c` pins every device variable to no device in its env (env wins over envFrom). */
function pinsDevices(c: string): string {
  return DEVICE_VARIABLES.map((v) => `(has(${c}.env) && ${c}.env.exists(e, ${noDeviceValue('e', v)}))`).join(' && ');
}

/**
 * Devices past the device plugin: in every container (init and ephemeral ones too, and a container that requests
 * GPUs, whose own env would override the plugin's allocation), a device variable only with a value that hands no
 * device, never from a ConfigMap or Secret (valueFrom: unknown at admission); the legacy-image switches only with
 * NVIDIA_VISIBLE_DEVICES pinned or GPUs requested. envFrom: admission sees a ConfigMap's or Secret's name, never its
 * keys, so a source must carry a prefix no device variable starts with, unless the container pins the device
 * variables in env.
 */
export function deviceRules(gpuResource: string, requestsGpus: (c: string) => string): Validation[] {
  const names = DEVICE_VARIABLES.map((v) => v.name);
  const shownNames = names.join(', ');
  const deviceEnv = `!has(c.env) || c.env.all(e, !(e.name in ${list(names)}) || ${DEVICE_VARIABLES.map((v) => noDeviceValue('e', v)).join(' || ')})`;
  const { cudaVersion, requireCuda } = LEGACY_SWITCHES;
  const legacy = `(has(c.env) && c.env.exists(e, (e.name == ${lit(cudaVersion)} && (has(e.valueFrom) || (has(e.value) && e.value != ''))) `
    + `|| (e.name == ${lit(requireCuda)} && (has(e.valueFrom) || !has(e.value) || e.value == ''))))`;
  const visiblePinned = `(has(c.env) && c.env.exists(e, ${noDeviceValue('e', DEVICE_VARIABLES[0])}))`;
  const safePrefix = `(has(s.prefix) && s.prefix != '' && !${list(REACHING_DEVICES)}.exists(v, v.startsWith(s.prefix)))`;
  const envFrom = `!has(c.envFrom) || c.envFrom.all(s, ${safePrefix}) || (${pinsDevices('c')})`;
  return [
    {
      expression: everyContainer(deviceEnv),
      message: `no container may set ${shownNames} to anything but ${DEVICE_VARIABLES[0].noDevices.map((v) => `"${v}"`).join(', ')}, nor from a ConfigMap or Secret: `
        + `the NVIDIA runtime would hand it devices outside the device plugin and the quota (a container requesting ${gpuResource} gets its GPUs from the device plugin)`,
    },
    {
      expression: `variables.containers.all(c, !${legacy} || ${visiblePinned} || ${requestsGpus('c')}) && variables.ephemeralContainers.all(c, !${legacy} || ${visiblePinned})`,
      message: `a container that sets ${cudaVersion} (or empties ${requireCuda}) without requesting ${gpuResource} must also set ${names[0]}=void: `
        + 'the NVIDIA runtime takes such an image for a legacy CUDA image and hands it every GPU',
    },
    {
      expression: everyContainer(envFrom),
      message: `envFrom could set ${REACHING_DEVICES.join(', ')} from keys admission cannot see: give each envFrom source a prefix none of them starts with (e.g. APP_), `
        + `or set ${shownNames} to "void" in env (env wins over envFrom)`,
    },
  ];
}

/**
 * The NVIDIA runtime classes: under them a container without a GPU request gets the GPUs its image's
 * NVIDIA_VISIBLE_DEVICES names (CUDA base images: all), so only pods whose every container and init container
 * requests GPUs, and that have no ephemeral container (which requests nothing), may use them.
 */
export function runtimeClassRule(runtimeClasses: readonly string[], gpuResource: string, requestsGpus: (c: string) => string): Validation {
  return {
    expression: `!has(object.spec.runtimeClassName) || !(object.spec.runtimeClassName in ${list(runtimeClasses)}) `
      + `|| (variables.containers.all(c, ${requestsGpus('c')}) && size(variables.ephemeralContainers) == 0)`,
    message: `only pods whose every container and init container requests ${gpuResource}, and that have no ephemeral container, may use the NVIDIA runtime classes `
      + `(${runtimeClasses.join(', ')}): under them a container without a GPU request gets every GPU its image's NVIDIA_VISIBLE_DEVICES names (CUDA images: all)`,
  };
}
