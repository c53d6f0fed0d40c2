import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { CheckFailed, formatFinding } from './check/engine';
import { CHECK, engineLines, runCheck } from './commands/check';
import { DIFF, runDiff } from './commands/diff';
import { consoleIo, EXIT, Io } from './commands/io';
import { NEW, runNew } from './commands/new';
import { CommandSpec, commandHelp, globalHelp, OPTIONS, OptionTable, RENDER_OPTIONS, renderInputs, schemaDirs } from './commands/options';
import { Preloaded, preloadedModels } from './commands/precheck';
import { Progress } from './commands/progress';
import { synthSummary } from './commands/synth-summary';
import { outputFormat, reportError } from './errors';
import { INIT, runInit } from './init/command';
import { descriptionJsonSchemaText, withDescriptionReference } from './model/json-schema';
import { PACKAGE_NAME, SCHEMA_FILE_NAME } from './paths';
import { PREFLIGHT, runPreflight } from './preflight/command';
import { projectOf, requireProject } from './project/project-file';
import { DeletionRefused, deletionLines } from './render/deletions';
import { clusterScopes, readTree } from './render/tree';
import { recoverAround } from './render/write';
import { InputError, synth, ValidationFailed } from './synth/pipeline';
import { SchemaDirectoryMissing, SchemaStore } from './validate/schemas';
import { ManifestValidator, ValidationIssue } from './validate/validator';

export { EXIT } from './commands/io';

const SYNTH_OPTIONS = { ...RENDER_OPTIONS, 'quiet': OPTIONS.quiet, 'allow-delete': OPTIONS['allow-delete'] } as const satisfies OptionTable;

const VALIDATE_OPTIONS = {
  schemas: OPTIONS.schemas,
  format: OPTIONS.format,
  quiet: OPTIONS.quiet,
  help: OPTIONS.help,
} as const satisfies OptionTable;

const SCHEMA_OPTIONS = {
  out: { type: 'string', value: 'FILE', help: `write the JSON Schema to FILE (default: ${SCHEMA_FILE_NAME} in the project's descriptions folder; - prints it)` },
  readme: { type: 'string', value: 'FILE', help: 'regenerate the field reference section of FILE (between its description-reference markers)' },
  help: OPTIONS.help,
} as const satisfies OptionTable;

/** `synth`: render descriptions into manifests. */
export const SYNTH: CommandSpec<typeof SYNTH_OPTIONS> = {
  name: 'synth',
  usage: `${PACKAGE_NAME} synth [--config FILE ... --out DIR]`,
  summary: 'render descriptions into manifests (every description of the project into its output folder, or --config FILE ...)',
  description: 'Without --config: every description in the project\'s descriptions folder (gpu-cluster-manifests.yaml, found from '
    + 'the working folder upwards: clusters:) into its output folder (out:, default dist/) as <out>/<cluster>/, plus <out>/fleet/ (an '
    + 'ApplicationSet pointing a hub Argo CD at every cluster); the whole output folder is replaced. With --config FILE '
    + '(repeatable): those descriptions into <out>/<cluster>/ only (--out DIR, or the project\'s output folder). Each cluster is rendered, validated against the upstream schemas, checked by '
    + 'the cross-object rules and written to a temporary folder beside its target; then every folder is swapped in at once. '
    + 'On any error the previous output is left byte-identical. A render that would remove rendered objects (Argo CD prunes '
    + 'them) exits 1 and writes nothing, unless --allow-delete. A fleet shows its progress per cluster on stderr; the '
    + 'summary (objects per folder and kind, files written, time) goes to stdout.',
  options: SYNTH_OPTIONS,
  failed: 'a validation or a cross-object check failed (nothing was written)',
};

/** `validate`: strict schema validation of rendered trees. */
export const VALIDATE: CommandSpec<typeof VALIDATE_OPTIONS> = {
  name: 'validate',
  usage: `${PACKAGE_NAME} validate DIR|FILE ... [--schemas DIR]`,
  summary: 'validate rendered manifests (folders or files) strictly against the upstream schemas',
  description: 'Strict schema validation of every object in the given folders or files, as the API server and kubeconform\'s '
    + 'strict mode do: unknown fields are errors, duplicates (per cluster folder) are errors, deprecated API versions warn.',
  options: VALIDATE_OPTIONS,
  failed: 'an object is invalid',
};

/** `schema`: the description's JSON Schema. */
export const SCHEMA: CommandSpec<typeof SCHEMA_OPTIONS> = {
  name: 'schema',
  usage: `${PACKAGE_NAME} schema [--out FILE|-]`,
  summary: 'write the JSON Schema of the cluster description beside the descriptions (editor autocompletion)',
  description: `Writes the JSON Schema of the cluster description to ${SCHEMA_FILE_NAME} in the project's descriptions folder, the file `
    + 'the $schema line of every description names (after updating the toolkit, run it again); outside a project, or with --out -, it '
    + 'prints it. --readme FILE regenerates the field reference section of FILE.',
  options: SCHEMA_OPTIONS,
};

function formatIssue(i: ValidationIssue): string {
  const where = i.source ? `${i.source}: ` : '';
  return `${i.severity}: ${where}${i.object}${i.path ? ` ${i.path}` : ''}: ${i.message}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

/** `preloaded`: descriptions the launcher's precheck already loaded (used when they are exactly the --config files). */
export function runSynth(args: string[], io: Io = consoleIo, preloaded?: Preloaded): number {
  const { values } = parseArgs({ args, options: SYNTH_OPTIONS, allowPositionals: false });
  if (values.help) {
    io.out(commandHelp(SYNTH));
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  const { configs, schemas } = renderInputs(values);
  const project = configs.length === 0 || values.out === undefined ? requireProject('synth', '--config FILE ... and --out DIR') : undefined;
  const out = values.out ?? project!.out;
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
    });
  } finally {
    progress?.end();
  }
  for (const w of result.warnings) io.err(formatIssue(w));
  for (const f of result.findings) io.err(formatFinding(f));
  if (result.deleted.length > 0) {
    for (const l of deletionLines(result.deleted)) io.err(l);
    io.err(`note: ${result.deleted.length} rendered object(s) removed from ${path.relative(process.cwd(), out) || '.'} (--allow-delete); `
      + 'Argo CD prunes them when it syncs, Namespaces and volume claims only once someone confirms (Prune=confirm)');
  }
  if (format === 'json') {
    const objects = result.clusters.reduce((n, c) => n + c.objects, result.fleet?.objects ?? 0);
    const { files, timings, warnings, findings, deleted } = result;
    io.out(JSON.stringify({ clusters: result.clusters.map((c) => c.name), objects, files, timings, warnings, findings, deleted }));
  } else if (!values.quiet) {
    for (const line of synthSummary(result)) io.out(line);
  }
  return EXIT.ok;
}

export function runValidate(args: string[], io: Io = consoleIo): number {
  const { values, positionals } = parseArgs({ args, options: VALIDATE_OPTIONS, allowPositionals: true });
  if (values.help) {
    io.out(commandHelp(VALIDATE));
    return EXIT.ok;
  }
  const format = outputFormat(values.format);
  if (positionals.length === 0) throw new InputError('validate: name the rendered folders or files to validate (e.g. dist/instant-cluster)');
  // A folder an interrupted synth left half-swapped is completed first.
  for (const p of positionals) recoverAround(p, { command: 'validate', notify: io.err });
  for (const p of positionals) if (!existsSync(p)) throw new InputError(`validate: ${p}: no such file or folder`);
  const t0 = performance.now();
  const validator = new ManifestValidator(SchemaStore.open(schemaDirs(values.schemas)));
  // Each cluster is its own API server: an object may appear once per cluster folder.
  const scopes = positionals.flatMap(clusterScopes).map(readTree);
  const inputs = scopes.flat();
  if (inputs.length === 0) throw new InputError(`validate: no Kubernetes objects in ${positionals.join(', ')}`);
  const issues = scopes.flatMap((scope) => validator.validateAll(scope));
  const errors = issues.filter((i) => i.severity === 'error');
  if (format === 'json') {
    io.out(JSON.stringify({ objects: inputs.length, errors: errors.length, issues }, undefined, 2));
  } else {
    for (const i of issues) (i.severity === 'error' ? io.err : io.out)(formatIssue(i));
    if (!values.quiet) {
      io.out(`${errors.length === 0 ? 'ok' : 'FAILED'}: ${inputs.length} objects, ${errors.length} errors, `
        + `${issues.length - errors.length} warnings (${seconds(performance.now() - t0)})`);
    }
  }
  return errors.length === 0 ? EXIT.ok : EXIT.failed;
}

export function runSchema(args: string[], io: Io = consoleIo): number {
  const { values } = parseArgs({ args, options: SCHEMA_OPTIONS });
  if (values.help) {
    io.out(commandHelp(SCHEMA));
    return EXIT.ok;
  }
  if (values.readme && !existsSync(values.readme)) throw new InputError(`--readme ${values.readme}: no such file`);
  const text = descriptionJsonSchemaText();
  const clusters = values.out === undefined ? projectOf()?.clusters : undefined;
  const out = values.out === '-' ? undefined : values.out ?? (clusters && path.join(clusters, SCHEMA_FILE_NAME));
  if (out) writeFileSync(out, text);
  else io.out(text.trimEnd());
  if (values.readme) writeFileSync(values.readme, withDescriptionReference(readFileSync(values.readme, 'utf8')));
  return EXIT.ok;
}

/** A command returns its exit code; commands that read a live cluster return it asynchronously. */
type Command = (args: string[], io: Io, preloaded?: Preloaded) => number | Promise<number>;

/** Every command by name: its spec (usage, options, help) and how it runs. */
export const COMMANDS: Readonly<Record<string, { readonly spec: CommandSpec; readonly run: Command }>> = {
  synth: { spec: SYNTH, run: runSynth },
  validate: { spec: VALIDATE, run: runValidate },
  check: { spec: CHECK, run: runCheck },
  diff: { spec: DIFF, run: runDiff },
  schema: { spec: SCHEMA, run: runSchema },
  preflight: { spec: PREFLIGHT, run: runPreflight },
  init: { spec: INIT, run: runInit },
  new: { spec: NEW, run: runNew },
};

/**
 * Runs the CLI; returns the exit code (a promise for live cluster reads). Never throws or rejects.
 * `preloaded`: the descriptions the launcher's precheck loaded, not parsed again.
 */
export function main(argv: string[], io: Io = consoleIo, preloaded?: Preloaded): number | Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    io.out(globalHelp(Object.values(COMMANDS).map((c) => c.spec)));
    if (!command) return EXIT.badInput;
    return engineLines().then((lines) => {
      io.out('');
      io.out('Engines (check renders every Application with them):');
      for (const l of lines) io.out(`  ${l}`);
      return EXIT.ok;
    }, (e: unknown) => failure(e, io));
  }
  const entry = COMMANDS[command];
  if (!entry) {
    io.err(`unknown command "${command}" (expected one of: ${Object.keys(COMMANDS).join(', ')}); see --help`);
    return EXIT.badInput;
  }
  try {
    const code = entry.run(rest, io, preloaded);
    return typeof code === 'number' ? code : code.catch((e: unknown) => failure(e, io));
  } catch (e) {
    return failure(e, io);
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
    for (const f of e.findings) io.err(formatFinding(f));
    io.err(`error: ${e.message}; nothing was written`);
    return EXIT.failed;
  }
  if (e instanceof DeletionRefused) {
    for (const l of deletionLines(e.deletions)) io.err(l);
    io.err(`error: ${e.message}`);
    return EXIT.failed;
  }
  if (e instanceof SchemaDirectoryMissing) {
    io.err(`error: ${e.message}`);
    return EXIT.badInput;
  }
  return reportError(e, io.err);
}
