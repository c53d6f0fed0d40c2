import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { chartMeta, chartYaml, locateChart, locateOverlay } from './chart';
import { objectImageRefs } from './images';
import { readInside, resolveInside } from './inside';
import { VendoredOverlay } from './releases';
import { isRemoteResource, readKustomization } from './remote-bases';
import { SourceRefused } from './tree';
import { mergeValues } from './values';
import { InstallationDamaged } from '../cache/asset-sums';
import { printable } from '../errors';
import { describeIssues, InputFileError, parseInputYaml } from '../input/read';
import { isJsonObject, JsonObject, setValueAt } from '../json';

/** values.yaml of a chart folder ({} without one). */
function valuesFile(dir: string): JsonObject {
  const file = path.join(dir, 'values.yaml');
  return existsSync(file) ? chartYaml(file) : {};
}

/**
 * A chart's values as Helm hands them to its templates when the user sets none: its values.yaml, and each subchart of
 * charts/ (a folder: the vendored charts hold no .tgz) under its name or each alias Chart.yaml gives it, its own
 * values.yaml with the parent's values for it over them, down the subcharts' subcharts.
 */
function valuesWithSubcharts(dir: string): JsonObject {
  const values = valuesFile(dir);
  const charts = path.join(dir, 'charts');
  if (!existsSync(charts)) return values;
  const dependencies = chartMeta(dir).dependencies ?? [];
  for (const entry of readdirSync(charts).sort()) {
    const sub = path.join(charts, entry);
    if (!statSync(sub).isDirectory() || !existsSync(path.join(sub, 'Chart.yaml'))) continue;
    const name = chartMeta(sub).name ?? entry;
    const aliases = dependencies.filter((d) => d.name === name).map((d) => d.alias ?? d.name);
    const own = valuesWithSubcharts(sub);
    for (const key of aliases.length > 0 ? aliases : [name]) values[key] = mergeValues(own, values[key]);
  }
  return values;
}

/**
 * The default values of a pinned chart in the package's copy (`upstream`), as the published chart carries them: the
 * release's stamped values (VendoredChart.published) over values.yaml, with its subcharts' values (valuesWithSubcharts).
 * Throws InstallationDamaged when the copy has no such chart.
 */
export function chartDefaultValues(upstream: string, chart: string, version: string): JsonObject {
  const located = locateChart(upstream, chart, version);
  if (!located) throw new InstallationDamaged(upstream, `holds no copy of chart ${chart} ${version}`);
  const values = valuesWithSubcharts(located.dir);
  for (const [dotted, value] of Object.entries(located.release?.published?.values ?? {})) setValueAt(values, dotted, value);
  return values;
}

/** The YAML documents of a file of an overlay (inside `root`), read by the bounded reader. */
function documentsOf(root: string, rel: string): unknown[] {
  try {
    return parseInputYaml(rel, readInside(root, rel, 'resource'), 'chart', true);
  } catch (e) {
    if (e instanceof InputFileError) throw new SourceRefused(`${printable(rel)}: ${describeIssues(e.issues)}`);
    throw e;
  }
}

/** A kustomization's list field, its strings. */
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * The image names (no tag) a kustomization's build pulls, read from the files it lists: the images of its local
 * resources, bases and components (folders read the same way, files as YAML documents) and of its patch files, each
 * renamed by the kustomization's `images` entries as kustomize's image transformer renames them (by name, newName).
 * Everything stays inside `root` (the release's folder); a remote resource is not followed (none of the pinned
 * overlays has one). A JSON patch that writes an image is not read: `check` (image-mirror) names what remains.
 */
function kustomizationImages(root: string, rel: string, seen: Set<string>): Set<string> {
  const names = new Set<string>();
  if (seen.has(rel)) return names;
  seen.add(rel);
  const dir = resolveInside(root, rel, 'resource');
  const k = readKustomization(dir);
  if (!k) throw new SourceRefused(`${printable(rel)}: no kustomization`);
  const patchFiles = (Array.isArray(k.patches) ? k.patches : []).flatMap((p) => (isJsonObject(p) && typeof p.path === 'string' ? [p.path] : []));
  const listed = [...strings(k.resources), ...strings(k.bases), ...strings(k.components)].filter((r) => !isRemoteResource(r));
  for (const r of [...listed, ...strings(k.patchesStrategicMerge), ...patchFiles]) {
    const child = path.join(rel, r);
    if (statSync(resolveInside(root, child, 'resource')).isDirectory()) {
      for (const n of kustomizationImages(root, child, seen)) names.add(n);
      continue;
    }
    for (const doc of documentsOf(root, child)) {
      if (isJsonObject(doc)) for (const ref of objectImageRefs(doc)) names.add(ref.repository);
    }
  }
  for (const entry of Array.isArray(k.images) ? k.images : []) {
    if (!isJsonObject(entry) || typeof entry.name !== 'string' || typeof entry.newName !== 'string' || !names.has(entry.name)) continue;
    names.delete(entry.name);
    names.add(entry.newName);
  }
  return names;
}

/** The image names (no tag) the build of a pinned overlay in the package's copy (`upstream`) pulls, sorted. Throws when the copy has none. */
export function overlayImages(upstream: string, release: VendoredOverlay): string[] {
  const dir = locateOverlay(upstream, release.repoURL, release.version, release.path, release);
  if (!dir) throw new InstallationDamaged(upstream, `holds no copy of ${release.repoURL} ${release.path} ${release.version}`);
  // locateOverlay answers the real path: the copy may be reached through a link (a checkout's ../shared, say)
  const root = realpathSync(path.join(upstream, release.folder));
  return [...kustomizationImages(root, path.relative(root, dir), new Set())].sort();
}
