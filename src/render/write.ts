import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { faultPoint } from '../fault';
import { BOOKKEEPING_PREFIX, LOCK_FILE, LockOptions, lockIsHeld, OutputLock } from './lock';
import { fsErrorText, InputError, isFsError, WriteFailed } from '../errors';
import { makeDirs, readTextIfPresent, syncDir } from '../files';
import { pidAlive } from '../processes';
import { RenderedFile } from './folder-files';

export { BOOKKEEPING_PREFIX, LOCK_FILE, LOCK_WAIT_ENV } from './lock';

/**
 * The write protocol of an output root (`dist/`):
 *
 * 1. Take the root's lock (`.gpu-cluster-manifests.lock`; waits for another writer a bounded time).
 * 2. Recover what an interrupted run left (see recoverOutput).
 * 3. Write each new tree to a temporary folder beside its target, `<name>.tmp-<pid>-<n>`.
 * 4. Commit: write the journal (`.gpu-cluster-manifests.journal`: every target, its temporary
 *    and its `<name>.old-<pid>-<n>` name) to a temporary file, fsync it, rename it into place,
 *    fsync the folder. Before this point an interruption leaves the old trees untouched.
 * 5. Swap every target: rename it to its old name, rename the temporary into place.
 * 6. fsync the folder, delete the old trees, delete the journal, release the lock.
 *
 * After the commit, recovery rolls forward (finishes step 5 and 6); before it, it rolls back
 * (deletes the temporary trees). A rename that fails in step 5 (a folder in use) rolls every
 * swap back under an "abort" journal. Either way all targets are replaced, or none.
 */

export const JOURNAL_FILE = `${BOOKKEEPING_PREFIX}journal`;

/** `<name>.tmp-<pid>-<n>` / `<name>.old-<pid>-<n>`: temporary and previous trees (also of older versions of the tool). */
const ARTIFACT = /^(.+)\.(tmp|old)-(\d+)-(\d+)$/;

/** True for names the write protocol keeps beside the output (lock, journal, temporary and old trees): never output. */
export function isWriteArtifact(name: string): boolean {
  return name.startsWith(BOOKKEEPING_PREFIX) || ARTIFACT.test(name);
}

/**
 * `.gitignore` lines for what the write protocol keeps around an output root `out` (a path relative
 * to the .gitignore, `/`-separated): its lock and journal, temporary and old trees inside it and
 * beside it. Never committed; a crash leaves them for the next run to recover.
 */
export function writeArtifactIgnores(out: string): string[] {
  return [`/${out}.tmp-*/`, `/${out}.old-*/`, `/${out}/${BOOKKEEPING_PREFIX}*`, `/${out}/*.tmp-*/`, `/${out}/*.old-*/`];
}

/** One entry directly under the output root that a write replaces. */
export interface TreeEntry {
  /** Its name in the output root (one path component). */
  readonly name: string;
  /** The files of the new tree, relative to it. */
  readonly files: Iterable<RenderedFile>;
}

/** Options of a write. */
export interface WriteOptions extends LockOptions {
  /** Also remove every other entry of the root (the root becomes exactly `entries`). */
  readonly replaceAll?: boolean;
}

interface Swap {
  readonly target: string;
  /** Temporary tree; absent when the target is only removed. */
  readonly tmp?: string;
  readonly old: string;
  readonly existed: boolean;
}

interface Journal {
  readonly format: 1;
  readonly tool: 'gpu-cluster-manifests';
  /** commit: roll forward; abort: roll back. */
  readonly state: 'commit' | 'abort';
  readonly pid: number;
  readonly host: string;
  readonly swaps: readonly Swap[];
}

let counter = 0;
function artifactName(name: string, tag: 'tmp' | 'old'): string {
  counter += 1;
  return `${name}.${tag}-${process.pid}-${counter}`;
}

function exists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

function rename(from: string, to: string, step: string): void {
  faultPoint(step);
  renameSync(from, to);
}

/** Deletes a file or folder tree, one entry at a time (a fault point each). */
function removeTree(p: string, step: string): void {
  let st;
  try {
    st = lstatSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (st.isDirectory()) {
    for (const name of readdirSync(p)) removeTree(path.join(p, name), step);
    faultPoint(step);
    rmdirSync(p);
  } else {
    faultPoint(step);
    unlinkSync(p);
  }
}

/**
 * True when the folder `dir` already holds exactly `files` (the same paths, byte for byte, and no
 * other file or folder): rewriting it would change nothing, so the swap is skipped.
 */
export function holdsExactly(dir: string, files: readonly RenderedFile[]): boolean {
  const wanted = new Map(files.map(([rel, content]) => [rel, content]));
  const folders = new Set<string>();
  for (const rel of wanted.keys()) {
    for (let d = path.posix.dirname(rel); d !== '.'; d = path.posix.dirname(d)) folders.add(d);
  }
  let seen = 0;
  const walk = (rel: string): boolean => {
    for (const name of readdirSync(path.join(dir, rel))) {
      const child = rel ? `${rel}/${name}` : name;
      const st = lstatSync(path.join(dir, child));
      if (st.isDirectory()) {
        if (!folders.has(child) || !walk(child)) return false;
      } else {
        const content = wanted.get(child);
        if (!st.isFile() || content === undefined || st.size !== Buffer.byteLength(content)) return false;
        if (readFileSync(path.join(dir, child), 'utf8') !== content) return false;
        seen += 1;
      }
    }
    return true;
  };
  try {
    return lstatSync(dir).isDirectory() && walk('') && seen === wanted.size;
  } catch {
    return false;
  }
}

function writeTree(dir: string, files: Iterable<RenderedFile>): void {
  mkdirSync(dir);
  const made = new Set<string>();
  for (const [rel, content] of files) {
    const parts = rel.split('/');
    if (path.isAbsolute(rel) || parts.some((s) => s === '..' || s === '.' || s === '')) throw new Error(`refusing to write outside the output: ${rel}`);
    let at = dir;
    for (const part of parts.slice(0, -1)) {
      at = path.join(at, part);
      if (!made.has(at)) {
        mkdirSync(at);
        made.add(at);
      }
    }
    const file = path.join(dir, ...parts);
    faultPoint('write');
    faultPoint('write-partial', () => writeFileSync(file, content.slice(0, Math.floor(content.length / 2))));
    writeFileSync(file, content);
  }
}

function writeJournal(root: string, journal: Journal): void {
  const file = path.join(root, JOURNAL_FILE);
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, `${JSON.stringify(journal, undefined, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (journal.state === 'commit') faultPoint('commit');
  renameSync(tmp, file);
  syncDir(root);
}

const plainName = (n: unknown): n is string => typeof n === 'string' && n !== '' && n !== '.' && n !== '..' && !/[/\\\0]/.test(n);

function readJournal(root: string): Journal | undefined {
  const file = path.join(root, JOURNAL_FILE);
  const text = readTextIfPresent(file);
  if (text === undefined) return undefined;
  let j: Journal | undefined;
  try {
    j = JSON.parse(text) as Journal;
  } catch {
    j = undefined;
  }
  const valid = j !== undefined && j.format === 1 && (j.state === 'commit' || j.state === 'abort') && Array.isArray(j.swaps)
    && j.swaps.every((s) => plainName(s.target) && plainName(s.old) && ARTIFACT.exec(s.old)?.[1] === s.target
      && (s.tmp === undefined || (plainName(s.tmp) && ARTIFACT.exec(s.tmp)?.[1] === s.target)));
  if (!valid) {
    throw new InputError(`${file} is not a journal this tool can read, so it cannot tell whether to finish or undo the interrupted write. `
      + `Look at ${root}: <name>.old-* is the previous tree of <name>, <name>.tmp-* the new one; put the tree you want in place, then delete the journal`);
  }
  return j;
}

/** Finishes a committed swap (idempotent: each step checks what is already done). */
function rollForward(root: string, j: Journal, step: string): void {
  for (const s of j.swaps) {
    const target = path.join(root, s.target);
    const old = path.join(root, s.old);
    if (s.tmp === undefined) {
      if (exists(target)) rename(target, old, step);
      continue;
    }
    const tmp = path.join(root, s.tmp);
    if (!exists(tmp)) continue; // already in place
    if (exists(target)) rename(target, old, step);
    rename(tmp, target, step);
  }
}

/** Undoes a swap (idempotent): every target gets its previous tree back. */
function rollBack(root: string, j: Journal, step: string): void {
  for (const s of [...j.swaps].reverse()) {
    const target = path.join(root, s.target);
    const old = path.join(root, s.old);
    const tmp = s.tmp === undefined ? undefined : path.join(root, s.tmp);
    if (exists(old)) {
      if (exists(target)) {
        if (!tmp || exists(tmp)) throw new WriteFailed(`cannot undo the interrupted write of ${target}: both it and ${old} exist; keep the one you want and delete the other and ${path.join(root, JOURNAL_FILE)}`);
        rename(target, tmp, step);
      }
      rename(old, target, step);
    } else if (!s.existed && tmp && exists(target) && !exists(tmp)) {
      rename(target, tmp, step);
    }
  }
}

/** Completes (commit) or undoes (abort) the journal's swaps, deletes what is left over, then the journal. */
function settle(root: string, journal: Journal, renameStep: string, removeStep: string): void {
  let j = journal;
  if (j.state === 'commit') {
    try {
      rollForward(root, j, renameStep);
    } catch (e) {
      // a rename that cannot be done (a folder in use): undo every swap instead
      j = { ...j, state: 'abort' };
      writeJournal(root, j);
      rollBack(root, j, renameStep);
      syncDir(root);
      for (const s of j.swaps) if (s.tmp) removeTree(path.join(root, s.tmp), removeStep);
      faultPoint('unjournal');
      unlinkSync(path.join(root, JOURNAL_FILE));
      throw new WriteFailed(`${isFsError(e) ? fsErrorText(e) : (e as Error).message}; nothing in ${root} was changed`);
    }
    syncDir(root);
    for (const s of j.swaps) removeTree(path.join(root, s.old), removeStep);
  } else {
    rollBack(root, j, renameStep);
    syncDir(root);
    for (const s of j.swaps) if (s.tmp) removeTree(path.join(root, s.tmp), removeStep);
  }
  faultPoint('unjournal');
  unlinkSync(path.join(root, JOURNAL_FILE));
}

/** Removes what interrupted runs left in a locked root: temporary and old trees, stray bookkeeping files. */
function sweep(root: string): void {
  const names = readdirSync(root);
  for (const name of names) {
    const m = ARTIFACT.exec(name);
    if (m) {
      // An old tree without its target: an older version of the tool was killed between its two renames.
      if (m[2] === 'old' && !exists(path.join(root, m[1]))) rename(path.join(root, name), path.join(root, m[1]), 'recover-rename');
      else removeTree(path.join(root, name), 'recover-remove');
      continue;
    }
    if (name.startsWith(`${JOURNAL_FILE}.tmp-`)) removeTree(path.join(root, name), 'recover-remove');
    const lockTmp = new RegExp(`^${LOCK_FILE.replace(/\./g, '\\.')}\\.(\\d+)-\\d+$`).exec(name);
    if (lockTmp && !pidAlive(Number(lockTmp[1]))) removeTree(path.join(root, name), 'recover-remove');
  }
}

/** Older versions replaced the whole root through `<root>.tmp-*` / `<root>.old-*` beside it; removes those of dead processes. */
function sweepBeside(root: string): void {
  const parent = path.dirname(root);
  const base = path.basename(root);
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  // the parent is itself an output root of this protocol: its own recovery decides (from its journal)
  if (names.some((n) => n.startsWith(BOOKKEEPING_PREFIX))) return;
  for (const name of names) {
    const m = ARTIFACT.exec(name);
    if (!m || m[1] !== base || pidAlive(Number(m[3]))) continue;
    if (m[2] === 'old' && !exists(root)) rename(path.join(parent, name), root, 'recover-rename');
    else removeTree(path.join(parent, name), 'recover-remove');
  }
}

function recoverLocked(root: string): void {
  const journal = readJournal(root);
  if (journal) settle(root, journal, 'recover-rename', 'recover-remove');
  sweep(root);
  faultPoint('recovered');
}

/** Options of a recovery. */
export interface RecoverOptions extends LockOptions {
  /**
   * The command only reads the output: while a live writer holds the lock and has not committed
   * (no journal), the trees in place are complete and its temporary trees are its own, so a reader
   * goes on without waiting for it (a streamed synth of a large fleet holds the lock for its whole render).
   */
  readonly reader?: boolean;
}

/**
 * Brings an output root back to a complete state after an interrupted write: rolls the swap
 * forward or back from the journal, then deletes every leftover (`<name>.tmp-*`, `<name>.old-*`,
 * also those of older versions of the tool, and `<root>.tmp-*` beside the root). Cheap when there
 * is nothing to do (one readdir). Every command that reads or writes an output folder calls it
 * first. Waits (bounded) while another command holds the lock, unless it only reads and the
 * writer has not committed yet.
 */
export function recoverOutput(dir: string, options: RecoverOptions = {}): void {
  const root = path.resolve(dir);
  try {
    sweepBeside(root);
    let names: string[];
    try {
      names = readdirSync(root);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw e;
    }
    if (!names.some(isWriteArtifact)) return;
    if (options.reader && !names.includes(JOURNAL_FILE) && lockIsHeld(root)) return;
    const lock = OutputLock.acquire(root, options);
    try {
      recoverLocked(root);
    } finally {
      lock.release();
    }
  } catch (e) {
    if (isFsError(e)) throw new WriteFailed(`cannot recover ${root} from an interrupted write: ${fsErrorText(e)}`);
    throw e;
  }
}

/** A new tree written to a temporary folder of an output root, for the swap. */
export interface StagedTree {
  /** The entry it replaces. */
  readonly name: string;
  /** Its temporary name in the root. */
  readonly tmp: string;
  /** Whether the entry exists now. */
  readonly existed: boolean;
}

/**
 * Writes `files` as the new tree of the entry `name` of `root` to a temporary folder beside it, or
 * nothing when the entry already holds exactly these files (undefined; `compare` false: the caller
 * found it differs already). `announce` hears the temporary name before anything is written to it.
 * The caller holds the root's lock (a TreeWriter).
 */
export function stageTree(
  root: string, name: string, files: readonly RenderedFile[], announce: (staged: StagedTree) => void, compare = true,
): StagedTree | undefined {
  const target = path.join(root, name);
  // A tree that is already on disk byte for byte is left as it is (no temporary copy, no swap).
  if (compare && holdsExactly(target, files)) return undefined;
  const staged: StagedTree = { name, tmp: artifactName(name, 'tmp'), existed: exists(target) };
  announce(staged);
  writeTree(path.join(root, staged.tmp), files);
  return staged;
}

/**
 * A write of several trees into one output root, streamed: `begin` takes the root's lock and
 * recovers what an interrupted run left; each `add` writes one tree to its temporary name at once
 * (or notes that the tree is on disk byte for byte already), so a caller renders, checks and adds
 * one tree at a time and keeps none of them; `commit` swaps them all in together (protocol above),
 * `abort` deletes the temporary trees. Either one releases the lock. Until `commit` the previous
 * output is untouched, whatever happens to the process.
 */
export class TreeWriter {
  /**
   * Takes the lock of `root` (created when missing) and recovers it. Throws InputError when the root
   * cannot be used at all (nothing was written).
   */
  static begin(root: string, options: WriteOptions = {}): TreeWriter {
    const abs = path.resolve(root);
    let made: string[];
    let lock: OutputLock;
    try {
      made = makeDirs(abs);
      lock = OutputLock.acquire(abs, options);
    } catch (e) {
      if (isFsError(e)) throw new InputError(`output folder ${abs}: ${fsErrorText(e)}`);
      throw e;
    }
    const writer = new TreeWriter(abs, lock, made, options.replaceAll ?? false);
    try {
      recoverLocked(abs);
    } catch (e) {
      writer.release();
      if (isFsError(e)) throw new WriteFailed(`${fsErrorText(e)}; run the command again to finish or undo the write`);
      throw e;
    }
    return writer;
  }

  private readonly names = new Set<string>();
  private readonly swaps: Swap[] = [];
  private done = false;
  /** The entries commit() wrote that did not exist before (the rest of what it returns was replaced or removed). */
  created: readonly string[] = [];

  private constructor(
    /** The output root (absolute). */
    readonly root: string,
    private readonly lock: OutputLock,
    /** Folders begin() created (outermost first): removed again by abort() when they are empty. */
    private readonly made: readonly string[],
    private readonly replaceAll: boolean,
  ) {}

  /**
   * One entry of the root (a folder named `name`) becomes exactly `files`: written now to a temporary
   * folder beside it, swapped in by commit(). Returns false when the entry already holds exactly these
   * files (nothing is written, commit leaves it). A write that fails aborts the whole write and throws
   * WriteFailed (the previous output is unchanged).
   */
  add(name: string, files: readonly RenderedFile[], compare = true): boolean {
    try {
      return this.stage(name, files, compare);
    } catch (e) {
      this.abort();
      throw e;
    }
  }

  /**
   * add() for a caller that aborts by itself (other threads may still be writing into the root): a
   * failed write throws WriteFailed and leaves the write open for that abort().
   */
  stage(name: string, files: readonly RenderedFile[], compare = true): boolean {
    this.claim(name);
    try {
      return stageTree(this.root, name, files, (staged) => this.adopt(staged, false), compare) !== undefined;
    } catch (e) {
      if (isFsError(e)) throw new WriteFailed(`${fsErrorText(e)}; nothing in ${this.root} was changed`);
      throw e;
    }
  }

  /**
   * A tree another thread stages (stageTree) into this root while this write holds the lock: registered
   * when it is announced, before its files are written, so that abort() deletes it too (the caller
   * waits for that thread first) and commit() swaps it in.
   */
  adopt(staged: StagedTree, claim = true): void {
    if (claim) this.claim(staged.name);
    this.swaps.push({ target: staged.name, tmp: staged.tmp, old: artifactName(staged.name, 'old'), existed: staged.existed });
  }

  /**
   * An entry the caller found holding exactly its new tree already (holdsExactly): nothing is written,
   * and commit leaves it as it is (with replaceAll it is one of the entries kept, not removed).
   */
  keep(name: string): void {
    this.claim(name);
  }

  private claim(name: string): void {
    this.assertOpen();
    if (!plainName(name) || isWriteArtifact(name)) throw new Error(`cannot write an output entry named "${name}"`);
    if (this.names.has(name)) throw new Error(`output entry "${name}" written twice`);
    this.names.add(name);
  }

  /** Swaps every added tree in at once and deletes what they replace; returns the entries replaced or removed. */
  commit(): string[] {
    this.assertOpen();
    this.done = true;
    try {
      const swaps = [...this.swaps, ...this.removals()];
      if (swaps.length === 0) return [];
      const journal: Journal = { format: 1, tool: 'gpu-cluster-manifests', state: 'commit', pid: process.pid, host: os.hostname(), swaps };
      try {
        writeJournal(this.root, journal);
      } catch (e) {
        this.removeTemporaries();
        if (isFsError(e)) throw new WriteFailed(`${fsErrorText(e)}; nothing in ${this.root} was changed`);
        throw e;
      }
      settle(this.root, journal, 'rename', 'remove');
      this.created = swaps.filter((sw) => !sw.existed).map((sw) => sw.target);
      return swaps.map((sw) => sw.target);
    } catch (e) {
      if (isFsError(e)) throw new WriteFailed(`${fsErrorText(e)}; run the command again to finish or undo the write`);
      throw e;
    } finally {
      this.release();
    }
  }

  /** Deletes the temporary trees written so far and releases the lock; the output stays as it was. Idempotent. */
  abort(): void {
    if (this.done) return;
    this.done = true;
    try {
      this.removeTemporaries();
      // a root this write created and left empty goes again (the lock is released first)
    } finally {
      this.release();
    }
    for (const dir of [...this.made].reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        break; // not empty (or not ours to remove): keep it and its parents
      }
    }
  }

  /** With replaceAll: every other entry of the root, to be removed. */
  private removals(): Swap[] {
    if (!this.replaceAll) return [];
    return readdirSync(this.root).sort()
      .filter((name) => !this.names.has(name) && !isWriteArtifact(name))
      .map((name) => ({ target: name, old: artifactName(name, 'old'), existed: true }));
  }

  private removeTemporaries(): void {
    for (const s of this.swaps) {
      try {
        if (s.tmp) removeTree(path.join(this.root, s.tmp), 'remove');
      } catch {
        // left for the next run's recovery
      }
    }
  }

  private release(): void {
    this.done = true;
    this.lock.release();
  }

  private assertOpen(): void {
    if (this.done) throw new Error(`the write of ${this.root} is already committed or aborted`);
  }
}

/**
 * Replaces the entries of the output root `root` (each a folder named `entries[].name`) with
 * exactly the given files, all or none (see the protocol above): a TreeWriter that adds every entry,
 * then commits. Throws InputError when the root cannot be used at all (nothing was written) and
 * WriteFailed when writing failed (the previous output is unchanged). Entries already on disk byte
 * for byte are not rewritten. Returns the names of the entries replaced or removed.
 */
export function writeTrees(root: string, given: readonly TreeEntry[], options: WriteOptions = {}): string[] {
  for (const e of given) if (!plainName(e.name) || isWriteArtifact(e.name)) throw new Error(`cannot write an output entry named "${e.name}"`);
  const writer = TreeWriter.begin(root, options);
  try {
    for (const e of given) writer.add(e.name, [...e.files]);
    return writer.commit();
  } finally {
    writer.abort();
  }
}

/**
 * Replaces the folder `target` with exactly `files` (paths relative to it), or leaves it
 * untouched: writeTrees with the target's parent as the output root.
 */
export function writeTreeAtomically(target: string, files: Iterable<RenderedFile>, options: LockOptions = {}): void {
  const abs = path.resolve(target);
  writeTrees(path.dirname(abs), [{ name: path.basename(abs), files }], options);
}

/**
 * Recovery for a path a command reads (`validate dist/instant-cluster`): the path as an output
 * root, and its parent when that holds the protocol's lock or journal or leftovers of the path.
 * A reader (see RecoverOptions.reader) unless told otherwise.
 */
export function recoverAround(p: string, given: RecoverOptions = {}): void {
  const options = { reader: true, ...given };
  const abs = path.resolve(p);
  const parent = path.dirname(abs);
  let names: string[] = [];
  try {
    names = parent === abs ? [] : readdirSync(parent);
  } catch {
    // unreadable parent: only the path itself
  }
  const base = path.basename(abs);
  if (names.some((n) => n.startsWith(BOOKKEEPING_PREFIX) || ARTIFACT.exec(n)?.[1] === base)) recoverOutput(parent, options);
  recoverOutput(abs, options);
}
