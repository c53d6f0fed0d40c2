import { EXIT, Io } from './io';
import { CommandSpec, globalHelp } from './options';
import { CHECK, DIFF, INIT, NEW, PREFLIGHT, REHEARSE, SCHEMA, SYNTH, UPGRADE_PLAN, VALIDATE, VERIFY } from './specs';
import { describeEngines, EngineError, resolveEngines } from '../engines';
import { reportError } from '../errors';

/** Every command, in the order the global help lists them. */
export const COMMAND_SPECS: readonly CommandSpec[] = [SYNTH, VALIDATE, CHECK, DIFF, SCHEMA, PREFLIGHT, INIT, VERIFY, REHEARSE, UPGRADE_PLAN, NEW];

/** The engines line(s) of --help and the report: which helm and kustomize `check` runs, or why none. */
export async function engineLines(): Promise<string[]> {
  try {
    return describeEngines(await resolveEngines());
  } catch (e) {
    if (e instanceof EngineError) return [`none usable: ${e.message}`];
    throw e;
  }
}

/**
 * The global help (`--help`, `-h`, `help`, or no command at all: then exit 2), with the engines check
 * would render with. Needs none of the render stack, so the CLI's entry point prints it without loading it.
 */
export function runGlobalHelp(bare: boolean, io: Pick<Io, 'out' | 'err'>): number | Promise<number> {
  io.out(globalHelp(COMMAND_SPECS));
  if (bare) return EXIT.badInput;
  return engineLines().then((lines) => {
    io.out('');
    io.out('Engines (check renders every Application with them):');
    for (const l of lines) io.out(`  ${l}`);
    return EXIT.ok;
  }, (e: unknown) => reportError(e, io.err));
}
