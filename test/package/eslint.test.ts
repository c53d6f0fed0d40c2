import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT as ROOT } from '../../src/paths';

/** A few lines that break the project's style rules (quotes, semicolons, import order). */
const PROBE = 'import * as path from "node:path";\nimport { existsSync } from "node:fs";\nexport const a = 1\nexport const b = path.join("a") == "b" ? existsSync("c") : 2\n';

/*
 * One child process (this worker never keeps ESLint's TypeScript program) asks ESLint what `npx eslint` asks it:
 * with ESLINT_USE_FLAT_CONFIG unset, loadESLint() picks the class the CLI picks (bin/eslint.js through
 * cli.execute: flat or legacy, the same shouldUseFlatConfig), which finds its config from the working folder.
 * Then, for the flat config and for projen's .eslintrc.json alike: the configuration each computes for
 * src/cli.ts (every rule and its level, the parser, the type-aware parser options), and what
 * each reports for the probe as src/cli.ts. The probe is linted without type information, for both the
 * same way: no rule that needs types fires on it, and building the project's TypeScript program for it took
 * 10 s of CPU per run; the type-aware options are compared as configuration, and the eslint task of `npm test`
 * lints the whole project with the flat config and its types.
 */
const SCRIPT = `
import { loadESLint } from 'eslint';
import { pathToFileURL } from 'node:url';
const probe = process.argv[1];
const severity = (s) => ({ off: 0, warn: 1, error: 2 })[s] ?? s;
// each rule's level (the flat config merges a rule's default options into its own; the legacy one does not)
const rules = (r) => Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, severity(Array.isArray(v) ? v[0] : v)]));
const Default = await loadESLint();
const found = { flat: Default.configType === 'flat', file: await new Default({ cwd: process.cwd() }).findConfigFile() };
const out = { found };
for (const flat of [true, false]) {
  const ESLint = await loadESLint({ useFlatConfig: flat });
  const config = await new ESLint({ cwd: process.cwd() }).calculateConfigForFile('src/cli.ts');
  const parserOptions = flat ? config.languageOptions.parserOptions : config.parserOptions;
  const typed = Object.keys(config.rules).filter((r) => ['@typescript-eslint/no-floating-promises', '@typescript-eslint/return-await'].includes(r));
  const untyped = flat
    ? [{ languageOptions: { parserOptions: { projectService: false } }, rules: Object.fromEntries(typed.map((r) => [r, 'off'])) }]
    : { parserOptions: { projectService: false }, rules: Object.fromEntries(typed.map((r) => [r, 'off'])) };
  const [result] = await new ESLint({ cwd: process.cwd(), overrideConfig: untyped }).lintText(probe, { filePath: 'src/cli.ts' });
  out[flat ? 'flat' : 'legacy'] = {
    rules: rules(config.rules),
    typed,
    parser: flat ? config.languageOptions.parser.meta.name : await import(pathToFileURL(config.parser).href).then((m) => (m.meta ?? m.default.meta).name),
    projectService: parserOptions.projectService,
    messages: result.messages.map((m) => m.ruleId + ' ' + m.line + ':' + m.column),
  };
}
console.log(JSON.stringify(out));
`;

describe('eslint', () => {
  it('`npx eslint` alone finds its flat config, which checks exactly what projen\'s .eslintrc.json checks', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
    delete env.ESLINT_USE_FLAT_CONFIG;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT, PROBE], { cwd: ROOT, env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const { found, flat, legacy } = JSON.parse(r.stdout);
    expect(found).toEqual({ flat: true, file: `${ROOT}/eslint.config.mjs` });
    expect(flat.messages).toEqual(expect.arrayContaining(['@stylistic/quotes 1:23', 'import/order 2:1', '@stylistic/semi 3:19']));
    expect(flat.typed).toHaveLength(2);
    expect(flat.parser).toBe('typescript-eslint/parser');
    expect(flat.projectService).toEqual({ allowDefaultProject: ['.projenrc.ts'], defaultProject: './tsconfig.json' });
    expect(flat).toEqual(legacy);
  }, 120_000);
});
