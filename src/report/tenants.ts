import { code, table } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { policiesGuarding } from '../check/tenancy';
import { LABELS, TENANCY } from '../model/names';
import { Manifest, RenderedCluster } from '../render/manifest';

interface Rule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs: readonly string[];
}

const specOf = <T>(m: Manifest | undefined): T | undefined => (m as unknown as { spec?: T } | undefined)?.spec;

/** `a/b` of a rule's resources, the core group as plain names: `pods`, `batch/jobs`. */
function grants(rules: readonly Rule[]): string[] {
  return rules.map((r) => {
    const resources = (r.apiGroups ?? ['']).flatMap((g) => (r.resources ?? []).map((res) => (g === '' ? res : `${g}/${res}`)));
    return `${r.verbs.join(', ')}: ${resources.map(code).join(', ')}`;
  });
}

/** One object per namespace of a kind (and name), read once: the report stays linear in tenants. */
function byNamespace(index: ClusterIndex, kind: string, name?: string): Map<string, Manifest> {
  return new Map(index.ofKind(kind).filter((o) => name === undefined || o.metadata.name === name).map((o) => [o.metadata.namespace ?? '', o]));
}

/**
 * The report's tenants section: per tenant its namespace, group, queue, GPUs, priorities and what it may run outside
 * Kueue, then what every tenant may do (its Role's rules) and may not (the messages of the admission policies that
 * guard tenant namespaces), all read from the rendered objects.
 */
export function tenantsSection(c: RenderedCluster, index: ClusterIndex): string {
  const namespaces = index.ofKind('Namespace').filter((n) => n.metadata.labels?.[LABELS.tenant] !== undefined);
  if (namespaces.length === 0) return 'No tenants are described for this cluster.';
  const localQueues = byNamespace(index, 'LocalQueue');
  const quotas = byNamespace(index, 'ResourceQuota', TENANCY.unqueuedQuota);
  const limitRanges = byNamespace(index, 'LimitRange', TENANCY.limitRange);
  const bindings = byNamespace(index, 'RoleBinding');
  const roles = byNamespace(index, 'Role');
  const tenants = new Map(c.model.tenants.map((t) => [t.namespace, t]));
  const rows = namespaces.map((ns) => {
    const name = ns.metadata.name;
    const lq = localQueues.get(name);
    const hard = specOf<{ hard?: Record<string, string | number> }>(quotas.get(name))?.hard;
    const defaults = specOf<{ limits?: { defaultRequest?: Record<string, string> }[] }>(limitRanges.get(name))?.limits?.[0]?.defaultRequest;
    const subjects = ((bindings.get(name) as unknown as { subjects?: { kind: string; name: string }[] } | undefined)?.subjects ?? []).filter((s) => s.kind === 'Group');
    const priorities = Object.keys(ns.metadata.labels ?? {})
      .filter((k) => k.startsWith(TENANCY.priorityLabelPrefix)).map((k) => k.slice(TENANCY.priorityLabelPrefix.length));
    return [
      ns.metadata.labels?.[LABELS.tenant] ?? name,
      code(name),
      subjects.map((s) => code(s.name)).join(', ') || 'none',
      lq ? `${code(lq.metadata.name)} -> ${code(specOf<{ clusterQueue?: string }>(lq)?.clusterQueue ?? '')}` : 'none',
      tenants.get(name)?.quota.gpus ?? '-',
      priorities.map(code).join(', ') || 'none',
      hard ? `${hard['requests.cpu']} CPU, ${hard['requests.memory']} memory, ${hard.pods} pods` : 'unbounded',
      defaults ? `${defaults.cpu} CPU, ${defaults.memory} memory` : 'none',
    ];
  });
  const first = namespaces[0].metadata.name;
  const rules = (roles.get(first) as unknown as { rules?: Rule[] } | undefined)?.rules ?? [];
  const refused = policiesGuarding(index)(first);
  return [
    'Each tenant works in its own namespace through its group; its GPUs come through its LocalQueue. A pod it runs outside Kueue '
      + `(no queue label) must name the PriorityClass ${code(TENANCY.unqueuedPriorityClass)} (the lowest, never preempting) and counts against the namespace's `
      + `ResourceQuota ${code(TENANCY.unqueuedQuota)}; the LimitRange ${code(TENANCY.limitRange)} gives a container without requests the defaults below.`,
    '',
    table(['Tenant', 'Namespace', 'Group', 'LocalQueue -> ClusterQueue', 'GPUs nominal', 'Priorities it may use', 'Outside Kueue (ResourceQuota)', 'Container defaults'], rows),
    '',
    `**A tenant may**, in its own namespace only (Role ${code(roles.get(first)?.metadata.name ?? 'tenant')}; nothing cluster-scoped):`,
    '',
    ...grants(rules).map((g) => `- ${g}`),
    '',
    refused.length === 0
      ? '**No admission policy guards the tenant namespaces** (Kubernetes before 1.30): a tenant may run anything its Role allows.'
      : `**A tenant may not** (admission policies ${refused.map((p) => code(p.name)).join(', ')}, for every pod whoever creates it, or as each says):`,
    '',
    ...[...new Set(refused.flatMap((p) => p.messages))].map((m) => `- ${m}`),
    '',
    'Nor may it write RBAC, quotas, LimitRanges, NetworkPolicies, Namespaces or its LocalQueue: its Role grants none of them.',
  ].join('\n');
}
