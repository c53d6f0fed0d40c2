import { Rule, Violation } from './rule';
import { DATA_HOLDING_KINDS, DATA_SYNC_OPTIONS, holdsData, missingDataSyncOptions } from '../model/data-safety';
import { LABELS } from '../model/names';

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

export const DATA_SAFETY_RULES: readonly Rule[] = [dataPruneConfirm];
