import { cpSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { FIXTURE_CLUSTERS, REFERENCE_FILE } from './paths';
import { RENDER_DETERMINISTIC } from '../src/check/determinism';
import { RULES } from '../src/check/engine';
import { DescriptionError, parseDescription } from '../src/model/load';
import { buildModel, ClusterModel } from '../src/model/model';
import { DEFAULT_SCHEMAS } from '../src/paths';
import { PROJECT_FILE } from '../src/project/project-file';
import { Manifest, RenderedCluster } from '../src/render/manifest';
import { synth } from '../src/synth/pipeline';
import { renderCluster } from '../src/synth/render';
import { SchemaStore } from '../src/validate/schemas';
import { ManifestValidator, ValidationIssue } from '../src/validate/validator';

export { BIN, EXAMPLES_DIR, FIXTURE_CLUSTERS, FLEET_FIXTURE, HAS_SCHEMAS, HAS_UPSTREAM, REFERENCE_FILE, ROOT, SHARED, TRAINING_FILE } from './paths';

/** Every rule but render-deterministic: for renders made without their second renders (`reruns: false`), which it refuses. */
export const RULES_WITHOUT_RERUNS = RULES.filter((r) => r.id !== RENDER_DETERMINISTIC);

/**
 * The reference description as parsed YAML (a fresh copy each call: mutate freely). Typed loosely on
 * purpose: tests break descriptions in ways the input type forbids.
 */
/** Edits a YAML file in place (one document): read, `edit`, written back. */
export function editYamlFile(file: string, edit: (o: Record<string, any>) => void): void {
  const o = parse(readFileSync(file, 'utf8')) as Record<string, any>;
  edit(o);
  writeFileSync(file, stringify(o));
}

export function referenceInput(): Record<string, any> {
  return parse(readFileSync(REFERENCE_FILE, 'utf8'));
}

/** A CustomResourceDefinition of one version `v1` (with `openAPIV3Schema` when given), a fresh object each call. */
export function crdOf(group: string, kind: string, scope: 'Namespaced' | 'Cluster', openAPIV3Schema?: object): Record<string, any> {
  const plural = `${kind.toLowerCase()}s`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [{ name: 'v1', served: true, storage: true, ...(openAPIV3Schema ? { schema: { openAPIV3Schema } } : {}) }],
    },
  };
}

/** The prometheus-operator ServiceMonitor CRD as a cluster that serves it lists it (a fresh copy each call). */
export function serviceMonitorCrd(): Record<string, any> {
  return crdOf('monitoring.coreos.com', 'ServiceMonitor', 'Namespaced');
}

/** An edit of the reference description (raw input). */
export type Edit = (d: ReturnType<typeof referenceInput>) => void;

/** Builds a model from the reference description with `edit` applied to the raw input first. */
export function modelOf(edit: Edit = () => {}): ClusterModel {
  const d = referenceInput();
  edit(d);
  return buildModel(parseDescription(d));
}

export function renderOf(edit?: Edit): RenderedCluster {
  return renderCluster(modelOf(edit));
}

let fixtureTree: string | undefined;

/**
 * The fixture clusters rendered as `synth` renders a project (every cluster and fleet/), into a
 * temporary folder, once per test file (schema validation skipped: the render is what is wanted).
 * Tests that read a rendered tree read this one, never this repository's dist/.
 */
export function renderedFixtures(): string {
  if (fixtureTree === undefined) {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'fixture-tree-')), 'dist');
    synth({ clustersDir: FIXTURE_CLUSTERS, out, schemas: false });
    fixtureTree = out;
  }
  return fixtureTree;
}

/**
 * A clusters repository of the fixtures in a new temporary folder: the project file (`clusters:
 * clusters`, `out: dist`) and copies of the fixture descriptions in clusters/ (nothing rendered).
 * Commands run with it as their working folder find their project there, not this repository's.
 */
export function fixtureProject(prefix = 'fixture-project-'): string {
  const root = mkdtempSync(path.join(tmpdir(), prefix));
  writeFileSync(path.join(root, PROJECT_FILE), 'clusters: clusters\nout: dist\n');
  cpSync(FIXTURE_CLUSTERS, path.join(root, 'clusters'), { recursive: true });
  return root;
}

/** All objects of one folder of a rendered cluster (empty when the folder is absent). */
export function folderObjects(c: RenderedCluster, folder: string): readonly Manifest[] {
  return c.folders.find((f) => f.folder === folder)?.objects ?? [];
}

export function findObject(objects: readonly Manifest[], kind: string, name: string, namespace?: string): Manifest {
  const o = objects.find((m) => m.kind === kind && m.metadata.name === name && (namespace === undefined || m.metadata.namespace === namespace));
  if (!o) throw new Error(`no ${kind} ${namespace ? `${namespace}/` : ''}${name} among ${objects.map((m) => `${m.kind}/${m.metadata.name}`).join(', ')}`);
  return o;
}

/** The description issues (path, message) of the reference description with `edit` applied; [] when valid. */
export function issuesOf(edit: Edit): { path: string; message: string }[] {
  try {
    modelOf(edit);
  } catch (e) {
    if (e instanceof DescriptionError) return e.issues.map((i) => ({ path: i.path, message: i.message }));
    throw e;
  }
  return [];
}

/** Every file under `dir`, by path relative to it (sorted), with its content. */
export function readTreeFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(path.relative(dir, p), readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

let shared: ManifestValidator | undefined;

/** One validator per test file (schemas compile once and are reused). */
export function validator(): ManifestValidator {
  shared ??= new ManifestValidator(SchemaStore.open(DEFAULT_SCHEMAS), { requireNamespace: true });
  return shared;
}

/** Strict schema errors of `objects` (warnings dropped). */
export function strictErrors(objects: readonly Manifest[]): ValidationIssue[] {
  return objects.flatMap((m) => validator().validate(m)).filter((i) => i.severity === 'error');
}

/** Schema errors of every object of a rendered cluster (warnings dropped). */
export function schemaErrors(c: RenderedCluster): ValidationIssue[] {
  const inputs = c.folders.flatMap((f) => f.objects.map((manifest) => ({ manifest, source: f.folder })));
  return validator().validateAll(inputs).filter((i) => i.severity === 'error');
}

/** A small deterministic PRNG (Park-Miller), so that property and generated-input runs are reproducible. */
export function seededRandom(seed: number): () => number {
  let state = seed % 2147483647;
  return () => {
    state = (state * 48271) % 2147483647;
    return (state - 1) / 2147483646;
  };
}

/** YAML whose aliases expand to 10^10 copies of a small list (a billion-laughs file): the readers must refuse it. */
export function aliasBomb(): string {
  let s = 'a: &a [x, x, x, x, x, x, x, x, x, x]\n';
  let prev = 'a';
  for (let i = 0; i < 9; i++) {
    s += `b${i}: &b${i} [${Array(10).fill(`*${prev}`).join(', ')}]\n`;
    prev = `b${i}`;
  }
  return s;
}

/** What a command line printed (each line with its newline, as the bin prints it) and its exit code. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A command line run in this process as src/bin.ts runs it (the precheck of the descriptions of synth and diff,
 * then main with the models it loaded; the plain synth's up-to-date answer aside), its output captured; `env`
 * set (undefined: unset) and `cwd` the working folder for this run only. For the cases where the process boundary is not the point.
 */
export async function runCliInProcess(
  argv: readonly string[], opts: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<CliRun> {
  const [{ main }, { precheckDescriptions }, { reportError }] = await Promise.all([import('../src/cli'), import('../src/commands/precheck'), import('../src/errors')]);
  let stdout = '';
  let stderr = '';
  const io = { out: (l: string) => { stdout += `${l}\n`; }, err: (l: string) => { stderr += `${l}\n`; } };
  const setEnv = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  const saved = Object.fromEntries(Object.keys(opts.env ?? {}).map((k) => [k, process.env[k]]));
  const cwd = process.cwd();
  setEnv(opts.env ?? {});
  if (opts.cwd) process.chdir(opts.cwd);
  try {
    let code: number;
    try {
      const checked = precheckDescriptions(argv, io);
      code = typeof checked === 'number' ? checked : await main([...argv], io, checked);
    } catch (e) {
      code = reportError(e, io.err);
    }
    return { code, stdout, stderr };
  } finally {
    process.chdir(cwd);
    setEnv(saved);
  }
}

/** main itself in this process (no precheck: runCliInProcess runs as the bin does), its lines captured. */
export async function runMain(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const { main } = await import('../src/cli');
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}
