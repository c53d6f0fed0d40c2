import * as path from 'node:path';
import { code } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { FLEET_FOLDER, GITOPS_FOLDER, rootApplicationOf } from '../components/gitops/plan';
import { LABELS } from '../model/names';
import { manifestFileName, RenderedCluster } from '../render/manifest';

/**
 * How the cluster comes under Argo CD: on its own (the gitops folder's kustomization: the AppProject, the
 * root Application and the Applications it owns), or as a member of a fleet (registered with the hub's
 * Argo CD under the description's name; the fleet folder's ApplicationSet then applies the gitops folder).
 * Every name, path and count comes from the rendered gitops objects.
 */
export function bootstrapSection(c: RenderedCluster, index: ClusterIndex): string {
  const g = c.model.description.gitops;
  const root = g.path.replace(/\/+$/, '');
  const gitops = `${root}/${GITOPS_FOLDER}`;
  const objects = index.ofKind('Application', 'argoproj.io').filter((a) => index.folderOf(a) === GITOPS_FOLDER);
  const rootApp = rootApplicationOf(objects, root);
  const project = index.ofKind('AppProject', 'argoproj.io').find((p) => index.folderOf(p) === GITOPS_FOLDER);
  const byHand = objects.filter((a) => a.metadata.annotations?.[LABELS.byHand] === 'true');
  const applied = objects.filter((a) => !byHand.includes(a));
  const argocd = rootApp?.metadata.namespace ?? g.namespace;
  if (!rootApp || !project) return `No Argo CD objects are rendered for this cluster: apply each folder with ${code('kubectl apply -k <folder>')}.`;
  // The fleet folder sits beside the cluster folders in the output root.
  const fleet = path.posix.basename(root) === c.name ? `${path.posix.dirname(root)}/${FLEET_FOLDER}` : `<output root>/${FLEET_FOLDER}`;
  return [
    `Argo CD must run in the cluster (namespace ${code(argocd)}) and be able to read ${code(g.repoURL)} at ${code(g.targetRevision)} `
      + `(${code(`argocd repo add ${g.repoURL}`)} for a private repository). For the sync waves to wait for each Application to be healthy, `
      + 'Argo CD needs its Application health check in `argocd-cm` (see the Argo CD documentation, "Argo CD App" health).',
    '',
    '### One cluster',
    '',
    '```sh',
    `kubectl apply -k ${gitops}`,
    `kubectl get applications -n ${argocd} -w   # ${applied.length} Applications: ${rootApp.metadata.name} (the root) and what it syncs, in waves`,
    '```',
    '',
    `${code('-k')}: the folder's ${code('kustomization.yaml')} lists the AppProject ${code(project.metadata.name)} and the ${applied.length} Applications; `
      + `${code('kubectl apply -f')} on the folder would fail on the kustomization, which is no object. The root Application ${code(rootApp.metadata.name)} `
      + 'then keeps them in sync with the repository.'
      + (byHand.length > 0
        ? ` Left out on purpose, as its folder starts GPU work when synced: ${byHand.map((a) => code(a.metadata.name)).join(', ')}; `
          + 'to sync such a folder through Argo CD, apply its Application by hand: '
          + byHand.map((a) => code(`kubectl apply -f ${gitops}/${manifestFileName(a)}`)).join(', ') + '.'
        : ''),
    '',
    '### In a fleet',
    '',
    `A hub Argo CD manages every cluster of the fleet from ${code(`${fleet}/`)} (written by a synth of every description). `
      + `Register this cluster with the hub under the description's name, ${code(c.name)}, then apply the fleet folder on the hub once; `
      + `its ApplicationSet applies ${code(gitops)} to this cluster's Argo CD (in place of the root Application above).`,
    '',
    '```sh',
    `argocd cluster add <kube-context-of-${c.name}> --name ${c.name}   # on the hub`,
    `kubectl apply -k ${fleet}   # on the hub`,
    '```',
  ].join('\n');
}
