import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { ApplicationState, describeState, formatTimeline } from './applications';
import { killLaunched } from './control-plane';
import { sleep } from './poll';
import { startTwinCluster, TwinCluster } from './twin-cluster';
import { InputError } from '../errors';
import { ValidationFailed } from '../synth/pipeline';

/**
 * `rehearse` (issue 51): the bootstrap of a described cluster synced by a real Argo CD on a twin of the cluster
 * (twin-cluster.ts), watched until every Application is Synced and Healthy or the time is up. Everything it starts
 * lives in one scratch folder (the process's TMPDIR while it runs) and in child processes of this one: both go on
 * every way out (the end, the time limit, SIGINT, SIGTERM, an uncaught error).
 */

export interface RehearsalOptions {
  /** The description file (YAML or JSON), read and never written. */
  readonly description: string;
  /** The whole rehearsal: the twin's start, the bootstrap and every wave. */
  readonly timeoutMs: number;
  readonly verbose?: boolean;
  /** Errors only: what does not converge (no progress, no timeline, no summary). */
  readonly quiet?: boolean;
  /** Output lines (the timeline, the summary). */
  readonly out: (line: string) => void;
  /** Message lines (progress without a terminal, what did not converge). */
  readonly err: (line: string) => void;
  /** A terminal: the live display is drawn on it (instead of progress lines). */
  readonly terminal?: (text: string) => void;
}

/** The time limit passed while `what` was under way. */
class OutOfTime extends Error {}

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

/** The Applications the root's folder lists (dist/<cluster>/gitops/kustomization.yaml), by name, and the root. */
function expectedApplications(twin: TwinCluster): string[] {
  const gitops = path.join(twin.clusterDir, 'gitops');
  const listed = ((parse(readFileSync(path.join(gitops, 'kustomization.yaml'), 'utf8')) as { resources?: string[] }).resources ?? []);
  const names = listed.filter((f) => f.startsWith('application.'))
    .map((f) => (parse(readFileSync(path.join(gitops, f), 'utf8')) as { metadata: { name: string } }).metadata.name);
  return [twin.name, ...names];
}

/** One Application on one line of the live display: name, wave, sync, health and what it waits on. */
function displayLine(s: ApplicationState, width: number): string {
  const waiting = s.health !== 'Healthy' ? (s.healthMessage || s.waitingOn[0] || s.operationMessage || s.conditions[0] || '')
    : s.sync !== 'Synced' ? (s.conditions[0] || s.operationMessage || s.waitingOn[0] || '') : '';
  const line = `  ${s.name.padEnd(width)}  wave ${String(s.wave).padStart(2)}  ${(s.sync || '-').padEnd(10)} ${(s.health || '-').padEnd(11)} ${waiting}`;
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

/** Runs one rehearsal; answers its exit code (0: every Application converged, 1: not). */
export async function rehearse(opts: RehearsalOptions): Promise<number> {
  const t0 = Date.now();
  const deadline = t0 + opts.timeoutMs;
  const scratch = mkdtempSync(path.join(tmpdir(), 'gpu-cluster-manifests-rehearse-'));
  const tmpBefore = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  let twin: TwinCluster | undefined;
  let step = 'starting';
  // once out of time, the twin's start stops at its next step (its progress callback throws: its clean-up runs)
  let outOfTime = false;
  const progress = (line: string) => {
    if (!opts.quiet && !opts.terminal) opts.err(`rehearse: ${seconds(Date.now() - t0)}: ${line}`);
  };
  const say = (line: string) => {
    step = line;
    if (opts.terminal && !opts.quiet) opts.terminal(`\r\x1b[Krehearse: ${line} (${seconds(Date.now() - t0)})`);
    progress(line);
  };
  const removeScratch = () => {
    for (let i = 0; i < 5; i++) {
      try {
        rmSync(scratch, { recursive: true, force: true });
        return;
      } catch {
        // a process killed a moment ago may still be writing: again
      }
    }
  };
  // however this process ends: its children killed, the scratch folder removed
  const onExit = () => {
    killLaunched();
    removeScratch();
  };
  process.on('exit', onExit);
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    opts.err(`rehearse: ${signal}: stopping the twin`);
    const code = signal === 'SIGINT' ? 130 : 143;
    const stop = twin ? twin.stop().catch(() => {}) : Promise.resolve();
    // a stop that hangs does not hold the exit: the exit handler kills what is left
    void Promise.race([stop, sleep(10_000)]).finally(() => process.exit(code));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  /**
   * `work` within the time left, else OutOfTime naming `what`: then what was launched is killed, which ends the work's
   * own steps (its clean-up runs), and the work is waited for, so that nothing it starts outlives the rehearsal.
   */
  const bounded = async <T>(what: string, work: Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const out = new Promise<'out'>((resolve) => {
      timer = setTimeout(() => resolve('out'), Math.max(0, deadline - Date.now()));
    });
    try {
      const first = await Promise.race([work.then((v) => ({ v })), out]);
      if (first !== 'out') return first.v;
    } finally {
      clearTimeout(timer);
    }
    outOfTime = true;
    killLaunched();
    await work.then((v) => (v instanceof TwinCluster ? v.stop() : undefined), () => {});
    throw new OutOfTime(what);
  };

  try {
    twin = await bounded('starting the twin', startTwinCluster({
      description: opts.description,
      progress: (line) => {
        if (outOfTime) throw new OutOfTime('starting the twin');
        say(line);
      },
    }));
    // the twin serves the managed installs' sources from loopback (twin-cluster.ts mirrorManagedInstalls), but runs
    // no Kueue for a managed one: its visibility APIServices stay unavailable, so its install never turns Healthy
    if (twin.model.description.installs.kueue === 'managed') {
      opts.err('rehearse: warning: installs.kueue: managed, and the twin runs no Kueue for a managed install (only a pre-installed one): '
        + 'its visibility APIServices stay unavailable, its install Progressing, and the waves after it will not converge here');
    }
    const pushed = await twin.push('rehearse: the render of the working tree');
    say('running the bootstrap of the cluster\'s README');
    await bounded('running the bootstrap', twin.bootstrap());
    const rootAt = twin.rootAppliedAt ?? Date.now();
    const expected = expectedApplications(twin);
    const converged = (s: ApplicationState) => s.sync === 'Synced' && s.health === 'Healthy' && s.revision === pushed;
    const done = (states: readonly ApplicationState[]) => expected.every((n) => states.some((s) => s.name === n))
      && states.every(converged) && twin!.watch.state(twin!.name)?.phase === 'Succeeded';

    say(`every Application of ${twin.name} syncing (${expected.length}: the root and ${expected.length - 1} it lists)`);
    const shown = new Map<string, string>();
    let drawn = 0;
    let states: ApplicationState[] = [];
    for (;;) {
      states = twin.watch.states();
      if (states.length > 0 && done(states)) break;
      if (Date.now() > deadline) break;
      if (opts.terminal) {
        const width = Math.max(0, ...states.map((s) => s.name.length));
        const ok = states.filter(converged).length;
        const lines = [`rehearse: ${twin.name}: ${ok}/${expected.length} Applications Synced and Healthy (${seconds(Date.now() - rootAt)} since the root's apply, time left ${seconds(Math.max(0, deadline - Date.now()))})`,
          ...states.map((s) => displayLine(s, width))];
        opts.terminal(`${drawn > 0 ? `\x1b[${drawn}A` : '\r'}\x1b[J${lines.join('\n')}\n`);
        drawn = lines.length;
      } else if (!opts.quiet) {
        for (const s of states) {
          const text = opts.verbose ? describeState(s) : `${s.name} (wave ${s.wave}): ${s.sync || 'not compared'}, ${s.health || 'no health'}`;
          if (shown.get(s.name) === text) continue;
          shown.set(s.name, text);
          progress(text);
        }
      }
      await sleep(1000);
    }
    if (opts.terminal) opts.terminal(`${drawn > 0 ? `\x1b[${drawn}A` : '\r'}\x1b[J`);

    if (!opts.quiet) opts.out(`${twin.name}: the bootstrap on the twin, from the root's apply (Argo CD ${twin.twin.binary.versions['github.com/argoproj/argo-cd/v3'] ?? ''})`);
    if (!opts.quiet) opts.out(formatTimeline(twin.watch.timeline(rootAt, () => pushed)));
    if (opts.verbose) opts.out(`CPU seconds: ${Object.entries(twin.cpuSeconds()).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
    if (done(states)) {
      if (!opts.quiet) opts.out(`${twin.name}: every Application (${expected.length}) Synced and Healthy ${seconds(Date.now() - rootAt)} after the root's apply (${seconds(Date.now() - t0)} in all)`);
      return 0;
    }
    const missing = expected.filter((n) => !states.some((s) => s.name === n));
    for (const s of states.filter((x) => !converged(x))) opts.err(`rehearse: not converged: ${describeState(s)}`);
    for (const n of missing) opts.err(`rehearse: not converged: ${n}: never created (the root's sync did not reach it)`);
    const root = twin.watch.state(twin.name);
    if (states.every(converged) && missing.length === 0 && root) opts.err(`rehearse: not converged: ${twin.name}: its sync is ${root.phase || 'not started'}`);
    opts.err(`rehearse: ${twin.name}: not every Application Synced and Healthy within ${seconds(opts.timeoutMs)} (--timeout)`);
    return 1;
  } catch (e) {
    if (e instanceof OutOfTime) {
      opts.err(`rehearse: out of time (--timeout ${seconds(opts.timeoutMs)}) while ${e.message} (at: ${step})`);
      return 1;
    }
    // a description that does not render is bad input (exit 2, one line, as synth says it); anything else of the twin is one line
    if (e instanceof InputError || e instanceof ValidationFailed) throw e;
    opts.err(`rehearse: the twin did not ${twin ? 'run the bootstrap' : 'start'} (at: ${step}): ${(e as Error).message.split('\n')[0]}`);
    return 1;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    if (!stopping) {
      await twin?.stop().catch(() => {});
      killLaunched();
      removeScratch();
      process.removeListener('exit', onExit);
      if (tmpBefore === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpBefore;
    }
  }
}
