import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { installModuleCache, MAX_FILES, ModuleCache, requireBundle } from '../../src/cache/module-cache';
import { BIN, ROOT } from '../paths';

/*
 * The V8 code cache of the modules a command loads is keyed and verified by content: a changed module (of the
 * same length, which is all V8 itself checks), a corrupt, truncated or foreign cache file are compiled afresh
 * and give the module's own exports; a folder that cannot be written costs only speed; the folder stays bounded.
 */

const work = mkdtempSync(path.join(tmpdir(), 'module-cache-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const mods = path.join(work, 'mods');
mkdirSync(mods);
writeFileSync(path.join(mods, 'a.js'), "const b = require('./b');\nmodule.exports = { a: 'a', b, twice: (n) => 2 * n };\n");
writeFileSync(path.join(mods, 'b.js'), "module.exports = 'one';\n");

let cache: ModuleCache | undefined;
afterEach(() => cache?.uninstall());

/** a.js and b.js required afresh, with the cache of `dir` installed for them. */
function load(dir: string) {
  for (const k of Object.keys(require.cache)) if (k.startsWith(mods + path.sep)) delete require.cache[k];
  cache?.uninstall();
  cache = installModuleCache('test', { dir, roots: [mods] })!;
  const a = createRequire(path.join(mods, 'index.js'))('./a') as { a: string; b: string; twice(n: number): number };
  expect(a.twice(21)).toBe(42);
  cache.save();
  return { exports: { a: a.a, b: a.b }, ...cache.stats };
}

describe('the module cache', () => {
  it('compiles from the cache once written, and writes nothing when everything came from it', () => {
    const dir = path.join(work, 'warm');
    expect(load(dir)).toEqual({ exports: { a: 'a', b: 'one' }, hits: 0, misses: 2, written: true });
    expect(load(dir)).toEqual({ exports: { a: 'a', b: 'one' }, hits: 2, misses: 0, written: false });
  });

  it('a module changed to a source of the same length is compiled afresh (V8 would take the old code)', () => {
    const dir = path.join(work, 'changed');
    load(dir);
    writeFileSync(path.join(mods, 'b.js'), "module.exports = 'two';\n");
    try {
      expect(load(dir)).toEqual({ exports: { a: 'a', b: 'two' }, hits: 1, misses: 1, written: true });
      expect(load(dir)).toEqual({ exports: { a: 'a', b: 'two' }, hits: 2, misses: 0, written: false });
    } finally {
      writeFileSync(path.join(mods, 'b.js'), "module.exports = 'one';\n");
    }
  });

  it('a corrupt, truncated or foreign cache file reads as empty, and is written again', () => {
    const dir = path.join(work, 'corrupt');
    load(dir);
    const file = cache!.file;
    const good = readFileSync(file);
    const damaged = [
      Buffer.concat([good.subarray(0, good.length - 40), Buffer.alloc(40, 0xff)]),
      Buffer.from(good.toString('latin1').replace(/one/g, 'two'), 'latin1'),
      Buffer.alloc(good.length, 0),
      Buffer.from('gcm-modules-2\n'),
    ];
    for (const bytes of damaged) {
      writeFileSync(file, bytes);
      // the damaged entries (the last module's code; everything) are compiled afresh, and the file is written again
      const r = load(dir);
      expect(r).toMatchObject({ exports: { a: 'a', b: 'one' }, written: true });
      expect(r.misses).toBeGreaterThan(0);
      expect(load(dir)).toMatchObject({ hits: 2, misses: 0 });
    }
    truncateSync(file, Math.floor(good.length / 2));
    expect(load(dir)).toEqual({ exports: { a: 'a', b: 'one' }, hits: 0, misses: 2, written: true });
    expect(load(dir).hits).toBe(2);
  });

  it('a folder that cannot be written (a path through a file, a device) only costs speed', () => {
    const file = path.join(work, 'a-file');
    writeFileSync(file, '');
    for (const dir of [path.join(file, 'cache'), '/dev/null']) {
      expect(load(dir)).toEqual({ exports: { a: 'a', b: 'one' }, hits: 0, misses: 2, written: false });
    }
  });

  it('the folder keeps the files used last, at most MAX_FILES, and never removes a file it did not write', () => {
    const dir = path.join(work, 'bounded');
    const folder = path.join(dir, 'modules');
    mkdirSync(folder, { recursive: true });
    // files of the cache's (its name and header) of other entry points and V8 builds
    for (let i = 0; i < MAX_FILES + 4; i++) writeFileSync(path.join(folder, `other${i}-${'0'.repeat(11)}${(i % 10)}.bin`), 'gcm-modules-2\nrest');
    // a user's files in a folder the cache variable named: *.bin, one named as the cache names its own
    const users = ['notes.bin', 'photo-aaaaaaaaaaaa.bin', 'data.txt'];
    const longAgo = new Date(Date.now() - 365 * 24 * 60 * 60 * 1000);
    for (const u of users) {
      writeFileSync(path.join(folder, u), 'the user\'s');
      utimesSync(path.join(folder, u), longAgo, longAgo);
    }
    load(dir);
    const kept = readdirSync(folder).filter((f) => !users.includes(f));
    for (const u of users) expect(readFileSync(path.join(folder, u), 'utf8')).toBe('the user\'s');
    expect(kept).toHaveLength(MAX_FILES);
    expect(kept).toContain(path.basename(cache!.file));
    expect(statSync(cache!.file).size).toBeGreaterThan(100);
  });

  it('a bundle is one entry keyed by its bytes: from the cache once written, afresh when a byte changes (same length)', () => {
    const dir = path.join(work, 'bundle');
    const bundle = path.join(mods, 'bundle.js');
    // not ASCII: decoded as Node decodes a module (the bundler writes ASCII, which decodes the same either way)
    const write = (word: string) => writeFileSync(bundle, `exports.word = '${word}'; exports.unit = 'µs'; exports.twice = (n) => 2 * n;\n`);
    const loadBundle = () => {
      delete require.cache[bundle];
      cache?.uninstall();
      cache = installModuleCache('bundle-test', { dir, roots: [mods] })!;
      const b = requireBundle(bundle) as { word: string; unit: string; twice(n: number): number };
      expect(b.twice(21)).toBe(42);
      // the module Node's require would make of it: the same object on a second require
      expect(createRequire(bundle)(bundle)).toBe(b);
      cache.save();
      return { word: b.word, unit: b.unit, ...cache.stats };
    };
    write('one');
    expect(loadBundle()).toEqual({ word: 'one', unit: 'µs', hits: 0, misses: 1, written: true });
    expect(loadBundle()).toEqual({ word: 'one', unit: 'µs', hits: 1, misses: 0, written: false });
    write('two');
    expect(loadBundle()).toEqual({ word: 'two', unit: 'µs', hits: 0, misses: 1, written: true });
    // no such bundle: the caller loads the modules themselves
    expect(requireBundle(path.join(mods, 'absent.js'))).toBeUndefined();
  });

  it('one cache per process, also for a second copy of this module (the bundle\'s own)', () => {
    cache = installModuleCache('first', { dir: path.join(work, 'once'), roots: [mods] })!;
    const copy = createRequire(__filename)(path.join(ROOT, 'lib', 'src', 'cache', 'module-cache.js')) as typeof import('../../src/cache/module-cache');
    expect(copy.installModuleCache('second', { dir: path.join(work, 'twice'), roots: [mods] })).toBe(cache);
  });

  it('the CLI keeps one per command: a corrupt one is rewritten, and the command prints the same', () => {
    const dir = path.join(work, 'cli');
    const run = () => spawnSync(process.execPath, [BIN, 'schema', '--out', '-'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, GPU_CLUSTER_MANIFESTS_CACHE: dir } });
    const first = run();
    expect(first.status, first.stderr).toBe(0);
    const [file] = readdirSync(path.join(dir, 'modules')).map((f) => path.join(dir, 'modules', f));
    expect(path.basename(file)).toMatch(/^schema-[0-9a-f]{12}\.bin$/);
    const size = statSync(file).size;
    writeFileSync(file, Buffer.alloc(size, 0x5a));
    const second = run();
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    expect(second.stderr).toBe(first.stderr);
    expect(readFileSync(file).subarray(0, 14).toString()).toBe('gcm-modules-2\n');
  });
});
