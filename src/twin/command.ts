import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { ControlPlaneBuildError, goCommand, requiredGoVersion, twinBinaries, usePrebuiltBinaries } from './binary';
import type { rehearse } from './rehearse';
import { consoleIo, EXIT, Io } from '../commands/io';
import { commandHelp } from '../commands/options';
import { REHEARSE, REHEARSE_MAX_TIMEOUT_MS, REHEARSE_TIMEOUT_MS } from '../commands/specs';
import { InputError } from '../errors';
import { loadModels } from '../synth/pipeline';

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

/** How to get the binaries, in one line (no Go and no --binaries). */
function howToGetThem(why: string): string {
  return `rehearse: ${why}: install Go ${requiredGoVersion()} or later (https://go.dev/dl/, on PATH), which builds the twin's binaries once on this machine, `
    + 'or give --binaries DIR holding them prebuilt (rehearse --help lists the files and versions)';
}

/**
 * `rehearse --config FILE [--binaries DIR] [--timeout SECONDS]`: the bootstrap of a described cluster on a twin of it
 * (src/twin/rehearse.ts, loaded only here: the twin's modules and the Kubernetes client are not part of any other
 * command's start). Exit 0 when every Application converges, 1 when one does not, 2 on bad input or without binaries.
 */
export async function runRehearse(argv: string[], io: Io = consoleIo): Promise<number> {
  const { values } = parseArgs({ args: argv, options: REHEARSE.options, allowPositionals: false });
  if (values.help) {
    io.out(commandHelp(REHEARSE));
    return EXIT.ok;
  }
  if (values.quiet && values.verbose) throw new InputError('rehearse: give --verbose or --quiet, not both');
  if (values.config === undefined) throw new InputError('rehearse: name the description: --config FILE');
  if (!existsSync(values.config)) throw new InputError(`--config ${values.config}: no such file`);
  if (!/\.(ya?ml|json)$/i.test(values.config)) throw new InputError(`--config ${values.config}: rehearse reads a YAML or JSON description`);
  let timeoutMs = REHEARSE_TIMEOUT_MS;
  if (values.timeout !== undefined) {
    const s = Number(values.timeout);
    if (!/^\d+(\.\d+)?$/.test(values.timeout.trim()) || !Number.isFinite(s) || s <= 0 || s * 1000 > REHEARSE_MAX_TIMEOUT_MS) {
      throw new InputError(`--timeout ${values.timeout}: expected seconds from 1 to ${REHEARSE_MAX_TIMEOUT_MS / 1000}`);
    }
    timeoutMs = Math.round(s * 1000);
  }
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
  // the description loads and validates before anything starts (bad input: exit 2, one line per problem)
  loadModels([values.config]);

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
