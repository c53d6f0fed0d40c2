import { Chart, ChartProps } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../model/model';
import { ClientFile } from '../render/client-files';
import { FolderKustomization, KustomizeReplacement, Manifest, RenderedFolder } from '../render/manifest';

/** Props of every component chart: the one validated model, read-only. */
export interface ComponentChartProps extends ChartProps {
  /** The cluster model every fact of the component derives from. */
  readonly model: ClusterModel;
}

/**
 * A component renders into dist/<cluster>/<folder>/. Its chart reads the model and nothing else
 * (no chart reads another chart).
 */
export interface ComponentDefinition {
  /** Folder name under dist/<cluster>/ (also the Argo CD Application suffix). */
  readonly folder: string;
  /** One line for the README and the summary. */
  readonly description: string;
  /**
   * Builds the chart, or returns undefined when the cluster does not need this component
   * (e.g. no NicClusterPolicy without InfiniBand).
   */
  build(scope: Construct, model: ClusterModel): Chart | undefined;
  /**
   * Files for the user's own machine (dist/<cluster>/tutorials/<path>), which are not Kubernetes objects
   * (see render/client-files.ts). Omitted: none.
   */
  clientFiles?(model: ClusterModel): ClientFile[];
  /**
   * Bases and patches the folder's kustomization.yaml adds to the folder's object files (see FolderKustomization).
   * Omitted: the kustomization lists the object files only.
   */
  kustomization?(model: ClusterModel): FolderKustomization | undefined;
}

/** Chart props every component uses: readable names (no hashes) and the common labels. */
export function componentChartProps(model: ClusterModel, extra: ChartProps = {}): ChartProps {
  return {
    disableResourceNameHashes: true,
    ...extra,
    labels: { ...model.commonLabels, ...(extra.labels ?? {}) },
  };
}

/**
 * A step that runs after the components and sees what they rendered (the Argo CD wiring needs
 * every folder, its kinds and its object sizes). Data still flows one way: it reads the rendered
 * folders and adds a folder of its own.
 */
export interface WiringDefinition {
  readonly folder: string;
  readonly description: string;
  build(scope: Construct, model: ClusterModel, folders: readonly RenderedFolder[]): Chart | undefined;
  /** Replacements of the folder's kustomization, from its rendered objects. Omitted: none. */
  replacements?(model: ClusterModel, objects: readonly Manifest[]): KustomizeReplacement[];
}
