import { readdirSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { ClusterOutcome, ClusterStage, ClusterSummary, entryFiles, hasError, PhaseTimes, processCluster, summaryOf, validationInputs } from './cluster-stage';
import { CheckFailed } from '../check/engine';
import { Finding } from '../check/rule';
import { FLEET_FOLDER, fleetFiles, renderFleet } from '../components/gitops/fleet';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { fsErrorText, InputError, isFsError } from '../errors';
import { pathProblem, usableFolder } from '../files';
import { renderOnThreads, renderThreads } from './fleet-workers';
import { clusterFiles } from './layout';
import { isDescriptionFile } from '../model/load';
import { loadModels } from '../model/load-models';
import { ClusterModel } from '../model/model';
import { allOutputEntries, byFile, Deletion, DeletionRefused, entryDeletions, removedEntries, treeObjects } from '../render/deletions';
import { RenderedFile } from '../render/folder-files';
import { Manifest, RenderedCluster, RenderedFolder } from '../render/manifest';
import { recoverOutput, TreeWriter } from '../render/write';
import { SchemaStore } from '../validate/schemas';
import { ManifestValidator, ValidationIssue } from '../validate/validator';

export { InputError, loadModels };
export { renderModel } from './cluster-stage';
export type { ClusterOutcome, ClusterStage, ClusterSummary, PhaseTimes } from './cluster-stage';

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
  /** The models of `configs`, already loaded (by the launcher's precheck): used instead of loading the files again. */
  readonly models?: readonly ClusterModel[];
  /** Folder of descriptions used when `configs` is empty (a project's `clusters:`); one of the two is needed. */
  readonly clustersDir?: string;
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
  /** Told after each cluster is rendered, validated, checked and written to its temporary name. */
  readonly progress?: (p: SynthProgress) => void;
}

export interface Timings {
  load: number;
  render: number;
  validate: number;
  write: number;
  total: number;
}

/** Progress of a render, one event per cluster rendered, checked and written (to its temporary name). */
export interface SynthProgress {
  /** Clusters done so far. */
  readonly done: number;
  readonly total: number;
  /** The cluster just done. */
  readonly cluster: string;
}

export interface SynthResult {
  /** The rendered clusters, in description order (counts only: the objects are not kept). */
  readonly clusters: readonly ClusterSummary[];
  /** The fleet folder (dist/fleet/), when the whole fleet was rendered. */
  readonly fleet?: ClusterSummary;
  readonly files: number;
  readonly warnings: readonly ValidationIssue[];
  /** Cross-object findings below error severity. */
  readonly findings: readonly Finding[];
  readonly timings: Timings;
  /** The output root (absolute). */
  readonly out: string;
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
  return clusters.flatMap((c) => validator.validateAll(validationInputs(c)));
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
  return usableFolder(out, `${flag} ${out}`, 'name a folder to render into');
}

function realOrResolved(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** The entry of `entries` (real paths -> what to name) that is `p` or one of its ancestors. */
function enclosing<T>(p: string, entries: ReadonlyMap<string, T>): T | undefined {
  for (let d = p; ; d = path.dirname(d)) {
    const hit = entries.get(d);
    if (hit !== undefined) return hit;
    if (path.dirname(d) === d) return undefined;
  }
}

/**
 * Refuses targets the write would destroy something in: a description being rendered, the current
 * directory. One real path per target and per description, then a walk up each description's
 * folders: linear in targets + descriptions (a fleet of 1000 clusters is 2000 look-ups, not a
 * million). `realpath` is a parameter for the tests that count its calls.
 */
export function checkTargets(targets: readonly string[], configs: readonly string[], realpath: (p: string) => string = realOrResolved): void {
  const real = new Map<string, string>();
  for (const t of targets) real.set(realpath(t), t);
  for (const c of configs) {
    const t = enclosing(realpath(c), real);
    if (t !== undefined) {
      throw new InputError(`${c}: the description lies inside ${t}, which synth replaces (it would be deleted by its own render); move it out of the output folder`);
    }
  }
  const t = enclosing(realpath(process.cwd()), real);
  if (t !== undefined) {
    throw new InputError(`${t} contains the current directory, and synth replaces all of it; run from elsewhere or choose another --out`);
  }
}

/**
 * What the fleet folder needs of a rendered cluster once its own folder is written: its name, model
 * and gitops folder (the root Application and the kinds the fleet's AppProject must permit).
 */
function fleetMember(model: ClusterModel, gitops: readonly Manifest[]): RenderedCluster {
  return { name: model.name, model, folders: [{ folder: GITOPS_FOLDER, description: '', objects: gitops }] };
}

/**
 * Load -> model -> for each cluster: render -> validate -> check -> write to its temporary name ->
 * (whole fleet: the fleet folder) -> swap every folder in at once. Only summaries, the fleet's
 * inputs and the findings are kept across clusters, so memory does not grow with the objects of the
 * fleet. A large fleet is shared out to worker threads (fleet-workers.ts), each streaming its
 * clusters into the same write. Each cluster's render is compared with its folder on disk (under the
 * output's lock): a render that removes rendered objects throws DeletionRefused unless allowDelete.
 * Throws InputError (exit 2), ValidationFailed, CheckFailed or DeletionRefused (exit 1); on any throw
 * the output is untouched (the temporary folders are deleted).
 */
export function synth(opts: SynthOptions, validator?: ManifestValidator): SynthResult {
  const t0 = now();
  const out = outputRoot(opts.out);
  const lockOptions = { command: 'synth', notify: opts.notify };
  // An interrupted earlier run is finished or undone before anything else.
  recoverOutput(out, lockOptions);
  const only = opts.configs && opts.configs.length > 0;
  if (!only && opts.clustersDir === undefined) throw new InputError('synth: name the descriptions (configs) or their folder (clustersDir)');
  const configs = only ? opts.configs! : descriptionFiles(opts.clustersDir!);
  if (configs.length === 0) throw new InputError(`no cluster descriptions in ${opts.clustersDir}`);
  const models = only && opts.models?.length === configs.length ? opts.models : loadModels(configs);
  // With --config each cluster replaces <out>/<cluster>/ only; without, the whole output root.
  checkTargets(only ? models.map((m) => path.join(out, m.name)) : [out], configs);
  const t1 = now();

  const v = opts.schemas === false ? undefined : validator ?? new ManifestValidator(SchemaStore.open(opts.schemas), { requireNamespace: true });
  const stage: ClusterStage = { validator: v, out };
  const time: PhaseTimes = { render: 0, validate: 0, write: 0 };
  const outcomes: ClusterOutcome[] = new Array(models.length);
  let done = 0;
  let failed = false;
  let invalid = false;
  let files = 0;
  const deleted: Deletion[] = [];
  const refuse = (d: readonly Deletion[]) => d.length > 0 && !opts.allowDelete;
  // The lock is taken before any cluster is rendered: each render is compared with the folder it replaces.
  const threads = renderThreads(models.length, opts.notify);
  const writer = TreeWriter.begin(out, { ...lockOptions, replaceAll: !only });
  /** Takes one cluster's outcome in: its folder is written unless something failed; then only counts are kept. */
  const take = (o: ClusterOutcome) => {
    time.render += o.time.render;
    time.validate += o.time.validate;
    time.write += o.time.write;
    invalid ||= hasError(o.issues);
    deleted.push(...o.deleted);
    // After the first error nothing more is written; the rest is still rendered and checked so that
    // every error is reported together. Alone, the temporary folders go at once; with other threads
    // writing, once they are done (the final abort).
    if (!failed && !o.valid) {
      failed = true;
      if (threads <= 1) writer.abort();
    }
    // Refused deletions are all listed, so the lock stays (the removed entries are read under it at the end).
    if (refuse(o.deleted)) failed = true;
    if (!failed) files += o.fileCount;
    // An unchanged folder is claimed whichever thread rendered it, so that replacing the whole output keeps it.
    if (!failed && o.valid && o.unchanged) {writer.keep(o.summary.name);} else if (!failed && o.files) {
      const start = now();
      // (processCluster compared the folder on disk already)
      if (threads > 1) writer.stage(o.summary.name, o.files, false);
      else writer.add(o.summary.name, o.files, false);
      time.write += now() - start;
    }
    // the gitops objects only for the fleet folder
    outcomes[o.index] = { ...o, files: undefined, gitops: only ? [] : o.gitops };
    done += 1;
    opts.progress?.({ done, total: models.length, cluster: o.summary.name });
  };
  try {
    if (threads > 1) {
      renderOnThreads(models, { threads, out, schemas: opts.schemas, failed: () => failed }, stage, {
        outcome: take,
        staged: (s) => writer.adopt(s),
      });
    } else {
      models.forEach((m, i) => take(processCluster(m, i, stage, invalid)));
    }
    const issues = outcomes.flatMap((o) => o.issues);
    const findings = outcomes.flatMap((o) => o.findings);
    if (hasError(issues)) throw new ValidationFailed(issues);
    if (hasError(findings)) throw new CheckFailed(findings);

    // Without --config the whole fleet is rendered, and dist/fleet/ points the hub at every cluster.
    let fleet: ClusterSummary | undefined;
    if (!only) {
      const start = now();
      const folder = renderFleetOf(outcomes.map((o, i) => fleetMember(models[i], o.gitops)));
      const fleetIssues = v ? v.validateAll(folder.objects.map((manifest) => ({ manifest, source: FLEET_FOLDER }))) : [];
      issues.push(...fleetIssues);
      if (hasError(fleetIssues)) throw new ValidationFailed(issues);
      fleet = summaryOf(FLEET_FOLDER, [folder]);
      const rendered = entryFiles(FLEET_FOLDER, fleetFiles(folder));
      files += rendered.length;
      deleted.push(...entryDeletions(out, FLEET_FOLDER, rendered, treeObjects(FLEET_FOLDER, [folder], true)));
      if (!refuse(deleted)) writer.add(FLEET_FOLDER, rendered);
      time.render += now() - start;
    }
    // Entries no longer rendered (a cluster dropped from the fleet) go with every object in them, and anything
    // else at the root (a file, a folder or a link of your own) counts as removed too.
    const renderedEntries = new Set([...models.map((m) => m.name), FLEET_FOLDER]);
    if (!only) deleted.push(...removedEntries(out, allOutputEntries(out).filter((name) => !renderedEntries.has(name))));
    // threads hand the clusters' deletions in any order
    deleted.sort(byFile);
    if (refuse(deleted)) throw new DeletionRefused(deleted, path.relative(process.cwd(), out) || out);
    // Every folder is complete at its temporary name: swap them in at once.
    const start = now();
    const changed = writer.commit();
    time.write += now() - start;
    const t4 = now();
    return {
      clusters: outcomes.map((o) => o.summary),
      fleet,
      files,
      warnings: issues,
      findings,
      out,
      written: only ? outcomes.map((o) => path.join(out, o.summary.name)) : [out],
      changed,
      deleted,
      timings: { load: t1 - t0, render: time.render, validate: time.validate, write: time.write, total: t4 - t0 },
    };
  } finally {
    writer.abort();
  }
}
