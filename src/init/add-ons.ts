import { groupKindKey, isBuiltInGroup, isProvided, kindsDefinedBy, kindsDefinedByBases, parseProvides } from '../components/gitops/api-kinds';
import { printable } from '../errors';
import { setValueAt } from '../json';
import { ClusterDescription } from '../model/description';
import { parseDescription } from '../model/load';
import { buildModel } from '../model/model';
import { LABELS } from '../model/names';
import { PACKAGE_NAME } from '../paths';
import { argocdNamespaces } from '../preflight/argocd';
import { KUEUE_CONFIG_KEY, kueueFramework, liveFrameworks, liveKueueConfig, queuedFrameworks } from '../preflight/foreign-config';
import { crdFacts, KUEUE_CONFIG_NAMESPACE } from '../preflight/reads';
import { installBringing, renderWithout, runsAddOn } from '../preflight/remedies';
import { ClusterState } from '../preflight/state';
import { apiGroup, Manifest, RenderedCluster } from '../render/manifest';
import { renderCluster } from '../synth/render';

/** What the judge of the pre-installed add-ons changed or could not change. */
export interface AddOnJudgement {
  /** Comments by the dotted path of the field they explain (a field the judge set). */
  readonly comments: ReadonlyMap<string, string>;
  /** What needs a change of the cluster, for the file's header (`TODO(init): ...`). */
  readonly todos: readonly string[];
}

/** The most rounds of edit-and-render: each round's edits remove kinds, so the render settles in one or two. */
const MAX_ROUNDS = 4;

/**
 * Kinds the render needs from the cluster: custom kinds neither rendered as CRDs nor brought by a managed install, nor
 * by the bootstrap (a managed Argo CD's install brings its own CRDs).
 */
function neededKinds(folders: RenderedCluster['folders']): Map<string, Manifest> {
  const objects = folders.flatMap((f) => f.objects);
  const provided = [
    ...kindsDefinedBy(objects),
    ...kindsDefinedByBases(folders),
    ...objects.filter((m) => m.kind === 'Application').flatMap((a) => parseProvides(a.metadata.annotations?.[LABELS.provides])),
  ];
  const out = new Map<string, Manifest>();
  for (const m of objects) {
    const gk = { group: apiGroup(m.apiVersion), kind: m.kind };
    if (!isBuiltInGroup(gk.group) && !isProvided(gk, provided) && !out.has(groupKindKey(gk))) out.set(groupKindKey(gk), m);
  }
  return out;
}

/**
 * Judges every pre-installed add-on against what `description` renders, and edits `description` (plain data, in place)
 * until the render asks the cluster for nothing it lacks, never for a second copy of what it runs: a kind whose CRD the
 * cluster lacks is left out of the render where a description switch does that, its add-on installed here where the
 * cluster runs none of it, and written as a TODO otherwise (installing a CRD, an integration of the pre-installed Kueue:
 * changes to the cluster, which init does not make). The same remedies, in the same order, are preflight's fixes.
 */
export function judgeAddOns(state: ClusterState, description: Record<string, unknown>): AddOnJudgement {
  const comments = new Map<string, string>();
  const todos = new Set<string>();
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition').map(crdFacts).filter((c) => c !== undefined);
  const kueue = liveKueueConfig(state);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let d: ClusterDescription;
    try {
      d = parseDescription(structuredClone(description));
    } catch {
      break; // init validates the description it writes and reports what does not fit
    }
    const model = buildModel(d);
    const { folders } = renderCluster(model);
    const objects = folders.flatMap((f) => f.objects);
    const edits = new Map<string, unknown>();
    const edit = (fields: Readonly<Record<string, unknown>>, why: string) => {
      for (const [p, v] of Object.entries(fields)) {
        edits.set(p, v);
        comments.set(p, why);
      }
    };
    // Kinds the cluster has no CRD for (nothing can be told without CRDs: preflight says the state is incomplete).
    for (const [key, m] of crds.length === 0 ? [] : neededKinds(folders)) {
      const gk = { group: apiGroup(m.apiVersion), kind: m.kind };
      if (crds.some((c) => c.group === gk.group && c.kind === gk.kind)) continue;
      const without = renderWithout(d, gk);
      const install = installBringing(model, gk);
      if (without) {
        edit(without.edits, `the cluster serves no ${m.kind} (no CRD ${key}): left out, so the cluster lacks ${without.loses}`);
      } else if (install && d.installs[install.key] === 'preinstalled' && runsAddOn(state, install) === false) {
        edit({ [`installs.${install.key}`]: 'managed' }, `the cluster runs none of it (no CRD of ${install.provides.map(groupKindKey).join(', ')}): installed here`);
      } else {
        todos.add(`the cluster has no CRD for ${key}, which the render uses: install the operator that serves it (npx ${PACKAGE_NAME} preflight --config <this file> names the ways)`);
      }
    }
    // Integrations of the pre-installed Kueue the queued objects need.
    if (d.installs.kueue === 'preinstalled' && kueue?.config) {
      const { queued, needed } = queuedFrameworks(objects);
      const have = liveFrameworks(kueue.config);
      for (const framework of needed.filter((f) => !have.has(f))) {
        const kinds = [...new Set(queued.filter((m) => kueueFramework(m) === framework).map((m) => `${apiGroup(m.apiVersion)}/${m.kind}`))];
        const withouts = kinds.map((k) => renderWithout(d, { group: k.slice(0, k.indexOf('/')), kind: k.slice(k.indexOf('/') + 1) }));
        if (withouts.every((w) => w !== undefined)) {
          for (const w of withouts) edit(w.edits, `the pre-installed Kueue does not manage ${kinds.join(', ')} (integrations.frameworks lacks ${framework}): left out, so the cluster lacks ${w.loses}`);
        } else {
          todos.add(`the pre-installed Kueue lacks the integration ${framework} (${kinds.join(', ')} would run outside the quotas): add it to integrations.frameworks `
            + `(kubectl -n ${KUEUE_CONFIG_NAMESPACE} edit configmap ${printable(kueue.configMap.metadata.name)}, key ${KUEUE_CONFIG_KEY}) and restart Kueue`);
        }
      }
    }
    // An Argo CD the cluster runs in another namespace: kept (preflight argocd-present's first fix), never a second one beside it.
    const argocd = (argocdNamespaces(state) ?? []).map(printable);
    const elsewhere = argocd.filter((ns) => ns !== d.gitops.namespace);
    if (model.argocd === 'managed' && elsewhere.length > 0) {
      if (argocd.length === 1) {
        edit({ 'gitops.argocd': 'external', 'gitops.namespace': argocd[0] }, `the cluster runs an Argo CD (its Applications in ${argocd[0]}): kept as it is, `
          + 'the gitops objects in its namespace, never a second Argo CD beside it');
        todos.add(`the running Argo CD in ${argocd[0]} must carry the health checks the sync waves wait on in its argocd-cm: the cluster report says how (Bootstrap)`);
      } else {
        todos.add(`the cluster runs Applications in ${argocd.join(', ')}: set gitops.namespace to the Argo CD that syncs this cluster and gitops.argocd: external `
          + '(a second Argo CD would share the cluster-wide CRDs and roles)');
      }
    }
    if (edits.size === 0) break;
    for (const [p, v] of edits) setValueAt(description, p, v);
  }
  return { comments, todos: [...todos] };
}
