import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { vendoredCrds } from '../../src/twin/argocd-sync';
import { downloadModuleFile, GoBinary, prebuiltLayout, twinBinary } from '../../src/twin/binary';
import { CRD_SOURCE_FILES, CRD_SOURCES, CrdSource, crdSourceFileName, crdSourcesOf, sourcedCrdFile, unavailableCrd, UNAVAILABLE_CRDS } from '../../src/twin/chart-crds';
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

  const at = (release: VendoredChart, chartPath: string) => `${release.chart} ${release.version} ${chartPath || '.'}`;

  it('each has a pinned source or a declared reason it cannot be had, never both (listed per release)', () => {
    const reasons = [...new Set(Object.values(UNAVAILABLE_CRDS).flatMap((byCrd) => Object.values(byCrd)))];
    const lines = missing.map(({ release, chartPath, name }) => {
      const source = crdSourcesOf(release, chartPath).find((s) => s.crds.includes(name));
      const why = unavailableCrd(release, chartPath, name);
      const how = source && why ? 'BOTH' : source ? `${source.module}@${source.version} ${source.file}` : why ? `UNAVAILABLE (${reasons.indexOf(why) + 1})` : 'NONE';
      return `${at(release, chartPath)} ${name}: ${how}`;
    });
    console.log([...lines, ...reasons.map((r, i) => `(${i + 1}) ${r}`)].join('\n'));
    expect(lines.filter((l) => l.endsWith(': NONE') || l.endsWith(': BOTH'))).toEqual([]);
    // NFD's are sourced for every pinned NVIDIA chart
    for (const r of CHARTS.filter((c) => c.chart === GPU_OPERATOR_CHART.chart || c.chart === NETWORK_OPERATOR_CHART.chart)) {
      expect(crdSourcesOf(r, 'charts/node-feature-discovery').map((s) => s.module), at(r, 'charts/node-feature-discovery')).toEqual(['sigs.k8s.io/node-feature-discovery']);
    }
  });

  it('the Network Operator\'s NetworkAttachmentDefinition and the GPU Operator\'s ComputeDomainClique have a pinned source (issue 48)', () => {
    const sourced = (release: VendoredChart, crd: string) => crdSourcesOf(release, '').filter((s) => s.crds.includes(crd)).map((s) => s.module);
    expect(sourced(NETWORK_OPERATOR_CHART, 'k8s.cni.cncf.io/NetworkAttachmentDefinition')).toHaveLength(1);
    expect(sourced(GPU_OPERATOR_CHART, 'resource.nvidia.com/ComputeDomainClique')).toHaveLength(1);
  });

  it('every declared absence says what was looked for: the module it would come from and the proxy\'s answer', () => {
    for (const [k, byCrd] of Object.entries(UNAVAILABLE_CRDS)) {
      for (const [crd, why] of Object.entries(byCrd)) {
        expect(why, `${k} ${crd}`).toMatch(/github\.com\/|sigs\.k8s\.io\//);
        expect(why, `${k} ${crd}`).toContain('403 Forbidden');
      }
    }
  });

  it('declares nothing stale: every source and every declared absence is of a CRD a pinned chart carries and ../shared/crds lacks', () => {
    const carried = (k: string) => missing.filter((m) => at(m.release, m.chartPath) === k).map((m) => m.name);
    for (const [k, sources] of Object.entries(CRD_SOURCES)) {
      expect(sources.length, k).toBeGreaterThan(0);
      // each file fills at least one CRD there and holds none that ../shared/crds has (the copy would win)
      for (const s of sources) expect(s.crds.filter((c) => !carried(k).includes(c)), `${k} ${s.file}`).toEqual([]);
    }
    for (const [k, byCrd] of Object.entries(UNAVAILABLE_CRDS)) {
      expect(Object.keys(byCrd).filter((c) => !carried(k).includes(c)), k).toEqual([]);
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
    const source: CrdSource = { module: 'example.com/m', file: 'crds/x.yaml', crds: ['example.com/X'], evidence: 'a fixture', ...pinned };
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
    for (const source of CRD_SOURCE_FILES) expect(beside).toContain(crdSourceFileName(source));
    expect(CRD_SOURCE_FILES.length).toBe(new Set(Object.values(CRD_SOURCES).flat().map(crdSourceFileName)).size);
  });
});

describe('the packages of the NVIDIA charts carry the CRDs of their pinned sources', () => {
  let helm: string;
  let twin: GoBinary;
  beforeAll(async () => {
    helm = path.join(work, 'bin', 'helm');
    mkdirSync(path.dirname(helm), { recursive: true });
    twin = await twinBinary();
    symlinkSync(twin.path, helm);
  }, 30 * 60 * 1000);

  /** The CRDs (`group/Kind`) and their names among the documents helm printed. */
  type Printed = { kind?: string; metadata?: { name?: string }; spec?: { group?: string; names?: { kind?: string } } } | null;
  const printedCrds = (out: string) => parseAllDocuments(out).map((d) => d.toJS() as Printed)
    .filter((o) => o?.kind === 'CustomResourceDefinition').map((o) => ({ crd: `${o!.spec?.group}/${o!.spec?.names?.kind}`, name: o!.metadata?.name }));

  for (const release of [GPU_OPERATOR_CHART, NETWORK_OPERATOR_CHART]) {
    it(`${release.chart} ${release.version}: each source's file in its chart path's crds/ as published, and helm template --include-crds prints its CRDs`, () => {
      const archive = packageChart(release, { upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, helm, work: path.join(work, 'package'), crdFiles: twin.companions });
      const chartPaths = release.unrenderedCrds.map((g) => g.chartPath).filter((p) => crdSourcesOf(release, p).length > 0);
      expect(chartPaths).toContain('charts/node-feature-discovery');
      for (const chartPath of chartPaths) {
        for (const source of crdSourcesOf(release, chartPath)) {
          const inside = path.posix.join(release.chart, chartPath, 'crds', path.basename(source.file));
          const file = spawnSync('tar', ['-xzOf', archive, inside], { timeout: 60_000 });
          expect(file.status, `${inside}: ${file.stderr?.toString()}`).toBe(0);
          expect(sha256(file.stdout), inside).toBe(source.sha256);
        }
      }
      const r = spawnSync(helm, ['template', 'x', archive, '--include-crds', '--namespace', 'x'], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024, env: { PATH: process.env.PATH, HOME: work } });
      expect(r.status, r.stderr).toBe(0);
      const printed = printedCrds(r.stdout);
      for (const crd of chartPaths.flatMap((p) => crdSourcesOf(release, p).flatMap((s) => s.crds))) expect(printed.map((p) => p.crd)).toContain(crd);
      for (const name of ['nodefeatures', 'nodefeaturegroups', 'nodefeaturerules']) expect(printed.map((p) => p.name)).toContain(`${name}.nfd.k8s-sigs.io`);
    }, 300_000);
  }
});
