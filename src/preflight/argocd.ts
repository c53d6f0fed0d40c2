import { PreflightFinding, PreflightRule } from './rule';
import { ClusterState } from './state';
import { ARGOCD_FOLDER } from '../components/argocd/chart';
import { FLEET_FOLDER } from '../components/gitops/plan';
import { VERSIONS } from '../versions';

/** The namespaces of the cluster's Argo CD Applications, sorted; undefined when it serves no Application CRD (runs no Argo CD). */
export function argocdNamespaces(state: ClusterState): string[] | undefined {
  if (!state.get('apiextensions.k8s.io', 'CustomResourceDefinition', 'applications.argoproj.io')) return undefined;
  return [...new Set(state.list('argoproj.io', 'Application').map((a) => a.metadata.namespace).filter((n): n is string => !!n))].sort();
}

/**
 * A cluster that already runs an Argo CD (its Application CRD is served) while the description renders one of its own
 * (gitops.argocd: managed): the bootstrap's argocd folder would take the running one over. Either is fine, on purpose:
 * adopt it (same namespace: the upstream install of the pinned release replaces its manifests, server-side, and its
 * argocd-cm keeps its entries and gains the health checks), or keep it and say `external`. Its Applications in another
 * namespace than the description's mean a second Argo CD beside it: both would own the cluster-wide CRDs and roles.
 */
const argocdPresent: PreflightRule = {
  id: 'argocd-present',
  family: 'takeover',
  summary: 'the cluster already runs an Argo CD while gitops.argocd is "managed": the bootstrap would take it over (adopt it, or keep it and say external)',
  check: ({ model, state }) => {
    if (model.argocd !== 'managed') return [];
    const namespaces = argocdNamespaces(state);
    if (namespaces === undefined) return [];
    const ns = model.description.gitops.namespace;
    const elsewhere = namespaces.filter((n) => n !== ns);
    const out: PreflightFinding = {
      rule: 'argocd-present',
      severity: elsewhere.length > 0 ? 'error' : 'warning',
      object: 'CustomResourceDefinition applications.argoproj.io',
      message: `the cluster already runs Argo CD${namespaces.length > 0 ? ` (Applications in ${namespaces.join(', ')})` : ''}, and gitops.argocd is "managed": `
        + `bootstrapping ${ARGOCD_FOLDER}/ takes it over (Argo CD ${VERSIONS.argocd.version} from the upstream install in namespace ${ns}, every pod on the service node, `
        + 'the health checks added to argocd-cm, its other entries kept)'
        + (elsewhere.length > 0 ? `; its Applications live in ${elsewhere.join(', ')}, not ${ns}: a second Argo CD would share the cluster-wide CRDs and roles with it` : ''),
      fix: `keep it: set gitops.argocd: external and merge the health checks into its argocd-cm (kubectl apply --server-side -f ${FLEET_FOLDER}/configmap.<its namespace>.argocd-cm.yaml `
        + `of a full synth); or adopt it: gitops.namespace: ${elsewhere[0] ?? ns}, then bootstrap as the cluster report says`,
    };
    return [out];
  },
};

export const ARGOCD_RULES: readonly PreflightRule[] = [argocdPresent];
