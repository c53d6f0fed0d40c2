import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { sha256 } from '../cache/digests';
import { VendoredChart } from '../upstream/releases';

/**
 * Where the twin's chart mirror (chart-mirror.ts packageChart) gets the CRDs a published chart carries in its `crds/`
 * folders and ../shared/crds has no copy of: a file of a Go module, fetched when the twin is built (a companion file of
 * its binary, verified by the module's go.sum hash and the file's SHA-256: binary.ts), so that a rehearsal with prebuilt
 * binaries needs no go. A CRD that has no copy, no source here and no declared absence (UNAVAILABLE_CRDS) makes
 * packageChart fail.
 *
 * Imports no test framework.
 */

/** A file of a Go module version that holds CRDs, pinned by content. */
export interface CrdSource {
  readonly module: string;
  readonly version: string;
  /** The module zip's hash as go.sum writes it (`h1:...`). */
  readonly sum: string;
  /** The file's path in the module. */
  readonly file: string;
  /** The file's SHA-256 (hex). */
  readonly sha256: string;
  /** Why this file is the one the chart carries. */
  readonly evidence: string;
}

const NFD_MODULE = 'sigs.k8s.io/node-feature-discovery';
const NFD_FILE = 'deployment/helm/node-feature-discovery/crds/nfd-api-crds.yaml';
/** nfd-api-crds.yaml: the same bytes in NFD v0.18.3 and v0.19.0 and in the subchart of each pinned NVIDIA chart (see below). */
const NFD_SHA256 = 'f8a40048b99110feaee4813dbb92ebfdaa3c7d722e1836a804207e22f72a9072';
const NFD_V0_19_0: CrdSource = {
  module: NFD_MODULE,
  version: 'v0.19.0',
  sum: 'h1:9CYm16vjSIbNO5Z1Y67rcrfy51YWmy3+6wjiWzJbrC4=',
  file: NFD_FILE,
  sha256: NFD_SHA256,
  evidence: 'the subchart\'s appVersion v0.19.0',
};
const NFD_V0_18_3: CrdSource = {
  module: NFD_MODULE,
  version: 'v0.18.3',
  sum: 'h1:q5/qpyxrasI/F6838lflFNGAUszpMNRuFwornPLYdxQ=',
  file: NFD_FILE,
  sha256: NFD_SHA256,
  evidence: 'the subchart\'s appVersion v0.18.3 (tag v0.18.3, commit f39ef6267b20ddeb79e717940b71bb98979c49a0)',
};
/** Mellanox's copy of NFD's chart says appVersion `master`; its crds/ at both tags is byte-identical to NFD v0.19.0's. */
const NFD_FOR_NETWORK_OPERATOR: CrdSource = {
  ...NFD_V0_19_0,
  evidence: 'charts/node-feature-discovery/crds/nfd-api-crds.yaml of Mellanox/network-operator tags v26.4.1 (85afd6d9c6978eb871a3292b9897f49746cc43cd) '
    + 'and v26.1.2 (44ae0707a99243748b86607498320ce8d7a27750) has this SHA-256 (the subchart says appVersion master)',
};

const key = (chart: string, version: string, chartPath: string) => `${chart} ${version} ${chartPath || '.'}`;

/**
 * The sources, by chart, version and the chart path whose `crds/` they fill. Checked at the tags: the GPU Operator's
 * deployments/gpu-operator/charts/node-feature-discovery/crds/nfd-api-crds.yaml at v26.7.0
 * (10ee5b3638b89e11e949412aafa5ba99279c3721) and v26.3.3 (b0a49c0e7b2e061dcd83f2bb2fe4fe960c5d0338) has NFD_SHA256.
 */
export const CRD_SOURCES: Readonly<Record<string, CrdSource>> = {
  [key('gpu-operator', 'v26.7.0', 'charts/node-feature-discovery')]: NFD_V0_19_0,
  [key('gpu-operator', 'v26.3.3', 'charts/node-feature-discovery')]: NFD_V0_18_3,
  [key('network-operator', '26.4.1', 'charts/node-feature-discovery')]: NFD_FOR_NETWORK_OPERATOR,
  [key('network-operator', '26.1.2', 'charts/node-feature-discovery')]: NFD_FOR_NETWORK_OPERATOR,
};

const GPU_OPERATOR_MISSING = 'vendored nowhere (upstream-installs/SOURCES.md), and the module proxy serves github.com/NVIDIA/gpu-operator at no v26 tag (not a module version) nor the tag\'s commit (403)';
const NETWORK_OPERATOR_MISSING = 'vendored nowhere (upstream-installs/SOURCES.md skipped the subcharts\' crds/), and no module the proxy serves is pinned for it yet';

/**
 * CRDs a published chart carries that the twin's package cannot: no copy in ../shared/crds and no source the twin
 * reaches. Declared one by one with the reason, so that a new one is an error and not a silent gap: a render that
 * creates one of these kinds fails its sync on the twin with the API server's "no matches for kind".
 */
export const UNAVAILABLE_CRDS: Readonly<Record<string, { readonly crds: readonly string[]; readonly why: string }>> = {
  [key('gpu-operator', 'v26.7.0', '')]: {
    crds: ['nvidia.com/GPUCluster', 'resource.nvidia.com/ComputeDomain', 'resource.nvidia.com/ComputeDomainClique'],
    why: GPU_OPERATOR_MISSING,
  },
  // the previous release's own crds/ are vendored (previous-releases.ts): only the pinned one lacks this
  [key('network-operator', '26.4.1', '')]: { crds: ['k8s.cni.cncf.io/NetworkAttachmentDefinition'], why: NETWORK_OPERATOR_MISSING },
  ...Object.fromEntries(['26.4.1', '26.1.2'].flatMap((v) => [
    [key('network-operator', v, 'charts/maintenance-operator-chart'), {
      crds: ['maintenance.nvidia.com/MaintenanceOperatorConfig', 'maintenance.nvidia.com/NodeMaintenance'],
      why: NETWORK_OPERATOR_MISSING,
    }],
    [key('network-operator', v, 'charts/sriov-network-operator'), {
      crds: [
        'sriovnetwork.k8snetworkplumbingwg.io/DeviceAttributes', 'sriovnetwork.k8snetworkplumbingwg.io/SriovResourcePolicy',
        ...['OVSNetwork', 'SriovIBNetwork', 'SriovNetworkNodePolicy', 'SriovNetworkNodeState', 'SriovNetworkPoolConfig', 'SriovNetwork', 'SriovOperatorConfig']
          .map((k) => `sriovnetwork.openshift.io/${k}`),
      ],
      why: NETWORK_OPERATOR_MISSING,
    }],
  ])),
};

/** The pinned source of a chart path's CRDs, if any. */
export function crdSourceOf(release: VendoredChart, chartPath: string): CrdSource | undefined {
  return CRD_SOURCES[key(release.chart, release.version, chartPath)];
}

/** Why a CRD of a chart path has no copy anywhere the twin reaches, if that is declared. */
export function unavailableCrd(release: VendoredChart, chartPath: string, crd: string): string | undefined {
  const u = UNAVAILABLE_CRDS[key(release.chart, release.version, chartPath)];
  return u?.crds.includes(crd) ? u.why : undefined;
}

/** The name of a source's file beside the twin's binary (a companion of its cache entry, or of a --binaries folder). */
export function crdSourceFileName(source: CrdSource): string {
  return `crds-${source.module.split('/').at(-1)}-${source.version}-${path.basename(source.file)}`;
}

/** Every file the sources name, once each (the twin's build fetches them: binary.ts TWIN). */
export const CRD_SOURCE_FILES: readonly CrdSource[] = [...new Map(Object.values(CRD_SOURCES).map((c) => [crdSourceFileName(c), c])).values()];

/**
 * The text of a source's file among `files` (the twin binary's companions, by name), checked against its SHA-256: the
 * build fetched it (with the module's go.sum hash), a --binaries folder was given it. Throws one line naming the file.
 */
export function sourcedCrdFile(source: CrdSource, files: Readonly<Record<string, string>>): string {
  const name = crdSourceFileName(source);
  const file = files[name];
  if (file === undefined || !existsSync(file)) throw new Error(`no ${name} beside the twin (${source.file} of ${source.module}@${source.version})`);
  const bytes = readFileSync(file);
  if (sha256(bytes) !== source.sha256) throw new Error(`${file}: its SHA-256 is ${sha256(bytes)}, pinned ${source.sha256} (${source.file} of ${source.module}@${source.version})`);
  return bytes.toString('utf8');
}
