import { existsSync } from 'node:fs';
import { InputError } from '../errors';
import { DEFAULT_SCHEMAS } from '../paths';
import { SchemaDirectoryMissing } from '../validate/schemas';

/** Command-line options of every command that renders (`synth`, `diff`), for node:util parseArgs. */
export const RENDER_OPTIONS = {
  'config': { type: 'string', multiple: true },
  'out': { type: 'string' },
  'schemas': { type: 'string', multiple: true },
  'no-validate': { type: 'boolean' },
  'format': { type: 'string' },
  'help': { type: 'boolean', short: 'h' },
} as const;

/** The options `synth` and `diff` share, as parsed. */
export interface RenderOptionValues {
  readonly 'config'?: string[];
  readonly 'schemas'?: string[];
  readonly 'no-validate'?: boolean;
}

/** The upstream installs folder a command names; an explicit one that does not exist is bad input. */
export function upstreamDir(value: string | undefined): string | undefined {
  if (value !== undefined && !existsSync(value)) throw new InputError(`--upstream ${value}: no such folder`);
  return value;
}

/** Schema directories to validate against: the given ones, or ../shared/crds. */
export function schemaDirs(values: readonly string[] | undefined): string[] {
  return values && values.length > 0 ? [...values] : [DEFAULT_SCHEMAS];
}

/** Checks the description files and schema directories a render names; every missing one is bad input. */
export function renderInputs(values: RenderOptionValues): { configs: string[]; schemas: string[] | false } {
  const configs = values.config ?? [];
  for (const c of configs) if (!existsSync(c)) throw new InputError(`--config ${c}: no such file`);
  const schemas = values['no-validate'] ? false : schemaDirs(values.schemas);
  if (schemas) for (const s of schemas) if (!existsSync(s)) throw new SchemaDirectoryMissing(s);
  return { configs, schemas };
}
