import { readdirSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { ClusterOutcome, ClusterStage, ClusterSummary, entryFiles, hasError, PhaseTimes, processCluster, summaryOf, validationInputs } from './cluster-stage';
import { isBrokenInstall } from '../cache/asset-sums';
import { CheckFailed } from '../check/engine';
import { checkFleet, MultiKueueFacts } from '../check/multikueue';
import { Finding } from '../check/rule';
import { FLEET_FOLDER, FleetEntry, fleetFiles, renderFleet, renderFleetOfEntries } from '../components/gitops/fleet';
import { fsErrorText, InputError, isFsError } from '../errors';
import { pathProblem, usableFolder } from '../files';
import { renderOnThreads, renderThreads } from './fleet-workers';
import { clusterFiles } from './layout';
import { isDescriptionFile } from '../model/description-files';
import { loadModels } from '../model/load-models';
import { ClusterModel } from '../model/model';
import { allOutputEntries, byFile, Deletion, DeletionRefused, entryDeletions, needAllowDelete, removedEntries, treeObjects } from '../render/deletions';
import { RenderedFile } from '../render/folder-files';
import { Manifest, RenderedCluster, RenderedFolder } from '../render/manifest';
import { recoverOutput, TreeWriter } from '../render/write';
import { FLEET_REPORT_FILE, fleetReport } from '../report/fleet';
import { SchemaStore } from '../validate/schemas';
import { ManifestValidator, ValidationIssue } from '../validate/validator';

export { InputError, loadModels };
export { renderModel } from './cluster-stage';
export type { ClusterOutcome, ClusterStage, ClusterSummary, PhaseTimes } from './cluster-stage';

/**
 * Renders each model and runs the cross-object rules over it as synth does (processCluster), writing nothing and
 * without schema validation (for a caller whose API server validates: rehearse's twin). Throws CheckFailed with
 * every finding when one is an error, as synth would; answers the findings (warnings) otherwise.
 */
export function checkModels(models: readonly ClusterModel[]): Finding[] {
  const findings = models.flatMap((m, i) => processCluster(m, i, {}, false).findings);
  if (hasError(findings)) throw new CheckFailed(findings);
  return findings;
}

/**
 * CheckFailed as bad input (exit 2): synth's lines, one per finding, then one naming `what` was rendered. For a command
 * that takes a description and writes no render (rehearse): there a render that fails its checks is its input's fault.
 */
export function checkFailedInput(e: CheckFailed, what: string): InputError {
  return new InputError(`${what}: its render fails the cross-object checks (${e.message}) as synth reports them`, e.lines());
}

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
   * that would remove any throws DeletionRefused and writes nothing: Argo CD prunes what leaves dist/
   * (what the cluster keeps excepted: a CRD, a Prune=false object; removing it needs no allowDelete, Deletion.stays says why).
   * @default false
   */
  readonly allowDelete?: boolean;
  /** Told after each cluster is rendered, validated, checked and written to its temporary name. */
  readonly progress?: (p: SynthProgress) => void;
  /**
   * Clusters of the whole fleet (no `configs`) not to render again, by description file (as descriptionFiles
   * names it): their folders are on disk as this same toolkit rendered them from these same descriptions (the
   * launcher's up-to-date record says so), so they are kept as they are, and what the summary and the fleet folder
   * need of them is taken from here. Only the other descriptions are loaded, rendered, validated and checked; the
   * fleet folder is rendered from every cluster's entry, so the output is byte for byte a full render's.
   */
  readonly reuse?: ReadonlyMap<string, ReusedCluster>;
}

/** What a rendered cluster leaves for the summary and the fleet folder (plain data: an up-to-date record keeps it). */
export interface ReusedCluster {
  readonly summary: ClusterSummary;
  readonly fleet: FleetEntry;
  /** Its schema validation warnings and its cross-object findings below error severity. */
  readonly warnings: readonly ValidationIssue[];
  readonly findings: readonly Finding[];
  readonly fileCount: number;
  /** What the checks across a MultiKueue fleet need of it (undefined outside a fleet). */
  readonly multiKueue?: MultiKueueFacts;
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
  /** Output entries (cluster folders, fleet/) that changed: written for the first time, replaced or removed. Empty: the output was up to date. */
  readonly changed: readonly string[];
  /** Of `changed`, the entries that did not exist before (the first synth into no output folder: all of them). */
  readonly created?: readonly string[];
  /** Rendered objects removed from the output: with allowDelete; without it only those the cluster keeps (with `stays`: a CRD, a Prune=false object). */
  readonly deleted: readonly Deletion[];
  /** The whole fleet: every cluster by its description file, as a later run may reuse it (SynthOptions.reuse), in description order. */
  readonly members?: readonly (ReusedCluster & { readonly config: string })[];
  /** The clusters rendered (not reused), by name. */
  readonly rendered: readonly string[];
  /** Where each cluster's Argo CD reads it (gitops.repoURL and targetRevision), in description order. */
  readonly sources: readonly { readonly cluster: string; readonly repoURL: string; readonly targetRevision: string }[];
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
    if (isBrokenInstall(e)) throw e;
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

/** The fleet folder of the clusters' fleet entries; a cluster that cannot join the fleet is bad input. */
function fleetFolderOf(entries: ReadonlyArray<FleetEntry | { readonly error: string } | undefined>): RenderedFolder {
  try {
    return renderFleetOfEntries(entries.map((e) => {
      if (e === undefined || 'error' in e) throw new Error(e?.error ?? 'a cluster has no fleet entry');
      return e;
    }));
  } catch (e) {
    if (isBrokenInstall(e)) throw e;
    throw new InputError('fleet: cannot render', [(e as Error).message]);
  }
}

/** The outcome of a reused cluster: kept as it is on disk, its summary and findings as recorded. */
function reusedOutcome(r: ReusedCluster, index: number): ClusterOutcome {
  return {
    index,
    summary: r.summary,
    issues: r.warnings,
    findings: r.findings,
    unchanged: true,
    deleted: [],
    fleet: r.fleet,
    multiKueue: r.multiKueue,
    valid: true,
    fileCount: r.fileCount,
    time: { render: 0, validate: 0, write: 0 },
  };
}

/**
 * The models of the descriptions to render, beside the names the reused clusters keep. A description that takes the
 * name of a reused cluster is bad input, said as a full render says it (every description loaded).
 */
function modelsBesides(configs: readonly string[], reuse: ReadonlyMap<string, ReusedCluster>): (ClusterModel | undefined)[] {
  const fresh = configs.filter((c) => !reuse.has(c));
  const loaded = fresh.length > 0 ? loadModels(fresh) : [];
  const kept = new Set([...reuse.values()].map((r) => r.summary.name));
  if (loaded.some((m) => kept.has(m.name))) return loadModels(configs);
  const ofFile = new Map(fresh.map((c, i) => [c, loaded[i]]));
  return configs.map((c) => ofFile.get(c));
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
  const listed = new Set(configs);
  const reuse = only ? new Map<string, ReusedCluster>() : new Map([...opts.reuse ?? []].filter(([c]) => listed.has(c)));
  // each description's model, or undefined for a reused cluster
  let slots: (ClusterModel | undefined)[] = reuse.size > 0 ? modelsBesides(configs, reuse)
    : only && opts.models?.length === configs.length ? [...opts.models] : loadModels(configs);
  // A changed member of a MultiKueue fleet changes the others' renders (the manager's quotas are its workers'): all render again.
  if (reuse.size > 0 && slots.some((m) => m?.multiKueue !== undefined)) {
    for (const [c, r] of reuse) if (r.multiKueue !== undefined) reuse.delete(c);
    slots = reuse.size > 0 ? modelsBesides(configs, reuse) : loadModels(configs);
  }
  const names = slots.map((m, i) => m?.name ?? reuse.get(configs[i])!.summary.name);
  // With --config each cluster replaces <out>/<cluster>/ only; without, the whole output root.
  checkTargets(only ? names.map((n) => path.join(out, n)) : [out], configs);
  const t1 = now();

  const work = slots.flatMap((m, index) => (m ? [{ model: m, index }] : []));
  const v = opts.schemas === false ? undefined : validator ?? new ManifestValidator(SchemaStore.open(opts.schemas), { requireNamespace: true });
  const stage: ClusterStage = { validator: v, out, fleet: !only };
  const time: PhaseTimes = { render: 0, validate: 0, write: 0 };
  const outcomes: ClusterOutcome[] = new Array(configs.length);
  let done = 0;
  let failed = false;
  let invalid = false;
  let files = 0;
  const deleted: Deletion[] = [];
  const refuse = (d: readonly Deletion[]) => needAllowDelete(d).length > 0 && !opts.allowDelete;
  // The lock is taken before any cluster is rendered: each render is compared with the folder it replaces.
  const threads = renderThreads(work.length, opts.notify);
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
    outcomes[o.index] = { ...o, files: undefined };
    done += 1;
    opts.progress?.({ done, total: work.length, cluster: o.summary.name });
  };
  try {
    // reused clusters first: their folders are kept as they are
    configs.forEach((c, i) => {
      const r = reuse.get(c);
      if (!r) return;
      writer.keep(r.summary.name);
      files += r.fileCount;
      outcomes[i] = reusedOutcome(r, i);
    });
    if (threads > 1) {
      renderOnThreads(work.map((w) => w.model), { threads, out, schemas: opts.schemas, failed: () => failed }, stage, {
        outcome: (o) => take({ ...o, index: work[o.index].index }),
        staged: (s) => writer.adopt(s),
      });
    } else {
      for (const w of work) take(processCluster(w.model, w.index, stage, invalid));
    }
    const issues = outcomes.flatMap((o) => o.issues);
    const findings = outcomes.flatMap((o) => o.findings);
    if (hasError(issues)) throw new ValidationFailed(issues);
    if (hasError(findings)) throw new CheckFailed(findings);
    // Across a MultiKueue fleet (fleet.yaml): its page, and the rules over what every member rendered.
    const facts = only ? [] : outcomes.flatMap((o) => (o.multiKueue ? [o.multiKueue] : []));
    const fleetPage = facts.length > 0 ? fleetReport(facts) : undefined;
    findings.push(...checkFleet({ facts, clusters: new Set(names), complete: true, fleetPage }));
    if (hasError(findings)) throw new CheckFailed(findings);

    // Without --config the whole fleet is rendered, and dist/fleet/ points the hub at every cluster.
    let fleet: ClusterSummary | undefined;
    if (!only) {
      const start = now();
      const folder = fleetFolderOf(outcomes.map((o) => o.fleet));
      const fleetIssues = v ? v.validateAll(folder.objects.map((manifest) => ({ manifest, source: FLEET_FOLDER }))) : [];
      issues.push(...fleetIssues);
      if (hasError(fleetIssues)) throw new ValidationFailed(issues);
      fleet = summaryOf(FLEET_FOLDER, [folder]);
      const rendered = entryFiles(FLEET_FOLDER, [...fleetFiles(folder), ...(fleetPage === undefined ? [] : [[`${FLEET_FOLDER}/${FLEET_REPORT_FILE}`, fleetPage] as const])]);
      files += rendered.length;
      deleted.push(...entryDeletions(out, FLEET_FOLDER, rendered, treeObjects(FLEET_FOLDER, [folder], true)));
      if (!refuse(deleted)) writer.add(FLEET_FOLDER, rendered);
      time.render += now() - start;
    }
    // Entries no longer rendered (a cluster dropped from the fleet) go with every object in them, and anything
    // else at the root (a file, a folder or a link of your own) counts as removed too.
    const renderedEntries = new Set([...names, FLEET_FOLDER]);
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
      created: writer.created,
      deleted,
      members: only ? undefined : outcomes.map((o, i) => ({
        config: configs[i],
        summary: o.summary,
        fleet: o.fleet as FleetEntry,
        ...(o.multiKueue ? { multiKueue: o.multiKueue } : {}),
        warnings: o.issues,
        findings: o.findings,
        fileCount: o.fileCount,
      })),
      rendered: work.map((w) => names[w.index]),
      sources: outcomes.flatMap((o) => (o.fleet && 'member' in o.fleet ? [o.fleet.member] : []))
        .map(({ cluster, repoURL, targetRevision }) => ({ cluster, repoURL, targetRevision })),
      timings: { load: t1 - t0, render: time.render, validate: time.validate, write: time.write, total: t4 - t0 },
    };
  } finally {
    writer.abort();
  }
}
