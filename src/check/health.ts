import { ClusterIndex } from './cluster-index';
import { ARGO } from './gitops';
import { Rule, Violation } from './rule';
import { ARGOCD_CM } from '../components/argocd/argocd-config';
import { configuredHealth, hasBuiltInHealth, healthChecks } from '../components/argocd/health-checks';
import { definedKind, groupKindKey, isBuiltInGroup } from '../components/gitops/api-kinds';
import { isJsonObject } from '../json';
import { LABELS } from '../model/names';
import { apiGroup, describeObject, Manifest } from '../render/manifest';

function wave(m: Manifest): number {
  const v = Number(m.metadata.annotations?.[LABELS.syncWave] ?? 0);
  return Number.isFinite(v) ? v : 0;
}

/**
 * Fields of a CRD's status that report readiness: a kind whose status has one is not ready the moment it exists, and
 * an Argo CD without a health check for it would call it Healthy all the same. A status without them (an AppProject's
 * tokens, a Kueue Cohort's fair-sharing figures) reports nothing to wait for.
 */
const READINESS_FIELDS = ['conditions', 'state', 'phase', 'health', 'updateStatus', 'observedGeneration', 'ready', 'readyReplicas'];

/** Whether a kind's schema (an openAPIV3Schema) has a status that reports readiness. */
function reportsReadiness(schema: Readonly<Record<string, unknown>> | undefined): boolean | undefined {
  if (!schema) return undefined;
  const status = isJsonObject(schema.properties) ? schema.properties.status : undefined;
  const fields = isJsonObject(status) && isJsonObject(status.properties) ? Object.keys(status.properties) : [];
  return fields.some((f) => READINESS_FIELDS.includes(f));
}

/** The schemas of the CRDs the tree and the engines' renders hold, by `group/Kind` (the served versions', merged). */
function renderedSchemas(index: ClusterIndex): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  const rendered = (index.renders?.sources ?? []).flatMap((r) => r.objects.filter((o) => o.kind === 'CustomResourceDefinition'));
  const crds = [...index.ofKind('CustomResourceDefinition'), ...rendered];
  for (const crd of crds) {
    const gk = definedKind(crd);
    type Version = { storage?: boolean; schema?: { openAPIV3Schema?: Record<string, unknown> } };
    const versions = ((crd.spec as { versions?: Version[] } | undefined)?.versions) ?? [];
    const schema = (versions.find((v) => v.storage) ?? versions[0])?.schema?.openAPIV3Schema;
    if (gk && schema) out.set(groupKindKey(gk), schema);
  }
  return out;
}

/**
 * Where the health of each kind comes from in the Argo CD that syncs the cluster: Argo CD itself (built in), and the
 * argocd-cm the cluster's argocd folder renders; without one (gitops.argocd: external), the checks this toolkit ships,
 * which the report tells that Argo CD to carry.
 */
function healthSource(index: ClusterIndex): { known: (group: string, kind: string) => boolean; where: string } {
  const cm = index.ofKind('ConfigMap').find((m) => m.metadata.name === ARGOCD_CM.name && m.metadata.labels?.[LABELS.partOf] === 'argocd');
  if (cm) {
    const configured = configuredHealth(isJsonObject(cm.data) ? cm.data : {});
    return { known: (g, k) => hasBuiltInHealth(g, k) || configured(g, k), where: `${describeObject(cm)} (${index.folderOf(cm)}/)` };
  }
  const shipped = new Set(healthChecks().map((c) => `${c.group}/${c.kind}`));
  return { known: (g, k) => hasBuiltInHealth(g, k) || shipped.has(`${g}/${k}`), where: 'the argocd-cm of the Argo CD that syncs this cluster (the toolkit\'s health checks)' };
}

/** The objects an Application applies: as the engines render its sources, else (no renders) its folder of the tree. */
function appliedBy(index: ClusterIndex, app: Manifest): readonly Manifest[] {
  const rendered = (index.renders?.sources ?? []).filter((r) => r.application === app);
  if (rendered.length > 0) return rendered.flatMap((r) => r.objects);
  const path = ((app.spec as { source?: { path?: string } } | undefined)?.source?.path ?? '').replace(/\/+$/, '');
  const folder = index.folders.find((f) => path.endsWith(`/${f}`));
  return folder ? index.inFolder(folder) : [];
}

/**
 * A sync wave waits until the Applications of the waves before it are Healthy, and an Application is Healthy when
 * every object it applies is. An object of a kind Argo CD knows no health of counts as Healthy the moment it exists
 * (gitops-engine's sync: a resource without health succeeds at once): a ClusterPolicy would let the tenants' queues
 * in before one GPU is advertised. So every custom kind whose status reports readiness, applied by an Application a
 * later wave waits on (or by the root before its last wave: the child Applications themselves), needs a health check.
 */
const waveHealth: Rule = {
  id: 'wave-health',
  severity: 'error',
  summary: 'every custom kind that reports readiness and that a later sync wave waits on (applied by an Application of an earlier wave, or by the root: '
    + 'the child Applications) has a health check in Argo CD, built in or in argocd-cm',
  check(index) {
    const apps = index.ofKind('Application', ARGO).filter((a) => a.metadata.annotations?.[LABELS.byHand] !== 'true');
    if (apps.length === 0) return [];
    const { known, where } = healthSource(index);
    const schemas = renderedSchemas(index);
    const out: Violation[] = [];
    const seen = new Set<string>();
    const require = (app: Manifest, waitedOn: readonly Manifest[], later: number) => {
      for (const m of waitedOn) {
        const group = apiGroup(m.apiVersion);
        if (isBuiltInGroup(group) || m.kind === 'CustomResourceDefinition' || known(group, m.kind)) continue;
        const key = `${app.metadata.name}/${group}/${m.kind}`;
        if (seen.has(key)) continue;
        const unrendered = (index.renders?.sources ?? []).flatMap((r) => r.unrenderedCrds);
        const recorded = unrendered.find((c) => c.group === group && c.kind === m.kind)?.readiness;
        const schema = schemas.get(`${group}/${m.kind}`) ?? index.schemaOf?.(m.apiVersion, m.kind);
        const readiness = schema ? reportsReadiness(schema) : recorded;
        // A kind no schema tells of (none in the tree, the renders or the pinned CRDs) is not held to it: nothing to read.
        if (readiness !== true) continue;
        seen.add(key);
        out.push({
          message: `(wave ${wave(app)}) applies ${describeObject(m)}, and wave ${later} waits for it to be Healthy, but Argo CD has no health check for ${group}/${m.kind} `
            + `(its status reports readiness): it would be Healthy the moment it exists. Add resource.customizations.health.${group}_${m.kind} to ${where}`,
          objects: [app, m],
        });
      }
    };
    // The root (no wave annotation: it is applied by hand) syncs the gitops folder's objects in their own waves.
    const gitopsObjects = (app: Manifest) => appliedBy(index, app).filter((m) => m.metadata.annotations?.[LABELS.byHand] !== 'true');
    for (const app of apps) {
      const objects = gitopsObjects(app);
      const last = Math.max(...objects.map(wave));
      require(app, objects.filter((m) => wave(m) < last), last);
    }
    // The children (the Applications with a wave; the root has none) wait for those of the waves before.
    const children = apps.filter((a) => a.metadata.annotations?.[LABELS.syncWave] !== undefined);
    const last = Math.max(...children.map(wave));
    for (const app of children) if (wave(app) < last) require(app, appliedBy(index, app), last);
    return out;
  },
};

export const HEALTH_RULES: readonly Rule[] = [waveHealth];
