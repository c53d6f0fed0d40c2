import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { vendoredCrds } from '../../src/twin/argocd-sync';
import { downloadModuleFile, GoBinary, prebuiltLayout, twinBinary } from '../../src/twin/binary';
import { CRD_SOURCES, CrdSource, crdSourceFileName, crdSourceOf, sourcedCrdFile, unavailableCrd, UNAVAILABLE_CRDS } from '../../src/twin/chart-crds';
import { packageChart } from '../../src/twin/chart-mirror';
import { PREVIOUS_CHARTS } from '../../src/upstream/previous-releases';
import { GPU_OPERATOR_CHART, KUEUE_CHART, NETWORK_OPERATOR_CHART, VENDORED_RELEASES, VendoredChart } from '../../src/upstream/releases';

/**
 * The CRDs the twin's chart packages carry in `crds/` (chart-mirror.ts packageChart): every one a published chart
 * carries is copied from ../shared/crds, taken from its pinned Go module (chart-crds.ts: a file the twin's build fetched), or declared unavailable;
 * anything else is an error. The packages of the NVIDIA charts carry Node Feature Discovery's CRDs.
 */

const work = mkdtempSync(path.join(tmpdir(), 'chart-crds-'));
const CHARTS: readonly VendoredChart[] = [...VENDORED_RELEASES.filter((r): r is VendoredChart => r.type === 'helm'), ...PREVIOUS_CHARTS];
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the CRDs of the pinned charts\' crds/ folders that ../shared/crds has no copy of', () => {
  const crds = vendoredCrds(DEFAULT_SCHEMAS);
  const missing = CHARTS.flatMap((release) => release.unrenderedCrds.filter((g) => g.from === 'crds-not-vendored').flatMap((g) => g.crds
    .map((c) => `${c.group}/${c.kind}`)
    .filter((name) => !crds.has(name))
    .map((name) => ({ release, chartPath: g.chartPath, name }))));

  it('each has a pinned source or a declared reason it cannot be had (listed per release)', () => {
    const lines = missing.map(({ release, chartPath, name }) => {
      const source = crdSourceOf(release, chartPath);
      const how = source ? `${source.module}@${source.version} ${source.file}` : unavailableCrd(release, chartPath, name) ? 'UNAVAILABLE' : 'NONE';
      return `${release.chart} ${release.version} ${chartPath || '.'} ${name}: ${how}`;
    });
    console.log(lines.join('\n'));
    expect(lines.filter((l) => l.endsWith(': NONE'))).toEqual([]);
    // NFD's are sourced for every pinned NVIDIA chart
    for (const r of CHARTS.filter((c) => c.chart === GPU_OPERATOR_CHART.chart || c.chart === NETWORK_OPERATOR_CHART.chart)) {
      expect(crdSourceOf(r, 'charts/node-feature-discovery')?.module, `${r.chart} ${r.version}`).toBe('sigs.k8s.io/node-feature-discovery');
    }
  });

  it('declares nothing stale: every source and every declared absence is of a CRD a pinned chart carries and ../shared/crds lacks', () => {
    const used = new Set(missing.map(({ release, chartPath }) => `${release.chart} ${release.version} ${chartPath || '.'}`));
    expect(Object.keys(CRD_SOURCES).filter((k) => !used.has(k))).toEqual([]);
    for (const [k, u] of Object.entries(UNAVAILABLE_CRDS)) {
      const carried = missing.filter((m) => `${m.release.chart} ${m.release.version} ${m.chartPath || '.'}` === k).map((m) => m.name);
      expect(u.crds.filter((c) => !carried.includes(c)), k).toEqual([]);
    }
  });
});

describe('packageChart, fail closed', () => {
  it('refuses a chart whose crds/ holds a CRD with no copy, no source and no declared absence, naming chart, version, chart path and CRD', () => {
    for (const chartPath of ['', 'charts/widgets']) {
      const fixture: VendoredChart = {
        ...KUEUE_CHART,
        unrenderedCrds: [{ chartPath, from: 'crds-not-vendored', crds: [{ group: 'example.com', kind: 'Widget', scope: 'Namespaced' }] }],
      };
      expect(() => packageChart(fixture, { upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, helm: path.join(work, 'no-helm'), work: path.join(work, 'refused'), crdFiles: {} }))
        .toThrow(`${KUEUE_CHART.chart} ${KUEUE_CHART.version} ${chartPath || '.'}: the published chart carries CRD example.com/Widget in crds/, and the twin has no copy of it`);
    }
  });
});

describe('a pinned source: fetched with the go command when the twin is built, verified by content when used', () => {
  const pinned = { version: 'v1.0.0', sum: 'h1:pinned=', sha256: sha256('good\n') };

  /** A go command that answers `go mod download -json` with `info`, and a module folder holding `content`. */
  function fakeGo(name: string, content: string, info: Record<string, unknown>): string {
    const dir = path.join(work, name);
    mkdirSync(path.join(dir, 'module', 'crds'), { recursive: true });
    writeFileSync(path.join(dir, 'module', 'crds', 'x.yaml'), content);
    writeFileSync(path.join(dir, 'info.json'), JSON.stringify({ Dir: path.join(dir, 'module'), Sum: 'h1:pinned=', ...info }));
    const go = path.join(dir, 'go');
    writeFileSync(go, `#!/bin/sh\ncat '${path.join(dir, 'info.json')}'\n`);
    chmodSync(go, 0o755);
    return go;
  }

  it('the build reads the file and checks the module\'s hash and the file\'s SHA-256', () => {
    expect(downloadModuleFile(fakeGo('ok', 'good\n', {}), 'example.com/m', 'crds/x.yaml', pinned).toString()).toBe('good\n');
  });

  it('fails with one line when the module cannot be had, its hash differs or the file differs', () => {
    const unserved = fakeGo('unserved', 'good\n', { Error: 'example.com/m@v1.0.0: reading https://proxy.golang.org/...: 404 Not Found\n\tserver response: not found' });
    expect(() => downloadModuleFile(unserved, 'example.com/m', 'crds/x.yaml', pinned)).toThrow(/^cannot fetch example\.com\/m@v1\.0\.0 crds\/x\.yaml: go mod download failed: example\.com\/m@v1\.0\.0: reading .*404 Not Found$/);
    expect(() => downloadModuleFile(fakeGo('hash', 'good\n', { Sum: 'h1:other=' }), 'example.com/m', 'crds/x.yaml', pinned))
      .toThrow('cannot use example.com/m@v1.0.0 crds/x.yaml: the module\'s hash is h1:other=, pinned h1:pinned=');
    expect(() => downloadModuleFile(fakeGo('content', 'bad\n', {}), 'example.com/m', 'crds/x.yaml', pinned)).toThrow(`its SHA-256 is ${sha256('bad\n')}, pinned ${pinned.sha256}`);
    expect(() => downloadModuleFile(fakeGo('nofile', 'good\n', { Dir: path.join(work, 'nofile', 'elsewhere') }), 'example.com/m', 'crds/x.yaml', pinned)).toThrow('the module has no such file');
  });

  it('a file beside the twin is used only when its SHA-256 is the pinned one; a missing one names the file', () => {
    const source: CrdSource = { module: 'example.com/m', file: 'crds/x.yaml', evidence: 'a fixture', ...pinned };
    const name = crdSourceFileName(source);
    expect(name).toBe('crds-m-v1.0.0-x.yaml');
    const file = path.join(work, 'beside', name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, 'good\n');
    expect(sourcedCrdFile(source, { [name]: file })).toBe('good\n');
    writeFileSync(file, 'tampered\n');
    expect(() => sourcedCrdFile(source, { [name]: file })).toThrow(`${file}: its SHA-256 is ${sha256('tampered\n')}, pinned ${pinned.sha256} (crds/x.yaml of example.com/m@v1.0.0)`);
    expect(() => sourcedCrdFile(source, {})).toThrow('no crds-m-v1.0.0-x.yaml beside the twin (crds/x.yaml of example.com/m@v1.0.0)');
  });

  it('every pinned source is a companion file of the twin (a --binaries folder holds it, as rehearse --help lists)', () => {
    const beside = prebuiltLayout().find((l) => l.startsWith('beside it: ') && l.includes('git-verify-wrapper.sh'))!;
    for (const source of Object.values(CRD_SOURCES)) expect(beside).toContain(crdSourceFileName(source));
  });
});

describe('the packages of the NVIDIA charts carry Node Feature Discovery\'s CRDs', () => {
  let helm: string;
  let twin: GoBinary;
  beforeAll(async () => {
    helm = path.join(work, 'bin', 'helm');
    mkdirSync(path.dirname(helm), { recursive: true });
    twin = await twinBinary();
    symlinkSync(twin.path, helm);
  }, 30 * 60 * 1000);

  for (const release of [GPU_OPERATOR_CHART, NETWORK_OPERATOR_CHART]) {
    it(`${release.chart} ${release.version}: the subchart's crds/nfd-api-crds.yaml as published, and helm template --include-crds prints them`, () => {
      const archive = packageChart(release, { upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, helm, work: path.join(work, 'package'), crdFiles: twin.companions });
      const inside = `${release.chart}/charts/node-feature-discovery/crds/nfd-api-crds.yaml`;
      const file = spawnSync('tar', ['-xzOf', archive, inside], { timeout: 60_000 });
      expect(file.status, file.stderr?.toString()).toBe(0);
      expect(sha256(file.stdout)).toBe(crdSourceOf(release, 'charts/node-feature-discovery')!.sha256);
      const r = spawnSync(helm, ['template', 'x', archive, '--include-crds', '--namespace', 'x'], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024, env: { PATH: process.env.PATH, HOME: work } });
      expect(r.status, r.stderr).toBe(0);
      for (const name of ['nodefeatures', 'nodefeaturegroups', 'nodefeaturerules']) expect(r.stdout).toContain(`name: ${name}.nfd.k8s-sigs.io`);
    }, 300_000);
  }
});
