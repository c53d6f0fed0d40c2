import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { consoleIo, EXIT, Io } from './io';
import { commandHelp, schemaDirs, unknownOption } from './options';
import { VALIDATE } from './specs';
import { InputError, outputFormat, reportError } from '../errors';
import { clusterScopes, readTree } from '../render/tree';
import { recoverAround } from '../render/write';
import { SchemaDirectoryMissing } from '../validate/schema-directory';
import { SchemaStore } from '../validate/schemas';
import { ManifestValidator, ValidationIssue } from '../validate/validator';

/*
 * `validate`: rendered folders against the pinned schemas. It needs none of the render stack (cdk8s, the typed
 * imports, the description's schema, CEL), so the CLI's entry point runs it from here without loading cli.ts.
 */

/** One line of a validation issue: severity, where it was read, the object, the field path, the message. */
export function formatIssue(i: ValidationIssue): string {
  const where = i.source ? `${i.source}: ` : '';
  return `${i.severity}: ${where}${i.object}${i.path ? ` ${i.path}` : ''}: ${i.message}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

export function runValidate(args: string[], io: Io = consoleIo): number {
  const { values, positionals } = parseArgs({ args, options: VALIDATE.options, allowPositionals: true });
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
    for (const i of issues) if (i.severity === 'error' || !values.quiet) (i.severity === 'error' ? io.err : io.out)(formatIssue(i));
    if (!values.quiet) {
      io.out(`${errors.length === 0 ? 'ok' : 'FAILED'}: ${inputs.length} objects, ${errors.length} errors, `
        + `${issues.length - errors.length} warnings (${seconds(performance.now() - t0)})`);
    }
  }
  return errors.length === 0 ? EXIT.ok : EXIT.failed;
}

/**
 * The exit code and one line of an error any command throws that is not the render's own (those are cli.ts's): a
 * missing schema folder, then what reportError knows (bad input, file-system errors, bounds).
 */
export function commandFailure(e: unknown, io: Io): number {
  if (e instanceof SchemaDirectoryMissing) {
    io.err(`error: ${e.message}`);
    return EXIT.badInput;
  }
  return reportError(e, io.err);
}

/** `validate` as the entry point runs it: never throws; its failures as every command's. */
export function runValidateCommand(args: string[], io: Io): number {
  try {
    return runValidate(args, io);
  } catch (e) {
    return commandFailure(unknownOption(e, VALIDATE) ?? e, io);
  }
}
