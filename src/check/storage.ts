import { ClusterIndex } from './cluster-index';
import { Rule, Violation } from './rule';
import { LABELS } from '../model/names';
import { Manifest } from '../render/manifest';

/** Whether a StorageClass carries the default-class annotation set to "true". */
export function isDefaultClass(sc: Manifest): boolean {
  return sc.metadata.annotations?.[LABELS.defaultStorageClass] === 'true';
}

const defaultStorageClass: Rule = {
  id: 'default-storage-class',
  severity: 'error',
  summary: 'exactly one StorageClass is the default (when any is rendered)',
  check(index) {
    const classes = index.ofKind('StorageClass', 'storage.k8s.io');
    if (classes.length === 0) return [];
    const defaults = classes.filter(isDefaultClass);
    if (defaults.length === 1) return [];
    return [{
      message: defaults.length === 0
        ? `none of the StorageClasses (${classes.map((c) => c.metadata.name).join(', ')}) is annotated ${LABELS.defaultStorageClass}: "true"; claims without a class stay Pending`
        : `${defaults.length} StorageClasses are annotated ${LABELS.defaultStorageClass}: "true"; exactly one may be`,
      objects: defaults.length === 0 ? classes : defaults,
    }];
  },
};

/** Every claim an object makes: a PVC's spec, StatefulSet volumeClaimTemplates, ephemeral volumes. */
function claims(index: ClusterIndex, m: Manifest): { readonly path: string; readonly storageClassName?: string | null }[] {
  type ClaimSpec = { storageClassName?: string | null };
  if (m.kind === 'PersistentVolumeClaim') return [{ path: 'spec.storageClassName', storageClassName: (m.spec as ClaimSpec | undefined)?.storageClassName }];
  const out: { path: string; storageClassName?: string | null }[] = [];
  const templates = (m.spec as { volumeClaimTemplates?: { spec?: ClaimSpec }[] } | undefined)?.volumeClaimTemplates ?? [];
  templates.forEach((t, i) => out.push({ path: `spec.volumeClaimTemplates[${i}].spec.storageClassName`, storageClassName: t.spec?.storageClassName }));
  for (const t of index.podTemplates(m)) {
    (t.spec.volumes ?? []).forEach((v, i) => {
      const eph = (v as { ephemeral?: { volumeClaimTemplate?: { spec?: ClaimSpec } } }).ephemeral;
      if (eph?.volumeClaimTemplate) {
        out.push({ path: `${t.path}.volumes[${i}].ephemeral.volumeClaimTemplate.spec.storageClassName`, storageClassName: eph.volumeClaimTemplate.spec?.storageClassName });
      }
    });
  }
  return out;
}

const claimStorageClass: Rule = {
  id: 'pvc-storage-class',
  severity: 'error',
  summary: 'every PVC and volumeClaimTemplate names a rendered StorageClass (or relies on the one default)',
  check(index) {
    const classes = index.ofKind('StorageClass', 'storage.k8s.io');
    const names = classes.map((c) => c.metadata.name);
    const defaults = classes.filter(isDefaultClass);
    const out: Violation[] = [];
    for (const m of index.objects) {
      for (const c of claims(index, m)) {
        // "" asks for no class (static binding to a PersistentVolume).
        if (c.storageClassName === '') continue;
        if (c.storageClassName === undefined || c.storageClassName === null) {
          if (classes.length > 0 && defaults.length === 0) {
            out.push({ message: `${c.path} is unset and no StorageClass is the default; the claim stays Pending`, objects: [m, ...classes] });
          }
          continue;
        }
        if (names.includes(c.storageClassName)) continue;
        out.push({
          message: `${c.path}: "${c.storageClassName}" is no rendered StorageClass (StorageClasses: ${names.join(', ') || 'none'})`,
          objects: [m],
        });
      }
    }
    return out;
  },
};

export const STORAGE_RULES: readonly Rule[] = [defaultStorageClass, claimStorageClass];
