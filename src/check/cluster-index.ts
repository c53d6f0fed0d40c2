import { parse as parseYaml } from 'yaml';
import { ClusterView, SchemaOf, ScopeOf } from './cluster-view';
import { isJsonObject } from '../json';
import { ClusterModel } from '../model/model';
import { apiGroup, Manifest } from '../render/manifest';
import type { ReadFile, TextFile } from '../render/tree';
import type { ClusterRenders, RenderedSource } from '../upstream/render';
import { CLUSTER_SCOPED_CORE } from '../validate/schemas';

type Json = Record<string, unknown>;

/** A pod template found inside a workload (or a Pod itself). */
export interface PodTemplate {
  /** Field path of the pod spec inside its object, e.g. `spec.mpiReplicaSpecs.Worker.template.spec`. */
  readonly path: string;
  /** Labels of the template (of the Pod, for a Pod). */
  readonly labels: Readonly<Record<string, string>>;
  readonly spec: PodSpecLike;
}

export interface ContainerLike {
  readonly name?: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly securityContext?: { readonly privileged?: boolean; readonly allowPrivilegeEscalation?: boolean };
  readonly resources?: { readonly requests?: Readonly<Record<string, unknown>>; readonly limits?: Readonly<Record<string, unknown>> };
}

export interface PodSpecLike {
  readonly containers: readonly ContainerLike[];
  readonly initContainers?: readonly ContainerLike[];
  readonly ephemeralContainers?: readonly ContainerLike[];
  readonly volumes?: readonly Json[];
}

/**
 * The kinds that carry a Kueue manager configuration Kueue reads (kueueConfigurations): the ConfigMap it mounts, the Helm
 * values of an Application or ApplicationSet that installs it, and a Configuration rendered as it is.
 */
const CONFIGURATION_HOLDERS = new Set(['ConfigMap', 'Application', 'ApplicationSet', 'Configuration']);
/** Argo CD kinds carry other objects' settings (Helm values), not pods of their own. */
const NOT_WORKLOADS = new Set(['Application', 'ApplicationSet', 'AppProject', 'ConfigMap', 'Secret', 'CustomResourceDefinition']);

/** API groups of the built-in kinds (the schema store knows them too; this answers without it). */
const BUILTIN_GROUP = /^(|apps|batch|policy|autoscaling|[a-z.]+\.k8s\.io)$/;

function builtinScope(apiVersion: string, kind: string): 'Namespaced' | 'Cluster' | undefined {
  if (!BUILTIN_GROUP.test(apiGroup(apiVersion))) return undefined;
  return CLUSTER_SCOPED_CORE.has(kind) ? 'Cluster' : 'Namespaced';
}

/** Every `template` with a pod spec inside an object (or the object itself, a Pod), with its field path. */
function findPodTemplates(m: Manifest): PodTemplate[] {
  const found: PodTemplate[] = [];
  const walk = (node: unknown, path: string) => {
    if (Array.isArray(node)) {
      node.forEach((v, i) => walk(v, `${path}[${i}]`));
      return;
    }
    if (!isJsonObject(node)) return;
    const spec = node.spec;
    if (isJsonObject(spec) && Array.isArray(spec.containers)) {
      const meta = isJsonObject(node.metadata) ? node.metadata : {};
      found.push({ path: path ? `${path}.spec` : 'spec', labels: (meta.labels ?? {}) as Record<string, string>, spec: spec as unknown as PodSpecLike });
      return;
    }
    for (const [k, v] of Object.entries(node)) if (k !== 'metadata' && k !== 'status') walk(v, path ? `${path}.${k}` : k);
  };
  walk(m, '');
  return found;
}

/** Every container of a pod spec: init, regular and ephemeral. */
export function allContainers(spec: PodSpecLike): ContainerLike[] {
  return [...(spec.initContainers ?? []), ...spec.containers, ...(spec.ephemeralContainers ?? [])];
}

/** Resource names a pod spec requests (requests or limits: a limit alone implies the request). */
export function requestedResources(spec: PodSpecLike): string[] {
  const names = new Set<string>();
  for (const c of allContainers(spec)) {
    for (const k of Object.keys(c.resources?.requests ?? {})) names.add(k);
    for (const k of Object.keys(c.resources?.limits ?? {})) names.add(k);
  }
  return [...names].sort();
}

/** Amount of one integer extended resource a pod requests (sum over its regular containers). */
export function requestedCount(spec: PodSpecLike, resource: string): number {
  let total = 0;
  for (const c of spec.containers) {
    const v = c.resources?.limits?.[resource] ?? c.resources?.requests?.[resource];
    if (v !== undefined) total += Number(v);
  }
  return total;
}

/** An object an Application applies that the rendered tree does not hold (a chart's or an overlay's). */
export interface InstallObject {
  readonly object: Manifest;
  /** The render it comes from (its Application, release, namespace). */
  readonly source: RenderedSource;
}

/**
 * The rendered objects of one cluster with the look-ups the rules share. Rules read it and never
 * change it.
 */
export class ClusterIndex {
  readonly name: string;
  readonly model?: ClusterModel;
  readonly objects: readonly Manifest[];
  readonly folders: readonly string[];
  /** For a tree read from disk: its folder, the files its objects were read from, and its other files as text. */
  readonly dir?: string;
  readonly files: readonly ReadFile[];
  readonly texts: readonly TextFile[];
  private readonly folderByObject = new Map<Manifest, string>();
  private installs?: InstallObject[];
  private crdScopes?: Map<string, 'Namespaced' | 'Cluster'>;
  private readonly byKind = new Map<string, Manifest[]>();
  private readonly byName = new Map<string, Map<unknown, Manifest[]>>();
  /** podTemplates per object: a dozen rules ask for them, and each walk visits the whole object. */
  private readonly templates = new Map<Manifest, readonly PodTemplate[]>();
  private configurations?: readonly { readonly owner: Manifest; readonly config: Json }[];

  /**
   * @param renders what the engines render for the cluster's Applications; rules that need it report nothing without it
   * @param schemaOf the schemas of kinds whose CRD the tree and the renders lack (the pinned CRDs)
   */
  constructor(view: ClusterView, readonly scopeOf?: ScopeOf, readonly renders?: ClusterRenders, readonly schemaOf?: SchemaOf) {
    this.name = view.name;
    this.model = view.model;
    this.dir = view.dir;
    this.files = view.folders.flatMap((f) => f.files ?? []);
    this.texts = view.texts ?? [];
    const all: Manifest[] = [];
    for (const f of view.folders) {
      for (const m of f.objects) {
        if (!isJsonObject(m) || typeof m.kind !== 'string') continue;
        all.push(m);
        this.folderByObject.set(m, f.folder);
        const list = this.byKind.get(m.kind) ?? [];
        list.push(m);
        this.byKind.set(m.kind, list);
      }
    }
    this.objects = all;
    this.folders = view.folders.filter((f) => f.objects.length > 0).map((f) => f.folder);
  }

  /**
   * The objects of every chart and git overlay the Applications install, as the engines render them
   * (namespaced objects without a namespace in their Application's destination namespace). Empty without renders.
   */
  installObjects(): InstallObject[] {
    this.installs ??= (this.renders?.sources ?? []).filter((r) => r.type !== 'folder').flatMap((source) => source.objects.map((object) => {
      if (object.metadata?.namespace !== undefined || this.scopeIn(object.apiVersion, object.kind) === 'Cluster') return { object, source };
      return { object: { ...object, metadata: { ...object.metadata, namespace: source.namespace } }, source };
    }));
    return this.installs;
  }

  /**
   * Scope of a kind: from the CRDs the tree and the installs create, then the schema store, then the core
   * kinds; undefined when nothing knows it.
   */
  scopeIn(apiVersion: string, kind: string): 'Namespaced' | 'Cluster' | undefined {
    if (!this.crdScopes) {
      const scopes = new Map<string, 'Namespaced' | 'Cluster'>();
      const crds = [...this.ofKind('CustomResourceDefinition'), ...(this.renders?.sources ?? []).flatMap((r) => r.objects.filter((o) => o.kind === 'CustomResourceDefinition'))];
      for (const crd of crds) {
        const spec = (crd.spec ?? {}) as { group?: string; names?: { kind?: string }; scope?: string };
        if (spec.scope === 'Namespaced' || spec.scope === 'Cluster') scopes.set(`${spec.group}/${spec.names?.kind}`, spec.scope);
      }
      for (const r of this.renders?.sources ?? []) for (const c of r.unrenderedCrds) scopes.set(`${c.group}/${c.kind}`, c.scope);
      this.crdScopes = scopes;
    }
    return this.crdScopes.get(`${apiGroup(apiVersion)}/${kind}`) ?? this.scopeOf?.(apiVersion, kind) ?? builtinScope(apiVersion, kind);
  }

  /** Objects of a kind, optionally of one API group. */
  ofKind(kind: string, group?: string): Manifest[] {
    const list = this.byKind.get(kind) ?? [];
    return group === undefined ? list : list.filter((m) => apiGroup(m.apiVersion) === group);
  }

  /** The first object of a kind with that name (in that namespace, when given): a look-up, not a scan (rules ask once per object). */
  find(kind: string, name: string, namespace?: string): Manifest | undefined {
    let names = this.byName.get(kind);
    if (!names) {
      names = new Map();
      for (const m of this.ofKind(kind)) {
        const list = names.get(m.metadata?.name) ?? [];
        list.push(m);
        names.set(m.metadata?.name, list);
      }
      this.byName.set(kind, names);
    }
    return names.get(name)?.find((m) => namespace === undefined || m.metadata.namespace === namespace);
  }

  folderOf(m: Manifest): string | undefined {
    return this.folderByObject.get(m);
  }

  /** Objects of one folder. */
  inFolder(folder: string): Manifest[] {
    return this.objects.filter((m) => this.folderByObject.get(m) === folder);
  }

  /** The pod templates of an object: the Pod itself, or every `template` with a pod spec inside it. */
  podTemplates(m: Manifest): readonly PodTemplate[] {
    let found = this.templates.get(m);
    if (!found) {
      found = NOT_WORKLOADS.has(m.kind) ? [] : findPodTemplates(m);
      this.templates.set(m, found);
    }
    return found;
  }

  /**
   * Kueue manager configurations (`config.kueue.x-k8s.io` `Configuration`) rendered where Kueue reads one
   * (CONFIGURATION_HOLDERS): in a ConfigMap, in an Argo CD Application's or ApplicationSet's Helm values (object or
   * embedded YAML string), or as it is. Other kinds are not searched (a CRD's or a workload's strings hold none Kueue
   * would read).
   */
  kueueConfigurations(): readonly { readonly owner: Manifest; readonly config: Json }[] {
    if (this.configurations) return this.configurations;
    const out: { owner: Manifest; config: Json }[] = [];
    for (const m of this.objects) {
      if (!CONFIGURATION_HOLDERS.has(m.kind)) continue;
      const walk = (node: unknown, depth: number) => {
        if (depth > 12) return;
        if (typeof node === 'string') {
          if (!node.includes('config.kueue.x-k8s.io')) return;
          try {
            walk(parseYaml(node), depth + 1);
          } catch {
            // not YAML: a string that merely mentions the group
          }
          return;
        }
        if (Array.isArray(node)) {
          for (const v of node) walk(v, depth + 1);
          return;
        }
        if (!isJsonObject(node)) return;
        if (node.kind === 'Configuration' && typeof node.apiVersion === 'string' && node.apiVersion.startsWith('config.kueue.x-k8s.io/')) {
          out.push({ owner: m, config: node });
          return;
        }
        for (const v of Object.values(node)) walk(v, depth + 1);
      };
      walk(m, 0);
    }
    this.configurations = out;
    return out;
  }

  /** Resource prefixes Kueue ignores (`resources.excludeResourcePrefixes` of the rendered configurations). */
  excludedResourcePrefixes(): string[] {
    return this.kueueConfigurations().flatMap(({ config }) => {
      const resources = config.resources;
      const list = isJsonObject(resources) ? resources.excludeResourcePrefixes : undefined;
      return Array.isArray(list) ? list.filter((p): p is string => typeof p === 'string') : [];
    });
  }
}
