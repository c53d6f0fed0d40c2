import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeDeadWriters, writeCacheFile } from '../../src/cache/cache-write';
import { CompiledCache } from '../../src/cache/compiled-cache';
import { installModuleCache } from '../../src/cache/module-cache';
import { RenderCache } from '../../src/upstream/render-cache';

/*
 * A cache writer killed between writing its temporary file and renaming it into place (a SIGKILL, a worker thread
 * whose process exits under it) leaves `<entry>.<pid>-<random>.tmp` behind: each cache removes those of processes
 * that are gone when it next writes, and keeps a live writer's.
 */

const work = mkdtempSync(path.join(tmpdir(), 'cache-write-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The pid of a process that has exited. */
const deadPid = (() => {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
})();

/** A dead writer's and a live writer's (this process's) temporary files in `dir`, and an entry that is not one. */
function leftovers(dir: string) {
  mkdirSync(dir, { recursive: true });
  const names = {
    dead: `entry.bin.${deadPid}-0123456789ab.tmp`,
    live: `other.json.${process.pid}-ba9876543210.tmp`,
    entry: 'kept.json',
  };
  for (const n of Object.values(names)) writeFileSync(path.join(dir, n), 'x');
  return names;
}

describe('cache writes', () => {
  it('writes whole through a temporary file; a folder that cannot be written is false, with nothing left', () => {
    const file = path.join(work, 'plain', 'a', 'entry.json');
    expect(writeCacheFile(file, '{"a":1}')).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('{"a":1}');
    expect(readdirSync(path.dirname(file))).toEqual(['entry.json']);
    const blocked = path.join(work, 'plain', 'a', 'entry.json', 'below.json');
    expect(writeCacheFile(blocked, 'x')).toBe(false);
    expect(readdirSync(path.dirname(file))).toEqual(['entry.json']);
  });

  it('removes the temporary files of writers that are gone, keeps a live one\'s and the entries', () => {
    expect(deadPid).toBeGreaterThan(0);
    const dir = path.join(work, 'sweep');
    const n = leftovers(dir);
    removeDeadWriters(dir);
    expect(readdirSync(dir).sort()).toEqual([n.entry, n.live].sort());
    expect(() => removeDeadWriters(path.join(work, 'absent'))).not.toThrow();
  });

  it('the compiled cache, the render cache and the module cache sweep their folder when they write', () => {
    const compiled = path.join(work, 'compiled');
    const a = leftovers(compiled);
    new CompiledCache(compiled).writeJson('crds-x', { x: 1 });
    expect(readdirSync(compiled)).not.toContain(a.dead);
    expect(readdirSync(compiled)).toContain(a.live);

    const renders = path.join(work, 'render-cache');
    const b = leftovers(path.join(renders, 'renders'));
    const cache = new RenderCache(renders);
    cache.put(cache.key(['x']), { objects: [], sources: [] });
    expect(readdirSync(path.join(renders, 'renders'))).not.toContain(b.dead);
    expect(readdirSync(path.join(renders, 'renders'))).toContain(b.live);

    const mods = path.join(work, 'mods');
    mkdirSync(mods);
    writeFileSync(path.join(mods, 'm.js'), 'module.exports = 7;\n');
    const modules = path.join(work, 'module-cache');
    const c = leftovers(path.join(modules, 'modules'));
    const installed = installModuleCache('sweep', { dir: modules, roots: [mods] })!;
    try {
      expect(createRequire(path.join(mods, 'index.js'))('./m')).toBe(7);
      installed.save();
      expect(installed.stats.written).toBe(true);
    } finally {
      installed.uninstall();
    }
    expect(readdirSync(path.join(modules, 'modules'))).not.toContain(c.dead);
    expect(readdirSync(path.join(modules, 'modules'))).toContain(c.live);
  });
});
