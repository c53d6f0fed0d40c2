import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../paths';

/*
 * projenrc/static-checks.cjs (npm test runs it beside vitest): the type check of the tests and eslint over one
 * TypeScript program (that the repository's own tree passes them, npm test shows). In a project of three files with
 * this repository's configs, a type error in a test and a floating promise in src/ (a type-aware rule, which reads the
 * shared program) each fail them, named in tsc's and eslint's own formats, and nothing else is reported; without the
 * eslint task to take the file list from they fail, never pass.
 */

const work = mkdtempSync(path.join(tmpdir(), 'static-checks-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const CLEAN = {
  'src/hello.ts': "export async function hello(): Promise<string> {\n  return 'hello';\n}\n",
  'test/hello.test.ts': "import { hello } from '../src/hello';\n\nexport async function greeting(): Promise<number> {\n  return (await hello()).length;\n}\n",
  '.projenrc.ts': 'export const projenrc = 1;\n',
};

const ESLINT_TASK = { tasks: { eslint: { steps: [{ execArgs: ['eslint', '--ext', '.ts,.tsx', '--no-error-on-unmatched-pattern', '$@', 'src', 'test', 'projenrc', '.projenrc.ts'] }] } } };

/** A project of the given files with this repository's configs; its node_modules links each installed package (its own .cache). */
function project(name: string, files: Record<string, string>, tasks: unknown = ESLINT_TASK): string {
  const dir = path.join(work, name);
  for (const d of ['src', 'test', 'projenrc', '.projen', 'node_modules']) mkdirSync(path.join(dir, d), { recursive: true });
  for (const f of ['tsconfig.json', 'test/tsconfig.json', 'projenrc/tsconfig.json', 'projenrc/static-checks.cjs', 'eslint.config.mjs', '.eslintrc.json', 'package.json']) {
    copyFileSync(path.join(ROOT, f), path.join(dir, f));
  }
  for (const e of readdirSync(path.join(ROOT, 'node_modules'))) {
    if (e !== '.cache') symlinkSync(path.join(ROOT, 'node_modules', e), path.join(dir, 'node_modules', e));
  }
  writeFileSync(path.join(dir, '.projen', 'tasks.json'), JSON.stringify(tasks));
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(dir, f), text);
  return dir;
}

const run = (dir: string) => spawnSync(process.execPath, [path.join(dir, 'projenrc', 'static-checks.cjs')], { cwd: dir, encoding: 'utf8', timeout: 280_000 });

describe('the static checks of npm test', () => {
  it('a type error in a test and a floating promise in src/ each fail them, named, and nothing else is reported', () => {
    const broken = run(project('broken', {
      ...CLEAN,
      'src/hello.ts': `${CLEAN['src/hello.ts']}\nexport function wave(): void {\n  hello();\n}\n`,
      'test/hello.test.ts': `${CLEAN['test/hello.test.ts']}\nexport const count: number = 'three';\n`,
    }));
    expect(broken.status).toBe(1);
    expect(broken.stdout).toMatch(/^test\/hello\.test\.ts\(7,14\): error TS2322: Type 'string' is not assignable to type 'number'\.$/m);
    expect(broken.stdout).toMatch(/src\/hello\.ts\n +6:3 +error +Promises must be awaited.*@typescript-eslint\/no-floating-promises/);
    // the one finding of each: the rest of the project (.projenrc.ts through its own program too) is clean
    expect(broken.stdout.match(/error TS\d+/g)).toHaveLength(1);
    expect(broken.stdout).toContain('✖ 1 problem (1 error, 0 warnings)');
    expect(broken.stdout).toMatch(/^FAILED: type check of the tests .*\nFAILED: eslint src test projenrc \.projenrc\.ts\n$/m);
  });

  it('without the eslint task to take the files from, they fail in one line', () => {
    const r = run(project('no-task', CLEAN, { tasks: {} }));
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^FAILED: the static checks could not run: Error: \.projen\/tasks\.json has no eslint task with execArgs: run npx projen\n/);
  });
});
