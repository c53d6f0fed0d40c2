import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { readSnapshot } from '../../src/preflight/snapshot';

/** The pre-installed Instant Cluster, as `kubectl get ... -o yaml` shows it: the preflight and init tests' cluster. */
export const SNAPSHOT = path.join(__dirname, 'fixtures', 'instant-cluster.snapshot.yaml');

/** A fresh copy of the snapshot's objects, for a test to change. */
export function snapshotObjects(): any[] {
  return structuredClone(readSnapshot(SNAPSHOT).objects) as any[];
}

/** The snapshot's objects with `change` applied, written to `<dir>/<name>.yaml` as a kubectl List. */
export function changedSnapshot(dir: string, name: string, change: (objects: any[]) => void): string {
  const objects = snapshotObjects();
  change(objects);
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  return file;
}
