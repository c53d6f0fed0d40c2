import { descriptionEdit } from './fixes';
import { crdFacts } from './reads';
import { ClusterState } from './state';
import { GroupKind, groupKindKey, isProvided } from '../components/gitops/api-kinds';
import { ManagedInstall, managedInstalls } from '../components/gitops/managed-installs';
import { setValueAt } from '../json';
import { ClusterDescription } from '../model/description';
import { parseDescription } from '../model/load';
import { buildModel, ClusterModel } from '../model/model';
import { apiGroup } from '../render/manifest';
import { renderCluster } from '../synth/render';

/**
 * What to do about a kind the render needs and the cluster lacks, from the least invasive to the most: render
 * without it (a description switch, when one leaves every object of the kind out), install its one CRD, and only then
 * a managed install of the add-on that serves it, which is a second copy where the cluster runs one already. Preflight
 * lists them in that order; init takes the first that needs no change to the cluster.
 */

/** Description edits that leave a kind out of the render (each checked by rendering: it must drop every object of the kind). */
const RENDER_WITHOUT: readonly { readonly kind: GroupKind; readonly edit: Readonly<Record<string, unknown>>; readonly loses: string }[] = [
  { kind: { group: 'operator.victoriametrics.com', kind: 'VMPodScrape' }, edit: { 'monitoring.scrape.networkOperator': false }, loses: 'the Network Operator\'s metrics' },
  { kind: { group: 'operator.victoriametrics.com', kind: 'VMNodeScrape' }, edit: { 'monitoring.scrape.nodeExporter': false }, loses: 'the toolkit\'s own node exporter scrape' },
  { kind: { group: 'kubeflow.org', kind: 'PyTorchJob' }, edit: { 'installs.trainingOperator': 'none' }, loses: 'the PyTorchJob sample' },
  { kind: { group: 'nvidia.com', kind: 'DynamoGraphDeployment' }, edit: { 'tutorials.dynamo.enabled': false }, loses: 'the Dynamo samples' },
];

/** A description with edits applied, when it still validates. */
function edited(description: ClusterDescription, edits: Readonly<Record<string, unknown>>): ClusterDescription | undefined {
  const raw = structuredClone(description) as unknown as Record<string, unknown>;
  for (const [p, v] of Object.entries(edits)) setValueAt(raw, p, v);
  try {
    return parseDescription(raw);
  } catch {
    return undefined;
  }
}

/** Whether a rendered cluster still has an object of the kind. */
function renders(model: ClusterModel, gk: GroupKind): boolean {
  return renderCluster(model).folders.some((f) => f.objects.some((m) => m.kind === gk.kind && apiGroup(m.apiVersion) === gk.group));
}

export interface RenderWithout {
  /** Dotted field paths and their values. */
  readonly edits: Readonly<Record<string, unknown>>;
  /** `set a: b in the description`. */
  readonly text: string;
  /** What the render then lacks, in words. */
  readonly loses: string;
}

/** The description edit that leaves every object of `gk` out of the render, when there is one (checked by rendering). */
export function renderWithout(description: ClusterDescription, gk: GroupKind): RenderWithout | undefined {
  for (const r of RENDER_WITHOUT.filter((x) => groupKindKey(x.kind) === groupKindKey(gk))) {
    const d = edited(description, r.edit);
    const text = d && descriptionEdit(description, r.edit);
    if (d && text && !renders(buildModel(d), gk)) return { edits: r.edit, text, loses: r.loses };
  }
  return undefined;
}

/** The managed install that would bring `gk`, for this description with every add-on managed. */
export function installBringing(model: ClusterModel, gk: GroupKind): ManagedInstall | undefined {
  const installs = Object.fromEntries(Object.keys(model.description.installs).map((k) => [k, 'managed'])) as ClusterDescription['installs'];
  return managedInstalls({ ...model, description: { ...model.description, installs } }).find((i) => isProvided(gk, i.provides));
}

/** Whether the cluster serves any kind an install provides: then it runs that add-on already (undefined: the state has no CRD to tell). */
export function runsAddOn(state: ClusterState, install: ManagedInstall): boolean | undefined {
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition').map(crdFacts).filter((c) => c !== undefined);
  if (crds.length === 0) return undefined;
  return crds.some((c) => isProvided({ group: c.group, kind: c.kind }, install.provides));
}

/** `kubectl apply` of one CRD file, read from the schema folder the toolkit validates with. */
export type CrdFileOf = (apiVersion: string, kind: string) => string | undefined;

/** The remedies of a kind the cluster lacks, least invasive first, as the words of a fix. */
export function missingKindFixes(
  model: ClusterModel, state: ClusterState, gk: GroupKind, apiVersion: string, crdFileOf?: CrdFileOf,
): string[] {
  const out: string[] = [];
  const without = renderWithout(model.description, gk);
  if (without) out.push(`${without.text} (renders no ${gk.kind}; the cluster then lacks ${without.loses})`);
  const file = crdFileOf?.(apiVersion, gk.kind);
  if (file) out.push(`install its CRD alone: kubectl apply --server-side -f ${file} (the running operator must be one that watches ${gk.kind})`);
  const install = installBringing(model, gk);
  if (install && model.description.installs[install.key] !== 'managed') {
    const runs = runsAddOn(state, install);
    out.push(`set installs.${install.key}: managed in the description (the same sync installs the CRD${runs ? '; a second copy of the add-on beside the one the cluster runs, so remove that first' : ''})`);
  }
  return out;
}
