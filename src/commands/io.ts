/** Exit codes of every command: 0 ok, 1 failed (validation, checks, a deletion refused), 2 bad input. */
export const EXIT = { ok: 0, failed: 1, badInput: 2 } as const;

/** Where a command prints: stdout lines and stderr lines (tests capture them). */
export interface Io {
  out(line: string): void;
  err(line: string): void;
}

export const consoleIo: Io = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) };
