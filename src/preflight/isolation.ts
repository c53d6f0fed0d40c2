import { PreflightFinding, PreflightRule } from './rule';
import { describeObject, summarize } from './util';
import { isJsonObject } from '../json';
import { LABELS, NAMESPACES } from '../model/names';
import { Manifest } from '../render/manifest';

const NETWORK_POLICY = { group: 'networking.k8s.io', kind: 'NetworkPolicy' } as const;

/** Whether a NetworkPolicy selects every pod of its namespace for ingress. */
function isolatesAllPods(p: Manifest): boolean {
  const spec = isJsonObject(p.spec) ? p.spec : {};
  const selector = isJsonObject(spec.podSelector) ? spec.podSelector : undefined;
  const types = Array.isArray(spec.policyTypes) ? spec.policyTypes : ['Ingress'];
  return selector !== undefined && Object.keys(selector).length === 0 && types.includes('Ingress');
}

/** Whether a rendered NetworkPolicy is a default deny of ingress: every pod selected, no rule letting anything in. */
function isDefaultDeny(p: Manifest): boolean {
  const ingress = isJsonObject(p.spec) ? p.spec.ingress : undefined;
  return p.kind === NETWORK_POLICY.kind && isolatesAllPods(p) && (!Array.isArray(ingress) || ingress.length === 0);
}

/** The namespaces the rendered policies of a namespace let in (besides its own pods), by their name label. */
function allowedNamespaces(policies: readonly Manifest[]): string[] {
  const out = new Set<string>();
  for (const p of policies) {
    const rules = isJsonObject(p.spec) && Array.isArray(p.spec.ingress) ? p.spec.ingress : [];
    for (const from of rules.flatMap((r) => (isJsonObject(r) && Array.isArray(r.from) ? r.from : []))) {
      const name = isJsonObject(from) && isJsonObject(from.namespaceSelector) && isJsonObject(from.namespaceSelector.matchLabels)
        ? from.namespaceSelector.matchLabels[LABELS.namespaceName] : undefined;
      if (typeof name === 'string') out.add(name);
    }
  }
  return [...out].sort();
}

/**
 * A default deny of ingress the first sync puts into a namespace the cluster already runs things in: `default` once the
 * description has a tenant (tenants must not reach the samples and the administrators' jobs there), or a tenant
 * namespace that exists already. From then on its pods accept connections only from their own namespace and the
 * platform's: whatever another namespace used there stops answering. Not blocking (it is what the render means to
 * do), but said before the sync, with the Services of that namespace that lose their clients elsewhere.
 */
const namespaceIsolated: PreflightRule = {
  id: 'namespace-isolated',
  family: 'takeover',
  summary: 'the first sync isolates a namespace the cluster already runs (default, once the description has a tenant): its pods then accept connections only from their own namespace and the platform\'s',
  check: ({ rendered, state }) => {
    const out: PreflightFinding[] = [];
    const livePolicies = state.list(NETWORK_POLICY.group, NETWORK_POLICY.kind);
    for (const { folder, manifest: deny } of rendered) {
      if (!isDefaultDeny(deny) || state.find(deny)) continue;
      const ns = deny.metadata.namespace ?? NAMESPACES.default;
      // a namespace the cluster has (every cluster has default, whether or not the state lists namespaces)
      if (ns !== NAMESPACES.default && !state.get('', 'Namespace', ns)) continue;
      // pods there that are isolated already stay so: the rendered policies only let more in
      if (livePolicies.some((p) => p.metadata.namespace === ns && isolatesAllPods(p))) continue;
      const policies = rendered.filter((r) => r.manifest.kind === NETWORK_POLICY.kind && r.manifest.metadata.namespace === ns).map((r) => r.manifest);
      const others = allowedNamespaces(policies).filter((n) => n !== ns);
      const services = state.list('', 'Service').filter((s) => s.metadata.namespace === ns && s.metadata.name !== 'kubernetes').map((s) => s.metadata.name);
      out.push({
        rule: 'namespace-isolated',
        severity: 'warning',
        object: describeObject(deny),
        message: `the first sync of ${folder}/ isolates the pre-installed namespace ${ns}: its pods then accept connections only from pods in ${ns}`
          + `${others.length > 0 ? ` and in ${others.join(', ')}` : ''} (${policies.map((p) => p.metadata.name).join(', ')})`
          + (services.length > 0 ? `; its Services ${summarize(services)} stop answering clients in any other namespace` : ''),
        fix: `expected when ${ns} runs only the samples and the administrators' own jobs, which tenants must not reach. A workload there that other `
          + `namespaces use: move it to a namespace of its own, or add a NetworkPolicy in ${ns} that lets its clients in (Argo CD never prunes one it did not create)`,
      });
    }
    return out;
  },
};

export const ISOLATION_RULES: readonly PreflightRule[] = [namespaceIsolated];
