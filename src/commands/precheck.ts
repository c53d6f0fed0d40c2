import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Io } from './io';
import { RENDER_OPTIONS } from './options';
import { InputError, inputErrorLines } from '../errors';
import { loadModels } from '../model/load-models';
import { ClusterModel } from '../model/model';

/** Descriptions loaded before the CLI ran (the files as --config named them, in order) and their models. */
export interface Preloaded {
  readonly configs: readonly string[];
  readonly models: readonly ClusterModel[];
}

/** The preloaded models of exactly these description files, or undefined (load them). */
export function preloadedModels(preloaded: Preloaded | undefined, configs: readonly string[]): readonly ClusterModel[] | undefined {
  if (!preloaded || preloaded.configs.length !== configs.length || preloaded.configs.some((c, i) => c !== configs[i])) return undefined;
  return preloaded.models;
}

/**
 * The bad-input path of `synth` and `diff` without the render stack: the launcher calls this before
 * it loads the CLI, so a description that does not load is reported after loading only the
 * description schema (about half the modules' start-up time). Returns the exit code (2) when the
 * named descriptions are bad input, printed exactly as the CLI prints it; the loaded models when they
 * are good, which the launcher hands to the CLI (`main`), so each description is parsed once a run;
 * and undefined for everything else (no --config, help, arguments the CLI itself must judge): the CLI
 * then runs as usual.
 */
export function precheckDescriptions(argv: readonly string[], io: Io): number | Preloaded | undefined {
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
    return { configs, models: loadModels(configs) };
  } catch (e) {
    if (!(e instanceof InputError)) return undefined;
    for (const l of inputErrorLines(e)) io.err(l);
    return 2;
  }
}
