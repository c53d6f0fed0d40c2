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
  /** While the work waits (an engine, the API server), its line is redrawn this often to show the time. @default 1000 */
  readonly tickMs?: number;
  /** The clock, in ms (tests pass their own). @default performance.now */
  readonly clock?: () => number;
}

/**
 * Progress of long work on a terminal: one line redrawn in place from the first second on (ordinary runs print
 * nothing) and cleared at the end, counted in steps (`synth: 120/1000 clusters rendered, checked and written
 * (cluster-0120, 12%, 3 s)`) or by what it is doing (`check: rendering the Applications of lab (8 s)`, redrawn every
 * second while the work waits). Nothing without a terminal (a CI log, a pipe): progress is for people watching.
 */
export class Progress {
  private readonly clock: () => number;
  private readonly start: number;
  private readonly options: ProgressOptions;
  private last = -Infinity;
  private drawn = false;
  private doing?: string;
  private ticker?: NodeJS.Timeout;

  /** Shows `command: done/total steps (item, percent, elapsed)`, e.g. `synth`, `clusters rendered, checked and written`. */
  constructor(private readonly sink: ProgressSink, private readonly command: string, private readonly steps = 'steps') {
    this.options = sink.timing ?? {};
    this.clock = this.options.clock ?? (() => performance.now());
    this.start = this.clock();
  }

  /** `done` of `total` steps are done, the last one being `item`. */
  update(done: number, total: number, item: string): void {
    if (done >= total) return;
    this.draw(`${done}/${total} ${this.steps} (${item}, ${Math.floor((done * 100) / total)}%, ${this.elapsed()})`, false);
  }

  /** What the work is doing now (`rendering the Applications of lab`): shown with the time, redrawn while it waits. */
  activity(what: string): void {
    this.doing = what;
    this.draw(`${what} (${this.elapsed()})`, true);
    if (this.sink.isTTY && !this.ticker) {
      this.ticker = setInterval(() => {
        if (this.doing !== undefined) this.draw(`${this.doing} (${this.elapsed()})`, true);
      }, this.options.tickMs ?? 1000);
      this.ticker.unref();
    }
  }

  /** Clears the terminal line and stops redrawing. */
  end(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    this.doing = undefined;
    if (this.drawn) this.sink.write('\r\x1b[K');
    this.drawn = false;
  }

  private elapsed(): string {
    return `${((this.clock() - this.start) / 1000).toFixed(0)} s`;
  }

  /** Draws `text` on a terminal once the delay has passed; `now`: even within the redraw interval (a new activity). */
  private draw(text: string, now: boolean): void {
    if (!this.sink.isTTY) return;
    const t = this.clock();
    if (t - this.start < (this.options.delayMs ?? 1000) || (!now && t - this.last < (this.options.redrawMs ?? 100))) return;
    this.last = t;
    this.sink.write(`\r\x1b[K${this.command}: ${text}`);
    this.drawn = true;
  }
}

/** A command's progress on its Io's sink, or none (no sink: a test, a library call; --quiet; --format json). */
export function progressOf(sink: ProgressSink | undefined, command: string, steps?: string, off = false): Progress | undefined {
  return sink && !off ? new Progress(sink, command, steps) : undefined;
}
