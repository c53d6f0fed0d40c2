import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

/*
 * The fenced blocks of the user documentation (README.md, docs/**\/*.md) a test runs, and the shell
 * session that runs them. Two markers, in the block's info string (GitHub renders them by the
 * first word only):
 *
 * - ```sh runnable  : every line is a command, run as written in one shell session per file (cd and
 *   variables carry over, as in the reader's terminal); each must exit 0, or the code its comment
 *   says (`# exit 1: ...`).
 * - ```yaml file=PATH : the part of PATH (relative to the session's folder) the reader changes, applied
 *   as a JSON merge patch (RFC 7386: mappings merge key by key, lists and values are replaced as a
 *   whole, null removes a key); PATH is created when it does not exist.
 *
 * Every other block is shown, never run: commands that need a live cluster, the network or a
 * placeholder (`<version>`) stay unmarked.
 */

export interface Block {
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly info: string;
  readonly body: string;
}

/** The info strings a block of the documentation may carry: anything else is a typo of a marker. */
export const KNOWN_INFO = /^(|sh|sh runnable|yaml|yaml file=\S+|ts|json|text|console)$/;

export function fencedBlocks(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(.*)$/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1];
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j] !== `${indent}\`\`\``) body.push(lines[j++].slice(indent.length));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a fenced block that never ends`);
    blocks.push({ file, line: i + 1, info: open[2].trim(), body: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** README.md, then every page of docs/ (sorted): the order their sessions run in. */
export function documentationFiles(root: string): string[] {
  const pages: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(path.join(root, dir)).sort()) {
      const rel = path.join(dir, name);
      if (statSync(path.join(root, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.md')) pages.push(rel);
    }
  };
  walk('docs');
  return ['README.md', ...pages];
}

const quote = (s: string): string => `'${s.replace(/'/g, '\'\\\'\'')}'`;

/**
 * The shell script of one file's runnable blocks: each command runs in the session's shell (its
 * output appended to $LOG), and the first that exits with another code than the expected one ends
 * the script with a line naming the file, the line, the command and both codes. `merge` is the
 * command that applies a YAML block to its file (stdin: the block).
 */
export function sessionScript(blocks: readonly Block[], merge: string): string {
  const out: string[] = [];
  const check = (where: string, command: string, expected: number): void => {
    out.push(`__rc=$?; if [ "$__rc" -ne ${expected} ]; then echo ${quote(`${where}: `)}"exit $__rc, expected ${expected}: "${quote(command)} >&2; exit 1; fi`);
  };
  for (const b of blocks) {
    const where = `${b.file}:${b.line}`;
    const target = /^yaml file=(\S+)$/.exec(b.info);
    if (target) {
      out.push(`printf '%s\\n' ${quote(`$ (edit ${target[1]}, ${where})`)} >>"$LOG"`);
      out.push(`${merge} ${quote(target[1])} <<'__BLOCK__' >>"$LOG" 2>&1`, b.body, '__BLOCK__');
      check(where, `edit ${target[1]}`, 0);
      continue;
    }
    if (b.info !== 'sh runnable') continue;
    const lines = b.body.split('\n');
    for (let i = 0; i < lines.length; i++) {
      let command = lines[i];
      const at = `${b.file}:${b.line + 1 + i}`;
      while (command.endsWith('\\') && i + 1 < lines.length) command = `${command.slice(0, -1)} ${lines[++i].trim()}`;
      if (command.trim() === '' || command.trim().startsWith('#')) continue;
      const expected = /\s#\s*exit (\d+)\b/.exec(command);
      out.push(`printf '%s\\n' ${quote(`$ ${command}`)} >>"$LOG"`, '__t=$(date +%s%N)', '{', command, '} >>"$LOG" 2>&1');
      check(at, command.trim(), expected ? Number(expected[1]) : 0);
      out.push('echo "  ($(( ($(date +%s%N) - __t) / 1000000 )) ms)" >>"$LOG"');
    }
  }
  return `${out.join('\n')}\n`;
}

export function readBlocks(root: string, file: string): Block[] {
  return fencedBlocks(file, readFileSync(path.join(root, file), 'utf8'));
}
