import * as path from 'node:path';
import { Chart } from 'cdk8s';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { ARGOCD_CM, ARGOCD_PART_OF, ArgocdConfig } from './argocd-config';
import { HealthCheck, healthCheckData } from './health-checks';
import { mirrorImage, mirrorUrl } from '../../model/mirrors';
import { ClusterModel, podPlacement } from '../../model/model';
import { ADOPTED_SYNC_OPTIONS, LABELS } from '../../model/names';
import { DEFAULT_UPSTREAM } from '../../paths';
import { FolderKustomization, KustomizePatch, manifestFileName } from '../../render/manifest';
import { VENDORED_FOLDER } from '../../render/vendored';
import { VENDORED_RELEASES, VendoredOverlay } from '../../upstream/releases';
import { remoteBase, repositoryBase } from '../../upstream/remote-bases';
import { VERSIONS } from '../../versions';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';

/** Folder of a cluster's own Argo CD (dist/<cluster>/argocd/), rendered with gitops.argocd: managed. */
export const ARGOCD_FOLDER = 'argocd';

/**
 * What Argo CD's cluster-install at the pinned tag creates besides the folder's own objects, measured on its
 * `kustomize build` (../shared/upstream-installs/argo-cd-v3.5.1/manifests/cluster-install): its three CRDs, ClusterRoles
 * and ClusterRoleBindings, the largest object the ApplicationSet CRD (over the client-side apply limit: the install
 * and its Application apply server-side), the kinds those CRDs define. test/argocd checks them against the render.
 */
const CLUSTER_INSTALL_FOOTPRINT: FolderKustomization['footprint'] = {
  clusterKinds: [
    { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' },
    { group: 'rbac.authorization.k8s.io', kind: 'ClusterRole' },
    { group: 'rbac.authorization.k8s.io', kind: 'ClusterRoleBinding' },
  ],
  // CustomResourceDefinition applicationsets.argoproj.io, with the sync-options annotation the folder's patch adds
  largestObjectBytes: 343_325,
  // what its CRDs define: the kinds of the gitops folder, served once the bootstrap has applied this folder
  definedKinds: [
    { group: 'argoproj.io', kind: 'Application' },
    { group: 'argoproj.io', kind: 'ApplicationSet' },
    { group: 'argoproj.io', kind: 'AppProject' },
  ],
};

/** A JSON pointer token (RFC 6901): `~` and `/` escaped. */
const pointerToken = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Patches that put every Argo CD workload on the service node: the upstream install gives its Deployments and its
 * StatefulSet only `kubernetes.io/os: linux` and no tolerations, so on an Instant Cluster (service node tainted) they
 * would all land on the GPU workers. The service node's labels join the nodeSelector; its taints are tolerated.
 */
function servicePlacementPatches(model: ClusterModel): KustomizePatch[] {
  const { nodeSelector, tolerations } = podPlacement(model.serviceNode);
  const ops = JSON.stringify([
    ...Object.entries(nodeSelector).map(([k, value]) => ({ op: 'add', path: `/spec/template/spec/nodeSelector/${pointerToken(k)}`, value })),
    { op: 'add', path: '/spec/template/spec/tolerations', value: tolerations },
  ]);
  return ['Deployment', 'StatefulSet'].map((kind) => ({ target: { group: 'apps', kind }, patch: ops }));
}

/**
 * The install's ClusterRoleBindings name their ServiceAccount's namespace, `argocd`, and kustomize's namespace
 * transformer leaves ClusterRoleBinding subjects alone (it rewrites those of RoleBindings): bound to the namespace
 * Argo CD runs in (gitops.namespace), as upstream says for an install outside `argocd`. Each has one subject.
 */
function clusterRoleBindingPatch(namespace: string): KustomizePatch {
  return {
    target: { group: 'rbac.authorization.k8s.io', kind: 'ClusterRoleBinding' },
    patch: JSON.stringify([{ op: 'replace', path: '/subjects/0/namespace', value: namespace }]),
  };
}

/**
 * Sync options of what Argo CD's own Application must never prune or delete: Argo CD's CRDs (Argo CD sets no tracking
 * annotation on a CRD and so prunes none, but a CRD that carries one would be pruned: without applications.argoproj.io
 * every Application goes, and through their resources finalizer every add-on of the cluster) and the Namespace Argo CD
 * runs in. A resource's own option wins over its Application's (gitops-engine
 * sync_context.go isPruningDisabled; controller/appcontroller.go shouldBeDeleted, which already spares CRDs on a
 * cascading delete: Delete=false says so on the object).
 */
export const ARGOCD_KEPT_SYNC_OPTIONS = ADOPTED_SYNC_OPTIONS;

/** Patch that marks every CRD of the install (Application, AppProject, ApplicationSet) with ARGOCD_KEPT_SYNC_OPTIONS. */
function keptCrdsPatch(): KustomizePatch {
  return {
    target: { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' },
    // strategic merge: the upstream CRDs have no annotations a JSON patch could add to (the name is the target's)
    patch: [
      'apiVersion: apiextensions.k8s.io/v1',
      'kind: CustomResourceDefinition',
      'metadata:',
      '  name: every-crd-of-the-install',
      '  annotations:',
      `    ${LABELS.syncOptions}: ${ARGOCD_KEPT_SYNC_OPTIONS.join(',')}`,
      '',
    ].join('\n'),
  };
}

/**
 * A cluster's own Argo CD: the Namespace it runs in and its argocd-cm entries (the health checks every sync wave
 * waits on). The folder's kustomization builds them on the pinned upstream install (FolderKustomization).
 */
export class ArgocdChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const namespace = props.model.description.gitops.namespace;
    const ns = new k8s.KubeNamespace(this, 'Namespace', { metadata: { name: namespace } });
    // After the chart's labels: the Namespace is part of Argo CD's install, as every object of the install is, not of
    // the cluster. The folders of alike clusters are then the same, and check builds them once for a whole fleet.
    for (const [k, v] of Object.entries(ARGOCD_PART_OF)) ns.metadata.addLabel(k, v);
    ns.metadata.addAnnotation(LABELS.syncOptions, ARGOCD_KEPT_SYNC_OPTIONS.join(','));
    // Every check, but Dynamo's where the cluster has no Dynamo.
    const kinds = (c: HealthCheck) => c.kind !== 'DynamoGraphDeployment' || props.model.description.installs.dynamo !== 'none';
    new ArgocdConfig(this, 'Config', { namespace, data: healthCheckData(kinds) });
  }
}

/** The release of Argo CD's install the argocd folder builds on (the vendored kustomize tree of VERSIONS.argocd). */
const ARGOCD_RELEASE: VendoredOverlay = VENDORED_RELEASES.find((r): r is VendoredOverlay => r.type === 'kustomize' && r.repoURL === VERSIONS.argocd.repoURL)!;

/**
 * The images of Argo CD's install at the pinned tag (repository, no tag; SOURCES.md), which the folder's kustomization
 * renames to their mirror (mirrors.images). test/argocd checks the list against the build.
 */
export const ARGOCD_INSTALL_IMAGES: readonly string[] = ['ghcr.io/dexidp/dex', 'public.ecr.aws/docker/library/redis', 'quay.io/argoproj/argocd'];

/**
 * The base of the argocd folder: the release's remote base (on its mirrors.git mirror, a `.git` URL as kustomize reads
 * a repository of any host), or with gitops.argocdInstall vendored the package's copy written into the folder.
 */
function argocdBase(model: ClusterModel): Pick<FolderKustomization, 'bases' | 'vendored'> {
  if (model.description.gitops.argocdInstall === 'vendored') {
    const top = ARGOCD_RELEASE.path.split('/')[0];
    return {
      bases: [`${VENDORED_FOLDER}/${ARGOCD_RELEASE.folder}/${ARGOCD_RELEASE.path}`],
      vendored: { into: `${VENDORED_FOLDER}/${ARGOCD_RELEASE.folder}/${top}`, from: path.join(DEFAULT_UPSTREAM, ARGOCD_RELEASE.folder, top) },
    };
  }
  const repo = mirrorUrl(VERSIONS.argocd.repoURL, model.description.mirrors.git);
  if (repo === VERSIONS.argocd.repoURL) return { bases: [remoteBase(VERSIONS.argocd)] };
  return { bases: [repositoryBase({ ...VERSIONS.argocd, repoURL: repo })] };
}

export const argocd: ComponentDefinition = {
  folder: ARGOCD_FOLDER,
  description: `Argo CD ${VERSIONS.argocd.version} (upstream cluster-install) on the service node, with the health checks the sync waves wait on; applied once at bootstrap, then managed by Argo CD itself`,
  build: (scope: Construct, model: ClusterModel) => (model.argocd === 'managed' ? new ArgocdChart(scope, ARGOCD_FOLDER, { model }) : undefined),
  kustomization: (model: ClusterModel) => ({
    ...argocdBase(model),
    namespace: model.description.gitops.namespace,
    // argocd-cm is the upstream install's: the folder's copy patches it
    patchFiles: [{
      file: manifestFileName({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ARGOCD_CM.name, namespace: model.description.gitops.namespace } }),
      target: { version: 'v1', kind: 'ConfigMap', name: ARGOCD_CM.name },
    }],
    patches: [...servicePlacementPatches(model), clusterRoleBindingPatch(model.description.gitops.namespace), keptCrdsPatch()],
    images: ARGOCD_INSTALL_IMAGES.filter((name) => mirrorImage(name, model.description.mirrors.images) !== name)
      .map((name) => ({ name, newName: mirrorImage(name, model.description.mirrors.images) })),
    footprint: CLUSTER_INSTALL_FOOTPRINT,
  }),
};
