import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../paths';

/*
 * The lists of test files in vitest.config.mts (generated from .projenrc.ts): the slow tier that test:quick leaves
 * out, the slow files started first and the files that mock a module. A test file renamed or moved without its entry
 * would silently join the quick tier (a Go build in the inner loop), start last in CI, or lose its own module graph:
 * every entry must name a test file that exists, and every glob at least one.
 */

const LISTS = ['MOCKS_MODULES', 'SLOW_FIRST', 'SLOW_TIER'] as const;

/** The string entries of each list, read from the config's text (the array literal after `const NAME =`). */
function listsOf(config: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of LISTS) {
    const m = new RegExp(`const ${name} = [^\\n]*?\\[([^\\]]*)\\]`).exec(config);
    if (!m) throw new Error(`vitest.config.mts has no list ${name}`);
    out[name] = [...m[1].matchAll(/'([^']+)'/g)].map((e) => e[1]);
  }
  return out;
}

function testFilesUnder(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts'));
}

/** Each entry that names no test file: `LIST: entry`. A glob is `folder/**` (the only form the lists use). */
function staleEntries(config: string, root: string): string[] {
  const stale: string[] = [];
  for (const [name, entries] of Object.entries(listsOf(config))) {
    for (const entry of entries) {
      const glob = /^(.*)\/\*\*$/.exec(entry);
      const found = glob
        ? testFilesUnder(path.join(root, glob[1])).length > 0
        : entry.endsWith('.test.ts') && existsSync(path.join(root, entry)) && statSync(path.join(root, entry)).isFile();
      if (!found) stale.push(`${name}: ${entry}`);
      else if (!glob && /[*?{[]/.test(entry)) stale.push(`${name}: ${entry} (a glob other than folder/**)`);
    }
  }
  return stale;
}

describe('the test lists of vitest.config.mts', () => {
  const config = readFileSync(path.join(ROOT, 'vitest.config.mts'), 'utf8');

  it('name only test files that exist', () => {
    const lists = listsOf(config);
    expect(lists.SLOW_FIRST.length).toBeGreaterThan(0);
    expect(staleEntries(config, ROOT)).toEqual([]);
  });

  it('name a renamed file and an empty folder', () => {
    const renamed = config
      .replace("'test/cluster/argocd-twin.test.ts'", "'test/cluster/argocd-twin-renamed.test.ts'")
      .replace("'test/cluster/**'", "'test/no-such-folder/**'");
    expect(staleEntries(renamed, ROOT)).toEqual(expect.arrayContaining([
      'SLOW_FIRST: test/cluster/argocd-twin-renamed.test.ts',
      'SLOW_TIER: test/no-such-folder/**',
    ]));
  });
});
