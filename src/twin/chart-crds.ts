import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { sha256 } from '../cache/digests';
import { NFD_CRDS, VendoredChart } from '../upstream/releases';

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
  /** The CRDs the file holds (`group/Kind`): what it fills in a chart's `crds/` (checked when it is used). */
  readonly crds: readonly string[];
  /** Why this file is the one the chart carries. */
  readonly evidence: string;
}

const NFD_MODULE = 'sigs.k8s.io/node-feature-discovery';
const NFD_FILE = 'deployment/helm/node-feature-discovery/crds/nfd-api-crds.yaml';
/** nfd-api-crds.yaml: the same bytes in NFD v0.18.3 and v0.19.0 and in the subchart of each pinned NVIDIA chart (see below). */
const NFD_SHA256 = 'f8a40048b99110feaee4813dbb92ebfdaa3c7d722e1836a804207e22f72a9072';
const NFD_KINDS = NFD_CRDS.map((c) => `${c.group}/${c.kind}`);
const NFD_V0_19_0: CrdSource = {
  module: NFD_MODULE,
  version: 'v0.19.0',
  sum: 'h1:9CYm16vjSIbNO5Z1Y67rcrfy51YWmy3+6wjiWzJbrC4=',
  file: NFD_FILE,
  sha256: NFD_SHA256,
  crds: NFD_KINDS,
  evidence: 'the subchart\'s appVersion v0.19.0',
};
const NFD_V0_18_3: CrdSource = {
  module: NFD_MODULE,
  version: 'v0.18.3',
  sum: 'h1:q5/qpyxrasI/F6838lflFNGAUszpMNRuFwornPLYdxQ=',
  file: NFD_FILE,
  sha256: NFD_SHA256,
  crds: NFD_KINDS,
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
 * k8s.cni.cncf.io_networkattachmentdefinitions_crd.yaml of the Network Operator's own crds/ at v26.4.1 (git blob
 * 5916055f0e71) is the SR-IOV Network Operator chart's, at the version v26.4.1's go.mod requires (its go.sum has this
 * hash).
 */
const NAD_FOR_NETWORK_OPERATOR: CrdSource = {
  module: 'github.com/k8snetworkplumbingwg/sriov-network-operator',
  version: 'v1.6.1-0.20251209154253-eaf8b48c09af',
  sum: 'h1:z++6fB5eP766bIM0Ke/ZJpj7oSgSYkU4mYFmjOHtuzM=',
  file: 'deployment/sriov-network-operator-chart/crds/k8s.cni.cncf.io_networkattachmentdefinitions_crd.yaml',
  sha256: '727ecdb83f29e4f2f538a86cf1dbc93b751ecd63d1b5a7c3a2b1b63dad4a26d9',
  crds: ['k8s.cni.cncf.io/NetworkAttachmentDefinition'],
  evidence: 'deployment/network-operator/crds/k8s.cni.cncf.io_networkattachmentdefinitions_crd.yaml of Mellanox/network-operator tag v26.4.1 '
    + '(85afd6d9c6978eb871a3292b9897f49746cc43cd) has this SHA-256; the module version is the one that tag\'s go.mod requires',
};

/**
 * resource.nvidia.com_computedomaincliques.yaml of the GPU Operator's crds/ at v26.7.0 (git blob b3eddef718fa) is the
 * DRA driver chart's at every release of its sigs.k8s.io module (v0.4.0, v0.4.1, v0.5.0): v0.5.0 is the driver the
 * chart's values name (draDriver.version).
 */
const COMPUTE_DOMAIN_CLIQUE: CrdSource = {
  module: 'sigs.k8s.io/dra-driver-nvidia-gpu',
  version: 'v0.5.0',
  sum: 'h1:CjUBJwemlt4kYy5AN+I7Ce4mMp9V4VKR97EBogSoDus=',
  file: 'deployments/helm/dra-driver-nvidia-gpu/crds/resource.nvidia.com_computedomaincliques.yaml',
  sha256: 'bc822436bb7f516c51a6adb8ef503a8fda8b7e151aff723897a0fb3072a20c1f',
  crds: ['resource.nvidia.com/ComputeDomainClique'],
  evidence: 'deployments/gpu-operator/crds/resource.nvidia.com_computedomaincliques.yaml of NVIDIA/gpu-operator tag v26.7.0 '
    + '(10ee5b3638b89e11e949412aafa5ba99279c3721) has this SHA-256; its values.yaml names the DRA driver v0.5.0',
};

/**
 * The sources, by chart, version and the chart path whose `crds/` they fill: each a whole file as the chart carries it
 * there (under its own name), holding one or more of the CRDs ../shared/crds lacks. Checked at the tags: the GPU
 * Operator's deployments/gpu-operator/charts/node-feature-discovery/crds/nfd-api-crds.yaml at v26.7.0
 * (10ee5b3638b89e11e949412aafa5ba99279c3721) and v26.3.3 (b0a49c0e7b2e061dcd83f2bb2fe4fe960c5d0338) has NFD_SHA256.
 */
export const CRD_SOURCES: Readonly<Record<string, readonly CrdSource[]>> = {
  [key('gpu-operator', 'v26.7.0', '')]: [COMPUTE_DOMAIN_CLIQUE],
  [key('gpu-operator', 'v26.7.0', 'charts/node-feature-discovery')]: [NFD_V0_19_0],
  [key('gpu-operator', 'v26.3.3', 'charts/node-feature-discovery')]: [NFD_V0_18_3],
  // the previous release's own crds/ are vendored (previous-releases.ts): only the pinned one lacks this
  [key('network-operator', '26.4.1', '')]: [NAD_FOR_NETWORK_OPERATOR],
  [key('network-operator', '26.4.1', 'charts/node-feature-discovery')]: [NFD_FOR_NETWORK_OPERATOR],
  [key('network-operator', '26.1.2', 'charts/node-feature-discovery')]: [NFD_FOR_NETWORK_OPERATOR],
};

/** The module proxy's answer to every version asked for below (`go mod download -json`, 2026-12-07). */
const REFUSED = '403 Forbidden, "This module version is not available"';

const GPU_CLUSTER_MISSING = `vendored nowhere (upstream-installs/SOURCES.md), and it is the GPU Operator's own: the module proxy lists no version of github.com/NVIDIA/gpu-operator and serves no v26 tag (not a module version) nor v26.7.0's commit 10ee5b3638b8 (${REFUSED})`;
const COMPUTE_DOMAIN_MISSING = 'the chart\'s resource.nvidia.com_computedomains.yaml (git blob 5a28ae17ca74: numNodes required) is the DRA driver\'s of April 2026, '
  + 'before its first sigs.k8s.io/dra-driver-nvidia-gpu release: v0.4.0, v0.4.1 and v0.5.0 (served) carry another file (blob 0811b3ce2c8e: numNodes defaults to 0), '
  + `and the commits that hold these bytes are refused as pseudo-versions (v0.0.0-20260424110452-7f0d03d1116a: ${REFUSED})`;
const MAINTENANCE_MISSING = 'both files are byte-identical (git blobs 23a03d7918b2, b78e58405e50) in deployment/maintenance-operator-chart/crds/ of '
  + `github.com/Mellanox/maintenance-operator v0.2.3 and v0.3.0, but the proxy refuses that module at v0.3.0, v0.2.3 and the commit 40be9c90576d (${REFUSED}); `
  + 'what it serves is github.com/Mellanox/maintenance-operator/api v0.3.0 (the Network Operator\'s requirement), a nested module whose zip holds the Go types and no CRD';
const SRIOV_MISSING = 'the subchart\'s crds/ are the Mellanox fork\'s (hack/release.yaml: SriovNetworkOperator, sourceRepository sriov-network-operator, version network-operator-v<release>; '
  + 'the fork\'s tags network-operator-v26.4.0-beta.2 to -beta.7 hold all 9 files of 26.4.1 and network-operator-v26.1.1 all 7 of 26.1.2, byte for byte), '
  + 'not a release of github.com/k8snetworkplumbingwg/sriov-network-operator: the version the Network Operator\'s go.mod requires (v1.6.1-0.20251209154253-eaf8b48c09af, served) '
  + 'and the tags v1.0.0 to v1.6.0 hold none of these files, no upstream commit holds more than 5 of them, and SriovResourcePolicy\'s and SriovNetworkNodeState\'s are in the fork only; '
  + `the proxy refuses the fork's commits under the module path (553d46ab42c7, f673606d3f08, v0.0.0-20260505094300-553d46ab42c7) and an upstream pseudo-version (v1.6.1-0.20260217140243-d4266b294b5e): ${REFUSED}`;

/**
 * CRDs a published chart carries that the twin's package cannot: no copy in ../shared/crds and no source the twin
 * reaches. Declared one by one with the reason (what was looked for, the proxy's answer), so that a new one is an
 * error and not a silent gap: a render that creates one of these kinds fails its sync on the twin with the API
 * server's "no matches for kind".
 */
export const UNAVAILABLE_CRDS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  [key('gpu-operator', 'v26.7.0', '')]: {
    'nvidia.com/GPUCluster': GPU_CLUSTER_MISSING,
    'resource.nvidia.com/ComputeDomain': COMPUTE_DOMAIN_MISSING,
  },
  ...Object.fromEntries(['26.4.1', '26.1.2'].flatMap((v) => [
    [key('network-operator', v, 'charts/maintenance-operator-chart'), Object.fromEntries(
      ['MaintenanceOperatorConfig', 'NodeMaintenance'].map((k) => [`maintenance.nvidia.com/${k}`, MAINTENANCE_MISSING]),
    )],
    [key('network-operator', v, 'charts/sriov-network-operator'), Object.fromEntries([
      ...['DeviceAttributes', 'SriovResourcePolicy'].map((k) => `sriovnetwork.k8snetworkplumbingwg.io/${k}`),
      ...['OVSNetwork', 'SriovIBNetwork', 'SriovNetworkNodePolicy', 'SriovNetworkNodeState', 'SriovNetworkPoolConfig', 'SriovNetwork', 'SriovOperatorConfig']
        .map((k) => `sriovnetwork.openshift.io/${k}`),
    ].map((crd) => [crd, SRIOV_MISSING]))],
  ])),
};

/** The pinned sources of a chart path's CRDs (none: empty). */
export function crdSourcesOf(release: VendoredChart, chartPath: string): readonly CrdSource[] {
  return CRD_SOURCES[key(release.chart, release.version, chartPath)] ?? [];
}

/** Why a CRD of a chart path has no copy anywhere the twin reaches, if that is declared. */
export function unavailableCrd(release: VendoredChart, chartPath: string, crd: string): string | undefined {
  return UNAVAILABLE_CRDS[key(release.chart, release.version, chartPath)]?.[crd];
}

/** The name of a source's file beside the twin's binary (a companion of its cache entry, or of a --binaries folder). */
export function crdSourceFileName(source: CrdSource): string {
  return `crds-${source.module.split('/').at(-1)}-${source.version}-${path.basename(source.file)}`;
}

/** Every file the sources name, once each (the twin's build fetches them: binary.ts TWIN). */
export const CRD_SOURCE_FILES: readonly CrdSource[] = [...new Map(Object.values(CRD_SOURCES).flat().map((c) => [crdSourceFileName(c), c])).values()];

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
