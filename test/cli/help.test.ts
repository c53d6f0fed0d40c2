import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS, main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { PACKAGE_NAME, packageVersion } from '../../src/paths';
import { BIN, ROOT } from '../helpers';

/** The CLI's exit code and output (check's help and the global help name the engines they find: asynchronous). */
async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (l) => { out += `${l}\n`; }, err: (l) => { err += `${l}\n`; } });
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
  it.each(names)('%s --help', async (name) => {
    const { spec } = COMMANDS[name];
    const r = await run(name, '--help');
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toContain(`Usage: ${spec.usage}`);
    const listed = listedOptions(r.out);
    expect(listed.sort()).toEqual(Object.keys(spec.options).sort());
    // what the help lists is what the command parses: each listed option is accepted ...
    for (const o of listed) {
      const value = spec.options[o].type === 'string' ? ['x'] : [];
      const accepted = await run(name, `--${o}`, ...value, '--help');
      expect(accepted.code, `${name} --${o}: ${accepted.err}`).toBe(EXIT.ok);
    }
    // ... and every other command's option is refused as unknown
    for (const o of [...everyOption].filter((x) => !listed.includes(x))) {
      const refused = await run(name, `--${o}`, 'x');
      expect(refused.code, `${name} --${o}`).toBe(EXIT.badInput);
      expect(refused.err).toMatch(new RegExp(`^error: ${name}: unknown option --${o}(?: \\(did you mean --[\\w-]+\\?\\))?; see gpu-cluster-manifests ${name} --help`));
    }
  });

  it('an option typed wrong names the one it was likely meant to be, as a mistyped command does', async () => {
    for (const [args, says] of [
      [['upgrade-plan', '--verbos'], 'error: upgrade-plan: unknown option --verbos (did you mean --verbose?); see gpu-cluster-manifests upgrade-plan --help'],
      [['synth', '--allow-delet'], 'error: synth: unknown option --allow-delet (did you mean --allow-delete?); see gpu-cluster-manifests synth --help'],
      [['verify', '--contxt', 'lab'], 'error: verify: unknown option --contxt (did you mean --context?); see gpu-cluster-manifests verify --help'],
      [['check', '--Quiet'], 'error: check: unknown option --Quiet (did you mean --quiet?); see gpu-cluster-manifests check --help'],
      [['validate', '--schema', 'x'], 'error: validate: unknown option --schema (did you mean --schemas?); see gpu-cluster-manifests validate --help'],
      [['new', '--quiett', 'x'], 'error: new: unknown option --quiett (did you mean --quiet?); see gpu-cluster-manifests new --help'],
      [['diff', '--xyz'], 'error: diff: unknown option --xyz; see gpu-cluster-manifests diff --help'],
    ] as const) {
      const r = await run(...args);
      expect(r.code, args.join(' ')).toBe(EXIT.badInput);
      expect(r.err.split('\n')[0], args.join(' ')).toMatch(new RegExp(`^${says.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    }
  });

  it('each command offers what it is documented to: cluster sources, init\'s names, rule lists, formats, TypeScript descriptions', async () => {
    const optionsOf = async (name: string) => listedOptions((await run(name, '--help')).out);
    expect(await optionsOf('synth')).toEqual(expect.arrayContaining(['config', 'out', 'schemas', 'no-validate', 'format', 'quiet', 'allow-delete']));
    // synth runs no engine: the upstream installs are check's
    expect(await optionsOf('synth')).not.toContain('upstream');
    expect(await optionsOf('synth')).not.toContain('snapshot');
    expect(await optionsOf('diff')).toContain('allow-delete');
    expect(await optionsOf('check')).toEqual(expect.arrayContaining(['list-rules', 'format', 'config', 'upstream']));
    expect(await optionsOf('preflight')).toEqual(expect.arrayContaining(['config', 'snapshot', 'kubeconfig', 'context', 'timeout', 'list-rules', 'format']));
    expect(await optionsOf('init')).toEqual(expect.arrayContaining(['snapshot', 'kubeconfig', 'context', 'name', 'repo', 'path', 'out']));
    expect(await optionsOf('init')).not.toContain('config');
    for (const name of ['synth', 'diff', 'check', 'preflight']) expect((await run(name, '--help')).out, name).toMatch(/ --config FILE [^-]*TypeScript \(\.ts/);
    // check names the engines it renders the Applications with, after its options
    expect((await run('check', '--help')).out).toMatch(/\nEngines check renders the Applications with .*:\n {2}\S/);
  });

  it('the global help lists every command, and no command\'s options', async () => {
    const r = await run('--help');
    expect(r.code).toBe(EXIT.ok);
    for (const name of names) expect(r.out).toContain(`${PACKAGE_NAME} ${name}`);
    expect(r.out).not.toContain('Options:');
    expect(r.out).toContain('Engines (check renders every Application with them):');
    expect((await run()).code).toBe(EXIT.badInput);
  });

  it('--version and -v print the version, in this process and through the compiled CLI (which loads nothing else for it)', async () => {
    const version = `${PACKAGE_NAME} ${packageVersion()}`;
    expect(packageVersion()).not.toBe('0.0.0');
    for (const flag of ['--version', '-v']) {
      expect(await run(flag)).toEqual({ code: EXIT.ok, out: `${version}\n`, err: '' });
      const r = spawnSync(process.execPath, [BIN, flag], { cwd: ROOT, encoding: 'utf8' });
      expect([r.status, r.stdout, r.stderr]).toEqual([0, `${version}\n`, '']);
    }
    expect((await run('--help')).out).toContain(`${PACKAGE_NAME} --version (-v) prints the toolkit's version.`);
  });

  it('a reader that stops reading (`| head -1`) ends the command quietly: no EPIPE stack trace, the command\'s own exit code', async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'closed-output-'));
    try {
      // the schema is more than a pipe holds (64 KiB): its write fails on the closed pipe, whenever the reader left
      const child = spawn(process.execPath, [BIN, 'schema', '--out', '-'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.destroy();
      let err = '';
      child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect([code, err]).toEqual([EXIT.ok, '']);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('a mistyped command is one line naming the command it was likely meant to be; a word far from all is only refused', async () => {
    for (const [typed, meant] of [['synht', 'synth'], ['chek', 'check'], ['Preflight', 'preflight'], ['vaildate', 'validate'], ['schmea', 'schema']]) {
      const r = await run(typed, '--config', 'x.yaml');
      expect(r.code).toBe(EXIT.badInput);
      expect(r.err).toBe(`unknown command "${typed}" (did you mean "${meant}"? expected one of: ${names.join(', ')}); see --help\n`);
    }
    expect((await run('deploy')).err).toBe(`unknown command "deploy" (expected one of: ${names.join(', ')}); see --help\n`);
    // an unknown flag in the command's place, and a control character, are shown quoted
    expect((await run('--synth')).err).toMatch(/^unknown command "--synth" \(expected one of/);
    expect((await run('sy\u001b[2Jnth')).err).toMatch(/^unknown command "sy\\u001b\[2Jnth" /);
  });

  it('docs/commands.md describes the installed CLI: a section per command, as npx runs it, naming each of its options; no npm script', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'commands.md'), 'utf8');
    expect(doc).not.toMatch(/npm run /);
    const sections = new Map(doc.split(/^## /m).slice(1).map((part) => [part.slice(0, part.indexOf('\n')).trim(), part]));
    expect([...sections.keys()].sort()).toEqual([...names].sort());
    for (const name of names) {
      const section = sections.get(name)!;
      expect(section, name).toContain(`npx ${PACKAGE_NAME} ${name}`);
      for (const option of Object.keys(COMMANDS[name].spec.options).filter((o) => o !== 'help' || name === 'new')) expect(section, `${name} --${option}`).toContain(`--${option}`);
    }
    expect(doc).toContain('--version');
  });

  it('through the compiled CLI as npm runs it', () => {
    const r = spawnSync(process.execPath, [BIN, 'preflight', '--help'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(listedOptions(r.stdout)).toEqual(Object.keys(COMMANDS.preflight.spec.options));
  });
});
