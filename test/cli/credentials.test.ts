import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { checkCluster } from '../../src/check/engine';
import { SECURITY_RULES } from '../../src/check/security';
import { readClusters } from '../../src/check/tree';
import { main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { credentialKind, maskCredentials, messageLine, outputText } from '../../src/errors';
import { readSnapshot } from '../../src/preflight/snapshot';
import { FLEET_REPORT_FILE } from '../../src/report/fleet';
import { synth } from '../../src/synth/pipeline';
import { FLEET_FIXTURE, readTreeFiles, REFERENCE_FILE, referenceInput, runCliInProcess } from '../helpers';
import { kubeconfigFor, serveState } from '../preflight/api-server';
import { SNAPSHOT } from '../preflight/snapshots';

/*
 * Credentials never reach a file the toolkit writes or a line it prints (issue 52, hostile input round five, 7):
 * a repository URL of the description with user-info is refused (Argo CD takes repository credentials from its own
 * Secrets), a refused value shaped like a credential is echoed masked, check's no-credentials rule reads every file
 * of a tree (not only its objects), and what a live command prints or writes (a server address with user-info, a
 * server's message that echoes the token) is masked. One masking function (errors.ts maskCredentials) does it all.
 */

/** Secrets of the cases: each must never appear in anything printed or written. */
const PASSWORD = 'hunter2-Pa55word';
const GITHUB_TOKEN = `ghp_${'A1b2C3d4E5'.repeat(4)}`;
const BEARER = 'preflight-secret-bearer-token-0123456789';
const SECRETS = [PASSWORD, GITHUB_TOKEN, BEARER];

let dir: string;
beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'credentials-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const noSecret = (text: string) => {
  for (const s of SECRETS) expect(text).not.toContain(s);
};

describe('one masking function: the shapes of a credential, masked wherever a line is printed', () => {
  it.each([
    ['https://user:hunter2-Pa55word@git.example.com/a.git', 'https://***@git.example.com/a.git'],
    [`https://${GITHUB_TOKEN}@github.com/org/repo`, 'https://***@github.com/org/repo'],
    ['oci://robot:hunter2-Pa55word@harbor.lab/charts', 'oci://***@harbor.lab/charts'],
    // a password with an "@" in it: masked to the last one before the host
    ['https://u:hunter2@Pa55word@h/x', 'https://***@h/x'],
    // SSH: the user is the account git logs in as; only a password is a secret
    ['ssh://git@github.com/org/repo', 'ssh://git@github.com/org/repo'],
    ['ssh://git:hunter2-Pa55word@github.com/org/repo', 'ssh://git:***@github.com/org/repo'],
    ['git@github.com:org/repo.git', 'git@github.com:org/repo.git'],
    [`server said: invalid token Bearer ${BEARER}`, 'server said: invalid token Bearer ***'],
    [`token: ${BEARER}`, 'token: ***'],
    [`{"token":"${BEARER}"}`, '{"token":"***"}'],
    ['key AKIAABCDEFGHIJKLMNOP leaked', 'key *** leaked'],
    [`see ${GITHUB_TOKEN}.`, 'see ***.'],
    ['-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----', '-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY-----'],
    ['https://git.example.com/a.git and plain text', 'https://git.example.com/a.git and plain text'],
    // each shape once more, by the literals looked for before its pattern runs (CREDENTIAL_SHAPES' marks)
    ['jwt eyJhbGciOiJSUzI1.eyJzdWIiOiJzeXN0.c2lnbmF0dXJlX2J5dGVz end', 'jwt *** end'],
    ['  client-key-data: LS0tLS1CRUdJTg==', '  client-key-data: ***'],
    ['password: hunter2-Pa55word', 'password: ***'],
    ['{"password": "hunter2-Pa55word"}', '{"password": "***"}'],
    ['id ASIAABCDEFGHIJKLMNOP.', 'id ***.'],
    [`github_pat_${'A1b2C3d4E5'.repeat(5)} x`, '*** x'],
    [`gho_${'A1b2C3d4E5'.repeat(4)}`, '***'],
    ['glpat-A1b2C3d4E5A1b2C3d4E5', '***'],
    ['-----BEGIN PRIVATE KEY-----\\nMIIEow\\n-----END PRIVATE KEY-----', '-----BEGIN PRIVATE KEY-----***-----END PRIVATE KEY-----'],
    // near misses: a shape's literal without its secret, a URL with an "@" after its host
    ['the token: short', 'the token: short'],
    ['image: registry.example.com/a@sha256:0123 from https://example.com/x', 'image: registry.example.com/a@sha256:0123 from https://example.com/x'],
  ])('%s', (text, masked) => {
    expect(maskCredentials(text)).toBe(masked);
    expect(credentialKind(text) === undefined).toBe(masked === text);
  });

  it('masks a secret the run holds wherever it appears, and every line printed to either stream', () => {
    expect(maskCredentials(`the server refused ${BEARER} (${BEARER})`, [BEARER])).toBe('the server refused *** (***)');
    expect(messageLine(`error: https://admin:${PASSWORD}@10.0.0.1:6443: connection refused`)).toBe('error: https://***@10.0.0.1:6443: connection refused');
    expect(outputText(`repoURL: https://x:${PASSWORD}@h/r.git\n`)).toBe('repoURL: https://***@h/r.git\n');
  });

  it('stays linear on text built to make a pattern backtrack (a hang would show as a timeout)', () => {
    const hostile = ['a.'.repeat(200_000), 'eyJ-'.repeat(100_000), 'glpat-'.repeat(100_000), 'Bearer '.repeat(100_000), `${' '.repeat(100_000)}\n`.repeat(3),
      `-----BEGIN ${'A '.repeat(100_000)}`, `http://${'x'.repeat(200_000)}`].join('\n');
    expect(maskCredentials(hostile).length).toBeGreaterThan(0);
  }, 60_000);
});

/** A description with `edit` applied, written to a file of its own. */
function description(name: string, edit: (d: Record<string, any>) => void): string {
  const d = referenceInput();
  edit(d);
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, stringify(d));
  return file;
}

function run(args: string[]): { code: number; stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  const code = main(args, { out: (l) => { stdout += `${l}\n`; }, err: (l) => { stderr += `${l}\n`; } }) as number;
  return { code, stdout, stderr };
}

describe('a repository URL with credentials is refused like any bad field, its value masked', () => {
  const CASES: { name: string; edit: (d: Record<string, any>) => void; path: RegExp }[] = [
    { name: 'gitops.repoURL with a user and password', edit: (d) => { d.gitops.repoURL = `https://deploy:${PASSWORD}@git.example.com/platform/clusters.git`; }, path: /gitops\.repoURL/ },
    { name: 'gitops.repoURL with a token as the user', edit: (d) => { d.gitops.repoURL = `https://${GITHUB_TOKEN}@github.com/org/clusters.git`; }, path: /gitops\.repoURL/ },
    { name: 'gitops.repoURL over SSH with a password', edit: (d) => { d.gitops.repoURL = `ssh://git:${PASSWORD}@git.example.com/clusters.git`; }, path: /gitops\.repoURL/ },
    { name: 'gitops.destinationServer with user-info', edit: (d) => { d.gitops.destinationServer = `https://admin:${PASSWORD}@10.0.0.1:6443`; }, path: /gitops\.destinationServer/ },
    { name: 'a mirrors.charts mirror with user-info', edit: (d) => { d.mirrors = { charts: { 'oci://registry.k8s.io/kueue/charts': `oci://robot:${PASSWORD}@harbor.lab/kueue` } }; }, path: /mirrors\.charts\.oci:\/\/registry\.k8s\.io\/kueue\/charts/ },
    { name: 'a mirrors.charts key with user-info', edit: (d) => { d.mirrors = { charts: { [`https://u:${PASSWORD}@helm.ngc.nvidia.com/nvidia`]: 'https://charts.lab/nvidia' } }; }, path: /mirrors\.charts/ },
    { name: 'a mirrors.git mirror with a token', edit: (d) => { d.mirrors = { git: { 'https://github.com/': `https://${GITHUB_TOKEN}@git.lab/github/` } }; }, path: /mirrors\.git\.https:\/\/github\.com\// },
    { name: 'monitoring.runbookBaseUrl with user-info', edit: (d) => { d.monitoring = { ...d.monitoring, alerts: { runbookBaseUrl: `https://wiki:${PASSWORD}@wiki.example.com/runbooks` } }; }, path: /monitoring\.alerts\.runbookBaseUrl/ },
  ];

  it.each(CASES)('$name', (c) => {
    const file = description(c.name.replace(/\W+/g, '-'), c.edit);
    const r = run(['synth', '--config', file, '--out', path.join(dir, 'out'), '--no-validate']);
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    const lines = r.stderr.trimEnd().split('\n');
    const line = lines.find((l) => c.path.test(l));
    expect(line, r.stderr).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+ `));
    expect(line).toMatch(/holds credentials \([a-z]+:\/\/[^)]*\*\*\*@[^)]*\): a repository's credentials go into Argo CD's repository Secret/);
    noSecret(r.stderr + r.stdout);
  });

  it('an SSH URL with only its user (the account git logs in as) is no credential, and renders', () => {
    const file = description('ssh-user', (d) => { d.gitops.repoURL = 'git@git.example.com:platform/clusters.git'; d.mirrors = { git: { 'https://github.com/': 'ssh://git@git.lab/github/' } }; });
    const r = run(['synth', '--config', file, '--out', path.join(dir, 'ssh-out'), '--no-validate', '--quiet']);
    expect(r.code, r.stderr).toBe(EXIT.ok);
  });

  it.each([
    ['name', (d: Record<string, any>) => { d.name = GITHUB_TOKEN; }],
    ['monitoring.grafanaAdminSecret', (d: Record<string, any>) => { d.monitoring = { ...d.monitoring, grafanaAdminSecret: `Bearer ${BEARER}` }; }],
    ['nodes.gpuWorkers.gpuProduct', (d: Record<string, any>) => { d.nodes.gpuWorkers.gpuProduct = `token: ${BEARER}`; }],
  ])('a refused value of %s shaped like a credential is echoed masked', (field, edit) => {
    const file = description(`echo-${field}`, edit);
    const r = run(['synth', '--config', file, '--out', path.join(dir, 'out'), '--no-validate']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toContain(` ${field}: `);
    expect(r.stderr).toContain('***');
    noSecret(r.stderr + r.stdout);
  });

  it('init --repo with credentials is refused naming the option; the checkout\'s origin is taken without its credentials', () => {
    const refused = run(['init', '--snapshot', SNAPSHOT, '--name', 'lab', '--repo', `https://ci:${PASSWORD}@git.example.com/lab.git`, '--out', '-']);
    expect(refused.code).toBe(EXIT.badInput);
    expect(refused.stderr).toMatch(/^error: --repo: holds credentials \(https:\/\/\*\*\*@git\.example\.com\/lab\.git\)/);
    noSecret(refused.stderr + refused.stdout);
    // a CI checkout's origin carries a token: the description gets the URL without it
    const repo = mkdtempSync(path.join(dir, 'checkout-'));
    cpSync(path.join(__dirname, '..', 'fixtures', 'clusters'), path.join(repo, 'clusters'), { recursive: true });
    writeFileSync(path.join(repo, 'gpu-cluster-manifests.yaml'), 'clusters: clusters\nout: dist\n');
    const git = path.join(repo, '.git');
    mkdirSync(git);
    writeFileSync(path.join(git, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(path.join(git, 'config'), `[remote "origin"]\n\turl = https://x-access-token:${GITHUB_TOKEN}@github.com/org/clusters.git\n`);
    const cwd = process.cwd();
    process.chdir(repo);
    try {
      const r = run(['init', '--snapshot', SNAPSHOT, '--name', 'lab', '--out', '-']);
      expect(r.code, r.stderr).toBe(EXIT.ok);
      expect(parse(r.stdout).gitops.repoURL).toBe('https://github.com/org/clusters.git');
      noSecret(r.stderr + r.stdout);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('check\'s no-credentials rule reads every file of the tree, not only its objects', () => {
  let tree: string;
  beforeAll(() => {
    tree = path.join(dir, 'tree');
    synth({ clustersDir: FLEET_FIXTURE, out: tree, schemas: false });
  }, 300_000);

  const findings = () => readClusters(tree).flatMap((v) => checkCluster(v, { rules: SECURITY_RULES })).filter((f) => f.rule === 'no-credentials');

  it('a clean render has none', () => {
    expect(findings()).toEqual([]);
  });

  it.each([
    ['the cluster report', 'hub/README.md', `Clone https://deploy:${PASSWORD}@git.example.com/platform/clusters.git first.\n`, /URL with credentials/],
    ['a kustomization', 'hub/kueue/kustomization.yaml', `# https://${GITHUB_TOKEN}@github.com/org/x\n`, /GitHub token/],
    ['the fleet page', `fleet/${FLEET_REPORT_FILE}`, `\n    token: ${['eyJhbGciOiJSUzI1NiJ9', 'eyJzdWIiOiJzeXN0ZW0ifQ', 'c2lnbmF0dXJlLWJ5dGVz'].join('.')}\n`, /JSON Web Token/],
    ['a client file (tutorials/)', 'lab-b/tutorials/*.yaml', `\nclient-key-data: ${'QUJDREVGR0g'.repeat(4)}\n`, /kubeconfig user credential/],
    ['a comment of a manifest file', 'lab-a/kueue/*.yaml', `# Authorization: Bearer ${BEARER}\n`, /bearer token/],
  ])('%s', (_, pattern, planted, what) => {
    // for a pattern, the first YAML file under the folder that is no kustomization
    const rel = !pattern.endsWith('*.yaml') ? pattern : [...readTreeFiles(path.join(tree, path.dirname(pattern))).keys()]
      .map((f) => `${path.dirname(pattern)}/${f}`).find((f) => f.endsWith('.yaml') && !path.basename(f).startsWith('kustomization'))!;
    const file = path.join(tree, rel);
    const before = readFileSync(file, 'utf8');
    try {
      appendFileSync(file, planted);
      const line = before.split('\n').length + (planted.startsWith('\n') ? 1 : 0);
      const found = findings();
      // the file relative to its cluster's folder, and the line
      expect(found.map((f) => f.message)).toEqual([expect.stringMatching(new RegExp(`^${rel.split('/').slice(1).join('/').replace(/\./g, '\\.')}:${line} holds `))]);
      expect(found[0].message).toMatch(what);
      expect(found[0].severity).toBe('error');
      noSecret(found[0].message);
    } finally {
      writeFileSync(file, before);
    }
  });
});

describe('live commands mask the server\'s user-info and any secret a server echoes', () => {
  it('init writes and prints the server without its password; a refusal names it masked', async () => {
    const server = await serveState(readSnapshot(SNAPSHOT));
    try {
      const withInfo = server.url.replace('http://', `http://admin:${PASSWORD}@`);
      const kubeconfig = path.join(dir, 'userinfo-kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(withInfo));
      const out = path.join(dir, 'live.yaml');
      const r = await runCliInProcess(['init', '--kubeconfig', kubeconfig, '--name', 'lab', '--out', out]);
      expect(r.code, r.stderr).toBe(EXIT.ok);
      const written = readFileSync(out, 'utf8');
      expect(written).toMatch(/^# Written by `gpu-cluster-manifests init` from http:\/\/\*\*\*@127\.0\.0\.1:\d+\.$/m);
      noSecret(written + r.stdout + r.stderr);
    } finally {
      await server.close();
    }
    // the same address refused: its line names it masked
    const refused = path.join(dir, 'refused-kubeconfig');
    writeFileSync(refused, kubeconfigFor(`http://admin:${PASSWORD}@127.0.0.1:9`));
    const r = await runCliInProcess(['preflight', '--config', REFERENCE_FILE, '--kubeconfig', refused, '--timeout', '10']);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/^error: http:\/\/\*\*\*@127\.0\.0\.1:9: connection refused/);
    noSecret(r.stderr + r.stdout);
  }, 120_000);

  it('a server\'s 401 that echoes the bearer token is printed masked, by init, preflight and verify', async () => {
    const server = createServer((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({
        kind: 'Status',
        status: 'Failure',
        reason: 'Unauthorized',
        code: 401,
        message: `invalid bearer token ${String(req.headers.authorization)}; token=${String(req.headers.authorization).replace('Bearer ', '')}`,
      }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const kubeconfig = path.join(dir, 'echo-kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, BEARER));
      for (const args of [
        ['init', '--kubeconfig', kubeconfig, '--out', '-'],
        ['preflight', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig],
        ['verify', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig],
      ]) {
        const r = await runCliInProcess([...args, '--timeout', '30']);
        expect(r.code, args[0]).toBe(EXIT.badInput);
        expect(r.stderr, args[0]).toMatch(/HTTP 401/);
        expect(r.stderr, args[0]).toContain('***');
        noSecret(r.stderr + r.stdout);
      }
    } finally {
      server.close();
    }
  }, 120_000);
});
