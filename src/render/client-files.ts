/**
 * Client files: files a user copies to their own machine (a SkyPilot config, a task file), rendered
 * beside the manifests of a cluster under `dist/<cluster>/tutorials/`. They are no Kubernetes objects:
 * never validated as manifests, never in a kustomization, never synced by Argo CD, never read by the
 * cross-object checks. The cluster report lists them.
 */

/** Folder of a cluster's client files (`dist/<cluster>/tutorials/`); no component folder may take this name. */
export const CLIENT_FILES_FOLDER = 'tutorials';

/** One client file. */
export interface ClientFile {
  /** Path under `dist/<cluster>/tutorials/` (e.g. `skypilot/research/config.yaml`). */
  readonly path: string;
  readonly content: string;
  /** One line for the report: what the file is for. */
  readonly description: string;
}
