import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { consoleIo, EXIT, Io } from './io';
import { commandHelp, renderInputs } from './options';
import { Preloaded, preloadedModels } from './precheck';
import { DIFF } from './specs';
import { outputFormat } from '../errors';
import { FLEET_FOLDER } from '../model/names';
import { requireProject } from '../project/project-file';
import {
  clusterOf, deletedInCluster, deletionLines, fateContexts, hubApplications, HubApplications, keptInCluster, objectKey, outputEntries,
  readTreeObjects, removal, TreeObject,
} from '../render/deletions';
import { describeObject } from '../render/manifest';
import { changedFields, FieldChange, formatFieldChange } from '../render/object-diff';
import { isObjectPath } from '../render/tree';
import { isWriteArtifact, recoverOutput } from '../render/write';
import { outputRoot, synth } from '../synth/pipeline';

export type { TreeObject } from '../render/deletions';
export { changedFields } from '../render/object-diff';
export type { FieldChange } from '../render/object-diff';

export interface ObjectChange {
  readonly change: 'added' | 'removed' | 'changed';
  /** `Kind namespace/name`. */
  readonly object: string;
  /** The cluster folder (first path segment). */
  readonly cluster: string;
  readonly file: string;
  /** For `changed`: the differing fields. */
  readonly fields: readonly FieldChange[];
  /** For `removed`: set when the cluster keeps the object (a CRD, a Prune=false object: ClusterFate), saying what happens instead. */
  readonly stays?: string;
  /** For `removed`: set when Argo CD deletes it otherwise than at once and alone (Prune=confirm; an Application without the resources finalizer): how. */
  readonly note?: string;
}

export interface FileChange {
  readonly change: 'added' | 'removed' | 'changed';
  readonly file: string;
}

export interface TreeDiff {
  readonly objects: readonly ObjectChange[];
  /** Files that hold no objects (README.md, kustomization.yaml). */
  readonly files: readonly FileChange[];
}

/**
 * Object-level diff of two sets of rendered objects; objects match by cluster and identity (not version). A removed
 * object is judged in the context of the change (render/deletions.ts fateContexts; `hubs`: the fleet hub's
 * Applications before it, hubApplications).
 */
export function diffObjects(before: readonly TreeObject[], after: readonly TreeObject[], hubs: HubApplications = new Map()): ObjectChange[] {
  const old = new Map(before.map((o) => [objectKey(o), o]));
  const now = new Map(after.map((o) => [objectKey(o), o]));
  const contextOf = fateContexts(before, after, hubs);
  const out: ObjectChange[] = [];
  for (const [k, o] of old) {
    if (now.has(k)) continue;
    out.push({ change: 'removed', ...removal(o, contextOf(o)), fields: [] });
  }
  for (const [k, o] of now) {
    const prev = old.get(k);
    if (!prev) {
      out.push({ change: 'added', object: describeObject(o.manifest), cluster: clusterOf(o.file), file: o.file, fields: [] });
      continue;
    }
    const fields = changedFields(prev.manifest, o.manifest);
    if (prev.file !== o.file) fields.unshift({ path: '(file)', before: prev.file, after: o.file });
    if (fields.length > 0) out.push({ change: 'changed', object: describeObject(o.manifest), cluster: clusterOf(o.file), file: o.file, fields });
  }
  return out.sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

function allFiles(root: string, dir = root): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((n) => !isWriteArtifact(n)).sort().flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? allFiles(root, p) : [path.relative(root, p).split(path.sep).join('/')];
  });
}

/** The objects of `clusters` (folders under `root`; every folder when undefined), with root-relative files. */
function treeObjects(root: string, clusters?: readonly string[]): TreeObject[] {
  return readTreeObjects(root, clusters ?? outputEntries(root));
}

/** Diff of two rendered trees (e.g. the committed dist/ and a fresh render), limited to some clusters. */
export function diffTrees(beforeRoot: string, afterRoot: string, clusters?: readonly string[]): TreeDiff {
  const inScope = (f: string) => clusters === undefined || clusters.includes(clusterOf(f));
  // Client files (dist/<cluster>/tutorials/) are YAML but no objects: they are compared as files.
  const hubs = hubApplications(readTreeObjects(beforeRoot, [FLEET_FOLDER], () => undefined));
  const objects = diffObjects(treeObjects(beforeRoot, clusters), treeObjects(afterRoot, clusters), hubs);
  const before = new Set(allFiles(beforeRoot).filter((f) => inScope(f) && !isObjectPath(f)));
  const after = new Set(allFiles(afterRoot).filter((f) => inScope(f) && !isObjectPath(f)));
  const files: FileChange[] = [];
  for (const f of [...new Set([...before, ...after])].sort()) {
    if (!after.has(f)) files.push({ change: 'removed', file: f });
    else if (!before.has(f)) files.push({ change: 'added', file: f });
    else if (readFileSync(path.join(beforeRoot, f), 'utf8') !== readFileSync(path.join(afterRoot, f), 'utf8')) files.push({ change: 'changed', file: f });
  }
  return { objects, files };
}

const MARK = { added: '+', removed: '-', changed: '~' } as const;

/** Human-readable lines of a diff, grouped by cluster. */
export function formatDiff(d: TreeDiff): string[] {
  const lines: string[] = [];
  const clusters = [...new Set([...d.objects.map((o) => o.cluster), ...d.files.map((f) => clusterOf(f.file))])].sort();
  for (const c of clusters) {
    lines.push(`${c}:`);
    for (const o of d.objects.filter((x) => x.cluster === c)) {
      lines.push(`  ${MARK[o.change]} ${o.object} (${o.file.slice(c.length + 1)})`);
      for (const f of o.fields) lines.push(`      ${formatFieldChange(f)}`);
    }
    for (const f of d.files.filter((x) => clusterOf(x.file) === c)) lines.push(`  ${MARK[f.change]} file ${f.file.slice(c.length + 1)}`);
  }
  return lines;
}

/**
 * `diff`: renders into a temporary directory (the whole synth pipeline, validation and checks
 * included; the committed tree is never touched) and reports per object what would change.
 */

/** `preloaded`: descriptions the launcher's precheck already loaded (used when they are exactly the --config files). */
export function runDiff(args: string[], io: Io = consoleIo, preloaded?: Preloaded): number {
  const { values } = parseArgs({ args, options: DIFF.options, allowPositionals: false });
  if (values.help) {
    io.out(commandHelp(DIFF));
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  const { configs, schemas } = renderInputs(values);
  const project = configs.length === 0 || values.out === undefined ? requireProject('diff', '--config FILE ... and --out DIR') : undefined;
  const committed = outputRoot(values.out ?? project!.out);
  recoverOutput(committed, { command: 'diff', notify: io.err, reader: true });

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gpu-cluster-diff-'));
  try {
    const fresh = path.join(tmp, 'out');
    const result = synth({ configs, models: preloadedModels(preloaded, configs), clustersDir: project?.clusters, out: fresh, schemas });
    const clusters = configs.length > 0 ? result.clusters.map((c) => c.name) : undefined;
    const d = diffTrees(committed, fresh, clusters);
    const count = (c: ObjectChange['change']) => d.objects.filter((o) => o.change === c).length;
    const removed = count('removed');
    const deletions = d.objects.filter((o) => o.change === 'removed');
    // what Argo CD would delete in the cluster: what stays there (a CRD, a Prune=false object) asks nothing
    const pruned = deletedInCluster(deletions).length;
    const kept = keptInCluster(deletions).length;
    const refused = pruned > 0 && !values['allow-delete'];
    if (format === 'json') {
      io.out(JSON.stringify({ added: count('added'), removed, pruned, changed: count('changed'), objects: d.objects, files: d.files }, undefined, 2));
    } else if (!values.quiet) {
      for (const l of formatDiff(d)) io.out(l);
      io.out(d.objects.length + d.files.length === 0
        ? `no changes: ${path.relative(process.cwd(), committed) || '.'} matches a fresh render`
        : `${count('added')} added, ${removed} removed${kept > 0 ? ` (${kept} of them stay in the cluster)` : ''}, ${count('changed')} changed, ${d.files.length} other file(s)`);
    }
    // The deletions on standard error too, as synth lists what it refuses to remove.
    if (refused || !values.quiet) for (const l of deletionLines(refused && values.quiet ? deletedInCluster(deletions) : deletions)) io.err(l);
    if (refused) io.err(`error: ${pruned} object(s) would be deleted; re-run with --allow-delete if that is intended`);
    return refused ? EXIT.failed : EXIT.ok;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
