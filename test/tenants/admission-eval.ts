import { evaluate } from '@marcbachmann/cel-js';
import { KUEUE_POD, LABELS, RESOURCES, TENANCY } from '../../src/model/names';
import { Manifest } from '../../src/render/manifest';
import { findObject } from '../helpers';

/**
 * The tenant admission policies are CEL: evaluate them with the CEL engine the project uses
 * (@marcbachmann/cel-js) against pods, jobs and services, with what the API server passes a
 * ValidatingAdmissionPolicy: the request (operation, requesting user), the old object on an update,
 * and the namespace the object is created in (`namespaceObject`: the rendered Namespace, with the
 * name label the API server sets).
 */

interface PolicySpec {
  variables?: { name: string; expression: string }[];
  validations: { expression: string; message: string }[];
}

export interface Request {
  operation?: 'CREATE' | 'UPDATE';
  /** `request.userInfo.username` (default: a member of the tenant's group). */
  user?: string;
  oldObject?: unknown;
}

/** A member of the tenant's group, as the identity provider names them. */
export const TENANT_USER = 'oidc:alice@example.com';

type Obj = Record<string, any>;

function namespaceObject(objects: readonly Manifest[], name: string): Obj {
  const ns = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === name);
  const labels = { ...(ns?.metadata.labels ?? {}), [LABELS.namespaceName]: name };
  return { apiVersion: 'v1', kind: 'Namespace', ...(ns ?? {}), metadata: { ...(ns?.metadata ?? { name }), labels } };
}

/** Messages of the validations `object` fails under the rendered policy `policy` among `objects` (empty: admitted). */
export function policyDenials(objects: readonly Manifest[], policy: string, object: Obj, req: Request = {}): string[] {
  const spec = findObject(objects, 'ValidatingAdmissionPolicy', policy).spec as PolicySpec;
  const operation = req.operation ?? 'CREATE';
  const request = { operation, namespace: object.metadata?.namespace, userInfo: { username: req.user ?? TENANT_USER, groups: ['system:authenticated'] } };
  const context: Obj = {
    object,
    oldObject: operation === 'UPDATE' ? req.oldObject : null,
    namespaceObject: namespaceObject(objects, object.metadata?.namespace),
    request,
    variables: {},
  };
  const variables: Obj = {};
  for (const v of spec.variables ?? []) variables[v.name] = evaluate(v.expression, { ...context, variables });
  return spec.validations.filter((v) => evaluate(v.expression, { ...context, variables }) !== true).map((v) => v.message);
}

/** The rendered policy that guards a queued job kind: one per kind (`tenant-queue-required-mpijobs`). */
export const queuePolicyOf = (job: Obj): string => `tenant-queue-required-${String(job.kind).toLowerCase()}s`;

/** A pod in the tenant namespace `research`. */
export function pod(spec: Obj, metadata: Obj = {}): Obj {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'research', ...metadata }, spec };
}
export const queued = (queue = 'default') => ({ [LABELS.queueName]: queue });
/** A pod spec run outside Kueue, as the guardrails want it: at the unqueued priority. */
export const outside = (spec: Obj): Obj => ({ priorityClassName: TENANCY.unqueuedPriorityClass, ...spec });
export const gpuContainer = (gpus = 8) => ({ name: 'c', image: 'i', resources: { limits: { [RESOURCES.gpu]: String(gpus) } } });

/**
 * What Kueue's pod webhook does to a pod carrying the queue label (v0.19.2, pkg/controller/jobs/pod/pod_webhook.go
 * Default): gate it until admitted (and label it kueue.x-k8s.io/managed, which anyone may write, so no rule trusts it).
 */
export function kueueGated<T extends Obj>(p: T): T {
  const out = structuredClone(p);
  if (out.metadata.labels?.[LABELS.queueName]) {
    out.metadata.labels['kueue.x-k8s.io/managed'] = 'true';
    out.spec.schedulingGates = [...(out.spec.schedulingGates ?? []), { name: KUEUE_POD.admissionGate }];
  }
  return out;
}
/** What Kueue's job webhooks do to a queued job: suspend it until admitted. */
export function kueueSuspended<T extends Obj>(job: T): T {
  const out = structuredClone(job);
  if (out.metadata.labels?.[LABELS.queueName]) {
    if (out.apiVersion === 'batch/v1') out.spec.suspend = true;
    else out.spec.runPolicy = { ...(out.spec.runPolicy ?? {}), suspend: true };
  }
  return out;
}
