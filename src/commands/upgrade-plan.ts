import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { consoleIo, EXIT, Io } from './io';
import { commandHelp, schemaDirs, upstreamDir } from './options';
import { progressOf } from './progress';
import { UPGRADE_PLAN } from './specs';
import { defaultCacheDir } from '../cache/compiled-cache';
import { EngineError, LAYER_PACKAGE, MIN_VERSIONS, resolveEngines } from '../engines';
import { InputError, outputFormat } from '../errors';
import { loadModels } from '../model/load-models';
import { ClusterSource, clusterSource, normalizeKubeconfigArg, readClusterState } from '../preflight/command';
import { runningReleases } from '../preflight/operator-releases';
import { Manifest } from '../render/manifest';
import { COMPONENTS, pinnedChart, previousReleases, releaseChart, sameVersion } from '../upgrade/components';
import { userCrds } from '../upgrade/crd-sets';
import { formatPlan } from '../upgrade/format';
import { loadFromToolkit, LoadedToolkit } from '../upgrade/from-toolkit';
import { planUpgrade, UpgradePlanFailed } from '../upgrade/plan';
import { ComponentName, LiveCluster, UPGRADE_COMPONENTS } from '../upgrade/types';

/** The components of --component (default all); an unknown name is bad input. */
function componentsOf(value: string | undefined): ComponentName[] {
  if (value === undefined || value === 'all') return [...UPGRADE_COMPONENTS];
  if ((UPGRADE_COMPONENTS as readonly string[]).includes(value)) return [value as ComponentName];
  throw new InputError(`--component ${value}: expected ${UPGRADE_COMPONENTS.join(', ')} or all`);
}

/** The releases a component can be planned between, for messages. */
const carried = (name: ComponentName) => [...previousReleases(COMPONENTS[name]).map((p) => p.version), pinnedChart(COMPONENTS[name].key).version].join(', ');

/**
 * `upgrade-plan`: an upgrade planned from the real renders of both ends (src/upgrade/plan.ts). Exit 0 with a plan
 * that has no blocker, 1 with one (or when an engine fails: no plan from half the facts), 2 for bad input.
 */
export async function runUpgradePlan(args: string[], io: Io = consoleIo): Promise<number> {
  const { values } = parseArgs({ args: normalizeKubeconfigArg(args), options: UPGRADE_PLAN.options, allowPositionals: false });
  if (values.help) {
    io.out(commandHelp(UPGRADE_PLAN));
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  const config = values.config;
  const toolkitDir = values['from-toolkit'];
  const crdsOnly = config === undefined && (values['from-crds'] !== undefined || values['to-crds'] !== undefined);
  if (config === undefined && !crdsOnly) throw new InputError('upgrade-plan: name the description of the cluster (--config FILE), or the CRDs to compare (--from-crds PATH --to-crds PATH)');
  if (crdsOnly) {
    if (values['from-crds'] === undefined || values['to-crds'] === undefined) throw new InputError(`--${values['from-crds'] === undefined ? 'to' : 'from'}-crds without --config: name both --from-crds and --to-crds (or the description, --config FILE)`);
    const extra = (['component', 'from', 'to', 'from-toolkit'] as const).find((k) => values[k] !== undefined);
    if (extra) throw new InputError(`--${extra} needs the description of the cluster (--config FILE)`);
  }
  const reads = values.snapshot !== undefined || values.kubeconfig !== undefined;
  if (reads) {
    if (config === undefined) throw new InputError(`--${values.snapshot !== undefined ? 'snapshot' : 'kubeconfig'} needs the description of the cluster (--config FILE)`);
    const extra = (['from', 'to', 'from-toolkit', 'from-crds'] as const).find((k) => values[k] !== undefined);
    if (extra) throw new InputError(`--${extra} and --${values.snapshot !== undefined ? 'snapshot' : 'kubeconfig'}: the cluster tells what it runs; leave out --${extra}`);
  }
  const components = componentsOf(values.component);
  if ((values.from !== undefined || values.to !== undefined) && toolkitDir !== undefined) {
    throw new InputError(`--from-toolkit ${toolkitDir} gives the old releases (those it pins): leave out --${values.from !== undefined ? 'from' : 'to'}`);
  }
  if ((values.from !== undefined || values.to !== undefined) && components.length !== 1) {
    throw new InputError(`--${values.from !== undefined ? 'from' : 'to'} names a release of one component: add --component ${UPGRADE_COMPONENTS.join('|')} (with all, each goes from its previous release to the pinned one)`);
  }
  const [single] = components;
  if (values.to !== undefined && !sameVersion(values.to, pinnedChart(COMPONENTS[single].key).version)) {
    throw new InputError(`--to ${values.to}: this toolkit renders ${single} ${pinnedChart(COMPONENTS[single].key).version} only (the release it pins)`);
  }
  if (values.from !== undefined && !releaseChart(COMPONENTS[single], values.from)) {
    throw new InputError(`--from ${values.from}: no vendored release of ${single} ${values.from} in this toolkit (it carries ${carried(single)})`);
  }
  if (config !== undefined && !existsSync(config)) throw new InputError(`--config ${config}: no such file`);
  const model = config === undefined ? undefined : loadModels([config])[0];
  const fromCrds = values['from-crds'] ? userCrds(values['from-crds'], '--from-crds') : undefined;
  const toCrds = values['to-crds'] ? userCrds(values['to-crds'], '--to-crds') : undefined;
  const upstream = upstreamDir(values.upstream);
  const [schemas] = schemaDirs(undefined);
  if (model) {
    await resolveEngines().catch((e: unknown) => {
      if (e instanceof EngineError) throw new InputError(`upgrade-plan: no engines to render the charts with: ${e.message}; put helm >= ${MIN_VERSIONS.helm} on PATH (or install ${LAYER_PACKAGE})`);
      throw e;
    });
  }
  // the cluster as read: what it runs is the old end (read before anything is rendered: an unreachable one is one line at once)
  const live = reads ? await liveCluster(clusterSource(values, 'upgrade-plan'), schemas, upstream) : undefined;
  let toolkit: LoadedToolkit | undefined;
  let result;
  const progress = progressOf(io.progress, 'upgrade-plan', undefined, values.quiet);
  try {
    progress?.activity(toolkitDir !== undefined ? `rendering ${config} with the toolkit of ${toolkitDir}`
      : model ? `rendering ${components.join(', ')} at both releases with helm, and comparing them` : 'comparing the CRDs');
    toolkit = toolkitDir !== undefined && model ? await loadFromToolkit(toolkitDir, config!, model) : undefined;
    result = await planUpgrade({
      model,
      components,
      from: values.from,
      to: values.to,
      fromToolkit: toolkit,
      live,
      fromCrds,
      toCrds,
      upstream,
      schemas,
      cacheDir: defaultCacheDir(),
    });
  } catch (e) {
    if (e instanceof UpgradePlanFailed) {
      io.err(`error: ${e.message}`);
      return EXIT.failed;
    }
    throw e;
  } finally {
    progress?.end();
    toolkit?.dispose();
  }
  const { plan } = result;
  if (format === 'json') io.out(JSON.stringify(plan, undefined, 2));
  else if (values.quiet) for (const f of plan.findings.filter((x) => x.severity === 'blocker')) io.err(`blocker: ${f.component}: ${f.subject}: ${f.message}`);
  else for (const l of formatPlan(plan, { verbose: values.verbose })) io.out(l);
  return plan.summary.blockers > 0 ? EXIT.failed : EXIT.ok;
}

/** A kind upgrade-plan reads besides what preflight always reads (the chart's DaemonSets that run). */
const DAEMONSETS: Manifest = { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'upgrade-plan' } };

/**
 * The cluster as upgrade-plan plans from it: read as preflight reads it (the CRDs, the operators' CRs and Deployments,
 * and the DaemonSets), with the release each operator runs.
 */
export async function liveCluster(source: ClusterSource, schemas: string, upstream: string): Promise<LiveCluster> {
  const state = await readClusterState(source, [DAEMONSETS]);
  const running = runningReleases(state, { schemas, upstream });
  const releases = Object.fromEntries(Object.entries(running).map(([key, r]) => [key, {
    ...(r.version !== undefined ? { version: r.version } : {}),
    evidence: r.evidence,
    ...(r.deployment ? { namespace: r.deployment.namespace } : {}),
    ...(r.deployment?.helm ? { helmRelease: r.deployment.helm.release } : {}),
  }]));
  return { source: state.source, objects: state.objects, releases };
}
