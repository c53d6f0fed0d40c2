import { GroupKind } from './api-kinds';
import { ApplicationSpecIgnoreDifferences, ApplicationSpecSource } from '../../../imports/argocd-application-argoproj.io';
import { ClusterDescription } from '../../model/description';
import { mirroredValueOverrides, mirrorImage, MirrorMap, mirrorUrl } from '../../model/mirrors';
import { ClusterModel, podPlacement } from '../../model/model';
import { NAMESPACES, RELEASES, TRAINING_OPERATOR_KINDS } from '../../model/names';
import { DEFAULT_UPSTREAM } from '../../paths';
import { chartDefaultValues, overlayImages } from '../../upstream/release-images';
import { DYNAMO_PLATFORM_CHART, GPU_OPERATOR_CHART, NETWORK_OPERATOR_CHART, releaseOfSource, VendoredChart } from '../../upstream/releases';
import { mergeValues } from '../../upstream/values';
import { VERSIONS } from '../../versions';
import { dynamoPlatformHelmValues } from '../dynamo/helm-values';
import { gpuOperatorHelmValues } from '../gpu-operator/helm-values';
import { kueueHelmValues } from '../kueue/manager-config';
import { victoriaMetricsHelmValues } from '../monitoring/helm-values';
import { networkOperatorHelmValues } from '../network-operator/helm-values';

/** An `ignoreDifferences` entry, with the reason it exists (kept in code, not rendered). */
export interface IgnoredDifference extends ApplicationSpecIgnoreDifferences {
  /** Which operator or controller writes the field, and why the rendered value cannot match. */
  readonly why: string;
}

/** One add-on Argo CD installs when the description says `installs.<key>: managed`. */
export interface ManagedInstall {
  readonly key: keyof ClusterDescription['installs'];
  /** Application name suffix: `<cluster>-<name>`. */
  readonly name: string;
  /** Namespace the add-on runs in (the Application's destination namespace). */
  readonly namespace: string;
  /** Further namespaces the add-on writes objects into. */
  readonly extraNamespaces: readonly string[];
  readonly source: ApplicationSpecSource;
  /** API kinds the add-on serves (its CRDs): CRs of these kinds sync in a later wave. */
  readonly provides: readonly GroupKind[];
  /**
   * Cluster-scoped kinds the add-on's manifests create (the AppProject whitelists them). Kept by hand
   * so that rendering needs no upstream files; test/upstream checks it equals the footprint read from
   * the vendored chart/overlay, and the rule appproject-permits-install-footprint checks the AppProject.
   */
  readonly clusterKinds: readonly GroupKind[];
  /** Size of the largest object its Application applies, as compact JSON (LARGEST_APPLIED_BYTES). */
  readonly largestObjectBytes: number;
  /** Argo CD creates the namespace (the manifests do not contain it). */
  readonly createNamespace: boolean;
  /** Labels of the namespace Argo CD creates. */
  readonly namespaceLabels: Readonly<Record<string, string>>;
  /**
   * It claims volumes of the default StorageClass (no storageClassName): it syncs after the StorageClasses and
   * their provisioner, or its Application never gets healthy and the waves behind it never start.
   */
  readonly needsDefaultStorageClass: boolean;
  readonly ignoreDifferences: readonly IgnoredDifference[];
}

const CRD: GroupKind = { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' };
const CLUSTER_ROLE: GroupKind = { group: 'rbac.authorization.k8s.io', kind: 'ClusterRole' };
const CLUSTER_ROLE_BINDING: GroupKind = { group: 'rbac.authorization.k8s.io', kind: 'ClusterRoleBinding' };
const NAMESPACE: GroupKind = { group: '', kind: 'Namespace' };
const MUTATING_WEBHOOK: GroupKind = { group: 'admissionregistration.k8s.io', kind: 'MutatingWebhookConfiguration' };
const VALIDATING_WEBHOOK: GroupKind = { group: 'admissionregistration.k8s.io', kind: 'ValidatingWebhookConfiguration' };
const API_SERVICE: GroupKind = { group: 'apiregistration.k8s.io', kind: 'APIService' };
/** Node Feature Discovery, a subchart of both NVIDIA operator charts (one of them deploys it, or neither). */
const NFD_SUBCHART = 'charts/node-feature-discovery';
const NODE_FEATURE_RULE: GroupKind = { group: 'nfd.k8s-sigs.io', kind: 'NodeFeatureRule' };
const OPERATOR_KINDS = [CRD, CLUSTER_ROLE, CLUSTER_ROLE_BINDING];

/** The GPU and network operands load kernel modules and mount host paths: their namespaces run privileged pods. */
const PRIVILEGED_NAMESPACE = { 'pod-security.kubernetes.io/enforce': 'privileged' };

/**
 * Compact JSON size of the largest object each install's Application applies (over CLIENT_SIDE_APPLY_LIMIT it could not
 * be applied client-side; every child applies server-side now, plan.ts SERVER_SIDE_APPLY, so this records what a
 * client-side apply would refuse), measured on what `helm template` / `kustomize build` render for the pinned release with
 * the Application's values. Synth runs no engine, so the sizes are kept here; test/upstream compares them with the
 * engines' render, and check's rule applied-size-limit checks every Application of a rendered tree.
 */
const LARGEST_APPLIED_BYTES = {
  // CustomResourceDefinition clusterpolicies.nvidia.com of the chart's crds/ (not vendored: measured on ../shared/crds)
  gpuOperator: 91_027,
  // CustomResourceDefinition nicclusterpolicies.mellanox.com of the chart's crds/ (not vendored: measured on ../shared/crds)
  networkOperator: 68_695,
  kueue: 673_664, // CustomResourceDefinition workloads.kueue.x-k8s.io
  mpiOperator: 313_477, // CustomResourceDefinition mpijobs.kubeflow.org
  trainingOperator: 293_028, // CustomResourceDefinition pytorchjobs.kubeflow.org
  // ConfigMap vm-victoria-metrics-k8s-stack-node-exporter-full (a Grafana dashboard); the chart's CRDs carry no
  // descriptions, the largest (vmagents.operator.victoriametrics.com) is 169_108
  monitoring: 334_757,
  // ClusterRole dynamo-platform-dynamo-operator-manager-role: the chart renders no CRD (the operator's crd-apply
  // init container applies those its image ships), so its Application needs no server-side apply
  dynamo: 6_842,
} as const;


/** The kinds of the CRDs a pinned chart (or one of its subcharts) brings that its vendored render does not show. */
function chartCrds(chart: VendoredChart, chartPath = ''): GroupKind[] {
  return chart.unrenderedCrds.filter((u) => u.chartPath === chartPath).flatMap((u) => u.crds).map(({ group, kind }) => ({ group, kind }));
}

/** caBundle written by a controller that generates its own serving certificate. */
function injectedCaBundle(who: string, kind: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration'): IgnoredDifference {
  return {
    why: `${who} generates its webhook certificate at runtime and writes the CA into the ${kind}; the manifests carry none`,
    group: 'admissionregistration.k8s.io',
    kind,
    jqPathExpressions: ['.webhooks[]?.clientConfig.caBundle'],
  };
}

/**
 * Kustomize patch that puts an upstream operator Deployment on the service node: the upstream manifests have
 * no nodeSelector or tolerations, so on a cluster whose every node is tainted the operator never schedules.
 */
function servicePlacementPatch(model: ClusterModel, deployment: string) {
  const { nodeSelector, tolerations } = podPlacement(model.serviceNode);
  return {
    target: { group: 'apps', kind: 'Deployment', name: deployment },
    patch: JSON.stringify([
      { op: 'add', path: '/spec/template/spec/nodeSelector', value: nodeSelector },
      { op: 'add', path: '/spec/template/spec/tolerations', value: tolerations },
    ]),
  };
}

function helmSource(chart: { chart: string; repoURL: string; version: string }, releaseName: string, values: object): ApplicationSpecSource {
  // An oci:// repository is an OCI artifact source: the chart is part of the URL and the path is the artifact root.
  const oci = chart.repoURL.startsWith('oci://');
  return {
    repoUrl: oci ? `${chart.repoURL}/${chart.chart}` : chart.repoURL,
    ...(oci ? { path: '.' } : { chart: chart.chart }),
    targetRevision: chart.version,
    helm: { releaseName, valuesObject: values },
  };
}

/**
 * The add-ons of this cluster that Argo CD installs, in a fixed order, each read from its mirror where the description
 * names one (mirrors.charts for a Helm source, mirrors.git for a kustomize overlay). local-path-provisioner is not
 * here: it publishes no Helm repository, so the storage component renders it when it is managed.
 */
export function managedInstalls(model: ClusterModel): ManagedInstall[] {
  const { charts, git, images } = model.description.mirrors;
  return upstreamInstalls(model).map((i) => ({
    ...i,
    source: { ...imagesFromMirrors(i.source, images), repoUrl: mirrorUrl(i.source.repoUrl, i.source.helm ? charts : git) },
  }));
}

/**
 * A source whose images are pulled from their registries' mirrors (mirrors.images), read from the pinned release in
 * the package's copy (never from a list kept here): a Helm source's values set every image field of the chart's
 * default values (its subcharts' included) that a mirrored registry serves, over the toolkit's values where both set
 * one; an overlay's `kustomize.images` renames each image its build pulls from a mirrored registry. Unchanged without
 * mirrors.images, and then nothing of the package's copy is read.
 */
function imagesFromMirrors(source: ApplicationSpecSource, map: MirrorMap): ApplicationSpecSource {
  if (Object.keys(map).length === 0) return source;
  const release = releaseOfSource({ repoURL: source.repoUrl, chart: source.chart, path: source.path, targetRevision: source.targetRevision });
  if (release === undefined) throw new Error(`${source.repoUrl} ${source.path ?? source.chart ?? ''} ${source.targetRevision}: no pinned release to read its images from`);
  if (release.type === 'helm') {
    const values = (source.helm?.valuesObject ?? {}) as Record<string, unknown>;
    const defaults = chartDefaultValues(DEFAULT_UPSTREAM, release.chart, release.version);
    const overrides = mirroredValueOverrides(mergeValues(defaults, values) as Record<string, unknown>, map);
    return { ...source, helm: { ...source.helm, valuesObject: mergeValues(values, overrides) } };
  }
  const renamed = overlayImages(DEFAULT_UPSTREAM, release).filter((name) => mirrorImage(name, map) !== name)
    .map((name) => `${name}=${mirrorImage(name, map)}`);
  return renamed.length === 0 ? source : { ...source, kustomize: { ...source.kustomize, images: renamed } };
}

/** The managed installs, each from its upstream repository. */
function upstreamInstalls(model: ClusterModel): ManagedInstall[] {
  const d = model.description;
  const nfdBy = d.nodeFeatureDiscovery.deployedBy;
  const installs: ManagedInstall[] = [];

  if (d.installs.gpuOperator === 'managed') {
    installs.push({
      key: 'gpuOperator',
      name: 'gpu-operator-install',
      namespace: NAMESPACES.gpuOperator,
      extraNamespaces: [],
      source: helmSource(VERSIONS.gpuOperator, 'gpu-operator', gpuOperatorHelmValues(model)),
      // Exactly the chart's CRDs: nvidia.com is not the GPU Operator's alone (Dynamo's kinds are nvidia.com too).
      provides: [...chartCrds(GPU_OPERATOR_CHART), ...(nfdBy === 'gpu-operator' ? chartCrds(GPU_OPERATOR_CHART, NFD_SUBCHART) : [])],
      clusterKinds: OPERATOR_KINDS,
      largestObjectBytes: LARGEST_APPLIED_BYTES.gpuOperator,
      createNamespace: true,
      namespaceLabels: PRIVILEGED_NAMESPACE,
      needsDefaultStorageClass: false,
      ignoreDifferences: [],
    });
  }
  if (d.installs.networkOperator === 'managed') {
    installs.push({
      key: 'networkOperator',
      name: 'network-operator-install',
      namespace: NAMESPACES.networkOperator,
      extraNamespaces: [],
      source: helmSource(VERSIONS.networkOperator, 'network-operator', networkOperatorHelmValues(model)),
      provides: [...chartCrds(NETWORK_OPERATOR_CHART), ...(nfdBy === 'network-operator' ? chartCrds(NETWORK_OPERATOR_CHART, NFD_SUBCHART) : [])],
      // nfd.deployNodeFeatureRules (on): the chart's NodeFeatureRule labels the nodes with Mellanox NICs. Its CRD comes
      // with the chart that deploys NFD: when that is the GPU Operator's, this install syncs a wave after it (folderWaves).
      clusterKinds: [...OPERATOR_KINDS, NODE_FEATURE_RULE],
      largestObjectBytes: LARGEST_APPLIED_BYTES.networkOperator,
      createNamespace: true,
      namespaceLabels: PRIVILEGED_NAMESPACE,
      needsDefaultStorageClass: false,
      ignoreDifferences: [],
    });
  }
  if (d.installs.kueue === 'managed') {
    installs.push({
      key: 'kueue',
      name: 'kueue-install',
      namespace: NAMESPACES.kueue,
      // enableVisibilityAuthReaderRoleBinding (on): the visibility API server's RoleBinding to the
      // extension-apiserver-authentication-reader Role, which exists only in kube-system.
      extraNamespaces: ['kube-system'],
      source: helmSource(VERSIONS.kueue, RELEASES.kueue, kueueHelmValues(model)),
      provides: [{ group: 'kueue.x-k8s.io', kind: '*' }],
      clusterKinds: [...OPERATOR_KINDS, MUTATING_WEBHOOK, VALIDATING_WEBHOOK, API_SERVICE],
      largestObjectBytes: LARGEST_APPLIED_BYTES.kueue,
      createNamespace: true,
      namespaceLabels: {},
      needsDefaultStorageClass: false,
      ignoreDifferences: [
        injectedCaBundle('Kueue\'s internal certificate manager', 'MutatingWebhookConfiguration'),
        injectedCaBundle('Kueue\'s internal certificate manager', 'ValidatingWebhookConfiguration'),
        {
          why: 'Kueue\'s internal certificate manager writes the CA of its conversion webhook into the CRDs it converts (LocalQueue, ClusterQueue, Cohort, Workload, ...)',
          group: 'apiextensions.k8s.io',
          kind: 'CustomResourceDefinition',
          jqPathExpressions: ['.spec.conversion.webhook.clientConfig.caBundle'],
        },
        {
          why: 'Kueue\'s internal certificate manager stores the generated certificate in the Secret the chart renders empty',
          group: '',
          kind: 'Secret',
          namespace: NAMESPACES.kueue,
          name: 'kueue-webhook-server-cert',
          jsonPointers: ['/data'],
        },
      ],
    });
  }
  if (d.installs.mpiOperator === 'managed') {
    const v = VERSIONS.mpiOperator;
    installs.push({
      key: 'mpiOperator',
      name: 'mpi-operator-install',
      namespace: NAMESPACES.mpiOperator,
      extraNamespaces: [],
      source: { repoUrl: v.repoURL, path: v.path, targetRevision: v.version, kustomize: { patches: [servicePlacementPatch(model, 'mpi-operator')] } },
      provides: [{ group: 'kubeflow.org', kind: 'MPIJob' }],
      clusterKinds: [...OPERATOR_KINDS, NAMESPACE],
      largestObjectBytes: LARGEST_APPLIED_BYTES.mpiOperator,
      createNamespace: false,
      namespaceLabels: {},
      needsDefaultStorageClass: false,
      ignoreDifferences: [],
    });
  }
  if (d.installs.trainingOperator === 'managed') {
    const v = VERSIONS.trainingOperator;
    installs.push({
      key: 'trainingOperator',
      name: 'training-operator-install',
      namespace: NAMESPACES.trainingOperator,
      extraNamespaces: [],
      source: {
        repoUrl: v.repoURL,
        path: v.path,
        targetRevision: v.version,
        kustomize: {
          patches: [{
            // The v1 overlay also ships an MPIJob v1 CRD under the same name as the MPI Operator's v2beta1 one:
            // two Applications would fight over mpijobs.kubeflow.org and the v2beta1 MPIJobs would stop being served.
            target: { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', name: 'mpijobs.kubeflow.org' },
            patch: '$patch: delete\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: mpijobs.kubeflow.org\n',
          }, {
            // Without its CRD the operator's own v1 MPIJob controller would fail its watch: run only the other
            // job kinds (--enable-scheme, as upstream documents for running beside the MPI Operator).
            target: { group: 'apps', kind: 'Deployment', name: 'training-operator' },
            patch: JSON.stringify([{
              op: 'add',
              path: '/spec/template/spec/containers/0/args',
              value: TRAINING_OPERATOR_KINDS.map((s) => `--enable-scheme=${s.toLowerCase()}`),
            }]),
          }, servicePlacementPatch(model, 'training-operator')],
        },
      },
      provides: TRAINING_OPERATOR_KINDS.map((kind) => ({ group: 'kubeflow.org', kind })),
      clusterKinds: [...OPERATOR_KINDS, NAMESPACE, VALIDATING_WEBHOOK],
      largestObjectBytes: LARGEST_APPLIED_BYTES.trainingOperator,
      createNamespace: false,
      namespaceLabels: {},
      needsDefaultStorageClass: false,
      ignoreDifferences: [injectedCaBundle('The Training Operator\'s certificate rotator', 'ValidatingWebhookConfiguration')],
    });
  }
  if (d.installs.dynamo === 'managed') {
    installs.push({
      key: 'dynamo',
      name: 'dynamo-platform-install',
      namespace: NAMESPACES.dynamo,
      extraNamespaces: [],
      source: helmSource(VERSIONS.dynamoPlatform, 'dynamo-platform', dynamoPlatformHelmValues(model)),
      // The chart carries no CRDs: the operator applies those its image ships (the release's record of them).
      provides: chartCrds(DYNAMO_PLATFORM_CHART, 'charts/dynamo-operator'),
      clusterKinds: [...OPERATOR_KINDS, MUTATING_WEBHOOK, VALIDATING_WEBHOOK],
      largestObjectBytes: LARGEST_APPLIED_BYTES.dynamo,
      createNamespace: true,
      namespaceLabels: {},
      needsDefaultStorageClass: false,
      // Not the CRDs: the operator applies them (with their conversion webhook's CA), so Argo CD does not track them.
      ignoreDifferences: [
        injectedCaBundle('The Dynamo operator', 'MutatingWebhookConfiguration'),
        injectedCaBundle('The Dynamo operator', 'ValidatingWebhookConfiguration'),
      ],
    });
  }
  if (d.installs.monitoring === 'managed') {
    const m = d.monitoring;
    installs.push({
      key: 'monitoring',
      name: 'monitoring-stack-install',
      namespace: m.namespace,
      // The stack's Services for the control-plane components (scheduler, controller-manager, etcd) live in kube-system.
      extraNamespaces: ['kube-system'],
      source: helmSource(VERSIONS.victoriaMetricsK8sStack, RELEASES.monitoring, victoriaMetricsHelmValues(model)),
      provides: [{ group: 'operator.victoriametrics.com', kind: '*' }],
      clusterKinds: OPERATOR_KINDS,
      largestObjectBytes: LARGEST_APPLIED_BYTES.monitoring,
      createNamespace: true,
      namespaceLabels: {},
      // VMSingle keeps its data on a volume of the default StorageClass (vmsingle.spec.storage names none).
      needsDefaultStorageClass: true,
      ignoreDifferences: [],
    });
  }
  return installs;
}
