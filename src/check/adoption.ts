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
const adoptedNoCascadeDelete: Rule = {
  id: 'adopted-no-cascade-delete',
  severity: 'error',
  summary: `adopted objects (${LABELS.adopted}: "true") can be neither pruned nor deleted in cascade by Argo CD (${ADOPTED_SYNC_OPTIONS.join(',')})`,
  check(index) {
    const out: Violation[] = [];
    // the rendered tree's objects (synced by their folder's Applications) and the managed installs' (by theirs)
    const candidates = [
      ...index.objects.map((m) => ({
        m,
        apps: () => {
          const folder = index.folderOf(m);
          return folder === undefined ? [] : applicationsOf(index, folder);
        },
      })),
      ...index.installObjects().map((i) => ({ m: i.object, apps: () => [i.source.application] })),
    ];
    for (const { m, apps: appsOf } of candidates) {
      if (m.metadata.annotations?.[LABELS.adopted] !== 'true') continue;
      const own = ownSyncOptions(m);
      const apps = appsOf();
      const missing: string[] = [];
      // Argo CD reads the first `KEY=` entry of each list (model/names.ts syncOptionValue)
      const pruneOwn = syncOptionValue(own, 'Prune');
      const deleteOwn = syncOptionValue(own, 'Delete');
      const pruneSafe = pruneOwn !== undefined
        ? pruneOwn === 'false'
        : apps.length > 0 && apps.every((app) => syncOptionValue(syncOptionsOf(app), 'Prune') === 'false');
      const deleteSafe = deleteOwn !== undefined
        ? deleteOwn === 'false'
        : apps.length > 0 && apps.every((app) => syncOptionValue(syncOptionsOf(app), 'Delete') === 'false'
          || !hasResourcesFinalizer(app));
      if (!pruneSafe) missing.push('Prune=false (a rename or removal from dist/ prunes it)');
      if (!deleteSafe) {
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

export const ADOPTION_RULES: readonly Rule[] = [adoptedNoCascadeDelete];
