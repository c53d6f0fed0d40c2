import { ApiObject, App, Chart } from 'cdk8s';
import { COMPONENTS, WIRING } from '../components';
import { ComponentDefinition, WiringDefinition } from '../components/component';
import { adoptionAnnotations, refersTo } from '../model/adoption';
import { DATA_SYNC_OPTIONS, holdsData, mergeSyncOptions } from '../model/data-safety';
import { mirrorImagesIn } from '../model/mirrors';
import { ClusterModel } from '../model/model';
import { LABELS } from '../model/names';
import { ClientFile, CLIENT_FILES_FOLDER } from '../render/client-files';
import { compareManifests, Manifest, RenderedCluster, RenderedFolder } from '../render/manifest';

/** A chart's objects, sorted, every image from its mirror (mirrors.images). */
function chartObjects(chart: Chart, model: ClusterModel): Manifest[] {
  return (chart.toJson() as Manifest[]).map((m) => mirrorImagesIn(m, model.description.mirrors.images)).sort(compareManifests);
}

/** The object's `argocd.argoproj.io/sync-options` annotation as rendered so far. */
function syncOptionsOf(o: ApiObject): string | undefined {
  return (o.metadata.toJson() as { annotations?: Record<string, string> }).annotations?.[LABELS.syncOptions];
}

/**
 * Marks the chart's objects the model says are adopted (model.adopted): Argo CD must never prune or
 * delete what the cluster ran before this toolkit took it over.
 */
function markAdopted(chart: Chart, model: ClusterModel): void {
  if (model.adopted.length === 0) return;
  for (const child of chart.node.findAll()) {
    if (!(child instanceof ApiObject)) continue;
    const ref = { apiVersion: child.apiVersion, kind: child.kind, metadata: { name: child.name, namespace: child.metadata.namespace } };
    const adopted = model.adopted.find((a) => refersTo(a, ref));
    if (!adopted) continue;
    for (const [k, v] of Object.entries(adoptionAnnotations(syncOptionsOf(child), adopted))) child.metadata.addAnnotation(k, v);
  }
}

/**
 * Makes Argo CD ask before it prunes or deletes an object that holds data (a Namespace and all in it, a
 * claim): a tenant removed from the description must not take its volumes and jobs with it unasked.
 * Runs after markAdopted, whose `Prune=false,Delete=false` stays (it is stronger).
 */
function markDataHolders(chart: Chart): void {
  for (const child of chart.node.findAll()) {
    if (!(child instanceof ApiObject) || !holdsData(child)) continue;
    child.metadata.addAnnotation(LABELS.syncOptions, mergeSyncOptions(syncOptionsOf(child), DATA_SYNC_OPTIONS));
  }
}

/** Renders every component of one cluster in memory. Throws on construct errors. */
export function renderCluster(
  model: ClusterModel,
  components: readonly ComponentDefinition[] = COMPONENTS,
  wiring: readonly WiringDefinition[] = WIRING,
): RenderedCluster {
  const app = new App({ outdir: '/nonexistent-never-written' });
  const folders: RenderedFolder[] = [];
  const clientFiles: ClientFile[] = [];
  for (const c of components) {
    if (c.folder === CLIENT_FILES_FOLDER) throw new Error(`component folder "${c.folder}" is reserved for client files`);
    const chart = c.build(app, model);
    if (chart) markAdopted(chart, model);
    if (chart) markDataHolders(chart);
    const k = chart ? c.kustomization?.(model) : undefined;
    if (chart) {
      folders.push({ folder: c.folder, description: c.description, objects: chartObjects(chart, model), ...(k ? { kustomization: k } : {}) });
    }
    clientFiles.push(...(c.clientFiles?.(model) ?? []));
  }
  for (const w of wiring) {
    const chart = w.build(app, model, folders.slice());
    if (!chart) continue;
    const objects = chartObjects(chart, model);
    const replacements = w.replacements?.(model, objects) ?? [];
    folders.push({ folder: w.folder, description: w.description, objects, ...(replacements.length > 0 ? { replacements } : {}) });
  }
  const paths = clientFiles.map((f) => f.path);
  const twice = paths.find((p, i) => paths.indexOf(p) !== i);
  if (twice !== undefined) throw new Error(`two client files would be written to ${CLIENT_FILES_FOLDER}/${twice}`);
  return { name: model.name, model, folders, clientFiles: clientFiles.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
}
