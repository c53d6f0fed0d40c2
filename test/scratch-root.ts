import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/**
 * vitest's global setup: every run of the tests gets a scratch root of its own, the TMPDIR of its workers and of every
 * process they start, removed when the run ends. What the tests make under os.tmpdir() (cdk8s's Testing.app folders,
 * fixtures, renders: some 3,000 folders and 7 GB after a day of runs on one machine) never piles up.
 * CONTROL_PLANE_KEEP=1 keeps it, as it keeps the cluster tests' folders.
 */
export default function setup(): () => void {
  const root = mkdtempSync(path.join(tmpdir(), 'gpu-cluster-manifests-tests-'));
  const before = process.env.TMPDIR;
  process.env.TMPDIR = root;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    if (process.env.CONTROL_PLANE_KEEP === '1') {
      process.stderr.write(`the tests' scratch root is kept in ${root}\n`);
      return;
    }
    rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  };
}
