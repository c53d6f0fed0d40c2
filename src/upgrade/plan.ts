import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { crdOriginFile, webhookGuards } from './chart-facts';
import { COMPONENTS, pinnedChart, previousReleases, releaseChart, sameVersion, UpgradeComponent } from './components';
import { BUILT_IN_DEFAULTS_FILE, configDefaults, DefaultsSide, readBuiltInDefaults } from './config-defaults';
import { addedCrd, Crd, crdKey, crdOf, diffCrd, removedCrd } from './crd-diff';
import { overridden, packagedCrds, yamlFiles } from './crd-sets';
import { featureGateFindings, gatesSet, parseFeatureGates } from './feature-gates';
import { ChartSide, daemonSetRolls, OperatorCr, operandImpact, webhookImpact } from './impact';
import { OrderObjects, planOrder } from './order';
import { ApplicationObjects, helmOwnership, ownership } from './ownership';
import { CrdSetValidator, CrResult, RenderedCr } from './revalidate';
import { ComponentChange, ComponentName, ComponentOrder, Finding, LiveCluster, SECTIONS, UpgradePlan } from './types';
import { ClusterView } from '../check/cluster-view';
import { ARGO } from '../check/gitops';
import { renderClusterSources } from '../check/renders';
import { EngineOptions, resolveEngines } from '../engines';
import { InputError } from '../errors';
import { isJsonObject, setValueAt, valueAt } from '../json';
import { buildModel, ClusterModel, withMultiKueue } from '../model/model';
import { NAMESPACES, syncWave } from '../model/names';
import { releaseForm } from '../model/releases';
import { UPSTREAM_FACTS_DIR, VENDORED_DIR } from '../paths';
import { apiGroup, describeObject, Manifest, manifestFileName } from '../render/manifest';
import { renderCluster } from '../synth/render';
import { VendoredChart } from '../upstream/releases';
import { ClusterRenders, renderApplications, RenderedSource } from '../upstream/render';
import { RenderSession } from '../upstream/render-session';
import { withDefaults } from '../validate/defaults';
import { SchemaStore } from '../validate/schemas';
import { VERSIONS } from '../versions';

/** The plan cannot be made: an engine or a chart failed (fail closed: no plan from half the facts). Exit 1. */
export class UpgradePlanFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UpgradePlanFailed';
  }
}

/** Another toolkit's render of the same description (the toolkit-to-toolkit form), and the releases it pins. */
export interface FromToolkit {
  /** `gpu-cluster-manifests 0.1.0 (/path)`. */
  readonly label: string;
  readonly view: ClusterView;
  /** Its pinned version of each component (VERSIONS of that package), by VERSIONS key. */
  readonly versions: Readonly<Record<string, string | undefined>>;
}

export interface PlanOptions {
  /** The description; undefined: CRDs only (--from-crds and --to-crds). */
  readonly model?: ClusterModel;
  readonly components: readonly ComponentName[];
  /** Component mode: the release the cluster runs (default: the component's previous release) and the one to go to (the pinned). */
  readonly from?: string;
  readonly to?: string;
  readonly fromToolkit?: FromToolkit;
  /**
   * The cluster as read (--kubeconfig, --snapshot): each component goes from the release it runs, and the old end is
   * what the cluster holds (its CRDs, the adopted CRs, the DaemonSets that run), not the chart's defaults.
   */
  readonly live?: LiveCluster;
  /** CRDs the cluster has now / is to get, in place of the vendored ones of the same kinds (or only these, without a description). */
  readonly fromCrds?: readonly Crd[];
  readonly toCrds?: readonly Crd[];
  /** The vendored upstream installs (charts of the pinned and previous releases). */
  readonly upstream: string;
  /** The pinned CRD schemas and the core definitions. */
  readonly schemas: string;
  readonly cacheDir?: string;
  readonly engines?: EngineOptions;
}

/** A plan, and the objects its order names (by ObjectRef.ref): what a control plane test applies. */
export interface PlanResult {
  readonly plan: UpgradePlan;
  readonly manifests: ReadonlyMap<string, Manifest>;
}

const SEVERITY_RANK = { blocker: 0, warning: 1, info: 2 } as const;

function compareFindings(a: Finding, b: Finding): number {
  return SECTIONS.indexOf(a.section) - SECTIONS.indexOf(b.section)
    || a.component.localeCompare(b.component)
    || a.subject.localeCompare(b.subject, 'en', { numeric: true })
    || SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity]
    || a.type.localeCompare(b.type)
    || (a.path ?? '').localeCompare(b.path ?? '')
    || a.message.localeCompare(b.message);
}


/** How the plan names a file: relative to one of its roots, with the root's prefix. */
class Roots {
  readonly roots: Record<string, string>;

  constructor(upstream: string, schemas: string) {
    this.roots = { 'upstream-installs/': upstream, 'crds/': schemas, 'facts/': UPSTREAM_FACTS_DIR };
  }

  name(file: string): string {
    for (const [prefix, root] of Object.entries(this.roots)) {
      const rel = path.relative(root, file);
      if (!rel.startsWith('..') && !path.isAbsolute(rel)) return `${prefix}${rel.split(path.sep).join('/')}`;
    }
    return file;
  }
}

/** An Application that installs a chart release with given values (a component this description does not install: its defaults). */
function chartApplication(chart: VendoredChart, version: string, namespace: string, values: unknown): Manifest {
  return {
    apiVersion: `${ARGO}/v1alpha1`,
    kind: 'Application',
    metadata: { name: `${chart.chart}-${version}` },
    spec: {
      destination: { namespace },
      source: { chart: chart.chart, targetRevision: version, helm: { releaseName: chart.chart, valuesObject: values ?? {} } },
    },
  };
}

/** A copy of an Application with its (first) source's targetRevision and helm values replaced. */
function withSource(app: Manifest, targetRevision: string, values?: (v: Record<string, unknown>) => void): Manifest {
  type Source = { targetRevision: string; helm?: { valuesObject?: Record<string, unknown> } };
  const copy = JSON.parse(JSON.stringify(app)) as { spec: { source: Source } } & Manifest;
  copy.spec.source.targetRevision = targetRevision;
  if (values) {
    copy.spec.source.helm ??= {};
    copy.spec.source.helm.valuesObject ??= {};
    values(copy.spec.source.helm.valuesObject);
  }
  return copy;
}

/** One side of a component's upgrade. */
interface Side {
  readonly version: string;
  readonly chart: VendoredChart;
  /** The install's render (the Application's, or the chart's defaults). */
  readonly render: RenderedSource;
  /** The Application that installs it, when this description does. */
  readonly application?: Manifest;
  readonly crds: Crd[];
  readonly chartDir: string;
}

/** Makes the plan: renders both ends with the real engines and compares them section by section. */
export async function planUpgrade(opts: PlanOptions): Promise<PlanResult> {
  const roots = new Roots(opts.upstream, opts.schemas);
  const objects = new OrderObjects();
  const findings: Finding[] = [];
  const notes: string[] = [];
  const orders: ComponentOrder[] = [];
  const changes: ComponentChange[] = [];
  const core = yamlFiles(opts.schemas).filter((f) => /definitions\.json$/i.test(f));

  if (!opts.model) {
    // CRDs only: every kind of either set, compared as one component's would be
    const from = opts.fromCrds ?? [];
    const to = opts.toCrds ?? [];
    findings.push(...compareCrdSets('crds', from, to, new Set(), new Set(), {}));
    return { plan: assemble({ mode: 'crds', roots: roots.roots, findings, orders, changes, notes }), manifests: objects.manifests };
  }

  const described = opts.model;
  const engines = await resolveEngines(opts.engines);
  const session = new RenderSession(opts.cacheDir);
  const installName = (c: UpgradeComponent) => `${described.name}-${c.installName}`;
  const live = opts.live;

  // the versions of each planned component: the release the cluster runs (--kubeconfig, --snapshot), the other
  // toolkit's, --from, or the previous release the package carries
  // of all components, those whose release the cluster does not show are left out (said so); one named alone is an error
  const unknown = opts.components.filter((name) => live && live.releases[COMPONENTS[name].key]?.version === undefined);
  if (live && unknown.length > 0 && opts.components.length === 1) {
    const c = COMPONENTS[unknown[0]];
    throw new UpgradePlanFailed(`${c.name}: ${live.source} shows no release of it (${live.releases[c.key]?.evidence ?? 'nothing read'}): `
      + 'read a cluster (or a snapshot) that shows its operator Deployment (kubectl get deployments -A -o yaml), or plan from a release with --from VERSION instead of the cluster');
  }
  for (const name of unknown) notes.push(`${name}: ${live!.source} shows no release of it (${live!.releases[COMPONENTS[name].key]?.evidence ?? 'nothing read'}): not planned`);
  const planned = opts.components.filter((name) => !unknown.includes(name)).map((name) => {
    const c = COMPONENTS[name];
    const pinned = pinnedChart(c.key);
    const running = live?.releases[c.key];
    const runs = running?.version === undefined ? undefined : releaseForm(c.key, running.version);
    if (runs && !runs.ok) throw new UpgradePlanFailed(`${c.name}: ${live!.source} runs ${running!.version} (${running!.evidence}): ${runs.message}`);
    const from = opts.fromToolkit
      ? opts.fromToolkit.versions[c.key] ?? pinned.version
      : runs?.ok ? runs.release.version : opts.from ?? previousReleases(c)[0]?.version ?? pinned.version;
    const chart = releaseChart(c, from);
    return { c, from: chart?.version ?? from, to: pinned.version, fromChart: chart, managed: described.description.installs[c.key] === 'managed', running };
  });
  // the description at both ends: a pre-installed operator's CRs in the form of its release at each (releases.<key>)
  const moving = planned.filter((p) => !p.managed && !opts.fromToolkit && !sameVersion(p.from, p.to));
  const withReleases = (release: (p: (typeof planned)[number]) => string | undefined): ClusterModel => {
    if (moving.length === 0) return described;
    const releases: Record<string, string | undefined> = { ...described.description.releases };
    for (const p of moving) releases[p.c.key] = release(p);
    return withMultiKueue(buildModel({ ...described.description, releases }), described.multiKueue);
  };
  const model = withReleases(() => undefined);
  const cluster = renderCluster(model);
  const toView: ClusterView = { name: cluster.name, model, folders: cluster.folders.map((f) => ({ folder: f.folder, objects: f.objects })) };
  const oldModel = withReleases((p) => p.from);
  const oldCluster = oldModel === model ? cluster : renderCluster(oldModel);
  const oldFolders = oldCluster.folders.map((f) => ({ folder: f.folder, objects: f.objects }));
  for (const p of planned) {
    for (const chart of [p.fromChart, pinnedChart(p.c.key)]) {
      if (chart && !existsSync(path.join(opts.upstream, chart.folder, chart.chartPath, 'Chart.yaml'))) {
        throw new InputError(`${opts.upstream}: no ${chart.folder}/${chart.chartPath} (the ${p.c.name} ${chart.version} chart to plan with): name the upstream installs that hold it (--upstream DIR)`);
      }
    }
    if (!p.fromChart) {
      // a release the package does not carry is bad input (exit 2, docs/commands.md): the flag that named it is wrong
      throw new InputError(`${opts.fromToolkit ? `--from-toolkit: ${p.c.name} ${p.from} (pinned by ${opts.fromToolkit.label})` : `${p.c.name} ${p.from}`}: this toolkit carries no vendored release of it `
        + `(it carries ${[pinnedChart(p.c.key).version, ...previousReleases(p.c).map((r) => r.version)].join(', ')})`);
    }
  }

  // the old end: the other toolkit's render, or this one's with each managed install at its old release and each
  // pre-installed operator's CRs in the form of the release it runs
  const fromView: ClusterView = opts.fromToolkit?.view ?? {
    ...toView,
    model: oldModel,
    folders: oldFolders.map((f) => ({
      folder: f.folder,
      objects: f.objects.map((o) => {
        const p = planned.find((x) => x.managed && o.kind === 'Application' && apiGroup(o.apiVersion) === ARGO && o.metadata.name === installName(x.c));
        return p ? withSource(o, p.from) : o;
      }),
    })),
  };
  const renderOpts = { upstream: opts.upstream, session, cacheDir: opts.cacheDir, engines: opts.engines, reruns: false };
  const [toRenders, fromRenders] = await Promise.all([renderClusterSources(toView, renderOpts), renderClusterSources(fromView, renderOpts)]);
  // fail closed: an Application the engines could not render hides what it applies (ownership, CRs)
  for (const [label, renders] of [['new', toRenders], ['old', fromRenders]] as const) {
    const failed = renders.sources.find((s) => s.problem?.kind === 'failed');
    if (failed) throw new UpgradePlanFailed(`the ${label} end's ${failed.application.metadata.name} (${failed.what}) did not render: ${failed.problem!.message}`);
    for (const s of renders.sources.filter((x) => x.problem)) notes.push(`the ${label} end's ${s.application.metadata.name} is not rendered (${s.problem!.message}): ownership does not see its objects`);
  }
  const kubeVersion = `v${model.description.kubernetesVersion}.0`;
  const ctx = { upstream: opts.upstream, engines, cacheDir: opts.cacheDir, session, kubeVersion };
  const fromLabel = opts.fromToolkit ? opts.fromToolkit.label : 'the old release';

  const sideOf = async (
    c: UpgradeComponent, chart: VendoredChart, version: string, renders: ClusterRenders, view: ClusterView, values: Record<string, unknown> = {},
    namespace: string = NAMESPACES[c.key],
  ): Promise<Side> => {
    const application = view.folders.flatMap((f) => f.objects).find((o) => o.kind === 'Application' && o.metadata.name === installName(c));
    let render = application ? renders.sources.find((s) => s.application.metadata.name === installName(c) && s.type === 'helm') : undefined;
    if (!render) {
      // not installed by this description: the chart with its defaults (or the values the plan advises), in the
      // namespace of its Helm release (the cluster's, else the one this toolkit installs it in)
      const [r] = await renderApplications([chartApplication(chart, version, namespace, values)], ctx);
      render = r;
    }
    if (!render || render.problem) throw new UpgradePlanFailed(`${c.name} ${version}: ${render?.what ?? 'its chart'} did not render: ${render?.problem?.message ?? 'no output'}`);
    const chartDir = path.join(opts.upstream, chart.folder, chart.chartPath);
    const crds = render.objects.filter((o) => o.kind === 'CustomResourceDefinition').flatMap((o) => {
      const file = crdOriginFile(chartDir, o.metadata.name);
      return crdOf(o, file ? roots.name(path.join(chartDir, file)) : `${roots.name(chartDir)} (helm template)`) ?? [];
    });
    const own = render.application.metadata.name === installName(c) ? render.application : undefined;
    return { version, chart, render, application: own, crds, chartDir };
  };

  const ownershipApps: { from: ApplicationObjects[]; to: ApplicationObjects[] } = { from: appObjects(fromRenders), to: appObjects(toRenders) };
  /** The kinds of --from-crds/--to-crds a planned component took. */
  const given = new Set<string>();
  for (const p of planned) {
    const { c } = p;
    if (sameVersion(p.from, p.to)) {
      notes.push(`${c.name}: ${p.to} at both ends${opts.fromToolkit ? ` (${opts.fromToolkit.label} pins it too)` : ''}: nothing to plan`);
      continue;
    }
    changes.push({ component: c.name, from: p.from, to: p.to, install: p.managed ? 'managed' : 'not-managed' });
    const namespace = p.running?.namespace ?? NAMESPACES[c.key];
    const older = await sideOf(c, p.fromChart!, p.from, fromRenders, fromView, {}, namespace);
    let newer = await sideOf(c, pinnedChart(c.key), p.to, toRenders, toView, {}, namespace);
    // 7 (found first: it changes the new end). What the operator's Helm release renders that an Application of this
    // description applies too; the new chart is rendered with the values that let go of it, where it has them
    const helm = p.managed || opts.fromToolkit ? undefined : helmOwnership({
      component: c.name,
      release: p.running?.helmRelease ?? pinnedChart(c.key).chart,
      namespace,
      older,
      newer,
      from: ownershipApps.from,
      to: ownershipApps.to,
      versions: { from: p.from, to: p.to },
      waves: new Map(toView.folders.flatMap((f) => f.objects).filter((o) => o.kind === 'Application' && apiGroup(o.apiVersion) === ARGO).map((o) => [o.metadata.name, syncWave(o)])),
      live: live && { source: live.source, find: (m) => liveObject(live, m) },
      chartFile: (side) => `${roots.name(side.chartDir)} (helm template)`,
    });
    if (helm?.letGo) newer = await sideOf(c, pinnedChart(c.key), p.to, toRenders, toView, helm.letGo.values, namespace);
    if (helm) findings.push(...helm.findings);
    if (!p.managed) {
      notes.push(`${c.name}: installs.${c.key} is not "managed": the charts are rendered with ${helm?.letGo ? `their default values (the ${p.to} one with ${helm.letGo.set}, the values the plan advises)` : 'their default values'}`
        + `${live ? ` and compared with what ${live.source} runs` : ''}, and the operator's own upgrade (its owner's) brings the CRDs`);
    }

    // 1. CRDs: the old ones as the old chart renders them; the new ones from the pinned schemas and the new render
    const pinned = pinnedChart(c.key);
    const claimed = new Set(pinned.unrenderedCrds.filter((u) => u.chartPath === '').flatMap((u) => u.crds).map(crdKey));
    const subchartKinds = new Set([...pinned.unrenderedCrds, ...p.fromChart!.unrenderedCrds].filter((u) => u.chartPath !== '').flatMap((u) => u.crds).map(crdKey));
    const schemaCrds = yamlFiles(path.join(opts.schemas, c.schemaFolder)).flatMap((f) => packagedCrds(f, roots.name(f)))
      .filter((x) => claimed.has(crdKey(x)) || newer.crds.some((r) => crdKey(r) === crdKey(x)));
    const mine = (x: Crd) => {
      const yes = inComponent(x, older.crds, schemaCrds, claimed);
      if (yes) given.add(crdKey(x));
      return yes;
    };
    // the CRDs the cluster serves of the component's kinds, in place of the old chart's (--kubeconfig, --snapshot)
    const seen = (live?.objects ?? []).filter((o) => o.kind === 'CustomResourceDefinition').flatMap((o) => crdOf(o, `${live!.source} CRD ${o.metadata.name}`) ?? [])
      .filter((x) => inComponent(x, older.crds, schemaCrds, claimed));
    // a CRD read without its schemas (a trimmed snapshot) tells nothing to compare: the old release's stands in for it
    const liveCrds = seen.filter((x) => x.versions.every((v) => v.schema !== undefined));
    for (const x of seen.filter((y) => !liveCrds.includes(y))) notes.push(`${c.name}: ${x.file} has no schema: the ${p.from} chart's CRD of ${x.kind} stands in for it`);
    const fromCrds = overridden(overridden(older.crds, liveCrds), (opts.fromCrds ?? []).filter(mine));
    const toCrds = overridden(overridden(newer.crds, schemaCrds), (opts.toCrds ?? []).filter(mine));
    const installApp = newer.application?.metadata.name;
    const syncOptions = (valueAt(newer.application, 'spec.syncPolicy.syncOptions') as string[] | undefined) ?? [];
    const kinds = new Set([...fromCrds, ...toCrds].map(crdKey));
    const notVendoredNew = new Set([...claimed].filter((k) => !toCrds.some((x) => crdKey(x) === k)));
    findings.push(...compareCrdSets(c.name, fromCrds, toCrds, notVendoredNew, subchartKinds, {
      serverSide: syncOptions.includes('ServerSideApply=true'), appliedBy: installApp, versions: { from: p.from, to: p.to },
    }));
    // the CRs of the kinds the release itself brings (its subcharts' kinds are not vendored at either end)
    for (const k of notVendoredNew) kinds.add(k);

    // 2. the CRs of both ends, against the other end's CRDs (defaults applied)
    const crsOf = (renders: ClusterRenders, extra: RenderedSource, prefix: string): RenderedCr[] => {
      const sources = renders.sources.some((s) => s === extra) ? renders.sources : [...renders.sources, extra];
      return sources.filter((s) => !s.problem).flatMap((s) => s.objects
        .filter((o) => o.kind !== 'CustomResourceDefinition' && kinds.has(`${apiGroup(o.apiVersion)}/${o.kind}`))
        .map((o) => ({
          object: o,
          source: s.type === 'folder' ? `${prefix}${s.what.replace(/^folder /, '').replace(/\/+$/, '')}/${manifestFileName(o)}` : `${s.what} (helm template)`,
          // a chart rendered with its defaults (not installed by this description) is applied by no Application
          application: renders.sources.includes(s) ? s.application.metadata.name : undefined,
        })));
    };
    // a pre-installed operator's chart's own copy of what an Application adopts is not what the cluster holds: Argo CD's is
    const adoptedCopy = (cr: RenderedCr, all: readonly RenderedCr[]) => !p.managed && cr.application === undefined
      && all.some((x) => x.application !== undefined && sameObject(x.object, cr.object));
    const rendered = (all: RenderedCr[]) => all.filter((cr) => !adoptedCopy(cr, all));
    // the old end as the cluster holds it: its objects of the component's kinds, each applied by the Application that renders it
    const fromCrs = live
      ? live.objects.filter((o) => o.kind !== 'CustomResourceDefinition' && kinds.has(`${apiGroup(o.apiVersion)}/${o.kind}`)).map((o) => ({
        object: asApplied(o),
        source: `${live.source} ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`,
        application: ownershipApps.from.find((a) => a.objects.some((x) => sameObject(x, o)))?.application,
      }))
      : rendered(crsOf(fromRenders, older.render, opts.fromToolkit ? 'previous render ' : 'render '));
    const toCrs = rendered(crsOf(toRenders, newer.render, 'render '));
    const underNew = new CrdSetValidator(toCrds, core, opts.cacheDir);
    const underOld = new CrdSetValidator(fromCrds, core, opts.cacheDir);
    const newResults = fromCrs.map((cr) => underNew.validate(cr));
    const oldResults = toCrs.map((cr) => underOld.validate(cr));
    findings.push(...revalidationFindings(c.name, { from: p.from, to: p.to }, newResults, oldResults, notVendoredNew, subchartKinds));

    // 3. order
    const waves = new Map(toView.folders.flatMap((f) => f.objects).filter((o) => o.kind === 'Application' && apiGroup(o.apiVersion) === ARGO).map((o) => [o.metadata.name, syncWave(o)]));
    const skipCrds = valueAt(newer.application, 'spec.source.helm.skipCrds') === true;
    const { order, findings: orderFindings } = planOrder({
      component: c.name,
      fromCrds,
      toCrds,
      // what the cluster can hold before: without --from-toolkit the old end is this toolkit's render, whose new-form
      // CRs the old CRDs refuse (the real API server showed it: a NicClusterPolicy with spec.global)
      fromCrs: fromCrs.filter((cr) => underOld.validate(cr).outcome === 'valid'),
      toCrs,
      underOld: oldResults.filter((r) => r.outcome !== 'no-crd' || !notVendoredNew.has(`${apiGroup(r.cr.object.apiVersion)}/${r.cr.object.kind}`)),
      crdApplier: installApp && !skipCrds ? { application: installApp, wave: waves.get(installApp) ?? 0 } : undefined,
      waves,
      objects,
      versions: { from: p.from, to: p.to },
      ...(p.managed ? {} : {
        release: {
          key: c.key,
          prepare: helm?.prepare ?? [],
          upgrade: upgradeCommand(p.running?.helmRelease ?? pinnedChart(c.key).chart, namespace, c.key, p.to, helm?.upgrade.sets ?? [],
            helm?.upgrade.deletes ?? []),
        },
      }),
    });
    orders.push(order);
    findings.push(...orderFindings);
    // the description as given renders the new form already while the cluster runs the old release: its sync fails now
    if (moving.includes(p) && !sameVersion(described.releases[c.key].version, p.from)) {
      const early = oldResults.filter((r) => r.outcome === 'invalid' && r.cr.application !== undefined);
      if (early.length > 0) {
        findings.push({
          section: 'order',
          type: 'order-blocked',
          severity: 'blocker',
          component: c.name,
          subject: early.map((r) => r.cr.application!).filter((a, i, all) => all.indexOf(a) === i).join(', '),
          to: early.map((r) => describeObject(r.cr.object)),
          message: `the description renders ${early.map((r) => describeObject(r.cr.object)).join(', ')} for ${described.releases[c.key].version} `
            + `(releases.${c.key} ${described.description.releases[c.key] === undefined ? 'unset' : described.description.releases[c.key]}) while the operator runs ${p.from}, whose CRD refuses it: `
            + `${early.flatMap((r) => r.problems).join('; ')}: set releases.${c.key}: ${p.from} until the operator's upgrade (the order's first steps)`,
          files: [...new Set(early.flatMap((r) => [r.cr.source, ...(r.file ? [r.file] : [])]))],
        });
      }
    }

    // 4. GPU nodes: the operator CR's operands at both ends, and the charts' DaemonSets
    if (c.operands) {
      const table = c.operands;
      const pick = (crs: RenderedCr[], preferToolkit: boolean) => {
        const own = crs.filter((x) => x.object.kind === table.kind && apiGroup(x.object.apiVersion) === table.group);
        const toolkit = own.find((x) => !x.source.includes('(helm template)'));
        const chart = own.find((x) => x.source.includes('(helm template)'));
        return preferToolkit ? toolkit ?? chart : chart ?? toolkit;
      };
      const operatorCr = (cr: RenderedCr | undefined, crds: readonly Crd[]): OperatorCr | undefined => {
        if (!cr) return undefined;
        const crd = crds.find((x) => crdKey(x) === `${table.group}/${table.kind}`);
        const schema = crd?.versions.find((v) => v.name === cr.object.apiVersion.split('/')[1])?.schema;
        return { object: withDefaults(schema, cr.object), source: cr.source, files: [cr.source, ...(crd ? [crd.file] : [])] };
      };
      const toCr = operatorCr(pick(toCrs, true), toCrds);
      // the old end: the other toolkit's own CR; the cluster's (--kubeconfig, --snapshot); a pre-installed operator's as
      // this description renders it for the old release (what Argo CD keeps in the cluster, not the chart's defaults);
      // for a managed install the old chart's (the toolkit's being the same render at both ends)
      const fromPick = opts.fromToolkit || live || moving.includes(p) ? pick(fromCrs, true) : pick(fromCrs.filter((x) => x.source.includes('(helm template)')), false);
      const fromCr = operatorCr(fromPick, fromCrds);
      if (toCr && fromCr) {findings.push(...operandImpact(c.name, table, fromCr, toCr));} else {
        findings.push({
          section: 'gpu-node-impact',
          type: 'operands-not-compared',
          severity: 'info',
          component: c.name,
          subject: table.kind,
          message: !toCr ? `no ${table.kind} at ${p.to}: no operand runs` : `the ${table.kind} is this description's render at both ends (the ${p.from} chart renders none): its operands change with the toolkit, not with the chart (the toolkit-to-toolkit form, --from-toolkit, compares two renders)`,
          files: toCr ? [...toCr.files] : [],
        });
      }
    }
    const chartFiles = [`${roots.name(older.chartDir)} (helm template)`, `${roots.name(newer.chartDir)} (helm template)`];
    if (live) {
      // the chart's DaemonSets the cluster runs, with the images they run; one the old chart renders and the cluster
      // does not run is switched off by the owner's values: left out at both ends (never pods the cluster does not run)
      const running = (m: Manifest) => live.objects.find((o) => o.kind === 'DaemonSet' && apiGroup(o.apiVersion) === 'apps' && o.metadata.name === m.metadata.name
        && (o.metadata.namespace ?? namespace) === (m.metadata.namespace ?? namespace));
      const isDs = (m: Manifest) => m.kind === 'DaemonSet';
      const off = older.render.objects.filter((m) => isDs(m) && !running(m));
      for (const m of off) notes.push(`${c.name}: ${live.source} runs no DaemonSet ${m.metadata.name}, which the ${p.from} chart renders with its defaults: the owner's values switch it off, so it is left out at both ends`);
      const before = older.render.objects.filter((m) => isDs(m) && running(m)).map((m) => withImages(m, running(m)!));
      const after = newer.render.objects.filter((m) => isDs(m) && !off.some((x) => x.metadata.name === m.metadata.name));
      findings.push(...daemonSetRolls(c.name, before, after, [`${live.source} DaemonSets`, chartFiles[1]]));
    } else {
      findings.push(...daemonSetRolls(c.name, older.render.objects, newer.render.objects, chartFiles));
    }

    // 5. control plane: the webhooks of both renders, and those behind values this render leaves off
    const whatIf = async (side: Side): Promise<ChartSide> => {
      const guards = webhookGuards(side.chartDir).filter((g) => valueAt(valueAt(side.render.application, 'spec.source.helm.valuesObject'), g) !== true);
      const behind = [];
      if (guards.length > 0) {
        const app = withSource(side.render.application, side.version, (v) => {
          for (const g of guards) setValueAt(v, g, true);
        });
        const [r] = await renderApplications([app], ctx);
        if (r && !r.problem) behind.push({ values: guards, objects: r.objects });
      }
      return { objects: side.render.objects, namespace: side.render.namespace, behindValues: behind, files: [`${roots.name(side.chartDir)} (helm template)`] };
    };
    const [oldSide, newSide] = await Promise.all([whatIf(older), whatIf(newer)]);
    findings.push(...webhookImpact(c.name, oldSide, newSide));

    // 6. config defaults: the charts' values, and a configuration file's built-in defaults
    const defaultsOf = (side: Side): DefaultsSide => {
      const file = path.join(side.chartDir, 'values.yaml');
      const factsFile = c.configFile ? path.join(UPSTREAM_FACTS_DIR, side.chart.folder, BUILT_IN_DEFAULTS_FILE) : undefined;
      let builtIn;
      try {
        builtIn = factsFile ? readBuiltInDefaults(readFileSync(factsFile, 'utf8'), side.version, roots.name(factsFile)) : undefined;
      } catch (e) {
        notes.push(`${c.name} ${side.version}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? `${roots.name(factsFile!)} is not generated` : (e as Error).message}: `
          + 'its built-in configuration defaults are not compared');
      }
      return { version: side.version, values: parseYaml(readFileSync(file, 'utf8')), valuesFile: roots.name(file), builtIn };
    };
    const pinnedValues = newer.application ? valueAt(newer.application, 'spec.source.helm.valuesObject') ?? {} : undefined;
    findings.push(...configDefaults(c.name, defaultsOf(older), defaultsOf(newer), pinnedValues,
      c.configFile ? { value: c.configFile.value, parse: (t) => parseYaml(t) as unknown } : undefined));
    // and the manager's feature gates: removed, locked or flipped between the releases, against what it is started with
    if (c.featureGates) {
      const gates = (side: Side) => {
        const file = path.join(VENDORED_DIR, side.chart.folder, c.featureGates!);
        if (!existsSync(file)) throw new UpgradePlanFailed(`${c.name} ${side.version}: ${roots.name(file)} is not vendored: its feature gates cannot be compared`);
        return parseFeatureGates(readFileSync(file, 'utf8'), roots.name(file));
      };
      const configOf = (side: Side) => {
        const text = valueAt(valueAt(side.render.application, 'spec.source.helm.valuesObject'), c.configFile?.value ?? '');
        return typeof text === 'string' ? parseYaml(text) as unknown : undefined;
      };
      // what the manager is started with: the cluster's (its Deployment and configuration, kept by the owner's upgrade),
      // this description's install at each end, or, for a pre-installed Kueue without the cluster, not known
      const liveSet = live ? gatesSet(live.objects, liveConfiguration(live, namespace)) : undefined;
      const fromSet = live ? liveSet : p.managed ? gatesSet(older.render.objects, configOf(older)) : undefined;
      const toSet = p.managed ? gatesSet(newer.render.objects, configOf(newer)) : liveSet;
      const setFrom = (managed: boolean) => (managed ? `${installName(c)}'s values` : live ? `${live.source}'s ${c.name}` : undefined);
      const fail = newer.render.objects.filter((o) => /WebhookConfiguration$/.test(o.kind)
        && (Array.isArray(o.webhooks) ? o.webhooks : []).some((w) => !isJsonObject(w) || w.failurePolicy === undefined || w.failurePolicy === 'Fail'));
      const down = fail.length > 0 ? `its webhooks with failurePolicy Fail (${fail.map((o) => o.metadata.name).join(', ')}) refuse what they intercept` : 'nothing it manages is admitted';
      if (!p.managed && !live) notes.push(`${c.name}: the feature gates the pre-installed ${c.name} is started with are not known without the cluster (--kubeconfig or --snapshot): only their defaults are compared`);
      findings.push(...featureGateFindings(c.name,
        { version: p.from, release: gates(older), set: fromSet, setFrom: live ? setFrom(false) : setFrom(p.managed) },
        { version: p.to, release: gates(newer), set: toSet, setFrom: setFrom(p.managed) }, down));
    }

    tag(ownershipApps.from, c, installName(c), kinds);
    tag(ownershipApps.to, c, installName(c), kinds);
    if (!p.managed) {
      notes.push(`${c.name}: ownership compares the Applications of this description, and what the ${c.name} chart renders (its Helm release, outside Argo CD) with what they apply`);
    }
  }

  // CRDs given on the command line that no planned component brings: compared on their own
  const rest = (crds: readonly Crd[] | undefined) => (crds ?? []).filter((x) => !given.has(crdKey(x)));
  if (rest(opts.fromCrds).length + rest(opts.toCrds).length > 0) findings.push(...compareCrdSets('crds', rest(opts.fromCrds), rest(opts.toCrds), new Set(), new Set(), {}));

  // 7. ownership: an object two Applications apply, at either end
  const store = SchemaStore.open(opts.schemas);
  const scoped = (apiVersion: string, kind: string) => {
    const s = store.lookup(apiVersion, kind)?.scope;
    return s === undefined ? undefined : s === 'Cluster';
  };
  findings.push(...ownership({ from: fromLabel, to: 'the new release' }, ownershipApps.from, ownershipApps.to, scoped));

  return { plan: assemble({ mode: opts.fromToolkit ? 'toolkit' : 'component', cluster: model.name, roots: roots.roots, findings, orders, changes, notes }), manifests: objects.manifests };
}

/** Whether a CRD a user names belongs to a component: a kind it brings (old, pinned or claimed). */
function inComponent(x: Crd, older: readonly Crd[], schema: readonly Crd[], claimed: ReadonlySet<string>): boolean {
  const k = crdKey(x);
  return claimed.has(k) || older.some((c) => crdKey(c) === k) || schema.some((c) => crdKey(c) === k);
}

/** What each Application of a render applies (the sources that rendered). */
function appObjects(renders: ClusterRenders): ApplicationObjects[] {
  return renders.sources.filter((s) => !s.problem)
    .map((s) => ({ application: s.application.metadata.name, app: s.application, namespace: s.namespace, objects: s.objects, source: s.what }));
}

/** Marks the Applications of a component (its install, and those applying its kinds) for the ownership findings. */
function tag(apps: ApplicationObjects[], c: UpgradeComponent, install: string, kinds: ReadonlySet<string>): void {
  for (let i = 0; i < apps.length; i++) {
    const a = apps[i];
    if (a.component) continue;
    if (a.application === install || a.objects.some((o) => kinds.has(`${apiGroup(o.apiVersion)}/${o.kind}`))) apps[i] = { ...a, component: c.name };
  }
}

/** Section 1 for two sets of CRDs. */
function compareCrdSets(
  component: ComponentName | 'crds', from: readonly Crd[], to: readonly Crd[], notVendoredNew: ReadonlySet<string>, subchartKinds: ReadonlySet<string>,
  ctx: { serverSide?: boolean; appliedBy?: string; versions?: { from: string; to: string } },
): Finding[] {
  const out: Finding[] = [];
  const dctx = { component, serverSide: ctx.serverSide, appliedBy: ctx.appliedBy };
  const oldByKind = new Map(from.map((x) => [crdKey(x), x]));
  const newByKind = new Map(to.map((x) => [crdKey(x), x]));
  const v = ctx.versions ?? { from: 'the old CRDs', to: 'the new CRDs' };
  for (const k of [...new Set([...oldByKind.keys(), ...newByKind.keys(), ...notVendoredNew, ...subchartKinds])].sort()) {
    const a = oldByKind.get(k);
    const b = newByKind.get(k);
    if (a && b) {out.push(...diffCrd(a, b, dctx));} else if (b) {out.push(...addedCrd(b, dctx));} else if (a && notVendoredNew.has(k)) {
      out.push({ section: 'crd-changes', type: 'crd-not-vendored', severity: 'info', component, subject: `CRD ${a.name}`, message: `${a.kind}: the ${v.to} CRD is not vendored (neither the chart's crds/ nor a file of the pinned schemas): not compared with ${v.from}'s`, files: [a.file] });
    } else if (a) {out.push(...removedCrd(a, dctx, []));} else {
      const [group, kind] = [k.slice(0, k.lastIndexOf('/')), k.slice(k.lastIndexOf('/') + 1)];
      out.push({
        section: 'crd-changes',
        type: 'crd-not-vendored',
        severity: 'info',
        component,
        subject: `CRD ${kind} (${group})`,
        message: subchartKinds.has(k) ? `${kind}: a subchart's CRD, not vendored at either release (its crds/ was not copied): not compared` : `${kind}: not vendored for ${v.to} and absent from ${v.from}'s CRDs: not compared`,
        files: [],
      });
    }
  }
  return out;
}

/** Section 2: the CRs of each end under the other end's CRDs. */
function revalidationFindings(
  component: ComponentName, v: { from: string; to: string }, underNew: readonly CrResult[], underOld: readonly CrResult[],
  notVendored: ReadonlySet<string>, subcharts: ReadonlySet<string>,
): Finding[] {
  const out: Finding[] = [];
  const kindOf = (r: CrResult) => `${apiGroup(r.cr.object.apiVersion)}/${r.cr.object.kind}`;
  const name = (r: CrResult) => `${r.cr.object.kind} ${r.cr.object.metadata.namespace ? `${r.cr.object.metadata.namespace}/` : ''}${r.cr.object.metadata.name}`;
  const reapplied = new Map(underOld.map((r) => [`${kindOf(r)}/${r.cr.object.metadata.namespace ?? ''}/${r.cr.object.metadata.name}`, r]));
  for (const r of underNew) {
    const files = [r.cr.source, ...(r.file ? [r.file] : [])];
    if (r.outcome === 'no-crd') {
      const why = notVendored.has(kindOf(r)) || subcharts.has(kindOf(r)) ? `its ${v.to} CRD is not vendored` : `${v.to} brings no ${r.cr.object.kind} CRD`;
      out.push({ section: 'revalidation', type: 'not-validated', severity: 'info', component, subject: name(r), message: `${r.cr.source}: not validated against ${v.to}: ${why}`, files });
    } else if (r.outcome === 'valid') {
      out.push({ section: 'revalidation', type: 'valid-under-new-crd', severity: 'info', component, subject: name(r), message: `${r.cr.source}: valid under the ${v.to} CRD (its defaults applied)`, files });
    } else {
      const again = reapplied.get(`${kindOf(r)}/${r.cr.object.metadata.namespace ?? ''}/${r.cr.object.metadata.name}`);
      out.push({
        section: 'revalidation',
        type: 'invalid-under-new-crd',
        severity: again ? 'warning' : 'blocker',
        component,
        subject: name(r),
        message: `${r.cr.source}: invalid under the ${v.to} CRD (its defaults applied): ${r.problems.join('; ')}`
          + (again ? `: the new render applies it again (${again.cr.source}) in the same upgrade` : ': stored as it is, its next update is refused'),
        files,
      });
    }
  }
  const invalid: CrResult[] = [];
  for (const r of underOld) {
    const files = [r.cr.source, ...(r.file ? [r.file] : [])];
    if (r.outcome === 'no-crd' && (notVendored.has(kindOf(r)) || subcharts.has(kindOf(r)))) {
      out.push({ section: 'revalidation', type: 'not-validated', severity: 'info', component, subject: name(r), message: `${r.cr.source}: not validated against ${v.from}: its CRD is not vendored`, files });
    } else if (r.outcome === 'valid') {
      out.push({ section: 'revalidation', type: 'valid-under-old-crd', severity: 'info', component, subject: name(r), message: `${r.cr.source}: valid under the ${v.from} CRD too`, files });
    } else {
      invalid.push(r);
      out.push({
        section: 'revalidation',
        type: 'invalid-under-old-crd',
        severity: 'warning',
        component,
        subject: name(r),
        message: `${r.cr.source}: invalid under the ${v.from} CRD: ${r.outcome === 'no-crd' ? `${v.from} has no ${r.cr.object.kind} CRD` : r.problems.join('; ')}`,
        files,
      });
    }
  }
  if (invalid.length > 0) {
    const list = invalid.map(name).join(', ');
    const files = [...new Set(invalid.flatMap((r) => [r.cr.source, ...(r.file ? [r.file] : [])]))];
    out.push({ section: 'revalidation', type: 'crd-first', severity: 'warning', component, subject: `${v.from} -> ${v.to}`, to: invalid.map(name), message: `CRD first: ${list} of the new render need the ${v.to} CRDs in place before they are applied`, files });
    out.push({
      section: 'revalidation',
      type: 'rollback-blocked',
      severity: 'warning',
      component,
      subject: `${v.to} -> ${v.from}`,
      to: invalid.map(name),
      message: `rollback blocked: once ${list} are stored in the ${v.to} form, going back to the ${v.from} CRDs leaves them invalid (refused on their next update, fields the old schema lacks pruned): roll back the CRs first`,
      files,
    });
  }
  return out;
}

function assemble(p: {
  mode: UpgradePlan['mode']; cluster?: string; roots: Record<string, string>; findings: Finding[]; orders: ComponentOrder[]; changes: ComponentChange[]; notes: string[];
}): UpgradePlan {
  const findings = [...p.findings].sort(compareFindings);
  const count = (s: Finding['severity']) => findings.filter((f) => f.severity === s).length;
  return {
    ...(p.cluster ? { cluster: p.cluster } : {}),
    mode: p.mode,
    components: p.changes,
    roots: p.roots,
    findings,
    order: p.orders,
    summary: { blockers: count('blocker'), warnings: count('warning'), infos: count('info') },
    notes: [...new Set(p.notes)].sort(),
  };
}

/** Whether two manifests are one object (group, kind, name; the namespace where both name one). */
function sameObject(a: Manifest, b: Manifest): boolean {
  return apiGroup(a.apiVersion) === apiGroup(b.apiVersion) && a.kind === b.kind && a.metadata.name === b.metadata.name
    && (a.metadata.namespace === undefined || b.metadata.namespace === undefined || a.metadata.namespace === b.metadata.namespace);
}

/** The object of the live cluster with the identity of `m`. */
function liveObject(live: LiveCluster, m: Manifest): Manifest | undefined {
  return live.objects.find((o) => sameObject(o, m));
}

/** A live object as a client applies it again: without what the server keeps (status, uid, resourceVersion, managedFields, ...). */
function asApplied(o: Manifest): Manifest {
  const { status: _status, ...rest } = o as Manifest & { status?: unknown };
  const { uid: _u, resourceVersion: _r, generation: _g, creationTimestamp: _c, managedFields: _m, selfLink: _s, ...metadata } = o.metadata as Manifest['metadata'] & Record<string, unknown>;
  return { ...rest, metadata } as Manifest;
}

/** A rendered workload with the images a running copy of it runs, container by container (by name). */
function withImages(rendered: Manifest, running: Manifest): Manifest {
  const copy = structuredClone(rendered) as Manifest & { spec?: { template?: { spec?: Record<string, { name?: string; image?: string }[]> } } };
  const live = valueAt(running, 'spec.template.spec') as Record<string, { name?: string; image?: string }[]> | undefined;
  for (const list of ['initContainers', 'containers']) {
    for (const c of copy.spec?.template?.spec?.[list] ?? []) {
      const image = live?.[list]?.find((x) => x.name === c.name)?.image;
      if (image !== undefined) c.image = image;
    }
  }
  return copy;
}

/**
 * The owner's upgrade of a pre-installed operator's Helm release to the pinned chart: its previous values kept on the
 * new chart's defaults (--reset-then-reuse-values), and the values the plan advises (--set).
 */
function upgradeCommand(release: string, namespace: string, key: UpgradeComponent['key'], to: string, sets: readonly string[], deletes: RenderedCr[]) {
  const { chart, repoURL } = VERSIONS[key];
  const ref = repoURL.startsWith('oci://') ? [`${repoURL.replace(/\/+$/, '')}/${chart}`] : [chart, '--repo', repoURL];
  const command = ['helm', 'upgrade', release, ...ref, '--namespace', namespace, '--version', to, '--reset-then-reuse-values', ...sets.flatMap((s) => ['--set', s])];
  return { what: command.join(' '), command, deletes };
}

/** The Kueue manager configuration the cluster runs: a ConfigMap of its namespace holding a `Configuration` (parsed). */
function liveConfiguration(live: LiveCluster, namespace: string): unknown {
  for (const m of live.objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.namespace === namespace)) {
    for (const text of Object.values(isJsonObject(m.data) ? m.data : {})) {
      if (typeof text !== 'string' || !/^kind:\s*Configuration\s*$/m.test(text)) continue;
      try {
        return parseYaml(text) as unknown;
      } catch {
        // not YAML: not the configuration
      }
    }
  }
  return undefined;
}
