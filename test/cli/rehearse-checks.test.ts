import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { EXIT } from '../../src/cli';
import { REFERENCE_FILE, runMain } from '../helpers';

/*
 * rehearse over a description whose render fails the cross-object checks: bad input, before any twin (the rest of
 * rehearse's arguments: rehearse.test.ts). A file of its own: it replaces a module (vitest.config.mts MOCKS_MODULES).
 */

// A description named `checks-fail` renders a tree that breaks a cross-object rule (test/check/broken-checks.ts, as
// synth-gate.test.ts breaks it): the real rules and synth's path, which no valid description is known to reach now (the
// schema refuses what it can see); every other description is checked as it is.
vi.mock('../../src/check/engine', async (importOriginal) =>
  (await import('../check/broken-checks')).brokenEngine(await importOriginal<typeof import('../../src/check/engine')>(), (name) => name !== 'checks-fail'));

const dir = mkdtempSync(path.join(tmpdir(), 'rehearse-checks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rehearse: a render that fails the cross-object checks is bad input, named as synth names it, before any twin', () => {
  /** The reference description as the cluster `checks-fail` (whose render the mock above breaks). */
  const failing = (text: string) => text.replace(/^name: .*$/m, 'name: checks-fail').replace(/(\n {2}path: )dist\/instant-cluster/, '$1dist/checks-fail');
  const empty = path.join(dir, 'checks-empty-binaries');
  mkdirSync(empty, { recursive: true });
  /** synth's lines for the same description: the findings, one line each. */
  const synthLines = async (file: string) => {
    const r = await runMain('synth', '--config', file, '--out', path.join(dir, 'checks-out'), '--no-validate');
    expect(r.code).toBe(EXIT.failed);
    return r.err.filter((l) => l.startsWith('error ['));
  };
  const says = (label: string) => new RegExp(`^error: ${label.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: its render fails the cross-object checks \\(1 cross-object check error\\(s\\)\\) as synth reports them; nothing was written$`);

  it('the working tree\'s description: exit 2, each finding as synth prints it, then one line naming the file; the binaries are never looked at', async () => {
    const file = path.join(dir, 'checks-fail.yaml');
    writeFileSync(file, failing(readFileSync(REFERENCE_FILE, 'utf8')));
    const findings = await synthLines(file);
    expect(findings).toEqual(expect.arrayContaining([expect.stringMatching(/^error \[default-storage-class\] checks-fail: StorageClass local-disk: 3 StorageClasses are annotated/)]));
    const r = await runMain('rehearse', '--config', file, '--binaries', empty);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err.slice(0, -1)).toEqual(findings);
    expect(r.err.at(-1)).toMatch(says(file));
    expect(r.out).toEqual([]);
  });

  it('change mode: the commit\'s description (naming REV:path) and the working tree\'s are both checked before anything starts', async () => {
    const root = path.join(dir, 'checks-repo');
    mkdirSync(path.join(root, 'clusters'), { recursive: true });
    const git = (...args: string[]) => spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: root, encoding: 'utf8' });
    git('init', '-q');
    const file = path.join(root, 'clusters', 'lab.yaml');
    const text = readFileSync(REFERENCE_FILE, 'utf8');
    writeFileSync(file, failing(text));
    git('add', '.');
    git('commit', '-q', '-m', 'fails its checks');
    const findings = await synthLines(file);
    // the commit fails, the working tree does not
    writeFileSync(file, text);
    const atCommit = await runMain('rehearse', '--config', file, '--from', 'HEAD', '--binaries', empty);
    expect(atCommit.code).toBe(EXIT.badInput);
    expect(atCommit.err.slice(0, -1)).toEqual(findings);
    expect(atCommit.err.at(-1)).toMatch(says('HEAD:clusters/lab.yaml'));
    // the working tree fails, the commit does not
    git('commit', '-q', '-am', 'passes');
    writeFileSync(file, failing(text));
    const working = await runMain('rehearse', '--config', file, '--from', 'HEAD', '--binaries', empty);
    expect(working.code).toBe(EXIT.badInput);
    expect(working.err.slice(0, -1)).toEqual(findings);
    expect(working.err.at(-1)).toMatch(says(file));
    // both clean: as far as the binaries
    writeFileSync(file, text);
    const clean = await runMain('rehearse', '--config', file, '--from', 'HEAD', '--binaries', empty);
    expect(clean.err).toEqual([expect.stringMatching(/no executable control-plane/)]);
  });
});
