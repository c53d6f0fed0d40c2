import { CLIENT_FILES_FOLDER } from '../render/client-files';
import { inKustomization, kustomization, manifestYaml, RenderedFile } from '../render/folder-files';
import { manifestFileName, RenderedCluster } from '../render/manifest';
import { clusterReport, REPORT_FILE } from '../report/report';

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
    files.push([`${cluster.name}/${f.folder}/kustomization.yaml`, kustomization(applied, f.kustomization, f.replacements)]);
  }
  for (const f of cluster.clientFiles ?? []) files.push([`${cluster.name}/${CLIENT_FILES_FOLDER}/${f.path}`, f.content]);
  files.push([`${cluster.name}/${REPORT_FILE}`, clusterReport(cluster)]);
  return files;
}
