import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers';

/** A few lines that break the project's style rules (quotes, semicolons, import order). */
const PROBE = 'import * as path from "node:path";\nimport { existsSync } from "node:fs";\nexport const a = 1\nexport const b = path.join("a") == "b" ? existsSync("c") : 2\n';

/** What eslint reports for the probe as if it were src/cli.ts: `rule line:column` lines. */
function lint(flat: boolean): string[] {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
  if (flat) delete env.ESLINT_USE_FLAT_CONFIG;
  else env.ESLINT_USE_FLAT_CONFIG = 'false';
  const r = spawnSync('npx', ['eslint', '--stdin', '--stdin-filename', 'src/cli.ts', '--format', 'json'], { cwd: ROOT, env, input: PROBE, encoding: 'utf8' });
  expect(r.stderr).not.toMatch(/Oops|Could not find config file/);
  const [result] = JSON.parse(r.stdout) as { messages: { ruleId: string; line: number; column: number }[] }[];
  return result.messages.map((m) => `${m.ruleId} ${m.line}:${m.column}`);
}

describe('eslint', () => {
  it('`npx eslint` alone finds its flat config, which checks exactly what projen\'s .eslintrc.json checks', () => {
    const flat = lint(true);
    expect(flat).toEqual(expect.arrayContaining(['@stylistic/quotes 1:23', 'import/order 2:1', '@stylistic/semi 3:19']));
    expect(flat).toEqual(lint(false));
  }, 120_000);
});
