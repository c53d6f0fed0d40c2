import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { describe, KubeClient, KubeObject } from './kube-client';
import { conditionOf, KUEUE_API, workloadOwnedBy } from './kueue';
import { coveredResources, nominalQuota, nominalQuotasAsWritten } from '../check/kueue';
import { LABELS, RESOURCES } from '../model/names';
import { parseQuantity, sumAsWritten } from '../model/quantity';
import { Manifest } from '../render/manifest';

/**
 * The sample jobs of a rendered cluster that Kueue manages, submitted to a twin, and what Kueue does with them across a
 * change (rehearse --from, issue 51): each job's Workload read before the push, while it converges and after, as real
 * Kueue reports it (its Admitted, QuotaReserved and Evicted conditions, the admission's ClusterQueue and usage).
 */

type Json = Record<string, any>;

/** The samples folder of a rendered cluster (what its kustomization lists: the templates a user copies are left out). */
const SAMPLES_FOLDER = 'samples';

/** The objects of the samples folder that name a Kueue queue (the kueue.x-k8s.io/queue-name label). */
export function queuedSamples(clusterDir: string): KubeObject[] {
  const dir = path.join(clusterDir, SAMPLES_FOLDER);
  let listed: string[];
  let text: string;
  try {
    text = readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8');
  } catch (e) {
    // a cluster without samples
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  listed = ((parse(text) as { resources?: string[] } | null)?.resources ?? []);
  return listed.map((f) => parse(readFileSync(path.join(dir, f), 'utf8')) as KubeObject)
    .filter((o) => typeof (o.metadata.labels as Json | undefined)?.[LABELS.queueName] === 'string');
}

/** A job's Workload as the change report reads it. */
export interface WorkloadState {
  /**
   * admitted, pending (no quota reserved), evicted (Evicted True: preempted, its queue stopped, ...), finished, unmanaged
   * (the job is there, Kueue made no Workload for it), gone (neither).
   */
  readonly state: 'admitted' | 'pending' | 'evicted' | 'finished' | 'unmanaged' | 'gone';
  /** The condition that says why (Evicted's, QuotaReserved's when pending): its reason and message. */
  readonly reason?: string;
  readonly message?: string;
  /** The ClusterQueue that admitted it. */
  readonly clusterQueue?: string;
  /** What its admission holds: each resource in each flavor Kueue assigned it, by resource and flavor. */
  readonly holds?: readonly Holding[];
}

/** What an admission holds of one resource in one flavor, summed over the pod sets Kueue gave that flavor. */
export interface Holding {
  readonly resource: string;
  /** The flavor Kueue assigned (undefined: the admission names none). */
  readonly flavor?: string;
  readonly amount: number;
  /** The amount as Kueue wrote it (each pod set's usage; summed in their unit: model/quantity.ts sumAsWritten). */
  readonly written: string;
  /** Its ClusterQueue's nominal quota of the resource in that flavor when read (withNominal); undefined where it covers none. */
  readonly nominal?: number;
  /** The nominal quota as the ClusterQueue writes it. */
  readonly nominalWritten?: string;
}

/** Reads a Workload (undefined: none) into its state. */
export function workloadState(w: Json | undefined): WorkloadState {
  if (!w) return { state: 'gone' };
  const why = (c: Json | undefined) => ({
    ...(c?.reason ? { reason: String(c.reason) } : {}),
    ...(c?.message ? { message: String(c.message) } : {}),
  });
  const finished = conditionOf(w, 'Finished');
  if (finished?.status === 'True') return { state: 'finished', ...why(finished) };
  const evicted = conditionOf(w, 'Evicted');
  const admitted = conditionOf(w, 'Admitted');
  if (evicted?.status === 'True' && admitted?.status !== 'True') return { state: 'evicted', ...why(evicted) };
  if (admitted?.status === 'True') {
    // a pod set's usage of a resource counts against the flavor Kueue assigned that pod set for it
    const usage = new Map<string, { resource: string; flavor?: string; written: (string | number)[] }>();
    for (const a of (w.status?.admission?.podSetAssignments ?? []) as Json[]) {
      for (const [resource, q] of Object.entries((a.resourceUsage ?? {}) as Json)) {
        const flavor = a.flavors?.[resource] === undefined ? undefined : String(a.flavors[resource]);
        const key = `${resource}\u0000${flavor ?? ''}`;
        const u = usage.get(key) ?? { resource, ...(flavor === undefined ? {} : { flavor }), written: [] };
        u.written.push(q as string | number);
        usage.set(key, u);
      }
    }
    const sorted = [...usage].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, u]): Holding => ({
      resource: u.resource,
      ...(u.flavor === undefined ? {} : { flavor: u.flavor }),
      amount: u.written.reduce((n: number, q) => n + parseQuantity(q), 0),
      written: sumAsWritten(u.written) ?? u.written.join(' + '),
    }));
    return { state: 'admitted', clusterQueue: String(w.status?.admission?.clusterQueue ?? ''), holds: sorted };
  }
  if (evicted?.status === 'True') return { state: 'evicted', ...why(evicted) };
  return { state: 'pending', ...why(conditionOf(w, 'QuotaReserved')) };
}

/** Whether Kueue has decided a Workload: admitted, or its scheduler said why not yet (QuotaReserved with a reason). */
export const decided = (w: Json | undefined): boolean => w !== undefined
  && (conditionOf(w, 'Admitted')?.status === 'True' || conditionOf(w, 'QuotaReserved') !== undefined || conditionOf(w, 'Finished')?.status === 'True');

/** An admitted Workload's state with the nominal quota of `cq` (the ClusterQueue as it is now) of what it holds. */
export function withNominal(s: WorkloadState, cq: Manifest): WorkloadState {
  const covered = new Set(coveredResources(cq));
  return {
    ...s,
    holds: s.holds?.map((h) => {
      if (!covered.has(h.resource)) return h;
      const nominal = nominalQuota(cq, h.resource, h.flavor);
      return { ...h, nominal, nominalWritten: sumAsWritten(nominalQuotasAsWritten(cq, h.resource, h.flavor)) ?? String(nominal) };
    }),
  };
}

/** The state of each job's Workload now, an admitted one with its ClusterQueue's nominal quota now. */
export async function readJobs(client: KubeClient, jobs: readonly KubeObject[]): Promise<Map<string, WorkloadState>> {
  const queues = new Map((await client.list(`${KUEUE_API}/clusterqueues`)).map((q) => [q.metadata.name, q as Manifest]));
  const out = new Map<string, WorkloadState>();
  for (const job of jobs) {
    const w = await workloadOwnedBy(client, job);
    out.set(describe(job), jobState(w, w !== undefined || await client.read(job) !== undefined, queues));
  }
  return out;
}

/**
 * A job's state from its Workload (the one it owns) and whether the job is there: no Workload reads unmanaged while the
 * job is there (Kueue's integration for its kind off), gone when not; an admitted one with its ClusterQueue's nominal
 * quota (`queues`, by name) as it is then. readJobs and the change's JobWatch read it so.
 */
export function jobState(workload: Json | undefined, jobThere: boolean, queues: ReadonlyMap<string, Manifest>): WorkloadState {
  const s = workload === undefined && jobThere ? { state: 'unmanaged' as const } : workloadState(workload);
  const cq = s.clusterQueue !== undefined ? queues.get(s.clusterQueue) : undefined;
  return cq ? withNominal(s, cq) : s;
}

/** What a job went through across the change: before the push, each different state seen while it converged, after. */
export interface JobHistory {
  /** `Kind namespace/name`. */
  readonly job: string;
  readonly before: WorkloadState;
  /** The states seen between (each one different from the one before it). */
  readonly seen: readonly WorkloadState[];
  readonly after: WorkloadState;
}

/** What an admitted Workload holds more of than its ClusterQueue's nominal quota, resource and flavor (it borrows from the cohort). */
function overQuota(s: WorkloadState): Holding[] {
  if (s.state !== 'admitted') return [];
  return (s.holds ?? []).filter((h) => h.nominal !== undefined && h.amount > h.nominal);
}

/** Whether a Workload is over the quota of the same resources and flavors before and after, and those quotas did not change. */
const overAsBefore = (h: JobHistory): boolean => {
  const over = overQuota(h.after);
  const before = overQuota(h.before);
  return over.length > 0 && over.every((a) => before.some((b) => b.resource === a.resource && b.flavor === a.flavor && b.nominal === a.nominal));
};

/** The GPUs a Workload holds, and its ClusterQueue's nominal GPUs in their flavors (undefined: not read, or none covered). */
function gpusOf(s: WorkloadState): { held: number; nominal?: number } {
  const gpus = (s.holds ?? []).filter((h) => h.resource === RESOURCES.gpu);
  const quotas = gpus.filter((h) => h.nominal !== undefined);
  return { held: gpus.reduce((n, h) => n + h.amount, 0), ...(quotas.length > 0 ? { nominal: quotas.reduce((n, h) => n + h.nominal!, 0) } : {}) };
}

/**
 * A resource as the summary line names it: CPU, memory, GPU, RDMA (an RDMA shared device, `rdma/<name>`: the per-job
 * lines of --verbose name it whole), else its name.
 */
const resourceName = (r: string): string => (r === RESOURCES.cpu ? 'CPU' : r === RESOURCES.gpu ? 'GPU' : r.startsWith(RESOURCES.rdmaPrefix) ? 'RDMA' : r);

const admittedText = (s: WorkloadState): string => {
  const over = overQuota(s);
  const gpus = gpusOf(s);
  const notes = [
    ...(gpus.nominal !== undefined ? [`its nominal quota ${gpus.nominal}${over.some((h) => h.resource === RESOURCES.gpu) ? ': over it' : ''}`] : []),
    ...over.filter((h) => h.resource !== RESOURCES.gpu)
      .map((h) => `its nominal ${h.resource} quota${h.flavor ? ` in ${h.flavor}` : ''} ${h.nominalWritten ?? h.nominal}: over it with ${h.written}`),
  ];
  const note = notes.length > 0 ? ` (${notes.join('; ')}${over.length > 0 ? ', borrowing from the cohort' : ''})` : '';
  return `admitted by ClusterQueue ${s.clusterQueue} with ${gpus.held} GPU(s)${note}`;
};

const stateText = (s: WorkloadState): string => {
  const why = s.reason || s.message ? ` (${[s.reason, s.message].filter(Boolean).join(': ')})` : '';
  switch (s.state) {
    case 'admitted':
      return admittedText(s);
    case 'gone': return 'no Workload (the job is gone)';
    case 'unmanaged': return 'no Workload (the job is there: Kueue does not manage it; is its integration for this kind enabled?)';
    default: return `${s.state}${why}`;
  }
};

/** How a job fared: stays admitted, evicted, re-admitted, admitted, still pending, gone, ... (the change report's verb). */
export function outcome(h: JobHistory): string {
  const { before, after } = h;
  const evictedOnTheWay = h.seen.some((s) => s.state === 'evicted');
  if (before.state === 'admitted' && after.state === 'admitted') return evictedOnTheWay ? 're-admitted after an eviction' : 'stays admitted';
  if (before.state === 'admitted' && after.state === 'evicted') return 'evicted';
  if (before.state === 'admitted' && after.state === 'pending') return 'evicted, pending again';
  if (before.state !== 'admitted' && after.state === 'admitted') return before.state === 'evicted' ? 're-admitted' : 'admitted';
  if (after.state === 'gone' && before.state !== 'gone') return 'deleted';
  if (before.state === after.state) return `still ${after.state}`;
  return after.state;
}

/**
 * The jobs part of the change report: one summary line (how many of the samples' queued jobs Kueue evicted or
 * suspended, admitted, left as they were), then with `verbose` one line per job: its state before the push, each state
 * seen while the change converged, its state after (with the reason and message of Kueue's condition, and for an
 * admitted one its ClusterQueue's nominal quota after the change, and what it holds over it).
 */
export function jobsReport(
  histories: readonly JobHistory[], verbose: boolean, notSubmitted: readonly string[] = [], undecided: readonly string[] = [],
): string[] {
  const out: string[] = [];
  const counts = new Map<string, number>();
  for (const o of histories.map(outcome)) counts.set(o, (counts.get(o) ?? 0) + 1);
  // over quota after the change: because the change moved the quota (or the job), or borrowing as it already did
  const quotas = (hs: readonly JobHistory[]) => [...new Set(hs.flatMap((h) => overQuota(h.after).map((o) => o.resource)).sort().map(resourceName))].join(', ');
  const over = histories.filter((h) => overQuota(h.after).length > 0 && !overAsBefore(h));
  const still = histories.filter(overAsBefore);
  const overText = [
    ...(over.length > 0 ? [`${over.length} over its ClusterQueue's nominal ${quotas(over)} quota after the change`] : []),
    ...(still.length > 0 ? [`${still.length} over its ClusterQueue's unchanged nominal ${quotas(still)} quota, borrowing from the cohort as before`] : []),
  ].join('; ');
  const parts = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([o, n]) => `${n} ${o}${o === 'stays admitted' && overText ? ` (${overText})` : ''}`);
  if (histories.length === 0 && notSubmitted.length === 0) return ['jobs: no sample job names a Kueue queue'];
  out.push(`jobs: ${histories.length} sample job(s) Kueue queues: ${parts.join(', ') || 'none submitted'}${notSubmitted.length > 0 ? `; ${notSubmitted.length} not submitted` : ''}`
    + `${undecided.length > 0 ? `; ${undecided.length} not decided by Kueue before the push` : ''}`);
  // a job Kueue did not decide is named even without --verbose: its states below are not Kueue's verdict
  for (const u of undecided) out.push(`  ${u}`);
  if (!verbose) return out;
  for (const h of histories) {
    const steps = [h.before, ...h.seen, h.after].map(stateText);
    const went = steps.filter((s, i) => i === 0 || s !== steps[i - 1]);
    out.push(`  ${h.job}: ${outcome(h)}: ${went.join(' -> ')}`);
  }
  for (const n of notSubmitted) out.push(`  ${n}`);
  return out;
}
