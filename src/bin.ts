#!/usr/bin/env node
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { installModuleCache, requireBundle } from './cache/module-cache';
import type * as Cli from './cli';
import type * as Help from './commands/help';
import type * as NewCommand from './commands/new';
import type * as Precheck from './commands/precheck';
import type * as SchemaCommand from './commands/schema';
import type * as ValidateCommand from './commands/validate';
import { EXIT, messageLine, outputText, reportError } from './errors';
import type * as UpToDate from './launcher/up-to-date';
import type * as Paths from './paths';

/**
 * The command line: `gpu-cluster-manifests <command>` (package.json `bin`, `npx gpu-cluster-manifests`
 * in a clusters repository), and what this repository's npm scripts run once projenrc/launch.cjs has
 * compiled the sources. One contract everywhere: exit 0 ok, 1 a check failed, 2 bad input; every
 * error one line, never a stack trace, whatever throws (an unknown command, no project file, a
 * package file that is missing or unreadable).
 *
 * Modules load as late as they can: the up-to-date answer of a plain synth needs almost none, the
 * precheck of a bad description the description schema only, `new` none of the dependencies, the
 * global help the command specs and the engine lookup, `validate` the validator and the tree reader, `schema` the
 * description schema.
 * The modules a command loads are compiled with V8's code from the cache folder
 * (src/cache/module-cache.ts), one cache per command.
 *
 * Built, the command line is one file (lib/bundle/cli.js: this module and everything it loads, projenrc/bundle.cjs):
 * runCli hands every command but the two that need nothing (--version, new) to the bundle's copy of routeCli, so a
 * start reads, digests and compiles one file instead of some 600 modules. Without the bundle (a checkout compiled by
 * tsc alone) the modules of lib/src load as they are.
 */

const load = createRequire(__filename);

/** The commands with a module cache of their own (any other word shares one). */
const CACHED_COMMANDS = /^(synth|validate|check|diff|schema|preflight|init|verify|upgrade-plan)$/;

/** As consoleIo (commands/io.ts, not loaded here): messages one line each, escaped; output without terminal controls. */
const print = {
  out: (l: string) => process.stdout.write(`${outputText(l)}\n`),
  err: (l: string) => process.stderr.write(`${messageLine(l)}\n`),
};

let closedOutputQuiet = false;

/**
 * A reader that stops reading (`gpu-cluster-manifests check --list-rules | head -1`) closes the pipe: what the command
 * prints after that is dropped quietly (Node's default is an EPIPE stack trace), and the command ends as it would have,
 * its files written and its exit code its own. Any other error of the streams stays an error.
 */
function quietOnClosedOutput(): void {
  if (closedOutputQuiet) return;
  closedOutputQuiet = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
    });
  }
}

const isHelp = (command: string | undefined) => command === undefined || command === '--help' || command === '-h' || command === 'help';

/**
 * Installs the module cache of a command line's command (runCli does; a wrapper that loads modules of the CLI
 * before it calls runCli may do so first). Never throws.
 */
export function installCommandCache(argv: readonly string[]): void {
  const [command] = argv;
  installModuleCache(isHelp(command) ? 'help' : command && CACHED_COMMANDS.test(command) ? command : 'cli');
}

/** The command line in one file, beside lib/src/ (this module's folder, also in the bundle's copy of it). */
export const CLI_BUNDLE = path.join(__dirname, '..', 'bundle', 'cli.js');

/** Runs a command line; returns the exit code (a promise for live cluster reads). Never throws or rejects. */
export function runCli(argv: readonly string[]): number | Promise<number> {
  const [command] = argv;
  if (command === '--version' || command === '-v' || command === 'new') return routeCli(argv);
  let bundle: { routeCli: typeof routeCli } | undefined;
  try {
    installCommandCache(argv);
    bundle = requireBundle(CLI_BUNDLE) as typeof bundle;
  } catch (e) {
    return reportError(e, print.err);
  }
  return (bundle ?? { routeCli }).routeCli(argv);
}

/** Runs a command line with the modules of the running code (the bundle's, or lib/src's): what runCli hands it to. */
export function routeCli(argv: readonly string[]): number | Promise<number> {
  const fail = (e: unknown) => reportError(e, print.err);
  quietOnClosedOutput();
  try {
    const [command] = argv;
    // the version: package.json alone
    if (command === '--version' || command === '-v') {
      const paths = load('./paths') as typeof Paths;
      print.out(`${paths.PACKAGE_NAME} ${paths.packageVersion()}`);
      return EXIT.ok;
    }
    // a clusters repository from the unpacked package alone: no dependency is installed yet
    if (command === 'new') return (load('./commands/new') as typeof NewCommand).runNew(argv.slice(1), { ...print });
    installCommandCache(argv);
    // the command list and the engines: the command specs and the engine lookup only
    if (isHelp(command)) {
      const code = (load('./commands/help') as typeof Help).runGlobalHelp(command === undefined, print);
      return typeof code === 'number' ? code : code.catch(fail);
    }
    // rendered folders against the schemas: none of the render stack
    if (command === 'validate') return (load('./commands/validate') as typeof ValidateCommand).runValidateCommand(argv.slice(1), print);
    // the description's JSON Schema: the description schema alone
    if (command === 'schema') return (load('./commands/schema') as typeof SchemaCommand).runSchemaCommand(argv.slice(1), print);
    const upToDate = load('./launcher/up-to-date') as typeof UpToDate;
    const answer = upToDate.answerFromRecord(argv);
    if (answer !== undefined) return answer;
    // a bad description is reported before the render stack loads; good ones are handed to the CLI, parsed once
    const checked = (load('./commands/precheck') as typeof Precheck).precheckDescriptions(argv, print);
    if (typeof checked === 'number') return checked;
    const result = upToDate.runRecorded(argv, () => (load('./cli') as typeof Cli).main([...argv], undefined, checked));
    return typeof result === 'number' ? result : result.catch(fail);
  } catch (e) {
    return fail(e);
  }
}

if (require.main === module) {
  void Promise.resolve(runCli(process.argv.slice(2))).then((code) => {
    process.exitCode = code;
  }, () => {
    process.exitCode = EXIT.failed;
  });
}
