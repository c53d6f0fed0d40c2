/** Bad input: descriptions that do not load, constructs that refuse a combination, unreadable files or arguments. Exit code 2. */
export class InputError extends Error {
  constructor(message: string, readonly details: readonly string[] = []) {
    super(message);
    this.name = 'InputError';
  }
}

/** File-system failures on paths the user gave (missing, not a folder, not writable): bad input, not a crash. */
const USER_PATH_ERRORS = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'EACCES', 'EPERM', 'EROFS', 'EEXIST', 'ENOSPC']);

export function isUserPathError(e: unknown): e is NodeJS.ErrnoException {
  return e instanceof Error && USER_PATH_ERRORS.has((e as NodeJS.ErrnoException).code ?? '');
}

/** The value of --format: text (default) or json. */
export function outputFormat(value: string | undefined): 'text' | 'json' {
  if (value === undefined || value === 'text' || value === 'json') return value ?? 'text';
  throw new InputError(`--format ${value}: expected text or json`);
}
