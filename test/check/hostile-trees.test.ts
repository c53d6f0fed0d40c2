import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CACHE_ENV } from '../../src/cache/cache-dir';
import { checkClusterRendered, ClusterView, Finding, readClusterFolder, UPSTREAM_RULES } from '../../src/check';
import { main } from '../../src/cli';
import { Io } from '../../src/commands/io';
import { EngineBudget, Engines, resolveEngines } from '../../src/engines';
import { DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { synth } from '../../src/synth/pipeline';
import { renderApplications, RenderContext, RenderedSource } from '../../src/upstream';
import { remoteResourcesOf } from '../../src/upstream/remote-bases';
import { configMaps, ENGINE_CACHE, fakeEngines, processGone } from '../engines/fake-engines';
import { aliasBomb, HAS_UPSTREAM, modelOf, REFERENCE_FILE } from '../helpers';

/*
 * check against hostile engines and hostile trees: every failure of an engine is an error of check (a render
 * that serves a comparison included), and nothing a tree's Application says becomes a flag, a path out of its
 * folder, or a read that never ends. In-process (the rules and the renders are the point); the engines are
 * fake ones (shell scripts) or the real ones from the npm package.
 */

const work = mkdtempSync(path.join(tmpdir(), 'hostile-trees-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let tree: string;
let view: ClusterView;

beforeAll(() => {
  const out = path.join(work, 'out');
  synth({ configs: [REFERENCE_FILE], clustersDir: path.dirname(REFERENCE_FILE), out, schemas: false });
  const model = modelOf();
  tree = path.join(out, model.name);
  view = { ...readClusterFolder(tree), model };
});

/**
 * The tree with one Application in its gitops folder: the engines render that one (each other Application of the
 * reference tree would cost a real helm or kustomize run the test is not about).
 */
function onlyApplication(v: ClusterView, name: string): ClusterView {
  const folders = v.folders.map((f) => (f.folder === 'gitops' ? { ...f, objects: f.objects.filter((o) => o.kind !== 'Application' || o.metadata.name === name) } : f));
  if (!folders.some((f) => f.objects.some((o) => o.kind === 'Application' && o.metadata.name === name))) throw new Error(`no Application ${name} in the tree`);
  return { ...v, folders };
}

const errorsOf = (findings: readonly Finding[]) => findings.filter((f) => f.severity === 'error').map((f) => `[${f.rule}] ${f.message}`);

/** check's rules over the reference tree, its Applications rendered by the engines of `bin` (the packaged ones where it has none). */
async function checkWith(bin: string, v: ClusterView = view, budget?: EngineBudget): Promise<string[]> {
  const engines = { searchPath: bin, cacheDir: ENGINE_CACHE };
  const { findings } = await checkClusterRendered(v, { upstream: DEFAULT_UPSTREAM, engines, cacheDir: false, rules: UPSTREAM_RULES, budget });
  return errorsOf(findings);
}

describe.skipIf(!HAS_UPSTREAM)('an engine failure is always an error of check', () => {
  const cases: [string, string, RegExp][] = [
    ['fails', 'echo "Error: boom" >&2; exit 3', /fails: exit 3: Error: boom$/],
    ['prints invalid YAML', 'printf "kind: [unclosed\\n"', /fails: its output is not usable YAML: invalid YAML/],
    ['prints nothing', 'exit 0', /fails: helm template rendered no object, though the chart has \d+ template file\(s\): an empty render installs nothing$/],
    ['prints something else', configMaps(1), /with its default values renders no (ClusterPolicy|image)$/],
    ['dies of SIGSEGV', 'kill -SEGV $$', /fails: killed by SIGSEGV$/],
    ['floods its output', 'exec yes', /fails: output over 32 MiB; stopped/],
    ['prints an alias bomb', `cat <<'EOF'\n${aliasBomb()}EOF`, /its output is not usable YAML: YAML aliases expand to more than 1000 copies/],
  ];
  for (const [what, body, says] of cases) {
    it(`a helm that ${what}: the images cannot be compared with the pinned charts' own, one error per policy`, async () => {
      // the policies' folders alone: no Application, only the pinned charts' default renders run
      const policies = { ...view, folders: view.folders.filter((f) => ['gpu-operator', 'network-operator'].includes(f.folder)) };
      const errors = await checkWith(fakeEngines(work, `helm-${what.replace(/\W+/g, '-')}`, { helm: body }), policies);
      expect(errors).toEqual([
        expect.stringMatching(/^\[image-matches-upstream\] ClusterPolicy cluster-policy: cannot be compared with its release's images: helm template of the gpu-operator v26\.7\.0 chart/),
        expect.stringMatching(/^\[image-matches-upstream\] NicClusterPolicy nic-cluster-policy: cannot be compared with its release's images: helm template of the network-operator 26\.4\.1 chart/),
      ]);
      for (const e of errors) {
        expect(e).toMatch(says);
        expect(e).not.toMatch(/\n/);
      }
    });
  }

  it('a kubectl kustomize that prints nothing: every folder is an error (its files hold objects)', async () => {
    const errors = await checkWith(fakeEngines(work, 'kustomize-nothing', { kubectl: 'exit 0' }));
    const folders = view.folders.filter((f) => f.objects.length > 0 && f.folder !== 'gitops').length;
    expect(errors.filter((e) => /application-renders.*folder .*: kustomize build rendered no object, though the folder's files hold \d+/.test(e)).length).toBeGreaterThanOrEqual(folders);
  });

  it('a kustomization.yaml that no longer lists one of its folder\'s files: the build lacks that file\'s objects', async () => {
    const copy = path.join(work, 'unlisted', view.name);
    cpSync(tree, copy, { recursive: true });
    const k = path.join(copy, 'tenants', 'kustomization.yaml');
    writeFileSync(k, readFileSync(k, 'utf8').replace(/^ {2}- namespace\.inference\.yaml\n/m, ''));
    const errors = await checkWith(path.join(work, 'no-engines'), onlyApplication({ ...readClusterFolder(copy), model: view.model }, 'instant-cluster-tenants'));
    expect(errors).toEqual([expect.stringMatching(/^\[application-renders\] Application argocd\/instant-cluster-tenants: folder .*tenants does not render: the build lacks what namespace\.inference\.yaml holds \(Namespace inference\): kustomization\.yaml does not list every file/)]);
  });

  it('an Application path that leads out of the tree is refused, not built', async () => {
    const gitops = view.folders.find((f) => f.folder === 'gitops')!;
    const app = structuredClone(gitops.objects.find((o) => o.kind === 'Application' && o.metadata.name === 'instant-cluster-storage')!);
    (app.spec as { source: { path: string } }).source.path = `${view.model!.description.gitops.path}/../../../../../etc`;
    const objects = [...gitops.objects.filter((o) => o.metadata.name !== app.metadata.name), app];
    const hostile = { ...view, folders: view.folders.map((f) => (f === gitops ? { ...f, objects } : f)) };
    const errors = await checkWith(path.join(work, 'no-engines'), onlyApplication(hostile, 'instant-cluster-storage'));
    expect(errors.some((e) => /instant-cluster-storage: folder .* does not render: path ".*\.\.\/etc" is not a relative path inside its folder/.test(e))).toBe(true);
  });
});

/** A tiny chart `<root>/<folder>` (name, version), one ConfigMap template; returns its folder. */
function tinyChart(root: string, folder: string, name = 'tiny', version = '1.0.0', extra: Record<string, string> = {}): string {
  const dir = path.join(root, folder);
  mkdirSync(path.join(dir, 'templates'), { recursive: true });
  writeFileSync(path.join(dir, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: ${version}\n`);
  writeFileSync(path.join(dir, 'values.yaml'), 'greeting: hello\n');
  writeFileSync(path.join(dir, 'templates', 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting }}\n');
  for (const [f, content] of Object.entries(extra)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), content);
  }
  return dir;
}

function application(name: string, source: Record<string, unknown>): Manifest {
  return { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: 'argocd' }, spec: { destination: { namespace: 'apps' }, source } };
}

describe('nothing from a tree becomes a flag or a path', () => {
  let engines: Engines;
  const upstream = path.join(work, 'upstream');
  const escape = path.join(work, 'escaped');
  const overlay = path.join(upstream, 'repo-v1.0.0', 'overlay');
  beforeAll(async () => {
    engines = await resolveEngines({ searchPath: path.join(work, 'no-engines'), cacheDir: ENGINE_CACHE });
    // every chart and overlay before the first render: the upstream folder is scanned once per process
    tinyChart(upstream, 'tiny-1.0.0');
    tinyChart(upstream, 'evil', 'evil', `1.0.0/../../../../${path.basename(escape)}`);
    tinyChart(upstream, 'files-1.0.0', 'files', '1.0.0', { 'values-prod.yaml': 'greeting: prod\n' });
    spawnSync('mkfifo', [path.join(tinyChart(upstream, 'fifo-1.0.0', 'fifo'), 'fifo.yaml')]);
    symlinkSync('/dev/zero', path.join(tinyChart(upstream, 'zero-1.0.0', 'zero'), 'zero.yaml'));
    symlinkSync(path.join(work, 'out'), path.join(tinyChart(upstream, 'outside-1.0.0', 'outside'), 'outside'));
    const dup = tinyChart(upstream, 'dup-1.0.0', 'dup');
    writeFileSync(path.join(dup, 'Chart.yaml'), 'apiVersion: v2\nname: dup\nversion: 1.0.0\nversion: 1.0.0\n');
    const self = tinyChart(upstream, 'self-1.0.0', 'self');
    mkdirSync(path.join(self, 'charts'));
    symlinkSync('..', path.join(self, 'charts', 'self'));
    const missing = tinyChart(upstream, 'missing-1.0.0', 'missing');
    writeFileSync(path.join(missing, 'Chart.yaml'), 'apiVersion: v2\nname: missing\nversion: 1.0.0\ndependencies:\n  - name: redis\n    version: 1.0.0\n');
    const own = tinyChart(upstream, 'own-1.0.0', 'own');
    writeFileSync(path.join(own, 'Chart.yaml'), 'apiVersion: v2\nname: own\nversion: 1.0.0\ndependencies:\n  - name: own\n    version: 1.0.0\n');
    const off = tinyChart(upstream, 'off-1.0.0', 'off');
    writeFileSync(path.join(off, 'templates', 'cm.yaml'), '{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n{{- end }}\n');
    const many = tinyChart(upstream, 'many-1.0.0', 'many');
    writeFileSync(path.join(many, 'templates', 'cm.yaml'), '{{- range until 30000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ . }}\n{{- end }}\n');
    mkdirSync(overlay, { recursive: true });
    writeFileSync(path.join(overlay, 'kustomization.yaml'), stringify({ resources: ['cm.yaml'] }));
    writeFileSync(path.join(overlay, 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n');
    writeFileSync(path.join(upstream, 'secret.txt'), 'root:$6$SECRET-HASH:19000:0:99999:7:::\n');
    const linked = path.join(upstream, 'linked-v1.0.0', 'overlay');
    cpSync(overlay, linked, { recursive: true });
    const fifo = path.join(upstream, 'fifo-v1.0.0', 'overlay');
    cpSync(overlay, fifo, { recursive: true });
    spawnSync('mkfifo', [path.join(fifo, 'patch.yaml')]);
    symlinkSync(path.join(upstream, 'secret.txt'), path.join(linked, 'patch.yaml'));
  });
  const render = async (source: Record<string, unknown>, ctx: Partial<RenderContext> = {}): Promise<RenderedSource> => {
    const [r] = await renderApplications([application('app', source)], { upstream, engines, cacheDir: path.join(work, 'cache'), ...ctx });
    return r;
  };

  it('the tiny chart renders (the cases below differ from it in one field)', async () => {
    const r = await render({ chart: 'tiny', targetRevision: '1.0.0' });
    expect(r.problem).toBeUndefined();
    expect(r.objects.map((o) => o.metadata.name)).toEqual(['app']);
  });

  it('a release name that is a flag (--output-dir=...) is refused before helm runs; helm writes nothing', async () => {
    const target = path.join(work, 'written-by-helm');
    const r = await render({ chart: 'tiny', targetRevision: '1.0.0', helm: { releaseName: `--output-dir=${target}` } });
    expect(r.problem).toEqual({ kind: 'failed', message: expect.stringMatching(/^helm\.releaseName "--output-dir=.*" is not a Helm release name/) });
    expect(existsSync(target)).toBe(false);
  });

  it('namespaces, Kubernetes and API versions and value names are checked against their syntax', async () => {
    expect((await render({ chart: 'tiny', targetRevision: '1.0.0', helm: { namespace: '--kubeconfig=/x' } })).problem?.message).toMatch(/^helm\.namespace "--kubeconfig=\/x" is not a namespace name/);
    expect((await render({ chart: 'tiny', targetRevision: '1.0.0', helm: { kubeVersion: '--debug' } })).problem?.message).toMatch(/^helm\.kubeVersion "--debug" is not a Kubernetes version/);
    expect((await render({ chart: 'tiny', targetRevision: '1.0.0', helm: { apiVersions: ['--post-renderer=/bin/sh'] } })).problem?.message).toMatch(/is not an API version/);
    expect((await render({ chart: 'tiny', targetRevision: '1.0.0', helm: { parameters: [{ name: '--post-renderer', value: 'x' }] } })).problem?.message).toMatch(/helm\.parameters name "--post-renderer" is not a value path/);
    // a value is only ever a value: `--set=<name>=<value>`
    const set = await render({ chart: 'tiny', targetRevision: '1.0.0', helm: { parameters: [{ name: 'greeting', value: '--output-dir=/tmp/x' }] } });
    expect(set.objects[0].data).toEqual({ greeting: '--output-dir=/tmp/x' });
  });

  it('a chart version that is a path (1.0.0/../../..) is refused: nothing is written outside the cache', async () => {
    const r = await render({ chart: 'evil', targetRevision: `1.0.0/../../../../${path.basename(escape)}` });
    expect(r.problem?.message).toMatch(/^targetRevision "1\.0\.0\/\.\.\/.*" is not a chart version \(SemVer/);
    expect(existsSync(escape)).toBe(false);
    expect((await render({ chart: '../tiny', targetRevision: '1.0.0' })).problem?.message).toMatch(/^chart "\.\.\/tiny" is not a chart name/);
  });

  it('values files resolve inside the chart and are read by the bounded reader: /dev/zero, a FIFO, a link out are refused at once', async () => {
    const files = async (f: string, chart = 'files') => (await render({ chart, targetRevision: '1.0.0', helm: { valueFiles: [f] } })).problem?.message;
    expect(await files('values-prod.yaml')).toBeUndefined();
    expect((await render({ chart: 'files', targetRevision: '1.0.0', helm: { valueFiles: ['values-prod.yaml'] } })).objects[0].data).toEqual({ greeting: 'prod' });
    expect(await files('../../../../../../dev/zero')).toMatch(/^helm\.valueFiles entry "\.\.\/.*dev\/zero" is not a relative path inside its folder$/);
    expect(await files('/dev/zero')).toMatch(/is not a relative path inside its folder/);
    expect(await files('nowhere.yaml')).toBe('helm.valueFiles entry "nowhere.yaml": no such file in its folder');
    // read (and refused) before helm runs, which would refuse the chart for it as well
    if (existsSync(path.join(upstream, 'fifo-1.0.0', 'fifo.yaml'))) expect(await files('fifo.yaml', 'fifo')).toMatch(/^helm\.valueFiles entry "fifo\.yaml": not a regular file \(a pipe\)/);
    // a chart holding a link out of itself is refused whole: helm would follow it
    expect(await files('zero.yaml', 'zero')).toMatch(/^zero\.yaml in .*zero-1\.0\.0 is a symbolic link out of the folder \(to \/dev\/zero\)$/);
    expect(await files('values.yaml', 'outside')).toMatch(/^outside in .* is a symbolic link out of the folder/);
  });

  it('a kustomize patch path out of the overlay (../../../../etc/shadow) is refused, and nothing of the file is printed', async () => {
    const source = (patchPath: string) => ({ repoURL: 'https://github.com/example/repo.git', path: 'overlay', targetRevision: 'v1.0.0', kustomize: { patches: [{ path: patchPath, target: { kind: 'ConfigMap' } }] } });
    for (const p of ['../../secret.txt', '../../../../../../../../etc/shadow', '../../../../../../../../dev/zero']) {
      const r = await render(source(p));
      expect(r.problem?.message).toMatch(/^kustomize\.patches path ".*" is not a relative path inside its folder$/);
      expect(JSON.stringify(r)).not.toContain('SECRET-HASH');
    }
    // a FIFO in the overlay is refused before a byte is read (it would wait for a writer for ever)
    const fifo = { ...source('patch.yaml'), repoURL: 'https://github.com/example/fifo.git' };
    if (existsSync(path.join(upstream, 'fifo-v1.0.0', 'overlay', 'patch.yaml'))) {
      expect((await render(fifo)).problem?.message).toMatch(/^kustomize\.patches path "patch\.yaml": not a regular file \(a pipe\)/);
    }
    // an overlay whose folder holds a link to it: the whole release folder is refused (kustomize would follow it)
    const linked = { ...source('patch.yaml'), repoURL: 'https://github.com/example/linked.git' };
    expect((await render(linked)).problem?.message).toMatch(/patch\.yaml in .* is a symbolic link out of the folder/);
    expect(JSON.stringify(await render(linked))).not.toContain('SECRET-HASH');
    expect((await render({ ...source('x'), path: '../../..' })).problem?.message).toMatch(/^path "\.\.\/\.\.\/\.\." is not a relative path inside its folder$/);
    expect((await render({ ...source('x'), targetRevision: 'v1/../..' })).problem?.message).toMatch(/^targetRevision "v1\/\.\.\/\.\." is not a repository name or tag/);
  });

  it('a Chart.yaml with a duplicate key is one line naming the file', async () => {
    // found by its registered folder's Chart.yaml only when it is readable: a copy that is unreadable is no candidate
    expect((await render({ chart: 'dup', targetRevision: '1.0.0' })).problem?.kind).toBe('unreleased');
    const gpu = path.join(work, 'gpu-upstream');
    cpSync(path.join(DEFAULT_UPSTREAM, 'gpu-operator-v26.7.0'), path.join(gpu, 'gpu-operator-v26.7.0'), { recursive: true });
    const chartYaml = path.join(gpu, 'gpu-operator-v26.7.0', 'deployments', 'gpu-operator', 'Chart.yaml');
    if (!existsSync(chartYaml)) return;
    writeFileSync(chartYaml, `${readFileSync(chartYaml, 'utf8')}name: gpu-operator\n`);
    const r = await render({ chart: 'gpu-operator', targetRevision: 'v26.7.0' }, { upstream: gpu, cacheDir: path.join(work, 'gpu-cache') });
    expect(r.problem?.message).toMatch(/Chart\.yaml: .*duplicate key "name"/);
    expect(r.problem?.message).not.toMatch(/\n|cannot be stringified/);
  });

  it('a chart that includes itself, or lists a dependency missing from charts/, is refused', async () => {
    expect((await render({ chart: 'self', targetRevision: '1.0.0' })).problem?.message).toMatch(/charts\/self .* is a symbolic link to a folder it lies in: the tree includes itself/);
    expect((await render({ chart: 'missing', targetRevision: '1.0.0' })).problem?.message).toMatch(/Chart\.yaml: dependency redis is not in charts\/ \(helm would refuse the chart\)/);
    expect((await render({ chart: 'own', targetRevision: '1.0.0' })).problem?.message).toMatch(/the chart lists itself as a dependency/);
  });

  it('a chart whose templates render nothing is an error, not an empty install', async () => {
    expect((await render({ chart: 'off', targetRevision: '1.0.0' })).problem?.message).toBe('helm template rendered no object, though the chart has 1 template file(s): an empty render installs nothing');
  });

  it('a chart that renders many objects is stopped at the document bound', async () => {
    expect((await render({ chart: 'many', targetRevision: '1.0.0' })).problem?.message).toBe('output over 10000 YAML documents; stopped (GPU_CLUSTER_MANIFESTS_MAX_ENGINE_DOCUMENTS=<documents> raises it)');
  });

  it('--upstream naming a regular file, /dev/null or a FIFO is bad input (exit 2)', async () => {
    const file = path.join(work, 'upstream-file');
    writeFileSync(file, 'x');
    const fifo = path.join(work, 'upstream-fifo');
    spawnSync('mkfifo', [fifo]);
    const lines: string[] = [];
    const io: Io = { out: () => undefined, err: (l: string) => lines.push(l) };
    for (const u of [file, '/dev/null', ...(existsSync(fifo) ? [fifo] : [])]) {
      lines.length = 0;
      expect(await main(['check', tree, '--upstream', u, '--quiet'], io), u).toBe(2);
      expect(lines.join('\n')).toMatch(new RegExp(`--upstream ${u.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not a folder`));
    }
  });
});

describe.skipIf(!HAS_UPSTREAM)('one bound for all engine work of a command', () => {
  /** A fake kubectl that logs each run to `log` before doing `body`. */
  const logging = (name: string, log: string, body: string) => fakeEngines(work, name, { kubectl: `echo run >> ${log}\n${body}` });
  const runs = (log: string) => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').length : 0);

  it('a combined folder build stopped by its bound is not retried per folder: one run, every folder an error', async () => {
    const log = path.join(work, 'hang.log');
    process.env.GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT = '0.5';
    try {
      const errors = await checkWith(logging('kubectl-hang', log, 'exec sleep 600'));
      // the combined build, and the builds of the folders not part of it: each on a remote base (argocd/), and the
      // gitops folder, built with its root's kustomize options (the commit it pins to)
      const remoteBased = view.folders.filter((f) => remoteResourcesOf(path.join(tree, f.folder)).length > 0).length;
      expect(remoteBased).toBe(1);
      expect(view.folders.some((f) => f.folder === 'gitops')).toBe(true);
      expect(runs(log)).toBe(1 + remoteBased + 1);
      expect(errors.filter((e) => /folder .* does not render: kubectl kustomize \(every folder\): no answer within 0\.5 s/.test(e)).length).toBeGreaterThan(5);
    } finally {
      delete process.env.GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT;
    }
  });

  it('the per-folder builds after a combined build without origin annotations share the command\'s budget', async () => {
    const log = path.join(work, 'no-origin.log');
    const bin = logging('kubectl-no-origin', log, `sleep 0.3; ${configMaps(1)}`);
    const budget = new EngineBudget(1500);
    const errors = await checkWith(bin, view, budget);
    // the combined build, then per-folder builds until the budget is spent; the rest are refused at once
    expect(runs(log)).toBeLessThan(10);
    expect(errors.some((e) => /passed its bound of 1\.5 s/.test(e))).toBe(true);
    expect(errors.filter((e) => /\[application-renders\]/.test(e)).length).toBeGreaterThan(5);
  });

  it('check past the bound: exit 1 with one line naming it, every engine it started killed', async () => {
    const pids = path.join(work, 'past-budget.pids');
    const hang = `echo $$ >> ${pids}; exec sleep 600`;
    const bin = fakeEngines(work, 'all-hanging', { helm: hang, kubectl: hang });
    const saved = { ...process.env };
    Object.assign(process.env, { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, GPU_CLUSTER_MANIFESTS_ENGINE_BUDGET: '0.5', [CACHE_ENV]: 'off' });
    const lines: string[] = [];
    try {
      const code = await main(['check', tree, '--config', REFERENCE_FILE, '--upstream', DEFAULT_UPSTREAM], { out: (l) => lines.push(l), err: (l) => lines.push(l) });
      expect([code, lines]).toEqual([1, ['error: check: the engines\' work of this command passed its bound of 0.5 s; stopped (GPU_CLUSTER_MANIFESTS_ENGINE_BUDGET=<seconds> raises it)']]);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
    const started = readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    expect(started.length).toBeGreaterThan(0);
    for (let i = 0; i < 50 && !started.every(processGone); i++) await new Promise((r) => setTimeout(r, 100));
    expect(started.filter((p) => !processGone(p))).toEqual([]);
  });
});
