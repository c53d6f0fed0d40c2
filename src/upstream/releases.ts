import { VERSIONS } from '../versions';

/** A CRD an install brings that its rendered manifests do not show. */
export interface CrdRef {
  readonly group: string;
  readonly kind: string;
  readonly scope: 'Namespaced' | 'Cluster';
  /**
   * Whether the CRD's status reports readiness (conditions, a state, ...), read from the upstream CRD, for the
   * wave-health rule (which reads it from the schema where one is vendored); undefined: not recorded.
   */
  readonly readiness?: boolean;
}

/** CRDs an install creates outside what `helm template`/`kustomize build` of the vendored copy prints. */
export interface UnrenderedCrds {
  /** Chart path ('' = the chart itself) whose CRDs these are; they count when that chart is part of the render. */
  readonly chartPath: string;
  /**
   * Why the render lacks them: `crds/` of the upstream chart, not vendored (a folder filled with
   * `helm pull --untar` has it: then the rendered CRDs count and this list is not used), or applied at run
   * time by the operator.
   */
  readonly from: 'crds-not-vendored' | 'operator';
  readonly crds: readonly CrdRef[];
}

/** A Helm chart of a pinned release, vendored under `<upstream>/<folder>/<chartPath>`. */
export interface VendoredChart {
  readonly type: 'helm';
  /** Chart name as Argo CD sources name it. */
  readonly chart: string;
  /** Chart version Argo CD asks for (targetRevision). */
  readonly version: string;
  readonly folder: string;
  readonly chartPath: string;
  /**
   * What the release workflow changes in the git tree before `helm package`, when the vendored copy (read at
   * the git tag) differs from the published chart: Chart.yaml's version and appVersion, and values.yaml
   * entries (dotted path -> value). The render uses a temporary copy stamped the same way.
   */
  readonly published?: { readonly version: string; readonly appVersion: string; readonly values?: Readonly<Record<string, unknown>> };
  /**
   * Dependencies listed in Chart.yaml that are not vendored, all disabled by default (SOURCES.md): the
   * render uses a temporary copy without them, and values that enable one are refused.
   */
  readonly unvendoredDependencies: readonly string[];
  readonly unrenderedCrds: readonly UnrenderedCrds[];
  /**
   * Images the release publishes that its chart does not render (the runtime images of workloads users create),
   * by repository: their tags. The evidence of released-versions for them.
   */
  readonly publishedImages?: Readonly<Record<string, readonly string[]>>;
}

/** A kustomize overlay of a pinned release read from git at a tag, vendored under `<upstream>/<folder>/<path>`. */
export interface VendoredOverlay {
  readonly type: 'kustomize';
  readonly repoURL: string;
  readonly path: string;
  readonly version: string;
  readonly folder: string;
}

export type VendoredRelease = VendoredChart | VendoredOverlay;

/**
 * The folder of a component's vendored release in the upstream installs (`../shared/upstream-installs`, SOURCES.md
 * names each), by the component's key in VERSIONS and a version as VERSIONS writes it: the pinned release's folder,
 * and a previous release's (a `previous` entry of the component, see packagedReleaseFolders).
 */
export const RELEASE_FOLDERS: Readonly<Record<string, (version: string) => string>> = {
  gpuOperator: (v) => `gpu-operator-${v}`,
  networkOperator: (v) => `network-operator-v${v}`,
  kueue: (v) => `kueue-v${v}`,
  victoriaMetricsK8sStack: (v) => `victoria-metrics-k8s-stack-${v}`,
  argocd: (v) => `argo-cd-${v}`,
  mpiOperator: (v) => `mpi-operator-${v}`,
  trainingOperator: (v) => `training-operator-${v}`,
};

const gpu = VERSIONS.gpuOperator;
const net = VERSIONS.networkOperator;
const vm = VERSIONS.victoriaMetricsK8sStack;
const dynamo = VERSIONS.dynamoPlatform;

/**
 * Node Feature Discovery's CRDs (charts/node-feature-discovery/crds/nfd-api-crds.yaml of both NVIDIA charts). None
 * reports readiness: NodeFeature and NodeFeatureRule have no status, NodeFeatureGroup's lists its nodes
 * (nfd-api-crds.yaml of Mellanox/network-operator tag v26.4.1, commit 85afd6d9c6978eb871a3292b9897f49746cc43cd).
 */
export const NFD_CRDS: UnrenderedCrds['crds'] = [
  { group: 'nfd.k8s-sigs.io', kind: 'NodeFeature', scope: 'Namespaced', readiness: false },
  { group: 'nfd.k8s-sigs.io', kind: 'NodeFeatureGroup', scope: 'Namespaced', readiness: false },
  { group: 'nfd.k8s-sigs.io', kind: 'NodeFeatureRule', scope: 'Cluster', readiness: false },
];

/** The GPU Operator chart at the pinned tag (crds/ as listed in the tag's deployments/gpu-operator/crds/). */
export const GPU_OPERATOR_CHART: VendoredChart = {
  type: 'helm',
  chart: gpu.chart,
  version: gpu.version,
  folder: RELEASE_FOLDERS.gpuOperator(gpu.version),
  chartPath: 'deployments/gpu-operator',
  published: { version: gpu.version, appVersion: gpu.version },
  unvendoredDependencies: [],
  unrenderedCrds: [
    {
      chartPath: '',
      from: 'crds-not-vendored',
      crds: [
        { group: 'nvidia.com', kind: 'ClusterPolicy', scope: 'Cluster' },
        { group: 'nvidia.com', kind: 'GPUCluster', scope: 'Cluster' },
        { group: 'nvidia.com', kind: 'NVIDIADriver', scope: 'Cluster' },
        { group: 'resource.nvidia.com', kind: 'ComputeDomain', scope: 'Namespaced' },
        { group: 'resource.nvidia.com', kind: 'ComputeDomainClique', scope: 'Namespaced' },
      ],
    },
    { chartPath: 'charts/node-feature-discovery', from: 'crds-not-vendored', crds: NFD_CRDS },
  ],
};

/** The Network Operator chart (its Chart.yaml at the tag already says 26.4.1 / v26.4.1). */
export const NETWORK_OPERATOR_CHART: VendoredChart = {
  type: 'helm',
  chart: net.chart,
  version: net.version,
  folder: RELEASE_FOLDERS.networkOperator(net.version),
  chartPath: 'deployment/network-operator',
  unvendoredDependencies: [],
  unrenderedCrds: [
    {
      chartPath: '',
      from: 'crds-not-vendored',
      crds: [
        { group: 'k8s.cni.cncf.io', kind: 'NetworkAttachmentDefinition', scope: 'Namespaced' },
        ...['HostDeviceNetwork', 'IPoIBNetwork', 'MacvlanNetwork', 'NicClusterPolicy', 'NicNodePolicy'].map((kind) => ({ group: 'mellanox.com', kind, scope: 'Cluster' as const })),
      ],
    },
    { chartPath: 'charts/node-feature-discovery', from: 'crds-not-vendored', crds: NFD_CRDS },
    {
      chartPath: 'charts/maintenance-operator-chart',
      from: 'crds-not-vendored',
      crds: ['MaintenanceOperatorConfig', 'NodeMaintenance'].map((kind) => ({ group: 'maintenance.nvidia.com', kind, scope: 'Namespaced' as const })),
    },
    {
      chartPath: 'charts/sriov-network-operator',
      from: 'crds-not-vendored',
      crds: [
        ...['DeviceAttributes', 'SriovResourcePolicy'].map((kind) => ({ group: 'sriovnetwork.k8snetworkplumbingwg.io', kind, scope: 'Namespaced' as const })),
        ...['OVSNetwork', 'SriovIBNetwork', 'SriovNetworkNodePolicy', 'SriovNetworkNodeState', 'SriovNetworkPoolConfig', 'SriovNetwork', 'SriovOperatorConfig']
          .map((kind) => ({ group: 'sriovnetwork.openshift.io', kind, scope: 'Namespaced' as const })),
      ],
    },
  ],
};

/**
 * Kueue's chart at the tag names the staging images (`us-central1-docker.pkg.dev/k8s-staging-images/kueue/...:release-0.19`,
 * pull policy Always); hack/helm-chart-package.sh stamps the published chart of a release tag with the promoted
 * images (`registry.k8s.io/kueue/<image>:<tag>`, IfNotPresent) and the tag as version and appVersion.
 */
const kueueTag = `v${VERSIONS.kueue.version}`;
const kueueImage = (name: string) => ({ repository: `registry.k8s.io/kueue/${name}`, tag: kueueTag, pullPolicy: 'IfNotPresent' });
export const KUEUE_CHART: VendoredChart = {
  type: 'helm',
  chart: VERSIONS.kueue.chart,
  version: VERSIONS.kueue.version,
  folder: RELEASE_FOLDERS.kueue(VERSIONS.kueue.version),
  chartPath: 'charts/kueue',
  published: {
    version: VERSIONS.kueue.version,
    appVersion: kueueTag,
    values: {
      'controllerManager.manager.image': kueueImage('kueue'),
      'kueueViz.backend.image': kueueImage('kueueviz-backend'),
      'kueueViz.frontend.image': kueueImage('kueueviz-frontend'),
    },
  },
  unvendoredDependencies: [],
  unrenderedCrds: [],
};

/** dynamo-platform 1.4.0 (the release's branch point; SOURCES.md). */
export const DYNAMO_PLATFORM_CHART: VendoredChart = {
  type: 'helm',
  chart: dynamo.chart,
  version: dynamo.version,
  folder: `${dynamo.chart}-${dynamo.version}-branchpoint`,
  chartPath: 'deploy/helm/charts/platform',
  unvendoredDependencies: ['kai-scheduler', 'grove-charts'],
  unrenderedCrds: [{
    // upgradeCRD (default true): the operator's crd-apply init container applies the CRDs its image ships
    chartPath: 'charts/dynamo-operator',
    from: 'operator',
    crds: ['DynamoGraphDeployment', 'DynamoComponentDeployment', 'DynamoGraphDeploymentRequest', 'DynamoGraphDeploymentScalingAdapter', 'DynamoModel']
      .map((kind) => ({ group: 'nvidia.com', kind, scope: 'Namespaced' as const })),
  }],
  publishedImages: VERSIONS.dynamo.publishedImages,
};

/**
 * Every vendored release an Application may point at: the evidence that a pinned chart version or
 * overlay revision was released (SOURCES.md names the tag of each folder).
 */
export const VENDORED_RELEASES: readonly VendoredRelease[] = [
  GPU_OPERATOR_CHART,
  NETWORK_OPERATOR_CHART,
  KUEUE_CHART,
  {
    type: 'helm',
    chart: vm.chart,
    version: vm.version,
    folder: RELEASE_FOLDERS.victoriaMetricsK8sStack(vm.version),
    chartPath: `charts/${vm.chart}`,
    unvendoredDependencies: [],
    unrenderedCrds: [],
  },
  DYNAMO_PLATFORM_CHART,
  {
    type: 'helm',
    chart: 'kubernetes-dashboard',
    version: '7.13.0',
    folder: 'kubernetes-dashboard-7.13.0',
    chartPath: 'charts/kubernetes-dashboard',
    unvendoredDependencies: ['cert-manager'],
    unrenderedCrds: [],
  },
  { type: 'kustomize', ...VERSIONS.argocd, folder: RELEASE_FOLDERS.argocd(VERSIONS.argocd.version) },
  { type: 'kustomize', ...VERSIONS.mpiOperator, folder: RELEASE_FOLDERS.mpiOperator(VERSIONS.mpiOperator.version) },
  { type: 'kustomize', ...VERSIONS.trainingOperator, folder: RELEASE_FOLDERS.trainingOperator(VERSIONS.trainingOperator.version) },
];

/**
 * Vendored folders that are not releases (SOURCES.md: read from a branch with no release tag). A chart
 * found there is no evidence of a release.
 */
export const UNRELEASED_FOLDERS: readonly string[] = ['dynamo-platform-1.5.0-main'];

/**
 * A previous release of a component, as src/versions.ts may declare it (`previous: [...]` beside the pinned `version`,
 * for the commands that compare two releases): its version as `version` is written (the folder follows from
 * RELEASE_FOLDERS), or the version, its vendored folder and the paths of it a command reads (`reads`, relative to the
 * folder; absent: the whole folder).
 */
export type PreviousRelease = string | { readonly version: string; readonly folder?: string; readonly reads?: readonly string[] };

/** A release folder the package ships, and the paths of it that ship (absent: all of it). */
export interface PackagedRelease {
  readonly folder: string;
  readonly reads?: readonly string[];
}

/**
 * The release folders the package ships (projenrc/package-assets.cjs copies exactly these): the pinned releases
 * (VENDORED_RELEASES) whole, and of every previous release a component of `versions` declares, what it `reads`;
 * sorted by folder. Nothing else of the upstream installs is read at pack time, so a folder kept there for other
 * reasons never reaches the tarball.
 */
export function packagedReleases(versions: Readonly<Record<string, object>> = VERSIONS): PackagedRelease[] {
  const releases = new Map<string, PackagedRelease>(VENDORED_RELEASES.map((r) => [r.folder, { folder: r.folder }]));
  for (const [component, entry] of Object.entries(versions)) {
    const previous = (entry as { previous?: readonly PreviousRelease[] }).previous ?? [];
    for (const p of previous) {
      const version = typeof p === 'string' ? p : p.version;
      const folder = typeof p === 'object' && p.folder !== undefined ? p.folder : RELEASE_FOLDERS[component]?.(version);
      if (folder === undefined) {
        throw new Error(`src/versions.ts ${component}.previous ${version}: no folder for it (name it, { version, folder }, or add ${component} to RELEASE_FOLDERS)`);
      }
      const reads = typeof p === 'object' ? p.reads : undefined;
      // a folder that is also pinned ships whole
      if (!releases.has(folder)) releases.set(folder, reads === undefined ? { folder } : { folder, reads: [...reads].sort() });
    }
  }
  return [...releases.values()].sort((a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0));
}

/** The folders of packagedReleases(). */
export function packagedReleaseFolders(versions: Readonly<Record<string, object>> = VERSIONS): string[] {
  return packagedReleases(versions).map((r) => r.folder);
}

/** An Argo CD Application source, as rendered. */
export interface ApplicationSource {
  readonly repoURL?: string;
  readonly chart?: string;
  readonly path?: string;
  readonly targetRevision?: string;
  readonly helm?: {
    readonly releaseName?: string;
    readonly valuesObject?: Record<string, unknown>;
    readonly values?: string;
    readonly valueFiles?: readonly string[];
    readonly parameters?: readonly { readonly name?: string; readonly value?: string; readonly forceString?: boolean }[];
    readonly skipCrds?: boolean;
    readonly skipTests?: boolean;
    readonly namespace?: string;
    readonly kubeVersion?: string;
    readonly apiVersions?: readonly string[];
  };
  readonly kustomize?: {
    readonly namespace?: string;
    readonly namePrefix?: string;
    readonly nameSuffix?: string;
    readonly images?: readonly string[];
    readonly patches?: readonly Record<string, unknown>[];
    readonly commonLabels?: Record<string, string>;
    readonly commonAnnotations?: Record<string, string>;
  };
}

/** The chart name of a Helm source: `chart`, or the last segment of an `oci://` repository URL. */
export function chartOfSource(s: ApplicationSource): string | undefined {
  if (s.chart !== undefined) return typeof s.chart === 'string' ? s.chart : JSON.stringify(s.chart);
  return typeof s.repoURL === 'string' && s.repoURL.startsWith('oci://') ? s.repoURL.replace(/\/+$/, '').split('/').pop() : undefined;
}

/** Whether a source is a Helm chart (a repository chart or an OCI artifact). */
export function isHelmSource(s: ApplicationSource): boolean {
  return chartOfSource(s) !== undefined;
}

/** The registered release a source installs, if any (same chart or repo/path, same version). */
export function releaseOfSource(s: ApplicationSource): VendoredRelease | undefined {
  const chart = chartOfSource(s);
  return VENDORED_RELEASES.find((r) => {
    if (r.type === 'kustomize') return chart === undefined && s.repoURL === r.repoURL && typeof s.path === 'string' && s.path.replace(/^\.\//, '').replace(/\/+$/, '') === r.path && s.targetRevision === r.version;
    return chart === r.chart && s.targetRevision === r.version;
  });
}
