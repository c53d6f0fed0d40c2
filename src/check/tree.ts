import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { ClusterView } from './cluster-view';
import { CLIENT_FILES_FOLDER } from '../render/client-files';
import { Manifest } from '../render/manifest';
import { manifestFiles, readManifestFile, textFiles } from '../render/tree';
import { isWriteArtifact } from '../render/write';

/** Subfolders of a rendered tree; the client files' folder (tutorials/) holds no objects and is left out. */
function subdirs(dir: string): string[] {
  return readdirSync(dir).sort().filter((n) => n !== CLIENT_FILES_FOLDER && !isWriteArtifact(n) && statSync(path.join(dir, n)).isDirectory());
}

function hasManifests(dir: string): boolean {
  return readdirSync(dir).some((n) => /\.ya?ml$/i.test(n) && !/^kustomization\.ya?ml$/i.test(n));
}

/** One rendered cluster folder (`dist/<cluster>`): its component folders and their objects. */
export function readClusterFolder(dir: string): ClusterView {
  const folders = subdirs(dir).map((folder) => {
    const files = manifestFiles(path.join(dir, folder)).map(readManifestFile);
    return { folder, objects: files.flatMap((f) => f.inputs.map((i) => i.manifest as Manifest)), files };
  });
  return { name: path.basename(path.resolve(dir)), folders, dir: path.resolve(dir), texts: textFiles(dir) };
}

/** A cluster of a rendered tree, found but not read yet. */
export interface ClusterFolder {
  readonly name: string;
  /** A folder of an output root that holds manifests itself (the fleet folder, dist/fleet/): checked as one, but no cluster. */
  readonly fleet?: boolean;
  /** Reads its objects (every manifest file of its folders, once). */
  read(): ClusterView;
}

/**
 * The clusters of a rendered tree, each to be read when its turn comes (a fleet is checked one cluster after
 * another, not held whole): `dir` is either one cluster folder (its subfolders hold the manifests) or an output
 * root whose subfolders are cluster folders. A subfolder of the root that holds manifests itself (the fleet
 * folder) is one cluster with one folder.
 */
export function clusterFolders(dir: string): ClusterFolder[] {
  const children = subdirs(dir);
  const isRoot = children.some((c) => subdirs(path.join(dir, c)).length > 0);
  if (!isRoot) return [{ name: path.basename(path.resolve(dir)), read: () => readClusterFolder(dir) }];
  return children.map((c) => {
    const child = path.join(dir, c);
    if (subdirs(child).length > 0 || !hasManifests(child)) return { name: c, read: () => readClusterFolder(child) };
    return {
      name: c,
      fleet: true,
      read: () => {
        const files = manifestFiles(child).map(readManifestFile);
        const objects = files.flatMap((f) => f.inputs.map((i) => i.manifest as Manifest));
        return { name: c, folders: [{ folder: c, objects, files }], dir: path.resolve(child), texts: textFiles(child) };
      },
    };
  });
}

/** The clusters of a rendered tree (clusterFolders), read. */
export function readClusters(dir: string): ClusterView[] {
  return clusterFolders(dir).map((c) => c.read());
}
