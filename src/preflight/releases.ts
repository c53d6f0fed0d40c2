import { RunningRelease, runningReleases } from './operator-releases';
import { crdFacts } from './reads';
import { PreflightContext, PreflightFinding, PreflightRule, rulesOf } from './rule';
import { groupKindKey, isBuiltInGroup, isProvided, kindsDefinedBy, parseProvides } from '../components/gitops/api-kinds';
import { LABELS } from '../model/names';
import { carriedReleases, pinnedRelease, RELEASE_NAMES, ReleaseKey, releaseForm, sameRelease } from '../model/releases';
import { PACKAGE_NAME } from '../paths';
import { apiGroup, describeObject } from '../render/manifest';
import { crdOf } from '../upgrade/crd-diff';
import { yamlFiles } from '../upgrade/crd-sets';
import { CrdSetValidator } from '../upgrade/revalidate';

/*
 * The operators the cluster really runs against the render: the release each pre-installed operator runs (its
 * Deployment, else its CRD: operator-releases.ts) against the release the description renders its CRs for
 * (releases.<operator>), and every rendered custom resource of a pre-installed kind against the schema of the CRD
 * the cluster serves, as the API server validates it (the CRD's defaults, its structural schema, its CEL rules).
 */

/** The operator whose CRs a kind is, for the fix (the kinds the toolkit renders for a pre-installed operator). */
const OPERATOR_OF_GROUP: Readonly<Record<string, ReleaseKey>> = {
  'nvidia.com': 'gpuOperator',
  'mellanox.com': 'networkOperator',
  'kueue.x-k8s.io': 'kueue',
};

/** The upgrade-plan component of each operator. */
const COMPONENT: Readonly<Record<ReleaseKey, string>> = { gpuOperator: 'gpu-operator', networkOperator: 'network-operator', kueue: 'kueue' };

/** Operators whose release changes what is rendered (the CRs' form and images); Kueue's only what upgrade-plan plans from. */
const FORMED: ReadonlySet<ReleaseKey> = new Set(['gpuOperator', 'networkOperator']);

const upgradePlan = (key: ReleaseKey) => `npx ${PACKAGE_NAME} upgrade-plan --config <description> --component ${COMPONENT[key]} --kubeconfig`;

/** Whether the description renders CRs of the operator (a NicClusterPolicy only with InfiniBand). */
function renders(ctx: PreflightContext, key: ReleaseKey): boolean {
  return ctx.rendered.some((r) => OPERATOR_OF_GROUP[apiGroup(r.manifest.apiVersion)] === key);
}

const runningCache = new WeakMap<PreflightContext, Record<ReleaseKey, RunningRelease>>();
function running(ctx: PreflightContext): Record<ReleaseKey, RunningRelease> {
  let r = runningCache.get(ctx);
  if (!r) {
    r = runningReleases(ctx.state, ctx.roots);
    runningCache.set(ctx, r);
  }
  return r;
}

function operatorReleaseFindings(ctx: PreflightContext): PreflightFinding[] {
  const d = ctx.model.description;
  const out: PreflightFinding[] = [];
  for (const [key, r] of Object.entries(running(ctx)) as [ReleaseKey, RunningRelease][]) {
    if (d.installs[key] !== 'preinstalled' || r.version === undefined || !renders(ctx, key)) continue;
    const name = RELEASE_NAMES[key];
    const given = d.releases[key];
    const rendered = ctx.model.releases[key];
    const object = r.deployment ? `Deployment ${r.deployment.namespace}/${r.deployment.name}` : `CustomResourceDefinition ${r.crd?.name ?? name}`;
    const says = given === undefined ? `releases.${key} unset: the pinned ${rendered.version}` : `releases.${key}: ${given}`;
    const form = releaseForm(key, r.version);
    const severity = FORMED.has(key) ? 'error' : 'warning';
    if (!form.ok) {
      out.push({
        rule: 'operator-release',
        severity,
        object,
        message: `the cluster runs ${name} ${r.version} (${r.evidence}), for which this toolkit renders no form: ${form.message}`,
        fix: form.nearest.some((v) => sameRelease(v, pinnedRelease(key).version)) && form.nearest.length > 1
          ? `upgrade ${name} to ${pinnedRelease(key).version} (${upgradePlan(key)}), then leave releases.${key} unset`
          : `run a release this toolkit carries (${carriedReleases(key).map((c) => c.version).join(', ')}), or a gpu-cluster-manifests that carries ${r.version}`,
      });
    } else if (form.release.version !== rendered.version) {
      out.push({
        rule: 'operator-release',
        severity,
        object,
        message: `the description renders for ${name} ${rendered.version} (${says}), but the cluster runs ${r.version} (${r.evidence})`
          + (FORMED.has(key) ? `: its CRD and its operands are ${form.release.version}'s, not those the render names` : ': upgrade-plan would plan from the wrong release'),
        fix: `set releases.${key}: ${r.version} (init writes it)`
          + (form.release.pinned ? '' : `; or upgrade ${name} to ${pinnedRelease(key).version} first (${upgradePlan(key)}), then leave releases.${key} unset`),
      });
    } else if (given !== undefined && !sameRelease(given, r.version)) {
      out.push({
        rule: 'operator-release',
        severity: 'warning',
        object,
        message: `releases.${key} says ${given}, the cluster runs ${r.version} (${r.evidence}): the same form, another patch release`,
        fix: `set releases.${key}: ${r.version}`,
      });
    }
  }
  return out;
}

/** Problems are `path: message`; the fields a refusal names, for the message's head. */
const fieldsOf = (problems: readonly string[]) => [...new Set(problems.map((p) => p.slice(0, p.indexOf(':')).replace(/^\//, '').replace(/\//g, '.')))];

function crdSchemaFindings(ctx: PreflightContext): PreflightFinding[] {
  const { state, rendered, model } = ctx;
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition');
  if (crds.length === 0) return [];
  const manifests = rendered.map((r) => r.manifest);
  const provided = [
    ...kindsDefinedBy(manifests),
    ...manifests.filter((m) => m.kind === 'Application').flatMap((a) => parseProvides(a.metadata.annotations?.[LABELS.provides])),
  ];
  // the pre-installed kinds of the render whose served CRD has a schema for the rendered version
  const checked = rendered.filter((r) => {
    const group = apiGroup(r.manifest.apiVersion);
    return !isBuiltInGroup(group) && !isProvided({ group, kind: r.manifest.kind }, provided);
  });
  const live = crds.filter((c) => {
    const f = crdFacts(c);
    return f !== undefined && checked.some((r) => apiGroup(r.manifest.apiVersion) === f.group && r.manifest.kind === f.kind);
  }).flatMap((c) => crdOf(c, `the cluster's CRD ${c.metadata.name}`) ?? []).filter((c) => c.versions.some((v) => v.served && v.schema !== undefined));
  if (live.length === 0 || !ctx.roots) return [];
  const core = yamlFiles(ctx.roots.schemas).filter((f) => /definitions\.json$/i.test(f));
  const validator = new CrdSetValidator(live, core, ctx.cacheDir);
  const releases = running(ctx);
  const out: PreflightFinding[] = [];
  for (const { folder, manifest } of checked) {
    const crd = validator.crdOf(manifest);
    const version = manifest.apiVersion.slice(manifest.apiVersion.indexOf('/') + 1);
    // a version the CRD does not serve is api-version-not-served's
    if (!crd?.versions.some((v) => v.name === version && v.served && v.schema !== undefined)) continue;
    const result = validator.validate({ object: manifest, source: `${folder}/` });
    if (result.outcome !== 'invalid') continue;
    const key = OPERATOR_OF_GROUP[apiGroup(manifest.apiVersion)];
    const r = key ? releases[key] : undefined;
    const whose = r?.crd?.release !== undefined && r.crd.name === crd.name ? `, the one of ${RELEASE_NAMES[key!]} ${r.crd.release}` : '';
    const runs = r?.version ?? r?.crd?.release;
    const fields = fieldsOf(result.problems);
    const form = key && runs !== undefined ? releaseForm(key, runs) : undefined;
    const fixes = key === undefined ? [`upgrade the operator that serves ${groupKindKey({ group: apiGroup(manifest.apiVersion), kind: manifest.kind })} to a release whose CRD accepts it`] : [
      ...(form?.ok && form.release.version !== model.releases[key].version ? [`render it for the release the cluster runs: releases.${key}: ${runs} (init writes it)`] : []),
      `upgrade ${RELEASE_NAMES[key]} to ${model.releases[key].version} first, its CRDs with it: ${upgradePlan(key)} gives the order`,
    ];
    out.push({
      rule: 'crd-schema',
      severity: 'error',
      object: describeObject(manifest),
      message: `the CRD the cluster serves (${crd.name} ${version}${whose}) refuses the render (${folder}/) at ${fields.join(', ')}: ${result.problems.join('; ')}; `
        + 'Argo CD\'s sync of it fails',
      fix: fixes.join('; or '),
    });
  }
  return out;
}

export const RELEASE_RULES: readonly PreflightRule[] = [
  ...rulesOf('release', operatorReleaseFindings, {
    'operator-release': 'the description renders a pre-installed operator\'s CRs for another release than the cluster runs (releases.<operator>)',
  }),
  ...rulesOf('release', crdSchemaFindings, {
    'crd-schema': 'the CRD the cluster serves refuses a rendered custom resource (an operator older than the render needs): the field, and the way out',
  }),
];
