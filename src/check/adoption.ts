import { ClusterIndex } from './cluster-index';
import { applicationSources, ARGO, folderOfPath } from './gitops';
import { Rule, Violation } from './rule';
import { ADOPTED_SYNC_OPTIONS, hasResourcesFinalizer, LABELS, ownSyncOptions, syncOptionsOf, syncOptionValue } from '../model/names';
import { Manifest } from '../render/manifest';

/** Applications that sync the rendered folder `folder`. */
function applicationsOf(index: ClusterIndex, folder: string): Manifest[] {
  return index.ofKind('Application', ARGO).filter((app) => {
    return applicationSources(app).some((s) => s.chart === undefined && typeof s.path === 'string' && folderOfPath(index, s.path)?.split('/')[0] === folder);
  });
}

/**
 * An adopted object (LABELS.adopted) was running before this toolkit: Argo CD must neither prune it when it
 * leaves the rendered tree (a rename) nor delete it when its Application goes (a renamed or removed folder,
 * whose Application carries the resources finalizer). A resource's own `Prune=`/`Delete=` sync option wins
 * over the Application's; without one, the Application's options decide, and an Application without the
 * resources finalizer deletes nothing.
 */
/** Every object Argo CD syncs, with the Applications that sync it: the rendered tree's (by their folder's) and the managed installs' (by theirs). */
function syncedObjects(index: ClusterIndex): { readonly m: Manifest; readonly apps: () => Manifest[] }[] {
  return [
    ...index.objects.map((m) => ({
      m,
      apps: () => {
        const folder = index.folderOf(m);
        return folder === undefined ? [] : applicationsOf(index, folder);
      },
    })),
    ...index.installObjects().map((i) => ({ m: i.object, apps: () => [i.source.application] })),
  ];
}

/**
 * Whether deleting the Applications that sync `m` spares it: its own `Delete=` sync option wins over theirs (Argo CD
 * reads the first `KEY=` entry of each list, model/names.ts syncOptionValue); without one, theirs decide, and an
 * Application without the resources finalizer deletes nothing.
 */
function sparedByCascade(m: Manifest, apps: readonly Manifest[]): boolean {
  const own = syncOptionValue(ownSyncOptions(m), 'Delete');
  if (own !== undefined) return own === 'false';
  return apps.length > 0 && apps.every((app) => syncOptionValue(syncOptionsOf(app), 'Delete') === 'false' || !hasResourcesFinalizer(app));
}

const adoptedNoCascadeDelete: Rule = {
  id: 'adopted-no-cascade-delete',
  severity: 'error',
  summary: `adopted objects (${LABELS.adopted}: "true") can be neither pruned nor deleted in cascade by Argo CD (${ADOPTED_SYNC_OPTIONS.join(',')})`,
  check(index) {
    const out: Violation[] = [];
    for (const { m, apps: appsOf } of syncedObjects(index)) {
      if (m.metadata.annotations?.[LABELS.adopted] !== 'true') continue;
      const apps = appsOf();
      const missing: string[] = [];
      // Argo CD reads the first `KEY=` entry of each list (model/names.ts syncOptionValue)
      const pruneOwn = syncOptionValue(ownSyncOptions(m), 'Prune');
      const pruneSafe = pruneOwn !== undefined
        ? pruneOwn === 'false'
        : apps.length > 0 && apps.every((app) => syncOptionValue(syncOptionsOf(app), 'Prune') === 'false');
      if (!pruneSafe) missing.push('Prune=false (a rename or removal from dist/ prunes it)');
      if (!sparedByCascade(m, apps)) {
        const cascading = apps.filter(hasResourcesFinalizer);
        missing.push(`Delete=false (${cascading.length > 0
          ? `deleting Application ${cascading.map((a) => a.metadata.name).join(', ')}, which carries the resources finalizer, deletes it`
          : 'an Application with the resources finalizer would delete it'})`);
      }
      if (missing.length === 0) continue;
      out.push({
        message: `is adopted (${LABELS.adopted}: "true") but its ${LABELS.syncOptions} annotation lacks ${missing.join(' and ')}`,
        objects: [m, ...apps],
      });
    }
    return out;
  },
};

const KUEUE = 'kueue.x-k8s.io';

/**
 * What a ClusterQueue that a cascading delete spares (an adopted one: Delete=false) still names must be spared too:
 * Kueue keeps a ResourceFlavor while a ClusterQueue names it, and a Topology while a flavor names it (their
 * `kueue.x-k8s.io/resource-in-use` finalizer; kueue v0.19.2 pkg/controller/core/resourceflavor_controller.go:106-121,
 * pkg/controller/tas/topology_controller.go:107-126). Deleted in the cascade, the flavor stays Terminating for ever,
 * the Application's cascade never ends (it waits for every object it deleted: seen on the twin, where a dropped
 * cluster's take-down never returned), and the kept queue is left naming a flavor that is going.
 */
const keptQueueFlavors: Rule = {
  id: 'kept-queue-flavors',
  severity: 'error',
  summary: 'the ResourceFlavors a ClusterQueue kept from cascading deletes names, and their Topologies, are kept too (Delete=false): Kueue holds what a queue uses',
  check(index) {
    const synced = syncedObjects(index).filter(({ m }) => m.apiVersion.startsWith(`${KUEUE}/`));
    const spared = (m: Manifest, apps: () => Manifest[]) => sparedByCascade(m, apps());
    const find = (kind: string, name: string) => synced.find(({ m }) => m.kind === kind && m.metadata.name === name);
    const out: Violation[] = [];
    const flagged = new Set<Manifest>();
    const flag = (held: { m: Manifest; apps: () => Manifest[] }, namedBy: string, queue: Manifest) => {
      if (flagged.has(held.m) || spared(held.m, held.apps)) return;
      flagged.add(held.m);
      const cascading = held.apps().filter(hasResourcesFinalizer).map((a) => a.metadata.name);
      out.push({
        message: `is named by ${namedBy}, and ClusterQueue ${queue.metadata.name} is spared by its Application's cascading delete (Delete=false); `
          + `deleting Application ${cascading.join(', ') || '(none)'} deletes this one, which Kueue keeps Terminating while the queue uses it `
          + `(finalizer kueue.x-k8s.io/resource-in-use): that cascade never ends. Give it ${LABELS.syncOptions} Delete=false as well`,
        objects: [held.m, queue, ...held.apps()],
      });
    };
    for (const cq of synced.filter(({ m, apps }) => m.kind === 'ClusterQueue' && spared(m, apps))) {
      const groups = ((cq.m.spec as { resourceGroups?: { flavors?: { name?: string }[] }[] } | undefined)?.resourceGroups) ?? [];
      for (const name of new Set(groups.flatMap((g) => (g.flavors ?? []).flatMap((f) => (typeof f.name === 'string' ? [f.name] : []))))) {
        const flavor = find('ResourceFlavor', name);
        if (flavor === undefined) continue; // clusterqueue-flavor's finding
        flag(flavor, `ClusterQueue ${cq.m.metadata.name}`, cq.m);
        const topology = (flavor.m.spec as { topologyName?: string } | undefined)?.topologyName;
        const held = topology === undefined ? undefined : find('Topology', topology);
        if (held !== undefined) flag(held, `ResourceFlavor ${name} (spec.topologyName)`, cq.m);
      }
    }
    return out;
  },
};

export const ADOPTION_RULES: readonly Rule[] = [adoptedNoCascadeDelete, keptQueueFlavors];
