import { ComponentName, Finding, FindingType, Severity } from './types';
import { appliedSize, CLIENT_SIDE_APPLY_LIMIT, GroupKind, groupKindKey } from '../components/gitops/api-kinds';
import { isJsonObject } from '../json';
import { crdStays } from '../render/deletions';
import { Manifest } from '../render/manifest';
import { celCompileError } from '../validate/cel';

type Json = Record<string, unknown>;

/** A structural schema node, as far as the comparison reads it. */
export interface SchemaNode {
  readonly 'type'?: string;
  readonly 'properties'?: Readonly<Record<string, SchemaNode>>;
  readonly 'items'?: SchemaNode;
  readonly 'additionalProperties'?: SchemaNode | boolean;
  readonly 'required'?: readonly string[];
  readonly 'default'?: unknown;
  readonly 'enum'?: readonly unknown[];
  readonly 'x-kubernetes-validations'?: readonly { readonly rule: string; readonly message?: string }[];
  readonly [key: string]: unknown;
}

/** One version of a CRD. */
export interface CrdVersion {
  readonly name: string;
  readonly served: boolean;
  readonly storage: boolean;
  readonly deprecated: boolean;
  readonly schema?: SchemaNode;
}

/** A CustomResourceDefinition as the plan compares it, with the file it was read from. */
export interface Crd {
  readonly name: string;
  readonly group: string;
  readonly kind: string;
  readonly scope: string;
  readonly versions: readonly CrdVersion[];
  /** status.storedVersions, when the file has it (a CRD exported from a cluster). */
  readonly storedVersions?: readonly string[];
  /** The file it was read from, as the plan names it. */
  readonly file: string;
  readonly object: Manifest;
}


/** The CRD of a parsed object; undefined for any other object or a CRD without group, kind or versions. */
export function crdOf(m: unknown, file: string): Crd | undefined {
  if (!isJsonObject(m) || m.kind !== 'CustomResourceDefinition' || !isJsonObject(m.spec)) return undefined;
  const spec = m.spec as Json & { group?: unknown; names?: { kind?: unknown }; scope?: unknown; versions?: unknown };
  if (typeof spec.group !== 'string' || typeof spec.names?.kind !== 'string' || !Array.isArray(spec.versions)) return undefined;
  const versions = spec.versions.filter(isJsonObject).map((v): CrdVersion => ({
    name: String(v.name),
    served: v.served !== false,
    storage: v.storage === true,
    deprecated: v.deprecated === true,
    schema: isJsonObject(v.schema) && isJsonObject((v.schema as Json).openAPIV3Schema) ? (v.schema as Json).openAPIV3Schema as SchemaNode : undefined,
  }));
  const status = isJsonObject(m.status) ? m.status : {};
  const stored = Array.isArray(status.storedVersions) ? status.storedVersions.map(String) : undefined;
  const name = isJsonObject(m.metadata) && typeof m.metadata.name === 'string' ? m.metadata.name : `${spec.group}/${spec.names.kind}`;
  return { name, group: spec.group, kind: spec.names.kind, scope: String(spec.scope ?? ''), versions, ...(stored ? { storedVersions: stored } : {}), file, object: m as unknown as Manifest };
}

/** `group/Kind`. */
export const crdKey: (c: GroupKind) => string = groupKindKey;

/** What the comparison of one CRD pair needs besides the pair. */
export interface DiffContext {
  readonly component: ComponentName | 'crds';
  /** Whether the Application that applies the new CRD does so server-side (a CRD past 262144 bytes needs it). */
  readonly serverSide?: boolean;
  /** Who applies the new CRD (for the size finding): an Application's name, or undefined when outside Argo CD. */
  readonly appliedBy?: string;
}

/** Stricter/relaxed comparison of one numeric bound: `lower` bounds (minimum...) tighten upwards, upper bounds downwards. */
const BOUNDS: readonly { readonly key: string; readonly lower: boolean }[] = [
  { key: 'minimum', lower: true }, { key: 'exclusiveMinimum', lower: true }, { key: 'minLength', lower: true },
  { key: 'minItems', lower: true }, { key: 'minProperties', lower: true },
  { key: 'maximum', lower: false }, { key: 'exclusiveMaximum', lower: false }, { key: 'maxLength', lower: false },
  { key: 'maxItems', lower: false }, { key: 'maxProperties', lower: false },
];

/** Attributes whose change alters what is accepted, without a direction that can be told: stricter to be safe. */
const SHAPE_KEYS = ['pattern', 'format', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type'] as const;

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const show = (v: unknown): string => (v === undefined ? 'unset' : JSON.stringify(v));

/** Every schema path under `node` (itself included): `a.b`, `a.list[]`, `a.map{}`. */
function pathsOf(node: SchemaNode, path: string, out: string[] = []): string[] {
  out.push(path);
  for (const [k, v] of Object.entries(node.properties ?? {})) pathsOf(v, join(path, k), out);
  if (node.items) pathsOf(node.items, `${path}[]`, out);
  if (isJsonObject(node.additionalProperties)) pathsOf(node.additionalProperties as SchemaNode, `${path}{}`, out);
  return out;
}

const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);

/** The type a node accepts: its `type`, or int-or-string. */
const typeOf = (n: SchemaNode): string | undefined => (n['x-kubernetes-int-or-string'] === true ? 'int-or-string' : n.type);

/**
 * The findings of one CRD version's schema change (from -> to), node by node: removed and added paths, type
 * changes, new requirements (with or without a default), stricter and relaxed validation, changed defaults, and
 * new CEL rules that do not compile.
 */
function diffSchema(from: SchemaNode, to: SchemaNode, finding: (f: Omit<Finding, 'section' | 'component' | 'files' | 'subject'>) => void): void {
  const walk = (a: SchemaNode, b: SchemaNode, path: string) => {
    const at = path || '<root>';
    const ta = typeOf(a);
    const tb = typeOf(b);
    if (ta !== undefined && tb !== undefined && ta !== tb) {
      finding({ type: 'type-changed', severity: 'blocker', path: at, from: ta, to: tb, message: `${at}: type ${ta} -> ${tb}: a stored value of the old type fails validation, and the operator reads it as the new type` });
    }
    // a change of what is accepted: stricter (a warning: objects valid before may not be) or relaxed
    const change = (stricter: boolean, kind: string, x: unknown, y: unknown, message: string) => finding({
      type: stricter ? 'stricter' : 'relaxed', severity: stricter ? 'warning' : 'info', path: at, change: kind, from: x, to: y, message: `${at}: ${message}`,
    });
    for (const { key, lower } of BOUNDS) {
      const x = a[key] as number | undefined;
      const y = b[key] as number | undefined;
      if (x === y) continue;
      change(lower ? (x === undefined || (y !== undefined && y > x)) : (x === undefined || (y !== undefined && y < x)), key, x, y, `${key} ${show(x)} -> ${show(y)}`);
    }
    if (!same(a.enum, b.enum)) {
      const x = a.enum;
      const y = b.enum;
      const dropped = x === undefined ? [] : x.filter((v) => !(y ?? []).some((w) => same(v, w)));
      change(y !== undefined && (x === undefined || dropped.length > 0), 'enum', x, y, x === undefined ? `values now limited to ${show(y)}` : y === undefined ? 'enum dropped (any value)'
        : dropped.length > 0 ? `enum shrunk, ${show(dropped)} no longer accepted` : `enum grew to ${show(y)}`);
    }
    for (const key of SHAPE_KEYS) {
      if (same(a[key], b[key])) continue;
      const list = key.startsWith('x-kubernetes-list') || key === 'x-kubernetes-map-type';
      const note = list ? ' (server-side apply merges the field differently: an atomic list is replaced whole, a set or map merged per item)' : '';
      change(!(b[key] === undefined && (key === 'pattern' || key === 'format')), list ? 'list-type' : key, a[key], b[key], `${key} ${show(a[key])} -> ${show(b[key])}${note}`);
    }
    if (a.nullable !== b.nullable && (a.nullable === true || b.nullable === true)) {
      change(a.nullable === true, 'nullable', a.nullable, b.nullable, `nullable ${show(a.nullable)} -> ${show(b.nullable)}`);
    }
    const pa = a['x-kubernetes-preserve-unknown-fields'] === true;
    const pb = b['x-kubernetes-preserve-unknown-fields'] === true;
    if (pa !== pb) {
      change(pa, 'preserve-unknown-fields', pa, pb, pa ? 'unknown fields no longer kept (the API server prunes what the schema does not name)' : 'unknown fields now kept');
    }
    const rulesA = (a['x-kubernetes-validations'] ?? []).map((r) => r.rule);
    for (const r of b['x-kubernetes-validations'] ?? []) {
      if (rulesA.includes(r.rule)) continue;
      change(true, 'cel', undefined, r.rule, `new CEL rule ${show(r.rule)}${r.message ? ` (${show(r.message)})` : ''}`);
      const error = celCompileError(r.rule);
      if (error) finding({ type: 'cel-compile-error', severity: 'blocker', path: at, to: r.rule, message: `${at}: the new CEL rule ${show(r.rule)} does not compile: ${error}` });
    }
    const rulesB = (b['x-kubernetes-validations'] ?? []).map((r) => r.rule);
    for (const r of rulesA) {
      if (!rulesB.includes(r)) change(false, 'cel', r, undefined, `CEL rule ${show(r)} dropped`);
    }
    if (!same(a.default, b.default) && a.default !== undefined && b.default !== undefined) {
      finding({ type: 'default-changed', severity: 'warning', path: at, from: a.default, to: b.default, message: `${at}: default ${show(a.default)} -> ${show(b.default)}: objects that leave it unset change meaning` });
    }
    const reqA = new Set(a.required ?? []);
    const reqB = new Set(b.required ?? []);
    const dropped = [...reqA].filter((r) => !reqB.has(r)).sort();
    if (dropped.length > 0) {
      change(false, 'required', dropped, undefined, `${dropped.join(', ')} no longer required`);
    }
    for (const r of [...reqB].filter((x) => !reqA.has(x)).sort()) {
      const child = b.properties?.[r];
      const p = join(path, r);
      if (child?.default !== undefined) {
        finding({ type: 'required-added-defaulted', severity: 'info', path: p, to: child.default, message: `${p}: newly required, defaulted to ${show(child.default)}: objects without it get the default (safe)` });
      } else {
        finding({ type: 'required-added-no-default', severity: 'blocker', path: p, message: `${p}: newly required, without a default: every object without it fails validation on its next update` });
      }
    }
    const propsA = a.properties ?? {};
    const propsB = b.properties ?? {};
    for (const k of Object.keys(propsA).sort()) {
      if (k in propsB) {walk(propsA[k], propsB[k], join(path, k));} else if (b['x-kubernetes-preserve-unknown-fields'] !== true) {
        for (const p of pathsOf(propsA[k], join(path, k))) {
          finding({ type: 'field-removed', severity: 'blocker', path: p, message: `${p}: removed: the API server prunes it from stored objects (the value is lost) and refuses objects that set it` });
        }
      }
    }
    for (const k of Object.keys(propsB).sort()) {
      if (k in propsA) continue;
      for (const p of pathsOf(propsB[k], join(path, k))) finding({ type: 'field-added', severity: 'info', path: p, message: `${p}: added` });
    }
    if (a.items && b.items) {walk(a.items, b.items, `${path}[]`);} else if (a.items && !b.items && b.type !== 'array') { /* the type change says it */ } else if (!a.items && b.items) {
      for (const p of pathsOf(b.items, `${path}[]`)) finding({ type: 'field-added', severity: 'info', path: p, message: `${p}: added` });
    }
    const apA = isJsonObject(a.additionalProperties) ? a.additionalProperties as SchemaNode : undefined;
    const apB = isJsonObject(b.additionalProperties) ? b.additionalProperties as SchemaNode : undefined;
    if (apA && apB) walk(apA, apB, `${path}{}`);
    else if (!apA && apB) for (const p of pathsOf(apB, `${path}{}`)) finding({ type: 'field-added', severity: 'info', path: p, message: `${p}: added` });
  };
  walk(from, to, '');
}

/** Findings of a CRD present at both ends, version by version. */
export function diffCrd(from: Crd, to: Crd, ctx: DiffContext): Finding[] {
  const out: Finding[] = [];
  const files = [...new Set([from.file, to.file])];
  const add = (subject: string, f: Pick<Finding, 'type' | 'severity' | 'message' | 'path' | 'change' | 'from' | 'to'>) => {
    out.push({ section: 'crd-changes', component: ctx.component, subject, files, ...f });
  };
  const crd = `CRD ${to.name}`;
  if (from.scope !== to.scope) {
    add(crd, { type: 'scope-changed', severity: 'blocker', from: from.scope, to: to.scope, message: `scope ${from.scope} -> ${to.scope}: every object must be deleted and created again` });
  }
  // What the cluster has stored: status.storedVersions where the file shows it, else the old storage version.
  const stored = from.storedVersions ?? from.versions.filter((v) => v.storage).map((v) => v.name);
  for (const v of from.versions) {
    const w = to.versions.find((x) => x.name === v.name);
    const subject = `${crd} ${v.name}`;
    if (!w) {
      if (stored.includes(v.name)) {
        add(subject, {
          type: 'stored-version-removed',
          severity: 'blocker',
          from: v.name,
          message: `version ${v.name} removed while still in status.storedVersions (${stored.join(', ')}): the API server refuses the new CRD until every object is rewritten at another version and storedVersions no longer lists it (storage version migration)`,
        });
      } else {
        add(subject, { type: 'version-removed', severity: v.served ? 'warning' : 'info', from: v.name, message: `version ${v.name}${v.served ? ' (served)' : ''} removed: clients and manifests that use ${to.group}/${v.name} are refused` });
      }
      continue;
    }
    if (v.served && !w.served) {
      add(subject, {
        type: 'served-version-disabled',
        severity: stored.includes(v.name) ? 'warning' : 'info',
        from: true,
        to: false,
        message: `version ${v.name} no longer served${stored.includes(v.name) ? ` (still in storedVersions: objects stay stored at ${v.name} until rewritten)` : ''}`,
      });
    } else if (!v.served && w.served) {
      add(subject, { type: 'version-added', severity: 'info', from: false, to: true, message: `version ${v.name} served again` });
    }
    if (v.storage !== w.storage && w.storage) {
      const old = from.versions.find((x) => x.storage)?.name;
      add(subject, {
        type: 'storage-version-changed',
        severity: 'warning',
        from: old,
        to: w.name,
        message: `storage version ${old ?? 'none'} -> ${w.name}: objects are written at ${w.name} from now on and storedVersions keeps ${stored.join(', ')} until a storage version migration rewrites them; ${old ?? 'the old version'} cannot be removed before`,
      });
    }
    if (!v.deprecated && w.deprecated) add(subject, { type: 'version-deprecated', severity: 'info', message: `version ${v.name} deprecated: the API server warns on every request that uses it` });
    if (v.schema && w.schema) diffSchema(v.schema, w.schema, (f) => add(subject, f));
  }
  for (const w of to.versions) {
    if (!from.versions.some((v) => v.name === w.name)) add(`${crd} ${w.name}`, { type: 'version-added', severity: 'info', to: w.name, message: `version ${w.name} added${w.storage ? ' (the storage version)' : ''}` });
  }
  if (out.length === 0) add(crd, { type: 'crd-unchanged', severity: 'info', message: 'unchanged (names, scope and every version\'s schema alike)' });
  out.push(...sizeFindings(to, ctx));
  return out;
}

/** A new CRD (none at the old release). */
export function addedCrd(to: Crd, ctx: DiffContext): Finding[] {
  const versions = to.versions.map((v) => `${v.name}${v.storage ? ' (storage)' : ''}`).join(', ');
  const out: Finding[] = [{
    section: 'crd-changes',
    type: 'crd-added',
    severity: 'info',
    component: ctx.component,
    subject: `CRD ${to.name}`,
    to: to.versions.map((v) => v.name),
    message: `new CRD ${to.kind} (${to.group}, ${to.scope}; versions ${versions})`,
    files: [to.file],
  }];
  for (const v of to.versions) {
    for (const r of collectRules(v.schema)) {
      const error = celCompileError(r.rule);
      if (error) out.push({ section: 'crd-changes', type: 'cel-compile-error', severity: 'blocker', component: ctx.component, subject: `CRD ${to.name} ${v.name}`, path: r.path, to: r.rule, message: `${r.path}: CEL rule ${JSON.stringify(r.rule)} does not compile: ${error}`, files: [to.file] });
    }
  }
  return [...out, ...sizeFindings(to, ctx)];
}

/**
 * A CRD of the old release the new one no longer brings: a warning, since the cluster keeps it (Argo CD never prunes
 * a CRD) until an admin deletes it; a blocker while the render still has its kind's objects.
 */
export function removedCrd(from: Crd, ctx: DiffContext, usedBy: readonly string[]): Finding[] {
  return [{
    section: 'crd-changes',
    type: 'crd-removed',
    severity: usedBy.length > 0 ? 'blocker' : 'warning',
    component: ctx.component,
    subject: `CRD ${from.name}`,
    message: `the new release brings no ${from.kind} CRD: the old one ${crdStays(from.name, from.kind)}`
      + (usedBy.length > 0 ? `; the render still has ${usedBy.join(', ')}` : ''),
    files: [from.file],
  }];
}

/** Every CEL rule of a schema with the path of its node. */
function collectRules(schema: SchemaNode | undefined): { path: string; rule: string }[] {
  const out: { path: string; rule: string }[] = [];
  const walk = (n: SchemaNode, path: string) => {
    for (const r of n['x-kubernetes-validations'] ?? []) out.push({ path: path || '<root>', rule: r.rule });
    for (const [k, v] of Object.entries(n.properties ?? {})) walk(v, join(path, k));
    if (n.items) walk(n.items, `${path}[]`);
    if (isJsonObject(n.additionalProperties)) walk(n.additionalProperties as SchemaNode, `${path}{}`);
  };
  if (schema) walk(schema, '');
  return out;
}

/** A CRD past what a client-side apply can store in its last-applied annotation needs a server-side apply. */
function sizeFindings(to: Crd, ctx: DiffContext): Finding[] {
  const bytes = appliedSize(to.object);
  if (bytes <= CLIENT_SIDE_APPLY_LIMIT) return [];
  const how = ctx.appliedBy === undefined ? 'apply it server-side (kubectl apply --server-side)'
    : ctx.serverSide ? `${ctx.appliedBy} syncs with ServerSideApply=true` : `${ctx.appliedBy} does not sync with ServerSideApply=true: its client-side apply is refused`;
  return [{
    section: 'crd-changes',
    type: 'crd-size',
    severity: ctx.appliedBy !== undefined && !ctx.serverSide ? 'blocker' : 'info',
    component: ctx.component,
    subject: `CRD ${to.name}`,
    to: bytes,
    message: `${bytes} bytes, past the ${CLIENT_SIDE_APPLY_LIMIT}-byte last-applied annotation of a client-side apply: ${how}`,
    files: [to.file],
  }];
}
