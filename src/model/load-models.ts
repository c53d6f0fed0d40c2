import { OpenTodo, todosIn } from './init-todos';
import { loadDescription, DescriptionError } from './load';
import { fleetRoles, LoadedDescription } from './load-fleet';
import { buildModel, ClusterModel, withMultiKueue } from './model';
import { InputError } from '../errors';
import { decodeInput, readInputBytes } from '../input/read';

/**
 * Loads and models descriptions; every problem of every file is reported together. A description beside a fleet
 * description (fleet.yaml) that makes it a MultiKueue manager or worker gets its role, worked out from every member
 * of the fleet (read from the same folder when not named here), so that rendering one cluster renders it exactly as
 * rendering them all does.
 */
export function loadModels(files: readonly string[]): ClusterModel[] {
  const loaded: LoadedDescription[] = [];
  const problems: string[] = [];
  const load = (file: string): LoadedDescription | undefined => {
    try {
      const description = loadDescription(file);
      return { file, description, model: buildModel(description) };
    } catch (e) {
      if (e instanceof DescriptionError) problems.push(e.message);
      else throw e;
      return undefined;
    }
  };
  for (const f of files) {
    const l = load(f);
    if (l) loaded.push(l);
  }
  const names = new Map<string, number>();
  loaded.forEach((l, i) => {
    if (names.has(l.model.name)) problems.push(`${l.file}: name: cluster "${l.model.name}" is also described in ${loaded[names.get(l.model.name)!].file}`);
    names.set(l.model.name, i);
  });
  const roles = problems.length > 0 ? new Map() : fleetRoles(loaded, load, problems);
  // one line per problem, each naming its file, line and field: exit 2 and nothing else (nothing is written)
  if (problems.length > 0) throw new InputError('invalid cluster description', problems.flatMap((p) => p.split('\n')), { detailsOnly: true });
  return loaded.map((l) => withMultiKueue(l.model, roles.get(l.file)));
}

/**
 * The open TODO(init) lines of description files (read as descriptions are read: bounded). A line stays open until
 * its marker is deleted; synth and check list them (warnings), the CI script of a clusters repository fails on them.
 */
export function openTodos(files: readonly string[]): OpenTodo[] {
  return files.flatMap((f) => todosIn(f, decodeInput(f, readInputBytes(f, 'description'))));
}
