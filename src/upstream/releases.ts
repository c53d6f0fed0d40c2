import { VERSIONS } from '../versions';

/** A Helm chart of a pinned release, vendored under ../shared/upstream-installs/<folder>/<chartPath>. */
export interface VendoredChart {
  readonly type: 'helm';
  /** Chart name as Argo CD sources name it. */
  readonly chart: string;
  /** Chart version Argo CD asks for (targetRevision). */
  readonly version: string;
  readonly folder: string;
  readonly chartPath: string;
  /**
   * Version and appVersion of the published chart when the vendored Chart.yaml (read at the git tag)
   * carries placeholders: the release workflow sets both to the tag (SOURCES.md).
   */
  readonly published?: { readonly version: string; readonly appVersion: string };
  /** Chart paths ('' = the chart) whose crds/ folder exists upstream but was not vendored (SOURCES.md). */
  readonly crdsNotVendored: readonly string[];
  /** False when only Chart.yaml/values.yaml were vendored: no footprint can be read. */
  readonly templatesVendored: boolean;
}

/** A kustomize overlay of a pinned release read from git at a tag. */
export interface VendoredOverlay {
  readonly type: 'kustomize';
  readonly repoURL: string;
  readonly path: string;
  readonly version: string;
  readonly folder: string;
}

export type VendoredRelease = VendoredChart | VendoredOverlay;

const gpu = VERSIONS.gpuOperator;
const net = VERSIONS.networkOperator;
const vm = VERSIONS.victoriaMetricsK8sStack;

/** The GPU Operator chart at the pinned tag. */
export const GPU_OPERATOR_CHART: VendoredChart = {
  type: 'helm',
  chart: gpu.chart,
  version: gpu.version,
  folder: `gpu-operator-${gpu.version}`,
  chartPath: 'deployments/gpu-operator',
  published: { version: gpu.version, appVersion: gpu.version },
  crdsNotVendored: ['', 'charts/node-feature-discovery'],
  templatesVendored: true,
};

/** The Network Operator chart (its Chart.yaml at the tag already says 26.4.1 / v26.4.1). */
export const NETWORK_OPERATOR_CHART: VendoredChart = {
  type: 'helm',
  chart: net.chart,
  version: net.version,
  folder: `network-operator-v${net.version}`,
  chartPath: 'deployment/network-operator',
  crdsNotVendored: ['', 'charts/node-feature-discovery', 'charts/sriov-network-operator', 'charts/maintenance-operator-chart'],
  templatesVendored: true,
};

/** Every vendored release a managed install can point at. */
export const VENDORED_RELEASES: readonly VendoredRelease[] = [
  GPU_OPERATOR_CHART,
  NETWORK_OPERATOR_CHART,
  {
    type: 'helm',
    chart: VERSIONS.kueue.chart,
    version: VERSIONS.kueue.version,
    folder: `kueue-v${VERSIONS.kueue.version}`,
    chartPath: 'charts/kueue',
    crdsNotVendored: [],
    templatesVendored: true,
  },
  {
    type: 'helm',
    chart: vm.chart,
    version: vm.version,
    folder: `${vm.chart}-${vm.version}`,
    chartPath: `charts/${vm.chart}`,
    crdsNotVendored: [],
    templatesVendored: false,
  },
  {
    // dynamo-platform at main (no release tag): only Chart.yaml and values.yaml are vendored.
    type: 'helm',
    chart: VERSIONS.dynamoPlatform.chart,
    version: VERSIONS.dynamoPlatform.version,
    folder: `${VERSIONS.dynamoPlatform.chart}-${VERSIONS.dynamoPlatform.version}-main`,
    chartPath: 'deploy/helm/charts/platform',
    crdsNotVendored: [],
    templatesVendored: false,
  },
  { type: 'kustomize', ...VERSIONS.mpiOperator, folder: `mpi-operator-${VERSIONS.mpiOperator.version}` },
  { type: 'kustomize', ...VERSIONS.trainingOperator, folder: `training-operator-${VERSIONS.trainingOperator.version}` },
];

/** An Argo CD Application source, as rendered. */
export interface ApplicationSource {
  readonly repoURL?: string;
  readonly chart?: string;
  readonly path?: string;
  readonly targetRevision?: string;
  readonly helm?: { readonly releaseName?: string; readonly valuesObject?: Record<string, unknown> };
  readonly kustomize?: { readonly namespace?: string; readonly patches?: readonly Record<string, unknown>[] };
}

/** The vendored release an Application source installs, if any (same chart or repo/path, same version). */
export function releaseOfSource(s: ApplicationSource): VendoredRelease | undefined {
  return VENDORED_RELEASES.find((r) => {
    if (r.type === 'kustomize') return s.repoURL === r.repoURL && s.path?.replace(/^\.\//, '') === r.path && s.targetRevision === r.version;
    if (s.targetRevision !== r.version) return false;
    if (s.chart !== undefined) return s.chart === r.chart;
    // An OCI source names the chart as the last segment of the URL.
    return s.repoURL?.startsWith('oci://') === true && s.repoURL.split('/').pop() === r.chart;
  });
}
