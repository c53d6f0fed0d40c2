import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { defineCluster } from '../../src/model/define';
import { ClusterDescriptionInput } from '../../src/model/description';
import { DescriptionError, loadDescription, parseDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { clusterFiles } from '../../src/synth/layout';
import { descriptionFiles } from '../../src/synth/pipeline';
import { renderCluster } from '../../src/synth/render';
import { ROOT } from '../helpers';

// TypeScript descriptions (`export default defineCluster({...})`): type-checked at compile time
// against the description schema's input type (`npm test` runs tsc over test/, so the
// expect-error directives below fail the build if a typo ever type-checks), and validated at run
// time by the same loader as YAML.
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'descriptions');
const TS_FILE = path.join(FIXTURES, 'typed-cluster.ts');
const YAML_FILE = path.join(FIXTURES, 'typed-cluster.yaml');

const renderedFiles = (file: string) => clusterFiles(renderCluster(buildModel(loadDescription(file))));

function issuesOf(file: string): string[] {
  try {
    loadDescription(file);
  } catch (e) {
    if (e instanceof DescriptionError) return e.issues.map((i) => `${i.path}: ${i.message}`);
    throw e;
  }
  return [];
}

const base = parse(readFileSync(YAML_FILE, 'utf8')) as ClusterDescriptionInput & { nodes: { gpuWorkers: object } };

describe('a TypeScript cluster description', () => {
  it('renders byte-identically to its YAML twin', () => {
    const fromTs = renderedFiles(TS_FILE);
    expect(fromTs.length).toBeGreaterThan(20);
    expect(fromTs).toEqual(renderedFiles(YAML_FILE));
  });

  it('is picked up beside YAML descriptions (not a .d.ts)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'typed-'));
    for (const f of ['a.yaml', 'b.json', 'c.ts', 'd.d.ts', 'cluster-description.schema.json', 'notes.md']) writeFileSync(path.join(dir, f), '');
    expect(descriptionFiles(dir).map((f) => path.basename(f))).toEqual(['a.yaml', 'b.json', 'c.ts']);
  });

  it('fails with the same field paths and messages as YAML', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'typed-'));
    const ts = path.join(dir, 'broken.ts');
    const yaml = path.join(dir, 'broken.yaml');
    writeFileSync(ts, readFileSync(TS_FILE, 'utf8').replace('gpusPerNode,', 'gpusPerNode: \'eight\' as unknown as number,').replace('memory: \'1500Gi\',', 'memory: \'1500Gi\', gpuCount: 8,'));
    writeFileSync(yaml, readFileSync(YAML_FILE, 'utf8').replace('gpusPerNode: 8', 'gpusPerNode: eight').replace('memory: 1500Gi', 'memory: 1500Gi\n    gpuCount: 8'));
    const expected = ['nodes.gpuWorkers.gpusPerNode: expected a positive integer, got "eight"', 'nodes.gpuWorkers.gpuCount: unknown field'];
    expect(issuesOf(yaml).sort()).toEqual(expected.sort());
    expect(issuesOf(ts).sort()).toEqual(expected.sort());
  });

  it('reports a file that is not valid TypeScript or exports no description, naming the line', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'typed-'));
    writeFileSync(path.join(dir, 'syntax.ts'), 'export default {\n  name: ;\n};\n');
    writeFileSync(path.join(dir, 'no-default.ts'), 'export const cluster = {};\n');
    writeFileSync(path.join(dir, 'throws.ts'), 'throw new Error(\'no cluster today\');\n');
    expect(issuesOf(path.join(dir, 'syntax.ts'))).toEqual([': invalid TypeScript (line 2): Expression expected.']);
    expect(issuesOf(path.join(dir, 'no-default.ts'))[0]).toMatch(/expected `export default defineCluster/);
    expect(issuesOf(path.join(dir, 'throws.ts'))).toEqual([': cannot evaluate the description: no cluster today']);
  });

  it('rejects a misspelled or unknown field at compile time, and at run time', () => {
    const typo = () => defineCluster({
      ...base,
      nodes: {
        ...base.nodes,
        gpuWorkers: {
          ...base.nodes.gpuWorkers,
          // @ts-expect-error "gpusPerNod" is not a field of nodes.gpuWorkers (a compile error)
          gpusPerNod: 8,
        },
      },
    });
    const wrongType = () => defineCluster({
      ...base,
      // @ts-expect-error kubernetesVersion is a string such as "1.31"
      kubernetesVersion: 1.31,
    });
    expect(() => parseDescription(typo())).toThrow(/nodes\.gpuWorkers\.gpusPerNod: unknown field/);
    expect(() => parseDescription(wrongType())).toThrow(/kubernetesVersion: /);
  });
});
