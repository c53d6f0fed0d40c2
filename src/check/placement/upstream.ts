import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { SchedulingSpec } from './scheduling';
import { Manifest } from '../../render/manifest';
import { mergeValues } from '../../upstream/helm';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A Deployment a managed install creates, read from the vendored upstream files plus our Application's settings. */
export interface UpstreamDeployment {
  /** The Argo CD Application that installs it. */
  readonly application: Manifest;
  /** `Deployment <name>` and where it comes from (`kueue-v0.19.2/charts/kueue, values + valuesObject`). */
  readonly what: string;
  readonly spec: SchedulingSpec;
}

// Parsed upstream files, per process: synth and check read each at most once.
const fileCache = new Map<string, unknown>();

function readYaml(file: string): unknown {
  if (!fileCache.has(file)) fileCache.set(file, parseYaml(readFileSync(file, 'utf8')));
  return fileCache.get(file);
}

function readText(file: string): string {
  const key = `text:${file}`;
  if (!fileCache.has(key)) fileCache.set(key, readFileSync(file, 'utf8'));
  return fileCache.get(key) as string;
}


function at(values: unknown, dotted: string): unknown {
  let v: unknown = values;
  for (const part of dotted.split('.')) v = isObject(v) ? v[part] : undefined;
  return v;
}

/**
 * The Deployments of the pinned Helm charts whose placement comes from values: which values block the
 * template reads. Only the placement fields the template really references (`.Values.<block>.<field>`)
 * are used, so a chart that stops reading one is not simulated as if it did.
 */
interface HelmDeployment {
  readonly deployment: string;
  /** Template file of the Deployment in the chart. */
  readonly template: string;
  /** Values block holding its nodeSelector, tolerations and affinity. */
  readonly block: string;
  /** Values path of its container resources. */
  readonly resources: string;
}

const HELM_DEPLOYMENTS: Readonly<Record<string, readonly HelmDeployment[]>> = {
  'gpu-operator': [{ deployment: 'gpu-operator', template: 'templates/operator.yaml', block: 'operator', resources: 'operator.resources' }],
  'network-operator': [{ deployment: 'network-operator', template: 'templates/operator.yaml', block: 'operator', resources: 'operator.resources' }],
  'kueue': [{ deployment: 'kueue-controller-manager', template: 'templates/manager/manager.yaml', block: 'controllerManager', resources: 'controllerManager.manager.resources' }],
};

/** Kustomize sources by git repository: the folder prefix their release is vendored under. */
const KUSTOMIZE_REPOS: Readonly<Record<string, string>> = {
  'https://github.com/kubeflow/mpi-operator.git': 'mpi-operator',
  'https://github.com/kubeflow/trainer.git': 'training-operator',
};

function releaseFolder(root: string, name: string, version: string): string | undefined {
  const bare = version.replace(/^v/, '');
  return [`${name}-${bare}`, `${name}-v${bare}`].map((f) => path.join(root, f)).find((f) => existsSync(f));
}

function chartFolder(release: string, chart: string): string | undefined {
  return ['', `charts/${chart}`, `deployment/${chart}`, `deployments/${chart}`].map((p) => path.join(release, p))
    .find((p) => existsSync(path.join(p, 'Chart.yaml')) && (readYaml(path.join(p, 'Chart.yaml')) as Json)?.name === chart);
}

/**
 * The top-level blocks `keys` of a chart's values.yaml. Only those blocks are parsed: a whole values file
 * takes the YAML parser far longer, and synth runs this on every render.
 */
function chartValues(file: string, keys: readonly string[]): Json {
  const cacheKey = `values:${file}:${keys.join(',')}`;
  if (!fileCache.has(cacheKey)) {
    const lines = readText(file).split('\n');
    const out: Json = {};
    for (const key of keys) {
      const start = lines.findIndex((l) => l.startsWith(`${key}:`));
      if (start < 0) continue;
      const end = lines.findIndex((l, i) => i > start && /^[^\s#]/.test(l));
      Object.assign(out, parseYaml(lines.slice(start, end < 0 ? undefined : end).join('\n')) as Json);
    }
    fileCache.set(cacheKey, out);
  }
  return fileCache.get(cacheKey) as Json;
}

function helmDeployments(app: Manifest, root: string, source: Json): UpstreamDeployment[] {
  const repo = String(source.repoURL ?? '');
  const chart = typeof source.chart === 'string' ? source.chart : repo.startsWith('oci://') ? repo.split('/').pop() ?? '' : '';
  const entries = HELM_DEPLOYMENTS[chart];
  const release = entries && releaseFolder(root, chart, String(source.targetRevision ?? ''));
  const dir = release && chartFolder(release, chart);
  if (!entries || !dir) return [];
  const helm = isObject(source.helm) ? source.helm : {};
  let values: unknown = chartValues(path.join(dir, 'values.yaml'), [...new Set(entries.flatMap((e) => [e.block, e.resources.split('.')[0]]))]);
  if (typeof helm.values === 'string') values = mergeValues(values, parseYaml(helm.values));
  if (isObject(helm.valuesObject)) values = mergeValues(values, helm.valuesObject);
  return entries.map((e) => {
    const template = readText(path.join(dir, e.template));
    const reads = (field: string) => template.includes(`.Values.${field}`);
    const placement = (field: string) => (reads(`${e.block}.${field}`) ? at(values, `${e.block}.${field}`) : undefined);
    const resources = reads(e.resources) ? at(values, e.resources) : undefined;
    return {
      application: app,
      what: `Deployment ${e.deployment} (${path.relative(root, dir)}/${e.template}, chart values with the Application's)`,
      spec: {
        nodeSelector: placement('nodeSelector') as SchedulingSpec['nodeSelector'],
        tolerations: placement('tolerations') as SchedulingSpec['tolerations'],
        affinity: placement('affinity') as SchedulingSpec['affinity'],
        containers: [{ resources: resources as never }],
      },
    };
  });
}

interface KustomizePatch {
  readonly patch?: string;
  readonly path?: string;
  readonly target?: { readonly group?: string; readonly kind?: string; readonly name?: string };
}

function unescape(p: string): string {
  return p.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** RFC 6902 add/replace/remove on a copy of `doc`. */
function applyJsonPatch(doc: Json, ops: readonly Json[]): Json {
  const out = JSON.parse(JSON.stringify(doc)) as Json;
  for (const op of ops) {
    const parts = String(op.path ?? '').split('/').slice(1).map(unescape);
    const last = parts.pop();
    let parent: unknown = out;
    for (const p of parts) parent = Array.isArray(parent) ? parent[Number(p)] : isObject(parent) ? parent[p] : undefined;
    if (last === undefined || parent === undefined) continue;
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      if (op.op === 'add') parent.splice(i, 0, op.value);
      else if (op.op === 'replace') parent[i] = op.value;
      else if (op.op === 'remove') parent.splice(i, 1);
    } else if (isObject(parent)) {
      if (op.op === 'add' || op.op === 'replace') parent[last] = op.value;
      else if (op.op === 'remove') delete parent[last];
    }
  }
  return out;
}

/** A strategic merge patch, as far as placement needs: maps merge, lists replace, `$patch: delete` deletes. */
function applyMergePatch(doc: Json, patch: Json): Json | undefined {
  if (patch.$patch === 'delete') return undefined;
  return mergeValues(doc, patch) as Json;
}

function targets(m: Json, t: KustomizePatch['target']): boolean {
  const meta = isObject(m.metadata) ? m.metadata : {};
  const group = String(m.apiVersion ?? '').includes('/') ? String(m.apiVersion).split('/')[0] : '';
  return (!t?.kind || t.kind === m.kind) && (!t?.name || t.name === meta.name) && (t?.group === undefined || t.group === group);
}

/** Applies kustomize patches (JSON 6902 or strategic merge) to the Deployments. */
function patchAll(resources: Json[], patches: readonly KustomizePatch[], dir?: string): Json[] {
  let out = resources;
  for (const p of patches) {
    const text = p.patch ?? (p.path && dir ? readText(path.join(dir, p.path)) : undefined);
    if (text === undefined) continue;
    const parsed = parseYaml(text) as unknown;
    out = out.flatMap((m) => {
      if (Array.isArray(parsed)) return targets(m, p.target) ? [applyJsonPatch(m, parsed as Json[])] : [m];
      if (!isObject(parsed)) return [m];
      const meta = isObject(parsed.metadata) ? parsed.metadata : {};
      const target = p.target ?? { kind: parsed.kind as string, name: meta.name as string };
      if (!targets(m, target)) return [m];
      const patched = applyMergePatch(m, parsed);
      return patched ? [patched] : [];
    });
  }
  return out;
}

/** The `kind` of a manifest file's first document, from its first 16 KiB. */
function firstKind(file: string): string | undefined {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(16384);
    const n = readSync(fd, head, 0, head.length, 0);
    return /^kind:\s*(\S+)\s*$/m.exec(head.subarray(0, n).toString('utf8'))?.[1];
  } finally {
    closeSync(fd);
  }
}

/** The Deployments a kustomization builds (resources followed recursively, its namespace and patches applied). */
function kustomizeDeployments(dir: string, depth = 0): Json[] {
  const file = ['kustomization.yaml', 'kustomization.yml'].map((f) => path.join(dir, f)).find((f) => existsSync(f));
  if (!file || depth > 8) return [];
  const k = readYaml(file) as Json;
  const found: Json[] = [];
  for (const r of Array.isArray(k.resources) ? k.resources as string[] : []) {
    const p = path.join(dir, r);
    if (!existsSync(p)) continue;
    if (statSync(p).isDirectory()) {
      found.push(...kustomizeDeployments(p, depth + 1));
      continue;
    }
    // Most resources are CRDs of several hundred KB each: a file whose first document is a CRD (one document
    // per CRD file in these releases) is not read further, and only files that hold a Deployment are parsed.
    if (firstKind(p) === 'CustomResourceDefinition') continue;
    const text = readText(p);
    if (!/^kind:\s*Deployment\s*$/m.test(text)) continue;
    for (const doc of parseAllDocuments(text)) {
      const m = doc.toJS() as unknown;
      if (isObject(m) && m.kind === 'Deployment') found.push(m);
    }
  }
  const namespaced = typeof k.namespace === 'string'
    ? found.map((m) => ({ ...m, metadata: { ...(isObject(m.metadata) ? m.metadata : {}), namespace: k.namespace } }))
    : found;
  return patchAll(namespaced, Array.isArray(k.patches) ? k.patches as KustomizePatch[] : [], dir);
}

function kustomizeDeploymentsOf(app: Manifest, root: string, source: Json): UpstreamDeployment[] {
  const prefix = KUSTOMIZE_REPOS[String(source.repoURL ?? '')];
  const release = prefix && releaseFolder(root, prefix, String(source.targetRevision ?? ''));
  if (!release || typeof source.path !== 'string') return [];
  const dir = path.join(release, source.path);
  const kustomize = isObject(source.kustomize) ? source.kustomize : {};
  const deployments = patchAll(kustomizeDeployments(dir), Array.isArray(kustomize.patches) ? kustomize.patches as KustomizePatch[] : []);
  return deployments.map((d) => {
    const meta = isObject(d.metadata) ? d.metadata : {};
    const spec = at(d, 'spec.template.spec');
    return {
      application: app,
      what: `Deployment ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name} (${path.relative(root, dir)}, with the Application's kustomize patches)`,
      spec: (isObject(spec) ? spec : {}) as SchedulingSpec,
    };
  });
}

/**
 * The Deployments of every managed install a rendered Argo CD Application points at, from the vendored
 * upstream charts and manifests under `root` (../shared/upstream-installs). Sources the folder does not hold are
 * left out; so is everything when `root` does not exist.
 */
export function upstreamDeployments(applications: readonly Manifest[], root: string | undefined): UpstreamDeployment[] {
  if (!root || !existsSync(root)) return [];
  return applications.flatMap((app) => {
    const spec = (app.spec ?? {}) as Json;
    const sources = [...(isObject(spec.source) ? [spec.source] : []), ...(Array.isArray(spec.sources) ? spec.sources.filter(isObject) : [])];
    return sources.flatMap((s) => (s.chart !== undefined || String(s.repoURL ?? '').startsWith('oci://')
      ? helmDeployments(app, root, s)
      : kustomizeDeploymentsOf(app, root, s)));
  });
}
