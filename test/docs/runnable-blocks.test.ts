import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { documentationFiles, fencedBlocks, KNOWN_INFO, readBlocks, sessionScript } from './markdown-blocks';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM, PACKAGE_ROOT as ROOT } from '../../src/paths';

// test/helpers.ts would load the whole render stack for four paths: this test only runs the compiled CLI
const BIN = path.join(ROOT, 'lib', 'src', 'bin.js');
const HAS_SCHEMAS = existsSync(path.join(DEFAULT_SCHEMAS, 'kubernetes'));
const HAS_UPSTREAM = existsSync(DEFAULT_UPSTREAM);

/*
 * The commands of the README and docs/ run as written, so the text cannot drift from the tool: every
 * block marked runnable (markdown-blocks.ts) runs in a shell session against a clusters repository in
 * a temporary folder, README.md first (its quick start makes the repository, from nothing), then each
 * page of docs/ in the repository the README left. What a test cannot reach is stood in for, at the
 * boundary only:
 * - npx gpu-cluster-manifests runs this checkout's compiled CLI (lib/src/bin.js), and "the cluster" is
 *   the pre-installed Instant Cluster snapshot of the preflight fixtures: --kubeconfig (and --context)
 *   become --snapshot of it; `npx --package ./gpu-cluster-manifests-X.tgz` needs that file in the
 *   session's folder, where a stand-in of this package's version lies (so the quick start names the
 *   tarball npm pack makes of this version; test/package/pack.test.ts installs the real one and runs
 *   new from it, which then keeps it in vendor/);
 * - npm install / npm ci link this checkout as the pinned toolkit (the registry is offline;
 *   test/package/pack.test.ts installs the packed package for real);
 * - git pushes to a local bare repository in place of the documented remote (url.insteadOf).
 * Commands that need a live cluster (kubectl, argocd) or a placeholder stay unmarked in the text.
 */

const SNAPSHOT = path.join(ROOT, 'test', 'preflight', 'fixtures', 'instant-cluster.snapshot.yaml');
const REMOTE_URL = 'https://git.example.com/platform/my-clusters.git';
/** The repository the README's quick start makes (`new my-clusters`), where the docs' sessions run. */
const REPO = 'my-clusters';

const NPX = `#!/bin/sh
# npx [--yes] [--legacy-peer-deps] [--package ./FILE.tgz] gpu-cluster-manifests ARGS: this checkout's compiled CLI, the
# fixture snapshot standing for the cluster
while :; do case "$1" in
  --no-install|--yes|-y|--legacy-peer-deps) shift ;;
  --package) [ -f "$2" ] || { echo "npx: --package $2: no such file" >&2; exit 1; }; shift 2 ;;
  *) break ;;
esac; done
case "$1" in gpu-cluster-manifests|gpu-cluster-manifests@*) shift ;; *) echo "npx $1: not available in this test" >&2; exit 127 ;; esac
for a in "$@"; do shift; case "$skip$a" in
  --kubeconfig) set -- "$@" --snapshot "$SNAPSHOT" ;;
  --context) skip=SKIP ;;
  SKIP*) skip= ;;
  *) set -- "$@" "$a" ;;
esac; done
exec node "$BIN" "$@"
`;

const NPM = `#!/bin/sh
# npm install | npm ci in a clusters repository: this checkout stands for the pinned toolkit
case "$*" in install|ci) ;; *) echo "npm $*: not available in this test" >&2; exit 127 ;; esac
node -e 'const p = require("./package.json"); const v = require(process.argv[1]).version;
  if (p.devDependencies["gpu-cluster-manifests"] !== v) { console.error("package.json pins " + p.devDependencies["gpu-cluster-manifests"] + ", the toolkit is " + v); process.exit(1); }' "$TOOLKIT/package.json" || exit 1
mkdir -p node_modules/.bin && ln -sfn "$TOOLKIT" node_modules/gpu-cluster-manifests && ln -sfn ../gpu-cluster-manifests/lib/src/bin.js node_modules/.bin/gpu-cluster-manifests
`;

/** Applies a YAML block to its file as a JSON merge patch, keeping the file's comments and the block's. */
const MERGE = `
const fs = require('node:fs');
const { isMap, isScalar, parseDocument } = require(process.env.YAML_MODULE);
const file = process.argv[2];
const block = fs.readFileSync(0, 'utf8');
if (!fs.existsSync(file)) { fs.writeFileSync(file, block); process.exit(0); }
const doc = parseDocument(fs.readFileSync(file, 'utf8'));
const patch = parseDocument(block);
for (const d of [doc, patch]) if (d.errors.length > 0) { console.error(d.errors[0].message); process.exit(1); }
const merge = (at, node) => {
  if (isMap(node) && isMap(doc.getIn(at, true))) {
    for (const pair of node.items) merge([...at, isScalar(pair.key) ? pair.key.value : pair.key], pair.value);
  } else if (node === null || (isScalar(node) && node.value === null)) doc.deleteIn(at);
  else doc.setIn(at, node);
};
merge([], patch.contents);
fs.writeFileSync(file, doc.toString());
`;

const work = realpathSync(mkdtempSync(path.join(tmpdir(), 'runnable-blocks-')));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function setUp(): Record<string, string> {
  const shims = path.join(work, 'shims');
  mkdirSync(shims);
  for (const [name, text] of Object.entries({ npx: NPX, npm: NPM })) {
    writeFileSync(path.join(shims, name), text);
    chmodSync(path.join(shims, name), 0o755);
  }
  writeFileSync(path.join(work, 'merge.cjs'), MERGE);
  const remote = path.join(work, 'remote.git');
  expect(spawnSync('git', ['init', '--quiet', '--bare', remote]).status).toBe(0);
  const home = path.join(work, 'home');
  mkdirSync(home);
  // the stand-in of the tarball the quick start installs (by the name npm pack gives this version's)
  const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  writeFileSync(path.join(work, `gpu-cluster-manifests-${version}.tgz`), 'stands in for the packed toolkit\n');
  return {
    PATH: `${shims}${path.delimiter}${process.env.PATH}`,
    HOME: home,
    BIN,
    SNAPSHOT,
    TOOLKIT: ROOT,
    YAML_MODULE: path.join(ROOT, 'node_modules', 'yaml'),
    CDK8S_CHECK_UPGRADE: 'false',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: `url.${remote}.insteadOf`,
    GIT_CONFIG_VALUE_0: REMOTE_URL,
    GIT_CONFIG_KEY_1: 'advice.detachedHead',
    GIT_CONFIG_VALUE_1: 'false',
    GIT_AUTHOR_NAME: 'Platform Engineer',
    GIT_AUTHOR_EMAIL: 'platform@example.com',
    GIT_COMMITTER_NAME: 'Platform Engineer',
    GIT_COMMITTER_EMAIL: 'platform@example.com',
  };
}

/** Runs one file's runnable blocks in one shell session in `cwd`; the log of every command it ran. */
function runSession(file: string, cwd: string, env: Record<string, string>): string {
  const log = path.join(work, `${file.replace(/\W/g, '_')}.log`);
  const script = path.join(work, `${file.replace(/\W/g, '_')}.sh`);
  writeFileSync(script, sessionScript(readBlocks(ROOT, file), `node ${JSON.stringify(path.join(work, 'merge.cjs'))}`));
  const r = spawnSync('sh', [script], { cwd, env: { ...env, LOG: log }, encoding: 'utf8', timeout: 280_000 });
  const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
  if (r.status !== 0) throw new Error(`${r.stderr}${r.error ? String(r.error) : ''}\n--- the session's log, last lines ---\n${text.split('\n').slice(-40).join('\n')}`);
  return text;
}

/** What a command of a session printed: the log from the line `$ <command...>` to the next command's. */
function outputOf(log: string, command: string): string {
  const start = log.indexOf(`\n$ ${command}`);
  if (start < 0) throw new Error(`the session ran no "${command.trim()}"`);
  const from = log.indexOf('\n', start + 1) + 1;
  const end = log.indexOf('\n$ ', from);
  return log.slice(from, end < 0 ? undefined : end);
}

describe('the README and docs/', () => {
  const files = documentationFiles(ROOT);

  it('README.md is a page of tasks: at most 300 lines, the quick start and every recipe present', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(300);
    for (const heading of ['## Quick start', '## Recipes', '### Add a tenant', '### Resize a tenant', '### Remove a tenant', '### Adopt a pre-installed cluster',
      '### Run the NCCL and DCGM checks', '### Turn on the tutorials', '### Register a cluster in a fleet', '### Run jobs across clusters with MultiKueue',
      '### Update the toolkit', '### Rehearse a change before you push', '### Roll back a change', '### Upgrade an operator', '## Commands', '## Developing this toolkit']) {
      expect(readme).toContain(`\n${heading}`);
    }
  });

  it('README.md gives this repository exactly two set-up commands: one renders the examples, one runs every test', () => {
    const blocks = readBlocks(ROOT, 'README.md');
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Developing this toolkit'));
    const commands = blocks.filter((b) => b.line > readme.split('\n').length - section.split('\n').length + 1);
    expect(commands.map((b) => b.body.split('\n').map((l) => l.replace(/\s+#.*$/, '')))).toEqual([['npm ci && npm run shared && npm run synth', 'npm test']]);
  });

  it('the example description of docs/description.md is the reference fixture (test/fixtures/clusters/), with the schema line of a clusters repository', () => {
    const [example] = readBlocks(ROOT, 'docs/description.md').filter((b) => b.info === 'yaml file=clusters/instant-cluster.yaml');
    const fixture = readFileSync(path.join(ROOT, 'test', 'fixtures', 'clusters', 'instant-cluster.yaml'), 'utf8').split('\n');
    expect(fixture[0]).toMatch(/^# yaml-language-server: /);
    expect(`${example.body}\n`).toBe(['# yaml-language-server: $schema=./cluster-description.schema.json', ...fixture.slice(4)].join('\n'));
  });

  it('mark their blocks only with the known markers (a misspelt one would silently not run)', () => {
    const unknown = files.flatMap((f) => readBlocks(ROOT, f)).filter((b) => !KNOWN_INFO.test(b.info)).map((b) => `${b.file}:${b.line} ${b.info}`);
    expect(unknown).toEqual([]);
    expect(fencedBlocks('x.md', '```sh runnable\nls\n```\n  ```yaml file=a.yaml\n  a: 1\n  ```\n').map((b) => [b.line, b.info, b.body])).toEqual([[1, 'sh runnable', 'ls'], [4, 'yaml file=a.yaml', 'a: 1']]);
  });

  it('every relative link names a file that exists (and an anchor of a heading there)', () => {
    const broken: string[] = [];
    const anchors = (file: string): Set<string> => new Set([...readFileSync(file, 'utf8').matchAll(/^#+ (.+)$/gm)]
      .map((m) => m[1].toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')));
    for (const f of files) {
      const text = readFileSync(path.join(ROOT, f), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split('#');
        const resolved = file === '' ? path.join(ROOT, f) : path.resolve(path.dirname(path.join(ROOT, f)), file);
        if (!existsSync(resolved)) broken.push(`${f}: ${target}`);
        else if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) broken.push(`${f}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it.runIf(HAS_SCHEMAS && HAS_UPSTREAM)('run as written: the quick start from nothing to a pushed repository, then every recipe, then the runnable blocks of docs/', () => {
    const env = setUp();
    const readme = runSession('README.md', work, env);
    const repo = path.join(work, REPO);
    // what the quick start and the recipes left: a pushed first render, the fleet of two clusters
    expect(spawnSync('git', ['log', '--oneline', 'origin/main'], { cwd: repo, env, encoding: 'utf8' }).stdout).toMatch(/lab: first render/);
    expect(readFileSync(path.join(repo, 'clusters', 'lab.yaml'), 'utf8')).toMatch(/^tenants:\n {2}- name: research\n {4}gpus: 12$/m);
    expect(readme).toMatch(/^- lab: Namespace inference/m);
    expect(readme).toMatch(/^ok: lab against .* 0 blocking finding/m);
    expect(readFileSync(path.join(repo, 'dist', 'fleet', 'applicationset.argocd.fleet.yaml'), 'utf8')).toMatch(/cluster: lab-b/);
    // the first synth writes new folders; init's open TODO(init) lines are listed (the description keeps them)
    expect(outputOf(readme, 'npx gpu-cluster-manifests synth\n')).toMatch(/^wrote \d+ files to dist: 1 cluster folder and fleet\/ \(2 new\) in /m);
    expect(outputOf(readme, 'npx gpu-cluster-manifests synth\n')).toMatch(/^warning: clusters\/lab\.yaml:\d+: TODO\(init\): /m);
    // the first tenant: list insertions read as insertions (the AppProject's whitelist and destinations), not as renames
    const added = outputOf(readme, 'npx gpu-cluster-manifests diff    # + Namespace research');
    expect(added).toMatch(/^ {6}spec\.destinations\[\d+\]: inserted \{"namespace":"research",/m);
    expect(added).not.toMatch(/^ {6}spec\.(destinations|clusterResourceWhitelist)\[\d+\]\.\w+: /m);
    // resizing keeps the tenant's group: only its quotas change, the RoleBinding stays; quantities also in one unit
    const resized = outputOf(readme, 'npx gpu-cluster-manifests diff    # ~ ClusterQueue research');
    // a list item by its name (the resource), a quantity as the manifest writes it
    expect(resized).toMatch(/^ {2}~ ClusterQueue research \(kueue\/clusterqueue\.research\.yaml\)\n( {6}.*\n)* {6}spec\.resourceGroups\[0\]\.flavors\[[\w-]+\]\.resources\[nvidia\.com\/gpu\]\.nominalQuota: 8 -> 12$/m);
    expect(resized).not.toMatch(/RoleBinding/);
    // two in different units are also given in one, unless one is a zero (which needs none)
    const mixed = [...resized.matchAll(/nominalQuota: (\d+)(m?) -> (\d+)(m?)(.*)$/gm)].filter((m) => m[2] !== m[4]);
    expect(mixed.length).toBeGreaterThan(0);
    for (const m of mixed) expect(m[5], m[0]).toMatch(m[1] === '0' || m[3] === '0' ? /^$/ : /^ \([\d.]+ -> [\d.]+\)$/);
    // preflight on the cluster with tenants names the default deny in the pre-installed default namespace
    expect(readme).toMatch(/^warning \[namespace-isolated\] NetworkPolicy default\/default-deny-ingress: /m);
    for (const page of files.slice(1)) {
      if (readBlocks(ROOT, page).some((b) => b.info === 'sh runnable' || b.info.startsWith('yaml file='))) runSession(page, repo, env);
    }
  });
});
