import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { createRequire } from 'node:module';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagedReleases } from '../../src/upstream/releases';
import { ROOT, SHARED } from '../paths';

/*
 * `npm run shared` (projenrc/shared.cjs) lays out ../shared from the pinned sources of projenrc/shared-sources.json,
 * every file verified. The real sources (raw.githubusercontent.com) cannot be reached here: a loopback mirror serves
 * copies of the same files in their layout (<owner>/<repo>/<commit>/<path>), and the copy it lays out is what npm pack
 * builds the package assets from. The lock itself is checked against ../shared: every file there, with its digest.
 */

interface LockedFile { file: string; digest: string; source: string; upstream: string; cut?: string; unsummed: boolean }
interface Lock {
  base: string;
  sources: Record<string, { repo: string; ref: string; commit: string }>;
  sums: Record<string, string>;
  files: LockedFile[];
}
const shared = createRequire(__filename)(path.join(ROOT, 'projenrc', 'shared.cjs')) as {
  FOLDERS: readonly string[];
  LOCK_FILE: string;
  readLock(file?: string): Lock;
  missingShared(command: string, dir?: string): string | undefined;
};
const SCRIPT = path.join(ROOT, 'projenrc', 'shared.cjs');
const lock = shared.readLock();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
const HAS_SHARED = shared.missingShared('test', SHARED) === undefined;

const work = mkdtempSync(path.join(tmpdir(), 'shared-layout-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs the script (or another one of projenrc/) in a child: its exit code and output. */
function node(args: readonly string[], script = SCRIPT, cwd = ROOT): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { cwd, env: { ...process.env, CI: 'true' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Files under a folder, relative, sorted. */
function files(dir: string, rel = ''): string[] {
  return readdirSync(path.join(dir, rel)).sort().flatMap((n) => {
    const child = rel ? `${rel}/${n}` : n;
    return statSync(path.join(dir, child)).isDirectory() ? files(dir, child) : [child];
  });
}

/**
 * A mirror of the sources on 127.0.0.1 from the files of ../shared: each URL answers the bytes of the files read from
 * it (a CRD file several are cut out of: those documents one after the other). `tamper` changes what one URL answers.
 */
type Tamper = (url: string, body: Buffer) => Buffer | number;
function mirror(tamper: Tamper = (_, b) => b): Promise<{ server: Server; url: string; requests: string[] }> {
  const bodies = new Map<string, Buffer[]>();
  for (const f of lock.files) {
    const s = lock.sources[f.source];
    const url = `/${s.repo}/${s.commit}/${f.upstream}`;
    // a file laid out in two places is one; the documents cut out of one file are its parts
    const body = readFileSync(path.join(SHARED, f.file));
    if (f.cut !== undefined) bodies.set(url, [...bodies.get(url) ?? [], body]);
    else if (!bodies.has(url)) bodies.set(url, [body]);
  }
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const url = decodeURIComponent(req.url ?? '');
    requests.push(url);
    const parts = bodies.get(url);
    const answer = parts ? tamper(url, Buffer.concat(parts)) : 404;
    if (typeof answer === 'number') {
      res.writeHead(answer).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(answer);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests });
  }));
}

describe.skipIf(!HAS_SHARED)('npm run shared: ../shared from the pinned sources', () => {
  const into = path.join(work, 'shared');
  let server: Server;
  let base: string;
  let requests: string[];
  beforeAll(async () => {
    ({ server, url: base, requests } = await mirror());
  });
  afterAll(() => server.close());

  it('lays out every pinned file from the mirror, byte for byte the files of ../shared, and upstream-installs/SHA256SUMS', async () => {
    const r = await node(['--mirror', base, '--into', into]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^shared: ${lock.files.length} pinned files in .*, every one verified \\(SHA-256\\): ${lock.files.length} fetched from ${base} .*, 0 already there`));
    for (const f of lock.files) expect(sha256(readFileSync(path.join(into, f.file))), f.file).toBe(sha256(readFileSync(path.join(SHARED, f.file))));
    expect(readFileSync(path.join(into, 'upstream-installs', 'SHA256SUMS'))).toEqual(readFileSync(path.join(SHARED, 'upstream-installs', 'SHA256SUMS')));
    // each source file read once: the CRDs cut out of one file come from one request
    expect(new Set(requests).size).toBe(requests.length);
    expect(files(into).filter((f) => !f.endsWith('/SOURCES.md') && f !== 'upstream-installs/SHA256SUMS').sort()).toEqual(lock.files.map((f) => f.file).sort());
    // a SOURCES.md per folder names each source, in the sections the team's has
    expect(readFileSync(path.join(into, 'crds', 'SOURCES.md'), 'utf8')).toContain('## victoriametrics/ — VictoriaMetrics/operator\n\nRef tag `v0.74.1`, commit `5e62d6bf559fc63d556d16e8c8081643227a248c`.\n');
    expect(readFileSync(path.join(into, 'upstream-installs', 'SOURCES.md'), 'utf8')).toContain('## kueue-v0.18.6/ — kubernetes-sigs/kueue\n\nRef tag `v0.18.6`, commit `4152c9bad956a361bb56b0f7994d492709835d96`.\n');
  }, 120_000);

  it('the copy it laid out is what npm pack builds the package assets from', async () => {
    const assets = path.join(work, 'assets');
    const r = await node(['--shared', into, '--into', assets], path.join(ROOT, 'projenrc', 'package-assets.cjs'));
    expect(r.stderr).toMatch(/^package assets: crds\/: \d+ files, [\d.]+ MiB, verified\npackage assets: upstream-installs\/: \d+ files/);
    expect(r.code).toBe(0);
    expect(packagedReleases().map((x) => (typeof x === 'string' ? x : x.folder)).every((f) => existsSync(path.join(assets, 'upstream-installs', f)))).toBe(true);
  }, 120_000);

  it('run again, it fetches nothing: every file there verified and kept', async () => {
    const before = requests.length;
    const r = await node(['--mirror', base, '--into', into]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`: 0 fetched from .*, ${lock.files.length} already there`));
    expect(requests.length).toBe(before);
  });

  it('a file there that differs is never overwritten: exit 1 naming it, the rest in place', async () => {
    const victim = path.join(into, 'crds', 'kueue', 'kueue.x-k8s.io_clusterqueues.yaml');
    writeFileSync(victim, 'edited\n');
    const r = await node(['--mirror', base, '--into', into]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: shared: 1 of \d+ pinned file\(s\) not laid out in .*:\n {2}crds\/kueue\/kueue\.x-k8s\.io_clusterqueues\.yaml: sha256 [0-9a-f]{64} there, the pinned file's is [0-9a-f]{64}: move it away and run npm run shared again \(nothing was overwritten\)\n$/);
    expect(readFileSync(victim, 'utf8')).toBe('edited\n');
  });

  it('a mirror that answers other bytes, or none: exit 1 naming each file and the URL; nothing half-written, the rest laid out', async () => {
    const bad = await mirror((url, body) => (url.endsWith('/8eab68778fc1b52affe165fdf5af29d1e9b4f3cb/config/components/crd/bases/kueue.x-k8s.io_cohorts.yaml') ? Buffer.concat([body, Buffer.from('#\n')])
      : url.endsWith('/manifests/base/config/argocd-cm.yaml') ? 404 : body));
    try {
      const fresh = path.join(work, 'tampered');
      const r = await node(['--mirror', bad.url, '--into', fresh]);
      expect(r.code).toBe(1);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^error: shared: 2 of \d+ pinned file\(s\) not laid out in /);
      expect(lines.slice(1).sort().join('\n')).toMatch(new RegExp([
        '^ {2}crds/kueue/kueue\\.x-k8s\\.io_cohorts\\.yaml: http://127\\.0\\.0\\.1:\\d+/kubernetes-sigs/kueue/8eab[0-9a-f]+/config/components/crd/bases/kueue\\.x-k8s\\.io_cohorts\\.yaml: sha256 [0-9a-f]{64}, the lock says [0-9a-f]{64}: nothing written',
        ' {2}upstream-installs/argo-cd-v3\\.5\\.1/manifests/base/config/argocd-cm\\.yaml: http://127\\.0\\.0\\.1:\\d+/argoproj/argo-cd/109ca7ca[0-9a-f]+/manifests/base/config/argocd-cm\\.yaml: HTTP 404 .*$',
      ].join('\n')));
      expect(existsSync(path.join(fresh, 'crds', 'kueue', 'kueue.x-k8s.io_cohorts.yaml'))).toBe(false);
      expect(files(fresh).some((f) => f.includes('.tmp-'))).toBe(false);
      expect(existsSync(path.join(fresh, 'crds', 'kueue', 'kueue.x-k8s.io_clusterqueues.yaml'))).toBe(true);
    } finally {
      bad.server.close();
    }
  }, 120_000);

  it('bad arguments exit 2 with one line', async () => {
    for (const args of [['--mirror', 'file:///etc'], ['--jobs', '0'], ['--mirorr', base], ['--into']]) {
      const r = await node(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/^error: shared: [^\n]+\n$/);
    }
  });
});

describe.skipIf(!HAS_SHARED)('projenrc/shared-sources.json: what ../shared holds, as its SOURCES.md and SHA256SUMS record it', () => {
  it('every file of crds/, upstream-installs/ and upstream-samples/ but the evidence files, each with its SHA-256', () => {
    const there = shared.FOLDERS.flatMap((d) => files(path.join(SHARED, d)).map((f) => `${d}/${f}`)).filter((f) => !/(^|\/)(SOURCES\.md|SHA256SUMS)$/.test(f));
    expect(lock.files.map((f) => f.file).sort()).toEqual(there.sort());
    for (const f of lock.files) expect(sha256(readFileSync(path.join(SHARED, f.file))), f.file).toBe(f.digest);
    expect(sha256(readFileSync(path.join(SHARED, 'upstream-installs', 'SHA256SUMS')))).toBe(lock.sums['upstream-installs/SHA256SUMS']);
  });

  it('each file\'s source is one its folder\'s SOURCES.md names: the repository and the commit in the section of the file', () => {
    const texts = new Map(shared.FOLDERS.map((top) => [top, readFileSync(path.join(SHARED, top, 'SOURCES.md'), 'utf8')]));
    const sections = new Map([...texts].map(([top, text]) => [top, text.split(/^## /m)]));
    for (const f of lock.files) {
      const [top, folder] = f.file.split('/');
      const { repo, commit } = lock.sources[f.source];
      // the section of its folder (upstream-samples: one table row per file)
      const section = top === 'upstream-samples'
        ? texts.get(top)!.split('\n').find((l) => l.startsWith(`| ${f.file.slice(top.length + 1)} |`)) ?? ''
        : sections.get(top)!.filter((s) => s.startsWith(`${folder}/ `)).join('\n');
      expect(section, f.file).toContain(commit.slice(0, 8));
      expect(section.toLowerCase(), f.file).toContain(repo.split('/')[1].toLowerCase());
    }
  });
});

describe('a command that needs ../shared, without it', () => {
  const none = path.join(work, 'no-shared');

  it('--check names the command and npm run shared, in one line', async () => {
    const r = await node(['--check', 'npm run import', '--into', none]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: npm run import: .*no-shared is missing: the pinned upstream CRDs and installs this checkout builds from; lay it out with npm run shared \(docs\/development\.md#[\w-]+\)\n$/);
    expect((await node(['--check', 'npm test', '--into', SHARED])).code).toBe(HAS_SHARED ? 0 : 1);
  });

  it('npm pack (its prepack step that copies the assets): one line', async () => {
    mkdirSync(none, { recursive: true });
    const r = await node(['--shared', none, '--into', path.join(work, 'no-assets')], path.join(ROOT, 'projenrc', 'package-assets.cjs'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: npm pack: .*no-shared\/crds, .*no-shared\/upstream-installs is missing: .* lay it out with npm run shared .*\n$/);
  });

  it('a command of the CLI in a checkout with no ../shared beside it: exit 2, one line naming npm run shared', async () => {
    // a checkout (its package.json and .projenrc.ts, the compiled CLI, the dependencies) in a folder with no ../shared
    const checkout = path.join(work, 'box', 'checkout');
    mkdirSync(checkout, { recursive: true });
    cpSync(path.join(ROOT, 'package.json'), path.join(checkout, 'package.json'));
    writeFileSync(path.join(checkout, '.projenrc.ts'), '');
    cpSync(path.join(ROOT, 'lib', 'src'), path.join(checkout, 'lib', 'src'), { recursive: true });
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(checkout, 'node_modules'));
    const manifest = path.join(work, 'box', 'sc.yaml');
    writeFileSync(manifest, 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: x\nprovisioner: x\n');
    const r = await node(['validate', manifest], path.join(checkout, 'lib', 'src', 'bin.js'), checkout);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: this checkout reads its pinned CRD schemas from .*\/box\/shared\/crds, which is missing: lay out \.\.\/shared with npm run shared \(docs\/development\.md#[\w-]+\), or name --schemas DIR; nothing was written\n$/);
  });

  it('npm pack in a fresh checkout without npm ci: one line saying to run npm ci first', async () => {
    const clone = path.join(work, 'clone');
    mkdirSync(clone);
    for (const f of ['package.json', 'tsconfig.json']) cpSync(path.join(ROOT, f), path.join(clone, f));
    cpSync(path.join(ROOT, 'projenrc'), path.join(clone, 'projenrc'), { recursive: true });
    const r = await node(['--build'], path.join(clone, 'projenrc', 'launch.cjs'), clone);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: this checkout has no node_modules (typescript is not installed): run npm ci first\n');
  });
});
