import { ClusterIndex } from './cluster-index';
import { inKustomization } from '../render/folder-files';
import { Manifest } from '../render/manifest';

/** The objects an Application applies: as the engines render its sources, else (no renders) its folder of the tree. */
export function appliedBy(index: ClusterIndex, app: Manifest): readonly Manifest[] {
  const rendered = (index.renders?.sources ?? []).filter((r) => r.application === app);
  if (rendered.length > 0) return rendered.flatMap((r) => r.objects);
  const path = ((app.spec as { source?: { path?: string } } | undefined)?.source?.path ?? '').replace(/\/+$/, '');
  const folder = index.folders.find((f) => path.endsWith(`/${f}`));
  // what the folder's kustomization lists: not the templates, nor what is applied by hand (the root itself)
  return folder ? index.inFolder(folder).filter(inKustomization) : [];
}
