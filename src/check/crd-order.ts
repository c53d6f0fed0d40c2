import { arrival } from './argocd-sync';
import { ClusterIndex } from './cluster-index';
import { ARGO } from './gitops';
import { Rule, Violation } from './rule';
import { groupKindKey, groupKindOf } from '../components/gitops/api-kinds';
import { LABELS, skipsDryRunOnMissing, syncWave } from '../model/names';
import { apiGroup, definedKind, describeObject, Manifest } from '../render/manifest';
import { RenderedSource } from '../upstream';

/** Where a CRD comes from: the Application that installs it, and how. */
interface Provider {
  readonly application: Manifest;
  readonly what: string;
  /** Its operator applies it at run time (no sync applies it). */
  readonly atRunTime?: boolean;
}


/** Every CRD the Applications install (rendered, or brought otherwise), by `group/Kind`. */
function providers(sources: readonly RenderedSource[]): Map<string, Provider[]> {
  const out = new Map<string, Provider[]>();
  const add = (gk: string, p: Provider) => out.set(gk, [...(out.get(gk) ?? []), p]);
  for (const r of sources) {
    for (const crd of r.objects) {
      const defined = definedKind(crd);
      // Argo CD's own kinds are served before any Application syncs (whatever runs the Applications is Argo CD): the
      // Application that keeps a cluster's Argo CD in sync brings them again, it does not bring them first.
      if (defined && defined.group !== ARGO) add(groupKindKey(defined), { application: r.application, what: `${r.what}, CustomResourceDefinition ${crd.metadata.name}` });
    }
    for (const c of r.unrenderedCrds) {
      add(groupKindKey(c), c.from === 'operator' ? { application: r.application, what: `${r.what}, applied by its operator at run time`, atRunTime: true } : { application: r.application, what: `${r.what}, crds/` });
    }
  }
  return out;
}

/**
 * A custom resource whose CRD another Application installs must sync in a strictly later sync wave of the app-of-apps
 * than that Application (the root waits for each wave's Applications to be healthy before the next wave starts).
 * The Applications of one wave sync together: a CR of the same wave races its CRD, and
 * `SkipDryRunOnMissingResource=true` skips only its dry run, so its apply fails until the other sync has created the
 * CRD and converges through retries at best. An Application that syncs before its CRDs' Application never gets healthy,
 * and the waves stop there. CRDs the same Application renders are applied first by Argo CD itself (the CRD is part of
 * the sync: no dry run of the CR, CRDs before CRs); CRDs its operator applies at run time are not part of any sync.
 * Kinds no Application installs are served by the cluster already (pre-installed add-ons).
 */
const crdBeforeCr: Rule = {
  id: 'crd-before-cr',
  severity: 'error',
  summary: 'every custom resource an Application applies (rendered folders and charts alike) syncs in a strictly later wave than the Application that installs its CRD (SkipDryRunOnMissingResource does not order two syncs)',
  check(index: ClusterIndex) {
    const sources = index.renders?.sources ?? [];
    if (sources.length === 0) return [];
    const crds = providers(sources);
    const out: Violation[] = [];
    const seen = new Set<string>();
    for (const r of sources) {
      const app = r.application;
      if (apiGroup(app.apiVersion) !== ARGO) continue;
      for (const m of r.objects) {
        if (m.kind === 'CustomResourceDefinition') continue;
        const gk = groupKindKey(groupKindOf(m));
        const from = crds.get(gk) ?? [];
        const to = { application: app.metadata.name, wave: syncWave(app) };
        const timing = (p: Provider) => arrival({ ...p, application: p.application.metadata.name, wave: syncWave(p.application) }, to);
        if (from.length === 0 || from.some((p) => timing(p) === 'before')) continue;
        const earliest = from.reduce((a, b) => (syncWave(b.application) < syncWave(a.application) ? b : a));
        const [w, pw] = [syncWave(app), syncWave(earliest.application)];
        const key = `${app.metadata.name}/${gk}/${m.metadata.namespace ?? ''}/${m.metadata.name}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const fix = earliest.application === app
          ? 'apply it from an Application of a later wave (its operator creates the CRD at run time, after this sync has applied it)'
          : w === pw
            ? `give it a later sync-wave than ${pw}: the Applications of one wave sync together, so its apply races the CRD${skipsDryRunOnMissing(m, app) ? ' (SkipDryRunOnMissingResource=true skips only the dry run)' : ''}`
            : 'it must sync in a later wave (the app-of-apps waits for this wave to be healthy, which it never is without the CRD)';
        out.push({
          message: `(wave ${w}) applies ${describeObject(m)} (${gk}), whose CRD comes with Application ${earliest.application.metadata.name} (wave ${pw}; ${earliest.what}): ${fix}`,
          objects: [app, earliest.application],
        });
      }
    }
    return out;
  },
};

/** The volumes an object claims: the StorageClass each asks for (undefined: the default class). */
function claimsOf(m: Manifest): { path: string; className?: string }[] {
  const spec = (m.spec ?? {}) as Record<string, any>;
  const group = apiGroup(m.apiVersion);
  const out: { path: string; className?: string }[] = [];
  const claim = (path: string, pvc: Record<string, any> | undefined) => {
    // storageClassName "" asks for no class at all (a volume bound by hand)
    if (pvc && typeof pvc === 'object' && pvc.storageClassName !== '') out.push({ path, className: pvc.storageClassName });
  };
  if (group === '' && m.kind === 'PersistentVolumeClaim') claim('spec', spec);
  if (group === 'apps' && m.kind === 'StatefulSet') (spec.volumeClaimTemplates ?? []).forEach((t: any, i: number) => claim(`spec.volumeClaimTemplates[${i}].spec`, t?.spec));
  if (group === 'operator.victoriametrics.com') {
    // VMSingle: spec.storage is the claim's spec; VMAgent, VMAlertmanager: a claim template under spec.storage
    if (m.kind === 'VMSingle' && spec.storage) claim('spec.storage', spec.storage);
    if (spec.storage?.volumeClaimTemplate?.spec) claim('spec.storage.volumeClaimTemplate.spec', spec.storage.volumeClaimTemplate.spec);
  }
  return out;
}

/**
 * A volume claimed from a StorageClass that another Application brings (the default class and its provisioner,
 * when local-path-provisioner is managed) must be claimed after that Application: its pods stay Pending until
 * the class exists, its Application never gets healthy, and the app-of-apps never reaches the class's wave.
 */
const storageBeforeClaims: Rule = {
  id: 'storage-before-claims',
  severity: 'error',
  summary: 'every volume an Application claims comes from a StorageClass that is there before it: pre-installed, or synced by an Application of an earlier wave',
  check(index: ClusterIndex) {
    const sources = index.renders?.sources ?? [];
    const classes = sources.flatMap((r) => r.objects.filter((o) => o.kind === 'StorageClass' && apiGroup(o.apiVersion) === 'storage.k8s.io')
      .map((o) => ({ name: o.metadata.name, isDefault: o.metadata.annotations?.[LABELS.defaultStorageClass] === 'true', application: r.application })));
    const out: Violation[] = [];
    for (const r of sources) {
      for (const m of r.objects) {
        for (const c of claimsOf(m)) {
          const from = classes.find((k) => (c.className === undefined ? k.isDefault : k.name === c.className));
          if (!from || from.application === r.application || syncWave(r.application) > syncWave(from.application)) continue;
          const what = c.className === undefined ? `the default StorageClass ${from.name}` : `StorageClass ${from.name}`;
          out.push({
            message: `(wave ${syncWave(r.application)}) claims a volume of ${what} (${describeObject(m)} ${c.path}), which Application ${from.application.metadata.name} `
              + `brings in wave ${syncWave(from.application)}: the claim stays Pending, this Application never gets healthy and that wave never starts; sync it after`,
            objects: [r.application, from.application],
          });
        }
      }
    }
    return out;
  },
};

export const CRD_ORDER_RULES: readonly Rule[] = [crdBeforeCr, storageBeforeClaims];
