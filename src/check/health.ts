import { appliedBy } from './applied';
import { ClusterIndex } from './cluster-index';
import { applicationSources, ARGO, renderedFolderOf } from './gitops';
import { Rule, Violation } from './rule';
import { ARGOCD_CM } from '../components/argocd/argocd-config';
import { configuredHealth, hasBuiltInHealth, healthChecks, healthKey } from '../components/argocd/health-checks';
import { groupKindKey, isBuiltInGroup } from '../components/gitops/api-kinds';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { isJsonObject } from '../json';
import { LABELS, syncWave } from '../model/names';
import { apiGroup, definedKind, describeObject, Manifest } from '../render/manifest';


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
  const cm = argocdCm(index);
  if (cm) {
    const configured = configuredHealth(isJsonObject(cm.data) ? cm.data : {});
    return { known: (g, k) => hasBuiltInHealth(g, k) || configured(g, k), where: `${describeObject(cm)} (${index.folderOf(cm)}/)` };
  }
  const shipped = new Set(healthChecks().map((c) => `${c.group}/${c.kind}`));
  return { known: (g, k) => hasBuiltInHealth(g, k) || shipped.has(`${g}/${k}`), where: 'the argocd-cm of the Argo CD that syncs this cluster (the toolkit\'s health checks)' };
}

/** The argocd-cm of the Argo CD that syncs the cluster, as the tree renders it (the argocd folder's), if any. */
function argocdCm(index: ClusterIndex): Manifest | undefined {
  return index.ofKind('ConfigMap').find((m) => m.metadata.name === ARGOCD_CM.name && m.metadata.labels?.[LABELS.partOf] === 'argocd');
}

/**
 * The health check of Argo CD Applications in the Argo CD that syncs the cluster, and where it is configured: the
 * argocd-cm entry (`resource.customizations.health.argoproj.io_Application`, or a `resource.customizations` block that
 * configures argoproj.io/Application), else, with no argocd-cm rendered, the check this toolkit ships. Undefined: none.
 */
function applicationHealthScript(index: ClusterIndex): { script: string; where: string } | undefined {
  const cm = argocdCm(index);
  if (cm) {
    const data = isJsonObject(cm.data) ? cm.data : {};
    const where = `the Application health check of ${describeObject(cm)} (${index.folderOf(cm)}/)`;
    const entry = data[healthKey(ARGO, 'Application')];
    if (typeof entry === 'string' && entry.trim() !== '') return { script: entry, where };
    const block = data['resource.customizations'];
    if (typeof block === 'string' && configuredHealth({ 'resource.customizations': block })(ARGO, 'Application')) return { script: block, where };
    return undefined;
  }
  const shipped = healthChecks().find((c) => c.group === ARGO && c.kind === 'Application');
  return shipped && { script: shipped.script, where: 'the toolkit\'s Application health check (what the argocd-cm of the Argo CD that syncs this cluster carries)' };
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
    // Not the Applications applied and synced by hand (the samples'): nothing waits on them. The root is applied by
    // hand too, at bootstrap, but syncs the Applications of the gitops folder in their waves.
    const apps = index.ofKind('Application', ARGO).filter((a) => a.metadata.annotations?.[LABELS.byHand] !== 'true' || isRoot(index, a));
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
          message: `(wave ${syncWave(app)}) applies ${describeObject(m)}, and wave ${later} waits for it to be Healthy, but Argo CD has no health check for ${group}/${m.kind} `
            + `(its status reports readiness): it would be Healthy the moment it exists. Add resource.customizations.health.${group}_${m.kind} to ${where}`,
          objects: [app, m],
        });
      }
    };
    // The root (no wave annotation: it is applied by hand) syncs the gitops folder's objects in their own waves.
    const gitopsObjects = (app: Manifest) => appliedBy(index, app).filter((m) => m.metadata.annotations?.[LABELS.byHand] !== 'true');
    for (const app of apps) {
      const objects = gitopsObjects(app);
      const last = Math.max(...objects.map(syncWave));
      require(app, objects.filter((m) => syncWave(m) < last), last);
    }
    // The children (the Applications with a wave; the root has none) wait for those of the waves before.
    const children = apps.filter((a) => a.metadata.annotations?.[LABELS.syncWave] !== undefined);
    const last = Math.max(...children.map(syncWave));
    for (const app of children) if (syncWave(app) < last) require(app, appliedBy(index, app), last);
    return out;
  },
};

/** Whether an Application syncs the cluster's gitops folder (the root, or the fleet's Application in its place). */
function isRoot(index: ClusterIndex, app: Manifest): boolean {
  return applicationSources(app).some((s) => renderedFolderOf(index, s) === GITOPS_FOLDER);
}

/**
 * An Application that applies itself (its folder's kustomization lists it) takes part in its own sync as one of the
 * tasks of its wave. gitops-engine's sync (argo-cd v3.5.1, commit 109ca7ca71139e514114499d294a492e7910a965,
 * gitops-engine/pkg/sync/sync_context.go Sync) waits, in a sync of several waves, until every task of the wave applied is
 * Healthy before it applies the next, and it reads the health of an Application with the argocd-cm check. A check that
 * reads status.operationState calls the Application Progressing while its sync runs, and that sync is the one waiting:
 * it never completes, and the Application never applies another commit. controller/health.go skips an Application
 * that manages itself when it aggregates the Application's health, not in the sync. The task of the last wave is not
 * waited on (the sync succeeds once the last wave is applied).
 */
const selfTrackingApplication: Rule = {
  id: 'self-tracking-application',
  severity: 'error',
  summary: 'no Application applies itself in a wave its own sync waits on, when the Application health check reads status.operationState '
    + '(its own sync would wait for itself for ever)',
  check(index) {
    const health = applicationHealthScript(index);
    if (!health || !health.script.includes('operationState')) return [];
    const out: Violation[] = [];
    for (const app of index.ofKind('Application', ARGO)) {
      const namespace = app.metadata.namespace ?? (app.spec as { destination?: { namespace?: string } } | undefined)?.destination?.namespace;
      const objects = appliedBy(index, app);
      const self = objects.find((m) => apiGroup(m.apiVersion) === ARGO && m.kind === 'Application' && m.metadata.name === app.metadata.name
        && (m.metadata.namespace ?? namespace) === namespace);
      if (!self) continue;
      const last = Math.max(...objects.map(syncWave));
      if (syncWave(self) >= last) continue;
      out.push({
        message: `applies itself in wave ${syncWave(self)} of its own sync, which waits for that wave to be Healthy before wave ${last}; `
          + `${health.where} reads status.operationState, which says Running while that very sync runs, so it never completes and the Application never `
          + 'applies another commit. Leave it out of the folder it syncs (apply it by hand at bootstrap, as the toolkit renders the root)',
        objects: [app],
      });
    }
    return out;
  },
};

export const HEALTH_RULES: readonly Rule[] = [waveHealth, selfTrackingApplication];
