import { PreflightFinding, PreflightRule } from './rule';
import { describeObject, fieldChanges, isTemplate } from './util';
import { CLUSTER_POLICY_FIELDS, DescribedField } from '../components/gpu-operator/cluster-policy';
import { ARGOCD_FIELD_MANAGER, ARGOCD_TRACKING_ANNOTATION, LABELS, MANAGED_BY } from '../model/names';
import { Manifest } from '../render/manifest';

/** Argo CD's tracking label (default) and annotation (tracking method annotation). */
const ARGOCD_INSTANCE_LABEL = 'app.kubernetes.io/instance';
const HELM_RELEASE = 'meta.helm.sh/release-name';

/** Who manages a live object, in words; undefined when it is ours (an earlier sync). */
function managerOf(live: Manifest): string | undefined {
  const labels = live.metadata.labels ?? {};
  const annotations = live.metadata.annotations ?? {};
  if (labels[LABELS.managedBy] === MANAGED_BY) return undefined;
  const owners = (live.metadata.ownerReferences as { kind?: string; name?: string; controller?: boolean }[] | undefined) ?? [];
  const controller = owners.find((o) => o.controller);
  if (controller) return `controller ${controller.kind} ${controller.name}`;
  if (annotations[HELM_RELEASE]) return `Helm release ${annotations[HELM_RELEASE]}`;
  if (labels[LABELS.managedBy]) return labels[LABELS.managedBy];
  const fields = (live.metadata.managedFields as { manager?: string }[] | undefined) ?? [];
  const managers = [...new Set(fields.map((f) => f.manager).filter((m): m is string => !!m && m !== ARGOCD_FIELD_MANAGER))];
  return managers.length > 0 ? managers.join(', ') : 'someone else (no manager recorded)';
}

/** Top-level fields that are not the object's content (identity, metadata, status). */
const SKIP = new Set(['apiVersion', 'kind', 'metadata', 'status']);

function contentOf(m: Manifest): Record<string, unknown> {
  return Object.fromEntries(Object.entries(m).filter(([k]) => !SKIP.has(k)));
}

/** The fields of a rendered kind the description decides, by kind. */
const DESCRIBED: Readonly<Record<string, readonly DescribedField[]>> = { ClusterPolicy: CLUSTER_POLICY_FIELDS };

const takeover: PreflightRule = {
  id: 'argocd-takeover',
  family: 'takeover',
  summary: 'a rendered object already exists, managed by someone else, with different content: the first sync takes it over and changes it',
  check: ({ rendered, state }) => {
    const out: PreflightFinding[] = [];
    for (const { folder, manifest: m } of rendered) {
      if (isTemplate(m)) continue;
      const live = state.find(m);
      if (!live) continue;
      const manager = managerOf(live);
      if (!manager) continue;
      const changes = fieldChanges(contentOf(m), contentOf(live)).map((c) => {
        // the description field that renders the live value instead, where there is one
        const described = (DESCRIBED[m.kind] ?? []).find((f) => f.path === c.path);
        const value = described?.keep(c.from);
        return value === undefined ? c : { ...c, keep: { field: described!.field, value } };
      });
      if (changes.length === 0) continue;
      const kept = changes.filter((c) => 'keep' in c).length;
      const controlled = manager.startsWith('controller ');
      const adopted = m.metadata.annotations?.['gpu-cluster.dev/adopted'] === 'true';
      out.push({
        rule: 'argocd-takeover',
        // A controller that owns the object reverts every change: Argo CD and it would fight forever.
        severity: controlled ? 'error' : 'warning',
        object: describeObject(live),
        message: `exists, managed by ${manager}; the first sync of ${folder}/ takes it over${adopted ? ' (adopted: never pruned)' : ''} and changes ${changes.length} field(s)`
          + `${kept > 0 ? `, ${kept} of them decided by the description` : ''}`,
        fix: controlled
          ? `leave ${describeObject(m)} to its controller: remove it from the description (or switch the controller off)`
          : `${kept > 0 ? 'set the description field named on a change to keep the cluster\'s value; ' : ''}`
            + `compare: kubectl get ${m.kind.toLowerCase()} ${m.metadata.namespace ? `-n ${m.metadata.namespace} ` : ''}${m.metadata.name} -o yaml; describe what must stay (fields the render does not set are kept)`,
        changes,
      });
    }
    return out;
  },
};

const prune: PreflightRule = {
  id: 'argocd-prune',
  family: 'takeover',
  summary: 'a live object is tracked by one of the rendered Applications but no longer rendered: Argo CD would prune (delete) it',
  check: ({ rendered, state, applications }) => {
    const apps = new Set(applications.values());
    const renderedIds = new Set(rendered.map((r) => `${r.manifest.kind}/${r.manifest.metadata.namespace ?? ''}/${r.manifest.metadata.name}`));
    const out: PreflightFinding[] = [];
    for (const live of state.objects) {
      const tracking = live.metadata.annotations?.[ARGOCD_TRACKING_ANNOTATION];
      const app = tracking ? tracking.split(':')[0] : live.metadata.labels?.[ARGOCD_INSTANCE_LABEL];
      if (!app || !apps.has(app) || renderedIds.has(`${live.kind}/${live.metadata.namespace ?? ''}/${live.metadata.name}`)) continue;
      out.push({
        rule: 'argocd-prune',
        severity: 'error',
        object: describeObject(live),
        message: `is tracked by Application ${app} but not in the render: a sync with prune deletes it`,
        fix: `describe it again, or untrack it first: kubectl ${live.metadata.namespace ? `-n ${live.metadata.namespace} ` : ''}`
          + `${tracking ? `annotate ${live.kind.toLowerCase()} ${live.metadata.name} ${ARGOCD_TRACKING_ANNOTATION}-` : `label ${live.kind.toLowerCase()} ${live.metadata.name} ${ARGOCD_INSTANCE_LABEL}-`}`,
      });
    }
    return out;
  },
};

export const TAKEOVER_RULES: readonly PreflightRule[] = [takeover, prune];
