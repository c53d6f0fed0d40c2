import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ROOT } from '../helpers';

// toYaml keeps the documents of earlier runs that the direct emitter leaves to the yaml package
// (keyed by a digest of the value's JSON); a process that finds them must print exactly what the
// yaml package would. Each value holds a control character, which only the package writes.
const VALUES = [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', annotations: { on: 'true', n: '8' } }, data: { 'x.json': '{\n  "a": 1\n}\n', 'bell': '\x07' } },
  { metadata: { name: 'a', annotations: { n: '8', on: 'true', bell: '\x07' } }, kind: 'ConfigMap', apiVersion: 'v1' },
  { list: [1, 'two', null, { three: 3 }, '\x07'], empty: {}, none: [] },
  { odd: [Number.NaN, -0, Number.POSITIVE_INFINITY] },
];
const OPTIONS = { lineWidth: 0, minContentWidth: 0, aliasDuplicateObjects: false, indentSeq: true } as const;

function toYamlInProcess(cache: string): string[] {
  const script = `const { toYaml } = require(${JSON.stringify(path.join(ROOT, 'lib', 'src', 'render', 'yaml.js'))});
    const values = ${JSON.stringify(VALUES)};
    values[3].odd = [NaN, -0, Infinity];
    process.stdout.write(JSON.stringify(values.map(toYaml)));`;
  const r = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, GPU_CLUSTER_MANIFESTS_CACHE: cache }, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as string[];
}

describe('YAML documents cached across processes', () => {
  it('are byte-identical to the yaml package\'s, on a miss and on a hit', () => {
    const cache = mkdtempSync(path.join(tmpdir(), 'yaml-cache-'));
    const expected = [...VALUES.slice(0, 3), { odd: [Number.NaN, -0, Number.POSITIVE_INFINITY] }].map((v) => stringify(v, OPTIONS));
    expect(toYamlInProcess(cache)).toEqual(expected);
    expect(readdirSync(cache).filter((f) => f.startsWith('yaml-'))).toHaveLength(1);
    expect(toYamlInProcess(cache)).toEqual(expected);
  });
});
