import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { verifyPackagedAsset, verifyPackagedFolder } from '../cache/asset-sums';
import { CompiledCache, fileFingerprint, resolveCacheDir } from '../cache/compiled-cache';
import { moduleFolderDigest, packageDigest } from '../cache/digests';
import { InputError, printable } from '../errors';
import { decodeInput, describeIssues, InputFileError, inputFileProblem, parseInputYaml, readInputBytes } from '../input/read';
import { VERSIONS } from '../versions';
import { SchemaDirectoryMissing } from './schema-directory';

export { SchemaDirectoryMissing } from './schema-directory';

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
export const CLUSTER_SCOPED_CORE: ReadonlySet<string> = new Set([
  'Namespace', 'Node', 'PersistentVolume', 'StorageClass', 'ClusterRole', 'ClusterRoleBinding', 'PriorityClass',
  'CustomResourceDefinition', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'APIService',
  'CSIDriver', 'CSINode', 'RuntimeClass', 'IngressClass', 'VolumeAttachment', 'ComponentStatus',
  'CertificateSigningRequest', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'FlowSchema',
  'PriorityLevelConfiguration', 'StorageVersionMigration', 'DeviceClass', 'ClusterTrustBundle',
]);


/** A schema file that cannot be used: bad input naming the file. */
function brokenSchemaFile(file: string, why: string): InputError {
  return new InputError(`schema file ${printable(file)}: ${why}; it looks truncated or corrupted: re-export it (kubectl get crd -o yaml) or remove it from the schema folder`);
}

/**
 * The text of a schema file through the one input reader: a regular file (a FIFO, a device such as a link
 * to /dev/zero, a folder are refused before a byte is read), within the size limit of a schema file, UTF-8.
 */
function schemaText(file: string): string {
  try {
    return decodeInput(file, readInputBytes(file, 'schema'));
  } catch (e) {
    if (e instanceof InputFileError) throw new InputError(`schema file ${printable(file)}: ${describeIssues(e.issues)}`);
    throw e;
  }
}

/** The id under which the core definitions are registered with ajv. */
export const CORE_SCHEMA_ID = 'k8s-definitions.json';

function gvkKey(apiVersion: string, kind: string): string {
  return `${apiVersion}#${kind}`;
}

/** The files of a schema folder that are read: YAML and JSON. */
const isSchemaFileName = (name: string) => /\.(ya?ml|json)$/i.test(name);

function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      // links followed; what is not a folder is checked as a file when it is a schema file by name
      if (statSync(p, { throwIfNoEntry: false })?.isDirectory()) walk(p);
      else if (isSchemaFileName(name)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/**
 * CRD files of the releases this toolkit renders for, relative to a schema folder. Where a folder has
 * several files defining the same kind (../shared/crds has the DynamoGraphDeployment CRD of Dynamo
 * v1.4.0 and of a later main), the pinned file is read last and wins: objects are validated against
 * the CRD their typed import was generated from, not whichever file sorts last.
 */
const PINNED_CRD_FILES: readonly string[] = [VERSIONS.dynamo.graphDeploymentCrd];

/** `files` with the pinned CRD files moved to the end, the order otherwise kept. */
function pinnedLast(files: readonly string[]): string[] {
  const pinned = (f: string) => PINNED_CRD_FILES.some((p) => f.split(path.sep).join('/').endsWith(`/${p}`));
  return [...files.filter((f) => !pinned(f)), ...files.filter(pinned)];
}

/** Options of a schema store. */
export interface SchemaStoreOptions {
  /**
   * Folder where the CRDs of parsed YAML files are kept as JSON across processes (keyed by the
   * file's content and the code that parses it), or false to parse the YAML in every process.
   * @default $GPU_CLUSTER_MANIFESTS_CACHE, else node_modules/.cache/gpu-cluster-manifests/ of the project
   */
  readonly cacheDir?: string | false;
}

/** What the cached file index and parsed CRD files are derived by: this folder's code and js-yaml's. */
let parserDigest: readonly string[] | undefined;
const parser = (): readonly string[] => (parserDigest ??= [moduleFolderDigest(__filename), packageDigest('js-yaml')]);

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

/** Which file of a schema directory holds what, from a cheap text scan. */
interface FileIndex {
  /** Files of core definitions (`*definitions.json`). */
  readonly core: string[];
  /** group -> files that may define it. */
  readonly groups: Array<[string, string[]]>;
  /** CRD files whose group the scan could not tell. */
  readonly unindexed: string[];
}

/** One version of a kind a CRD file defines. */
type CrdVersion = Omit<SchemaEntry, 'source' | 'schema'>;

/** A kind of the core definitions and the definition that describes it. */
interface CoreKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly definition: string;
}

/** The kinds the core definitions serve (`x-kubernetes-group-version-kind` of object definitions), in definition order. */
function coreKinds(definitions: Record<string, unknown>): CoreKind[] {
  const kinds: CoreKind[] = [];
  for (const [definition, def] of Object.entries(definitions)) {
    const gvks = (def as { 'x-kubernetes-group-version-kind'?: Array<{ group: string; version: string; kind: string }> })['x-kubernetes-group-version-kind'];
    if (!gvks || !(def as { properties?: object }).properties) continue;
    for (const { group, version, kind } of gvks) kinds.push({ group, version, kind, definition });
  }
  return kinds;
}

function indexFiles(files: readonly string[]): FileIndex {
  const index: FileIndex = { core: [], groups: [], unindexed: [] };
  const groupFiles = new Map<string, string[]>();
  for (const f of files) {
    if (/definitions\.json$/i.test(f)) {
      index.core.push(f);
      continue;
    }
    const text = schemaText(f);
    if (!text.includes('CustomResourceDefinition')) continue;
    // `group:` of a CRD spec is the only `group:` at spec indentation; collect every candidate.
    const groups = new Set<string>();
    for (const m of text.matchAll(/^\s*"?group"?\s*:\s*"?([a-z0-9.-]+)"?\s*,?\s*$/gm)) groups.add(m[1]);
    if (groups.size === 0) index.unindexed.push(f);
    for (const g of groups) {
      const list = groupFiles.get(g) ?? [];
      list.push(f);
      groupFiles.set(g, list);
    }
  }
  index.groups.push(...groupFiles);
  return index;
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
    // before a file is fingerprinted or read: only regular files within the limit (a FIFO would hang, /dev/zero never end)
    for (const f of files) {
      const problem = inputFileProblem(f, 'schema');
      if (problem) throw new InputError(`${list.includes(f) ? '--schemas' : 'schema file'} ${printable(f)}: ${problem}`);
      // the package's own schemas: as shipped (its checksums), else the installation is damaged
      verifyPackagedAsset(f);
    }
    for (const dir of list) verifyPackagedFolder(dir, files, isSchemaFileName);
    const cacheDir = resolveCacheDir(options.cacheDir);
    return new SchemaStore(list.join(', '), files, cacheDir ? new CompiledCache(cacheDir) : undefined);
  }

  private readonly entries = new Map<string, SchemaEntry>();
  private readonly parsed = new Set<string>();
  private coreDefinitions?: Record<string, unknown>;
  private coreIndexed = false;
  /** Parsed CRD files. */
  private readonly crdFiles = new Map<string, CrdDocument[]>();
  private readonly coreFiles: string[] = [];
  /** group -> files that may define it (from a text scan). */
  private readonly groupFiles = new Map<string, string[]>();
  private readonly unindexed: string[] = [];

  private constructor(readonly dir: string, readonly files: readonly string[], private readonly cache?: CompiledCache) {
    // Scanning every file's text costs tens of milliseconds per process: cache the result.
    const key = cache?.key('schema-index', [parser(), files.map(fileFingerprint)]);
    const cached = key ? cache!.readJson<FileIndex>(key) : undefined;
    const index = cached ?? indexFiles(files);
    if (key && !cached) cache!.writeJson(key, index);
    this.coreFiles.push(...index.core);
    this.unindexed.push(...index.unindexed);
    for (const [group, list] of index.groups) this.groupFiles.set(group, pinnedLast(list));
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
      for (const f of this.coreFiles) {
        let definitions: unknown;
        try {
          definitions = (JSON.parse(schemaText(f)) as { definitions?: unknown }).definitions;
        } catch (e) {
          if (e instanceof InputError) throw e;
          throw brokenSchemaFile(f, e instanceof SyntaxError ? `invalid JSON (${e.message})` : String((e as Error).message));
        }
        if (definitions === null || typeof definitions !== 'object') throw brokenSchemaFile(f, 'no "definitions" object');
        Object.assign(merged, definitions);
      }
      this.coreDefinitions = { $id: CORE_SCHEMA_ID, definitions: merged };
    }
    this.indexCore();
    return this.coreDefinitions;
  }

  /**
   * Registers the core kinds. Which definition serves which kind is cached, so a process whose
   * validators come from the cache never parses the core definitions.
   */
  private indexCore(): void {
    if (this.coreIndexed || this.coreFiles.length === 0) return;
    this.coreIndexed = true;
    const key = this.cache?.key('core-kinds', [parser(), this.coreFiles.map(fileFingerprint)]);
    let kinds = key ? this.cache!.readJson<CoreKind[]>(key) : undefined;
    if (!kinds) {
      kinds = coreKinds((this.core()!.definitions ?? {}) as Record<string, unknown>);
      if (key) this.cache!.writeJson(key, kinds);
    }
    for (const { group, version, kind, definition } of kinds) {
      const apiVersion = group ? `${group}/${version}` : version;
      const gvk = gvkKey(apiVersion, kind);
      // Several definitions (e.g. meta DeleteOptions) claim many GVKs; keep the first, most specific one.
      if (this.entries.has(gvk)) continue;
      this.entries.set(gvk, {
        group,
        version,
        kind,
        scope: CLUSTER_SCOPED_CORE.has(kind) ? 'Cluster' : 'Namespaced',
        // Versions removed from Kubernetes are absent from the definitions (no schema: an error).
        deprecated: false,
        served: true,
        source: this.coreFiles[0],
        schema: { $ref: `${CORE_SCHEMA_ID}#/definitions/${definition}` },
      });
    }
  }

  /** The CustomResourceDefinitions of one file (YAML parsing is the slow part: cached as JSON). */
  private readCrds(f: string): CrdDocument[] {
    let crds = this.crdFiles.get(f);
    if (crds) return crds;
    const key = this.cache?.key('crds', [parser(), fileFingerprint(f)]);
    crds = key ? this.cache!.readJson<CrdDocument[]>(key) : undefined;
    if (!crds) {
      const text = schemaText(f);
      let docs: CrdDocument[];
      try {
        docs = (f.toLowerCase().endsWith('.json') ? [JSON.parse(text)] : parseInputYaml(f, text, 'schema', true)) as CrdDocument[];
      } catch (e) {
        // the reader's issues say what they are (invalid YAML, an alias bomb, nesting)
        throw brokenSchemaFile(f, e instanceof InputFileError ? describeIssues(e.issues) : `invalid JSON: ${((e as Error).message ?? '').split('\n')[0]}`);
      }
      const all = docs.flatMap((d) => (d?.kind === 'List' && Array.isArray(d.items) ? d.items : [d])).filter((d) => d?.kind === 'CustomResourceDefinition');
      all.forEach((d, i) => {
        const spec = d.spec;
        const missing = !spec ? 'spec' : typeof spec.group !== 'string' ? 'spec.group' : typeof spec.names?.kind !== 'string' ? 'spec.names.kind'
          : !Array.isArray(spec.versions) || spec.versions.length === 0 ? 'spec.versions'
            // name, served and storage are required in every version: one missing is a cut-off file
            : spec.versions.some((v) => typeof v?.name !== 'string' || typeof v.served !== 'boolean' || typeof (v as { storage?: unknown }).storage !== 'boolean')
              ? 'complete spec.versions (each needs name, served and storage)' : undefined;
        if (missing) throw brokenSchemaFile(f, `CustomResourceDefinition ${i + 1} of the file has no ${missing}`);
        const bare = spec!.versions.find((v) => v.served !== false && !v.schema?.openAPIV3Schema);
        if (bare) throw brokenSchemaFile(f, `version ${bare.name} of ${spec!.names.kind} has no schema.openAPIV3Schema`);
      });
      crds = all
        .map((d): CrdDocument => ({
          kind: d.kind,
          spec: {
            group: d.spec!.group,
            scope: d.spec!.scope,
            names: { kind: d.spec!.names.kind },
            versions: (d.spec!.versions ?? []).map((v) => ({ name: v.name, served: v.served, deprecated: v.deprecated, schema: v.schema })),
          },
        }));
      if (key) this.cache!.writeJson(key, crds);
    }
    this.crdFiles.set(f, crds);
    return crds;
  }

  /**
   * The kinds one file defines, without their schemas: what lookups need. Cached on its own, so a
   * process whose validators come from the cache reads a few hundred bytes per file, not the schemas.
   */
  private crdVersions(f: string): CrdVersion[] {
    const key = this.cache?.key('crd-versions', [parser(), fileFingerprint(f)]);
    const cached = key ? this.cache!.readJson<CrdVersion[]>(key) : undefined;
    if (cached) return cached;
    const versions = this.readCrds(f).flatMap(({ spec }) => (spec!.versions ?? [])
      .filter((v) => v.schema?.openAPIV3Schema)
      .map((v) => ({
        group: spec!.group,
        version: v.name,
        kind: spec!.names.kind,
        scope: spec!.scope,
        deprecated: v.deprecated === true,
        served: v.served !== false,
      })));
    if (key) this.cache!.writeJson(key, versions);
    return versions;
  }

  /** The openAPIV3Schema of one kind and version of a file. */
  private crdSchema(f: string, v: CrdVersion): Record<string, unknown> {
    for (const { spec } of this.readCrds(f)) {
      if (spec!.group !== v.group || spec!.names.kind !== v.kind) continue;
      const schema = spec!.versions.find((x) => x.name === v.version)?.schema?.openAPIV3Schema;
      if (schema) return schema;
    }
    throw new Error(`${f}: no schema for ${v.group}/${v.version} ${v.kind}`);
  }

  private parseFile(f: string): void {
    if (this.parsed.has(f)) return;
    this.parsed.add(f);
    for (const v of this.crdVersions(f)) {
      let schema: Record<string, unknown> | undefined;
      const load = () => (schema ??= this.crdSchema(f, v));
      this.entries.set(gvkKey(`${v.group}/${v.version}`, v.kind), {
        ...v,
        source: f,
        // Read on first use: a validator loaded from the cache never needs it.
        get schema() {
          return load();
        },
      });
    }
  }

  /** The schema of an apiVersion/kind, or undefined when the directory has none. */
  lookup(apiVersion: string, kind: string): SchemaEntry | undefined {
    const key = gvkKey(apiVersion, kind);
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
    if (!this.entries.has(key)) {
      if (group === '' || !group.includes('.') || group.endsWith('.k8s.io') && !this.groupFiles.has(group)) this.indexCore();
      for (const f of this.groupFiles.get(group) ?? []) this.parseFile(f);
      if (!this.entries.has(key)) for (const f of this.unindexed) this.parseFile(f);
      if (!this.entries.has(key)) this.indexCore();
    }
    return this.entries.get(key);
  }
}
