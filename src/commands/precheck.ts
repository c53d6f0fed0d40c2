import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Io } from './io';
import { RENDER_OPTIONS } from './options';
import { InputError, inputErrorLines } from '../errors';
import { loadModels } from '../model/load-models';

/**
 * The bad-input path of `synth` and `diff` without the render stack: the launcher calls this before
 * it loads the CLI, so a description that does not load is reported after loading only the
 * description schema (about half the modules' start-up time). Returns the exit code (2) when the
 * named descriptions are bad input, printed exactly as the CLI prints it, and undefined for
 * everything else (good descriptions, no --config, help, arguments the CLI itself must judge):
 * the CLI then runs as usual.
 */
export function precheckDescriptions(argv: readonly string[], io: Io): number | undefined {
  const [command, ...args] = argv;
  if (command !== 'synth' && command !== 'diff') return undefined;
  let configs: string[];
  try {
    // Not strict: the options of synth and diff other than --config and --help do not matter here,
    // and an option another command version adds must not turn the check off.
    const { values } = parseArgs({ args, options: { config: RENDER_OPTIONS.config, help: RENDER_OPTIONS.help }, strict: false });
    if (values.help) return undefined;
    configs = (values.config ?? []).filter((c): c is string => typeof c === 'string');
  } catch {
    return undefined;
  }
  // a missing file is the CLI's own message (--config FILE: no such file)
  if (configs.length === 0 || configs.some((c) => !existsSync(c))) return undefined;
  try {
    loadModels(configs);
    return undefined;
  } catch (e) {
    if (!(e instanceof InputError)) return undefined;
    for (const l of inputErrorLines(e)) io.err(l);
    return 2;
  }
}
