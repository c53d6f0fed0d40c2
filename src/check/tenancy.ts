import { ClusterIndex } from './cluster-index';
import { Rule, Violation } from './rule';
import { TRUSTED_REQUESTERS } from '../components/tenants/trusted-requesters';
import { KUEUE_DEFAULT_LOCAL_QUEUE, KUEUE_POD, LABELS } from '../model/names';
import { apiGroup, Manifest } from '../render/manifest';
import { celErrorText, celProgram } from '../validate/cel';

type Json = Record<string, any>;

/** Who the check pretends a tenant is: a member of the tenant's group, trusted with nothing. */
const TENANT_USER = 'tenant-user';

interface ResourceRule { apiGroups?: string[]; resources?: string[]; operations?: string[] }
interface Policy {
  readonly name: string;
  readonly rules: readonly ResourceRule[];
  readonly variables: readonly { name: string; expression: string }[];
  readonly validations: readonly { expression: string; message: string }[];
}

function selects(selector: Json | undefined, labels: Json): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (selector.matchExpressions ?? []).every((e: Json) => {
    const has = k(labels, e.key);
    if (e.operator === 'In') return has && (e.values ?? []).includes(labels[e.key]);
    if (e.operator === 'NotIn') return !has || !(e.values ?? []).includes(labels[e.key]);
    return e.operator === 'Exists' ? has : !has;
  });
}
const k = (o: Json, key: string) => Object.prototype.hasOwnProperty.call(o, key);

const resourceOf = (kind: string) => `${kind.toLowerCase()}s`;

/**
 * Kueue's webhooks on creation: an object without a queue label gets `defaulted` (LocalQueue defaulting, when its
 * namespace has a LocalQueue "default"); a queued job is suspended, a queued pod gated.
 */
function kueueMutated(o: Json, defaulted: string | undefined): Json {
  // a copy of what changes only (the policies read the object, never write it)
  const out = { ...o };
  if (defaulted !== undefined && !out.metadata?.labels?.[LABELS.queueName]) {
    out.metadata = { ...(out.metadata ?? {}), labels: { ...(out.metadata?.labels ?? {}), [LABELS.queueName]: defaulted } };
  }
  if (!out.metadata?.labels?.[LABELS.queueName]) return out;
  if (out.kind === 'Pod') out.spec = { ...out.spec, schedulingGates: [...(out.spec.schedulingGates ?? []), { name: KUEUE_POD.admissionGate }] };
  else if (out.apiVersion === 'batch/v1') out.spec = { ...out.spec, suspend: true };
  else out.spec = { ...out.spec, runPolicy: { ...(out.spec.runPolicy ?? {}), suspend: true } };
  return out;
}

/** Messages of the validations `object` fails under `policy` when `username` creates it in the namespace `namespaceObject`. */
function refusals(policy: Policy, object: Json, username: string, namespaceObject: Json): string[] {
  const context: Json = { object, oldObject: null, namespaceObject, request: { operation: 'CREATE', userInfo: { username } }, variables: {} };
  const variables: Json = {};
  const out: string[] = [];
  try {
    for (const v of policy.variables) variables[v.name] = celProgram(v.expression)({ ...context, variables });
    for (const v of policy.validations) if (celProgram(v.expression)({ ...context, variables }) !== true) out.push(v.message);
  } catch (e) {
    out.push(`the policy's CEL fails to evaluate: ${celErrorText(e)}`);
  }
  return out;
}

function matches(policy: Policy, object: Json): boolean {
  const group = apiGroup(String(object.apiVersion ?? ''));
  const resource = resourceOf(String(object.kind ?? ''));
  return policy.rules.some((r) => (r.operations ?? []).some((o) => o === 'CREATE' || o === '*')
    && (r.apiGroups ?? []).some((g) => g === '*' || g === group)
    && (r.resources ?? []).some((x) => x === '*' || x === resource));
}

const namespacesOf = new WeakMap<ClusterIndex, (namespace: string) => Json>();

/** A namespace as the API server hands it to a policy (`namespaceObject`): the rendered one, with the name label the API server sets. Once per cluster index. */
function namespaceObjects(index: ClusterIndex): (namespace: string) => Json {
  const known = namespacesOf.get(index);
  if (known) return known;
  const rendered = new Map<string, Json>(index.ofKind('Namespace').map((n) => [n.metadata.name,
    { ...n, metadata: { ...n.metadata, labels: { ...(n.metadata.labels ?? {}), [LABELS.namespaceName]: n.metadata.name } } }]));
  const lookup = (namespace: string): Json => rendered.get(namespace)
    ?? { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { [LABELS.namespaceName]: namespace } } };
  namespacesOf.set(index, lookup);
  return lookup;
}

const guardsOf = new WeakMap<ClusterIndex, (namespace: string) => Policy[]>();

/** The label pairs (`key\0value`) a namespace selector requires, one of which a namespace must carry; undefined when it requires none. */
function requiredPairs(selector: Json | undefined): string[] | undefined {
  if (!selector) return undefined;
  const [first] = Object.entries(selector.matchLabels ?? {});
  if (first) return [`${first[0]}\0${String(first[1])}`];
  const within = (selector.matchExpressions ?? []).find((e: Json) => e.operator === 'In' && Array.isArray(e.values));
  return within ? (within.values as unknown[]).map((v) => `${within.key}\0${String(v)}`) : undefined;
}

/**
 * The rendered ValidatingAdmissionPolicies that deny in a namespace, by the namespace's labels (as rendered) and its
 * bindings, in binding order. Once per cluster index and namespace; each namespace looks only at the bindings whose
 * selector it could match (indexed by a label pair the selector requires, as a tenant's own binding names its
 * namespace), so a cluster of many tenants with bindings of their own is linear in its tenants, however many
 * clauses each policy holds.
 */
function guardingPolicies(index: ClusterIndex): (namespace: string) => Policy[] {
  const known = guardsOf.get(index);
  if (known) return known;
  const namespaceOf = namespaceObjects(index);
  const policies = new Map<string, Policy>(index.ofKind('ValidatingAdmissionPolicy').map((p) => {
    const spec = (p as unknown as { spec: Json }).spec ?? {};
    return [p.metadata.name, {
      name: p.metadata.name,
      rules: spec.matchConstraints?.resourceRules ?? [],
      variables: spec.variables ?? [],
      validations: spec.validations ?? [],
    }];
  }));
  const denying = index.ofKind('ValidatingAdmissionPolicyBinding').flatMap((b) => {
    const spec = (b as unknown as { spec: Json }).spec ?? {};
    const policy = policies.get(spec.policyName);
    return policy && (spec.validationActions ?? ['Deny']).includes('Deny') ? [{ policy, selector: spec.matchResources?.namespaceSelector as Json | undefined }] : [];
  });
  const anywhere: number[] = [];
  const byPair = new Map<string, number[]>();
  denying.forEach((d, i) => {
    const pairs = requiredPairs(d.selector);
    if (!pairs) {
      anywhere.push(i);
    } else {
      for (const p of pairs) {
        const list = byPair.get(p) ?? [];
        list.push(i);
        byPair.set(p, list);
      }
    }
  });
  const memo = new Map<string, Policy[]>();
  const guards = (namespace: string): Policy[] => {
    let found = memo.get(namespace);
    if (found) return found;
    const labels: Json = namespaceOf(namespace).metadata.labels;
    const candidates = new Set(anywhere);
    for (const [key, value] of Object.entries(labels)) for (const i of byPair.get(`${key}\0${String(value)}`) ?? []) candidates.add(i);
    found = [...candidates].sort((a, b) => a - b).filter((i) => selects(denying[i].selector, labels)).map((i) => denying[i].policy);
    memo.set(namespace, found);
    return found;
  };
  guardsOf.set(index, guards);
  return guards;
}

/** The rendered admission policies that deny in a namespace and the messages of their validations (what they refuse, in words). */
export function policiesGuarding(index: ClusterIndex): (namespace: string) => { readonly name: string; readonly messages: readonly string[] }[] {
  const guarding = guardingPolicies(index);
  return (namespace) => guarding(namespace).map((p) => ({ name: p.name, messages: p.validations.map((v) => v.message) }));
}

/**
 * Names of the rendered admission policies that refuse `object` when `username` creates it in `namespace`, as the API
 * server would decide. The bindings and namespaces are read once, when the function is made: ask it for every
 * namespace of a cluster in linear time.
 */
export function policiesRefusing(index: ClusterIndex): (namespace: string, object: Json, username: string) => string[] {
  const guarding = guardingPolicies(index);
  const namespaceOf = namespaceObjects(index);
  return (namespace, object, username) => guarding(namespace)
    .filter((p) => matches(p, object) && refusals(p, object, username, namespaceOf(namespace)).length > 0)
    .map((p) => p.name);
}

/**
 * Every workload the cluster renders into a namespace the admission policies guard must get through
 * them, as the API server would decide: the object itself as a tenant submits it (after Kueue's
 * webhooks suspended or gated it), and each pod its controller creates, sent by that controller's
 * ServiceAccount. Catches a sample or tutorial that a tenant namespace would refuse.
 */
const guardrailsAdmit: Rule = {
  id: 'tenant-guardrails-admit',
  severity: 'error',
  summary: 'the rendered ValidatingAdmissionPolicies admit every workload rendered into a namespace they guard, and the pods its controller creates',
  check(index) {
    if (index.ofKind('ValidatingAdmissionPolicyBinding').length === 0) return [];
    const guarding = guardingPolicies(index);
    const namespaceOf = namespaceObjects(index);
    const podCreator = (m: Manifest) => TRUSTED_REQUESTERS.find((r) => r.createsPodsOf.includes(`${apiGroup(m.apiVersion)}/${m.kind}`));

    const out: Violation[] = [];
    for (const m of index.objects) {
      const namespace = m.metadata.namespace;
      if (!namespace) continue;
      const guards = guarding(namespace);
      if (guards.length === 0) continue;
      const report = (what: string, object: Json, username: string) => {
        for (const p of guards.filter((g) => matches(g, object))) {
          for (const why of refusals(p, object, username, namespaceOf(namespace))) out.push({ message: `${what} is refused by ValidatingAdmissionPolicy ${p.name}: ${why}`, objects: [m] });
        }
      };
      // LocalQueue defaulting labels the object, and the pods its controller creates, when the namespace has a "default" LocalQueue.
      const defaulted = index.find('LocalQueue', KUEUE_DEFAULT_LOCAL_QUEUE, namespace) ? KUEUE_DEFAULT_LOCAL_QUEUE : undefined;
      // Kueue's webhooks label workloads only (objects with pods), never a Role or a ConfigMap.
      const workload = index.podTemplates(m).length > 0;
      report('the object, as a tenant submits it,', workload ? kueueMutated(m as unknown as Json, defaulted) : m as unknown as Json, TENANT_USER);
      if (m.kind === 'Pod') continue;
      const creator = podCreator(m);
      for (const t of index.podTemplates(m)) {
        const template = (t as unknown as { spec: Json }).spec;
        const pod = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `${m.metadata.name}-pod`, namespace, labels: { ...t.labels } },
          spec: template,
        };
        report(`a pod of ${t.path}, created by ${creator?.who ?? 'its controller (trusted with nothing)'},`, kueueMutated(pod, defaulted), creator?.username ?? TENANT_USER);
      }
    }
    return out;
  },
};

export const TENANCY_RULES: readonly Rule[] = [guardrailsAdmit];
