import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { CheckFailed, formatFinding } from './check/engine';
import { repositoryFindings } from './check/repository';
import { runCheck } from './commands/check';
import { runDiff } from './commands/diff';
import { runGlobalHelp } from './commands/help';
import { consoleIo, EXIT, Io } from './commands/io';
import { runNew } from './commands/new';
import { CommandSpec, commandHelp, renderInputs, unknownOption } from './commands/options';
import { Preloaded, preloadedModels } from './commands/precheck';
import { Progress } from './commands/progress';
import { runSchema } from './commands/schema';
import { CHECK, DIFF, INIT, NEW, PREFLIGHT, REHEARSE, SCHEMA, SYNTH, UPGRADE_PLAN, VALIDATE, VERIFY } from './commands/specs';
import { synthSummary } from './commands/synth-summary';
import { runUpgradePlan } from './commands/upgrade-plan';
import { commandFailure, formatIssue, runValidate } from './commands/validate';
import { outputFormat, printable } from './errors';
import { runInit } from './init/command';
import { noteSynthResult, reusableClusters } from './launcher/up-to-date';
import { todoWarnings } from './model/init-todos';
import { closestName } from './model/issue-hints';
import { openTodos } from './model/load-models';
import { PACKAGE_NAME, packageVersion } from './paths';
import { runPreflight } from './preflight/command';
import { readGitRepo } from './project/git';
import { requireProject } from './project/project-file';
import { DeletionRefused, deletionLines, removalSummary } from './render/deletions';
import { descriptionFiles, synth, ValidationFailed } from './synth/pipeline';
import { runRehearse } from './twin/command';
import { runVerify } from './verify/command';

export { EXIT } from './commands/io';
export { SCHEMA, SYNTH, VALIDATE } from './commands/specs';


/** `preloaded`: descriptions the launcher's precheck already loaded (used when they are exactly the --config files). */
export function runSynth(args: string[], io: Io = consoleIo, preloaded?: Preloaded): number {
  const { values } = parseArgs({ args, options: SYNTH.options, allowPositionals: false });
  if (values.help) {
    io.out(commandHelp(SYNTH));
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  const { configs, schemas } = renderInputs(values);
  const project = configs.length === 0 || values.out === undefined ? requireProject('synth', '--config FILE ... and --out DIR') : undefined;
  const out = values.out ?? project!.out;
  // the plain synth: the launcher's up-to-date record may have found that only some descriptions changed
  const plain = configs.length === 0 && values.out === undefined;
  const progress = values.quiet || !io.progress ? undefined : new Progress(io.progress, 'synth', 'clusters rendered, checked and written');
  let result;
  try {
    result = synth({
      configs,
      models: preloadedModels(preloaded, configs),
      clustersDir: project?.clusters,
      out,
      schemas,
      notify: io.err,
      allowDelete: values['allow-delete'],
      progress: progress && ((p) => progress.update(p.done, p.total, p.cluster)),
      reuse: plain ? reusableClusters() : undefined,
    });
  } finally {
    progress?.end();
  }
  if (plain) noteSynthResult(result);
  const todos = openTodos(configs.length > 0 ? configs : descriptionFiles(project!.clusters));
  // where Argo CD reads each cluster from, against where this checkout pushes (its .git files, nothing run)
  const repository = repositoryFindings(readGitRepo(project?.root ?? process.cwd()), result.sources);
  // --quiet: errors only (a render with an error never gets here: it throws)
  const warn = values.quiet ? () => {} : io.err;
  for (const w of result.warnings) warn(formatIssue(w));
  for (const f of [...result.findings, ...repository]) (f.severity === 'error' ? io.err : warn)(formatFinding(f));
  for (const l of todoWarnings(todos)) warn(l);
  if (result.deleted.length > 0 && !values.quiet) {
    for (const l of [...deletionLines(result.deleted), ...removalSummary(result.deleted, path.relative(process.cwd(), out) || '.')]) io.err(l);
  }
  if (format === 'json') {
    const objects = result.clusters.reduce((n, c) => n + c.objects, result.fleet?.objects ?? 0);
    const { files, timings, warnings, deleted } = result;
    const findings = [...result.findings, ...repository];
    io.out(JSON.stringify({ clusters: result.clusters.map((c) => c.name), objects, files, timings, warnings, findings, deleted, todos }));
  } else if (!values.quiet) {
    for (const line of synthSummary(result)) io.out(line);
  }
  return EXIT.ok;
}

/** A command returns its exit code; commands that read a live cluster return it asynchronously. */
type Command = (args: string[], io: Io, preloaded?: Preloaded) => number | Promise<number>;

/**
 * A command whose module is read only when it runs: in the bundle the modules of these commands load on their first
 * use (projenrc/bundle.cjs finds them by this wrapper, and refuses one whose binding cli.ts reads elsewhere), so that a
 * synth never loads the live commands' clients (http, tls) or init's and upgrade-plan's readers.
 */
const deferred = (command: () => Command): Command => (args, io, preloaded) => command()(args, io, preloaded);

/** Every command by name: its spec (usage, options, help) and how it runs. */
export const COMMANDS: Readonly<Record<string, { readonly spec: CommandSpec; readonly run: Command }>> = {
  synth: { spec: SYNTH, run: runSynth },
  validate: { spec: VALIDATE, run: runValidate },
  check: { spec: CHECK, run: deferred(() => runCheck) },
  diff: { spec: DIFF, run: deferred(() => runDiff) },
  schema: { spec: SCHEMA, run: deferred(() => runSchema) },
  preflight: { spec: PREFLIGHT, run: deferred(() => runPreflight) },
  init: { spec: INIT, run: deferred(() => runInit) },
  verify: { spec: VERIFY, run: deferred(() => runVerify) },
  rehearse: { spec: REHEARSE, run: deferred(() => runRehearse) },
  [UPGRADE_PLAN.name]: { spec: UPGRADE_PLAN, run: deferred(() => runUpgradePlan) },
  new: { spec: NEW, run: deferred(() => (args, io) => runNew(args, io)) },
};

/**
 * Runs the CLI; returns the exit code (a promise for live cluster reads). Never throws or rejects.
 * `preloaded`: the descriptions the launcher's precheck loaded, not parsed again.
 */
export function main(argv: string[], io: Io = consoleIo, preloaded?: Preloaded): number | Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    return runGlobalHelp(!command, io);
  }
  if (command === '--version' || command === '-v') {
    io.out(`${PACKAGE_NAME} ${packageVersion()}`);
    return EXIT.ok;
  }
  const entry = COMMANDS[command];
  if (!entry) {
    const meant = command.startsWith('-') ? undefined : closestName(command, Object.keys(COMMANDS));
    io.err(`unknown command "${printable(command)}" (${meant ? `did you mean "${meant}"? ` : ''}expected one of: ${Object.keys(COMMANDS).join(', ')}); see --help`);
    return EXIT.badInput;
  }
  // an unknown option names the one it was likely meant to be
  const fail = (e: unknown) => failure(unknownOption(e, entry.spec) ?? e, io);
  try {
    const code = entry.run(rest, io, preloaded);
    return typeof code === 'number' ? code : code.catch(fail);
  } catch (e) {
    return fail(e);
  }
}

/** The exit code (and the one-line message) of an error a command threw: the render's own failures, then those of every entry point. */
function failure(e: unknown, io: Io): number {
  if (e instanceof ValidationFailed) {
    for (const i of e.issues) io.err(formatIssue(i));
    io.err(`error: ${e.message}; nothing was written`);
    return EXIT.failed;
  }
  if (e instanceof CheckFailed) {
    for (const l of e.lines()) io.err(l);
    io.err(`error: ${e.message}; nothing was written`);
    return EXIT.failed;
  }
  if (e instanceof DeletionRefused) {
    for (const l of deletionLines(e.deletions)) io.err(l);
    io.err(`error: ${e.message}`);
    return EXIT.failed;
  }
  return commandFailure(e, io);
}
