import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { EXIT, main } from '../../src/cli';
import { REFERENCE_FILE } from '../helpers';

// The rendered clusters are consistent, so a broken rule is simulated: the reference cluster's
// StorageClasses are checked as if a second default had been rendered.
vi.mock('../../src/check/engine', async (importOriginal) =>
  (await import('./broken-checks')).brokenEngine(await importOriginal<typeof import('../../src/check/engine')>(), (name) => name === 'passes-checks'));

describe('synth runs the checks before the swap', () => {
  const out = mkdtempSync(path.join(tmpdir(), 'check-gate-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('an error finding fails synth with exit 1, prints the rule and writes nothing', () => {
    const err: string[] = [];
    const code = main(['synth', '--config', REFERENCE_FILE, '--out', out, '--no-validate'], { out: () => {}, err: (l) => err.push(l) });
    expect(code).toBe(EXIT.failed);
    expect(err.join('\n')).toMatch(/error \[default-storage-class\] instant-cluster: StorageClass local-disk: 3 StorageClasses are annotated/);
    expect(err.at(-1)).toMatch(/cross-object check error\(s\); nothing was written/);
    expect(readdirSync(out)).toEqual([]);
    expect(existsSync(path.join(out, 'instant-cluster'))).toBe(false);
  });

  it('a later cluster that fails a check: the earlier one, already written to its temporary folder, is removed too', () => {
    const first = path.join(mkdtempSync(path.join(tmpdir(), 'check-gate-')), 'passes.yaml');
    writeFileSync(first, readFileSync(REFERENCE_FILE, 'utf8').replace(/^name: .*$/m, 'name: passes-checks').replace(/(\n {2}path: )dist\/instant-cluster/, '$1dist/passes-checks'));
    const err: string[] = [];
    const code = main(['synth', '--config', first, '--config', REFERENCE_FILE, '--out', out, '--no-validate'], { out: () => {}, err: (l) => err.push(l) });
    expect(code, err.join('\n')).toBe(EXIT.failed);
    expect(err.join('\n')).toMatch(/error \[default-storage-class\] instant-cluster:/);
    expect(err.join('\n')).not.toMatch(/passes-checks:/);
    expect(readdirSync(out)).toEqual([]);
  });
});
