import { App, Chart } from 'cdk8s';
import { COMPONENTS, WIRING } from '../components';
import { compareManifests, Manifest, RenderedFolder } from './manifest';
import { ComponentDefinition, WiringDefinition } from '../components/component';
import { ClusterModel } from '../model/model';

/** One cluster, rendered in memory. */
export interface RenderedCluster {
  readonly name: string;
  readonly model: ClusterModel;
  readonly folders: readonly RenderedFolder[];
}

function chartObjects(chart: Chart): Manifest[] {
  return (chart.toJson() as Manifest[]).slice().sort(compareManifests);
}

/** Renders every component of one cluster in memory. Throws on construct errors. */
export function renderCluster(
  model: ClusterModel,
  components: readonly ComponentDefinition[] = COMPONENTS,
  wiring: readonly WiringDefinition[] = WIRING,
): RenderedCluster {
  const app = new App({ outdir: '/nonexistent-never-written' });
  const folders: RenderedFolder[] = [];
  for (const c of components) {
    const chart = c.build(app, model);
    if (chart) folders.push({ folder: c.folder, description: c.description, objects: chartObjects(chart) });
  }
  for (const w of wiring) {
    const chart = w.build(app, model, folders.slice());
    if (chart) folders.push({ folder: w.folder, description: w.description, objects: chartObjects(chart) });
  }
  return { name: model.name, model, folders };
}
