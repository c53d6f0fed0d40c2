import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileState, currentSources, recordCompilation, removeOrphanedOutputs } from '../../src/cache/compile-record';

// The launcher's record of what it compiled (test/cli/stale-caches.test.ts runs the real compiler
// end to end; these are the decisions on their own, in a project of a few files).
function project(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'compile-record-'));
  for (const d of ['src/clusters', 'imports', 'lib/src/clusters']) mkdirSync(path.join(root, d), { recursive: true });
  writeFileSync(path.join(root, 'tsconfig.json'), '{}\n');
  writeFileSync(path.join(root, 'src', 'versions.ts'), 'export const VERSION = \'v0.12.0\';\n');
  writeFileSync(path.join(root, 'src', 'clusters', 'lab.ts'), 'export default {};\n');
  writeFileSync(path.join(root, 'lib', 'src', 'versions.js'), '');
  writeFileSync(path.join(root, 'lib', 'src', 'clusters', 'lab.js'), '');
  for (const f of ['src/versions.ts', 'src/clusters/lab.ts']) utimesSync(path.join(root, f), 1_700_000_000, 1_700_000_000);
  return root;
}

describe('the compile record', () => {
  it('sees a source edited in place with its size and mtime kept', () => {
    const root = project();
    expect(compileState(root)).toMatchObject({ upToDate: false, first: true });
    expect(recordCompilation(currentSources(root), 0, '', root)).toBe(true);
    expect(compileState(root)).toMatchObject({ upToDate: true, changed: 0 });
    writeFileSync(path.join(root, 'src', 'versions.ts'), 'export const VERSION = \'v0.12.9\';\n');
    utimesSync(path.join(root, 'src', 'versions.ts'), 1_700_000_000, 1_700_000_000);
    expect(compileState(root)).toMatchObject({ upToDate: false, first: false, changed: 1 });
  });

  it('asks for a full compilation when a compiled source lost its output, not when a new source has none yet', () => {
    const root = project();
    recordCompilation(currentSources(root), 0, '', root);
    // a new description: the incremental compiler emits it (adding one costs no full compilation)
    writeFileSync(path.join(root, 'src', 'clusters', 'new.ts'), 'export default {};\n');
    expect(compileState(root)).toMatchObject({ upToDate: false, changed: 1, outputsMissing: false });
    // a compiled file deleted, its source unchanged: only a full compilation emits it again
    rmSync(path.join(root, 'lib', 'src', 'versions.js'));
    expect(compileState(root)).toMatchObject({ upToDate: false, outputsMissing: true });
    // nothing recorded: any missing output may be an unchanged source's
    rmSync(path.join(root, 'lib', '.compiled-sources.json'));
    writeFileSync(path.join(root, 'lib', 'src', 'versions.js'), '');
    expect(compileState(root)).toMatchObject({ first: true, outputsMissing: true });
  });

  it('records type errors of descriptions as theirs, and fails on any other', () => {
    const root = project();
    const sources = currentSources(root);
    const descriptionError = 'src/clusters/lab.ts(3,7): error TS2322: Type \'string\' is not assignable to type \'number\'.\n';
    expect(recordCompilation(sources, 2, descriptionError, root)).toBe(true);
    const record = JSON.parse(readFileSync(path.join(root, 'lib', '.compiled-sources.json'), 'utf8')) as { descriptionErrors: Record<string, unknown> };
    expect(record.descriptionErrors).toEqual({ [path.join('src', 'clusters', 'lab.ts')]: [{ line: 3, column: 7, message: 'Type \'string\' is not assignable to type \'number\'. (TS2322)' }] });
    expect(recordCompilation(sources, 2, `${descriptionError}src/versions.ts(1,1): error TS1005: ';' expected.\n`, root)).toBe(false);
    expect(recordCompilation(sources, 1, 'error TS5083: Cannot read file \'tsconfig.json\'.\n', root)).toBe(false);
  });

  it('does not record a compilation whose sources changed while it ran', () => {
    const root = project();
    const before = currentSources(root);
    writeFileSync(path.join(root, 'src', 'versions.ts'), 'export const VERSION = \'v0.13.0\';\n');
    expect(recordCompilation(before, 0, '', root)).toBe(true);
    expect(existsSync(path.join(root, 'lib', '.compiled-sources.json'))).toBe(false);
  });

  it('removes compiled files whose source is gone (a deleted description would still load and ship)', () => {
    const root = project();
    for (const f of ['gone.js', 'gone.js.map', 'gone.d.ts']) writeFileSync(path.join(root, 'lib', 'src', 'clusters', f), '');
    expect(removeOrphanedOutputs(root).sort()).toEqual(['gone.d.ts', 'gone.js', 'gone.js.map'].map((f) => path.join('src', 'clusters', f)));
    expect(existsSync(path.join(root, 'lib', 'src', 'clusters', 'lab.js'))).toBe(true);
    expect(existsSync(path.join(root, 'lib', 'src', 'versions.js'))).toBe(true);
  });
});
