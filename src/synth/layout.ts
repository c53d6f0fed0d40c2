import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { InstallationDamaged } from '../cache/asset-sums';
import { CLIENT_FILES_FOLDER } from '../render/client-files';
import { inKustomization, kustomization, manifestYaml, RenderedFile } from '../render/folder-files';
import { manifestFileName, RenderedCluster } from '../render/manifest';
import { clusterReport, REPORT_FILE } from '../report/report';
import { treeFiles } from '../upstream/tree';

/** The files of an upstream tree the package ships, copied verbatim under `into` (root-relative). */
function vendoredFiles(into: string, from: string): RenderedFile[] {
  if (!existsSync(from)) throw new InstallationDamaged(from, 'is missing (the copy of an upstream install it ships)');
  return treeFiles(from).map((f): RenderedFile => [`${into}/${f.rel}`, readFileSync(path.join(from, f.rel), 'utf8')]);
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
    files.push([`${cluster.name}/${f.folder}/kustomization.yaml`, kustomization(applied, f.kustomization, f.replacements)]);
    const vendored = f.kustomization?.vendored;
    if (vendored) files.push(...vendoredFiles(`${cluster.name}/${f.folder}/${vendored.into}`, vendored.from));
  }
  for (const f of cluster.clientFiles ?? []) files.push([`${cluster.name}/${CLIENT_FILES_FOLDER}/${f.path}`, f.content]);
  files.push([`${cluster.name}/${REPORT_FILE}`, clusterReport(cluster)]);
  return files;
}
