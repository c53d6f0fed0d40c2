import { ProgressSink, stderrProgress } from './progress';
import { messageLine, outputText } from '../errors';

export { EXIT } from '../errors';

/** Where a command prints: stdout lines and stderr lines (tests capture them), and progress of long work. */
export interface Io {
  /** Transient progress (see Progress); absent: none shown. */
  readonly progress?: ProgressSink;
  out(line: string): void;
  err(line: string): void;
}

/** Standard output and error: every message one line with its control characters escaped, output text without any that drives the terminal. */
export const consoleIo: Io = {
  out: (l) => process.stdout.write(`${outputText(l)}\n`),
  err: (l) => process.stderr.write(`${messageLine(l)}\n`),
  progress: stderrProgress,
};
