/**
 * A schema directory that does not exist (validation cannot run; callers report it plainly). A module of its own:
 * the option parsing of every command (help too) names it without loading the schema store and its readers.
 */
export class SchemaDirectoryMissing extends Error {
  constructor(readonly dir: string) {
    super(`schema directory ${dir} does not exist: pass --schemas DIR (a folder of CRD YAML files and a *definitions.json of the core kinds)`);
    this.name = 'SchemaDirectoryMissing';
  }
}
