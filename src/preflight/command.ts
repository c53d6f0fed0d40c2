import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatPreflightFinding, preflight, PREFLIGHT_RULES } from './engine';
import { LiveOptions, readLive } from './live';
import type { CrdFileOf } from './remedies';
import { readSnapshot } from './snapshot';
import { ClusterState } from './state';
import { defaultCacheDir } from '../cache/compiled-cache';
import { consoleIo, EXIT, Io } from '../commands/io';
import { commandHelp } from '../commands/options';
import { progressOf } from '../commands/progress';
import { LIVE_TIMEOUT_MS, PREFLIGHT } from '../commands/specs';
import { InputError, outputFormat } from '../errors';
import { DEFAULT_SCHEMAS } from '../paths';
import { Manifest } from '../render/manifest';
import { loadModels, renderModel } from '../synth/pipeline';
import { SchemaStore } from '../validate/schemas';

/** The CRD file of a kind in the schema folder the toolkit validates with, opened only when a fix asks (none without the folder). */
function crdFiles(): CrdFileOf | undefined {
  if (!existsSync(DEFAULT_SCHEMAS)) return undefined;
  let store: SchemaStore | undefined;
  return (apiVersion, kind) => {
    store ??= SchemaStore.open(DEFAULT_SCHEMAS);
    const source = store.lookup(apiVersion, kind)?.source;
    return source !== undefined && /\.ya?ml$/.test(source) ? source : undefined;
  };
}


export interface ClusterSourceValues {
  readonly snapshot?: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly timeout?: string;
}

/**
 * `--kubeconfig` may be given without a path (the default kubeconfig, as kubectl): node's parseArgs
 * needs a value, so a bare `--kubeconfig` followed by another option or nothing becomes `--kubeconfig=`.
 */
export function normalizeKubeconfigArg(args: readonly string[]): string[] {
  return withOptionalValue(args, '--kubeconfig', '');
}

/** An option whose value may be left out (`--kubeconfig [PATH]`, `--from [REV]`): given alone, last or before another option, it is `absent`. */
export function withOptionalValue(args: readonly string[], option: string, absent: string): string[] {
  return args.map((a, i) => (a === option && (i + 1 >= args.length || args[i + 1].startsWith('--')) ? `${option}=${absent}` : a));
}

/** Where the cluster state comes from: a snapshot file (read now) or a live API server (read asynchronously). */
export type ClusterSource = { readonly snapshot: string } | { readonly live: LiveOptions };

export function clusterSource(values: ClusterSourceValues, command: string, defaultTimeoutMs = LIVE_TIMEOUT_MS): ClusterSource {
  if (values.snapshot !== undefined && values.kubeconfig !== undefined) throw new InputError(`${command}: give --snapshot FILE or --kubeconfig [PATH], not both`);
  if (values.snapshot === undefined && values.kubeconfig === undefined) throw new InputError(`${command}: name the cluster: --snapshot FILE or --kubeconfig [PATH] [--context NAME]`);
  if (values.context !== undefined && values.kubeconfig === undefined) throw new InputError('--context needs --kubeconfig');
  if (values.snapshot !== undefined) {
    if (values.timeout !== undefined) throw new InputError('--timeout needs --kubeconfig');
    return { snapshot: values.snapshot };
  }
  let timeoutMs = defaultTimeoutMs;
  if (values.timeout !== undefined) {
    const s = Number(values.timeout);
    if (!Number.isFinite(s) || s <= 0 || s > 600) throw new InputError(`--timeout ${values.timeout}: expected seconds from 0 to 600`);
    timeoutMs = Math.round(s * 1000);
  }
  return { live: { kubeconfig: values.kubeconfig === '' ? undefined : values.kubeconfig, context: values.context, timeoutMs } };
}

/** Reads the state synchronously for a snapshot, or returns a promise for a live read; `maxNodes`: refused beyond, counted while read. */
export function readClusterState(source: ClusterSource, rendered: readonly Manifest[], maxNodes?: number): ClusterState | Promise<ClusterState> {
  return 'snapshot' in source ? readSnapshot(source.snapshot, maxNodes) : readLive({ ...source.live, maxNodes }, rendered);
}


/**
 * `preflight --config FILE (--snapshot FILE | --kubeconfig [PATH] [--context NAME])`: what synth would
 * render, compared with what the cluster holds. Read-only. Exit 0 without blocking findings, 1 with.
 */
export function runPreflight(argv: string[], io: Io = consoleIo): number | Promise<number> {
  const { values } = parseArgs({ args: normalizeKubeconfigArg(argv), options: PREFLIGHT.options });
  if (values.help) {
    io.out(commandHelp(PREFLIGHT));
    return EXIT.ok;
  }
  if (values['list-rules']) {
    for (const r of PREFLIGHT_RULES) io.out(`${r.id.padEnd(30)} ${r.family.padEnd(15)} ${r.summary}`);
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  if (!values.config) throw new InputError('preflight: name the description: --config FILE');
  if (!existsSync(values.config)) throw new InputError(`--config ${values.config}: no such file`);
  const source = clusterSource(values, 'preflight');
  const [model] = loadModels([values.config]);
  const cluster = renderModel(model);
  const report = (state: ClusterState): number => {
    const findings = preflight(cluster, state, undefined, { crdFileOf: crdFiles(), cacheDir: defaultCacheDir() });
    const errors = findings.filter((f) => f.severity === 'error').length;
    if (format === 'json') {
      const summary = { cluster: model.name, source: state.source, objects: state.objects.length, errors, warnings: findings.length - errors };
      io.out(JSON.stringify({ ...summary, findings }, undefined, 2));
    } else {
      for (const f of findings.filter((x) => x.severity === 'error' || !values.quiet)) for (const line of formatPreflightFinding(f)) (f.severity === 'error' ? io.err : io.out)(line);
      if (!values.quiet) {
        io.out(`${errors === 0 ? 'ok' : 'BLOCKED'}: ${model.name} against ${state.source} (${state.objects.length} objects): `
          + `${errors} blocking finding(s), ${findings.length - errors} warning(s)`);
      }
    }
    return errors === 0 ? EXIT.ok : EXIT.failed;
  };
  const state = readClusterState(source, cluster.folders.flatMap((f) => f.objects));
  if (state instanceof ClusterState) return report(state);
  // a live read waits on the API server: on a terminal, a line says so
  const progress = progressOf(io.progress, 'preflight', undefined, values.quiet);
  progress?.activity('reading the cluster (GET requests only)');
  return state.finally(() => progress?.end()).then(report);
}
