import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseDocument } from 'yaml';
import { resolveInside } from './inside';
import { PREVIOUS_CHARTS } from './previous-releases';
import { UNRELEASED_FOLDERS, VENDORED_RELEASES, VendoredChart, VendoredOverlay } from './releases';
import { digestOf, SourceRefused, treeDigest, TreeFile, treeFiles } from './tree';
import { conditionHolds, mergeValues } from './values';
import { removeLeftovers, temporaryName, workDir } from '../engines/workspace';
import { printable } from '../errors';
import { isInside, makeDirs } from '../files';
import { describeIssues, InputFileError, readYamlInput } from '../input/read';
import { isJsonObject } from '../json';

type Json = Record<string, unknown>;

/** Chart.yaml, as far as the render needs it. */
interface ChartMeta {
  readonly name?: string;
  readonly version?: string;
  readonly appVersion?: string;
  readonly dependencies?: readonly { readonly name: string; readonly alias?: string; readonly condition?: string }[];
}

/** A chart found in the upstream folder for a chart name and version. */
export interface LocatedChart {
  readonly chart: string;
  readonly version: string;
  /** The chart folder. */
  readonly dir: string;
  /** The registered release, when the folder is the registered one (it says how to stamp and what is missing). */
  readonly release?: VendoredChart;
}

/** A YAML file of a chart (Chart.yaml, values.yaml) through the bounded reader; one line naming the file when it is unusable. */
export function chartYaml(file: string): Json {
  let doc: unknown;
  try {
    [doc] = readYamlInput(file, 'chart', false);
  } catch (e) {
    if (e instanceof InputFileError) throw new SourceRefused(`${printable(file)}: ${describeIssues(e.issues)}`);
    throw e;
  }
  if (doc === null || doc === undefined) return {};
  if (!isJsonObject(doc)) throw new SourceRefused(`${printable(file)}: expected a mapping`);
  return doc;
}

/** Chart.yaml of a chart folder; SourceRefused when it is unusable (a duplicate key, no YAML, a device). */
export function chartMeta(dir: string): ChartMeta {
  const meta = chartYaml(path.join(dir, 'Chart.yaml')) as ChartMeta;
  if (meta.dependencies !== undefined && (!Array.isArray(meta.dependencies) || !meta.dependencies.every((d) => isJsonObject(d) && typeof d.name === 'string'))) {
    throw new SourceRefused(`${printable(path.join(dir, 'Chart.yaml'))}: dependencies: expected a list of charts with a name`);
  }
  return meta;
}

/** Chart.yaml as the scan for a chart of some name and version reads it: a chart whose Chart.yaml is unusable is no candidate. */
function readMeta(dir: string): ChartMeta | undefined {
  try {
    return chartMeta(dir);
  } catch (e) {
    if (e instanceof SourceRefused) return undefined;
    throw e;
  }
}

/** Chart folders under `root` (not subcharts, not in an unreleased folder), at most `depth` levels down. */
function chartFolders(root: string, depth = 4): string[] {
  const out: string[] = [];
  const walk = (dir: string, level: number) => {
    if (existsSync(path.join(dir, 'Chart.yaml'))) {
      out.push(dir);
      return; // subcharts under charts/ are parts of this chart, not releases of their own
    }
    if (level >= depth) return;
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const n of names) {
      if (level === 0 && UNRELEASED_FOLDERS.includes(n)) continue;
      const p = path.join(dir, n);
      if (!n.startsWith('.') && statSync(p, { throwIfNoEntry: false })?.isDirectory()) walk(p, level + 1);
    }
  };
  walk(root, 0);
  return out;
}

const scans = new Map<string, { dir: string; name?: string; version?: string }[]>();

/**
 * The vendored chart of exactly this name and version: the registered folder of a pinned or previous release, else any
 * chart folder under `root` whose Chart.yaml says that name and version (what `helm pull --untar` writes).
 */
export function locateChart(root: string, chart: string, version: string): LocatedChart | undefined {
  const found = findChart(root, chart, version);
  if (found && !isInside(realpathSync(found.dir), realpathSync(root))) {
    throw new SourceRefused(`${printable(found.dir)}: the chart folder is a symbolic link out of the upstream installs (to ${printable(realpathSync(found.dir))})`);
  }
  // a chart the package ships is verified against its checksums before any of its files is read (remembered per process)
  if (found) treeDigest(found.dir, true);
  return found;
}

function findChart(root: string, chart: string, version: string): LocatedChart | undefined {
  // a pinned release, or a previous one (src/versions.ts `previous`): each is rendered as published
  const release = [...VENDORED_RELEASES, ...PREVIOUS_CHARTS].find((r): r is VendoredChart => r.type === 'helm' && r.chart === chart && r.version === version);
  if (release) {
    const dir = path.join(root, release.folder, release.chartPath);
    if (existsSync(path.join(dir, 'Chart.yaml'))) return { chart, version, dir, release };
  }
  let found = scans.get(root);
  if (!found) {
    found = chartFolders(root).map((dir) => ({ dir, ...readMeta(dir) }));
    scans.set(root, found);
  }
  const hit = found.find((c) => c.name === chart && c.version === version);
  return hit ? { chart, version, dir: hit.dir } : undefined;
}

/**
 * The vendored overlay folder of a registered release, or `<repo>-<revision>/<path>` under `root`; undefined
 * when neither is there. The path resolves inside its release folder (symbolic links resolved), else
 * SourceRefused: a tree's `path: ../../..` never leaves the upstream installs.
 */
export function locateOverlay(root: string, repoURL: string, revision: string, overlayPath: string, release?: VendoredOverlay): string | undefined {
  const repo = repoURL.replace(/\.git$/, '').replace(/\/+$/, '').split('/').pop() ?? '';
  const candidates: [string, string][] = [...(release ? [[release.folder, release.path] as [string, string]] : []), [`${repo}-${revision}`, overlayPath]];
  for (const [folder, rel] of candidates) {
    const base = path.join(root, folder);
    if (!existsSync(path.join(base, rel))) continue;
    const dir = resolveInside(base, rel === '' ? '.' : rel, 'path');
    if (!isInside(base, root) || !statSync(dir).isDirectory()) continue;
    return dir;
  }
  return undefined;
}

/** Values that switch on a dependency which is not vendored: the render cannot show what it would install. */
export class DependencyNotVendored extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DependencyNotVendored';
  }
}

/**
 * A file that is a git symbolic link checked out as a plain file (its content is the link target), as
 * copies of a git tree hold them: SOURCES.md records the VictoriaMetrics operator chart's `crd.yaml` ->
 * `charts/crds/crds/crd.yaml`. Helm packages the target's content; the render does the same.
 */
function symlinkStubTarget(dir: string, rel: string, size: number): string | undefined {
  if (size === 0 || size > 512) return undefined;
  const text = readFileSync(path.join(dir, rel), 'utf8');
  if (!/^[\w.-]+(\/[\w.-]+)+$/.test(text)) return undefined;
  const target = path.join(path.dirname(path.join(dir, rel)), text);
  const inside = !path.relative(dir, target).startsWith('..');
  return inside && statSync(target, { throwIfNoEntry: false })?.isFile() ? target : undefined;
}

/** What a chart needs before helm can render it as the published chart. */
interface Preparation {
  readonly stamp?: VendoredChart['published'];
  readonly drop: readonly string[];
  readonly stubs: readonly { readonly rel: string; readonly target: string }[];
}

function preparationOf(located: LocatedChart): Preparation {
  const stubs = treeFiles(located.dir).flatMap((f) => {
    const target = symlinkStubTarget(located.dir, f.rel, f.size);
    return target ? [{ rel: f.rel, target }] : [];
  });
  return { stamp: located.release?.published, drop: located.release?.unvendoredDependencies ?? [], stubs };
}

/** Refuses values that enable a dependency the vendored copy lacks (its condition, as Helm evaluates it). */
export function refuseUnvendoredDependencies(located: LocatedChart, values: Json): void {
  const drop = located.release?.unvendoredDependencies ?? [];
  if (drop.length === 0) return;
  const meta = chartMeta(located.dir);
  const defaults = existsSync(path.join(located.dir, 'values.yaml')) ? chartYaml(path.join(located.dir, 'values.yaml')) : {};
  const merged = mergeValues(defaults, values);
  for (const dep of meta.dependencies ?? []) {
    if (!drop.includes(dep.name)) continue;
    const { enabled, path: at } = conditionHolds(dep.condition, merged);
    if (enabled) {
      throw new DependencyNotVendored(`the values enable dependency ${dep.alias ?? dep.name}${at ? ` (${at}: true)` : ' (it has no condition)'}, which the vendored chart does not include; `
        + 'its objects cannot be checked: vendor it (helm pull) or leave it off');
    }
  }
}

/** A YAML file of the copy, edited as a document (comments and order kept); SourceRefused when the `yaml` library finds errors. */
function editYaml(file: string, edit: (doc: ReturnType<typeof parseDocument>) => void): void {
  const doc = parseDocument(readFileSync(file, 'utf8'), { uniqueKeys: true });
  if (doc.errors.length > 0) throw new SourceRefused(`${printable(file)}: ${doc.errors[0].message.split('\n')[0]}`);
  edit(doc);
  writeFileSync(file, doc.toString());
}

function copyTree(from: string, to: string, files: readonly TreeFile[], prep: Preparation): void {
  for (const f of files) {
    const dest = path.join(to, f.rel);
    makeDirs(path.dirname(dest));
    const stub = prep.stubs.find((s) => s.rel === f.rel);
    copyFileSync(stub ? stub.target : path.join(from, f.rel), dest);
  }
  const meta = chartMeta(to);
  editYaml(path.join(to, 'Chart.yaml'), (doc) => {
    if (prep.stamp) {
      doc.set('version', prep.stamp.version);
      doc.set('appVersion', prep.stamp.appVersion);
    }
    if (prep.drop.length > 0) doc.set('dependencies', (meta.dependencies ?? []).filter((d) => !prep.drop.includes(d.name)));
  });
  const stampValues = prep.stamp?.values;
  if (stampValues) {
    const valuesYaml = path.join(to, 'values.yaml');
    chartYaml(valuesYaml);
    editYaml(valuesYaml, (doc) => {
      for (const [dotted, value] of Object.entries(stampValues)) doc.setIn(dotted.split('.'), value);
    });
  }
}

/**
 * Refuses a chart helm could not render as a release: a dependency Chart.yaml lists (and the render keeps)
 * that is not in `charts/` (a folder of that chart, or its `.tgz`), or one that is the chart itself.
 */
function checkDependencies(dir: string, drop: readonly string[]): void {
  const meta = chartMeta(dir);
  const deps = (meta.dependencies ?? []).filter((d) => !drop.includes(d.name));
  if (deps.length === 0) return;
  const charts = path.join(dir, 'charts');
  const present = new Set<string>();
  for (const name of existsSync(charts) ? readdirSync(charts) : []) {
    const p = path.join(charts, name);
    if (name.endsWith('.tgz')) present.add(name.replace(/-v?\d+\.\d+\.\d+.*\.tgz$/, ''));
    else if (statSync(p).isDirectory() && existsSync(path.join(p, 'Chart.yaml'))) present.add(readMeta(p)?.name ?? name);
  }
  for (const d of deps) {
    if (d.name === meta.name && d.alias === undefined) throw new SourceRefused(`${printable(path.join(dir, 'Chart.yaml'))}: the chart lists itself as a dependency`);
    if (!present.has(d.name)) {
      throw new SourceRefused(`${printable(path.join(dir, 'Chart.yaml'))}: dependency ${printable(d.name)} is not in charts/ (helm would refuse the chart): vendor it (helm dependency build) or drop it from Chart.yaml`);
    }
  }
}

/** Files of a chart that render objects: templates (not `_helpers` and NOTES.txt) and CRDs, of the chart and its subcharts. */
export function templateCount(dir: string): number {
  return treeFiles(dir).filter((f) => {
    const parts = f.rel.split('/');
    const name = parts[parts.length - 1];
    if (parts.includes('crds')) return /\.(ya?ml|json)$/.test(name);
    return parts.includes('templates') && !name.startsWith('_') && name !== 'NOTES.txt';
  }).length;
}

/** The record of a prepared copy's content, beside the copy in its cache folder. */
const CONTENT_RECORD = 'content.sha256';

/**
 * The folder helm renders for a located chart, and the digest of its content. The vendored folder itself
 * when it renders as published; otherwise a copy (`<cacheDir>/charts/<chart>-<version>-<digest>/chart`,
 * written to a temporary name and renamed into place) with Chart.yaml stamped with the published version and
 * appVersion, the dependencies that are not vendored removed, and git symbolic links resolved. The copy's
 * content is recorded beside it and verified on every use: a copy edited by hand (or half deleted) is a
 * miss, and is made again. Throws SourceRefused when the chart cannot be rendered (an unusable Chart.yaml,
 * a missing dependency, a symbolic link out of the chart).
 */
export function renderableChart(located: LocatedChart, cacheDir: string | undefined): { dir: string; digest: string } {
  const source = treeDigest(located.dir, true);
  const prep = preparationOf(located);
  if (!prep.stamp && prep.drop.length === 0 && prep.stubs.length === 0) {
    checkDependencies(located.dir, []);
    return { dir: located.dir, digest: source };
  }
  const digest = digestOf(['prepared-chart-3', source, prep.stamp ?? null, prep.drop, prep.stubs.map((s) => s.rel)]);
  const parent = workDir(cacheDir, 'charts');
  const name = `${located.chart}-${located.version}-${digest.slice(0, 24)}`;
  const entry = path.join(parent, name);
  const chart = path.join(entry, 'chart');
  const intact = () => {
    try {
      return readFileSync(path.join(entry, CONTENT_RECORD), 'utf8') === treeDigest(chart);
    } catch {
      return false;
    }
  };
  if (existsSync(entry) && intact()) return { dir: chart, digest };
  removeLeftovers(parent, name);
  const random = randomBytes(6).toString('hex');
  const tmp = temporaryName(entry, 'tmp', random);
  try {
    copyTree(located.dir, path.join(tmp, 'chart'), treeFiles(located.dir), prep);
    checkDependencies(path.join(tmp, 'chart'), []);
    writeFileSync(path.join(tmp, CONTENT_RECORD), treeDigest(path.join(tmp, 'chart')));
    try {
      renameSync(tmp, entry);
    } catch (e) {
      if (!['EEXIST', 'ENOTEMPTY'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
      // another process put the same copy in place first, or a damaged copy is there: ours replaces it
      if (!intact()) {
        const old = temporaryName(entry, 'old', random);
        renameSync(entry, old);
        renameSync(tmp, entry);
        rmSync(old, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir: chart, digest };
}
