import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkCluster, checkClusterRendered, ClusterView, RULES } from '../../src/check';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { HAS_UPSTREAM, modelOf } from '../helpers';

const model = modelOf();
const view = (file: string): ClusterView => {
  const doc = parse(readFileSync(path.join(__dirname, 'fixtures', file), 'utf8')) as { folders: Record<string, Manifest[]> };
  return { name: model.name, model, folders: Object.entries(doc.folders).map(([folder, objects]) => ({ folder, objects })) };
};

describe.skipIf(!HAS_UPSTREAM)('render-deterministic: the render cache does not hide a chart that renders differently each time', () => {
  const cacheDir = mkdtempSync(path.join(tmpdir(), 'determinism-'));
  afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

  it('fires on a cold cache and again on a warm one: the first render comes from the cache, the second runs helm', async () => {
    const rules = async () => (await checkClusterRendered(view('render-deterministic.fail.yaml'), { upstream: DEFAULT_UPSTREAM, cacheDir }))
      .findings.filter((f) => f.rule === 'render-deterministic').map((f) => f.message);
    const cold = await rules();
    expect(cold).toEqual([expect.stringMatching(/Secret monitoring\/vm-grafana data.admin-password/)]);
    const entries = readdirSync(path.join(cacheDir, 'renders'));
    expect(entries.length).toBeGreaterThan(0);
    expect(await rules()).toEqual(cold);
    // the second render never wrote over the first one's entry
    expect(readdirSync(path.join(cacheDir, 'renders')).sort()).toEqual(entries.sort());
  });

  it('the second render is made only when render-deterministic is among the rules: the rules without it run no fresh helm', async () => {
    const others = RULES.filter((r) => r.id !== 'render-deterministic');
    const without = await checkClusterRendered(view('render-deterministic.fail.yaml'), { upstream: DEFAULT_UPSTREAM, cacheDir, rules: others });
    expect(without.renders.reruns).toBeUndefined();
    expect(without.findings.map((f) => f.rule)).not.toContain('render-deterministic');
    // renders without their second renders, checked with every rule: refused, never a silent pass of the rule
    expect(() => checkCluster(view('render-deterministic.fail.yaml'), { renders: without.renders })).toThrow(/^render-deterministic reads the second render of each Helm source/);
    const all = await checkClusterRendered(view('render-deterministic.fail.yaml'), { upstream: DEFAULT_UPSTREAM, cacheDir });
    expect(all.renders.reruns!.map((r) => r.type)).toEqual(['helm']);
    // asked for, it is made whatever the rules
    const asked = await checkClusterRendered(view('render-deterministic.fail.yaml'), { upstream: DEFAULT_UPSTREAM, cacheDir, rules: others, reruns: true });
    expect(asked.renders.reruns!.map((r) => r.type)).toEqual(['helm']);
  });

  it('a second render that fails where the first did not is an error of the rule, never a skipped comparison', async () => {
    const pass = view('render-deterministic.pass.yaml');
    const { renders } = await checkClusterRendered(pass, { upstream: DEFAULT_UPSTREAM, cacheDir });
    expect(renders.reruns!.length).toBeGreaterThan(0);
    const failed = { ...renders, reruns: renders.reruns!.map((r) => ({ ...r, objects: [], problem: { kind: 'failed' as const, message: 'helm template: killed by SIGKILL' } })) };
    const rule = RULES.filter((r) => r.id === 'render-deterministic');
    expect(checkCluster(pass, { renders, rules: rule })).toEqual([]);
    expect(checkCluster(pass, { renders: failed, rules: rule }).map((f) => f.message)).toEqual([
      expect.stringMatching(/: cannot be compared with a second render of it: helm template: killed by SIGKILL$/),
    ]);
  });
});
