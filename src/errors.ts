/** Exit codes of every command: 0 ok, 1 failed (validation, checks, a deletion refused), 2 bad input. */
export const EXIT = { ok: 0, failed: 1, badInput: 2 } as const;

/** Bad input: descriptions that do not load, constructs that refuse a combination, unreadable files or arguments. Exit code 2. */
export class InputError extends Error {
  /**
   * `details`: lines printed before the summary. With `detailsOnly` they are all that is printed: each already names
   * the file, where and what (a description's problems, one line each).
   */
  constructor(message: string, readonly details: readonly string[] = [], readonly opts: { readonly detailsOnly?: boolean } = {}) {
    super(message);
    this.name = 'InputError';
  }
}

/** What every command prints for bad input (stderr lines; exit code 2). */
export function inputErrorLines(e: InputError): string[] {
  return e.opts.detailsOnly && e.details.length > 0 ? [...e.details] : [...e.details, `error: ${e.message}; nothing was written`];
}

/** Writing the output failed (disk full, a folder in use, ...); the previous output is unchanged. Exit code 1. */
export class WriteFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WriteFailed';
  }
}

/** A command stopped at a bound of the whole command (the time of all its engine runs): exit 1, one line. */
export class CommandStopped extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandStopped';
  }
}

/** What a file-system error code means, and what to do about it. */
const FS_REASONS: Record<string, string> = {
  ENOENT: 'no such file or folder',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EISDIR: 'is a folder, not a file',
  EACCES: 'permission denied: check the owner and mode of the folder',
  EPERM: 'operation not permitted: check the owner and mode of the folder',
  EROFS: 'read-only file system: choose a writable folder',
  ENOSPC: 'no space left on the device: free some space and re-run',
  EDQUOT: 'disk quota exceeded: free some space and re-run',
  ENAMETOOLONG: 'name too long: use a shorter path',
  ELOOP: 'too many levels of symbolic links: check for a symlink loop',
  EBUSY: 'in use (a mount point?): choose another folder or unmount it',
  EXDEV: 'on another file system: keep the output folder on one file system',
  EMFILE: 'too many open files: raise the limit (ulimit -n) and re-run',
  ENFILE: 'too many open files in the system: re-run later',
  EIO: 'input/output error: check the disk',
  EEXIST: 'already exists: remove it or choose another path',
  ENOTEMPTY: 'folder not empty: remove it or choose another path',
  EINVAL: 'invalid argument for this file system',
  ENXIO: 'no such device',
  ETXTBSY: 'file busy',
};

/** True for an error of a file-system call (it carries an errno code and the call's name). */
export function isFsError(e: unknown): e is NodeJS.ErrnoException {
  return e instanceof Error && typeof (e as NodeJS.ErrnoException).code === 'string' && /^E[A-Z]+$/.test((e as NodeJS.ErrnoException).code!)
    && (e as NodeJS.ErrnoException).syscall !== undefined;
}

/** One line for a file-system error: the path, what went wrong, what to do (`cannot mkdir /x/y: permission denied: ... (EACCES)`). */
export function fsErrorText(e: NodeJS.ErrnoException): string {
  const code = e.code ?? 'EUNKNOWN';
  const reason = FS_REASONS[code] ?? e.message.replace(/^[A-Z]+: /, '').replace(/, \w+ '.*'$/, '');
  const where = e.path ? ` ${e.path}${(e as { dest?: string }).dest ? ` -> ${(e as { dest?: string }).dest}` : ''}` : '';
  return `cannot ${e.syscall ?? 'access'}${where}: ${reason} (${code})`;
}

/** The value of --format: text (default) or json. */
export function outputFormat(value: string | undefined): 'text' | 'json' {
  if (value === undefined || value === 'text' || value === 'json') return value ?? 'text';
  throw new InputError(`--format ${value}: expected text or json`);
}

const ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A text with its control characters escaped (`\u0000`, `\n`): input such as a label read from a
 * snapshot is never printed raw, so it cannot forge lines of a message, a finding or a file.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Schemes whose user-info names an account, not a secret (`ssh://git@host/...`): only a password after it is one. */
const SSH_SCHEMES = /^(ssh|git\+ssh|ssh\+git|sftp)$/i;

/** What stands for a secret wherever one is masked. */
export const MASK = '***';

/** One shape of credential material: what it is, where it is in a text (a global pattern), and the text with it masked. */
interface CredentialShape {
  readonly what: string;
  readonly re: RegExp;
  /**
   * Literals every match of `re` holds one of: a text with none of them is not scanned by `re` (nearly every text the
   * checks read and every line printed holds no credential, and one search for all the shapes' literals at once is a
   * fraction of a scan by each pattern).
   */
  readonly marks: readonly string[];
  /** The match with its secret part masked (the match itself when it holds no secret: an SSH user name). */
  readonly mask: (match: string, ...groups: string[]) => string;
}

/**
 * Credential material, by its shape: a private key, a JSON Web Token (a service-account token), a bearer token, a
 * kubeconfig user's secret field, a cloud or Git hosting key, and the user-info of a URL (`https://user:token@host`:
 * Argo CD and kubectl take credentials from their own stores, never from a URL). The one list both what is masked
 * wherever the toolkit prints or writes (maskCredentials) and what check's no-credentials rule finds (credentialKind)
 * read. Every pattern starts only where its shape can start and never scans a run twice, so a message or a file of
 * any size is masked in time linear in its length.
 */
const CREDENTIAL_SHAPES: readonly CredentialShape[] = [
  // the key's base64 lines after its BEGIN line (JSON's escaped line breaks too); the END line stays
  { what: 'a PEM private key', re: /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[A-Za-z0-9+/=\s\\]*/g, marks: ['-----BEGIN '], mask: (_, kind) => `-----BEGIN ${kind}PRIVATE KEY-----${MASK}` },
  { what: 'a JSON Web Token (a service-account token)', re: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, marks: ['eyJ'], mask: () => MASK },
  // a line of YAML (or one quoted whole: an echoed value)
  { what: 'a kubeconfig user credential', re: /(?<=^|["'])([ \t]*(?:client-key-data|token|password)[ \t]*:[ \t]*)[^\s"']{8,}/gm, marks: ['client-key-data', 'token', 'password'], mask: (_, key) => `${key}${MASK}` },
  { what: 'a kubeconfig user credential', re: /("(?:client-key-data|token|password)"\s*:\s*")[^"\\]{8,}"/g, marks: ['client-key-data', 'token', 'password'], mask: (_, key) => `${key}${MASK}"` },
  { what: 'a bearer token', re: /\b(Bearer\s+)[A-Za-z0-9._~+/-]{20,}=*/g, marks: ['Bearer'], mask: (_, word) => `${word}${MASK}` },
  { what: 'an AWS access key id', re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, marks: ['AKIA', 'ASIA'], mask: () => MASK },
  { what: 'a GitHub token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b/g, marks: ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'], mask: () => MASK },
  { what: 'a GitLab token', re: /(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}/g, marks: ['glpat-'], mask: () => MASK },
  {
    what: 'a URL with credentials (user-info)',
    // to the last "@" before the path: a password may hold one
    re: /\b([A-Za-z][A-Za-z0-9+.-]{0,31}):\/\/([^\s/?#'"`<>\\]+)@/g,
    marks: ['://'],
    mask: (match, scheme, info) => {
      if (!SSH_SCHEMES.test(scheme)) return `${scheme}://${MASK}@`;
      const colon = info.indexOf(':');
      return colon < 0 ? match : `${scheme}://${info.slice(0, colon)}:${MASK}@`;
    },
  },
];

/** A text that holds one of the shapes' marks; only such a text can hold a credential. */
const MARKED = new RegExp(CREDENTIAL_SHAPES.flatMap((s) => s.marks).map((m) => m.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|'));
const marked = (text: string, shape: CredentialShape) => shape.marks.some((m) => text.includes(m));

/**
 * A text with every credential in it masked (`***`): the shapes of CREDENTIAL_SHAPES, and each of `known` (a
 * secret this run holds: the kubeconfig's token, a URL's password) wherever it appears, in whatever words. Every
 * line a command prints goes through it (messageLine, outputText), and what it writes from a live cluster or a
 * description: no secret is ever printed or written whole.
 */
export function maskCredentials(text: string, known: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const secret of known) {
    if (secret !== undefined && secret.length >= 4) out = out.split(secret).join(MASK);
  }
  if (!MARKED.test(out)) return out;
  for (const shape of CREDENTIAL_SHAPES) {
    if (marked(out, shape)) out = out.replace(shape.re, shape.mask);
  }
  return out;
}

/** Where the credentials of a text are (their offsets), with what each is and its shape's place in CREDENTIAL_SHAPES. */
function* credentialsIn(text: string): Generator<{ readonly index: number; readonly what: string; readonly shape: number }> {
  if (!MARKED.test(text)) return;
  for (const [shape, { re, mask, what }] of CREDENTIAL_SHAPES.entries()) {
    if (!marked(text, CREDENTIAL_SHAPES[shape])) continue;
    for (const m of text.matchAll(re)) {
      if (mask(...(m as unknown as [string, ...string[]])) !== m[0]) yield { index: m.index ?? 0, what, shape };
    }
  }
}

/** What credential a text holds (the first shape of CREDENTIAL_SHAPES it has a secret of), or undefined. */
export function credentialKind(text: string): string | undefined {
  return credentialsIn(text).next().value?.what;
}

/** The lines (1-based) of a text that hold a credential, in order, each with what it holds (the first shape of CREDENTIAL_SHAPES found there). */
export function credentialLines(text: string): { readonly line: number; readonly what: string }[] {
  const byLine = new Map<number, { shape: number; what: string }>();
  for (const c of credentialsIn(text)) {
    const line = text.slice(0, c.index).split('\n').length;
    const known = byLine.get(line);
    if (!known || c.shape < known.shape) byLine.set(line, c);
  }
  return [...byLine].sort(([a], [b]) => a - b).map(([line, c]) => ({ line, what: c.what }));
}

/**
 * A line of a command's messages as it reaches the terminal (standard error): one line, every control
 * character escaped (`\u001b`, `\n`), every credential masked. Every message goes through it, so a path or value
 * given by the user or read from a file (an `out:` with an escape sequence or a line break) can neither drive the
 * terminal nor forge a line, and a secret in one (a server's answer, a refused value) is never printed.
 */
export function messageLine(line: string): string {
  return printable(maskCredentials(line));
}

/**
 * What a command prints on standard output (a YAML description, JSON, help, a summary): its lines kept,
 * every other control character escaped, so nothing in it drives the terminal, and every credential masked.
 */
export function outputText(text: string): string {
  return maskCredentials(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => printable(c));
}

/**
 * A text with its terminal escape sequences (ANSI CSI and OSC) and control characters removed, tabs
 * made spaces: what an engine or another program printed is shown without letting it move the cursor,
 * recolour the terminal, ring its bell or forge a line.
 */
export function stripControl(text: string): string {
  return text
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g, '')
    .replace(/\t/g, ' ')
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '');
}

/**
 * Reports an error the way every entry point does, in one line and without a stack trace, and
 * returns the exit code: bad input, a bad argument, a file-system error and a broken install (a
 * module of the package missing: reinstall) are 2; a failed write is 1; anything else is an
 * internal error (1). The commands' own failures (validation, checks, deletions) are the CLI's.
 */
export function reportError(e: unknown, print: (line: string) => void): number {
  const err = (line: string) => print(messageLine(line));
  if (e instanceof InputError) {
    for (const l of inputErrorLines(e)) err(l);
    return EXIT.badInput;
  }
  if (e instanceof WriteFailed || e instanceof CommandStopped) {
    err(`error: ${e.message}`);
    return EXIT.failed;
  }
  if (isFsError(e)) {
    err(`error: ${fsErrorText(e)}`);
    return EXIT.badInput;
  }
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (e instanceof TypeError && code?.startsWith('ERR_PARSE_ARGS')) {
    // its hints come on lines of their own: one line
    err(`error: ${e.message.replace(/\s*\n\s*/g, ' ')}; see --help`);
    return EXIT.badInput;
  }
  const message = String((e as Error | undefined)?.message ?? e).split('\n')[0];
  if (code === 'MODULE_NOT_FOUND') {
    err(`error: the installed gpu-cluster-manifests is incomplete (${message}): reinstall it (npm ci)`);
    return EXIT.badInput;
  }
  err(`internal error: ${message}`);
  return EXIT.failed;
}
