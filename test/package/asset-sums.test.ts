import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InstallationDamaged } from '../../src/cache/asset-sums';
import { EXIT, main } from '../../src/cli';
import { buildKey, MODULE_DIR } from '../../src/twin/binary';
import { locateChart } from '../../src/upstream/chart';
import { VENDORED_RELEASES, VendoredChart } from '../../src/upstream/releases';

/*
 * An installed package verifies the assets it ships (lib/assets/, copied with their checksums by
 * projenrc/package-assets.cjs) when it first reads them: a schema or a chart edited, added or removed inside
 * the installation is one line saying it is damaged (exit 2: reinstall), never findings blamed on the user's
 * tree. This checkout is the installed package here: its paths say so (vi.mock), and its lib/assets/ is a
 * fresh verified copy of ../shared in a temporary folder.
 */

const where = vi.hoisted(() => ({ assets: '' }));
vi.mock('../../src/paths', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/paths')>();
  const { mkdtempSync: mkdtemp } = await import('node:fs');
  const { tmpdir: tmp } = await import('node:os');
  const { join } = await import('node:path');
  where.assets = join(mkdtemp(join(tmp(), 'installed-')), 'assets');
  return { ...real, DEV_CHECKOUT: false, PACKAGE_ASSETS: where.assets, DEFAULT_SCHEMAS: join(where.assets, 'crds'), DEFAULT_UPSTREAM: join(where.assets, 'upstream-installs') };
});

const ROOT = path.resolve(__dirname, '..', '..');
const SHARED = path.resolve(ROOT, '..', 'shared');
const HAS_SHARED = existsSync(path.join(SHARED, 'crds')) && existsSync(path.join(SHARED, 'upstream-installs'));
const { packageAssets } = createRequire(__filename)(path.join(ROOT, 'projenrc', 'package-assets.cjs')) as { packageAssets(opts: { shared: string; into: string }): unknown };

let work: string;
let tree: string;
beforeAll(() => {
  if (!HAS_SHARED) return;
  packageAssets({ shared: SHARED, into: where.assets });
  work = mkdtempSync(path.join(tmpdir(), 'asset-sums-'));
  tree = path.join(work, 'tree');
  mkdirSync(tree);
  writeFileSync(path.join(tree, 'namespace.lab.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: lab\n');
});
afterAll(() => {
  if (where.assets) rmSync(path.dirname(where.assets), { recursive: true, force: true });
  if (work) rmSync(work, { recursive: true, force: true });
});

async function validate(): Promise<{ code: number; err: string[] }> {
  const err: string[] = [];
  const code = await main(['validate', tree], { out: () => {}, err: (l) => err.push(l) });
  return { code, err };
}

describe.skipIf(!HAS_SHARED)('the installed package verifies the assets it ships when it first reads them', () => {
  it('a schema file edited, added or removed: exit 2, one line naming it and saying the installation is damaged; as shipped, validate passes', async () => {
    const crd = path.join(where.assets, 'crds', 'kueue', 'kueue.x-k8s.io_clusterqueues.yaml');
    const original = readFileSync(crd);
    appendFileSync(crd, '# edited in place\n');
    const edited = await validate();
    expect(edited.code).toBe(EXIT.badInput);
    expect(edited.err).toEqual([`error: the installed gpu-cluster-manifests is damaged: ${crd} differs from the file it was shipped with (its checksum in crds/SHA256SUMS); reinstall it (npm ci); nothing was written`]);
    writeFileSync(crd, original);

    const extra = path.join(where.assets, 'crds', 'kueue', 'extra.yaml');
    writeFileSync(extra, 'kind: CustomResourceDefinition\n');
    expect((await validate()).err).toEqual([expect.stringMatching(/damaged: .*kueue\/extra\.yaml is not among the files it was shipped with \(crds\/SHA256SUMS\); reinstall it/)]);
    rmSync(extra);

    renameSync(crd, `${crd}.moved`);
    expect((await validate()).err).toEqual([expect.stringMatching(/damaged: .*kueue\.x-k8s\.io_clusterqueues\.yaml is missing \(crds\/SHA256SUMS lists it\); reinstall it/)]);
    renameSync(`${crd}.moved`, crd);

    const intact = await validate();
    expect(intact.code, intact.err.join('\n')).toBe(EXIT.ok);
  }, 120_000);

  it('a vendored chart edited inside the installation is found before any of its files is read', () => {
    const release = VENDORED_RELEASES.find((r): r is VendoredChart => r.type === 'helm')!;
    const upstream = path.join(where.assets, 'upstream-installs');
    const values = path.join(upstream, release.folder, release.chartPath, 'values.yaml');
    appendFileSync(values, '\nimage: {repository: evil.example.com/x}\n');
    expect(() => locateChart(upstream, release.chart, release.version)).toThrow(InstallationDamaged);
    expect(() => locateChart(upstream, release.chart, release.version)).toThrow(/^the installed gpu-cluster-manifests is damaged: .*values\.yaml differs from the file it was shipped with \(its checksum in upstream-installs\/SHA256SUMS\); reinstall it \(npm ci\)$/);
  });

  it('the twin\'s Go modules: a source edited or added inside the installation is found before go builds anything from it', () => {
    expect(MODULE_DIR).toBe(path.join(where.assets, 'twin'));
    // no go command is run before the files are verified: a go that does not exist is never reached
    const source = path.join(MODULE_DIR, 'main.go');
    const original = readFileSync(source);
    appendFileSync(source, '\nfunc init() { panic("edited") }\n');
    expect(() => buildKey('/nonexistent/go')).toThrow(/^the installed gpu-cluster-manifests is damaged: .*twin\/main\.go differs from the file it was shipped with \(its checksum in twin\/SHA256SUMS\); reinstall it/);
    writeFileSync(source, original);
    writeFileSync(path.join(MODULE_DIR, 'extra.go'), 'package main\n');
    expect(() => buildKey('/nonexistent/go')).toThrow(/damaged: .*twin\/extra\.go is not among the files it was shipped with \(twin\/SHA256SUMS\)/);
    rmSync(path.join(MODULE_DIR, 'extra.go'));
    // as shipped, the verification passes and the build goes on (to the go command, here none)
    expect(() => buildKey('/nonexistent/go')).toThrow(/\/nonexistent\/go env failed/);
  });
});
