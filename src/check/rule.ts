import { ClusterIndex } from './cluster-index';
import { ClusterModel } from '../model/model';
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

/** The rendered objects of one cluster, grouped by component folder. `RenderedCluster` is one. */
export interface ClusterView {
  readonly name: string;
  readonly folders: readonly { readonly folder: string; readonly objects: readonly Manifest[] }[];
  /** The model the cluster was rendered from; capacity comes from it when present. */
  readonly model?: ClusterModel;
  /** The cluster's folder on disk, for a tree read from disk: Applications' sources of the tree are built from it. */
  readonly dir?: string;
}

/** Scope of a kind from its schema (undefined: unknown kind); the namespace rule needs it. */
export type ScopeOf = (apiVersion: string, kind: string) => 'Namespaced' | 'Cluster' | undefined;

/** A cross-object rule: an id, a severity, one line of what it asserts, and the check itself. */
export interface Rule {
  readonly id: string;
  readonly severity: Severity;
  readonly summary: string;
  check(index: ClusterIndex): Violation[];
}
