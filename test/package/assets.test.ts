import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers';

/* The copy of the package assets that npm pack runs (projenrc/package-assets.cjs): verified, fail-closed. */

interface Asset { readonly from: string; readonly to: string; readonly drop?: Record<string, string>; readonly unlisted?: Record<string, string> }
const { ASSETS, packageAssets } = createRequire(__filename)(path.join(ROOT, 'projenrc', 'package-assets.cjs')) as {
  ASSETS: readonly Asset[];
  packageAssets(opts: { shared: string; into: string }): { to: string; files: number }[];
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A small ../shared with every path the asset table names, and one chart listed in SHA256SUMS. */
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
    packageAssets({ shared, into });
    // every file shipped, the ones allowed unlisted too (as read): the installed package verifies what it reads against them
    const unlisted = ASSETS.find((a) => a.to === 'upstream-installs')!.unlisted!;
    expect(readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'), 'utf8').trimEnd().split('\n').sort()).toEqual([
      `${sha256('name: chart\n')}  chart-1.0.0/Chart.yaml`,
      ...Object.keys(unlisted).map((rel) => `${sha256('x\n')}  ${rel}`),
    ].sort());
    expect(readFileSync(path.join(into, 'crds', 'SHA256SUMS'), 'utf8')).toBe(`${sha256('kind: CustomResourceDefinition\n')}  kueue/crd.yaml\n`);
    for (const gone of ['upstream-installs/dynamo-platform-1.5.0-main', 'upstream-installs/chart-1.0.0/overlay/.gitignore', 'crds/local-path-provisioner']) {
      expect(existsSync(path.join(into, gone)), gone).toBe(false);
    }
    expect(existsSync(path.join(into, 'upstream-installs', 'SOURCES.md'))).toBe(true);
  });

  it.each([
    ['a file that differs from its SHA256SUMS line', (s: string) => writeFileSync(path.join(s, 'upstream-installs', 'chart-1.0.0', 'Chart.yaml'), 'name: chart \n'), /chart-1\.0\.0\/Chart\.yaml: sha256 [0-9a-f]{64}, SHA256SUMS says [0-9a-f]{64}/],
    ['a file no SHA256SUMS line lists', (s: string) => writeFileSync(path.join(s, 'upstream-installs', 'chart-1.0.0', 'extra.yaml'), 'y\n'), /chart-1\.0\.0\/extra\.yaml: in no SHA256SUMS line and not allowed unlisted/],
    ['a listed file that is missing', (s: string) => rmSync(path.join(s, 'upstream-installs', 'chart-1.0.0', 'Chart.yaml')), /chart-1\.0\.0\/Chart\.yaml: listed in SHA256SUMS but missing/],
    ['a drop that matches nothing (the table is stale)', (s: string) => rmSync(path.join(s, 'crds', 'local-path-provisioner'), { recursive: true }), /nothing to drop at local-path-provisioner\//],
  ])('stop the pack on %s, and leave the previous copy as it was', (_what, spoil, says) => {
    const shared = fakeShared();
    const into = path.join(mkdtempSync(path.join(tmpdir(), 'assets-')), 'assets');
    packageAssets({ shared, into });
    const before = readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'), 'utf8');
    spoil(shared);
    expect(() => packageAssets({ shared, into })).toThrow(says);
    expect(readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'), 'utf8')).toBe(before);
    expect(existsSync(`${into}.tmp-${process.pid}`)).toBe(false);
  });
});
