import * as path from 'node:path';
import { code } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { ARGOCD_CM } from '../components/argocd/argocd-config';
import { ARGOCD_FOLDER } from '../components/argocd/chart';
import { FLEET_FOLDER, GITOPS_FOLDER, rootApplicationOf } from '../components/gitops/plan';
import { GRAFANA_ADMIN_KEYS } from '../components/monitoring/helm-values';
import { IN_CLUSTER_SERVER } from '../model/description';
import { ARGOCD_FIELD_MANAGER, LABELS } from '../model/names';
import { manifestFileName, RenderedCluster } from '../render/manifest';
import { VERSIONS } from '../versions';

/**
 * How the cluster comes under Argo CD: on its own (the bootstrap applies the AppProject and the root Application; the
 * root syncs the gitops folder, itself left out, the Applications pinned to the commit it synced), or as a member of a
 * fleet (registered with the hub's Argo CD under the description's name; the fleet folder's ApplicationSet then
 * generates the root in its place). Every name, path and count comes from the rendered gitops objects.
 */
export function bootstrapSection(c: RenderedCluster, index: ClusterIndex): string {
  const g = c.model.description.gitops;
  const root = g.path.replace(/\/+$/, '');
  const gitops = `${root}/${GITOPS_FOLDER}`;
  const objects = index.ofKind('Application', 'argoproj.io').filter((a) => index.folderOf(a) === GITOPS_FOLDER);
  const rootApp = rootApplicationOf(objects, root);
  const project = index.ofKind('AppProject', 'argoproj.io').find((p) => index.folderOf(p) === GITOPS_FOLDER);
  const byHand = objects.filter((a) => a !== rootApp && a.metadata.annotations?.[LABELS.byHand] === 'true');
  const children = objects.filter((a) => a !== rootApp && !byHand.includes(a));
  const argocd = rootApp?.metadata.namespace ?? g.namespace;
  if (!rootApp || !project) return `No Argo CD objects are rendered for this cluster: apply each folder with ${code('kubectl apply -k <folder>')}.`;
  // The fleet folder sits beside the cluster folders in the output root.
  const fleet = path.posix.basename(root) === c.name ? `${path.posix.dirname(root)}/${FLEET_FOLDER}` : `<output root>/${FLEET_FOLDER}`;
  const managed = c.model.argocd === 'managed';
  const hubManaged = g.destinationServer !== IN_CLUSTER_SERVER;
  const argocdFolder = `${root}/${ARGOCD_FOLDER}`;
  const base = c.folders.find((f) => f.folder === ARGOCD_FOLDER)?.kustomization?.bases[0];
  const argocdApp = objects.find((a) => (a.spec as { source?: { path?: string } } | undefined)?.source?.path === argocdFolder);
  const monitoring = c.model.description.monitoring;
  const grafanaSecret = c.model.description.installs.monitoring === 'managed'
    ? [
      '',
      `The managed monitoring stack reads Grafana's admin credentials from the Secret ${code(`${monitoring.namespace}/${monitoring.grafanaAdminSecret}`)}, `
        + 'which is never rendered (nothing secret goes to dist/): create it once, before the bootstrap or as soon as the stack\'s namespace exists.',
      '',
      '```sh',
      `kubectl create namespace ${monitoring.namespace} --dry-run=client -o yaml | kubectl apply -f -`,
      `kubectl create secret generic ${monitoring.grafanaAdminSecret} -n ${monitoring.namespace} --from-literal=${GRAFANA_ADMIN_KEYS.user}=admin `
        + `--from-literal=${GRAFANA_ADMIN_KEYS.password}="$(openssl rand -base64 30)"`,
      '```',
    ]
    : [];
  const health = `${fleet}/${manifestFileName({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ARGOCD_CM.name, namespace: argocd } })}`;
  const projectFile = `${gitops}/${manifestFileName(project)}`;
  const rootFile = `${gitops}/${manifestFileName(rootApp)}`;
  return [
    ...(managed
      ? [
        `From a bare cluster, two commands: the first installs Argo CD ${VERSIONS.argocd.version} (the upstream install, every pod on the service node, `
          + `${code('argocd-cm')} with the health checks the sync waves wait on) from ${code(`${argocdFolder}/`)}, server-side as upstream installs it; `
          + 'the second applies the AppProject and the root Application, after which Argo CD keeps everything in sync, itself included '
          + `(Application ${code(argocdApp?.metadata.name ?? `${c.name}-${ARGOCD_FOLDER}`)}). Argo CD must be able to read ${code(g.repoURL)} at ${code(g.targetRevision)} `
          + `(${code(`argocd repo add ${g.repoURL}`)} for a private repository)`
          + (base === undefined || !/^[a-z]+:\/\//.test(base) ? ': the install comes from the folder\'s own copy of it, nothing else is read.'
            : `, and the install's remote base, ${code(base)}.`),
      ]
      : [
        `Argo CD runs elsewhere (${code('gitops.argocd: external')}): it must reach this cluster and read ${code(g.repoURL)} at ${code(g.targetRevision)}, `
          + `and its ${code('argocd-cm')} must carry the health checks the sync waves wait on: `
          + `${code(`kubectl apply --server-side -f ${health}`)} (on the Argo CD's cluster; written by a synth of every description).`
          + (hubManaged
            ? ` This cluster runs no Argo CD: a hub's runs its Applications, which live in the hub's namespace ${code(argocd)} and deploy to ${code(g.destinationServer)}. `
              + `Register the cluster with the hub under that server (${code(`argocd cluster add <kube-context-of-${c.name}> --name ${c.name}`)}, whose server must be `
              + `${code(g.destinationServer)}), and run the commands below against the hub.`
            : ''),
      ]),
    ...grafanaSecret,
    '',
    '### One cluster',
    '',
    '```sh',
    ...(managed ? [`kubectl apply --server-side --force-conflicts --field-manager=${ARGOCD_FIELD_MANAGER} -k ${argocdFolder}   # 1. Argo CD itself`] : []),
    `kubectl apply -f ${projectFile} -f ${rootFile}${managed ? '   # 2. the AppProject and the root Application' : hubManaged ? '   # on the hub' : ''}`,
    `kubectl get applications -n ${argocd} -w   # ${children.length + 1} Applications: ${rootApp.metadata.name} (the root) and what it syncs, in waves`,
    '```',
    '',
    `The bootstrap applies the AppProject ${code(project.metadata.name)} and the root Application ${code(rootApp.metadata.name)}, nothing else: the root then `
      + `syncs ${code(`${gitops}/`)} (its ${code('kustomization.yaml')}: the AppProject and the ${children.length} Applications, not the root itself, which would `
      + 'wait in its own sync for its own health) in sync waves, each wave starting when the Applications of the waves before are Healthy (or have stopped '
      + 'holding the waves: [below](#when-a-sync-wave-holds)). Argo CD builds the '
      + `folder with the commit the root synced stamped on it (${code(LABELS.revision)}), and the folder's kustomization makes it the targetRevision of every `
      + 'Application of this repository: they move only when the root applies a commit, and the health check the waves wait on is Healthy only once an '
      + 'Application has compared and synced exactly that commit. So on every push, as at the bootstrap, the waves apply it in order. '
      + `(${code(`kubectl apply -k ${gitops}`)} is refused by kustomize for this reason: the commit to pin to is missing.) The root is not synced by itself: `
      + `after a change of ${code('gitops.repoURL')}, ${code('targetRevision')}, ${code('path')} or ${code('automated')}, apply it again, ${code(`kubectl apply -f ${rootFile}`)}.`
      + (byHand.length > 0
        ? ` Left out on purpose, as its folder starts GPU work when synced: ${byHand.map((a) => code(a.metadata.name)).join(', ')}; `
          + 'to sync such a folder through Argo CD, apply its Application by hand and sync it: '
          + byHand.map((a) => `${code(`kubectl apply -f ${gitops}/${manifestFileName(a)}`)} then ${code(`argocd app sync ${a.metadata.name}`)}`).join('; ') + '.'
        : ''),
    '',
    '### In a fleet',
    '',
    `A hub Argo CD manages every cluster of the fleet from ${code(`${fleet}/`)} (written by a synth of every description). `
      + `Register this cluster with the hub under the description's name, ${code(c.name)}, then apply the fleet folder on the hub, and again after a `
      + 'cluster is added to or dropped from the fleet (nothing syncs the folder itself; a dropped cluster\'s Applications go only then); '
      + `its ApplicationSet generates the root Application of this cluster (in place of the one above, with its source), which applies ${code(gitops)} to `
      + (hubManaged ? `the hub itself (this cluster runs no Argo CD: its Applications live on the hub, in ${code(argocd)}, and deploy to ${code(g.destinationServer)})`
        : 'this cluster\'s Argo CD')
      + `, and its ${code('argocd-cm')} entries give the hub the same health checks (merged into the hub's own).`,
    '',
    '```sh',
    `argocd cluster add <kube-context-of-${c.name}> --name ${c.name}   # on the hub`,
    `kubectl apply -k ${fleet}   # on the hub`,
    '```',
  ].join('\n');
}
