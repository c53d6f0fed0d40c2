import { ClusterIndex } from './cluster-index';
import { Rule, Violation } from './rule';
import { apiGroup } from '../render/manifest';

/** Scope of a kind: from the schemas when known, else from a CustomResourceDefinition rendered with the cluster. */
function scopeOf(index: ClusterIndex, apiVersion: string, kind: string): 'Namespaced' | 'Cluster' | undefined {
  const known = index.scopeOf?.(apiVersion, kind);
  if (known) return known;
  const crd = index.ofKind('CustomResourceDefinition').find((c) => {
    const spec = c.spec as { group?: string; names?: { kind?: string } } | undefined;
    return spec?.group === apiGroup(apiVersion) && spec?.names?.kind === kind;
  });
  return (crd?.spec as { scope?: 'Namespaced' | 'Cluster' } | undefined)?.scope;
}

const namespaceSet: Rule = {
  id: 'namespace-set',
  severity: 'error',
  summary: 'namespaced objects set metadata.namespace; cluster-scoped objects do not',
  check(index) {
    const out: Violation[] = [];
    for (const m of index.objects) {
      const scope = scopeOf(index, m.apiVersion, m.kind);
      if (scope === 'Namespaced' && !m.metadata.namespace) {
        out.push({ message: `${m.kind} is namespaced but metadata.namespace is unset (it would land wherever it is applied)`, objects: [m] });
      }
      if (scope === 'Cluster' && m.metadata.namespace) {
        out.push({ message: `${m.kind} is cluster-scoped but sets metadata.namespace "${m.metadata.namespace}"`, objects: [m] });
      }
    }
    return out;
  },
};

export const METADATA_RULES: readonly Rule[] = [namespaceSet];
