import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Ending what a child process leaves behind. A child runs in a process group of its own, so its
 * whole group is killed at once; and it carries a token of its run in its environment
 * (RUN_TOKEN_ENV), which its descendants inherit, so that a descendant that left the group (a
 * detached child, a daemon) is found by the token and killed too (Linux: /proc; elsewhere only
 * the group). Neither helps against a descendant that clears its environment and leaves the group:
 * the engines and descriptions are trusted programs, this only keeps their children from outliving
 * the command by accident.
 */

/** The environment variable every child of the toolkit carries: the token of its run. */
export const RUN_TOKEN_ENV = 'GPU_CLUSTER_MANIFESTS_RUN';

/** A fresh token for one run of a child. */
export function runToken(): string {
  return randomBytes(12).toString('hex');
}

/** True while a process of this host has that pid (one owned by another user included). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Kills a process group (SIGKILL); nothing when it is gone. */
export function killGroup(pgid: number | undefined): void {
  if (pgid === undefined || pgid <= 1) return;
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/**
 * Kills every process of this user whose environment carries the run's token, this process and
 * `except` aside; returns how many. Reads /proc (a few milliseconds): on other systems it finds none.
 */
export function killTagged(token: string, except: readonly number[] = []): number {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return 0;
  }
  const needle = Buffer.from(`${RUN_TOKEN_ENV}=${token}\0`);
  const skip = new Set([process.pid, ...except]);
  let killed = 0;
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (skip.has(pid)) continue;
    let environ: Buffer;
    try {
      environ = readFileSync(`/proc/${name}/environ`);
    } catch {
      continue; // another user's, or gone
    }
    if (!environ.includes(needle)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed += 1;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

/** A run's group and token, ended together. */
export function endRun(pgid: number | undefined, token: string): void {
  killGroup(pgid);
  killTagged(token);
}
