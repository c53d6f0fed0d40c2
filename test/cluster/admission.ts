import { ClusterModel } from '../../src/model/model';
import { LABELS, NVIDIA_RUNTIME_CLASSES, RESOURCES, TENANCY } from '../../src/model/names';
import { ApiError, describe, KubeClient, KubeObject } from '../../src/twin/kube-client';
import { kueueGated } from '../tenants/admission-eval';

/**
 * Admission by the real API server of the hermetic control plane: what its ValidatingAdmissionPolicies (the rendered
 * tenant guardrails) decide about an object a given identity writes.
 *
 * The API server refuses a request with the first validation that fails, and names only that one. To see every
 * validation an object fails (what a guardrail test asserts: this one and no other), each binding that denies gets a
 * twin that only warns (`validationActions: [Warn]`, same policy, same namespaces): the server then sends one Warning
 * header per failing validation of the policy, in the policy's order. The twin changes nothing the server decides.
 */

/** The suffix of the warning twin of a ValidatingAdmissionPolicyBinding. */
export const WARN_TWIN = '-every-failure';

/** The warning twins of the bindings that deny (`<name>-every-failure`, validationActions Warn). */
export function warnTwins(objects: readonly KubeObject[]): KubeObject[] {
  return objects.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && ((o.spec as { validationActions?: string[] }).validationActions ?? []).includes('Deny'))
    .map((b) => ({
      apiVersion: b.apiVersion,
      kind: b.kind,
      metadata: { name: `${b.metadata.name}${WARN_TWIN}` },
      spec: { ...(b.spec as object), validationActions: ['Warn'] },
    }));
}

/**
 * The RuntimeClasses the GPU Operator creates when it runs (v26.7.0, handler = name): the API server refuses a pod
 * that names a RuntimeClass it does not have (the RuntimeClass admission plugin), before any policy sees it.
 */
export function nvidiaRuntimeClasses(): KubeObject[] {
  return Object.values(NVIDIA_RUNTIME_CLASSES).map((name) => ({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name }, handler: name }));
}

/** What the API server made of a write. */
export interface Verdict {
  readonly admitted: boolean;
  readonly status: number;
  /** The refusal (empty when admitted). */
  readonly message: string;
  /** The messages of every validation of a policy the object fails (the warning twins), in order. */
  readonly failures: readonly string[];
  /** The policies those validations belong to, without repeats, in the order of the warnings. */
  readonly failedPolicies: readonly string[];
  /** The object the server kept, or would keep on a dry run. */
  readonly object?: KubeObject;
}

const FAILED = new RegExp(`^Validation failed for ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)${WARN_TWIN}': ([\\s\\S]*)$`);

export interface WriteOptions {
  /** @default true: every admission step, nothing kept */
  readonly dryRun?: boolean;
  /** `ephemeralcontainers`, `status` */
  readonly subresource?: string;
}

/**
 * Creates (POST) or replaces (PUT) `object` as `client`'s identity, a dry run by default: the verdict of the API
 * server, with every validation of the guardrail policies the object fails.
 */
export async function write(client: KubeClient, method: 'POST' | 'PUT', object: KubeObject, opts: WriteOptions = {}): Promise<Verdict> {
  const base = await client.pathOf(object, method === 'POST');
  const path = opts.subresource ? `${base}/${opts.subresource}` : base;
  const r = await client.request(method, path, { body: object, query: { fieldValidation: 'Strict', ...((opts.dryRun ?? true) ? { dryRun: 'All' } : {}) } });
  const failed = r.warnings.map((w) => FAILED.exec(w)).filter((m): m is RegExpExecArray => m !== null);
  const failures = failed.map((m) => m[3]);
  const failedPolicies = [...new Set(failed.map((m) => m[1]))];
  const admitted = r.status >= 200 && r.status < 300;
  return { admitted, status: r.status, message: admitted ? '' : String(r.body?.message ?? r.body), failures, failedPolicies, object: admitted ? r.body as KubeObject : undefined };
}

/**
 * The validations of the guardrail policies `object` fails when `client`'s identity writes it (empty: admitted).
 * Fails when the server's decision is not the policies' (a refusal for another reason: RBAC, a schema, an admission
 * plugin), or when the denying bindings and their warning twins disagree.
 */
export async function denials(client: KubeClient, method: 'POST' | 'PUT', object: KubeObject, opts: WriteOptions = {}): Promise<string[]> {
  const v = await write(client, method, object, opts);
  if (v.admitted && v.failures.length > 0) throw new Error(`${describe(object)}: admitted, yet its warnings say it fails ${JSON.stringify(v.failures)}`);
  if (!v.admitted && !/ValidatingAdmissionPolicy '[^']+' with binding '[^']+' denied request/.test(v.message)) {
    throw new ApiError(v.status, '', `${describe(object)}: refused, but not by a ValidatingAdmissionPolicy: ${v.message}`, undefined);
  }
  if (!v.admitted && v.failures.length === 0) throw new Error(`${describe(object)}: refused by a policy (${v.message}) without a warning of its twin`);
  return [...v.failures];
}

type Obj = Record<string, any>;

/** One way out of a tenant's lane, and the guardrail that must refuse it. */
export interface Escape {
  readonly what: string;
  readonly pod: KubeObject;
  readonly refusedBy: RegExp;
}

/**
 * The escapes of issue 39, as pods a tenant writes into its namespace, each the allowed pod (a CPU pod outside Kueue at
 * the unqueued priority) with one change: a toleration of the service node's taints, spec.nodeName, a priority that is
 * not the tenant's (outside Kueue, and on a queued pod), a device variable, an NVIDIA runtime class, a hostPath volume,
 * a privileged container, a GPU pod outside Kueue.
 */
export function tenantEscapes(model: ClusterModel, namespace: string, serviceNodeName: string): { allowed: KubeObject; escapes: Escape[] } {
  const allowed: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'lane', namespace },
    spec: { priorityClassName: TENANCY.unqueuedPriorityClass, containers: [{ name: 'c', image: 'busybox:1.37.0' }] },
  };
  const changed = (what: string, refusedBy: RegExp, edit: (spec: Obj, metadata: Obj) => void, gate = false): Escape => {
    const pod = structuredClone(allowed) as Obj;
    edit(pod.spec, pod.metadata);
    return { what, pod: (gate ? kueueGated(pod) : pod) as KubeObject, refusedBy };
  };
  const gpus = (c: Obj) => { c.resources = { limits: { [RESOURCES.gpu]: String(model.description.nodes.gpuWorkers.gpusPerNode) } }; };
  const highest = [...model.description.queueing.priorities].sort((a, b) => b.value - a.value)[0]?.name;
  const tenant = model.tenants.find((t) => t.namespace === namespace);
  return {
    allowed,
    escapes: [
      changed('a toleration of the service node\'s taints', /^tenant pods may not tolerate the taints the platform keeps/, (s) => { s.tolerations = model.serviceNode.tolerations.map((t) => ({ ...t })); }),
      changed('spec.nodeName (the service node)', /^tenant pods may not set spec.nodeName/, (s) => { s.nodeName = serviceNodeName; }),
      ...(highest ? [changed(`a queued priority (${highest}) outside Kueue`, /^a pod outside Kueue .* must set priorityClassName/, (s) => { s.priorityClassName = highest; })] : []),
      changed('a system priority on a queued GPU pod', /^a queued pod may name only a priority class/, (s, m) => {
        s.priorityClassName = 'system-cluster-critical';
        gpus(s.containers[0]);
        m.labels = { [LABELS.queueName]: tenant?.localQueue ?? 'default' };
      }, true),
      changed('NVIDIA_VISIBLE_DEVICES=all in a CPU container', /^no container may set NVIDIA_VISIBLE_DEVICES/, (s) => { s.containers[0].env = [{ name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' }]; }),
      changed(`the ${NVIDIA_RUNTIME_CLASSES.operator} runtime class without GPUs`, /^only pods whose every container .* may use the NVIDIA runtime classes/, (s) => { s.runtimeClassName = NVIDIA_RUNTIME_CLASSES.operator; }),
      changed('a hostPath volume', /^tenant pods may not mount hostPath volumes/, (s) => { s.volumes = [{ name: 'root', hostPath: { path: '/' } }]; }),
      changed('a privileged container', /^tenant containers may not be privileged/, (s) => { s.containers[0].securityContext = { privileged: true }; }),
      changed('a GPU pod outside Kueue', /^a pod requesting nvidia.com\/gpu or rdma\/\* must name a LocalQueue/, (s) => { gpus(s.containers[0]); }),
    ],
  };
}
