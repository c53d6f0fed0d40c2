import * as path from 'node:path';
import { printable } from '../errors';

/** The marker `init` writes on every line a person has to check (facts the cluster does not show): `TODO(init): why`. */
export const INIT_TODO = 'TODO(init)';

/** What makes a line an open TODO(init): the marker and its colon (the header's "check every TODO(init) line" is none). */
export const OPEN_TODO = `${INIT_TODO}:`;

/** An open TODO(init) line of a description: the file, its line (1-based) and what the marker says. */
export interface OpenTodo {
  readonly file: string;
  readonly line: number;
  readonly note: string;
}

/*
 * No dependency here: `new` (which runs before any is installed) writes the marker into the CI script it makes.
 * load-models.ts reads the open ones of description files.
 */

/** The TODO(init) lines of a description's text. */
export function todosIn(file: string, text: string): OpenTodo[] {
  const out: OpenTodo[] = [];
  text.split('\n').forEach((line, i) => {
    const at = line.indexOf(OPEN_TODO);
    if (at >= 0) out.push({ file, line: i + 1, note: line.slice(at + OPEN_TODO.length).trim() });
  });
  return out;
}

/** The warning lines of open TODO(init) lines: one per line, naming file and line, then what to do. */
export function todoWarnings(todos: readonly OpenTodo[], cwd = process.cwd()): string[] {
  if (todos.length === 0) return [];
  const lines = todos.map((t) => printable(`warning: ${path.relative(cwd, t.file) || t.file}:${t.line}: ${INIT_TODO}${t.note ? `: ${t.note}` : ''}`));
  return [...lines, `warning: ${todos.length} open ${INIT_TODO} line(s): check each against the cluster, then delete its marker (the ci.sh of a clusters repository fails while one is open)`];
}
