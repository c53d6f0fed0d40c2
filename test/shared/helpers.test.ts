import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors';
import { usableFolder } from '../../src/files';
import { isJsonObject, jsonDifferences, setValueAt, valueAt } from '../../src/json';

/* The helpers every layer shares (one copy each): the mapping guard, the path walk, the differences, the usable-folder check. */

describe('isJsonObject', () => {
  it('holds for mappings only', () => {
    expect([{}, { a: 1 }, Object.create(null)].every(isJsonObject)).toBe(true);
    expect([null, undefined, [], [1], 'x', 1, true].some(isJsonObject)).toBe(false);
  });
});

describe('valueAt', () => {
  const doc = { spec: { template: { labels: { a: 'b' } }, list: [{ x: 1 }], nil: null } };
  it('walks keys or a dotted path through mappings', () => {
    expect(valueAt(doc, ['spec', 'template', 'labels', 'a'])).toBe('b');
    expect(valueAt(doc, 'spec.template.labels')).toEqual({ a: 'b' });
    expect(valueAt(doc, [])).toBe(doc);
  });
  it('is undefined where a step is missing or not a mapping (arrays, null, scalars)', () => {
    expect(valueAt(doc, 'spec.missing.deeper')).toBeUndefined();
    expect(valueAt(doc, 'spec.list.0.x')).toBeUndefined();
    expect(valueAt(doc, 'spec.nil.x')).toBeUndefined();
    expect(valueAt(doc, 'spec.template.labels.a.length')).toBeUndefined();
    expect(valueAt(undefined, 'a')).toBeUndefined();
  });
});

describe('setValueAt', () => {
  it('sets a dotted path, creating or replacing what is not a mapping, keeping the rest', () => {
    const target: Record<string, unknown> = { a: { keep: 1, b: 'scalar' }, n: null };
    setValueAt(target, 'a.b.c', 3);
    setValueAt(target, ['n', 'm'], 'x');
    setValueAt(target, 'top', true);
    expect(target).toEqual({ a: { keep: 1, b: { c: 3 } }, n: { m: 'x' }, top: true });
  });
});

describe('jsonDifferences (check\'s render-deterministic, verify\'s drift)', () => {
  const a = { spec: { replicas: 1, containers: [{ name: 'c', image: 'x:1' }], args: ['a'] }, metadata: { annotations: { 'checksum/secret': 'aa' }, name: 'n' } };
  it('names each differing leaf, in key order, through mappings and lists of the same length', () => {
    const b = { spec: { replicas: 2, containers: [{ name: 'c', image: 'x:2' }], args: ['a', 'b'] }, metadata: { annotations: { 'checksum/secret': 'bb' }, name: 'n' } };
    expect(jsonDifferences(a, b)).toEqual(['.metadata.annotations["checksum/secret"]', '.spec.args', '.spec.containers[0].image', '.spec.replicas']);
    expect(jsonDifferences(a, b, 2)).toEqual(['.metadata.annotations["checksum/secret"]', '.spec.args']);
  });
  it('is empty for equal values; a missing field and other types differ; values that differ whole are `.`', () => {
    expect(jsonDifferences(a, structuredClone(a))).toEqual([]);
    expect(jsonDifferences({ a: 1 }, { a: 1, b: null })).toEqual(['.b']);
    expect(jsonDifferences({ a: [1] }, { a: { 0: 1 } })).toEqual(['.a']);
    expect(jsonDifferences(1, '1')).toEqual(['.']);
  });
});

describe('usableFolder', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'usable-folder-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const hint = 'name a folder';
  const message = (p: string) => {
    try {
      usableFolder(p, `--out ${p}`, hint);
    } catch (e) {
      expect(e).toBeInstanceOf(InputError);
      return (e as Error).message;
    }
    throw new Error(`${p}: accepted`);
  };

  it('accepts a folder or a path that does not exist yet, resolved', () => {
    const dir = path.join(work, 'dir');
    mkdirSync(dir);
    expect(usableFolder(dir, '--out', hint)).toBe(dir);
    expect(usableFolder(path.relative(process.cwd(), path.join(work, 'absent')), '--out', hint)).toBe(path.join(work, 'absent'));
  });

  it('refuses a file, an unusable path and a path the file system refuses, naming the setting', () => {
    const file = path.join(work, 'file');
    writeFileSync(file, 'x');
    expect(message(file)).toBe(`--out ${file}: not a folder; ${hint}`);
    expect(message('a\0b')).toBe('--out a\0b: the path contains a NUL byte');
    expect(message(path.join(work, 'x'.repeat(300)))).toMatch(/: the path has a component of 300 bytes/);
    const under = path.join(file, 'inside');
    expect(message(under)).toBe(`--out ${under}: cannot stat ${under}: a part of the path is a file, not a folder (ENOTDIR)`);
    const loop = path.join(work, 'loop');
    symlinkSync(loop, loop);
    expect(message(loop)).toBe(`--out ${loop}: cannot stat ${loop}: too many levels of symbolic links: check for a symlink loop (ELOOP)`);
  });
});
