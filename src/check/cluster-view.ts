import { ClusterModel } from '../model/model';
import { Manifest } from '../render/manifest';
import type { ReadFile, TextFile } from '../render/tree';

/** The rendered objects of one cluster, grouped by component folder. `RenderedCluster` is one. */
export interface ClusterView {
  readonly name: string;
  readonly folders: readonly {
    readonly folder: string;
    readonly objects: readonly Manifest[];
    /**
     * The files the objects were read from, for a tree read from disk: a folder's build is compared with them, its
     * digest taken from their bytes, without reading the folder again.
     */
    readonly files?: readonly ReadFile[];
  }[];
  /** The model the cluster was rendered from; capacity comes from it when present. */
  readonly model?: ClusterModel;
  /** The cluster's folder on disk, for a tree read from disk: Applications' sources of the tree are built from it. */
  readonly dir?: string;
  /**
   * For a tree read from disk: its files that hold no objects (the report, the kustomizations, the client files, the
   * fleet page), as text (render/tree.ts textFiles).
   */
  readonly texts?: readonly TextFile[];
}

/** Scope of a kind from its schema (undefined: unknown kind); the namespace rule needs it. */
export type ScopeOf = (apiVersion: string, kind: string) => 'Namespaced' | 'Cluster' | undefined;

/** The openAPIV3Schema of a kind's version from its CRD (undefined: unknown); the health rule reads its status. */
export type SchemaOf = (apiVersion: string, kind: string) => Readonly<Record<string, unknown>> | undefined;
