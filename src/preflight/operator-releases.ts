import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { crdFacts } from './reads';
import { ClusterState } from './state';
import { isJsonObject, valueAt } from '../json';
import { HELM, LABELS } from '../model/names';
import { carriedReleases, RELEASE_KEYS, RELEASE_NAMES, ReleaseKey, releaseNumbers, sameRelease } from '../model/releases';
import { Manifest } from '../render/manifest';
import { Crd, crdOf } from '../upgrade/crd-diff';
import { packagedCrds, yamlFiles } from '../upgrade/crd-sets';
import { parseImageRef } from '../upstream/images';
import { PREVIOUS_RELEASES } from '../upstream/previous-releases';

/*
 * The release each pre-installed operator runs, read from what a read-only identity may see (never a Secret, so never
 * Helm's release records): the operator's Deployment (its image's tag, else its `app.kubernetes.io/version` and
 * `helm.sh/chart` labels; the `meta.helm.sh/release-*` annotations name its Helm release), else the CRD of the kind
 * its CRs are rendered in, matched against the vendored CRDs of every release this toolkit carries.
 */

/** How each operator is recognised in a cluster. */
interface OperatorSigns {
  /** The last path segment of the operator image's repository (`nvcr.io/nvidia/gpu-operator`). */
  readonly image: string;
  /** The CRD its adopted CR is of, and the schema folder (../shared/crds/<folder>) of the pinned one; none: no CRD match. */
  readonly crd?: { readonly group: string; readonly kind: string; readonly folder: string };
}

const SIGNS: Readonly<Record<ReleaseKey, OperatorSigns>> = {
  gpuOperator: { image: 'gpu-operator', crd: { group: 'nvidia.com', kind: 'ClusterPolicy', folder: 'gpu-operator' } },
  networkOperator: { image: 'network-operator', crd: { group: 'mellanox.com', kind: 'NicClusterPolicy', folder: 'network-operator' } },
  kueue: { image: 'kueue' },
};

/** The operator's Deployment as read. */
export interface OperatorDeployment {
  readonly namespace: string;
  readonly name: string;
  readonly image: string;
  /** Its Helm release, from the annotations Helm writes on every object of a release. */
  readonly helm?: { readonly release: string; readonly namespace: string; readonly chart?: string };
}

/** What the cluster shows of one operator's release. */
export interface RunningRelease {
  readonly key: ReleaseKey;
  /** The release it runs, as read (a tag: `v26.3.3`); undefined when nothing tells. */
  readonly version?: string;
  readonly deployment?: OperatorDeployment;
  /** The served CRD of its adopted kind, and the carried release whose vendored CRD it equals (none: another one). */
  readonly crd?: { readonly name: string; readonly release?: string };
  /** Where the version was read, for a comment or a message. */
  readonly evidence: string;
}

/** The operator containers of a Deployment whose image is the operator's. */
function operatorImage(d: Manifest, signs: OperatorSigns): string | undefined {
  const containers = valueAt(d, ['spec', 'template', 'spec', 'containers']);
  if (!Array.isArray(containers)) return undefined;
  for (const c of containers) {
    const image = isJsonObject(c) && typeof c.image === 'string' ? c.image : undefined;
    const ref = image === undefined ? undefined : parseImageRef(image);
    if (ref && ref.repository.split('/').pop() === signs.image) return image;
  }
  return undefined;
}

/** The release a Deployment says: its image's tag, else its version label, else its chart label's version. */
function deploymentVersion(d: Manifest, image: string, chartName: string): { version?: string; from: string } {
  const tag = parseImageRef(image)?.tag;
  if (tag !== undefined && releaseNumbers(tag)) return { version: tag, from: `image ${image}` };
  const labels = d.metadata.labels ?? {};
  const label = labels[LABELS.version];
  if (label !== undefined && releaseNumbers(label)) return { version: label, from: `label ${LABELS.version}: ${label}` };
  const chart = labels[HELM.chart];
  const chartVersion = chart?.startsWith(`${chartName}-`) ? chart.slice(chartName.length + 1) : undefined;
  if (chartVersion !== undefined && releaseNumbers(chartVersion)) return { version: chartVersion, from: `label ${HELM.chart}: ${chart}` };
  return { from: `image ${image}, which names no release` };
}

/** The vendored CRDs of each carried release of an operator (the pinned one's from the schemas, the previous ones' from their chart's crds/). */
export function carriedCrds(key: ReleaseKey, roots: { schemas: string; upstream: string }): { release: string; crds: Crd[] }[] {
  const signs = SIGNS[key];
  if (!signs.crd) return [];
  return carriedReleases(key).map((r) => {
    const previous = PREVIOUS_RELEASES.find((p) => p.key === key && sameRelease(p.version, r.version));
    const dir = previous ? path.join(roots.upstream, previous.folder, previous.chart.chartPath, 'crds') : path.join(roots.schemas, signs.crd!.folder);
    const crds = existsSync(dir) ? yamlFiles(dir).flatMap((f) => packagedCrds(f, f)) : [];
    return { release: r.version, crds };
  });
}

/** The carried release whose vendored CRD of the kind equals a served one (every served version's schema). */
function crdRelease(served: Crd, carried: readonly { release: string; crds: readonly Crd[] }[]): string | undefined {
  const schemas = (c: Crd) => c.versions.filter((v) => v.served).map((v) => [v.name, v.schema ?? null])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));
  const same = (c: Crd) => c.group === served.group && c.kind === served.kind && isDeepStrictEqual(schemas(c), schemas(served));
  return carried.find((r) => r.crds.some(same))?.release;
}

/** The chart name of each operator (the `helm.sh/chart` label's prefix). */
const CHARTS: Readonly<Record<ReleaseKey, string>> = { gpuOperator: 'gpu-operator', networkOperator: 'network-operator', kueue: 'kueue' };

/**
 * What the cluster shows of each operator's release (every key; `version` undefined where nothing tells). `roots`: where
 * the vendored CRDs are (the schemas and upstream installs folders); without them no CRD is matched.
 */
export function runningReleases(state: ClusterState, roots?: { schemas: string; upstream: string }): Record<ReleaseKey, RunningRelease> {
  const deployments = state.list('apps', 'Deployment');
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition');
  const out = {} as Record<ReleaseKey, RunningRelease>;
  for (const key of RELEASE_KEYS) {
    const signs = SIGNS[key];
    const found = deployments.map((d) => ({ d, image: operatorImage(d, signs) })).filter((x) => x.image !== undefined)
      .sort((a, b) => `${a.d.metadata.namespace}/${a.d.metadata.name}`.localeCompare(`${b.d.metadata.namespace}/${b.d.metadata.name}`));
    const first = found[0];
    const deployment: OperatorDeployment | undefined = first && {
      namespace: first.d.metadata.namespace ?? '',
      name: first.d.metadata.name,
      image: first.image!,
      ...(first.d.metadata.annotations?.[HELM.releaseName] !== undefined ? {
        helm: {
          release: first.d.metadata.annotations[HELM.releaseName],
          namespace: first.d.metadata.annotations[HELM.releaseNamespace] ?? first.d.metadata.namespace ?? '',
          ...(first.d.metadata.labels?.[HELM.chart] !== undefined ? { chart: first.d.metadata.labels[HELM.chart] } : {}),
        },
      } : {}),
    };
    const liveCrd = signs.crd && crds.find((c) => {
      const f = crdFacts(c);
      return f?.group === signs.crd!.group && f.kind === signs.crd!.kind;
    });
    const parsed = liveCrd ? crdOf(liveCrd, `the cluster's CRD ${liveCrd.metadata.name}`) : undefined;
    const crd = parsed && { name: parsed.name, ...(roots ? { release: crdRelease(parsed, carriedCrds(key, roots)) } : {}) };
    const where = first ? `Deployment ${deployment!.namespace}/${deployment!.name}` : undefined;
    const helm = deployment?.helm ? `; Helm release ${deployment.helm.namespace}/${deployment.helm.release}${deployment.helm.chart ? `, chart ${deployment.helm.chart}` : ''}` : '';
    const fromDeployment = first ? deploymentVersion(first.d, first.image!, CHARTS[key]) : undefined;
    if (fromDeployment?.version !== undefined) {
      out[key] = { key, version: fromDeployment.version, deployment, ...(crd ? { crd } : {}), evidence: `${where}: ${fromDeployment.from}${helm}` };
    } else if (crd?.release !== undefined) {
      out[key] = {
        key,
        version: crd.release,
        ...(deployment ? { deployment } : {}),
        crd,
        evidence: `the ${signs.crd!.kind} CRD the cluster serves (${crd.name}), the one of ${RELEASE_NAMES[key]} ${crd.release}${where ? `; ${where}: ${fromDeployment!.from}` : '; no operator Deployment seen'}`,
      };
    } else {
      const seen = [where && `${where}: ${fromDeployment!.from}`, crd && `its ${signs.crd!.kind} CRD ${crd.name} is none of the vendored ones`].filter(Boolean);
      out[key] = { key, ...(deployment ? { deployment } : {}), ...(crd ? { crd } : {}), evidence: seen.length > 0 ? seen.join('; ') : 'no operator Deployment seen' };
    }
  }
  return out;
}
