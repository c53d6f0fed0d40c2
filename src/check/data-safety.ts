import { appliedBy } from './applied';
import { Rule, Violation } from './rule';
import { DATA_HOLDING_KINDS, DATA_SYNC_OPTIONS, holdsData, missingDataSyncOptions } from '../model/data-safety';
import { LABELS, ownSyncOptions, syncOptionValue } from '../model/names';
import { definedKind, describeObject } from '../render/manifest';

const kinds = DATA_HOLDING_KINDS.map((k) => k.kind).join(', ');

/**
 * A Namespace (with everything in it), a claim or a volume that leaves dist/ is pruned by Argo CD, and
 * deleted with its Application (resources finalizer): both must wait for a person to confirm.
 */
const dataPruneConfirm: Rule = {
  id: 'data-prune-confirm',
  severity: 'error',
  summary: `every ${kinds} carries ${LABELS.syncOptions} ${DATA_SYNC_OPTIONS.join(',')} (or false): Argo CD asks before it prunes or deletes data`,
  check(index) {
    const out: Violation[] = [];
    for (const m of index.objects) {
      if (!holdsData(m)) continue;
      const missing = missingDataSyncOptions(m.metadata.annotations?.[LABELS.syncOptions]);
      if (missing.length === 0) continue;
      out.push({
        message: `holds data but its ${LABELS.syncOptions} annotation lacks ${missing.join(' and ')} (or false): `
          + 'Argo CD would delete it, and everything in it, without asking when it leaves dist/ or its Application is deleted',
        objects: [m],
      });
    }
    return out;
  },
};

/** What Argo CD's own Application must never prune or delete (components/argocd/chart.ts ARGOCD_KEPT_SYNC_OPTIONS). */
const KEPT = ['Prune=false', 'Delete=false'];

/**
 * The Application that installs Argo CD itself (it applies the CRD of argoproj.io Applications) syncs what every other
 * Application depends on: its Namespace, pruned or deleted, takes Argo CD. Argo CD's CRDs would take every Application
 * with them, and through their resources finalizer every add-on of the cluster: Argo CD v3.5.1 sets no tracking
 * annotation on a CRD it applies and so never prunes one, but one that carries such an annotation (set by hand, kept
 * from another tool) is pruned like any object. Each must say Prune=false and Delete=false (a resource's own option
 * wins over its Application's), so that none of this rests on how the CRD came to be there.
 */
const argocdInstallKept: Rule = {
  id: 'argocd-install-kept',
  severity: 'error',
  summary: `the Application that installs Argo CD marks Argo CD's CRDs and Namespaces ${LABELS.syncOptions} ${KEPT.join(',')}: never pruned, never deleted with it`,
  check(index) {
    const out: Violation[] = [];
    for (const app of index.ofKind('Application', 'argoproj.io')) {
      const objects = appliedBy(index, app);
      const argoCrds = objects.filter((m) => definedKind(m)?.group === 'argoproj.io');
      if (!argoCrds.some((m) => definedKind(m)?.kind === 'Application')) continue;
      const kept = [...argoCrds, ...objects.filter((m) => m.kind === 'Namespace' && m.apiVersion === 'v1')];
      for (const m of kept) {
        // the first `KEY=` entry decides, as Argo CD reads it (names.ts syncOptionValue)
        const own = ownSyncOptions(m);
        const missing = KEPT.filter((o) => syncOptionValue(own, o.split('=')[0]) !== o.slice(o.indexOf('=') + 1));
        if (missing.length === 0) continue;
        out.push({
          message: `installs Argo CD, and ${describeObject(m)} lacks ${missing.join(' and ')} in its ${LABELS.syncOptions} annotation: a build that drops it `
            + (m.kind === 'Namespace' ? 'deletes Argo CD with everything in the namespace'
              : 'is kept only because Argo CD sets no tracking annotation on a CRD: one that carries it (set by hand, kept from another tool) is pruned, '
                + 'and with it every object of its kind, with the Applications every add-on they installed'),
          objects: [app, m],
        });
      }
    }
    return out;
  },
};

export const DATA_SAFETY_RULES: readonly Rule[] = [dataPruneConfirm, argocdInstallKept];
