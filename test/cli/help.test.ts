import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS, main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { ROOT } from '../helpers';

function run(...args: string[]): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = main(args, { out: (l) => { out += `${l}\n`; }, err: (l) => { err += `${l}\n`; } });
  if (typeof code !== 'number') throw new Error(`${args.join(' ')}: asynchronous`);
  return { code, out, err };
}

/** The long options an option list of a help text names (`  --out DIR   ...`, `  -h, --help`). */
function listedOptions(help: string): string[] {
  const section = help.split('\nOptions:\n')[1]?.split('\n\n')[0] ?? '';
  return [...section.matchAll(/^ {2}(?:-\w, )?--([a-z][a-z-]*)/gm)].map((m) => m[1]);
}

const names = Object.keys(COMMANDS);
const everyOption = new Set(names.flatMap((n) => Object.keys(COMMANDS[n].spec.options)));

describe('--help of each command lists exactly that command\'s options', () => {
  it.each(names)('%s --help', (name) => {
    const { spec } = COMMANDS[name];
    const r = run(name, '--help');
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toContain(`Usage: ${spec.usage}`);
    const listed = listedOptions(r.out);
    expect(listed.sort()).toEqual(Object.keys(spec.options).sort());
    // what the help lists is what the command parses: each listed option is accepted ...
    for (const o of listed) {
      const value = spec.options[o].type === 'string' ? ['x'] : [];
      const accepted = run(name, `--${o}`, ...value, '--help');
      expect(accepted.code, `${name} --${o}: ${accepted.err}`).toBe(EXIT.ok);
    }
    // ... and every other command's option is refused as unknown
    for (const o of [...everyOption].filter((x) => !listed.includes(x))) {
      const refused = run(name, `--${o}`, 'x');
      expect(refused.code, `${name} --${o}`).toBe(EXIT.badInput);
      expect(refused.err).toMatch(new RegExp(`Unknown option '--${o}'`));
    }
  });

  it('each command offers what it is documented to: cluster sources, init\'s names, rule lists, formats, TypeScript descriptions', () => {
    const optionsOf = (name: string) => listedOptions(run(name, '--help').out);
    expect(optionsOf('synth')).toEqual(expect.arrayContaining(['config', 'out', 'schemas', 'upstream', 'no-validate', 'format', 'quiet']));
    expect(optionsOf('synth')).not.toContain('snapshot');
    expect(optionsOf('diff')).toContain('allow-delete');
    expect(optionsOf('check')).toEqual(expect.arrayContaining(['list-rules', 'format', 'config']));
    expect(optionsOf('preflight')).toEqual(expect.arrayContaining(['config', 'snapshot', 'kubeconfig', 'context', 'timeout', 'list-rules', 'format']));
    expect(optionsOf('init')).toEqual(expect.arrayContaining(['snapshot', 'kubeconfig', 'context', 'name', 'repo', 'path', 'out']));
    expect(optionsOf('init')).not.toContain('config');
    for (const name of ['synth', 'diff', 'check', 'preflight']) expect(run(name, '--help').out, name).toMatch(/ --config FILE [^-]*TypeScript \(\.ts/);
  });

  it('the global help lists every command, and no command\'s options', () => {
    const r = run('--help');
    expect(r.code).toBe(EXIT.ok);
    for (const name of names) expect(r.out).toContain(`npm run ${name}`);
    expect(r.out).not.toContain('Options:');
    expect(run().code).toBe(EXIT.badInput);
  });

  it('through the compiled CLI as npm runs it', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'lib', 'src', 'cli.js'), 'preflight', '--help'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(listedOptions(r.stdout)).toEqual(Object.keys(COMMANDS.preflight.spec.options));
  });
});
