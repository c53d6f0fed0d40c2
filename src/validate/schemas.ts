import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { loadAll } from 'js-yaml';
import { CompiledCache, fileFingerprint, resolveCacheDir } from './compiled-cache';

/** Where an apiVersion/kind's schema comes from. */
export interface SchemaEntry {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly scope: 'Namespaced' | 'Cluster';
  readonly deprecated: boolean;
  readonly served: boolean;
  /** File the schema was read from (for messages). */
  readonly source: string;
  /** A CRD version's openAPIV3Schema, or a `$ref` into the core definitions. */
  readonly schema: Record<string, unknown>;
}

/** Core (non-CRD) kinds that are cluster-scoped; every other core kind is namespaced. */
const CLUSTER_SCOPED_CORE = new Set([
  'Namespace', 'Node', 'PersistentVolume', 'StorageClass', 'ClusterRole', 'ClusterRoleBinding', 'PriorityClass',
  'CustomResourceDefinition', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'APIService',
  'CSIDriver', 'CSINode', 'RuntimeClass', 'IngressClass', 'VolumeAttachment', 'ComponentStatus',
  'CertificateSigningRequest', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'FlowSchema',
  'PriorityLevelConfiguration', 'StorageVersionMigration', 'DeviceClass', 'ClusterTrustBundle',
]);

/** A schema directory that does not exist (validation cannot run; callers report it plainly). */
export class SchemaDirectoryMissing extends Error {
  constructor(readonly dir: string) {
    super(`schema directory ${dir} does not exist: pass --schemas DIR (a folder of CRD YAML files and a *definitions.json of the core kinds)`);
    this.name = 'SchemaDirectoryMissing';
  }
}

/** The id under which the core definitions are registered with ajv. */
export const CORE_SCHEMA_ID = 'k8s-definitions.json';

function gvkKey(apiVersion: string, kind: string): string {
  return `${apiVersion}#${kind}`;
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ya?ml|json)$/i.test(name)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/** Options of a schema store. */
export interface SchemaStoreOptions {
  /**
   * Folder where the CRDs of parsed YAML files are kept as JSON across processes (keyed by the
   * file's path, size and mtime), or false to parse the YAML in every process.
   * @default $GPU_CLUSTER_MANIFESTS_CACHE, else node_modules/.cache/gpu-cluster-manifests/ of the project
   */
  readonly cacheDir?: string | false;
}

/** Version of the shape of cached parsed CRD files; bump when parseFile keeps other fields. */
const PARSED_FORMAT_VERSION = 1;

interface CrdDocument {
  kind?: string;
  items?: CrdDocument[];
  spec?: {
    group: string;
    scope: 'Namespaced' | 'Cluster';
    names: { kind: string };
    versions: Array<{ name: string; served: boolean; deprecated?: boolean; schema?: { openAPIV3Schema?: Record<string, unknown> } }>;
  };
}

/**
 * The upstream schemas of a schema directory: every CustomResourceDefinition in its YAML/JSON
 * files (including `kubectl get crd -o yaml` lists) and the core Kubernetes definitions
 * (`*definitions.json`, the cdk8s/kubeconform `{"definitions": ...}` shape).
 *
 * Files are read lazily: a cheap text scan tells which file defines which group, and a file is
 * parsed only when an object of that group is validated.
 */
export class SchemaStore {
  /** Opens one or more schema directories (or single files). Throws when one does not exist. */
  static open(dirs: string | readonly string[], options: SchemaStoreOptions = {}): SchemaStore {
    const list = typeof dirs === 'string' ? [dirs] : dirs;
    const files: string[] = [];
    for (const dir of list) {
      const st = statSync(dir, { throwIfNoEntry: false });
      if (!st) throw new SchemaDirectoryMissing(dir);
      files.push(...(st.isDirectory() ? listFiles(dir) : [dir]));
    }
    const cacheDir = resolveCacheDir(options.cacheDir);
    return new SchemaStore(list.join(', '), files, cacheDir ? new CompiledCache(cacheDir) : undefined);
  }

  private readonly entries = new Map<string, SchemaEntry>();
  private readonly parsed = new Set<string>();
  private coreDefinitions?: Record<string, unknown>;
  private readonly coreFiles: string[] = [];
  /** group -> files that may define it (from a text scan). */
  private readonly groupFiles = new Map<string, string[]>();
  private readonly unindexed: string[] = [];

  private constructor(readonly dir: string, readonly files: readonly string[], private readonly cache?: CompiledCache) {
    for (const f of files) {
      if (/definitions\.json$/i.test(f)) {
        this.coreFiles.push(f);
        continue;
      }
      const text = readFileSync(f, 'utf8');
      if (!text.includes('CustomResourceDefinition')) continue;
      // `group:` of a CRD spec is the only `group:` at spec indentation; collect every candidate.
      const groups = new Set<string>();
      for (const m of text.matchAll(/^\s*"?group"?\s*:\s*"?([a-z0-9.-]+)"?\s*,?\s*$/gm)) groups.add(m[1]);
      if (groups.size === 0) this.unindexed.push(f);
      for (const g of groups) {
        const list = this.groupFiles.get(g) ?? [];
        list.push(f);
        this.groupFiles.set(g, list);
      }
    }
  }

  /** The files the core definitions are read from. */
  get coreSources(): readonly string[] {
    return this.coreFiles;
  }

  /** True when the directory holds the core Kubernetes definitions. */
  get hasCoreDefinitions(): boolean {
    return this.coreFiles.length > 0;
  }

  /** The core definitions object (`{ definitions: {...} }`), loaded on first use. */
  core(): Record<string, unknown> | undefined {
    if (this.coreDefinitions === undefined && this.coreFiles.length > 0) {
      const merged: Record<string, unknown> = {};
      for (const f of this.coreFiles) Object.assign(merged, (JSON.parse(readFileSync(f, 'utf8')) as { definitions: object }).definitions);
      this.coreDefinitions = { $id: CORE_SCHEMA_ID, definitions: merged };
      for (const [name, def] of Object.entries(merged)) {
        const gvks = (def as { 'x-kubernetes-group-version-kind'?: Array<{ group: string; version: string; kind: string }> })['x-kubernetes-group-version-kind'];
        if (!gvks || !(def as { properties?: object }).properties) continue;
        for (const gvk of gvks) {
          const apiVersion = gvk.group ? `${gvk.group}/${gvk.version}` : gvk.version;
          const key = gvkKey(apiVersion, gvk.kind);
          // Several definitions (e.g. meta DeleteOptions) claim many GVKs; keep the first, most specific one.
          if (this.entries.has(key)) continue;
          this.entries.set(key, {
            group: gvk.group,
            version: gvk.version,
            kind: gvk.kind,
            scope: CLUSTER_SCOPED_CORE.has(gvk.kind) ? 'Cluster' : 'Namespaced',
            // Versions removed from Kubernetes are absent from the definitions (no schema: an error).
            deprecated: false,
            served: true,
            source: this.coreFiles[0],
            schema: { $ref: `${CORE_SCHEMA_ID}#/definitions/${name}` },
          });
        }
      }
    }
    return this.coreDefinitions;
  }

  /** The CustomResourceDefinitions of one file (YAML parsing is the slow part: cached as JSON). */
  private readCrds(f: string): CrdDocument[] {
    const key = this.cache?.key('crds', [PARSED_FORMAT_VERSION, fileFingerprint(f)]);
    const cached = key ? this.cache!.readJson<CrdDocument[]>(key) : undefined;
    if (cached) return cached;
    const text = readFileSync(f, 'utf8');
    const docs = (f.toLowerCase().endsWith('.json') ? [JSON.parse(text)] : loadAll(text)) as CrdDocument[];
    const crds = docs.flatMap((d) => (d?.kind === 'List' && Array.isArray(d.items) ? d.items : [d]))
      .filter((d) => d?.kind === 'CustomResourceDefinition' && d.spec)
      .map((d): CrdDocument => ({
        kind: d.kind,
        spec: {
          group: d.spec!.group, scope: d.spec!.scope, names: { kind: d.spec!.names.kind },
          versions: (d.spec!.versions ?? []).map((v) => ({ name: v.name, served: v.served, deprecated: v.deprecated, schema: v.schema })),
        },
      }));
    if (key) this.cache!.writeJson(key, crds);
    return crds;
  }

  private parseFile(f: string): void {
    if (this.parsed.has(f)) return;
    this.parsed.add(f);
    for (const crd of this.readCrds(f)) {
      const spec = crd.spec!;
      for (const v of spec.versions ?? []) {
        const schema = v.schema?.openAPIV3Schema;
        if (!schema) continue;
        const key = gvkKey(`${spec.group}/${v.name}`, spec.names.kind);
        this.entries.set(key, {
          group: spec.group, version: v.name, kind: spec.names.kind, scope: spec.scope,
          deprecated: v.deprecated === true, served: v.served !== false, source: f, schema,
        });
      }
    }
  }

  /** The schema of an apiVersion/kind, or undefined when the directory has none. */
  lookup(apiVersion: string, kind: string): SchemaEntry | undefined {
    const key = gvkKey(apiVersion, kind);
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
    if (!this.entries.has(key)) {
      if (group === '' || !group.includes('.') || group.endsWith('.k8s.io') && !this.groupFiles.has(group)) this.core();
      for (const f of this.groupFiles.get(group) ?? []) this.parseFile(f);
      if (!this.entries.has(key)) for (const f of this.unindexed) this.parseFile(f);
      if (!this.entries.has(key)) this.core();
    }
    return this.entries.get(key);
  }
}
