import { ClusterIndex } from './cluster-index';
import { isDynamoReleaseImage } from './dynamo';
import { ARGO } from './gitops';
import { Rule, Violation } from './rule';
import { mirroredRegistry, unmirrorImage } from '../model/mirrors';
import { FootprintObject, footprintOf, IMAGE_FIELDS, ImageCoordinates, imageObjects, imageRefsOf, objectImageRefs, RenderedSource } from '../upstream';
import { GPU_OPERATOR_CHART, NETWORK_OPERATOR_CHART, VENDORED_RELEASES, VendoredChart } from '../upstream/releases';

function show(c: ImageCoordinates): string {
  return IMAGE_FIELDS.filter((f) => c[f] !== undefined).map((f) => `${f}: ${c[f]}`).join(', ');
}

/** The default render of a pinned chart (its release's own objects), when rendered. */
function defaultsOf(index: ClusterIndex, chart: VendoredChart): RenderedSource | undefined {
  return index.renders?.defaults.find((r) => r.release === chart && r.problem === undefined);
}

/**
 * The comparison a custom resource of the tree needs and cannot have: its chart's default render failed
 * (the engine, the chart), or rendered no such resource. Fails closed: a render that serves a comparison
 * and fails is an error of the rule, never a skipped rule.
 */
function defaultsMissing(index: ClusterIndex, chart: VendoredChart, kind: string, group: string, has: (r: RenderedSource) => boolean): Violation[] {
  const crs = index.ofKind(kind, group);
  if (crs.length === 0 || !index.renders?.upstream) return [];
  const what = `${chart.chart} ${chart.version} chart`;
  const render = index.renders.defaults.find((r) => r.release === chart);
  const why = render === undefined ? `the ${what} was not rendered`
    : render.problem !== undefined ? `helm template of the ${what} with its default values fails: ${render.problem.message}`
      : !has(render) ? `helm template of the ${what} with its default values renders no ${kind === 'ClusterPolicy' ? 'ClusterPolicy' : 'image'}` : undefined;
  if (why === undefined) return [];
  return crs.map((cr) => ({ message: `cannot be compared with its release's images: ${why}`, objects: [cr] }));
}

const imageMatchesUpstream: Rule = {
  id: 'image-matches-upstream',
  severity: 'error',
  summary: 'every image field of the ClusterPolicy equals the one the pinned GPU Operator chart renders with its defaults; NicClusterPolicy spec.global names the registry and tag of the Network Operator release\'s images',
  check(index) {
    const out: Violation[] = [
      ...defaultsMissing(index, GPU_OPERATOR_CHART, 'ClusterPolicy', 'nvidia.com', (r) => r.objects.some((o) => o.kind === 'ClusterPolicy')),
      ...defaultsMissing(index, NETWORK_OPERATOR_CHART, 'NicClusterPolicy', 'mellanox.com', (r) => r.objects.some((o) => objectImageRefs(o).length > 0)),
    ];
    // an image read from a mirror (mirrors.images) is the upstream image it stands for
    const images = index.model?.description.mirrors.images ?? {};
    const upstreamOf = (f: string, v: string) => (f === 'repository' ? unmirrorImage(v, images) : v);
    const gpu = defaultsOf(index, GPU_OPERATOR_CHART);
    const chartPolicy = gpu?.objects.find((o) => o.kind === 'ClusterPolicy');
    if (gpu && chartPolicy) {
      const chart = `${GPU_OPERATOR_CHART.chart} ${GPU_OPERATOR_CHART.version} chart`;
      const defaults = new Map(imageObjects(chartPolicy.spec ?? {}, 'spec').map((x) => [x.path, x.value]));
      for (const cp of index.ofKind('ClusterPolicy', 'nvidia.com')) {
        for (const { path, value } of imageObjects(cp.spec ?? {}, 'spec')) {
          const d = defaults.get(path);
          if (!d) {
            out.push({ message: `${path} sets an image (${show(value)}) that the ${chart}'s ClusterPolicy does not set: there is no upstream default to pin it to`, objects: [cp] });
            continue;
          }
          for (const f of IMAGE_FIELDS) {
            const written = value[f];
            if (written === undefined) continue;
            const got = upstreamOf(f, written);
            if (d[f] === undefined) out.push({ message: `${path}.${f} is "${written}" but the ${chart}'s ClusterPolicy sets none there`, objects: [cp] });
            else if (got !== d[f]) out.push({ message: `${path}.${f} is "${written}"; the ${chart} renders "${d[f]}" (helm template with its default values)`, objects: [cp] });
          }
        }
      }
    }
    const net = defaultsOf(index, NETWORK_OPERATOR_CHART);
    const refs = net?.objects.flatMap((o) => objectImageRefs(o)) ?? [];
    // (a render without images is reported above: there is nothing to compare with)
    if (refs.length > 0) {
      const release = `${NETWORK_OPERATOR_CHART.chart} ${NETWORK_OPERATOR_CHART.version} chart`;
      for (const ncp of index.ofKind('NicClusterPolicy', 'mellanox.com')) {
        const g = ((ncp.spec ?? {}) as { global?: ImageCoordinates }).global ?? {};
        const repository = g.repository === undefined ? undefined : unmirrorImage(g.repository, images);
        if (repository === undefined || g.version === undefined) continue;
        const inRepo = refs.filter((r) => r.repository.startsWith(`${repository.replace(/\/+$/, '')}/`) && r.tag !== undefined);
        const tags = [...new Set(inRepo.map((r) => r.tag!))].sort();
        if (tags.length === 0) {
          const registries = [...new Set(refs.map((r) => r.repository.split('/').slice(0, -1).join('/')))].sort();
          out.push({ message: `spec.global.repository is "${g.repository}"; the ${release} renders no image from it (its images come from ${registries.join(', ')})`, objects: [ncp] });
        } else if (!tags.includes(g.version)) {
          out.push({ message: `spec.global.version is "${g.version}"; the ${release}'s images in ${g.repository} are tagged ${tags.join(', ')} (e.g. ${inRepo[0].repository}:${inRepo[0].tag})`, objects: [ncp] });
        }
      }
    }
    return out;
  },
};

/**
 * The image repositories the vendored releases ship, with the tags they ship them with: their renders, and the images
 * they publish beside their charts (Dynamo's runtime images).
 */
function releasedImages(index: ClusterIndex): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const release of VENDORED_RELEASES) {
    const published = release.type === 'helm' ? release.publishedImages ?? {} : {};
    for (const [repository, tags] of Object.entries(published)) out.set(repository, new Set(tags));
  }
  const renders = [...(index.renders?.sources ?? []).filter((r) => r.type !== 'folder'), ...(index.renders?.defaults ?? [])];
  for (const r of renders) {
    for (const ref of r.objects.flatMap((o) => objectImageRefs(o))) {
      if (ref.tag === undefined) continue;
      const tags = out.get(ref.repository) ?? new Set<string>();
      tags.add(ref.tag);
      out.set(ref.repository, tags);
    }
  }
  return out;
}

/** Kinds whose images image-matches-upstream compares with their chart's own. */
const IMAGE_CHECKED_KINDS = new Set(['ClusterPolicy', 'NicClusterPolicy']);

const releasedVersions: Rule = {
  id: 'released-versions',
  severity: 'error',
  summary: 'every pinned chart version and overlay tag has a vendored release (--upstream), and every image of a repository those releases ship carries a tag they ship',
  check(index) {
    if (!index.renders?.upstream) return [];
    const out: Violation[] = [];
    for (const r of index.renders.sources) {
      if (r.problem?.kind === 'unreleased') out.push({ message: r.problem.message, objects: [r.application] });
    }
    const released = releasedImages(index);
    // The operators' CRs are compared field by field with their chart (image-matches-upstream).
    for (const m of index.objects.filter((o) => !IMAGE_CHECKED_KINDS.has(o.kind))) {
      for (const ref of imageRefsOf(m)) {
        // a DynamoGraphDeployment's Dynamo images are held to the platform's release (dynamo-image-release)
        if (isDynamoReleaseImage(m, ref)) continue;
        const tags = released.get(unmirrorImage(ref.repository, index.model?.description.mirrors.images ?? {}));
        if (!tags || ref.tag === undefined || tags.has(ref.tag)) continue;
        out.push({
          message: `${ref.path} is ${ref.repository}:${ref.tag}; the vendored releases ship ${ref.repository} only as ${[...tags].sort().join(', ')}: pin a released tag`,
          objects: [m],
        });
      }
    }
    return out;
  },
};

const applicationRenders: Rule = {
  id: 'application-renders',
  severity: 'error',
  summary: 'every Application source renders with the real engines (helm template of the vendored chart with its values, kustomize build of the overlay or folder)',
  check(index) {
    return (index.renders?.sources ?? []).filter((r) => r.problem?.kind === 'failed')
      .map((r) => ({ message: `${r.what} does not render: ${r.problem!.message}`, objects: [r.application] }));
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

function exampleOf(objs: readonly FootprintObject[]): string {
  const names = [...new Set(objs.map((o) => `${o.kind}${o.name ? ` ${o.name}` : ''}`))];
  return names.slice(0, 2).join(', ') + (names.length > 2 ? ` and ${names.length - 2} more` : '');
}

function checkFootprint(index: ClusterIndex, r: RenderedSource, out: Violation[]): void {
  const app = r.application;
  const spec = (app.spec ?? {}) as { project?: string; syncPolicy?: { syncOptions?: string[] } };
  const project = index.ofKind('AppProject', ARGO).find((p) => p.metadata.name === spec.project);
  if (!project) return; // application-project reports Applications without their project
  const pspec = (project.spec ?? {}) as ProjectSpec;
  const objects = footprintOf(r, (apiVersion, kind) => index.scopeIn(apiVersion, kind));
  if ((spec.syncPolicy?.syncOptions ?? []).includes('CreateNamespace=true')) {
    objects.push({ apiVersion: 'v1', kind: 'Namespace', group: '', name: r.namespace, scope: 'Cluster', source: 'syncOptions CreateNamespace=true' });
  }
  const missingKinds = new Map<string, FootprintObject[]>();
  const missingNamespaces = new Map<string, FootprintObject[]>();
  const add = (map: Map<string, FootprintObject[]>, key: string, o: FootprintObject) => map.set(key, [...(map.get(key) ?? []), o]);
  for (const o of objects) {
    if ((o.scope ?? 'Cluster') === 'Cluster') {
      if (!listed(pspec.clusterResourceWhitelist, o.group, o.kind) || listed(pspec.clusterResourceBlacklist, o.group, o.kind)) {
        add(missingKinds, `${o.group === '' ? 'core' : o.group}/${o.kind}${o.scope ? '' : ' (scope unknown, counted as cluster-scoped)'}`, o);
      }
      continue;
    }
    const ns = o.namespace ?? r.namespace;
    const kindRefused = (pspec.namespaceResourceWhitelist !== undefined && !listed(pspec.namespaceResourceWhitelist, o.group, o.kind))
      || listed(pspec.namespaceResourceBlacklist, o.group, o.kind);
    if (!namespaceAllowed(pspec, ns)) add(missingNamespaces, ns, o);
    else if (kindRefused) add(missingKinds, `${o.group === '' ? 'core' : o.group}/${o.kind} (namespaced)`, o);
  }
  for (const [kind, objs] of missingKinds) {
    out.push({ message: `${r.what} creates ${kind}, e.g. ${exampleOf(objs)} (${objs[0].source}); AppProject ${project.metadata.name} does not permit that kind, so Argo CD refuses the whole sync`, objects: [app, project] });
  }
  for (const [ns, objs] of missingNamespaces) {
    out.push({ message: `${r.what} writes into namespace "${ns}" (${exampleOf(objs)}); AppProject ${project.metadata.name} has no destination for it, so Argo CD refuses the whole sync`, objects: [app, project] });
  }
}

const appProjectPermitsFootprint: Rule = {
  id: 'appproject-permits-install-footprint',
  severity: 'error',
  summary: 'the AppProject permits every namespace and kind a managed install creates, as helm template / kustomize build render it with the Application\'s values or patches',
  check(index) {
    const out: Violation[] = [];
    for (const r of index.renders?.sources ?? []) if (r.type !== 'folder' && r.problem === undefined) checkFootprint(index, r, out);
    return out;
  },
};

/** At most this many images are named in one message (then: `and N more`). */
const NAMED_IMAGES = 3;

/**
 * With mirrors.images, every image the cluster pulls comes from a mirror. synth rewrites what it renders itself (the
 * tree's objects), Argo CD's install (kustomize images) and the managed installs (the image fields of each chart's
 * default values, each overlay's kustomize images: components/gitops/managed-installs.ts); the renders here are built
 * with those values, so each image of a render that a mirrored registry still serves is named, by Application: one the
 * chart builds from no image value (a template's literal), a tree rendered before, or an Application edited by hand.
 * Images an operator picks at run time are in no render: the rule cannot see them (docs/components/argocd.md).
 */
const imageMirror: Rule = {
  id: 'image-mirror',
  severity: 'warning',
  summary: 'with mirrors.images, no object of the tree and no image an Application\'s chart or overlay renders is pulled from a registry mirrors.images maps',
  check(index) {
    const map = index.model?.description.mirrors.images ?? {};
    if (Object.keys(map).length === 0) return [];
    const out: Violation[] = [];
    const unmirrored = (o: object) => objectImageRefs(o).map((r) => `${r.repository}${r.tag ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`)
      .filter((ref) => mirroredRegistry(ref, map) !== undefined);
    const named = (refs: readonly string[]) => refs.slice(0, NAMED_IMAGES).map((ref) => `${ref} (${mirroredRegistry(ref, map)} -> ${map[mirroredRegistry(ref, map)!]})`).join(', ')
      + (refs.length > NAMED_IMAGES ? ` and ${refs.length - NAMED_IMAGES} more` : '');
    for (const m of index.objects) {
      const refs = [...new Set(unmirrored(m))].sort();
      if (refs.length > 0) out.push({ message: `pulls ${named(refs)} from the registry, not its mirror: render it again (synth pulls the images it renders from the mirrors)`, objects: [m] });
    }
    for (const r of (index.renders?.sources ?? []).filter((x) => x.type !== 'folder')) {
      const refs = [...new Set(r.objects.flatMap(unmirrored))].sort();
      if (refs.length === 0) continue;
      out.push({
        message: `(${r.what}) applies ${refs.length} image(s) from registries mirrors.images maps, not from their mirrors: ${named(refs)}. `
          + 'synth takes the images of a chart\'s default values and of an overlay\'s build from the mirrors: render the tree again, or (an image the chart sets '
          + 'from no value) have the nodes\' container runtime pull those registries from the mirror (containerd hosts.toml)',
        objects: [r.application],
      });
    }
    return out;
  },
};

/** The rules that need the engines' renders (`check` runs them; they report nothing without renders). */
export const UPSTREAM_RULES: readonly Rule[] = [applicationRenders, releasedVersions, imageMatchesUpstream, appProjectPermitsFootprint, imageMirror];

