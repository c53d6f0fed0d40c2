import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { findDescription } from './find-description';
import { engineLines } from './help';
import { consoleIo, EXIT, Io } from './io';
import { commandHelp, schemaDirs, upstreamDir } from './options';
import { progressOf } from './progress';
import { CHECK } from './specs';
import { defaultCacheDir } from '../cache/compiled-cache';
import { ClusterView, SchemaOf, ScopeOf } from '../check/cluster-view';
import { checkCluster, formatFinding, RULES } from '../check/engine';
import { checkFleet, FLEET_RULES, multiKueueFacts } from '../check/multikueue';
import { renderClusterSources } from '../check/renders';
import { repositoryFindings } from '../check/repository';
import { ClusterFolder, clusterFolders } from '../check/tree';
import { FLEET_FOLDER } from '../components/gitops/plan';
import { describeEngines, EngineBudget, EngineError, LAYER_PACKAGE, MIN_VERSIONS, resolveEngines } from '../engines';
import { CommandStopped, outputFormat } from '../errors';
import { todoWarnings } from '../model/init-todos';
import { openTodos } from '../model/load-models';
import { ClusterModel } from '../model/model';
import { readGitRepo } from '../project/git';
import { projectOf, requireProject } from '../project/project-file';
import { recoverAround } from '../render/write';
import { FLEET_REPORT_FILE } from '../report/fleet';
import { descriptionFiles, InputError, loadModels } from '../synth/pipeline';
import { RenderSession } from '../upstream/render-session';
import { SchemaStore } from '../validate/schemas';

const objectCount = (v: ClusterView) => v.folders.reduce((n, f) => n + f.objects.length, 0);

/**
 * Clusters checked at the same time: while the engines render for some, the rules run over another. Each holds
 * only its own tree while it is checked, so memory does not grow with the fleet.
 */
const IN_FLIGHT = Math.max(2, availableParallelism() + 1);

/**
 * Checks the clusters one after another, IN_FLIGHT at a time, each read when its turn comes (`early`: those read
 * already); results in cluster order. The first error stops every cluster not started yet, and is thrown.
 */
async function streamClusters<R>(
  found: readonly ClusterFolder[], early: (ClusterView | undefined)[], check: (view: ClusterView) => Promise<R>, read: (ms: number) => void,
): Promise<R[]> {
  const results = new Array<R>(found.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < found.length) {
      const i = next++;
      let view = early[i];
      early[i] = undefined;
      if (view === undefined) {
        const r0 = performance.now();
        view = found[i].read();
        read(performance.now() - r0);
      }
      try {
        results[i] = await check(view);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, found.length) }, () => worker().catch((e: unknown) => {
    failed = true;
    throw e;
  })));
  return results;
}

/** Scope and schema look-ups from the schema directories; without an explicit --schemas, only when the default exists. */
function schemaLookups(dirs: string[] | undefined): { scopeOf?: ScopeOf; schemaOf?: SchemaOf } {
  const schemas = schemaDirs(dirs);
  if ((!dirs || dirs.length === 0) && !existsSync(schemas[0])) return {};
  const store = SchemaStore.open(schemas);
  return {
    scopeOf: (apiVersion, kind) => store.lookup(apiVersion, kind)?.scope,
    schemaOf: (apiVersion, kind) => store.lookup(apiVersion, kind)?.schema,
  };
}


/**
 * `check DIR ...`: the cross-object rules over rendered trees read from disk, one cluster per
 * folder, with every Application's charts, overlays and folders rendered by the real engines (helm,
 * kustomize) from the upstream installs folder. The model of each cluster (its capacity) comes from the
 * description of the same name.
 */
export async function runCheck(args: string[], io: Io = consoleIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: CHECK.options, allowPositionals: true });
  if (values.help) {
    io.out(commandHelp(CHECK));
    io.out('');
    io.out(`Engines check renders the Applications with (the pinned ones of ${LAYER_PACKAGE}, helm ${MIN_VERSIONS.helm} and kustomize ${MIN_VERSIONS.kustomize}; `
      + 'one on PATH only when at least as new):');
    for (const l of await engineLines()) io.out(`  ${l}`);
    return EXIT.ok;
  }
  if (values['list-rules']) {
    const width = Math.max(...[...RULES, ...FLEET_RULES].map((r) => r.id.length));
    for (const r of [...RULES, ...FLEET_RULES]) io.out(`${r.id.padEnd(width)} ${r.severity.padEnd(8)} ${r.summary}`);
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  const dirs = positionals.length > 0 ? positionals : [requireProject('check', 'the rendered folders (check DIR ...)').out];
  for (const d of dirs) recoverAround(d, { command: 'check', notify: io.err });
  for (const d of dirs) if (!existsSync(d)) throw new InputError(`check: ${d}: no such folder`);
  const configs = values.config ?? [];
  for (const c of configs) if (!existsSync(c)) throw new InputError(`--config ${c}: no such file`);
  const clusters = configs.length > 0 ? undefined : projectOf()?.clusters;
  const descriptions = configs.length > 0 ? configs : clusters ? descriptionFiles(clusters) : [];
  const models = loadModels(descriptions);
  const todos = openTodos(descriptions);
  const { scopeOf, schemaOf } = schemaLookups(values.schemas);
  const upstream = upstreamDir(values.upstream);

  const t0 = performance.now();
  const found = dirs.flatMap(clusterFolders);
  // the first description of a name, as the model of the cluster of that name
  const byName = new Map<string, ClusterModel>();
  for (const m of models) if (!byName.has(m.name)) byName.set(m.name, m);
  // read until a cluster holds objects: a tree without any is bad input before any engine is looked for
  const early: (ClusterView | undefined)[] = [];
  while (early.length < found.length && !early.some((v) => v !== undefined && objectCount(v) > 0)) early.push(found[early.length].read());
  if (!early.some((v) => v !== undefined && objectCount(v) > 0)) throw new InputError(`check: no rendered objects in ${dirs.join(', ')}`);
  const t1 = performance.now();
  const engines = await resolveEngines().catch((e: unknown) => {
    if (e instanceof EngineError) throw new InputError(`check: no engines to render the Applications with: ${e.message}; put helm >= ${MIN_VERSIONS.helm} and kubectl with kustomize >= ${MIN_VERSIONS.kustomize} on PATH`);
    throw e;
  });
  // one bound for all engine work of the command, whatever the number of clusters, Applications and retries, and
  // one session: each distinct chart, overlay and folder rendered once per run
  const session = new RenderSession(defaultCacheDir(), new EngineBudget());
  const phases = { read: t1 - t0, render: 0, rules: 0 };
  const fleetFolders = new Set(found.filter((f) => f.fleet).map((f) => f.name));
  const progress = progressOf(io.progress, 'check', 'clusters', values.quiet);
  let checked = 0;
  const results = await streamClusters(found, early, async (raw) => {
    const r0 = performance.now();
    const view = { ...raw, model: byName.get(raw.name) };
    progress?.activity(`rendering the Applications of ${view.name} with helm and kustomize (${checked}/${found.length} folders checked)`);
    const renders = await renderClusterSources(view, { scopeOf, upstream, session });
    // past the command's bound every render left is refused: the rules would report the bound, not the tree
    if (session.budget.spent) throw new CommandStopped(`check: ${session.budget.message()}`);
    const r1 = performance.now();
    const clusterFindings = checkCluster(view, { scopeOf, schemaOf, renders });
    phases.render += r1 - r0;
    phases.rules += performance.now() - r1;
    checked++;
    return {
      name: view.name,
      fleet: fleetFolders.has(view.name),
      model: view.model !== undefined,
      objects: objectCount(view),
      rendered: renders.sources.filter((x) => x.problem === undefined).length,
      upstream: renders.upstream !== undefined,
      queues: view.folders.some((f) => f.objects.some((m) => m.kind === 'ClusterQueue')),
      dir: view.dir,
      findings: clusterFindings,
      multiKueue: multiKueueFacts(view),
    };
  }, (ms) => {
    phases.read += ms;
  }).finally(() => progress?.end());
  // across a MultiKueue fleet: the facts each cluster left, and the fleet page of each output root checked whole
  const roots = dirs.filter((d) => found.some((c) => c.name === FLEET_FOLDER && existsSync(path.join(d, FLEET_FOLDER))));
  const page = roots.map((d) => path.join(d, FLEET_FOLDER, FLEET_REPORT_FILE)).find((f) => existsSync(f));
  const fleetFindings = checkFleet({
    facts: results.flatMap((r) => (r.multiKueue ? [r.multiKueue] : [])),
    clusters: new Set(results.map((r) => r.name).filter((n) => n !== FLEET_FOLDER)),
    complete: roots.length > 0,
    fleetPage: page === undefined ? undefined : readFileSync(page, 'utf8'),
  });
  const t3 = performance.now();
  // where Argo CD reads each described cluster from, against where this checkout pushes (its .git files, nothing run)
  const sources = models.map(({ name, description: { gitops: { repoURL, targetRevision } } }) => ({ cluster: name, repoURL, targetRevision }));
  const repository = repositoryFindings(readGitRepo(projectOf()?.root ?? process.cwd()), sources);
  const findings = [...results.flatMap((r) => r.findings), ...fleetFindings, ...repository];
  const objects = results.reduce((n, r) => n + r.objects, 0);
  const rendered = results.reduce((n, r) => n + r.rendered, 0);
  const timings = { ...phases, total: t3 - t0 };
  const errors = findings.filter((f) => f.severity === 'error');
  // every warning printed: the rules' and one per open TODO(init) line
  const warnings = findings.length - errors.length + todos.length;
  const hasUpstream = results.some((r) => r.upstream);
  // the fleet folder (dist/fleet/) is checked with the clusters, and is none of them
  const clusterResults = results.filter((r) => !r.fleet);
  const fleet = results.filter((r) => r.fleet).map((r) => r.name);
  if (format === 'json') {
    const engine = (e: typeof engines.helm) => ({ version: e.version, path: e.path, source: e.source, ...(e.via ? { via: e.via } : {}) });
    io.out(JSON.stringify({
      clusters: clusterResults.map((r) => ({ name: r.name, model: r.model })),
      fleet,
      objects,
      engines: { helm: engine(engines.helm), kustomize: engine(engines.kustomize) },
      upstream: hasUpstream ? upstream : null,
      renderedSources: rendered,
      // where the renders came from, by kind: engine runs, the cache, this run's renders of the same input
      renders: session.counts,
      timings,
      errors: errors.length,
      warnings,
      findings,
      todos,
    }, undefined, 2));
  } else {
    for (const f of findings) if (f.severity === 'error' || !values.quiet) (f.severity === 'error' ? io.err : io.out)(formatFinding(f));
    if (!values.quiet) for (const l of todoWarnings(todos)) io.out(l);
    for (const v of results) {
      if (v.model || values.quiet || !v.queues) continue;
      // a tree rendered with --config FILE --out DIR: say which --config gives the capacity rules the cluster's description
      const described = v.dir === undefined ? undefined : findDescription(v.name, v.dir);
      const where = configs.length > 0 ? 'none of the --config descriptions is'
        : clusters ? `no description in ${path.relative(process.cwd(), clusters) || clusters} is` : 'no project file, so no description is';
      io.out(`note: ${v.name}: ${where} named "${v.name}", so the capacity rules fall back to the queues' quotas; `
        + (described ? `add --config ${described} (it names ${v.name})` : `add --config FILE, the description ${v.name} was rendered from`));
    }
    if (!values.quiet && !hasUpstream) {
      io.out(`note: no upstream installs at ${upstream}: charts and git overlays are not rendered, so their rules see nothing of them (--upstream DIR)`);
    }
    if (!values.quiet) {
      for (const l of describeEngines(engines)) io.out(`engine: ${l}`);
      io.out(`${errors.length === 0 ? 'ok' : 'FAILED'}: ${clusterResults.length} cluster(s)${fleet.map((f) => ` and ${f}/`).join('')}, ${objects} objects, ${rendered} Application sources rendered, ${errors.length} errors, `
        + `${warnings} warnings (${(timings.total / 1000).toFixed(2)} s, rendering ${(timings.render / 1000).toFixed(2)} s)`);
    }
  }
  return errors.length === 0 ? EXIT.ok : EXIT.failed;
}
