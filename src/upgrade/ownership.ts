import { ComponentName, Finding } from './types';
import { apiGroup, Manifest } from '../render/manifest';

/** What one Argo CD Application applies at one end of the upgrade. */
export interface ApplicationObjects {
  readonly application: string;
  /** The namespace its namespaced objects without one land in (the destination's, or helm's). */
  readonly namespace: string;
  readonly objects: readonly Manifest[];
  /** Where they come from (`helm template gpu-operator v26.3.3`, `render gpu-operator/`). */
  readonly source: string;
  /** The component whose install or CRs it is, when it is one of the plan's. */
  readonly component?: ComponentName;
}

/** Whether a kind is cluster-scoped (undefined: unknown, taken from whether the object names a namespace). */
export type ClusterScoped = (apiVersion: string, kind: string) => boolean | undefined;

function identity(m: Manifest, namespace: string, clusterScoped: ClusterScoped): string {
  const scoped = clusterScoped(m.apiVersion, m.kind) ?? m.metadata.namespace === undefined;
  const ns = scoped ? '' : m.metadata.namespace ?? namespace;
  return `${apiGroup(m.apiVersion)}/${m.kind}/${ns ? `${ns}/` : ''}${m.metadata.name}`;
}

/**
 * Objects two Applications emit at the same end of the upgrade: Argo CD lets both apply it, each sync overwriting
 * the other's (SharedResourceWarning), and pruning by one removes what the other still wants. At the new release it
 * blocks; at the old one only, the upgrade ends it, and the plan says what happens on the way.
 */
export function ownership(
  label: { from: string; to: string }, from: readonly ApplicationObjects[], to: readonly ApplicationObjects[], clusterScoped: ClusterScoped,
): Finding[] {
  const owners = (apps: readonly ApplicationObjects[]) => {
    const out = new Map<string, { object: Manifest; apps: ApplicationObjects[] }>();
    for (const a of apps) {
      for (const m of a.objects) {
        const id = identity(m, a.namespace, clusterScoped);
        const entry = out.get(id) ?? { object: m, apps: [] };
        if (!entry.apps.some((x) => x.application === a.application)) entry.apps.push(a);
        out.set(id, entry);
      }
    }
    return new Map([...out].filter(([, e]) => e.apps.length > 1));
  };
  const before = owners(from);
  const after = owners(to);
  const out: Finding[] = [];
  const component = (apps: readonly ApplicationObjects[]): ComponentName | 'crds' => apps.find((a) => a.component)?.component ?? 'crds';
  for (const [id, { object, apps }] of [...after].sort(([x], [y]) => (x < y ? -1 : 1))) {
    out.push({
      section: 'ownership',
      type: 'two-owners',
      severity: 'blocker',
      component: component(apps),
      subject: `${object.kind} ${id.split('/').slice(2).join('/')}`,
      to: apps.map((a) => a.application),
      message: `at ${label.to}, ${apps.map((a) => `${a.application} (${a.source})`).join(' and ')} both apply it: each sync overwrites the other's (Argo CD: SharedResourceWarning), and a prune by one deletes what the other still applies`,
      files: apps.map((a) => a.source),
    });
  }
  for (const [id, { object, apps }] of [...before].sort(([x], [y]) => (x < y ? -1 : 1))) {
    if (after.has(id)) continue;
    const stays = to.filter((a) => a.objects.some((m) => identity(m, a.namespace, clusterScoped) === id)).map((a) => a.application);
    out.push({
      section: 'ownership',
      type: 'two-owners',
      severity: 'warning',
      component: component(apps),
      subject: `${object.kind} ${id.split('/').slice(2).join('/')}`,
      from: apps.map((a) => a.application),
      to: stays,
      message: `at ${label.from}, ${apps.map((a) => `${a.application} (${a.source})`).join(' and ')} both apply it (each sync overwrites the other's); `
        + (stays.length > 0 ? `at ${label.to} only ${stays.join(', ')} does: the upgrade ends the fight, and until the last of them synced the object flips between the two versions of it`
          : `at ${label.to} none does: Argo CD prunes it`),
      files: apps.map((a) => a.source),
    });
  }
  return out;
}
