import { objectGuards } from './chart-facts';
import { RenderedCr } from './revalidate';
import { ComponentName, Finding } from './types';
import { setValueAt } from '../json';
import { HELM } from '../model/names';
import { clusterFate } from '../render/deletions';
import { apiGroup, Manifest } from '../render/manifest';

/** What one Argo CD Application applies at one end of the upgrade. */
export interface ApplicationObjects {
  readonly application: string;
  /**
   * That Application as rendered at this end, when known: its sync options and automated sync decide what Argo CD does
   * with an object it applies no more (render/deletions.ts clusterFate, judged in its context).
   */
  readonly app?: Manifest;
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
    // an object no Application applies any more is pruned as the Application that last applied it prunes (its own and
    // that Application's sync options, its automated sync), unless the cluster keeps it (a CRD, Prune=false)
    const fates = [...new Set(apps.map((a) => fateText(object, a, to)))];
    const fate = fates.length === 1 ? fates[0] : apps.map((a) => `as ${a.application} last applied it, ${fateText(object, a, to)}`).join('; ');
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
          : `at ${label.to} none does: ${fate}`),
      files: apps.map((a) => a.source),
    });
  }
  return out;
}

/**
 * What Argo CD does with an object the Application `a` applied and nothing applies at the new end, judged in that
 * Application's context as synth and diff judge an object that leaves dist/ (clusterFate with its FateContext): whether
 * the Application leaves too (`to` has none of its name), its sync options and automated sync.
 */
function fateText(object: Manifest, a: ApplicationObjects, to: readonly ApplicationObjects[]): string {
  const appLeaves = a.app !== undefined && !to.some((x) => x.application === a.application);
  const fate = clusterFate(object, { application: a.application, app: a.app, appLeaves });
  return fate.stays ? `it ${fate.stays}` : fate.note ?? 'Argo CD prunes it';
}

/** One end of a pre-installed operator's upgrade as helmOwnership reads it: its chart's render (and folder). */
export interface HelmSide {
  readonly version: string;
  readonly render: { readonly objects: readonly Manifest[] };
  readonly chartDir: string;
}

export interface HelmOwnershipInput {
  readonly component: ComponentName;
  /** The operator's Helm release (the cluster's, from its Deployment's annotations, else the chart's name) and its namespace. */
  readonly release: string;
  readonly namespace: string;
  readonly older: HelmSide;
  readonly newer: HelmSide;
  /** What the Applications of this description apply at the old and the new end. */
  readonly from: readonly ApplicationObjects[];
  readonly to: readonly ApplicationObjects[];
  readonly versions: { readonly from: string; readonly to: string };
  readonly waves: ReadonlyMap<string, number>;
  /** The cluster as read, when it was (--kubeconfig, --snapshot). */
  readonly live?: { readonly source: string; find(m: Manifest): Manifest | undefined };
  readonly chartFile: (side: HelmSide) => string;
}

/** What the owner's upgrade of a pre-installed operator must do so that Argo CD keeps what it adopted. */
export interface HelmOwnership {
  readonly findings: Finding[];
  /** The values that make the new chart let go of what an Application adopts (`clusterPolicy.deployCR: false`), and how `helm upgrade` sets them. */
  readonly letGo?: { readonly values: Record<string, unknown>; readonly set: string };
  /** Syncs before the operator's upgrade (the objects with helm.sh/resource-policy: keep). */
  readonly prepare: { readonly application: string; readonly wave: number; readonly what: string; readonly objects: RenderedCr[] }[];
  /** The `--set` values of the owner's upgrade (`clusterPolicy.deployCR=false`), and what Helm deletes on it. */
  readonly upgrade: { readonly sets: readonly string[]; readonly deletes: RenderedCr[] };
}

/** What the loss of an operator's own CR costs, for the message. */
const LOSS: Readonly<Record<string, string>> = {
  'nvidia.com/ClusterPolicy': 'the GPU Operator then removes every operand (device plugin, GFD, DCGM exporter, MIG manager, validator) from every GPU node until Argo CD recreates it',
  'mellanox.com/NicClusterPolicy': 'the Network Operator then removes the RDMA device plugin and every other NIC operand from the nodes until Argo CD recreates it',
};

const sameObject = (a: Manifest, b: Manifest) => apiGroup(a.apiVersion) === apiGroup(b.apiVersion) && a.kind === b.kind
  && a.metadata.name === b.metadata.name
  && (a.metadata.namespace === undefined || b.metadata.namespace === undefined || a.metadata.namespace === b.metadata.namespace);
const keeps = (m: Manifest | undefined) => m?.metadata.annotations?.[HELM.resourcePolicy] === HELM.keep;

/**
 * Two owners of one object: a pre-installed operator's Helm release renders it, and an Application of this description
 * adopts it (the GPU Operator chart's `cluster-policy`). Each `helm upgrade` writes the chart's copy over Argo CD's, and
 * one whose chart no longer renders it deletes it, unless the live object says `helm.sh/resource-policy: keep` (Helm
 * checks the live object before it deletes). The way out the upstream charts support: the value that stops the chart
 * rendering it (`clusterPolicy.deployCR=false` from GPU Operator v26.7), set in the upgrade only once the live object
 * carries the keep annotation (this toolkit renders it on what it adopts from a Helm release): in that order. Undefined
 * when the charts render nothing an Application applies.
 */
export function helmOwnership(input: HelmOwnershipInput): HelmOwnership | undefined {
  const { component, release, namespace, older, newer, versions, live } = input;
  const applier = (apps: readonly ApplicationObjects[], m: Manifest) => apps.find((a) => a.objects.some((o) => sameObject(o, m)));
  const shared = (side: HelmSide, apps: readonly ApplicationObjects[]) => side.render.objects.filter((o) => o.kind !== 'CustomResourceDefinition')
    .flatMap((o) => {
      const a = applier(apps, o);
      return a ? [{ object: o, app: a, rendered: a.objects.find((x) => sameObject(x, o))! }] : [];
    });
  const before = shared(older, input.from);
  const after = shared(newer, input.to);
  if (before.length === 0 && after.length === 0) return undefined;
  const helmRelease = `Helm release ${namespace}/${release}`;
  const name = (m: Manifest) => `${m.kind} ${m.metadata.namespace ? `${m.metadata.namespace}/` : ''}${m.metadata.name}`;
  const loss = (m: Manifest) => LOSS[`${apiGroup(m.apiVersion)}/${m.kind}`];
  const findings: Finding[] = [];
  const files = [input.chartFile(older), input.chartFile(newer)];
  for (const x of before) {
    findings.push({
      section: 'ownership',
      type: 'helm-owner',
      severity: 'warning',
      component,
      subject: name(x.object),
      from: [release, x.app.application],
      message: `at ${versions.from}, the ${helmRelease} (its chart at ${versions.from}) renders ${name(x.object)}, which ${x.app.application} (${x.app.source}) applies too: `
        + 'each helm upgrade of the release fights over it (Helm 3 writes the chart\'s copy over Argo CD\'s, and self-heal writes it back; Helm 4 applies server-side '
        + 'and fails on every field Argo CD owns, unless --force-conflicts), and an upgrade whose chart no longer renders it deletes it'
        + `${loss(x.object) ? ` (${loss(x.object)})` : ''}`,
      files: [files[0], x.app.source],
    });
  }
  // the new chart: the values that let go of each shared object
  const guards = after.map((x) => ({ ...x, guards: objectGuards(newer.chartDir, x.object.kind, x.object.metadata.name) }));
  const letGoAll = guards.length > 0 && guards.every((g) => g.guards.length > 0);
  const paths = [...new Set(guards.flatMap((g) => g.guards))].sort();
  const values: Record<string, unknown> = {};
  for (const p of paths) setValueAt(values, p, false);
  const set = paths.map((p) => `--set ${p}=false`).join(' ');
  const prepare: HelmOwnership['prepare'] = [];
  for (const g of guards) {
    if (g.guards.length === 0) {
      findings.push({
        section: 'ownership',
        type: 'helm-owner',
        severity: 'blocker',
        component,
        subject: name(g.object),
        to: [release, g.app.application],
        message: `at ${versions.to}, the chart renders ${name(g.object)} whatever its values, and ${g.app.application} applies it too: the ${helmRelease} and Argo CD keep `
          + 'overwriting each other: leave it to one of them (install the operator through this description, installs: managed, or stop adopting it)',
        files: [files[1], g.app.source],
      });
      continue;
    }
    const adoptedKeeps = keeps(applier(input.from, g.object)?.objects.find((o) => sameObject(o, g.object)));
    const liveKeeps = live ? keeps(live.find(g.object)) : false;
    const order = `upgrade the release with ${set} only once the live ${g.object.kind} carries ${HELM.resourcePolicy}: ${HELM.keep} (Helm deletes what its new chart no longer `
      + 'renders unless the live object says keep): in the other order it is deleted';
    const state = liveKeeps ? `${live!.source} shows it there`
      : adoptedKeeps ? `${g.app.application}'s render carries it: sync ${g.app.application} before the upgrade (the order's first step)`
        : `neither ${live ? live.source : 'the cluster'} nor ${g.app.application}'s render carries it: kubectl annotate ${g.object.kind.toLowerCase()} ${g.object.metadata.name} ${HELM.resourcePolicy}=${HELM.keep} first`;
    findings.push({
      section: 'ownership',
      type: 'helm-owner',
      severity: adoptedKeeps || liveKeeps ? 'warning' : 'blocker',
      component,
      subject: name(g.object),
      to: [g.app.application],
      message: `at ${versions.to}, the chart renders ${name(g.object)} unless ${paths.join(', ')} is false, and ${g.app.application} applies it: ${order}; ${state}`,
      files: [files[1], g.app.source],
    });
    if (!liveKeeps && adoptedKeeps) {
      const old = applier(input.from, g.object)!;
      const object = old.objects.find((o) => sameObject(o, g.object))!;
      prepare.push({
        application: old.application,
        wave: input.waves.get(old.application) ?? 0,
        what: `before the operator's upgrade: ${name(object)} with ${HELM.resourcePolicy}: ${HELM.keep}, as ${old.application} renders it now`,
        objects: [{ object, source: old.source, application: old.application }],
      });
    }
  }
  // what the upgrade deletes: what the old chart renders and the new one (with the advised values) does not, but what says keep by then
  const kept = (m: Manifest) => keeps(live?.find(m)) || prepare.some((p) => p.objects.some((o) => sameObject(o.object, m) && keeps(o.object)));
  const deletes = older.render.objects.filter((o) => o.kind !== 'CustomResourceDefinition' && !newer.render.objects.some((n) => sameObject(n, o)))
    .filter((o) => !live || live.find(o) !== undefined)
    .filter((o) => !kept(o))
    .map((object) => ({ object, source: files[0] }));
  return {
    findings,
    ...(letGoAll ? { letGo: { values, set } } : {}),
    prepare,
    upgrade: { sets: letGoAll ? paths.map((p) => `${p}=false`) : [], deletes },
  };
}
