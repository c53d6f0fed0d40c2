import { appendFileSync } from 'node:fs';
import { isMainThread, threadId } from 'node:worker_threads';

/**
 * Fault injection for the crash tests (test/faults/). Read only by the write protocol (and synth's
 * loop over the clusters, which streams into it), the description loader and the scratch folders.
 *
 * `GPU_CLUSTER_MANIFESTS_FAULT=<step>:<n>[:stop]` kills the process with SIGKILL (or stops it with
 * SIGSTOP) right before the n-th occurrence of `<step>` (in one thread: a fleet's render workers count
 * their own steps, and trace them as `<step>:<n>@<thread>`); several faults may be given, separated by
 * commas. `GPU_CLUSTER_MANIFESTS_FAULT_TRACE=<file>` appends every step passed (`<step>:<n>`), so a
 * test can enumerate every point of a run. Steps, in order:
 * `load` (a description file is read and parsed, also by the launcher's precheck), `render` (synth starts rendering a cluster; from the second one on, the earlier clusters' temporary
 * trees are on disk and the lock is held), `lock` (the output lock is held), `lock-busy` (the lock file of another command was read, before it is judged stale or waited for), `recover-rename`,
 * `recover-remove`, `recovered` (recovery), `write` / `write-partial` (each file of the temporary
 * trees; `write-partial` writes half of the file first), `commit` (every tree is complete; before the journal is renamed into place),
 * `rename` (each rename of the swap), `remove` (each file or folder deleted while cleaning up),
 * `unjournal` (before the journal is deleted), `unlock` (before the lock file is deleted); and `scratch` (a scratch folder
 * was made, files.ts scratchFolder: verify --config, upgrade-plan --from-toolkit).
 */
export const FAULT_ENV = 'GPU_CLUSTER_MANIFESTS_FAULT';
export const FAULT_TRACE_ENV = 'GPU_CLUSTER_MANIFESTS_FAULT_TRACE';

interface Plan {
  readonly faults: Map<string, { n: number; stop: boolean }[]>;
  readonly trace?: string;
}

let plan: Plan | undefined;
const counts = new Map<string, number>();

function readPlan(): Plan {
  const faults = new Map<string, { n: number; stop: boolean }[]>();
  for (const spec of (process.env[FAULT_ENV] ?? '').split(',').filter(Boolean)) {
    const [step, n, action] = spec.split(':');
    const list = faults.get(step) ?? [];
    list.push({ n: Number(n), stop: action === 'stop' });
    faults.set(step, list);
  }
  return { faults, trace: process.env[FAULT_TRACE_ENV] || undefined };
}

/** Marks a step of the write protocol; kills or stops the process when a fault is planned here. */
export function faultPoint(step: string, beforeFault?: () => void): void {
  plan ??= readPlan();
  if (plan.faults.size === 0 && !plan.trace) return;
  const n = (counts.get(step) ?? 0) + 1;
  counts.set(step, n);
  // a render worker's steps are counted in that thread, and traced with its id
  if (plan.trace) appendFileSync(plan.trace, `${step}:${n}${isMainThread ? '' : `@${threadId}`}\n`);
  const fault = plan.faults.get(step)?.find((f) => f.n === n);
  if (!fault) return;
  beforeFault?.();
  if (fault.stop) {
    process.kill(process.pid, 'SIGSTOP');
    return;
  }
  process.kill(process.pid, 'SIGKILL');
  process.exit(137); // not reached: SIGKILL cannot be caught
}
