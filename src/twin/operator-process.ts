import { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { cpuSecondsOf, killGroup, tailOf } from './control-plane';

/**
 * A controller of the twin run out of cluster as a process of its own (Kueue's manager, the MPI Operator): its log,
 * whether it exited, its CPU seconds, and a stop that kills its process group and removes its folder (kept with
 * `keep` or CONTROL_PLANE_KEEP=1).
 */
export class OperatorProcess {
  private stopped = false;

  constructor(
    /** What it is, in the line that says its folder was kept. */
    private readonly what: string,
    /** Its folder (kubeconfig, configuration, log). */
    readonly dir: string,
    private readonly child: ChildProcess,
    readonly logFile: string,
  ) {}

  /** The last lines of its log. */
  log(lines = 40): string {
    return tailOf(this.logFile, lines);
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** CPU seconds (user + system) the process has used so far (Linux /proc). */
  cpuSeconds(): number | undefined {
    return cpuSecondsOf(this.child.pid);
  }

  async stop(opts: { keep?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (!this.exited) {
      const exit = new Promise((r) => this.child.once('exit', r));
      killGroup(this.child);
      await exit;
    }
    if (opts.keep || process.env.CONTROL_PLANE_KEEP === '1') process.stderr.write(`${this.what} kept in ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}
