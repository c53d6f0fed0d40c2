import { ClusterIndex } from './cluster-index';
import { Manifest } from '../render/manifest';

export type Severity = 'error' | 'warning';

/** One broken cross-object fact, as reported to people (text) and machines (`--format json`). */
export interface Finding {
  /** Rule id, e.g. `queue-label-target`. */
  readonly rule: string;
  readonly severity: Severity;
  readonly cluster: string;
  /** Names every object involved (`MPIJob default/nccl-test` and `LocalQueue default/research`). */
  readonly message: string;
  /** The objects involved, as `Kind namespace/name`, the offending one first. */
  readonly objects: readonly string[];
}

/** What a rule returns: the message and the objects it names (the offending one first). */
export interface Violation {
  readonly message: string;
  readonly objects: readonly Manifest[];
}

/** A cross-object rule: an id, a severity, one line of what it asserts, and the check itself. */
export interface Rule {
  readonly id: string;
  readonly severity: Severity;
  readonly summary: string;
  check(index: ClusterIndex): Violation[];
}
