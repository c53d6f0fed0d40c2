import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packagedReleaseFolders, packagedReleases, VENDORED_RELEASES } from '../../src/upstream/releases';
import { VERSIONS } from '../../src/versions';
import { ROOT } from '../helpers';

/* The copy of the package assets that npm pack runs (projenrc/package-assets.cjs): verified, fail-closed. */

/** A release folder that ships whole, or a previous release with the paths a command reads of it. */
type Release = string | { readonly folder: string; readonly reads: readonly string[] };
interface Asset { readonly from: string; readonly to: string; readonly drop?: Record<string, string>; readonly unlisted?: Record<string, string> }
const { ASSETS, packageAssets } = createRequire(__filename)(path.join(ROOT, 'projenrc', 'package-assets.cjs')) as {
  ASSETS: readonly Asset[];
  packageAssets(opts: { shared: string; into: string; releases?: readonly Release[] }): { to: string; files: number; releases?: string[] }[];
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The release folders of the fake ../shared that ship (the Argo CD one: the table drops its docs/). */
const RELEASES = ['argo-cd-v3.5.1', 'chart-1.0.0'];

/**
 * A small ../shared with every path the asset table names, one chart listed in SHA256SUMS, and a folder of an
 * unreleased branch that is no release of the toolkit (listed too).
 */
function fakeShared(): string {
  const shared = mkdtempSync(path.join(tmpdir(), 'fake-shared-'));
  const put = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(shared, rel)), { recursive: true });
    writeFileSync(path.join(shared, rel), text);
  };
  for (const a of ASSETS) {
    for (const d of [...Object.keys(a.drop ?? {}), ...Object.keys(a.unlisted ?? {})]) put(path.join(a.from, d.endsWith('/') ? `${d}file.yaml` : d), 'x\n');
  }
  put('crds/kueue/crd.yaml', 'kind: CustomResourceDefinition\n');
  put('upstream-installs/chart-1.0.0/Chart.yaml', 'name: chart\n');
  put('upstream-installs/chart-1.0.0/overlay/.gitignore', 'Chart.yaml\n');
  put('upstream-installs/SHA256SUMS', [
    `${sha256('name: chart\n')}  chart-1.0.0/Chart.yaml`,
    `${sha256('Chart.yaml\n')}  chart-1.0.0/overlay/.gitignore`,
    `${sha256('x\n')}  dynamo-platform-1.5.0-main/file.yaml`,
    '',
  ].join('\n'));
  return shared;
}

describe('the package assets', () => {
  it('are copied with checksums of exactly what ships; dropped folders and ignore files stay out', () => {
    const shared = fakeShared();
    const into = path.join(mkdtempSync(path.join(tmpdir(), 'assets-')), 'assets');
    expect(packageAssets({ shared, into, releases: RELEASES }).find((c) => c.to === 'upstream-installs')?.releases).toEqual(RELEASES);
    // every file shipped, the ones allowed unlisted too (as read): the installed package verifies what it reads against them
    const unlisted = Object.keys(ASSETS.find((a) => a.to === 'upstream-installs')!.unlisted!).filter((rel) => !rel.includes('/') || RELEASES.includes(rel.split('/')[0]));
    expect(readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'), 'utf8').trimEnd().split('\n').sort()).toEqual([
      `${sha256('name: chart\n')}  chart-1.0.0/Chart.yaml`,
      ...unlisted.map((rel) => `${sha256('x\n')}  ${rel}`),
    ].sort());
    expect(readFileSync(path.join(into, 'crds', 'SHA256SUMS'), 'utf8')).toBe(`${sha256('kind: CustomResourceDefinition\n')}  kueue/crd.yaml\n`);
    for (const gone of ['upstream-installs/dynamo-platform-1.5.0-main', 'upstream-installs/chart-1.0.0/overlay/.gitignore', 'crds/local-path-provisioner']) {
      expect(existsSync(path.join(into, gone)), gone).toBe(false);
    }
    expect(existsSync(path.join(into, 'upstream-installs', 'SOURCES.md'))).toBe(true);
    // the twin's Go modules (rehearse builds from them), from this checkout: go.mod, go.sum and the Go sources of each, nothing else
    const twin = readFileSync(path.join(into, 'twin', 'SHA256SUMS'), 'utf8').trimEnd().split('\n').map((l) => l.split('  ')[1]);
    expect(twin).toEqual(expect.arrayContaining(['go.mod', 'go.sum', 'main.go', 'kueue/go.mod', 'kueue/go.sum', 'twin/go.mod', 'twin/go.sum', 'twin/main.go']));
    expect(twin.filter((f) => !/(^|\/)(go\.mod|go\.sum|[^/]+\.go)$/.test(f))).toEqual([]);
    expect(existsSync(path.join(into, 'twin', 'twin-cluster.ts'))).toBe(false);
  });

  it.each([
    ['a file that differs from its SHA256SUMS line', (s: string) => writeFileSync(path.join(s, 'upstream-installs', 'chart-1.0.0', 'Chart.yaml'), 'name: chart \n'), /chart-1\.0\.0\/Chart\.yaml: sha256 [0-9a-f]{64}, SHA256SUMS says [0-9a-f]{64}/],
    ['a file no SHA256SUMS line lists', (s: string) => writeFileSync(path.join(s, 'upstream-installs', 'chart-1.0.0', 'extra.yaml'), 'y\n'), /chart-1\.0\.0\/extra\.yaml: in no SHA256SUMS line and not allowed unlisted/],
    ['a listed file that is missing', (s: string) => rmSync(path.join(s, 'upstream-installs', 'chart-1.0.0', 'Chart.yaml')), /chart-1\.0\.0\/Chart\.yaml: listed in SHA256SUMS but missing/],
    ['a release folder src/versions.ts selects that is not there', (s: string) => rmSync(path.join(s, 'upstream-installs', 'chart-1.0.0'), { recursive: true }), /no folder chart-1\.0\.0, a release src\/versions\.ts pins or declares as previous/],
    ['a drop that matches nothing (the table is stale)', (s: string) => rmSync(path.join(s, 'crds', 'local-path-provisioner'), { recursive: true }), /nothing to drop at local-path-provisioner\//],
  ])('stop the pack on %s, and leave the previous copy as it was', (_what, spoil, says) => {
    const shared = fakeShared();
    const into = path.join(mkdtempSync(path.join(tmpdir(), 'assets-')), 'assets');
    packageAssets({ shared, into, releases: RELEASES });
    const before = readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'), 'utf8');
    spoil(shared);
    expect(() => packageAssets({ shared, into, releases: RELEASES })).toThrow(says);
    expect(readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'), 'utf8')).toBe(before);
    expect(existsSync(`${into}.tmp-${process.pid}`)).toBe(false);
  });
});

describe('the releases the package carries', () => {
  it('of a previous release, only the paths it reads: the rest of its folder is never copied', () => {
    const shared = fakeShared();
    const old = path.join(shared, 'upstream-installs', 'chart-0.9.0');
    mkdirSync(path.join(old, 'chart', 'templates'), { recursive: true });
    mkdirSync(path.join(old, 'config'));
    const files: Record<string, string> = { 'chart/Chart.yaml': 'name: chart\nversion: 0.9.0\n', 'chart/templates/a.yaml': 'a\n', 'config/crd.yaml': 'c\n' };
    for (const [rel, text] of Object.entries(files)) writeFileSync(path.join(old, rel), text);
    const sums = path.join(shared, 'upstream-installs', 'SHA256SUMS');
    writeFileSync(sums, readFileSync(sums, 'utf8') + Object.entries(files).map(([rel, text]) => `${sha256(text)}  chart-0.9.0/${rel}\n`).join(''));
    const into = path.join(mkdtempSync(path.join(tmpdir(), 'assets-')), 'assets');
    packageAssets({ shared, into, releases: [...RELEASES, { folder: 'chart-0.9.0', reads: ['chart'] }] });
    const copied = readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'), 'utf8');
    expect(copied).toContain('chart-0.9.0/chart/Chart.yaml');
    expect(copied).toContain('chart-0.9.0/chart/templates/a.yaml');
    expect(existsSync(path.join(into, 'upstream-installs', 'chart-0.9.0', 'config'))).toBe(false);
    expect(copied).not.toContain('config/crd.yaml');
    // a path it reads that is not there stops the pack
    expect(() => packageAssets({ shared, into, releases: [...RELEASES, { folder: 'chart-0.9.0', reads: ['charts/chart'] }] })).toThrow(/chart-0\.9\.0: no charts\/chart, a path src\/versions\.ts says a command reads of it/);
    // the package's own selection: each previous release with what src/versions.ts says it reads
    const declared: { folder: string; reads: readonly string[] }[] = Object.values(VERSIONS).flatMap((v) => ('previous' in v ? [...v.previous] : []));
    for (const p of declared) expect(packagedReleases().find((r) => r.folder === p.folder)?.reads).toEqual([...p.reads].sort());
  });

  it('are the selected release folders only: another folder beside them is never read, whatever SHA256SUMS says of it', () => {
    const shared = fakeShared();
    // a previous release kept for another purpose, with a file SHA256SUMS does not cover
    const other = path.join(shared, 'upstream-installs', 'chart-0.9.0');
    mkdirSync(other);
    writeFileSync(path.join(other, 'Chart.yaml'), 'name: chart\nversion: 0.9.0\n');
    const into = path.join(mkdtempSync(path.join(tmpdir(), 'assets-')), 'assets');
    packageAssets({ shared, into, releases: RELEASES });
    expect(existsSync(path.join(into, 'upstream-installs', 'chart-0.9.0'))).toBe(false);
    // selected, the same folder is verified as any other
    expect(() => packageAssets({ shared, into, releases: [...RELEASES, 'chart-0.9.0'] })).toThrow(/chart-0\.9\.0\/Chart\.yaml: in no SHA256SUMS line and not allowed unlisted/);
  });

  it('are the pinned releases of src/versions.ts, plus every previous release a component declares there', () => {
    const pinned = [...new Set(VENDORED_RELEASES.map((r) => r.folder))].sort();
    const previous = Object.values(VERSIONS).flatMap((v) => ('previous' in v ? v.previous.map((p) => p.folder) : []));
    expect(packagedReleaseFolders()).toEqual([...pinned, ...previous].sort());
    const withPrevious = {
      ...Object.fromEntries(Object.entries(VERSIONS).map(([k, v]) => [k, { ...v, previous: [] }])),
      gpuOperator: { ...VERSIONS.gpuOperator, previous: ['v26.3.3'] },
      kueue: { ...VERSIONS.kueue, previous: [{ version: '0.18.6' }] },
      networkOperator: { ...VERSIONS.networkOperator, previous: [{ version: '26.1.2', folder: 'network-operator-v26.1.2' }] },
    };
    expect(packagedReleaseFolders(withPrevious)).toEqual([...pinned, 'gpu-operator-v26.3.3', 'kueue-v0.18.6', 'network-operator-v26.1.2'].sort());
    // a previous release of a component whose folders have no naming rule names its folder
    expect(() => packagedReleaseFolders({ grafana: { previous: ['38'] } })).toThrow(/src\/versions\.ts grafana\.previous 38: no folder for it/);
  });
});
