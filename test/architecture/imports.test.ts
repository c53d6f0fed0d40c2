import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, test } from 'vitest';
import { cruiseSrc, floorOf, FLOORS } from './floors';

const ROOT = path.resolve(__dirname, '..', '..');
const FIXTURES = path.join(__dirname, 'fixtures');

/** The modules of a cruise that are on no floor. */
const offFloor = (modules: readonly string[]) => modules.filter((m) => floorOf(m) === undefined);

describe('the imports of src/', () => {
  test('run only down the floors, with no circle (type-only imports included)', async () => {
    const { modules, violations } = await cruiseSrc(ROOT, 'tsconfig.json');
    expect(modules.length).toBeGreaterThan(100);
    if (violations.length > 0) console.error(`import rules broken:\n${violations.join('\n')}`);
    expect(violations).toEqual([]);
    expect(offFloor(modules)).toEqual([]);
  });

  test('every file and folder of src/ is on a floor, and docs/development.md names each in its Architecture section', () => {
    const entries = readdirSync(path.join(ROOT, 'src')).map((n) => (statSync(path.join(ROOT, 'src', n)).isDirectory() ? `${n}/` : n));
    const floored = FLOORS.flatMap((f) => f.entries);
    expect(entries.filter((e) => !floored.includes(e))).toEqual([]);
    expect(floored.filter((e) => !entries.includes(e))).toEqual([]);

    const readme = readFileSync(path.join(ROOT, 'docs', 'development.md'), 'utf8');
    const start = readme.indexOf('\n## Architecture\n');
    expect(start).toBeGreaterThan(0);
    const end = readme.slice(start + 1).search(/\n#{1,2} /);
    const section = end < 0 ? readme.slice(start) : readme.slice(start, start + 1 + end);
    const named = new Set([...section.matchAll(/`src\/([^`\s]+)`/g)].map((m) => m[1]));
    expect(floored.filter((e) => !named.has(e))).toEqual([]);
    expect([...named].filter((n) => !floored.includes(n))).toEqual([]);
  });
});

describe('the import rules fire', () => {
  // dependency-cruiser reports a circle once, from the first of its modules
  const cases: Record<string, string[]> = {
    'circle': [
      'src/check/cluster-index.ts -> src/check/rule.ts: no-circular (src/check/cluster-index.ts -> src/check/rule.ts -> src/check/cluster-index.ts)',
    ],
    'type-circle': [
      'src/model/description.ts -> src/model/model.ts: no-circular (src/model/description.ts -> src/model/model.ts -> src/model/description.ts)',
    ],
    'primitive-imports-driver': ['src/render/write.ts -> src/synth/pipeline.ts: up-from-render-primitives'],
    'report-from-below': ['src/render/layout.ts -> src/report/report.ts: up-from-render-primitives'],
    'foundation-imports-command': ['src/errors.ts -> src/cli.ts: up-from-foundation'],
    'component-imports-sample': ['src/components/skypilot/client-files.ts -> src/components/samples/gpu-workload.ts: no-samples-from-components'],
    'downward': [],
    'off-floor': [],
  };
  for (const [fixture, expected] of Object.entries(cases)) {
    test(`${fixture}: ${expected.length === 0 ? 'no violation' : expected.map((v) => v.split(': ')[1].split(' ')[0]).join(', ')}`, async () => {
      const { violations } = await cruiseSrc(path.join(FIXTURES, fixture));
      expect(violations).toEqual(expected);
    });
  }

  test('a module on no floor is found', async () => {
    const { modules } = await cruiseSrc(path.join(FIXTURES, 'off-floor'));
    expect(offFloor(modules)).toEqual(['src/scratch/notes.ts']);
    expect(offFloor((await cruiseSrc(path.join(FIXTURES, 'downward'))).modules)).toEqual([]);
  });
});
