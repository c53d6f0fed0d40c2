import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { twinBinary } from '../../src/twin/binary';
import { ChartMirror, packageChart, startChartMirror } from '../../src/twin/chart-mirror';
import { KUEUE_CHART } from '../../src/upstream/releases';

/**
 * The loopback chart mirror (chart-mirror.ts) read by the twin's own helm (the helm Argo CD v3.5.1's repo server
 * runs): a vendored release packaged as published, then pulled from the Helm repository over HTTP and from the OCI
 * registry, as a `mirrors.charts` entry makes Argo CD pull it. Nothing reaches out (the twin's proxy settings).
 */

const work = mkdtempSync(path.join(tmpdir(), 'chart-mirror-'));
let mirror: ChartMirror;
let helm: string;
let archive: string;

/** Runs the twin's helm with a home of its own and no way out but loopback (asynchronously: the mirror serves from this process). */
function runHelm(args: string[]): Promise<{ status: number; out: string }> {
  const home = path.join(work, 'home');
  mkdirSync(home, { recursive: true });
  const env = { PATH: process.env.PATH, HOME: home, HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', NO_PROXY: '127.0.0.1' };
  return new Promise((resolve) => {
    execFile(helm, args, { encoding: 'utf8', timeout: 120_000, env }, (error, stdout, stderr) => {
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, out: `${stdout}${stderr}${error?.message ?? ''}` });
    });
  });
}

beforeAll(async () => {
  const twin = await twinBinary();
  helm = path.join(work, 'bin', 'helm');
  mkdirSync(path.dirname(helm), { recursive: true });
  symlinkSync(twin.path, helm);
  archive = packageChart(KUEUE_CHART, { upstream: DEFAULT_UPSTREAM, schemas: DEFAULT_SCHEMAS, helm, work: path.join(work, 'package'), crdFiles: {} });
  mirror = await startChartMirror(path.join(work, 'mirror'));
  mirror.addToHelmRepository('kueue', [archive], helm);
  mirror.addToRegistry('kueue/charts/kueue', archive);
}, 30 * 60 * 1000);

afterAll(async () => {
  await mirror?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('the loopback chart mirror, read by the twin\'s helm', () => {
  it('packages the vendored release as published: its name and version', () => {
    expect(path.basename(archive)).toBe(`${KUEUE_CHART.chart}-${KUEUE_CHART.version}.tgz`);
  });

  it('serves a Helm repository helm pulls the chart from', async () => {
    const index = parse(await (await fetch(`${mirror.helmUrl('kueue')}/index.yaml`)).text()) as { entries: Record<string, { version: string; urls: string[] }[]> };
    expect(index.entries.kueue.map((e) => e.version)).toEqual([KUEUE_CHART.version]);
    const into = path.join(work, 'pulled-http');
    mkdirSync(into);
    const r = await runHelm(['pull', 'kueue', '--repo', mirror.helmUrl('kueue'), '--version', KUEUE_CHART.version, '--destination', into]);
    expect(r.status, r.out).toBe(0);
    expect(readdirSync(into)).toEqual([path.basename(archive)]);
    expect(readFileSync(path.join(into, path.basename(archive))).equals(readFileSync(archive))).toBe(true);
  }, 180_000);

  it('serves an OCI registry helm pulls the chart from, as Argo CD reads oci:// sources', async () => {
    const into = path.join(work, 'pulled-oci');
    mkdirSync(into);
    const r = await runHelm(['pull', `${mirror.ociUrl('kueue/charts')}/kueue`, '--version', KUEUE_CHART.version, '--plain-http', '--destination', into]);
    expect(r.status, r.out).toBe(0);
    expect(readdirSync(into)).toEqual([path.basename(archive)]);
    expect(readFileSync(path.join(into, path.basename(archive))).equals(readFileSync(archive))).toBe(true);
  }, 180_000);

  it('answers a chart it does not hold with 404, and refuses anything but reads', async () => {
    const r = await runHelm(['pull', `${mirror.ociUrl('kueue/charts')}/kueue`, '--version', '9.9.9', '--plain-http', '--destination', work]);
    expect(r.status).not.toBe(0);
    expect((await fetch(`${mirror.helmUrl('kueue')}/index.yaml`, { method: 'PUT', body: 'x' })).status).toBe(405);
    expect((await fetch(`${mirror.helmUrl('nvidia')}/index.yaml`)).status).toBe(404);
    expect(mirror.requests.some((q) => q.status === 404 && q.path.includes('9.9.9'))).toBe(true);
  }, 180_000);
});
