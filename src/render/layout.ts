import { CLIENT_FILES_FOLDER } from './client-files';
import { manifestFileName, Manifest } from './manifest';
import { RenderedCluster } from './render';
import { HEADER, toYaml } from './yaml';
import { LABELS } from '../model/names';
import { clusterReport, REPORT_FILE } from '../report/report';

/** A rendered file: path relative to the output root, and its content. */
export type RenderedFile = readonly [path: string, content: string];

/** The kustomization that lets `kubectl apply -k <folder>` apply a folder without Argo CD. */
export function kustomization(files: readonly string[]): string {
  return HEADER + toYaml({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: files });
}

/**
 * True when a folder's kustomization.yaml lists the object: every object but the templates a user fills
 * in first (LABELS.template) and the objects applied by hand only (LABELS.byHand). What the root
 * Application syncs of the gitops folder, and so what the fleet syncs in its place.
 */
export function inKustomization(m: Manifest): boolean {
  const annotations = m.metadata.annotations ?? {};
  return annotations[LABELS.template] !== 'true' && annotations[LABELS.byHand] !== 'true';
}

/** The file content of one object. */
export function manifestYaml(m: Manifest): string {
  return HEADER + toYaml(m);
}

/**
 * The files of one cluster, relative to the output root: `<cluster>/<folder>/<kind>.<name>.yaml`
 * (one object per file, for readable diffs), a `kustomization.yaml` per folder (every object but
 * the templates, LABELS.template, which a user fills in before creating them, and the objects applied
 * by hand only, LABELS.byHand), the client files under `<cluster>/tutorials/` (no kustomization: they
 * are not objects) and the cluster's `README.md` report.
 */
export function clusterFiles(cluster: RenderedCluster): RenderedFile[] {
  const files: RenderedFile[] = [];
  for (const f of cluster.folders) {
    const names = new Set<string>();
    const applied: string[] = [];
    for (const m of f.objects) {
      const name = manifestFileName(m);
      if (names.has(name)) throw new Error(`${cluster.name}/${f.folder}: two objects would be written to ${name}`);
      names.add(name);
      if (inKustomization(m)) applied.push(name);
      files.push([`${cluster.name}/${f.folder}/${name}`, manifestYaml(m)]);
    }
    files.push([`${cluster.name}/${f.folder}/kustomization.yaml`, kustomization(applied)]);
  }
  for (const f of cluster.clientFiles ?? []) files.push([`${cluster.name}/${CLIENT_FILES_FOLDER}/${f.path}`, f.content]);
  files.push([`${cluster.name}/${REPORT_FILE}`, clusterReport(cluster)]);
  return files;
}
