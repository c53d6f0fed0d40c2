import { parseSyncOptions, syncOptionValue } from './names';

/**
 * Kinds whose deletion loses data: a Namespace takes every claim, job and secret in it with it; a claim
 * or a volume takes its data. Argo CD must ask before it prunes or deletes one (DATA_SYNC_OPTIONS).
 */
export const DATA_HOLDING_KINDS: readonly { readonly group: string; readonly kind: string }[] = [
  { group: '', kind: 'Namespace' },
  { group: '', kind: 'PersistentVolumeClaim' },
  { group: '', kind: 'PersistentVolume' },
];

/**
 * Resource-level Argo CD sync options (v3.x documents both) of every object that holds data:
 * pruning it (it left dist/) and deleting it with its Application (the resources finalizer) both wait
 * until someone confirms in the UI or CLI, or sets `argocd.argoproj.io/deletion-approved` on the Application.
 */
export const DATA_SYNC_OPTIONS: readonly string[] = ['Prune=confirm', 'Delete=confirm'];

/** True when `m` is of a kind whose deletion loses data. */
export function holdsData(m: { readonly apiVersion: string; readonly kind: string }): boolean {
  const group = m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : '';
  return DATA_HOLDING_KINDS.some((k) => k.group === group && k.kind === m.kind);
}

/** How strongly a `Prune=`/`Delete=` value keeps an object: never (false) over ask first (confirm) over yes. */
const STRENGTH: Readonly<Record<string, number>> = { false: 2, confirm: 1 };
const strength = (value: string | undefined) => (value === undefined ? -1 : STRENGTH[value] ?? 0);

/**
 * Sync options `existing` (an annotation value) with `wanted` merged in: an option of the same key is
 * replaced, except that for `Prune` and `Delete` the stronger value stays (an adopted object's
 * `Prune=false` is never weakened to `confirm`). Options of other keys keep their order.
 */
export function mergeSyncOptions(existing: string | undefined, wanted: readonly string[]): string {
  const out = parseSyncOptions(existing);
  for (const option of wanted) {
    const [key, value] = [option.split('=')[0], option.slice(option.indexOf('=') + 1)];
    const at = out.findIndex((o) => o.split('=')[0] === key);
    if (at < 0) out.push(option);
    else if (!['Prune', 'Delete'].includes(key) || strength(value) > strength(out[at].slice(key.length + 1))) out[at] = option;
  }
  return out.join(',');
}

/**
 * The data-safety options an object's sync-options annotation lacks: for each of `Prune` and `Delete`,
 * the wanted option unless the object already has it or a stronger one (`false`).
 */
export function missingDataSyncOptions(annotation: string | undefined): string[] {
  const own = parseSyncOptions(annotation);
  return DATA_SYNC_OPTIONS.filter((option) => {
    const key = option.split('=')[0];
    // Argo CD reads the first `KEY=` entry only (names.ts syncOptionValue): a later `confirm` or `false` holds nothing.
    return strength(syncOptionValue(own, key)) < strength(option.slice(key.length + 1));
  });
}
