import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli';
import { PROJECT_FILE } from '../../src/project/names';
import { HAS_SCHEMAS, HAS_UPSTREAM, REFERENCE_FILE, runCliInProcess } from '../helpers';
import { SNAPSHOT } from '../preflight/snapshots';

/*
 * --quiet prints errors only, in every command: no summary, no warning, no note, no progress. And check counts the
 * warnings it printed (its rules' and the open TODO(init) lines'). A project whose description has open TODO(init)
 * lines (as init writes it) warns in synth, check and preflight.
 */

describe('--quiet', () => {
  it('is an option of every command', () => {
    for (const [name, { spec }] of Object.entries(COMMANDS)) expect(Object.keys(spec.options), name).toContain('quiet');
  });
});

describe.skipIf(!HAS_SCHEMAS || !HAS_UPSTREAM)('--quiet in a project whose description warns', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'quiet-'));
  const description = path.join(dir, 'clusters', 'lab.yaml');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeAll(() => {
    mkdirSync(path.join(dir, 'clusters'));
    writeFileSync(path.join(dir, PROJECT_FILE), 'clusters: clusters\nout: dist\n');
    // the reference description with two open TODO(init) lines
    const text = readFileSync(REFERENCE_FILE, 'utf8').split('\n');
    const named = text.findIndex((l) => l.startsWith('name: '));
    text[named] = 'name: lab # TODO(init): the cluster name';
    text.push('# TODO(init): a second open line');
    writeFileSync(description, text.join('\n'));
  });
  const run = (...argv: string[]) => runCliInProcess(argv, { cwd: dir });

  it('synth, schema, diff: nothing but errors (the warnings of the open TODO(init) lines without --quiet)', async () => {
    const loud = await run('synth');
    expect(loud.code, loud.stderr).toBe(0);
    expect(loud.stderr).toMatch(/^warning: clusters\/lab\.yaml:\d+: TODO\(init\)/m);
    for (const argv of [['synth'], ['schema'], ['diff']]) {
      const r = await run(...argv, '--quiet');
      expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(0);
      expect([r.stdout, r.stderr], argv.join(' ')).toEqual(['', '']);
    }
  });

  it('check: counts every warning it printed; with --quiet prints none', async () => {
    await run('synth', '--quiet');
    const loud = await run('check');
    expect(loud.code, loud.stderr).toBe(0);
    // each rule's warning and each open TODO(init) line (not the line that counts them)
    const printed = loud.stdout.split('\n').filter((l) => l.startsWith('warning') && !/^warning: \d+ open TODO\(init\) line/.test(l));
    expect(printed.length).toBeGreaterThan(0);
    expect(loud.stdout).toMatch(new RegExp(`^ok: .*, 0 errors, ${printed.length} warnings \\(`, 'm'));
    const json = JSON.parse((await run('check', '--format', 'json')).stdout) as { warnings: number };
    expect(json.warnings).toBe(printed.length);
    const quiet = await run('check', '--quiet');
    expect([quiet.code, quiet.stdout, quiet.stderr]).toEqual([0, '', '']);
  }, 180_000);

  it('validate, preflight, init, new: the errors only', async () => {
    await run('synth', '--quiet');
    const validate = await run('validate', path.join(dir, 'dist', 'lab'), '--quiet');
    expect([validate.code, validate.stdout, validate.stderr]).toEqual([0, '', '']);
    const loud = await run('preflight', '--config', description, '--snapshot', SNAPSHOT);
    expect(loud.stdout).toMatch(/^warning /m);
    const preflight = await run('preflight', '--config', description, '--snapshot', SNAPSHOT, '--quiet');
    expect(preflight.stdout).toBe('');
    expect(preflight.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('error ') && !l.startsWith('  fix: '))).toEqual([]);
    const init = await run('init', '--snapshot', SNAPSHOT, '--out', path.join(dir, 'init.yaml'), '--quiet');
    expect([init.code, init.stdout, init.stderr]).toEqual([0, '', '']);
    const made = await run('new', path.join(dir, 'repo'), '--quiet');
    expect([made.code, made.stdout, made.stderr]).toEqual([0, '', '']);
  }, 180_000);
});
