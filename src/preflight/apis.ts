import { crdFacts } from './reads';
import { installBringing, missingKindFixes } from './remedies';
import { PreflightContext, PreflightFinding, PreflightRule, rulesOf } from './rule';
import { ARGOCD_FOLDER } from '../components/argocd/chart';
import { groupKindKey, isBuiltInGroup, isProvided, kindsDefinedBy, parseProvides } from '../components/gitops/api-kinds';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { ARGOCD_FIELD_MANAGER, LABELS, MULTIKUEUE } from '../model/names';
import { apiGroup } from '../render/manifest';

function apiFindings({ model, rendered, state, crdFileOf }: PreflightContext): PreflightFinding[] {
  // Without any CRD the state was not read completely (snapshot-incomplete says so), not "every API is missing".
  if (!state.has('apiextensions.k8s.io', 'CustomResourceDefinition')) return [];
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition').map(crdFacts).filter((f) => f !== undefined);
  const manifests = rendered.map((r) => r.manifest);
  // Kinds the same sync brings: CRDs rendered here and the kinds managed installs' Applications declare.
  const provided = [
    ...kindsDefinedBy(manifests),
    ...manifests.filter((m) => m.kind === 'Application').flatMap((a) => parseProvides(a.metadata.annotations?.[LABELS.provides])),
  ];
  const seen = new Set<string>();
  const out: PreflightFinding[] = [];
  for (const { folder, manifest: m } of rendered) {
    const group = apiGroup(m.apiVersion);
    const version = m.apiVersion.slice(m.apiVersion.indexOf('/') + 1);
    const key = `${m.apiVersion}/${m.kind}`;
    if (isBuiltInGroup(group) || seen.has(key) || isProvided({ group, kind: m.kind }, provided)) continue;
    seen.add(key);
    const crd = crds.find((c) => c.group === group && c.kind === m.kind);
    const users = rendered.filter((r) => r.manifest.apiVersion === m.apiVersion && r.manifest.kind === m.kind).length;
    // Argo CD itself is installed before the bootstrap; the gitops folder is applied by hand.
    const severity = folder === GITOPS_FOLDER ? 'warning' : 'error';
    const installKey = installBringing(model, { group, kind: m.kind })?.key;
    const install = installKey && `installs.${installKey}: managed`;
    if (!crd) {
      // least invasive first: render without the kind, install its CRD, a managed install last
      const fixes = folder === GITOPS_FOLDER ? [] : missingKindFixes(model, state, { group, kind: m.kind }, m.apiVersion, crdFileOf);
      out.push({
        rule: 'api-missing',
        severity,
        object: `CustomResourceDefinition ${groupKindKey({ group, kind: m.kind })}`,
        message: `the render has ${users} ${m.kind} object(s) (${folder}/) but the cluster has no CRD for ${m.kind}.${group}`,
        fix: folder === GITOPS_FOLDER
          ? (model.argocd === 'managed' ? `the bootstrap installs it first: kubectl apply --server-side --force-conflicts --field-manager=${ARGOCD_FIELD_MANAGER} -k ${model.description.gitops.path}/${ARGOCD_FOLDER}`
            : 'install Argo CD before the bootstrap, or set gitops.argocd: managed (docs/components/gitops-and-fleet.md)')
          : fixes.length > 0 ? fixes.join('; or ') : `install the operator that serves ${m.kind}.${group}`,
      });
    } else if (!crd.served.includes(version)) {
      out.push({
        rule: 'api-version-not-served',
        severity,
        object: `CustomResourceDefinition ${crd.plural}.${group}`,
        message: `the render uses ${m.apiVersion} for ${users} ${m.kind} object(s) (${folder}/) but the CRD serves only ${crd.served.join(', ') || 'no version'}`,
        fix: install ? `upgrade the operator to a release that serves ${m.apiVersion}, or set ${install} in the description` : `upgrade the operator that serves ${m.kind}.${group} to a release serving ${m.apiVersion}`,
      });
    }
  }
  return out;
}

/**
 * A MultiKueue manager that reaches workers through ClusterProfiles needs their CRD (the cluster inventory's) before
 * its Kueue starts: with the MultiKueueClusterProfile gate on and no CRD, Kueue v0.19's MultiKueue cluster controller
 * never starts (its ClusterProfile source never syncs), so no worker connects, kubeconfig ones included
 * (test/cluster/multikueue.test.ts found it). The render has no ClusterProfile object, so api-missing cannot see it.
 */
function clusterProfileFindings({ model, state }: PreflightContext): PreflightFinding[] {
  const role = model.multiKueue;
  if (role?.role !== 'manager' || !state.has('apiextensions.k8s.io', 'CustomResourceDefinition')) return [];
  const through = role.workers.filter((w) => w.clusterProfile !== undefined).map((w) => w.cluster);
  if (through.length === 0) return [];
  const { group, kind, crd } = MULTIKUEUE.clusterProfile;
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition').map(crdFacts);
  if (crds.some((c) => c?.group === group && c.kind === kind)) return [];
  return [{
    rule: 'multikueue-clusterprofile-api',
    severity: 'error',
    object: `CustomResourceDefinition ${crd}`,
    message: `the fleet reaches ${through.join(', ')} through a ClusterProfile, but the cluster has no CRD for ${kind}.${group}: Kueue's MultiKueue cluster `
      + 'controller then never starts, and no worker connects (those with a kubeconfig Secret included)',
    fix: `install your cluster inventory's ${kind} CRD (${crd}) before Kueue starts (or restart Kueue after it), or reach those workers with a kubeconfigSecret in the fleet description`,
  }];
}

export const API_RULES: readonly PreflightRule[] = [
  ...rulesOf('api', apiFindings, {
    'api-missing': 'a rendered kind has no CRD in the cluster, and no managed install brings it',
    'api-version-not-served': 'the CRD of a rendered kind does not serve the rendered version',
  }),
  ...rulesOf('api', clusterProfileFindings, {
    'multikueue-clusterprofile-api': 'a MultiKueue manager reaches workers through ClusterProfiles, but the cluster has no ClusterProfile CRD',
  }),
];
