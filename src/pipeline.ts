import { readdirSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { CheckFailed, checkClusters } from './check/engine';
import { Finding, ScopeOf } from './check/rule';
import { fleetFiles, renderFleet } from './components/gitops/fleet';
import { fsErrorText, InputError, isFsError } from './errors';
import { isInside, pathProblem } from './files';
import { isDescriptionFile } from './model/load';
import { loadModels } from './model/load-models';
import { ClusterModel } from './model/model';
import { Deletion, DeletionRefused, readTreeObjects, removedObjects, TreeObject } from './render/deletions';
import { clusterFiles, RenderedFile } from './render/layout';
import { manifestFileName, RenderedFolder } from './render/manifest';
import { renderCluster, RenderedCluster } from './render/render';
import { EntryChange, recoverOutput, TreeEntry, writeTrees } from './render/write';
import { SchemaStore } from './validate/schemas';
import { ManifestValidator, ValidationIssue } from './validate/validator';

export { InputError, loadModels };

/** Rendered objects that fail schema validation. Exit code 1. */
export class ValidationFailed extends Error {
  constructor(readonly issues: readonly ValidationIssue[]) {
    super(`${issues.filter((i) => i.severity === 'error').length} schema validation error(s)`);
    this.name = 'ValidationFailed';
  }
}

export interface SynthOptions {
  /** Description files; default: every description in `clustersDir`. */
  readonly configs?: readonly string[];
  /** Folder of descriptions used when `configs` is empty. */
  readonly clustersDir: string;
  /**
   * Output root. With `configs`, each cluster replaces `<out>/<cluster>/` only; without, the
   * whole `<out>` becomes the rendered fleet.
   */
  readonly out: string;
  /** Schema directories to validate against, or false to skip validation. */
  readonly schemas: readonly string[] | false;
  /** Told when the output folder is locked by another command and synth waits for it. */
  readonly notify?: (line: string) => void;
  /**
   * Remove rendered objects from the output (a dropped tenant, folder or cluster). Without it, a render
   * that would remove any throws DeletionRefused and writes nothing: Argo CD prunes what leaves dist/.
   * @default false
   */
  readonly allowDelete?: boolean;
}

export interface Timings {
  load: number;
  render: number;
  validate: number;
  write: number;
  total: number;
}

export interface SynthResult {
  readonly clusters: readonly RenderedCluster[];
  readonly files: number;
  readonly warnings: readonly ValidationIssue[];
  /** Cross-object findings below error severity. */
  readonly findings: readonly Finding[];
  readonly timings: Timings;
  /** Folders that were replaced. */
  readonly written: readonly string[];
  /** Output entries (cluster folders, fleet/) that changed: replaced or removed. Empty: the output was up to date. */
  readonly changed: readonly string[];
  /** Rendered objects removed from the output (only with allowDelete). */
  readonly deleted: readonly Deletion[];
}

/** Description files of a folder: *.yaml, *.yml, *.json (not *.schema.json), *.ts (not *.d.ts), sorted. */
export function descriptionFiles(dir: string): string[] {
  return readdirSync(dir).filter(isDescriptionFile).sort().map((f) => path.join(dir, f));
}


/** Renders one model; a construct that refuses its props is bad input. */
export function renderModel(model: ClusterModel): RenderedCluster {
  try {
    return renderCluster(model);
  } catch (e) {
    throw new InputError(`${model.name}: cannot render`, [(e as Error).message]);
  }
}

/** The fleet folder (dist/fleet/) of the rendered clusters; a cluster that cannot join the fleet is bad input. */
export function renderFleetOf(clusters: readonly RenderedCluster[]): RenderedFolder {
  try {
    return renderFleet(clusters);
  } catch (e) {
    throw new InputError('fleet: cannot render', [(e as Error).message]);
  }
}

/**
 * Validates every object of the rendered clusters against the upstream schemas. Duplicates are
 * looked for per cluster: each cluster is its own API server.
 */
export function validateClusters(clusters: readonly RenderedCluster[], validator: ManifestValidator): ValidationIssue[] {
  return clusters.flatMap((c) => validator.validateAll(
    c.folders.flatMap((f) => f.objects.map((manifest) => ({ manifest, source: `${c.name}/${f.folder}` })))));
}

/** The files of a set of rendered clusters, relative to the output root. */
export function renderFiles(clusters: readonly RenderedCluster[]): RenderedFile[] {
  return clusters.flatMap(clusterFiles);
}

const now = () => performance.now();

/**
 * Checks an output folder argument before anything is rendered: not empty, not too long, a folder
 * (or absent). Returns it resolved.
 */
export function outputRoot(out: string, flag = '--out'): string {
  if (out === '') throw new InputError(`${flag} "": empty path; name the output folder (default: dist/)`);
  const problem = pathProblem(out);
  if (problem) throw new InputError(`${flag} ${out}: the path ${problem}`);
  let st;
  try {
    st = statSync(out, { throwIfNoEntry: false });
  } catch (e) {
    if (isFsError(e)) throw new InputError(`${flag} ${out}: ${fsErrorText(e)}`);
    throw e;
  }
  if (st && !st.isDirectory()) throw new InputError(`${flag} ${out}: not a folder; name a folder to render into`);
  return path.resolve(out);
}

function realOrResolved(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** Refuses targets the write would destroy something in: a description being rendered, the current directory. */
function checkTargets(targets: readonly string[], configs: readonly string[]): void {
  for (const t of targets) {
    const real = realOrResolved(t);
    for (const c of configs) {
      if (isInside(realOrResolved(c), real)) {
        throw new InputError(`${c}: the description lies inside ${t}, which synth replaces (it would be deleted by its own render); move it out of the output folder`);
      }
    }
    if (isInside(realOrResolved(process.cwd()), real)) {
      throw new InputError(`${t} contains the current directory, and synth replaces all of it; run from elsewhere or choose another --out`);
    }
  }
}

/** The rendered files grouped by their first path segment (a cluster folder, fleet/). */
function entriesOf(files: readonly RenderedFile[]): TreeEntry[] {
  const groups = new Map<string, RenderedFile[]>();
  for (const [p, content] of files) {
    const slash = p.indexOf('/');
    if (slash <= 0) throw new Error(`rendered file ${p} is not inside a folder`);
    const name = p.slice(0, slash);
    const list = groups.get(name) ?? [];
    list.push([p.slice(slash + 1), content]);
    groups.set(name, list);
  }
  return [...groups].map(([name, list]) => ({ name, files: list }));
}

/** The rendered objects of each output entry (cluster folder, fleet/), with root-relative files. */
function renderedObjects(clusters: readonly RenderedCluster[], fleet: RenderedFolder | undefined): Map<string, TreeObject[]> {
  const byEntry = new Map<string, TreeObject[]>();
  const add = (entry: string, folder: string | undefined, f: RenderedFolder) => {
    const list = byEntry.get(entry) ?? [];
    for (const manifest of f.objects) list.push({ file: [entry, folder, manifestFileName(manifest)].filter((p) => p !== undefined).join('/'), manifest });
    byEntry.set(entry, list);
  };
  for (const c of clusters) for (const f of c.folders) add(c.name, f.folder, f);
  if (fleet) add(fleet.folder, undefined, fleet);
  return byEntry;
}

/**
 * The rendered objects a write removes: those of the entries it replaces that the new render no longer
 * holds, and all of those it removes (a cluster dropped from the fleet). A file of the old tree that is
 * no YAML counts as removed when the new render does not rewrite it.
 */
function deletionsOf(root: string, changes: readonly EntryChange[], rendered: ReadonlyMap<string, readonly TreeObject[]>): Deletion[] {
  const out: Deletion[] = [];
  for (const change of changes) {
    const rewritten = new Set((change.files ?? []).map(([rel]) => `${change.name}/${rel}`));
    const before = readTreeObjects(root, [change.name], (file, reason) => {
      if (!rewritten.has(file)) out.push({ cluster: change.name, object: `the objects of an unreadable file (${reason})`, file });
    });
    out.push(...removedObjects(before, rendered.get(change.name) ?? []));
  }
  return out;
}

/**
 * Load -> model -> render -> validate -> check -> write atomically. Throws InputError (exit 2),
 * ValidationFailed, CheckFailed or DeletionRefused (exit 1); on any throw the output is untouched.
 */
export function synth(opts: SynthOptions, validator?: ManifestValidator): SynthResult {
  const t0 = now();
  const out = outputRoot(opts.out);
  const lockOptions = { command: 'synth', notify: opts.notify };
  // An interrupted earlier run is finished or undone before anything else.
  recoverOutput(out, lockOptions);
  const configs = opts.configs && opts.configs.length > 0 ? opts.configs : descriptionFiles(opts.clustersDir);
  if (configs.length === 0) throw new InputError(`no cluster descriptions in ${opts.clustersDir}`);
  const models = loadModels(configs);
  const t1 = now();
  const clusters = models.map(renderModel);
  // Without --config the whole fleet is rendered, and dist/fleet/ points the hub at every cluster.
  const fleet = opts.configs && opts.configs.length > 0 ? undefined : renderFleetOf(clusters);
  const t2 = now();

  let warnings: ValidationIssue[] = [];
  let scopeOf: ScopeOf | undefined;
  if (opts.schemas !== false) {
    const v = validator ?? new ManifestValidator(SchemaStore.open(opts.schemas), { requireNamespace: true });
    const issues = [...validateClusters(clusters, v), ...(fleet ? v.validateAll(fleet.objects.map((manifest) => ({ manifest, source: 'fleet' }))) : [])];
    if (issues.some((i) => i.severity === 'error')) throw new ValidationFailed(issues);
    warnings = issues;
    scopeOf = (apiVersion, kind) => v.store.lookup(apiVersion, kind)?.scope;
  }
  // Cross-object rules (src/check) before the swap: a broken cluster is never written. The rules that need
  // the engines' renders of the managed installs are `check`'s (they report nothing here).
  const findings = checkClusters(clusters, { scopeOf });
  if (findings.some((f) => f.severity === 'error')) throw new CheckFailed(findings);
  const t3 = now();

  const written: string[] = [];
  let changed: string[];
  let files = 0;
  // Checked under the output's lock, on what the write is about to replace.
  let deleted: Deletion[] = [];
  const rendered = renderedObjects(clusters, fleet);
  const beforeWrite = (root: string, entryChanges: readonly EntryChange[]) => {
    deleted = deletionsOf(root, entryChanges, rendered);
    if (deleted.length > 0 && !opts.allowDelete) throw new DeletionRefused(deleted, path.relative(process.cwd(), root) || root);
  };
  if (opts.configs && opts.configs.length > 0) {
    const entries = entriesOf(renderFiles(clusters));
    for (const e of entries) {
      files += (e.files as RenderedFile[]).length;
      written.push(path.join(out, e.name));
    }
    checkTargets(written, configs);
    changed = writeTrees(out, entries, { ...lockOptions, beforeWrite });
  } else {
    const all = [...renderFiles(clusters), ...(fleet ? fleetFiles(fleet) : [])];
    files = all.length;
    checkTargets([out], configs);
    // The whole output root becomes the fleet: entries no longer rendered are removed.
    changed = writeTrees(out, entriesOf(all), { ...lockOptions, replaceAll: true, beforeWrite });
    written.push(out);
  }
  const t4 = now();
  return {
    clusters,
    files,
    warnings,
    findings,
    written,
    changed,
    deleted,
    timings: { load: t1 - t0, render: t2 - t1, validate: t3 - t2, write: t4 - t3, total: t4 - t0 },
  };
}
