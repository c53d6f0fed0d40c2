import { Crd, crdKey } from './crd-diff';
import { crdStoreFiles } from './crd-sets';
import { apiGroup, describeObject, Manifest } from '../render/manifest';
import { celViolations, CelSchemaNode } from '../validate/cel';
import { withDefaults } from '../validate/defaults';
import { SchemaStore } from '../validate/schemas';
import { ManifestValidator } from '../validate/validator';

/** A custom resource of a render, and where it comes from. */
export interface RenderedCr {
  readonly object: Manifest;
  /** `render gpu-operator/clusterpolicy.cluster-policy.yaml`, `helm template gpu-operator v26.3.3`. */
  readonly source: string;
  /** The Argo CD Application that applies it (undefined: outside Argo CD). */
  readonly application?: string;
}

/** How a CR fares against a set of CRDs. */
export interface CrResult {
  readonly cr: RenderedCr;
  /** `valid`; `invalid` (problems say why); `no-crd` (the set has no CRD of its kind). */
  readonly outcome: 'valid' | 'invalid' | 'no-crd';
  readonly problems: readonly string[];
  /** The CRD file it was validated against. */
  readonly file?: string;
}

/**
 * Validates CRs against a set of CRDs as the API server does after the CRDs change: the CRD version of the object's
 * apiVersion (served), its defaults applied first (as on every read and write), then the strict structural schema
 * with the project's validator (unknown fields, types, required, bounds, patterns) and the version's CEL rules
 * with the project's CEL library (create-time rules; transition rules are skipped, as on create).
 */
export class CrdSetValidator {
  private readonly byKind: ReadonlyMap<string, Crd>;
  private validator?: ManifestValidator;

  constructor(
    private readonly crds: readonly Crd[], private readonly coreDefinitions: readonly string[], private readonly cacheDir: string | undefined,
  ) {
    this.byKind = new Map(crds.map((c) => [crdKey(c), c]));
  }

  /** The project's validator over these CRDs (written as files of the cache: its compiled validators are kept). */
  private get strict(): ManifestValidator {
    this.validator ??= new ManifestValidator(SchemaStore.open([...crdStoreFiles(this.crds, this.cacheDir), ...this.coreDefinitions]));
    return this.validator;
  }

  crdOf(m: Manifest): Crd | undefined {
    return this.byKind.get(`${apiGroup(m.apiVersion)}/${m.kind}`);
  }

  validate(cr: RenderedCr): CrResult {
    const crd = this.crdOf(cr.object);
    if (!crd) return { cr, outcome: 'no-crd', problems: [`no ${cr.object.kind} CRD`] };
    const version = cr.object.apiVersion.split('/')[1];
    const v = crd.versions.find((x) => x.name === version);
    if (!v || !v.served) return { cr, outcome: 'invalid', problems: [`apiVersion ${cr.object.apiVersion}: ${v ? 'not served' : 'no such version'} (versions: ${crd.versions.filter((x) => x.served).map((x) => x.name).join(', ')})`], file: crd.file };
    const defaulted = withDefaults(v.schema, cr.object);
    const problems = this.strict.validate(defaulted).filter((i) => i.severity === 'error').map((i) => `${i.path || '<root>'}: ${i.message}`);
    for (const c of celViolations((v.schema ?? {}) as CelSchemaNode, defaulted)) problems.push(`${c.path}: ${c.message} (CEL ${JSON.stringify(c.rule)})`);
    return { cr, outcome: problems.length === 0 ? 'valid' : 'invalid', problems: [...new Set(problems)].sort(), file: crd.file };
  }
}
