import * as path from 'node:path';
import { FLEET_FOLDER } from '../components/gitops/plan';
import { printable } from '../errors';
import type { ClusterSummary, SynthResult } from '../synth/pipeline';

/** Up to this many clusters the summary names each one; beyond, one line counts them. */
export const LISTED_CLUSTERS = 10;

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function kindList(kinds: Readonly<Record<string, number>>): string {
  return Object.entries(kinds).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ${n}`).join(', ');
}

/** Objects per component folder and kind, added up over the clusters (folders in first-seen order). */
function perFolder(clusters: readonly ClusterSummary[]): { folder: string; objects: number; kinds: Record<string, number> }[] {
  const folders = new Map<string, { folder: string; objects: number; kinds: Record<string, number> }>();
  for (const c of clusters) {
    for (const f of c.folders) {
      const sum = folders.get(f.folder) ?? { folder: f.folder, objects: 0, kinds: {} };
      sum.objects += f.objects;
      for (const [k, n] of Object.entries(f.kinds)) sum.kinds[k] = (sum.kinds[k] ?? 0) + n;
      folders.set(f.folder, sum);
    }
  }
  return [...folders.values()];
}

/**
 * The summary `synth` prints: its size does not grow with the fleet. Each cluster by name (up to
 * LISTED_CLUSTERS; beyond, a count), the fleet folder, objects per component folder and kind added
 * up over the clusters, and one last line: files written where, folders replaced, time.
 */
export function synthSummary(r: SynthResult, cwd = process.cwd()): string[] {
  const lines: string[] = [];
  const total = r.clusters.reduce((n, c) => n + c.objects, 0);
  if (r.clusters.length <= LISTED_CLUSTERS) {
    for (const c of r.clusters) lines.push(`${c.name}: ${c.objects} objects in ${c.folders.length} folders`);
  } else {
    const sizes = r.clusters.map((c) => c.objects);
    lines.push(`${r.clusters.length} clusters: ${total} objects (${Math.min(...sizes)} to ${Math.max(...sizes)} per cluster)`);
  }
  if (r.fleet) lines.push(`${FLEET_FOLDER}/: ${plural(r.fleet.objects, 'object')} (${kindList(r.fleet.folders[0]?.kinds ?? {})}) registering ${plural(r.clusters.length, 'cluster')} with the hub's Argo CD`);
  const folders = perFolder(r.clusters);
  if (r.clusters.length > 1) lines.push(`objects per component folder and kind, over the ${r.clusters.length} clusters:`);
  const width = Math.max(4, ...folders.map((f) => String(f.objects).length));
  for (const f of folders) lines.push(`  ${f.folder.padEnd(18)} ${String(f.objects).padStart(width)}  ${kindList(f.kinds)}`);

  const t = r.timings;
  const rel = path.relative(cwd, r.out);
  // the output folder as given (an out: of the project file may hold anything): never a raw line break or escape
  const where = printable(rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? r.out : rel);
  const entries = [...r.clusters.map((c) => c.name), ...(r.fleet ? [FLEET_FOLDER] : [])];
  const names = new Set(entries);
  const created = new Set(r.created ?? []);
  const written = r.changed.filter((c) => names.has(c));
  const fresh = written.filter((c) => created.has(c)).length;
  const replaced = written.length - fresh;
  const removed = r.changed.length - written.length;
  const what = `${plural(r.clusters.length, 'cluster folder')}${r.fleet ? ` and ${FLEET_FOLDER}/` : ''}`;
  const counts = [
    ...(fresh > 0 ? [`${fresh} new`] : []), ...(replaced > 0 || fresh === 0 ? [`${replaced} replaced`] : []), ...(removed > 0 ? [`${removed} removed`] : []),
    ...(entries.length > written.length ? [`${entries.length - written.length} unchanged`] : []),
  ];
  const head = r.changed.length > 0
    ? `wrote ${r.files} files to ${where}: ${what} (${counts.join(', ')})`
    : `${where} already up to date (${r.files} files in ${what}, nothing rewritten)`;
  lines.push(`${head} in ${seconds(t.total)} (load ${seconds(t.load)}, render ${seconds(t.render)}, validate ${seconds(t.validate)}, write ${seconds(t.write)})`);
  return lines;
}
