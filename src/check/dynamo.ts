import { ClusterIndex } from './cluster-index';
import { applicationSources, ARGO } from './gitops';
import { Rule, Violation } from './rule';
import { apiGroup, Manifest } from '../render/manifest';
import { ImageRef, imageRefsOf } from '../upstream/images';
import { ApplicationSource, chartOfSource } from '../upstream/releases';
import { VERSIONS } from '../versions';

const DGD = { group: 'nvidia.com', kind: 'DynamoGraphDeployment' } as const;

/** How many fields of one image a finding names before it counts the rest. */
const NAMED_PATHS = 3;

/** An image of NVIDIA Dynamo's registry in a DynamoGraphDeployment: its tag is judged by dynamo-image-release. */
export function isDynamoReleaseImage(m: Manifest, ref: ImageRef): boolean {
  return m.kind === DGD.kind && apiGroup(m.apiVersion) === DGD.group && ref.repository.startsWith(`${VERSIONS.dynamo.registry}/`);
}

/** A Dynamo platform release the cluster runs, and what says so. */
interface PlatformRelease {
  readonly release: string;
  readonly from: string;
  readonly application?: Manifest;
}

/**
 * The Dynamo platform releases of the cluster: the dynamo-platform chart version of each Application that installs it
 * (the chart is versioned with the release, and its operator image tagged with it); without one, the platform is
 * pre-installed and taken to be the release the samples are written for (VERSIONS.dynamo, whose CRD they are
 * validated against).
 */
function platformReleases(index: ClusterIndex): PlatformRelease[] {
  const out: PlatformRelease[] = [];
  for (const app of index.ofKind('Application', ARGO)) {
    for (const s of applicationSources<ApplicationSource>(app)) {
      if (chartOfSource(s) !== VERSIONS.dynamoPlatform.chart || s.targetRevision === undefined) continue;
      out.push({ release: s.targetRevision, from: `Application ${app.metadata.name} installs chart ${VERSIONS.dynamoPlatform.chart} ${s.targetRevision}`, application: app });
    }
  }
  if (out.length > 0) return out;
  return [{ release: VERSIONS.dynamo.release, from: `no Application installs the ${VERSIONS.dynamoPlatform.chart} chart: a pre-installed platform of the release the toolkit pins` }];
}

/** The tags a repository of Dynamo's registry has in a release: the published ones when recorded, else the release itself. */
function releaseTags(repository: string, release: string): readonly string[] {
  const published = release === VERSIONS.dynamo.release ? VERSIONS.dynamo.publishedImages[repository] : undefined;
  return published ?? [release];
}

/**
 * The Dynamo operator and the runtime images of a graph's components are one release: the operator renders the
 * pods for the runtime it was built with (arguments, environment, the frontend/worker protocol), and upstream
 * publishes and tests them together. A user may set `tutorials.dynamo.image` to any image.
 */
const dynamoImageRelease: Rule = {
  id: 'dynamo-image-release',
  severity: 'error',
  summary: `every ${VERSIONS.dynamo.registry} image of a DynamoGraphDeployment carries a tag published with the Dynamo platform release the cluster installs (its dynamo-platform chart version), or, pre-installed, the release the toolkit pins`,
  check(index) {
    const graphs = index.ofKind(DGD.kind, DGD.group);
    if (graphs.length === 0) return [];
    const platforms = platformReleases(index);
    const out: Violation[] = [];
    for (const g of graphs) {
      // one finding per image of the graph, naming every field that carries it
      const mismatched = new Map<string, ImageRef[]>();
      for (const ref of imageRefsOf(g)) {
        if (!isDynamoReleaseImage(g, ref) || ref.tag === undefined) continue;
        if (platforms.some((p) => releaseTags(ref.repository, p.release).includes(ref.tag!))) continue;
        const image = `${ref.repository}:${ref.tag}`;
        mismatched.set(image, [...(mismatched.get(image) ?? []), ref]);
      }
      for (const [image, refs] of mismatched) {
        const { repository } = refs[0];
        const p = platforms[0];
        const tags = releaseTags(repository, p.release);
        const paths = refs.slice(0, NAMED_PATHS).map((r) => r.path).join(', ') + (refs.length > NAMED_PATHS ? ` and ${refs.length - NAMED_PATHS} more` : '');
        out.push({
          message: `runs ${image} (${paths}), but the Dynamo platform is release ${platforms.map((x) => x.release).join(', ')} (${p.from}), `
            + `whose ${repository} is tagged ${tags.join(', ')}: operator and runtime must be one release; use ${repository}:${tags[0]} (tutorials.dynamo.image) `
            + 'or install the platform of the image\'s release',
          objects: [g, ...platforms.flatMap((x) => (x.application ? [x.application] : []))],
        });
      }
    }
    return out;
  },
};

export const DYNAMO_RULES: readonly Rule[] = [dynamoImageRelease];
