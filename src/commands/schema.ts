import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { consoleIo, EXIT, Io } from './io';
import { commandHelp, unknownOption } from './options';
import { SCHEMA } from './specs';
import { InputError, printable, reportError } from '../errors';
import { descriptionJsonSchemaText, FLEET_SCHEMA_FILE_NAME, fleetJsonSchemaText, withDescriptionReference } from '../model/json-schema';
import { PACKAGE_NAME, packageVersion, SCHEMA_FILE_NAME } from '../paths';
import { projectOf } from '../project/project-file';

/**
 * `schema`: the JSON Schema of the description (and of the fleet description beside it), and the field reference of a
 * README. The description schema and the project file only: none of the render stack (bin.ts routes it here first).
 */
export function runSchema(args: string[], io: Io = consoleIo): number {
  const { values } = parseArgs({ args, options: SCHEMA.options });
  if (values.help) {
    io.out(commandHelp(SCHEMA));
    return EXIT.ok;
  }
  if (values.readme && !existsSync(values.readme)) throw new InputError(`--readme ${values.readme}: no such file`);
  const text = descriptionJsonSchemaText();
  const clusters = values.out === undefined ? projectOf()?.clusters : undefined;
  const out = values.out === '-' ? undefined : values.out ?? (clusters && path.join(clusters, SCHEMA_FILE_NAME));
  const said = values.quiet ? () => {} : io.err;
  if (out) said(writeIfChanged(out, text, `the JSON Schema of the description (${PACKAGE_NAME} ${packageVersion()})`));
  else io.out(text.trimEnd());
  // the project's folder of descriptions gets the fleet description's schema beside (fleet.yaml)
  if (out && values.out === undefined) {
    said(writeIfChanged(path.join(path.dirname(out), FLEET_SCHEMA_FILE_NAME), fleetJsonSchemaText(), `the JSON Schema of the fleet description (${PACKAGE_NAME} ${packageVersion()})`));
  }
  if (values.readme) said(writeIfChanged(values.readme, withDescriptionReference(readFileSync(values.readme, 'utf8')), 'its field reference section'));
  return EXIT.ok;
}

/** `schema` as the entry point runs it: never throws; its failures as every command's. */
export function runSchemaCommand(args: string[], io: Io): number {
  try {
    return runSchema(args, io);
  } catch (e) {
    // an unknown option in the words of every other command (cli.ts): `schema: unknown option --x (did you mean --y?)`
    return reportError(unknownOption(e, SCHEMA) ?? e, io.err);
  }
}

/** Writes `text` to `file` unless it holds exactly that already (its time stamp stays); says which, and what the file is. */
function writeIfChanged(file: string, text: string, what: string): string {
  const shown = printable(path.relative(process.cwd(), file) || file);
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return `${shown}: ${what}, unchanged`;
  writeFileSync(file, text);
  return `wrote ${shown}: ${what}`;
}
