import { App, Chart } from 'cdk8s';
import { GroupKind, groupKindKey, groupKindOf } from './api-kinds';
import { FleetAppProject } from './fleet-app-project';
import { FleetApplicationSet, FleetMember } from './fleet-application-set';
import { FLEET_FOLDER, GITOPS_FOLDER, rootApplicationOf } from './plan';
import { IN_CLUSTER_SERVER } from '../../model/description';
import { MANAGED_BY, LABELS, NAMESPACES } from '../../model/names';
import { kustomization, manifestYaml, RenderedFile } from '../../render/folder-files';
import { compareManifests, Manifest, manifestFileName, RenderedCluster, RenderedFolder } from '../../render/manifest';
import { ArgocdConfig } from '../argocd/argocd-config';
import { healthCheckData } from '../argocd/health-checks';

export { FLEET_FOLDER };

export interface FleetOptions {
  /**
   * Namespace of the hub's Argo CD.
   * @default 'argocd'
   */
  readonly namespace?: string;
}

/**
 * Refuses a cluster without a root Application (the Application of its gitops folder whose path is that folder): the
 * fleet's generated Application takes its place, with its source.
 */
function assertRootApplication(c: RenderedCluster): void {
  const g = c.model.description.gitops;
  const root = rootApplicationOf(c.folders.find((f) => f.folder === GITOPS_FOLDER)?.objects ?? [], g.path);
  if (!root) throw new Error(`${c.name}: no root Application in ${GITOPS_FOLDER}/ (is the gitops wiring registered?)`);
}

/**
 * What the fleet folder needs of one rendered cluster, as plain data (it crosses threads, and an up-to-date record
 * keeps it for a cluster that is not rendered again): its ApplicationSet element and the kinds of its gitops folder.
 */
export interface FleetEntry {
  readonly member: FleetMember;
  readonly kinds: readonly GroupKind[];
}

function refuseFleetName(cluster: string): void {
  if (cluster === FLEET_FOLDER) throw new Error(`name: a cluster may not be named "${FLEET_FOLDER}": dist/${FLEET_FOLDER}/ holds the fleet ApplicationSet`);
}

/** A cluster the hub's Argo CD runs must keep its Argo CD objects in the hub's Argo CD namespace: Argo CD watches only its own. */
function refuseForeignNamespace(m: FleetMember, hubNamespace: string): void {
  if (m.hubManaged && m.namespace !== hubNamespace) {
    throw new Error(`${m.cluster}: gitops.namespace: "${m.namespace}", but the cluster runs no Argo CD of its own (gitops.destinationServer is not the in-cluster server): `
      + `its AppProject and Applications live in the hub's Argo CD namespace, "${hubNamespace}"`);
  }
}

/** The fleet entry of a rendered cluster. */
export function fleetEntryOf(c: RenderedCluster): FleetEntry {
  const g = c.model.description.gitops;
  assertRootApplication(c);
  const kinds = new Map<string, GroupKind>();
  for (const m of c.folders.find((f) => f.folder === GITOPS_FOLDER)?.objects ?? []) kinds.set(groupKindKey(groupKindOf(m)), groupKindOf(m));
  return {
    member: {
      cluster: c.name,
      repoURL: g.repoURL,
      targetRevision: g.targetRevision,
      path: `${g.path}/${GITOPS_FOLDER}`,
      namespace: g.namespace,
      hubManaged: g.destinationServer !== IN_CLUSTER_SERVER,
      prune: g.automated.prune,
      selfHeal: g.automated.selfHeal,
    },
    kinds: [...kinds.values()],
  };
}

/**
 * The fleet folder: an ApplicationSet (list generator, one element per rendered cluster) that points each
 * cluster's Argo CD at its gitops folder, and the hub AppProject it needs. Linear in the number of clusters.
 */
export function renderFleet(clusters: readonly RenderedCluster[], options: FleetOptions = {}): RenderedFolder {
  for (const c of clusters) refuseFleetName(c.name);
  return renderFleetOfEntries(clusters.map(fleetEntryOf), options);
}

/** The fleet folder of the clusters' fleet entries (renderFleet). */
export function renderFleetOfEntries(entries: readonly FleetEntry[], options: FleetOptions = {}): RenderedFolder {
  const namespace = options.namespace ?? NAMESPACES.argocd;
  for (const e of entries) refuseFleetName(e.member.cluster);
  if (entries.length === 0) throw new Error('renderFleet: no clusters');

  const sorted = [...entries].sort((a, b) => (a.member.cluster < b.member.cluster ? -1 : 1));
  const members: FleetMember[] = sorted.map((e) => e.member);
  for (const m of members) refuseForeignNamespace(m, namespace);
  const kinds = new Map<string, GroupKind>();
  for (const e of sorted) for (const gk of e.kinds) kinds.set(groupKindKey(gk), gk);

  const app = new App({ outdir: '/nonexistent-never-written' });
  const chart = new Chart(app, FLEET_FOLDER, { disableResourceNameHashes: true, labels: { [LABELS.managedBy]: MANAGED_BY } });
  const project = new FleetAppProject(chart, 'Project', {
    name: FLEET_FOLDER,
    namespace,
    sourceRepos: [...new Set(members.map((m) => m.repoURL))].sort(),
    destinations: members.map((m) => ({ cluster: m.cluster, namespace: m.namespace, hubManaged: m.hubManaged })),
    namespacedKinds: [...kinds.values()].sort((a, b) => (groupKindKey(a) < groupKindKey(b) ? -1 : 1)),
  });
  new FleetApplicationSet(chart, 'ApplicationSet', { name: FLEET_FOLDER, namespace, project: project.name, members });
  // The hub's Argo CD syncs each cluster's Applications in their waves: it needs the same health checks (the
  // Application check above all) as an Argo CD of the cluster's own. Applied with the folder, merged into its argocd-cm.
  new ArgocdConfig(chart, 'Config', { namespace, data: healthCheckData() });

  return {
    folder: FLEET_FOLDER,
    description: 'The fleet: an ApplicationSet that points every cluster at its dist/<cluster>/gitops folder, its AppProject, and the health checks of the hub\'s argocd-cm',
    objects: (chart.toJson() as Manifest[]).sort(compareManifests),
  };
}

/** The files of the fleet folder, relative to the output root (`fleet/<kind>.<ns>.<name>.yaml`, kustomization.yaml). */
export function fleetFiles(fleet: RenderedFolder): RenderedFile[] {
  const names = fleet.objects.map(manifestFileName);
  return [
    ...fleet.objects.map((m, i): RenderedFile => [`${FLEET_FOLDER}/${names[i]}`, manifestYaml(m)]),
    [`${FLEET_FOLDER}/kustomization.yaml`, kustomization(names)],
  ];
}
