import { writeSync } from 'node:fs';

/** Where progress goes: a stream of text and whether a person watches it (a terminal). */
export interface ProgressSink {
  readonly isTTY: boolean;
  /** How often to show what (tests give their own). */
  readonly timing?: ProgressOptions;
  write(text: string): void;
}

/**
 * Progress on standard error, written straight to the file descriptor: it is transient (a terminal
 * line redrawn in place), never part of a command's messages, so it bypasses process.stderr (which
 * the launcher records to replay a run's warnings when nothing changed).
 */
export const stderrProgress: ProgressSink = {
  isTTY: Boolean(process.stderr.isTTY),
  write: (text) => {
    try {
      writeSync(process.stderr.fd, text);
    } catch {
      // a closed or full stderr: progress is not worth failing for
    }
  },
};

export interface ProgressOptions {
  /** Nothing is shown before the work has run this long (short runs stay silent). @default 1000 */
  readonly delayMs?: number;
  /** A terminal line is redrawn at most this often. @default 100 */
  readonly redrawMs?: number;
  /** Without a terminal (CI logs, a pipe), one line per this many ms at most. @default 5000 */
  readonly lineMs?: number;
  /** The clock, in ms (tests pass their own). @default performance.now */
  readonly clock?: () => number;
}

/**
 * Progress of a long piece of work counted in steps (`synth: 120/1000 clusters rendered, checked and
 * written (cluster-0120, 12%, 3 s)`). On a terminal one line is redrawn in place from the first
 * second on (ordinary runs print nothing) and cleared at the end; elsewhere (CI logs, a pipe) a plain
 * line every few seconds, so a log shows that a long run advances without a line per step.
 */
export class Progress {
  private readonly clock: () => number;
  private readonly start: number;
  private readonly options: ProgressOptions;
  private last = -Infinity;
  private drawn = false;

  /** Shows `command: done/total steps (item, percent, elapsed)`, e.g. `synth`, `clusters rendered, checked and written`. */
  constructor(private readonly sink: ProgressSink, private readonly command: string, private readonly steps: string) {
    this.options = sink.timing ?? {};
    this.clock = this.options.clock ?? (() => performance.now());
    this.start = this.clock();
    // without a terminal the first line comes one interval in, so a run of a few seconds prints none
    if (!sink.isTTY) this.last = this.start;
  }

  /** `done` of `total` steps are done, the last one being `item`. */
  update(done: number, total: number, item: string): void {
    const t = this.clock();
    if (t - this.start < (this.options.delayMs ?? 1000) || done >= total) return;
    const every = this.sink.isTTY ? this.options.redrawMs ?? 100 : this.options.lineMs ?? 5000;
    if (t - this.last < every) return;
    this.last = t;
    const percent = Math.floor((done * 100) / total);
    const elapsed = `${((t - this.start) / 1000).toFixed(0)} s`;
    if (this.sink.isTTY) {
      this.sink.write(`\r\x1b[K${this.command}: ${done}/${total} ${this.steps} (${item}, ${percent}%, ${elapsed})`);
      this.drawn = true;
    } else {
      this.sink.write(`${this.command}: ${done}/${total} ${this.steps} (${percent}%, ${elapsed})\n`);
    }
  }

  /** Clears the terminal line (nothing to do elsewhere). */
  end(): void {
    if (this.drawn) this.sink.write('\r\x1b[K');
    this.drawn = false;
  }
}
