import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS, EXIT, main } from '../../src/cli';
import { runNew } from '../../src/commands/new';
import { PACKAGE_NAME } from '../../src/paths';
import { fixtureProject, ROOT, runMain } from '../helpers';
import { SNAPSHOT } from '../preflight/snapshots';

/*
 * The lines init marks TODO(init) (facts the cluster does not show) are reported until someone deletes the
 * marker: synth and check list each open one as a warning naming file and line (exit 0), the CI script of a
 * clusters repository fails on them; and init's own hints name commands the user's repository has.
 */

describe('open TODO(init) lines', () => {
  const cwd = process.cwd();
  afterEach(() => process.chdir(cwd));
  const run = runMain;

  it('synth and check list each one as a warning naming the file and line, and exit 0; once the markers are gone, nothing', async () => {
    const root = fixtureProject();
    process.chdir(root);
    expect((await run('init', '--snapshot', SNAPSHOT, '--name', 'lab', '--repo', 'https://git.example.com/platform/clusters.git')).code).toBe(EXIT.ok);
    const file = path.join(root, 'clusters', 'lab.yaml');
    const lines = readFileSync(file, 'utf8').split('\n');
    // the header's "Check every TODO(init) line" is no open one
    expect(lines[2]).toMatch(/^# Check every TODO\(init\) line /);
    const open = lines.flatMap((l, i) => (l.includes('TODO(init):') ? [`clusters/lab.yaml:${i + 1}: ${l.slice(l.indexOf('TODO(init):'))}`] : []));
    expect(open.length).toBeGreaterThan(2);
    const warnings = [...open.map((l) => `warning: ${l}`), expect.stringMatching(new RegExp(`^warning: ${open.length} open TODO\\(init\\) line\\(s\\): check each against the cluster, then delete its marker`))];

    const synth = await run('synth');
    expect(synth.code, synth.err.join('\n')).toBe(EXIT.ok);
    expect(synth.err).toEqual(warnings);
    // --quiet: errors only
    expect((await run('synth', '--quiet')).err).toEqual([]);
    const json = await run('synth', '--format', 'json');
    expect(JSON.parse(json.out.join('\n')).todos).toHaveLength(open.length);

    const check = await run('check', '--format', 'json');
    expect(check.code, check.err.join('\n')).toBe(EXIT.ok);
    const report = JSON.parse(check.out.join('\n'));
    expect(report.todos.map((t: { file: string; line: number }) => `${path.relative(root, t.file)}:${t.line}`)).toEqual(open.map((l) => l.split(': ')[0]));
    expect(report.errors).toBe(0);

    writeFileSync(file, lines.map((l) => l.replace(/\s*# TODO\(init\).*$/, '')).join('\n'));
    const done = await run('synth', '--quiet');
    expect([done.code, done.err]).toEqual([EXIT.ok, []]);
  });

  it('the CI script of a clusters repository fails on them, listing each, before it renders anything', () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'ci-todos-')), 'repo');
    expect(runNew([dir], { out: () => {}, err: () => {} })).toBe(EXIT.ok);
    writeFileSync(path.join(dir, 'clusters', 'lab.yaml'), 'name: lab\nnetwork:\n  podInterface: eth0 # TODO(init): the pod network interface\n');
    const r = spawnSync('sh', ['ci.sh'], { cwd: dir, encoding: 'utf8', env: { ...process.env, PATH: `/nonexistent${path.delimiter}${process.env.PATH}` } });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toBe('open TODO(init) lines (facts init could not read from the cluster): check each, then delete its marker:\n'
      + 'clusters/lab.yaml:3:  podInterface: eth0 # TODO(init): the pod network interface\n');
    expect(readdirSync(dir)).not.toContain('dist');
  });
});

describe('init\'s hints', () => {
  it('name commands the user\'s repository has: the installed CLI\'s, never this repository\'s npm scripts or example files', () => {
    const sources = readdirSync(path.join(ROOT, 'src', 'init')).map((f) => readFileSync(path.join(ROOT, 'src', 'init', f), 'utf8'));
    for (const text of sources) {
      expect(text).not.toMatch(/npm run \w/);
      expect(text).not.toMatch(/src\/clusters\/[\w-]+\.yaml/);
      for (const [, command] of text.matchAll(/(?:gpu-cluster-manifests|\$\{PACKAGE_NAME\}) ([a-z][\w-]*)/g)) expect(Object.keys(COMMANDS), command).toContain(command);
    }
  });

  it('a cluster without GPU workers points at the example the installed package ships', async () => {
    const snapshot = path.join(mkdtempSync(path.join(tmpdir(), 'no-gpu-')), 'snapshot.yaml');
    writeFileSync(snapshot, 'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: cpu-0\n  status:\n    allocatable:\n      cpu: "8"\n');
    const err: string[] = [];
    expect(await main(['init', '--snapshot', snapshot, '--out', '-'], { out: () => {}, err: (l) => err.push(l) })).toBe(EXIT.badInput);
    const [, example] = /start from the example of (\S+) \(its Example section\)/.exec(err.join('\n')) ?? [];
    expect(readFileSync(path.resolve(example), 'utf8')).toMatch(/^## Example$/m);
    expect(err.join('\n')).not.toContain(`${PACKAGE_NAME} repository`);
  });
});
