import { ClusterModel } from '../model/model';
import { Manifest } from '../render/manifest';

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

/** The openAPIV3Schema of a kind's version from its CRD (undefined: unknown); the health rule reads its status. */
export type SchemaOf = (apiVersion: string, kind: string) => Readonly<Record<string, unknown>> | undefined;
