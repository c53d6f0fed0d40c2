import { GPU_OPERATOR_CHART, KUEUE_CHART, NETWORK_OPERATOR_CHART, VendoredChart } from './releases';
import { VERSIONS } from '../versions';

/** The components whose previous releases are vendored (src/versions.ts `previous`), by their key in VERSIONS. */
export type UpgradableKey = 'gpuOperator' | 'networkOperator' | 'kueue';

/** A previous release of a component as src/versions.ts declares it. */
export interface DeclaredPrevious {
  readonly version: string;
  /** Its folder in the upstream installs (SOURCES.md names tag and commit). */
  readonly folder: string;
  /** The paths of that folder upgrade-plan reads: what the package carries of it. */
  readonly reads: readonly string[];
}

/** A vendored previous release: the chart as registered (how helm renders it as published) and what is read of it. */
export interface PreviousRelease extends DeclaredPrevious {
  readonly key: UpgradableKey;
  readonly chart: VendoredChart;
  /** The pinned release it precedes. */
  readonly pinned: VendoredChart;
}

const PINNED: Readonly<Record<UpgradableKey, VendoredChart>> = {
  gpuOperator: GPU_OPERATOR_CHART,
  networkOperator: NETWORK_OPERATOR_CHART,
  kueue: KUEUE_CHART,
};

/**
 * The published stamp of a previous release, from the pinned release's: the same Chart.yaml fields and values
 * the release workflow sets, with the previous tag in place of the pinned one (the GPU Operator's appVersion is
 * its tag; Kueue's images are tagged with it).
 */
function stampOf(pinned: VendoredChart, version: string): VendoredChart['published'] {
  const stamp = pinned.published;
  if (!stamp) return undefined;
  const retag = (v: unknown): unknown => {
    if (typeof v === 'string') return v.split(stamp.appVersion).join(stamp.appVersion.startsWith('v') && !version.startsWith('v') ? `v${version}` : version);
    if (Array.isArray(v)) return v.map(retag);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, retag(x)]));
    return v;
  };
  return {
    version,
    appVersion: retag(stamp.appVersion) as string,
    ...(stamp.values ? { values: retag(stamp.values) as Record<string, unknown> } : {}),
  };
}

function previousOf(key: UpgradableKey): PreviousRelease[] {
  const pinned = PINNED[key];
  const declared = (VERSIONS[key] as { previous?: readonly DeclaredPrevious[] }).previous ?? [];
  return declared.map((p) => ({
    ...p,
    key,
    pinned,
    chart: {
      ...pinned,
      version: p.version,
      folder: p.folder,
      published: stampOf(pinned, p.version),
      // The previous releases' folders hold their chart's own crds/ (SOURCES.md): only the subcharts' are missing.
      unrenderedCrds: pinned.unrenderedCrds.filter((u) => u.chartPath !== ''),
    },
  }));
}

/** Every vendored previous release, by component. */
export const PREVIOUS_RELEASES: readonly PreviousRelease[] = (['gpuOperator', 'networkOperator', 'kueue'] as const).flatMap(previousOf);

/** The charts of the previous releases: rendered as published when an Application (or upgrade-plan) asks for them. */
export const PREVIOUS_CHARTS: readonly VendoredChart[] = PREVIOUS_RELEASES.map((p) => p.chart);

/** The pinned chart of a component. */
export function pinnedChart(key: UpgradableKey): VendoredChart {
  return PINNED[key];
}
