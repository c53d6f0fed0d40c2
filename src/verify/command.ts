import { existsSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { verifyCluster } from './dry-run';
import { verifyText } from './format';
import { defaultCacheDir } from '../cache/compiled-cache';
import { ClusterView } from '../check/cluster-view';
import { renderClusterSources } from '../check/renders';
import { clusterFolders, readClusters } from '../check/tree';
import { consoleIo, EXIT, Io } from '../commands/io';
import { commandHelp, schemaDirs, upstreamDir } from '../commands/options';
import { progressOf } from '../commands/progress';
import { VERIFY, VERIFY_TIMEOUT_MS } from '../commands/specs';
import { EngineBudget, EngineError, MIN_VERSIONS, resolveEngines } from '../engines';
import { InputError, outputFormat, printable } from '../errors';
import { scratchFolder } from '../files';
import { isJsonObject } from '../json';
import { ClusterModel } from '../model/model';
import { clusterSource, normalizeKubeconfigArg } from '../preflight/command';
import { loadKubeConfig } from '../preflight/kubeconfig';
import { LiveClock, openLive } from '../preflight/live';
import { projectOf, requireProject } from '../project/project-file';
import { recoverAround } from '../render/write';
import { descriptionFiles, loadModels, synth } from '../synth/pipeline';
import { RenderSession } from '../upstream/render-session';

const objectCount = (v: ClusterView) => v.folders.reduce((n, f) => n + f.objects.length, 0);

/** The rendered cluster of a folder: a cluster folder, or an output folder that holds exactly one cluster. */
function renderedCluster(dir: string): ClusterView {
  recoverAround(dir, { command: 'verify' });
  if (!existsSync(dir)) throw new InputError(`verify: ${dir}: no such folder`);
  const found = clusterFolders(dir).filter((c) => !c.fleet);
  if (found.length > 1) {
    throw new InputError(`verify: ${dir} holds ${found.length} clusters (${found.map((c) => c.name).join(', ')}): name the one the kubeconfig reaches, `
      + `e.g. verify ${path.join(dir, found[0].name)}`);
  }
  const view = found[0]?.read();
  if (!view || objectCount(view) === 0) throw new InputError(`verify: no rendered objects in ${dir}`);
  // the description of the same name in the project gives gitops.path and the Kubernetes version helm renders for
  const project = projectOf();
  const model = project ? loadModels(descriptionFiles(project.clusters)).find((m) => m.name === view.name) : undefined;
  return { ...view, model };
}

/**
 * Asks the live server for its version once (a session of its own, closed at once): throws its one line when it does
 * not answer, or answers as no Kubernetes API server does (a web server, a proxy with a path: no `gitVersion`).
 */
async function serverAnswers(live: Parameters<typeof openLive>[0]): Promise<void> {
  const session = await openLive(live);
  try {
    const version = await session.get('/version');
    const git = isJsonObject(version) ? version.gitVersion : undefined;
    if (typeof git !== 'string' || !/^v\d+\.\d+\.\d+/.test(git) || !isJsonObject(version) || typeof version.major !== 'string' || typeof version.minor !== 'string') {
      throw new InputError(`${session.server}: GET /version answers ${version === undefined ? 'HTTP 404' : 'no Kubernetes version (gitVersion, major, minor)'}, `
        + `as no Kubernetes API server does: is the address in ${session.where} the API server's (no path after the port, not a proxy or a web server)?`);
    }
  } finally {
    session.close();
  }
}

/**
 * `verify [DIR | --config FILE] --kubeconfig [PATH] [--context NAME]`: the rendered cluster dry-run against the live
 * one as Argo CD would sync it (src/verify/dry-run.ts). Exit 1 when the API server would refuse an object.
 */
export async function runVerify(argv: string[], io: Io = consoleIo): Promise<number> {
  const { values, positionals } = parseArgs({ args: normalizeKubeconfigArg(argv), options: VERIFY.options, allowPositionals: true });
  if (values.help) {
    io.out(commandHelp(VERIFY));
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  if (positionals.length > 1) throw new InputError(`verify: one rendered cluster at a time (got ${positionals.map(printable).join(', ')})`);
  if (positionals.length > 0 && values.config !== undefined) throw new InputError('verify: give the rendered cluster (DIR) or --config FILE, not both');
  if (values.kubeconfig === undefined) throw new InputError('verify: name the live cluster: --kubeconfig [PATH] [--context NAME]');
  const source = clusterSource({ kubeconfig: values.kubeconfig, context: values.context, timeout: values.timeout }, 'verify', VERIFY_TIMEOUT_MS);
  if (!('live' in source)) throw new Error('verify reads a live cluster only');
  if (values.config !== undefined && !existsSync(values.config)) throw new InputError(`--config ${values.config}: no such file`);
  const upstream = upstreamDir(values.upstream);
  // the kubeconfig is bad input before anything is rendered (the deadline starts once it is loaded for the run)
  await loadKubeConfig(source.live);
  // one --timeout for the run's sessions together: the question before the renders and the dry run after them
  const live = { ...source.live, clock: new LiveClock(source.live.timeoutMs) };

  let work: string | undefined;
  const progress = progressOf(io.progress, 'verify', 'objects dry-run', values.quiet);
  try {
    // what is read here first (the description, or the rendered folder), then the server asked once, then the renders:
    // bad input, an unreachable server or refused credentials are one line before anything is rendered
    const config = values.config;
    const input: { readonly config: string; readonly model: ClusterModel } | { readonly view: ClusterView } = config !== undefined
      ? { config, model: loadModels([config])[0] }
      : { view: renderedCluster(positionals[0] ?? requireProject('verify', 'the rendered cluster (verify DIR) or --config FILE').out) };
    progress?.activity('asking the API server for its version');
    await serverAnswers(live);
    let view: ClusterView;
    if ('view' in input) {
      view = input.view;
    } else {
      progress?.activity(`rendering ${input.config}`);
      // a folder of this process: what a killed run left is removed by the next
      work = scratchFolder('gpu-cluster-manifests-verify');
      const out = path.join(work, 'dist');
      synth({ configs: [input.config], models: [input.model], out, schemas: schemaDirs(undefined), notify: io.err });
      view = { ...readClusters(out).find((c) => c.name === input.model.name)!, model: input.model };
    }
    await resolveEngines().catch((e: unknown) => {
      if (e instanceof EngineError) throw new InputError(`verify: no engines to render the Applications with: ${e.message}; put helm >= ${MIN_VERSIONS.helm} and kubectl with kustomize >= ${MIN_VERSIONS.kustomize} on PATH`);
      throw e;
    });
    progress?.activity(`rendering the Applications of ${view.name} with helm and kustomize`);
    const renders = await renderClusterSources(view, { upstream, session: new RenderSession(defaultCacheDir(), new EngineBudget()), reruns: false });
    // what did not render cannot be verified: never a partial verification
    const failed = renders.sources.find((s) => s.problem !== undefined);
    if (failed) throw new InputError(`verify: ${view.name}: ${failed.what} of Application ${failed.application.metadata.name} did not render: ${failed.problem!.message}`);

    const session = await openLive(live);
    let result;
    try {
      progress?.activity(`sending the objects of ${view.name} to ${session.server} (dry run)`);
      result = await verifyCluster(view, renders.sources, session, (done, total) => progress?.update(done, total, 'dry run'));
    } finally {
      session.close();
    }
    const errors = result.findings.filter((f) => f.severity === 'error').length;
    if (format === 'json') {
      io.out(JSON.stringify({ cluster: view.name, server: session.server, counts: result.counts, errors, findings: result.findings }, undefined, 2));
    } else {
      const text = verifyText(view.name, session.server, result, { verbose: values.verbose, quiet: values.quiet });
      for (const l of text.err) io.err(l);
      for (const l of text.out) io.out(l);
    }
    return errors === 0 ? EXIT.ok : EXIT.failed;
  } finally {
    progress?.end();
    if (work) rmSync(work, { recursive: true, force: true });
  }
}
