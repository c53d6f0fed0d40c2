import { requestedResources } from './cluster-index';
import { coveredResources } from './kueue';
import { Rule, Violation } from './rule';
import { RESOURCES, SINGLETONS } from '../model/names';
import { Manifest } from '../render/manifest';

/** A singleton custom resource the operator reconciles only under one name. */
function singleton(id: string, kind: string, group: string, name: string): Rule {
  return {
    id,
    severity: 'error',
    summary: `at most one ${kind}, named "${name}"`,
    check(index) {
      const all = index.ofKind(kind, group);
      const out: Violation[] = [];
      if (all.length > 1) out.push({ message: `${all.length} ${kind}s are rendered; the operator reconciles exactly one`, objects: all });
      for (const m of all) {
        if (m.metadata.name !== name) out.push({ message: `metadata.name: the operator reconciles only a ${kind} named "${name}", not "${m.metadata.name}"`, objects: [m] });
      }
      return out;
    },
  };
}

/** The RDMA resource names a NicClusterPolicy's shared device plugin advertises, or an error text. */
export function nicRdmaResources(ncp: Manifest): { readonly names: readonly string[]; readonly error?: string } {
  const config = (ncp.spec as { rdmaSharedDevicePlugin?: { config?: string } } | undefined)?.rdmaSharedDevicePlugin?.config;
  if (config === undefined) return { names: [] };
  try {
    const parsed = JSON.parse(config) as { configList?: { resourceName?: string; resourcePrefix?: string }[] };
    const prefix = RESOURCES.rdmaPrefix.replace(/\/$/, '');
    return { names: (parsed.configList ?? []).map((c) => `${c.resourcePrefix ?? prefix}/${c.resourceName ?? ''}`) };
  } catch (e) {
    return { names: [], error: `spec.rdmaSharedDevicePlugin.config is not JSON: ${(e as Error).message}` };
  }
}

const isRdma = (r: string) => r.startsWith(RESOURCES.rdmaPrefix);

const rdmaResourceName: Rule = {
  id: 'rdma-resource-name',
  severity: 'error',
  summary: 'the RDMA resource name agrees across the NicClusterPolicy, the ClusterQueues and the jobs',
  check(index) {
    const out: Violation[] = [];
    const policies = index.ofKind('NicClusterPolicy', 'mellanox.com');
    const advertised = new Set<string>();
    for (const ncp of policies) {
      const { names, error } = nicRdmaResources(ncp);
      if (error) out.push({ message: error, objects: [ncp] });
      names.forEach((n) => advertised.add(n));
    }
    const modelName = index.model?.rdma?.resourceName;
    for (const ncp of policies) {
      const { names, error } = nicRdmaResources(ncp);
      if (modelName && !error && !names.includes(modelName)) {
        out.push({ message: `the RDMA shared device plugin advertises ${names.join(', ') || 'nothing'}, not the description's ${modelName}`, objects: [ncp] });
      }
    }
    const source = policies.length > 0 ? policies[0] : undefined;
    const expected = source ? [...advertised] : modelName ? [modelName] : undefined;
    if (!expected) return out;
    const where = source ? `${source.kind} ${source.metadata.name} advertises` : 'the description names';
    for (const cq of index.ofKind('ClusterQueue', 'kueue.x-k8s.io')) {
      for (const r of coveredResources(cq).filter(isRdma)) {
        if (expected.includes(r)) continue;
        out.push({ message: `covers ${r}, but ${where} ${expected.join(', ') || 'no RDMA resource'}`, objects: source ? [cq, source] : [cq] });
      }
    }
    for (const m of index.objects) {
      for (const t of index.podTemplates(m)) {
        for (const r of requestedResources(t.spec).filter(isRdma)) {
          if (expected.includes(r)) continue;
          out.push({ message: `${t.path} requests ${r}, but ${where} ${expected.join(', ') || 'no RDMA resource'}; the pod never schedules`, objects: source ? [m, source] : [m] });
        }
      }
    }
    return out;
  },
};

export const NETWORK_RULES: readonly Rule[] = [
  singleton('nic-cluster-policy-singleton', 'NicClusterPolicy', 'mellanox.com', SINGLETONS.nicClusterPolicy),
  singleton('cluster-policy-singleton', 'ClusterPolicy', 'nvidia.com', SINGLETONS.clusterPolicy),
  rdmaResourceName,
];
