import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { InputError } from '../errors';
import { faultPoint } from '../fault';
import { readTextIfPresent } from '../files';
import { pidAlive } from '../processes';

/** Prefix of every file the write protocol keeps in an output root (lock, journal); never rendered output. */
export const BOOKKEEPING_PREFIX = '.gpu-cluster-manifests.';
export const LOCK_FILE = `${BOOKKEEPING_PREFIX}lock`;
/** Held only while a stale lock is being broken. */
const BREAKER_FILE = `${BOOKKEEPING_PREFIX}lock.break`;

/** Seconds a command waits for another one's lock on the output folder (default 10). */
export const LOCK_WAIT_ENV = 'GPU_CLUSTER_MANIFESTS_LOCK_WAIT';
const DEFAULT_WAIT_SECONDS = 10;

/** Who holds a lock: written into the lock file. */
export interface LockOwner {
  readonly pid: number;
  readonly host: string;
  /** ISO time the lock was taken. */
  readonly since: string;
  /** Start time of the process (Linux /proc/<pid>/stat), to tell a reused pid from the owner. */
  readonly procStart?: string;
  readonly command?: string;
}

function procStartOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleep(ms: number): void {
  Atomics.wait(sleepCell, 0, 0, ms);
}

/**
 * A lock file read once: its text (to remove it only while it still holds that) and its owner; undefined
 * when there is no such file (released meanwhile). Never read again: it may be gone the next moment.
 */
function readLock(file: string): { readonly text: string; readonly owner: LockOwner | 'unreadable' } | undefined {
  const text = readTextIfPresent(file);
  if (text === undefined) return undefined;
  try {
    const o = JSON.parse(text) as LockOwner;
    return { text, owner: typeof o.pid === 'number' && typeof o.host === 'string' ? o : 'unreadable' };
  } catch {
    return { text, owner: 'unreadable' };
  }
}

/**
 * True when the owner is certainly gone: a process of this host that no longer runs (or whose pid
 * now belongs to another process), or a lock older than the last boot. Locks of other hosts
 * (a shared file system) are never taken for stale.
 */
function isStale(owner: LockOwner): boolean {
  if (owner.host !== os.hostname()) return false;
  const bootedAt = Date.now() - os.uptime() * 1000;
  if (Date.parse(owner.since) < bootedAt - 60_000) return true; // taken before the last boot
  if (!pidAlive(owner.pid)) return true;
  if (owner.procStart !== undefined) {
    const now = procStartOf(owner.pid);
    if (now !== undefined && now !== owner.procStart) return true;
  }
  return false;
}

function describeOwner(o: LockOwner): string {
  return `pid ${o.pid}${o.command ? ` (${o.command})` : ''} on ${o.host} since ${o.since}`;
}

let serial = 0;

/** Creates `file` holding `content` only when it does not exist; the content is complete the moment the file appears. */
function createExclusive(file: string, content: string): boolean {
  serial += 1;
  const tmp = `${file}.${process.pid}-${serial}`;
  writeFileSync(tmp, content, { flag: 'wx' });
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EOPNOTSUPP') throw e;
    // file systems without hard links: O_EXCL (the content follows the creation by microseconds)
    try {
      writeFileSync(file, content, { flag: 'wx' });
      return true;
    } catch (e2) {
      if ((e2 as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e2;
    }
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // removed by a recovery sweep of another process: fine
    }
  }
}

function removeIfSame(file: string, expected: string): void {
  try {
    if (readFileSync(file, 'utf8') === expected) unlinkSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** How long to wait for a busy lock, from GPU_CLUSTER_MANIFESTS_LOCK_WAIT (seconds). */
export function lockWaitMs(): number {
  const v = process.env[LOCK_WAIT_ENV];
  if (v === undefined || v === '') return DEFAULT_WAIT_SECONDS * 1000;
  const s = Number(v);
  if (!Number.isFinite(s) || s < 0) throw new InputError(`${LOCK_WAIT_ENV}=${v}: expected a number of seconds`);
  return s * 1000;
}

/** Options of acquiring the output lock. */
export interface LockOptions {
  /** Command named in the lock file (for the message another command prints). */
  readonly command?: string;
  /** Told once when the lock is busy and the command starts waiting. */
  readonly notify?: (line: string) => void;
}

/**
 * The lock of an output root: `<root>/.gpu-cluster-manifests.lock`, a file holding the owner's
 * pid, host and start time. Created atomically (complete content or nothing); a lock whose owner
 * is gone is broken (under a second, short-lived lock, so two processes never both break it and
 * take it). A busy lock is waited for up to GPU_CLUSTER_MANIFESTS_LOCK_WAIT seconds, then the
 * command exits 2 naming the owner.
 */
export class OutputLock {
  static acquire(root: string, options: LockOptions = {}): OutputLock {
    const file = path.join(root, LOCK_FILE);
    const breaker = path.join(root, BREAKER_FILE);
    const me: LockOwner = {
      pid: process.pid, host: os.hostname(), since: new Date().toISOString(), procStart: procStartOf(process.pid), command: options.command,
    };
    const content = `${JSON.stringify(me)}\n`;
    const deadline = Date.now() + lockWaitMs();
    let told = false;
    let pause = 10;
    for (;;) {
      if (createExclusive(file, content)) {
        faultPoint('lock');
        return new OutputLock(file, content);
      }
      const lock = readLock(file);
      if (lock === undefined) continue; // released in between
      faultPoint('lock-busy');
      const { owner } = lock;
      const unreadableAndOld = owner === 'unreadable' && Date.now() - (statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 10_000;
      if (unreadableAndOld || (owner !== 'unreadable' && isStale(owner))) {
        // the text read above, not a second read: a lock released since then is not an error
        if (createExclusive(breaker, content)) {
          try {
            removeIfSame(file, lock.text);
          } finally {
            unlinkSync(breaker);
          }
          continue;
        }
        const b = readLock(breaker);
        // a breaker left by a process that died while breaking: remove it
        if (b !== undefined && b.owner !== 'unreadable' && isStale(b.owner)) removeIfSame(breaker, b.text);
      }
      const who = owner === 'unreadable' ? 'another process' : describeOwner(owner);
      if (Date.now() >= deadline) {
        throw new InputError(`${root} is locked by ${who}: another command is writing it. Retry when it is done, `
          + `wait longer with ${LOCK_WAIT_ENV}=<seconds>, or delete ${file} if that process is gone`);
      }
      if (!told) {
        options.notify?.(`waiting for ${root}: locked by ${who}`);
        told = true;
      }
      sleep(pause);
      pause = Math.min(pause * 2, 100);
    }
  }

  private released = false;

  private constructor(readonly file: string, private readonly content: string) {}

  /** Deletes the lock file (only if it is still ours). */
  release(): void {
    if (this.released) return;
    this.released = true;
    faultPoint('unlock');
    try {
      removeIfSame(this.file, this.content);
    } catch {
      // left behind: the next command finds its owner gone and breaks it
    }
  }
}

/**
 * True when the lock of `root` is held by a process that still runs (a writer at work); false when
 * it is free, unreadable or stale.
 */
export function lockIsHeld(root: string): boolean {
  const owner = readLock(path.join(root, LOCK_FILE))?.owner;
  return owner !== undefined && owner !== 'unreadable' && !isStale(owner);
}
