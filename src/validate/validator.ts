import { createRequire } from 'node:module';
import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import * as patterns from './patterns';
import { PATTERNS_MODULE, re2Engine } from './patterns';
import { CORE_SCHEMA_ID, SchemaEntry, SchemaStore } from './schemas';
import { pruneNulls, hoistSubschemas, strictSchema } from './strict-schema';
import { CachedValidator, CompiledCache, fileFingerprint, FORMATS_MODULE, resolveCacheDir } from '../cache/compiled-cache';
import { moduleFolderDigest, packageDigest } from '../cache/digests';
import { isDnsLabel, isDnsSubdomain, LABEL_NAME, LABEL_VALUE } from '../model/k8s-syntax';
import { describeObject, Manifest, objectId, ValidationInput } from '../render/manifest';

/** One finding of the schema validation. */
export interface ValidationIssue {
  readonly severity: 'error' | 'warning';
  /** `Kind namespace/name` of the object. */
  readonly object: string;
  /** File the object came from, when validating a tree. */
  readonly source?: string;
  /** Field path inside the object (`spec.driver.enabeld`), empty for the whole object. */
  readonly path: string;
  readonly message: string;
}

export interface ValidatorOptions {
  /**
   * Namespaced objects must name their namespace (the rule for rendered output: nothing lands
   * in whatever namespace kubectl happens to default to). Upstream examples often omit it.
   * @default false
   */
  readonly requireNamespace?: boolean;

  /**
   * Folder where compiled validators are kept across processes (ajv standalone code, keyed by
   * the content of the schema files, of ajv's code and of the code of src/validate/ that
   * transforms the schemas), or false to compile in every process.
   * @default $GPU_CLUSTER_MANIFESTS_CACHE, else node_modules/.cache/gpu-cluster-manifests/ of the project
   */
  readonly cacheDir?: string | false;
}

const OBJECT_META = `${CORE_SCHEMA_ID}#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`;
/** Kinds whose names must be DNS-1123 labels rather than subdomains. */
const LABEL_NAMED_KINDS = new Set(['Namespace', 'Service']);
const INT32 = 2 ** 31;

/** OpenAPI formats the Kubernetes schemas use; cached validators import them by name. */
const FORMATS = {
  'int32': { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -INT32 && n < INT32 },
  'int64': { type: 'number', validate: (n: number) => Number.isInteger(n) },
  'date-time': /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i,
  'byte': /^[A-Za-z0-9+/]*={0,2}$/,
} as const;

/** What cached validators import besides the formats: the pattern engine. */
const CACHED_IMPORTS = { [PATTERNS_MODULE]: patterns };

/** ajv's compiler (some 60 modules) is loaded only when a schema has to be compiled: a warm cache never needs it. */
const requireLazily = createRequire(__filename);

function createAjv(emitStandaloneCode: boolean): Ajv {
  const { default: AjvClass, _ } = requireLazily('ajv') as typeof import('ajv');
  return new AjvClass({
    strict: false,
    allErrors: true,
    logger: false,
    validateSchema: false,
    // One function per hoisted subschema (see hoistSubschemas), compiled by V8 only when reached.
    inlineRefs: false,
    formats: FORMATS,
    // CRD patterns as the API server evaluates them: RE2, in linear time (src/validate/patterns.ts)
    // Standalone code is what the disk cache keeps; it imports the formats from FORMATS_MODULE, the engine from PATTERNS_MODULE.
    code: emitStandaloneCode ? { source: true, formats: _`require(${FORMATS_MODULE})`, regExp: re2Engine } : { regExp: re2Engine },
  });
}

function standaloneCode(ajv: Ajv, fn: ValidateFunction): string {
  return (requireLazily('ajv/dist/standalone') as typeof import('ajv/dist/standalone')).default(ajv, fn);
}

function fieldPath(instancePath: string): string {
  let out = '';
  for (const raw of instancePath.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^[0-9]+$/.test(seg)) out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out;
}

function join(p: string, key: string): string {
  return p ? `${p}.${key}` : key;
}

function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return 'prefix is not a DNS subdomain';
  if (name.length === 0 || name.length > 63 || !LABEL_NAME.test(name)) return 'name part must be 1-63 letters, digits, "-", "_", "."';
  return undefined;
}

/**
 * Strict validation of rendered objects against their upstream schemas. Each schema is compiled
 * once per process, on first use, and reused; compiled validators are also cached on disk (see
 * `cacheDir`), so a fresh process loads the large CRDs' validators instead of compiling them.
 */
export class ManifestValidator {
  private ajvInstance?: Ajv;
  private readonly cache?: CompiledCache;
  private readonly compiled = new Map<SchemaEntry, ValidateFunction>();
  private readonly fingerprints = new Map<string, string>();
  private codeDigest?: readonly string[];
  private readonly compiledCodeToSave = new Map<ValidateFunction, CachedValidator>();
  private coreAdded = false;

  constructor(readonly store: SchemaStore, private readonly options: ValidatorOptions = {}) {
    const cacheDir = resolveCacheDir(options.cacheDir);
    this.cache = cacheDir ? new CompiledCache(cacheDir) : undefined;
  }

  private get ajv(): Ajv {
    this.ajvInstance ??= createAjv(this.cache !== undefined);
    return this.ajvInstance;
  }

  private ensureCore(): boolean {
    if (this.coreAdded) return true;
    const core = this.store.core();
    if (!core) return false;
    this.ajv.addSchema(strictSchema(core) as object, CORE_SCHEMA_ID);
    this.coreAdded = true;
    return true;
  }

  private fingerprint(file: string): string {
    let fp = this.fingerprints.get(file);
    if (fp === undefined) {
      fp = fileFingerprint(file);
      this.fingerprints.set(file, fp);
    }
    return fp;
  }

  /**
   * Everything a compiled validator depends on, by content: its schema file, the core definitions,
   * the transforms, the validator's options and its pattern engine (this folder's code), the compiler (ajv's
   * code) and the engine's (re2js: a validator compiled for JavaScript's patterns is never found again).
   */
  private cacheKey(entry: SchemaEntry): string {
    this.codeDigest ??= [moduleFolderDigest(__filename), packageDigest('ajv'), packageDigest('re2js')];
    return this.cache!.key('validator', [
      this.codeDigest, entry.group, entry.version, entry.kind,
      this.fingerprint(entry.source), this.store.coreSources.map((f) => this.fingerprint(f)),
    ]);
  }

  /** The strict JSON Schema of one apiVersion/kind, as ajv compiles it. */
  private schemaFor(entry: SchemaEntry): object {
    const hasCore = this.ensureCore();
    if ('$ref' in entry.schema) return entry.schema;
    const strict = strictSchema(entry.schema) as Record<string, unknown>;
    const props = { ...(strict.properties as Record<string, unknown> | undefined) };
    // CRD schemas leave metadata open; validate it strictly as the API server does.
    if (hasCore) props.metadata = { $ref: OBJECT_META };
    props.apiVersion = { const: `${entry.group}/${entry.version}` };
    props.kind = { const: entry.kind };
    const required = [...new Set([...(strict.required as string[] ?? []), 'apiVersion', 'kind', 'metadata'])];
    return hoistSubschemas({ ...strict, properties: props, additionalProperties: false, required });
  }

  private validatorFor(entry: SchemaEntry): ValidateFunction {
    let fn = this.compiled.get(entry);
    if (fn) return fn;
    const key = this.cache ? this.cacheKey(entry) : undefined;
    let cached = key ? this.cache!.readValidator(key, FORMATS, CACHED_IMPORTS) : undefined;
    if (!cached) {
      fn = this.ajv.compile(this.schemaFor(entry));
      // Run what the next process will load (it is the same code), or the in-memory function
      // when the cache cannot be written.
      if (key && this.saveValidator(key, fn)) cached = this.cache!.readValidator(key, FORMATS, CACHED_IMPORTS);
    }
    if (cached) {
      fn = cached.validate;
      this.compiledCodeToSave.set(fn, cached);
    }
    this.compiled.set(entry, fn!);
    return fn!;
  }

  private saveValidator(key: string, fn: ValidateFunction): boolean {
    let source: string;
    try {
      source = standaloneCode(this.ajv, fn);
    } catch {
      return false; // a schema ajv cannot emit as standalone code is compiled in every process instead
    }
    this.cache!.writeValidator(key, source);
    return true;
  }

  /** Runs a validator; after its first run, V8's compiled code of it goes to the cache. */
  private run(fn: ValidateFunction, data: unknown): readonly ErrorObject[] {
    const valid = fn(data);
    const cached = this.compiledCodeToSave.get(fn);
    if (cached) {
      this.compiledCodeToSave.delete(fn);
      cached.saveCompiledCode();
    }
    return valid ? [] : fn.errors ?? [];
  }

  /** Validates one object. */
  validate(manifest: Manifest, source?: string): ValidationIssue[] {
    const object = manifest && typeof manifest === 'object' ? describeObject(manifest) : String(manifest);
    const issues: ValidationIssue[] = [];
    const error = (path: string, message: string) => issues.push({ severity: 'error', object, source, path, message });
    if (!manifest || typeof manifest !== 'object' || Array.isArray(manifest)) {
      error('', 'not a Kubernetes object (expected a mapping)');
      return issues;
    }
    if (typeof manifest.apiVersion !== 'string' || typeof manifest.kind !== 'string') {
      error('', 'apiVersion and kind are required');
      return issues;
    }
    const entry = this.store.lookup(manifest.apiVersion, manifest.kind);
    if (!entry) {
      error('', `no schema for ${manifest.apiVersion} ${manifest.kind} in ${this.store.dir} (unknown kind or API version)`);
      return issues;
    }
    if (!entry.served) error('apiVersion', `${manifest.apiVersion} ${manifest.kind} is not served by the CRD`);
    if (entry.deprecated) {
      issues.push({ severity: 'warning', object, source, path: 'apiVersion', message: `${manifest.apiVersion} ${manifest.kind} is deprecated upstream (${entry.source})` });
    }
    this.checkMetadata(manifest, entry, error);

    const errors = this.run(this.validatorFor(entry), pruneNulls(manifest));
    if (errors.length > 0) issues.push(...this.toIssues(errors, object, source));
    return issues;
  }

  private checkMetadata(m: Manifest, entry: SchemaEntry, error: (path: string, message: string) => void): void {
    const md = m.metadata;
    if (!md || typeof md !== 'object') return;
    const name = md.name;
    if (typeof name !== 'string' || name.length === 0) {
      if (typeof md.generateName !== 'string' || md.generateName.length === 0) error('metadata.name', 'required field is missing (or metadata.generateName)');
    } else if (LABEL_NAMED_KINDS.has(m.kind) ? !isDnsLabel(name) : !isDnsSubdomain(name)) {
      error('metadata.name', `"${name}" is not a valid ${LABEL_NAMED_KINDS.has(m.kind) ? 'DNS-1123 label' : 'DNS-1123 subdomain'}`);
    }
    if (entry.scope === 'Namespaced') {
      if (typeof md.namespace !== 'string' || md.namespace.length === 0) {
        if (this.options.requireNamespace) error('metadata.namespace', `${m.kind} is namespaced: metadata.namespace must be set explicitly`);
      } else if (!isDnsLabel(md.namespace)) {error('metadata.namespace', `"${md.namespace}" is not a valid namespace name`);}
    } else if (md.namespace !== undefined) {
      error('metadata.namespace', `${m.kind} is cluster-scoped: metadata.namespace must not be set`);
    }
    for (const [k, v] of Object.entries(md.labels ?? {})) {
      const p = labelKeyProblem(k);
      if (p) error(`metadata.labels.${k}`, `invalid label key: ${p}`);
      if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) error(`metadata.labels.${k}`, `invalid label value ${JSON.stringify(v)}`);
    }
    let annotationBytes = 0;
    for (const [k, v] of Object.entries(md.annotations ?? {})) {
      const p = labelKeyProblem(k);
      if (p) error(`metadata.annotations.${k}`, `invalid annotation key: ${p}`);
      annotationBytes += k.length + String(v).length;
    }
    if (annotationBytes > 256 * 1024) error('metadata.annotations', `annotations total ${annotationBytes} bytes, above the 262144-byte limit`);
  }

  private toIssues(errors: readonly ErrorObject[], object: string, source?: string): ValidationIssue[] {
    const out = new Map<string, ValidationIssue>();
    const pathsWithSpecific = new Set(errors.filter((e) => !['anyOf', 'oneOf', 'if'].includes(e.keyword)).map((e) => e.instancePath));
    for (const e of errors) {
      if (['anyOf', 'oneOf', 'if'].includes(e.keyword) && pathsWithSpecific.has(e.instancePath)) continue;
      let path = fieldPath(e.instancePath);
      let message: string;
      switch (e.keyword) {
        case 'additionalProperties':
          path = join(path, String((e.params as { additionalProperty: string }).additionalProperty));
          message = 'unknown field';
          break;
        case 'required':
          path = join(path, String((e.params as { missingProperty: string }).missingProperty));
          message = 'required field is missing';
          break;
        case 'enum':
          message = `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
          break;
        case 'const':
          message = `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
          break;
        default:
          message = e.message ?? e.keyword;
      }
      const key = `${path}\u0000${message}`;
      if (!out.has(key)) out.set(key, { severity: 'error', object, source, path, message });
    }
    return [...out.values()];
  }

  /** Validates a set of objects, and reports objects that appear twice. */
  validateAll(inputs: Iterable<ValidationInput>): ValidationIssue[] {
    const issues: ValidationIssue[] = [];
    const seen = new Map<string, string | undefined>();
    for (const { manifest, source } of inputs) {
      issues.push(...this.validate(manifest, source));
      if (manifest && typeof manifest === 'object' && manifest.metadata) {
        const id = objectId(manifest);
        if (seen.has(id)) {
          issues.push({
            severity: 'error',
            object: describeObject(manifest),
            source,
            path: '',
            message: `duplicate object (also in ${seen.get(id) ?? 'the same input'})`,
          });
        } else {
          seen.set(id, source);
        }
      }
    }
    return issues;
  }
}
