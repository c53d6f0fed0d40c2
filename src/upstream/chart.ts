import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml, parseDocument } from 'yaml';
import { UNRELEASED_FOLDERS, VENDORED_RELEASES, VendoredChart, VendoredOverlay } from './releases';
import { digestOf, treeDigest, treeFiles } from './tree';
import { conditionHolds, mergeValues } from './values';
import { removeLeftovers, temporaryName, workDir } from '../engines/workspace';
import { makeDirs } from '../files';

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

function readMeta(dir: string): ChartMeta | undefined {
  try {
    return parseYaml(readFileSync(path.join(dir, 'Chart.yaml'), 'utf8')) as ChartMeta;
  } catch {
    return undefined;
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
 * The vendored chart of exactly this name and version: the registered folder of a pinned release, else any
 * chart folder under `root` whose Chart.yaml says that name and version (what `helm pull --untar` writes).
 */
export function locateChart(root: string, chart: string, version: string): LocatedChart | undefined {
  const release = VENDORED_RELEASES.find((r): r is VendoredChart => r.type === 'helm' && r.chart === chart && r.version === version);
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

/** The vendored overlay folder of a registered release, or `<repo>-<revision>/<path>` under `root`. */
export function locateOverlay(root: string, repoURL: string, revision: string, overlayPath: string, release?: VendoredOverlay): string | undefined {
  const repo = repoURL.replace(/\.git$/, '').replace(/\/+$/, '').split('/').pop() ?? '';
  const candidates = [release ? path.join(root, release.folder, release.path) : undefined, path.join(root, `${repo}-${revision}`, overlayPath)];
  return candidates.find((d): d is string => d !== undefined && existsSync(d) && statSync(d).isDirectory());
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
  const meta = readMeta(located.dir) ?? {};
  const defaults = (parseYaml(readFileSync(path.join(located.dir, 'values.yaml'), 'utf8')) ?? {}) as Json;
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

function copyTree(from: string, to: string, prep: Preparation): void {
  for (const f of treeFiles(from)) {
    const dest = path.join(to, f.rel);
    makeDirs(path.dirname(dest));
    const stub = prep.stubs.find((s) => s.rel === f.rel);
    copyFileSync(stub ? stub.target : path.join(from, f.rel), dest);
  }
  const chartYaml = path.join(to, 'Chart.yaml');
  const doc = parseDocument(readFileSync(chartYaml, 'utf8'));
  if (prep.stamp) {
    doc.set('version', prep.stamp.version);
    doc.set('appVersion', prep.stamp.appVersion);
    if (prep.stamp.values) {
      const valuesYaml = path.join(to, 'values.yaml');
      const values = parseDocument(readFileSync(valuesYaml, 'utf8'));
      for (const [dotted, value] of Object.entries(prep.stamp.values)) values.setIn(dotted.split('.'), value);
      writeFileSync(valuesYaml, values.toString());
    }
  }
  if (prep.drop.length > 0) {
    const deps = ((doc.toJS() as ChartMeta).dependencies ?? []).filter((d) => !prep.drop.includes(d.name));
    doc.set('dependencies', deps);
  }
  writeFileSync(chartYaml, doc.toString());
}

/**
 * The folder helm renders for a located chart, and the digest of its content. The vendored folder itself
 * when it renders as published; otherwise a copy (`<cacheDir>/charts/<chart>-<version>-<digest>`, written to
 * a temporary name and renamed into place) with Chart.yaml stamped with the published version and
 * appVersion, the dependencies that are not vendored removed, and git symbolic links resolved.
 */
export function renderableChart(located: LocatedChart, cacheDir: string | undefined): { dir: string; digest: string } {
  const source = treeDigest(located.dir, true);
  const prep = preparationOf(located);
  if (!prep.stamp && prep.drop.length === 0 && prep.stubs.length === 0) return { dir: located.dir, digest: source };
  const digest = digestOf(['prepared-chart-2', source, prep.stamp ?? null, prep.drop, prep.stubs.map((s) => s.rel)]);
  const parent = workDir(cacheDir, 'charts');
  const name = `${located.chart}-${located.version}-${digest.slice(0, 24)}`;
  const dir = path.join(parent, name);
  if (existsSync(path.join(dir, 'Chart.yaml'))) return { dir, digest };
  removeLeftovers(parent, name);
  const tmp = temporaryName(dir, 'tmp', randomBytes(6).toString('hex'));
  try {
    copyTree(located.dir, tmp, prep);
    try {
      renameSync(tmp, dir);
    } catch (e) {
      // another process put the same copy in place first
      if (!['EEXIST', 'ENOTEMPTY'].includes((e as NodeJS.ErrnoException).code ?? '') || !existsSync(path.join(dir, 'Chart.yaml'))) throw e;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, digest };
}
