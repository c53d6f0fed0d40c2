import { ProgressSink, stderrProgress } from './progress';

export { EXIT } from '../errors';

/** Where a command prints: stdout lines and stderr lines (tests capture them), and progress of long work. */
export interface Io {
  /** Transient progress (see Progress); absent: none shown. */
  readonly progress?: ProgressSink;
  out(line: string): void;
  err(line: string): void;
}

export const consoleIo: Io = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`), progress: stderrProgress };
