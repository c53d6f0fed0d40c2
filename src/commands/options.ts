import { existsSync } from 'node:fs';
import { InputError, printable } from '../errors';
import { usableFolder } from '../files';
import { closestName } from '../model/issue-hints';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM, DEV_CHECKOUT, PACKAGE_NAME } from '../paths';
import { SchemaDirectoryMissing } from '../validate/schema-directory';

/**
 * One command-line option: what node:util parseArgs needs (type, multiple, short) and what its
 * help prints. A command declares its options once, in one table (`CommandSpec.options`): the
 * table is both what parseArgs parses and what `<command> --help` lists, so the two never differ.
 */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly multiple?: boolean;
  readonly short?: string;
  /** The value's placeholder in the help (`FILE`); `[PATH]` for an optional value. Absent for a flag. */
  readonly value?: string;
  /** What it does (its help: a sentence or two; wrapped when printed). */
  readonly help: string;
}

/** The options of one command, by long name (parseArgs' `options`). */
export type OptionTable = Readonly<Record<string, OptionSpec>>;

/** A command of the CLI: its usage line, what it does and its option table. */
export interface CommandSpec<T extends OptionTable = OptionTable> {
  readonly name: string;
  /** `gpu-cluster-manifests <name> ...` as the user types it (positionals included). */
  readonly usage: string;
  /** One line for the global help's command list. */
  readonly summary: string;
  /** A paragraph for `<command> --help`. */
  readonly description: string;
  readonly options: T;
  /** What exit code 1 means for this command (the others are the same everywhere); absent: it never exits 1. */
  readonly failed?: string;
}

/** Options several commands share; a command may give one its own help (`{ ...OPTIONS.config, help }`). */
export const OPTIONS = {
  'config': { type: 'string', multiple: true, value: 'FILE', help: 'a cluster description: YAML, JSON or TypeScript (.ts, exporting defineCluster(...)); repeatable' },
  'out': { type: 'string', value: 'DIR', help: 'output root (default: the project\'s output folder, out: in gpu-cluster-manifests.yaml)' },
  'schemas': {
    type: 'string',
    multiple: true,
    value: 'DIR',
    help: 'CRD YAML files and core definitions to validate against; repeatable (default: the pinned ones the package ships). Your own '
      + 'cluster\'s: kubectl get crd -o yaml > my-crds/crds.yaml, then --schemas my-crds --schemas <the core definitions folder>',
  },
  'upstream': {
    type: 'string',
    value: 'DIR',
    help: 'the vendored upstream Helm charts and kustomize overlays the Applications are rendered from with helm and '
      + 'kustomize (default: the pinned ones the package ships; docs/upstream-installs.md says how to fill one with helm pull)',
  },
  'allow-delete': {
    type: 'boolean',
    help: 'remove rendered objects (a dropped tenant, folder or cluster) from the output; without it synth refuses and writes nothing',
  },
  'no-validate': { type: 'boolean', help: 'skip the schema validation (not recommended)' },
  'format': { type: 'string', value: 'FORMAT', help: 'text (default) or json (machine-readable)' },
  'quiet': { type: 'boolean', help: 'print errors only (no summary, no warnings, no progress)' },
  'verbose': { type: 'boolean', help: 'print every finding, the informational ones too' },
  'list-rules': { type: 'boolean', help: 'print every rule id, its severity and what it asserts, then exit' },
  'help': { type: 'boolean', short: 'h', help: 'this help' },
} as const satisfies OptionTable;

/** Command-line options of every command that renders (`synth`, `diff`). */
export const RENDER_OPTIONS = {
  'config': OPTIONS.config,
  'out': OPTIONS.out,
  'schemas': OPTIONS.schemas,
  'no-validate': OPTIONS['no-validate'],
  'format': OPTIONS.format,
  'help': OPTIONS.help,
} as const satisfies OptionTable;

/**
 * An option of no command (parseArgs' ERR_PARSE_ARGS_UNKNOWN_OPTION) as bad input in one line naming the option it was
 * likely meant to be, as a mistyped command or description field is (`upgrade-plan: unknown option --verbos (did you
 * mean --verbose?)`); undefined for any other error.
 */
export function unknownOption(e: unknown, spec: CommandSpec): InputError | undefined {
  if (!(e instanceof TypeError) || (e as NodeJS.ErrnoException).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const given = /^Unknown option '(.+?)'(?:\.|$)/m.exec(e.message)?.[1];
  if (given === undefined) return undefined;
  const names = Object.keys(spec.options);
  const long = given.startsWith('--') ? given.slice(2).split('=')[0] : undefined;
  const meant = long === undefined ? undefined : closestName(long, names);
  return new InputError(`${spec.name}: unknown option ${printable(given)}${meant ? ` (did you mean --${meant}?)` : ''}; see ${PACKAGE_NAME} ${spec.name} --help`);
}

/** Exit codes every command shares; `failed` says what 1 means for the command. */
function exitCodes(failed: string | undefined): string {
  return `Exit codes: 0 ok, ${failed ? `1 ${failed}, ` : ''}2 bad input (a description, an argument, a missing file or schema folder).`;
}

const WIDTH = 100;

/** Words of `text` in lines of at most `width` characters, each prefixed by `indent` (the first by `first`). */
function wrap(text: string, width: number, first: string, indent: string): string[] {
  const lines: string[] = [];
  let line = first;
  let empty = true;
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (!empty && line.length + 1 + word.length > width) {
      lines.push(line);
      line = indent;
      empty = true;
    }
    line += empty ? word : ` ${word}`;
    empty = false;
  }
  lines.push(line);
  return lines;
}

function optionLabel(name: string, o: OptionSpec): string {
  const long = `--${name}${o.value ? ` ${o.value}` : ''}`;
  return o.short ? `-${o.short}, ${long}` : long;
}

/** `<command> --help`: usage, what it does, exactly the command's options, exit codes. */
export function commandHelp(spec: CommandSpec): string {
  // --help last, whatever the table's order
  const entries = Object.entries(spec.options).sort(([a], [b]) => Number(a === 'help') - Number(b === 'help'));
  const labels = entries.map(([name, o]) => [optionLabel(name, o), o.help] as const);
  const column = Math.min(Math.max(...labels.map(([l]) => l.length)) + 4, 30);
  const options = labels.flatMap(([label, help]) => {
    const pad = ' '.repeat(column);
    const first = `  ${label}`;
    return first.length + 2 > column
      ? [first, ...wrap(help, WIDTH, pad, pad)]
      : wrap(help, WIDTH, first.padEnd(column), pad);
  });
  return [
    `Usage: ${spec.usage}`,
    '',
    ...wrap(spec.description, WIDTH, '', ''),
    '',
    'Options:',
    ...options,
    '',
    exitCodes(spec.failed),
  ].join('\n');
}

/** The global help: every command with its usage and summary. */
export function globalHelp(specs: readonly CommandSpec[]): string {
  return [
    'gpu-cluster-manifests: render GPU Kubernetes clusters from one typed description.',
    '',
    `Commands (${PACKAGE_NAME} <command> --help lists a command's options; in the toolkit's own repository: npm run <command> -- ...):`,
    ...specs.flatMap((s) => [`  ${s.usage}`, ...wrap(s.summary, WIDTH, '      ', '      ')]),
    '',
    `${PACKAGE_NAME} --version (-v) prints the toolkit's version.`,
    '',
    exitCodes('a validation, a check or a preflight failed (diff: an object would be deleted)'),
  ].join('\n');
}

/** The options `synth` and `diff` share, as parsed. */
export interface RenderOptionValues {
  readonly 'config'?: string[];
  readonly 'schemas'?: string[];
  readonly 'no-validate'?: boolean;
}

/**
 * A folder the package ships (its pinned schemas, its upstream installs): in an installed package a
 * missing one is a broken install, bad input saying how to fix it. The toolkit's own checkout reads
 * them from `../shared`: a missing one says how to lay it out.
 */
export function packagedFolder(dir: string, what: string, flag: string): string {
  if (existsSync(dir)) return dir;
  if (!DEV_CHECKOUT) throw new InputError(`the installed ${PACKAGE_NAME} lacks ${what} (${dir}): reinstall it (npm ci), or name ${flag} DIR`);
  throw new InputError(`this checkout reads ${what} from ${dir}, which is missing: lay out ../shared with npm run shared `
    + `(docs/development.md#the-pinned-upstream-files-shared), or name ${flag} DIR`);
}

/**
 * The upstream installs folder a command names, or the packaged one; an explicit one that does not exist or
 * is no folder (a regular file, /dev/null, a FIFO) is bad input.
 */
export function upstreamDir(value: string | undefined): string {
  if (value === undefined) return packagedFolder(DEFAULT_UPSTREAM, 'its pinned upstream charts and overlays', '--upstream');
  if (!existsSync(value)) throw new InputError(`--upstream ${value}: no such folder`);
  return usableFolder(value, `--upstream ${value}`, 'name the folder of the vendored charts and overlays');
}

/** Schema directories to validate against: the given ones, or the packaged ones. */
export function schemaDirs(values: readonly string[] | undefined): string[] {
  return values && values.length > 0 ? [...values] : [packagedFolder(DEFAULT_SCHEMAS, 'its pinned CRD schemas', '--schemas')];
}

/** Checks the description files and schema directories a render names; every missing one is bad input. */
export function renderInputs(values: RenderOptionValues): { configs: string[]; schemas: string[] | false } {
  const configs = values.config ?? [];
  for (const c of configs) if (!existsSync(c)) throw new InputError(`--config ${c}: no such file`);
  const schemas = values['no-validate'] ? false : schemaDirs(values.schemas);
  if (schemas) for (const s of schemas) if (!existsSync(s)) throw new SchemaDirectoryMissing(s);
  return { configs, schemas };
}
