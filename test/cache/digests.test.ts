import { mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DigestMemo, listTree, sha256, SETTLED_MS } from '../../src/cache/digests';

// Every cache is keyed by the SHA-256 of what it was derived from. Hashing is remembered across
// processes by (device, inode, size, mtime, ctime): an edit that keeps the size and puts the mtime
// back still moves the ctime, which no tool can set.
const dir = mkdtempSync(path.join(tmpdir(), 'digests-'));
/** A clock far enough ahead that files written now count as settled (remembered). */
const later = () => Date.now() + 10 * SETTLED_MS;

/** Waits past the file system's timestamp granularity (a few ms), so a new write gets a new ctime. */
function nextTick(): void {
  const until = Date.now() + 50;
  while (Date.now() < until) { /* wait */ }
}

/** A file with a whole-second mtime, which utimes can put back exactly. */
function write(file: string, text: string): void {
  writeFileSync(file, text);
  utimesSync(file, 1_700_000_000, 1_700_000_000);
}

function editInPlace(file: string, from: string, to: string): void {
  const before = statSync(file);
  const text = readFileSync(file, 'utf8');
  expect(to.length).toBe(from.length);
  writeFileSync(file, text.replace(from, to));
  utimesSync(file, 1_700_000_000, 1_700_000_000);
  const after = statSync(file);
  expect([after.size, after.mtimeMs, after.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
}

describe('file digests', () => {
  it('are the SHA-256 of the content, remembered while the file is untouched', () => {
    const f = path.join(dir, 'values.yaml');
    writeFileSync(f, 'version: v0.12.0\n');
    const memo = new DigestMemo(undefined, later);
    expect(memo.digest(f)).toBe(sha256('version: v0.12.0\n'));
    expect(memo.digest(f)).toBe(sha256('version: v0.12.0\n'));
    expect(memo.hashed).toBe(1);
  });

  it('notice an edit that keeps the size and restores the mtime', () => {
    const f = path.join(dir, 'crd.yaml');
    write(f, 'properties:\n  nodeLabels: {}\n');
    const memo = new DigestMemo(undefined, later);
    const first = memo.digest(f);
    nextTick();
    editInPlace(f, 'nodeLabels', 'nodeLabelX');
    expect(memo.digest(f)).toBe(sha256('properties:\n  nodeLabelX: {}\n'));
    expect(memo.digest(f)).not.toBe(first);
    expect(memo.hashed).toBe(2);
  });

  it('are remembered across processes in the memo file, and still notice an in-place edit', () => {
    const memoFile = path.join(dir, 'memo', 'file-digests.json');
    const f = path.join(dir, 'chart.yaml');
    write(f, 'appVersion: v1\n');
    const one = new DigestMemo(memoFile, later);
    one.digest(f);
    one.save();
    const two = new DigestMemo(memoFile, later);
    expect(two.digest(f)).toBe(sha256('appVersion: v1\n'));
    expect(two.hashed).toBe(0);
    nextTick();
    editInPlace(f, 'v1', 'v2');
    const three = new DigestMemo(memoFile, later);
    expect(three.digest(f)).toBe(sha256('appVersion: v2\n'));
    expect(three.hashed).toBe(1);
  });

  it('do not remember a file written moments ago (a second write in the same timestamp tick keeps the ctime)', () => {
    const f = path.join(dir, 'fresh.yaml');
    writeFileSync(f, 'a: 1\n');
    const memo = new DigestMemo(undefined);
    memo.digest(f);
    memo.digest(f);
    expect(memo.hashed).toBe(2);
  });

  it('are undefined for what is not a regular file', () => {
    const memo = new DigestMemo(undefined, later);
    expect(memo.digest(path.join(dir, 'missing'))).toBeUndefined();
    expect(memo.digest(dir)).toBeUndefined();
  });
});

describe('listTree', () => {
  it('walks a symlinked folder like any other, and a symlink loop once', () => {
    const root = path.join(dir, 'tree');
    const real = path.join(dir, 'real-crds');
    mkdirSync(path.join(real, 'kueue'), { recursive: true });
    writeFileSync(path.join(real, 'kueue', 'queues.yaml'), 'kind: CustomResourceDefinition\n');
    mkdirSync(root);
    writeFileSync(path.join(root, 'a.yaml'), '');
    symlinkSync(real, path.join(root, 'linked'));
    symlinkSync(root, path.join(root, 'loop'));
    expect(listTree(root).map((f) => path.relative(root, f))).toEqual(['a.yaml', path.join('linked', 'kueue', 'queues.yaml')]);
  });
});
