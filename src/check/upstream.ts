import { ClusterIndex } from './cluster-index';
import { applicationSources, ARGO } from './gitops';
import { Rule, Violation } from './rule';
import { apiGroup, Manifest } from '../render/manifest';
import { ApplicationSource, FootprintObject, IMAGE_FIELDS, ImageCoordinates, imageObjects, VendoredRelease } from '../upstream';
import { VERSIONS } from '../versions';


function show(c: ImageCoordinates): string {
  return IMAGE_FIELDS.filter((f) => c[f] !== undefined).map((f) => `${f}: ${c[f]}`).join(', ');
}

const imageMatchesUpstream: Rule = {
  id: 'image-matches-upstream',
  severity: 'error',
  summary: 'every image field of the ClusterPolicy (and NicClusterPolicy spec.global) equals the pinned chart\'s values.yaml default',
  check(index) {
    const upstream = index.upstream;
    if (!upstream) return [];
    const out: Violation[] = [];
    const chart = `gpu-operator ${VERSIONS.gpuOperator.version} chart`;
    const defaults = upstream.clusterPolicyImageDefaults();
    for (const cp of defaults ? index.ofKind('ClusterPolicy', 'nvidia.com') : []) {
      for (const { path, value } of imageObjects(cp.spec ?? {}, 'spec')) {
        const d = defaults![path];
        if (!d) {
          out.push({ message: `${path} sets an image (${show(value)}) that the ${chart}'s clusterpolicy.yaml does not fill from values.yaml: there is no upstream default to pin it to`, objects: [cp] });
          continue;
        }
        for (const f of IMAGE_FIELDS) {
          const got = value[f];
          if (got === undefined) continue;
          const want = d[f];
          const from = f === 'version' && d.versionFromAppVersion ? `values.yaml ${d.valuesPath}.version unset: the chart's appVersion` : `values.yaml ${d.valuesPath}.${f}`;
          if (want === undefined) out.push({ message: `${path}.${f} is "${got}" but the ${chart} has no default for it (${from})`, objects: [cp] });
          else if (got !== want) out.push({ message: `${path}.${f} is "${got}"; the ${chart}'s default is "${want}" (${from})`, objects: [cp] });
        }
      }
    }
    const global = upstream.nicClusterPolicyGlobalDefault();
    for (const ncp of global ? index.ofKind('NicClusterPolicy', 'mellanox.com') : []) {
      const g = ((ncp.spec ?? {}) as { global?: ImageCoordinates }).global ?? {};
      for (const f of ['repository', 'version'] as const) {
        if (g[f] !== undefined && g[f] !== global![f]) {
          out.push({ message: `spec.global.${f} is "${g[f]}"; the network-operator ${VERSIONS.networkOperator.version} chart's release images use "${global![f]}" (values.yaml ${global!.from})`, objects: [ncp] });
        }
      }
    }
    return out;
  },
};

interface ProjectSpec {
  readonly destinations?: readonly { readonly namespace?: string; readonly server?: string; readonly name?: string }[];
  readonly clusterResourceWhitelist?: readonly { readonly group?: string; readonly kind?: string }[];
  readonly clusterResourceBlacklist?: readonly { readonly group?: string; readonly kind?: string }[];
  readonly namespaceResourceWhitelist?: readonly { readonly group?: string; readonly kind?: string }[];
  readonly namespaceResourceBlacklist?: readonly { readonly group?: string; readonly kind?: string }[];
}

/** Argo CD's glob matching of project patterns (`*` and `?`, `!` negates). */
function glob(pattern: string | undefined, value: string): boolean {
  const p = pattern ?? '';
  const re = new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return re.test(value);
}

function listed(list: ProjectSpec['clusterResourceWhitelist'], group: string, kind: string): boolean {
  return (list ?? []).some((e) => glob(e.group, group) && glob(e.kind, kind));
}

/** Whether the project's destinations admit a namespace (negations deny, as in Argo CD). */
function namespaceAllowed(spec: ProjectSpec, namespace: string): boolean {
  const dests = spec.destinations ?? [];
  if (dests.some((d) => d.namespace?.startsWith('!') && glob(d.namespace.slice(1), namespace))) return false;
  return dests.some((d) => !d.namespace?.startsWith('!') && glob(d.namespace, namespace));
}

function describeRelease(r: VendoredRelease): string {
  return r.type === 'helm' ? `chart ${r.chart} ${r.version}` : `${r.repoURL.replace(/^https:\/\/github.com\//, '').replace(/\.git$/, '')}/${r.path} ${r.version}`;
}

function exampleOf(objs: readonly FootprintObject[]): string {
  const names = [...new Set(objs.map((o) => `${o.kind}${o.name ? ` ${o.name}` : ''} (${o.source})`))];
  return names.slice(0, 2).join(', ') + (names.length > 2 ? ` and ${names.length - 2} more` : '');
}

function checkApplication(index: ClusterIndex, app: Manifest, out: Violation[]): void {
  const upstream = index.upstream!;
  const spec = (app.spec ?? {}) as { project?: string; destination?: { namespace?: string }; syncPolicy?: { syncOptions?: string[] } };
  const project = index.ofKind('AppProject', ARGO).find((p) => p.metadata.name === spec.project);
  if (!project) return; // application-project reports Applications without their project
  const pspec = (project.spec ?? {}) as ProjectSpec;
  const destination = spec.destination?.namespace ?? '';
  for (const source of applicationSources<ApplicationSource>(app)) {
    const found = upstream.sourceFootprint(source, destination, app.metadata.name);
    if (!found?.footprint) continue;
    const what = describeRelease(found.release);
    for (const f of found.footprint.failures) out.push({ message: `${what} refuses these values: ${f}`, objects: [app] });
    const objects = [...found.footprint.objects];
    if ((spec.syncPolicy?.syncOptions ?? []).includes('CreateNamespace=true')) {
      objects.push({ apiVersion: 'v1', kind: 'Namespace', group: '', name: destination, scope: 'Cluster', source: 'syncOptions CreateNamespace=true' });
    }
    const missingKinds = new Map<string, FootprintObject[]>();
    const missingNamespaces = new Map<string, FootprintObject[]>();
    for (const o of objects) {
      const scope = o.scope ?? index.scopeOf?.(o.apiVersion, o.kind) ?? 'Cluster';
      if (scope === 'Cluster') {
        if (!listed(pspec.clusterResourceWhitelist, o.group, o.kind) || listed(pspec.clusterResourceBlacklist, o.group, o.kind)) {
          const key = `${o.group === '' ? 'core' : o.group}/${o.kind}${o.scope ? '' : ' (scope unknown, counted as cluster-scoped)'}`;
          missingKinds.set(key, [...(missingKinds.get(key) ?? []), o]);
        }
      } else {
        const ns = o.namespace ?? destination;
        const kindRefused = (pspec.namespaceResourceWhitelist !== undefined && !listed(pspec.namespaceResourceWhitelist, o.group, o.kind))
          || listed(pspec.namespaceResourceBlacklist, o.group, o.kind);
        if (!namespaceAllowed(pspec, ns)) missingNamespaces.set(ns, [...(missingNamespaces.get(ns) ?? []), o]);
        else if (kindRefused) missingKinds.set(`${o.group === '' ? 'core' : o.group}/${o.kind} (namespaced)`, [...(missingKinds.get(`${o.group}/${o.kind}`) ?? []), o]);
      }
    }
    for (const [kind, objs] of missingKinds) {
      out.push({ message: `${what} creates ${kind}, e.g. ${exampleOf(objs)}; AppProject ${project.metadata.name} does not permit that kind, so Argo CD refuses the whole sync`, objects: [app, project] });
    }
    for (const [ns, objs] of missingNamespaces) {
      out.push({ message: `${what} writes into namespace "${ns}" (${exampleOf(objs)}); AppProject ${project.metadata.name} has no destination for it, so Argo CD refuses the whole sync`, objects: [app, project] });
    }
  }
}

const appProjectPermitsFootprint: Rule = {
  id: 'appproject-permits-install-footprint',
  severity: 'error',
  summary: 'the AppProject permits every namespace and cluster-scoped kind a managed install creates (read from the vendored chart/overlay with its values)',
  check(index) {
    if (!index.upstream) return [];
    const out: Violation[] = [];
    for (const app of index.ofKind('Application', ARGO)) if (apiGroup(app.apiVersion) === ARGO) checkApplication(index, app, out);
    return out;
  },
};

export const UPSTREAM_RULES: readonly Rule[] = [imageMatchesUpstream, appProjectPermitsFootprint];
