import * as path from 'node:path';
import { isBrokenInstall } from '../cache/asset-sums';
import { SchemaOf, ScopeOf } from '../check/cluster-view';
import { checkCluster } from '../check/engine';
import { MultiKueueFacts, multiKueueFacts } from '../check/multikueue';
import { Finding } from '../check/rule';
import { FleetEntry, fleetEntryOf } from '../components/gitops/fleet';
import { GITOPS_FOLDER } from '../components/gitops/plan';
import { InputError } from '../errors';
import { clusterFiles } from './layout';
import { renderCluster } from './render';
import { faultPoint } from '../fault';
import { ClusterModel } from '../model/model';
import { Deletion, entryDeletions, treeObjects } from '../render/deletions';
import { RenderedFile } from '../render/folder-files';
import { Manifest, RenderedCluster, RenderedFolder, ValidationInput } from '../render/manifest';
import { holdsExactly } from '../render/write';
import { ManifestValidator, ValidationIssue } from '../validate/validator';

/**
 * One cluster's stage of synth: render, validate, check, and its files; what the main thread and the
 * render workers (fleet-workers.ts) both run. Its outcome is plain data, so it crosses threads.
 */

const now = () => performance.now();

/** What synth keeps of one rendered cluster once its folder is written: counts for the summary. */
export interface ClusterSummary {
  readonly name: string;
  /** Objects rendered. */
  readonly objects: number;
  /** Objects per component folder and kind. */
  readonly folders: readonly { readonly folder: string; readonly objects: number; readonly kinds: Readonly<Record<string, number>> }[];
}

/** Renders one model; a construct that refuses its props is bad input. */
export function renderModel(model: ClusterModel): RenderedCluster {
  try {
    return renderCluster(model);
  } catch (e) {
    if (isBrokenInstall(e)) throw e;
    throw new InputError(`${model.name}: cannot render`, [(e as Error).message]);
  }
}

/** The objects of one rendered cluster as validation inputs (source: `<cluster>/<folder>`). */
export function validationInputs(c: RenderedCluster): ValidationInput[] {
  return c.folders.flatMap((f) => f.objects.map((manifest) => ({ manifest, source: `${c.name}/${f.folder}` })));
}

/** Objects per folder and kind of a rendered cluster (what the summary prints). */
export function summaryOf(name: string, folders: readonly RenderedFolder[]): ClusterSummary {
  const summary = folders.map((f) => {
    const kinds: Record<string, number> = {};
    for (const o of f.objects) kinds[o.kind] = (kinds[o.kind] ?? 0) + 1;
    return { folder: f.folder, objects: f.objects.length, kinds };
  });
  return { name, objects: summary.reduce((n, f) => n + f.objects, 0), folders: summary };
}

/** The files of one output entry (a cluster folder, fleet/), relative to the entry. */
export function entryFiles(name: string, files: readonly RenderedFile[]): RenderedFile[] {
  return files.map(([p, content]): RenderedFile => {
    if (!p.startsWith(`${name}/`)) throw new Error(`rendered file ${p} is not inside ${name}/`);
    return [p.slice(name.length + 1), content];
  });
}

/** What a thread needs to render, validate and check clusters. */
export interface ClusterStage {
  readonly validator?: ManifestValidator;
  /**
   * The output root the clusters are written to, whose objects each render is compared with (the
   * deletions); the caller holds its lock. Absent: no comparison.
   */
  readonly out?: string;
  /** The whole fleet is rendered: each outcome carries its fleet entry (for the fleet folder). */
  readonly fleet?: boolean;
}

/** Milliseconds spent per phase. */
export interface PhaseTimes {
  render: number;
  validate: number;
  write: number;
}

/** What one cluster leaves behind once rendered, validated and checked: plain data (it crosses threads). */
export interface ClusterOutcome {
  readonly index: number;
  readonly summary: ClusterSummary;
  readonly issues: readonly ValidationIssue[];
  readonly findings: readonly Finding[];
  /** Its folder on disk holds exactly its files already (nothing to write). */
  readonly unchanged: boolean;
  /** The rendered objects its folder on disk holds and the new render does not (Argo CD would prune them). */
  readonly deleted: readonly Deletion[];
  /** What the fleet folder needs of it (ClusterStage.fleet), or why it cannot join the fleet. */
  readonly fleet?: FleetEntry | { readonly error: string };
  /** What the checks across a MultiKueue fleet need of it (ClusterStage.fleet; undefined outside a fleet). */
  readonly multiKueue?: MultiKueueFacts;
  /** No validation or check error: its folder may be written. */
  readonly valid: boolean;
  /** Its files, relative to its folder (absent when invalid, and once written by another thread). */
  readonly files?: readonly RenderedFile[];
  readonly fileCount: number;
  readonly time: PhaseTimes;
}

export const hasError = (xs: readonly { severity: string }[]) => xs.some((x) => x.severity === 'error');

/**
 * Renders, validates and checks one cluster (the checks are skipped once a validation error was
 * found anywhere: that run fails as a validation failure). Throws InputError when a construct
 * refuses the description.
 */
export function processCluster(model: ClusterModel, index: number, stage: ClusterStage, invalidBefore: boolean): ClusterOutcome {
  const time: PhaseTimes = { render: 0, validate: 0, write: 0 };
  const timed = <T>(phase: keyof PhaseTimes, f: () => T): T => {
    const start = now();
    try {
      return f();
    } finally {
      time[phase] += now() - start;
    }
  };
  faultPoint('render');
  const c = timed('render', () => renderModel(model));
  const v = stage.validator;
  const issues = v ? timed('validate', () => v.validateAll(validationInputs(c))) : [];
  const scopeOf: ScopeOf | undefined = v ? (apiVersion, kind) => v.store.lookup(apiVersion, kind)?.scope : undefined;
  const schemaOf: SchemaOf | undefined = v ? (apiVersion, kind) => v.store.lookup(apiVersion, kind)?.schema : undefined;
  const invalid = invalidBefore || hasError(issues);
  const findings = invalid ? [] : timed('validate', () => checkCluster(c, { scopeOf, schemaOf }));
  const valid = !invalid && !hasError(findings);
  const files = valid ? timed('write', () => entryFiles(c.name, clusterFiles(c))) : undefined;
  // Compared with its folder on disk once: unchanged (then nothing is read again or written), or its deletions.
  const target = files && stage.out ? path.join(stage.out, c.name) : undefined;
  const unchanged = target !== undefined && timed('write', () => holdsExactly(target, files!));
  const deleted = target !== undefined && !unchanged ? timed('write', () => entryDeletions(stage.out!, c.name, files!, treeObjects(c.name, c.folders))) : [];
  const summary = summaryOf(c.name, c.folders);
  const fleet = stage.fleet ? fleetEntry(c) : undefined;
  const multiKueue = stage.fleet && valid ? multiKueueFacts(c) : undefined;
  return { index, summary, issues, findings, unchanged, deleted, fleet, multiKueue, valid, files, fileCount: files?.length ?? 0, time };
}

function fleetEntry(c: RenderedCluster): FleetEntry | { error: string } {
  try {
    return fleetEntryOf(c);
  } catch (e) {
    return { error: (e as Error).message };
  }
}
