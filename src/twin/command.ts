import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { ControlPlaneBuildError, goCommand, requiredGoVersion, twinBinaries, usePrebuiltBinaries } from './binary';
import { nodesFromCluster } from './cluster-nodes';
import type { DescriptionAtRevision, rehearse } from './rehearse';
import { CheckFailed } from '../check/engine';
import { consoleIo, EXIT, Io } from '../commands/io';
import { commandHelp } from '../commands/options';
import { progressOf } from '../commands/progress';
import { REHEARSE, REHEARSE_CHANGE_TIMEOUT_MS, REHEARSE_MANAGED_TIMEOUT_MS, REHEARSE_MAX_TIMEOUT_MS, REHEARSE_TIMEOUT_MS } from '../commands/specs';
import { InputError } from '../errors';
import { scratchFolder } from '../files';
import { maxBytes } from '../input/limits';
import { asInputError, decodeInput } from '../input/read';
import { FLEET_FILE, isDescriptionFile } from '../model/description-files';
import { ClusterModel } from '../model/model';
import { MAX_NODES } from '../model/schema-types';
import { clusterSource, normalizeKubeconfigArg, readClusterState, withOptionalValue } from '../preflight/command';
import { ClusterState } from '../preflight/state';
import { checkFailedInput, checkModels, loadModels } from '../synth/pipeline';

/** Go's version as `go env GOVERSION` says it (go1.26.8), or undefined. */
function goVersion(go: string): string | undefined {
  const r = spawnSync(go, ['env', 'GOVERSION'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, GOTOOLCHAIN: 'local' } });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Whether `have` (go1.26.8) is at least `need` (1.26). */
function atLeast(have: string, need: string): boolean {
  const a = have.replace(/^go/, '').split(/[.a-z]/).map(Number);
  const b = need.split('.').map(Number);
  for (let i = 0; i < b.length; i++) if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) > b[i];
  return true;
}

/** Runs git with an argument list (no shell) in `cwd`; answers its status and output (bounded). */
function git(cwd: string, args: readonly string[], maxBuffer = 1024 * 1024): { status: number | null; stdout: Buffer; stderr: string } {
  const r = spawnSync('git', args, { cwd, timeout: 60_000, maxBuffer, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' } });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') throw new InputError('--from: no git command on PATH (change mode reads the description at a commit of its Git repository)');
  return { status: r.error ? null : r.status, stdout: r.stdout ?? Buffer.alloc(0), stderr: (r.stderr ?? Buffer.alloc(0)).toString() };
}

/**
 * The description file as it is at commit `rev` of the Git repository holding it (`git cat-file`, an argument list,
 * `rev` never an option: refused when it starts with "-", and after --end-of-options), bounded as a description file
 * is, decoded as one. Bad input (exit 2, one line): an option-like or unknown revision, a file outside a Git repository
 * or absent at that commit.
 */
export function descriptionAtRevision(file: string, rev: string): DescriptionAtRevision {
  if (rev === '' || rev.startsWith('-')) throw new InputError(`--from ${rev}: expected a commit (a branch, a tag, HEAD~1, a SHA), not an option`);
  if (/[\x00-\x1f\x7f]/.test(rev)) throw new InputError('--from: a commit has no control characters');
  const real = realpathSync(file);
  const top = git(path.dirname(real), ['rev-parse', '--show-toplevel']);
  if (top.status !== 0) throw new InputError(`--from ${rev}: ${file} is not in a Git repository (change mode reads the description at a commit)`);
  const root = top.stdout.toString().trim();
  const commit = git(root, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`]);
  if (commit.status !== 0) throw new InputError(`--from ${rev}: no such commit in ${root}`);
  const sha = commit.stdout.toString().trim();
  const rel = path.relative(realpathSync(root), real).split(path.sep).join('/');
  const label = `${rev}:${rel}`;
  const size = git(root, ['cat-file', '-s', '--end-of-options', `${sha}:${rel}`]);
  if (size.status !== 0) throw new InputError(`--from ${rev}: ${rel} does not exist at ${sha.slice(0, 12)}`);
  const max = maxBytes('description');
  if (Number(size.stdout.toString().trim()) > max) throw new InputError(`${label}: larger than ${max} bytes, far more than a cluster description needs`);
  const blob = git(root, ['cat-file', 'blob', '--end-of-options', `${sha}:${rel}`], max + 1);
  if (blob.status !== 0) throw new InputError(`${label}: git cat-file failed: ${blob.stderr.split('\n')[0]}`);
  return { text: asInputError(label, () => decodeInput(label, blob.stdout)), label, commit: sha };
}

/**
 * Renders a description's model and runs synth's cross-object rules over it: a finding that is an error is bad input
 * (exit 2) before any twin starts, each finding one line as synth prints it, then one naming `label`.
 */
function checkRender(model: ClusterModel, label: string): void {
  try {
    checkModels([model]);
  } catch (e) {
    throw e instanceof CheckFailed ? checkFailedInput(e, label) : e;
  }
}

/**
 * Loads, validates and checks the description at a commit (bad input names `REV:path`, not the scratch file it is read
 * from).
 */
function validateAtRevision(at: DescriptionAtRevision, config: string): ClusterModel {
  const dir = scratchFolder('gpu-cluster-manifests-rehearse-from');
  const file = path.join(dir, path.basename(config));
  try {
    writeFileSync(file, at.text);
    try {
      const [model] = loadModels([file]);
      checkRender(model, at.label);
      return model;
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      const named = (t: string) => t.split(file).join(at.label);
      throw new InputError(named(e.message), e.details.map(named), e.opts);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The rehearsal's bound (--timeout, seconds): given, or the default of its mode. A description that manages an install
 * (`managed`: Argo CD installs operators and CRDs first) gets twice the bootstrap's default; change mode converges two
 * states (the commit's bootstrap, then the push) and gets twice its bootstrap's (docs/commands.md#rehearse says why).
 */
export function rehearsalTimeoutMs(values: { readonly timeout?: string; readonly from?: string }, managed = false): number {
  if (values.timeout === undefined) {
    const bootstrap = managed ? REHEARSE_MANAGED_TIMEOUT_MS : REHEARSE_TIMEOUT_MS;
    return values.from === undefined ? bootstrap : bootstrap * (REHEARSE_CHANGE_TIMEOUT_MS / REHEARSE_TIMEOUT_MS);
  }
  const s = Number(values.timeout);
  if (!/^\d+(\.\d+)?$/.test(values.timeout.trim()) || !Number.isFinite(s) || s <= 0 || s * 1000 > REHEARSE_MAX_TIMEOUT_MS) {
    throw new InputError(`--timeout ${values.timeout}: expected seconds from 1 to ${REHEARSE_MAX_TIMEOUT_MS / 1000}`);
  }
  return Math.round(s * 1000);
}

/** How to get the binaries, in one line (no Go and no --binaries). */
function howToGetThem(why: string): string {
  return `rehearse: ${why}: install Go ${requiredGoVersion()} or later (https://go.dev/dl/, on PATH), which builds the twin's binaries once on this machine, `
    + 'or give --binaries DIR holding them prebuilt (rehearse --help lists the files and versions)';
}

/**
 * `rehearse --config FILE [--from [REV]] [--binaries DIR] [--timeout SECONDS]`: the bootstrap of a described cluster on a twin of it
 * (src/twin/rehearse.ts, loaded only here: the twin's modules and the Kubernetes client are not part of any other
 * command's start). Exit 0 when every Application converges, 1 when one does not, 2 on bad input or without binaries.
 */
export async function runRehearse(argv: string[], io: Io = consoleIo): Promise<number> {
  const { values } = parseArgs({ args: withOptionalValue(normalizeKubeconfigArg(argv), '--from', 'HEAD'), options: REHEARSE.options, allowPositionals: false });
  if (values.help) {
    io.out(commandHelp(REHEARSE));
    return EXIT.ok;
  }
  if (values.quiet && values.verbose) throw new InputError('rehearse: give --verbose or --quiet, not both');
  if (values.config === undefined) throw new InputError('rehearse: name the description: --config FILE');
  if (!existsSync(values.config)) throw new InputError(`--config ${values.config}: no such file`);
  if (!isDescriptionFile(path.basename(values.config))) throw new InputError(`--config ${values.config}: expected a cluster description (a .yaml, .yml, .json or .ts file, not ${FLEET_FILE})`);
  rehearsalTimeoutMs(values); // a bad --timeout is named before anything is read
  // the Nodes from the cluster itself, read as init reads them (its own --timeout is the rehearsal's, not the read's)
  const source = values.snapshot !== undefined || values.kubeconfig !== undefined
    ? clusterSource({ snapshot: values.snapshot, kubeconfig: values.kubeconfig, context: values.context }, 'rehearse') : undefined;
  if (source === undefined && values.context !== undefined) throw new InputError('--context needs --kubeconfig');
  // change mode: the description at the commit, read before anything else runs (exit 2 on a bad --from)
  const from = values.from === undefined ? undefined : descriptionAtRevision(values.config, values.from);
  // the description loads, validates and renders clean of the cross-object checks before anything starts (bad input:
  // exit 2, one line per problem or finding), at --from too
  const [model] = loadModels([values.config]);
  checkRender(model, values.config);
  const timeoutMs = rehearsalTimeoutMs(values, Object.values(model.description.installs).includes('managed'));
  if (from) {
    // the twin runs Kueue as the description at the commit says, pre-installed or managed (twin-cluster.ts), and cannot
    // switch it under a running Argo CD: such a change is rehearsed as the bootstrap of the working tree's description
    const before = validateAtRevision(from, values.config).description.installs.kueue;
    const after = model.description.installs.kueue;
    if (before !== after) {
      throw new InputError(`--from ${from.label}: installs.kueue changes from ${before} to ${after}, and the twin runs Kueue as the description at the `
        + 'commit says, without switching it: rehearse the working tree\'s description as a bootstrap (without --from)');
    }
  }
  let nodes: Parameters<typeof rehearse>[0]['nodes'];
  if (source !== undefined) {
    let read = readClusterState(source, [], MAX_NODES);
    if (!(read instanceof ClusterState)) {
      // a live read waits on the API server: on a terminal, a line says so
      const progress = progressOf(io.progress, 'rehearse', undefined, values.quiet);
      progress?.activity('reading the cluster\'s Nodes (GET requests only)');
      read = await read.finally(() => progress?.end());
    }
    const state = read;
    // checked now, against the working tree's description (exit 2 before anything starts); the twin takes them for its own
    nodesFromCluster(state, model);
    nodes = (m) => nodesFromCluster(state, m);
  }
  // then the binaries' source (all input is read first: bad input is named whatever the machine has)
  if (values.binaries !== undefined) {
    if (!statSync(values.binaries, { throwIfNoEntry: false })?.isDirectory()) throw new InputError(`--binaries ${values.binaries}: no such folder`);
  } else {
    let go: string;
    try {
      go = goCommand();
    } catch (e) {
      if (e instanceof ControlPlaneBuildError) throw new InputError(howToGetThem('no go command, and no --binaries DIR'));
      throw e;
    }
    const version = goVersion(go);
    if (version === undefined || !atLeast(version, requiredGoVersion())) throw new InputError(howToGetThem(`${go} is ${version ?? 'not a working go command'}`));
  }

  usePrebuiltBinaries(values.binaries);
  try {
    try {
      // a build says what it builds and how long it takes before it starts, even with --quiet: it may take 20 minutes
      await twinBinaries({ progress: (line) => io.err(`rehearse: ${line}`) });
    } catch (e) {
      if (!(e instanceof ControlPlaneBuildError)) throw e;
      if (values.binaries !== undefined) throw new InputError(e.message);
      io.err(`rehearse: the twin's binaries could not be built: ${e.message.split('\n')[0]}`);
      return EXIT.failed;
    }
    const run = (createRequire(__filename)('./rehearse') as { rehearse: typeof rehearse }).rehearse;
    const terminal = io.progress?.isTTY && !values.quiet ? io.progress : undefined;
    return await run({
      description: values.config,
      from,
      nodes,
      timeoutMs,
      verbose: values.verbose,
      quiet: values.quiet,
      out: io.out,
      err: io.err,
      terminal: terminal && ((text) => terminal.write(text)),
    });
  } finally {
    usePrebuiltBinaries(undefined);
  }
}
