import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { crdScopes, DocumentHead, documentHeads, Footprint, objectsOf, scopeResolver } from './footprint';
import { EvalEnv, evalPipe, parseExpression, parseTemplate, renderNodes } from './go-template';

type Json = Record<string, unknown>;

function isMap(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Helm's value coalescing: maps merge key by key, anything else replaces, null deletes. */
export function mergeValues(base: unknown, over: unknown): unknown {
  if (!isMap(base) || !isMap(over)) return over === undefined ? base : over;
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete out[k];
    else out[k] = mergeValues(base[k], v);
  }
  return out;
}

/** Chart.yaml fields the footprint needs. */
export interface ChartMeta {
  readonly name: string;
  readonly version: string;
  readonly appVersion?: string;
  readonly dependencies?: readonly { readonly name: string; readonly alias?: string; readonly condition?: string }[];
}

/** A chart folder read from disk: metadata, default values and template sources. Read once per process. */
export interface LoadedChart {
  readonly dir: string;
  readonly meta: ChartMeta;
  readonly values: Json;
  /** Template files (relative path -> text), helpers included. */
  readonly templates: ReadonlyMap<string, string>;
  /** Vendored subcharts by name. */
  readonly subcharts: ReadonlyMap<string, LoadedChart>;
  /** Parsed templates and the named templates they define (parsed once). */
  readonly parsed: { readonly defines: Map<string, ReturnType<typeof parseTemplate>['nodes']>; readonly files: readonly { readonly file: string; readonly tree: ReturnType<typeof parseTemplate>['nodes'] }[] };
}

const charts = new Map<string, LoadedChart>();

function listFiles(dir: string, rel = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).sort().flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? listFiles(p, path.join(rel, f)) : [path.join(rel, f)];
  });
}

/** Reads a chart folder (Chart.yaml, values.yaml, templates/, charts/*); cached per process. */
export function loadChart(dir: string): LoadedChart {
  const cached = charts.get(dir);
  if (cached) return cached;
  const meta = parseYaml(readFileSync(path.join(dir, 'Chart.yaml'), 'utf8')) as ChartMeta;
  const valuesFile = path.join(dir, 'values.yaml');
  const values = (existsSync(valuesFile) ? parseYaml(readFileSync(valuesFile, 'utf8')) : {}) as Json ?? {};
  const templates = new Map<string, string>();
  for (const f of listFiles(path.join(dir, 'templates'))) {
    if (/\.(ya?ml|tpl)$/.test(f)) templates.set(path.join('templates', f), readFileSync(path.join(dir, 'templates', f), 'utf8'));
  }
  const subcharts = new Map<string, LoadedChart>();
  const chartsDir = path.join(dir, 'charts');
  if (existsSync(chartsDir)) {
    for (const f of readdirSync(chartsDir).sort()) {
      if (existsSync(path.join(chartsDir, f, 'Chart.yaml'))) {
        const sub = loadChart(path.join(chartsDir, f));
        subcharts.set(sub.meta.name, sub);
      }
    }
  }
  const defines = new Map();
  const files = [...templates].map(([file, text]) => ({ file, tree: parseTemplate(text, defines).nodes }));
  const chart = { dir, meta, values, templates, subcharts, parsed: { defines, files } };
  charts.set(dir, chart);
  return chart;
}

/** What Helm (as Argo CD runs it) is given besides the chart. */
export interface HelmRenderInput {
  readonly releaseName: string;
  readonly namespace: string;
  /** The Application's valuesObject. */
  readonly values: Json;
  /** The published chart's version and appVersion, when they differ from the vendored Chart.yaml. */
  readonly published?: { readonly version: string; readonly appVersion: string };
  /** Chart paths (relative to the release folder, '' for the chart itself) whose crds/ folder exists upstream but is not vendored. */
  readonly crdsNotVendored?: readonly string[];
}

/** Evaluates a dependency's `condition` (comma-separated value paths; the first one set wins). */
function conditionHolds(condition: string | undefined, values: Json): boolean {
  if (!condition) return true;
  for (const p of condition.split(',').map((s) => s.trim())) {
    const v = p.split('.').reduce<unknown>((cur, k) => (isMap(cur) ? cur[k] : undefined), values);
    if (typeof v === 'boolean') return v;
  }
  return true;
}

interface RenderedChart {
  heads: { head: DocumentHead; source: string }[];
  notes: string[];
  failures: string[];
}

function renderChart(chart: LoadedChart, rel: string, values: Json, input: HelmRenderInput, meta: ChartMeta, out: RenderedChart): void {
  const { defines, files } = chart.parsed;
  const root = {
    Values: values,
    Release: { Name: input.releaseName, Namespace: input.namespace, Service: 'Helm', IsInstall: true, IsUpgrade: false, Revision: 1 },
    Chart: { Name: meta.name, Version: meta.version, AppVersion: meta.appVersion },
    Capabilities: { KubeVersion: {} },
    Template: { BasePath: path.join(chart.meta.name, 'templates') },
  };
  for (const { file, tree } of files) {
    if (path.basename(file).startsWith('_') || file.includes(`${path.sep}tests${path.sep}`)) continue;
    const source = path.join(rel, file);
    const env: EvalEnv = { defines, notes: out.notes, failures: out.failures, file: source, depth: 0 };
    const text = renderNodes(tree, { ...root, Template: { ...root.Template, Name: file } }, env, [new Map([['', root]])]);
    for (const head of documentHeads(text)) out.heads.push({ head, source });
  }
  if (input.crdsNotVendored?.includes(rel)) {
    out.heads.push({ head: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, source: path.join(rel, 'crds/ (upstream, not vendored)') });
  }
  for (const dep of chart.meta.dependencies ?? []) {
    const sub = chart.subcharts.get(dep.name);
    const key = dep.alias ?? dep.name;
    if (!conditionHolds(dep.condition, values)) continue;
    if (!sub) {
      out.notes.push(`${rel || chart.meta.name}: subchart ${dep.name} is not vendored; its objects are not counted`);
      continue;
    }
    const own = isMap(values[key]) ? values[key] : {};
    const subValues = mergeValues(sub.values, { ...own, global: values.global ?? {} }) as Json;
    renderChart(sub, path.join(rel, 'charts', path.basename(sub.dir)), subValues, input, sub.meta, out);
  }
}

/**
 * The footprint of a Helm chart with the given values: every document its templates render (with
 * the conditions evaluated as far as possible), its subcharts' documents (when their dependency
 * condition holds), and the CRDs of crds/ folders.
 */
export function helmFootprint(chartDir: string, input: HelmRenderInput): Footprint {
  const chart = loadChart(chartDir);
  const values = mergeValues(chart.values, input.values) as Json;
  const meta: ChartMeta = { ...chart.meta, ...(input.published ?? {}) };
  const out: RenderedChart = { heads: [], notes: [], failures: [] };
  renderChart(chart, '', values, input, meta, out);
  const notes = [...out.notes];
  const scope = scopeResolver(crdScopes(out.heads.map((h) => h.head)));
  const objects = objectsOf(out.heads, input.namespace, scope, notes);
  return { objects, notes: [...new Set(notes)], failures: [...new Set(out.failures)] };
}

/** Evaluates one template expression against a chart's merged values (used by tests and the image rule). */
export function evaluateExpression(expr: string, values: Json, chart: { Name?: string; Version?: string; AppVersion?: string } = {}): unknown {
  const root = { Values: values, Chart: chart, Release: {} };
  const env: EvalEnv = { defines: new Map(), notes: [], failures: [], file: '<expr>', depth: 0 };
  return evalPipe(parseExpression(expr), root, env, [new Map([['', root]])]);
}
