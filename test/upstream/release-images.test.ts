import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { InstallationDamaged } from '../../src/cache/asset-sums';
import { EXIT, reportError } from '../../src/errors';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { chartDefaultValues, overlayImages } from '../../src/upstream/release-images';
import { KUEUE_CHART, NETWORK_OPERATOR_CHART, VENDORED_RELEASES, VendoredChart, VendoredOverlay } from '../../src/upstream/releases';
import { HAS_UPSTREAM } from '../helpers';

/** A values.yaml of a pinned chart's folder (or of one of its subcharts), parsed. */
function valuesYaml(chart: VendoredChart, sub = ''): any {
  return parse(readFileSync(path.join(DEFAULT_UPSTREAM, chart.folder, chart.chartPath, sub, 'values.yaml'), 'utf8'));
}

describe.skipIf(!HAS_UPSTREAM)('the default values of a pinned chart, as its templates see them', () => {
  it('a subchart\'s values under its name, the parent\'s values for it over its own', () => {
    const values = chartDefaultValues(DEFAULT_UPSTREAM, NETWORK_OPERATOR_CHART.chart, NETWORK_OPERATOR_CHART.version) as any;
    const own = valuesYaml(NETWORK_OPERATOR_CHART, 'charts/node-feature-discovery');
    const parent = valuesYaml(NETWORK_OPERATOR_CHART)['node-feature-discovery'];
    expect(parent.image.repository).not.toBe(own.image.repository);
    expect(values['node-feature-discovery'].image.repository).toBe(parent.image.repository);
    // what the parent does not set, the subchart's own values give
    const unset = Object.keys(own).find((k) => !(k in parent))!;
    expect(values['node-feature-discovery'][unset]).toEqual(own[unset]);
  });

  it('a subchart under the alias Chart.yaml gives it, not its name', () => {
    const dashboard = VENDORED_RELEASES.find((r): r is VendoredChart => r.type === 'helm' && r.chart === 'kubernetes-dashboard')!;
    const meta = parse(readFileSync(path.join(DEFAULT_UPSTREAM, dashboard.folder, dashboard.chartPath, 'Chart.yaml'), 'utf8'));
    const aliased = meta.dependencies.find((d: { alias?: string }) => d.alias !== undefined);
    const values = chartDefaultValues(DEFAULT_UPSTREAM, dashboard.chart, dashboard.version) as any;
    const own = valuesYaml(dashboard, `charts/${aliased.name}`);
    expect(values[aliased.alias].controller?.image).toEqual({ ...own.controller.image, ...valuesYaml(dashboard)[aliased.alias]?.controller?.image });
    expect(values[aliased.name]).toBeUndefined();
  });

  it('the published chart\'s stamped values over values.yaml (Kueue\'s promoted images, not the staging ones at the tag)', () => {
    const values = chartDefaultValues(DEFAULT_UPSTREAM, KUEUE_CHART.chart, KUEUE_CHART.version) as any;
    for (const [dotted, stamped] of Object.entries(KUEUE_CHART.published!.values!)) {
      expect(dotted.split('.').reduce((v, k) => v[k], values)).toEqual(stamped);
    }
  });

  it('a chart the copy does not hold is a broken install of the package: one line naming it, reinstall, exit 2', () => {
    let thrown: unknown;
    try {
      chartDefaultValues(DEFAULT_UPSTREAM, 'kueue', '0.0.1');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(InstallationDamaged);
    const lines: string[] = [];
    expect(reportError(thrown, (l) => lines.push(l))).toBe(EXIT.badInput);
    expect(lines).toEqual([expect.stringMatching(/^error: the installed gpu-cluster-manifests is damaged: .* holds no copy of chart kueue 0\.0\.1; reinstall it/)]);
  });
});

describe.skipIf(!HAS_UPSTREAM)('the images of a pinned overlay, and a chart\'s values', () => {
  const overlays = VENDORED_RELEASES.filter((r): r is VendoredOverlay => r.type === 'kustomize');

  it('are read the same through a link to the copy (a clean clone\'s ../shared is one)', () => {
    const linked = path.join(mkdtempSync(path.join(tmpdir(), 'linked-upstream-')), 'upstream-installs');
    symlinkSync(DEFAULT_UPSTREAM, linked);
    try {
      expect(overlays.length).toBeGreaterThan(0);
      for (const o of overlays) {
        const images = overlayImages(DEFAULT_UPSTREAM, o);
        expect(images.length, o.folder).toBeGreaterThan(0);
        expect(overlayImages(linked, o), o.folder).toEqual(images);
      }
      const values = (upstream: string) => chartDefaultValues(upstream, KUEUE_CHART.chart, KUEUE_CHART.version);
      expect(values(linked)).toEqual(values(DEFAULT_UPSTREAM));
    } finally {
      rmSync(path.dirname(linked), { recursive: true, force: true });
    }
  });
});
