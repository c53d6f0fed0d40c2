import { OpenTodo, todosIn } from './init-todos';
import { loadDescription, DescriptionError } from './load';
import { buildModel, ClusterModel } from './model';
import { InputError } from '../errors';
import { decodeInput, readInputBytes } from '../input/read';

/** Loads and models descriptions; every problem of every file is reported together. */
export function loadModels(files: readonly string[]): ClusterModel[] {
  const models: ClusterModel[] = [];
  const problems: string[] = [];
  for (const f of files) {
    try {
      models.push(buildModel(loadDescription(f)));
    } catch (e) {
      if (e instanceof DescriptionError) problems.push(e.message);
      else throw e;
    }
  }
  const names = new Map<string, number>();
  models.forEach((m, i) => {
    if (names.has(m.name)) problems.push(`${files[i]}: name: cluster "${m.name}" is also described in ${files[names.get(m.name)!]}`);
    names.set(m.name, i);
  });
  // one line per problem, each naming its file, line and field: exit 2 and nothing else (nothing is written)
  if (problems.length > 0) throw new InputError('invalid cluster description', problems.flatMap((p) => p.split('\n')), { detailsOnly: true });
  return models;
}

/**
 * The open TODO(init) lines of description files (read as descriptions are read: bounded). A line stays open until
 * its marker is deleted; synth and check list them (warnings), the CI script of a clusters repository fails on them.
 */
export function openTodos(files: readonly string[]): OpenTodo[] {
  return files.flatMap((f) => todosIn(f, decodeInput(f, readInputBytes(f, 'description'))));
}
