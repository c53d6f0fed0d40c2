import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAULT_TRACE_ENV } from '../../src/fault';
import { PROJECT_FILE } from '../../src/project/project-file';
import { fixtureProject, HAS_SCHEMAS, readTreeFiles, REFERENCE_FILE, renderedFixtures, ROOT, runCliInProcess, TRAINING_FILE } from '../helpers';
import { SNAPSHOT } from '../preflight/snapshots';

// The documented npm commands keep the CLI's contract: its exit code (npm passes it through, no
// task runner turns 2 into 1) and its output only (stderr: the CLI's lines and nothing else).
// These run `npm run`, as users and CI do; `npm test` compiles first, so the launcher's
// compile-on-change step has nothing to do here.
const env = { ...process.env, CDK8S_CHECK_UPGRADE: 'false' };
const LAUNCHER = path.join(ROOT, 'projenrc', 'launch.cjs');
const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

const dir = mkdtempSync(path.join(tmpdir(), 'npm-scripts-'));
const broken = path.join(dir, 'broken.yaml');
writeFileSync(broken, readFileSync(REFERENCE_FILE, 'utf8').replace('gpusPerNode: 8', 'gpusPerNode: eight'));
const missing = path.join(dir, 'missing.yaml');
// a kubeconfig of an API server nobody listens on (port 1 of the loopback: refused at once)
const refused = path.join(dir, 'refused.kubeconfig');
writeFileSync(refused, [
  'apiVersion: v1', 'kind: Config', 'current-context: c',
  'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
  'contexts: [{name: c, context: {cluster: c, user: u}}]',
  'users: [{name: u, user: {token: t}}]', '',
].join('\n'));
const notYaml = path.join(dir, 'not-a.kubeconfig');
writeFileSync(notYaml, 'clusters: [\n');

/** The arguments the npm script passes to the CLI before the user's (e.g. `schema --out ... --readme ...`). */
function scriptArgs(name: string): string[] {
  const m = /^node projenrc\/launch\.cjs (.*)$/.exec(scripts[name] ?? '');
  if (!m) throw new Error(`package.json script "${name}" does not run the launcher: ${scripts[name]}`);
  return m[1].split(' ');
}

/** npm's own banner on stdout (`> gpu-cluster-manifests@0.0.0 synth` / `> node ...`), which `npm run -s` drops. */
function withoutNpmBanner(stdout: string): string {
  return stdout.split('\n').filter((l, i, all) => !(l.startsWith('> ') || (l === '' && all[i + 1]?.startsWith('> ')))).join('\n').replace(/^\n+/, '');
}

// Every command, and the live-cluster commands both ways (a snapshot file, a kubeconfig: the
// kubeconfig path answers asynchronously; it is the first case of preflight and init, so npm runs it).
const BAD_INPUT: [string, string, string[], RegExp][] = [
  ['synth', 'a broken description', ['--config', broken, '--out', path.join(dir, 'out')], /nodes\.gpuWorkers\.gpusPerNode: expected a positive integer, got "eight"/],
  ['synth', 'an unknown option', ['--no-such-option'], /no-such-option/],
  ['validate', 'a missing folder', [path.join(dir, 'missing')], /no such file or folder/],
  ['check', 'a file for a folder', [REFERENCE_FILE], /is a file, not a folder/],
  ['diff', 'a broken description', ['--config', broken], /nodes\.gpuWorkers\.gpusPerNode/],
  ['schema', 'an unknown option', ['--no-such-option'], /no-such-option/],
  ['preflight', 'an API server that refuses', ['--config', REFERENCE_FILE, '--kubeconfig', refused, '--timeout', '5'], /127\.0\.0\.1:1/],
  ['preflight', 'an unknown option', ['--no-such-option'], /no-such-option|unknown command/],
  ['preflight', 'a broken description and a snapshot', ['--config', broken, '--snapshot', SNAPSHOT], /nodes\.gpuWorkers\.gpusPerNode/],
  ['preflight', 'a missing snapshot', ['--config', REFERENCE_FILE, '--snapshot', missing], /missing\.yaml/],
  ['preflight', 'a missing kubeconfig', ['--config', REFERENCE_FILE, '--kubeconfig', missing], /missing\.yaml/],
  ['preflight', 'a kubeconfig that is not YAML', ['--config', REFERENCE_FILE, '--kubeconfig', notYaml], /not-a\.kubeconfig/],
  ['init', 'an API server that refuses', ['--kubeconfig', refused, '--timeout', '5'], /127\.0\.0\.1:1/],
  ['init', 'an unknown option', ['--no-such-option'], /no-such-option|unknown command/],
  ['init', 'a missing snapshot', ['--snapshot', missing], /missing\.yaml/],
  ['init', 'a missing kubeconfig', ['--kubeconfig', missing], /missing\.yaml/],
  ['init', 'a kubeconfig that is not YAML', ['--kubeconfig', notYaml], /not-a\.kubeconfig/],
  ['upgrade-plan', 'a broken description', ['--config', broken], /nodes\.gpuWorkers\.gpusPerNode/],
  ['upgrade-plan', 'an unknown component', ['--config', REFERENCE_FILE, '--component', 'nope'], /--component nope/],
];

describe('npm run <command> with bad input', () => {
  it('has a launcher script for every command, and this test covers each', () => {
    for (const [name] of BAD_INPUT) expect(scriptArgs(name)[0]).toBe(name);
    // the CLI's commands (not the launcher's own --build of prepack)
    const commands = Object.entries(scripts).filter(([, s]) => /^node projenrc\/launch\.cjs [a-z]/.test(s)).map(([n]) => n);
    expect(new Set(BAD_INPUT.map(([name]) => name))).toEqual(new Set(commands));
  });

  // npm itself once per script (its first case: the launcher, and the CLI through it, as npm starts them), its
  // output compared with the CLI's own; the other cases of a script run what the script runs, in this process
  // (the CLI as bin.ts runs it, with the script's arguments): exit 2 and the CLI's one line, nothing else (the
  // CLI's bad-input line itself is its own tests'). The process the launcher's cases added was the one npm starts.
  const viaNpm = new Set(BAD_INPUT.filter(([name], i) => BAD_INPUT.findIndex(([n]) => n === name) === i));
  it.each(BAD_INPUT.map((c) => [viaNpm.has(c) ? 'npm run' : 'the CLI of', ...c] as const))('%s %s with %s exits 2 and prints only the CLI\'s message', async (how, name, _what, args, says) => {
    const direct = await runCliInProcess([...scriptArgs(name), ...args]);
    const script = how === 'npm run' ? spawnSync('npm', ['run', name, '--', ...args], { cwd: ROOT, env, encoding: 'utf8' }) : { status: direct.code, ...direct };
    expect(script.status, script.stderr).toBe(2);
    expect(script.stderr).toMatch(says);
    expect(script.stderr).not.toMatch(/npm error|Task .* failed|👾|^\s+at |internal error|TypeError|ERR_/m);
    // the CLI's one line, nothing else
    expect(direct.stderr.trimEnd().split('\n'), direct.stderr).toHaveLength(1);
    expect(direct.stdout).toBe('');
    if (how === 'npm run') {
      // exactly what the CLI itself prints: no "Task failed", no step headers, no "npm error" lines
      expect(direct.code, direct.stderr).toBe(2);
      expect(script.stderr).toBe(direct.stderr);
      expect(withoutNpmBanner(script.stdout)).toBe(direct.stdout);
    }
  });
});

describe('the launcher', () => {
  it('prints nothing and compiles nothing when the sources did not change', () => {
    const r = spawnSync(process.execPath, [LAUNCHER, '--build'], { cwd: ROOT, env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('');
  });

  it('parses each good description once a run: the precheck hands its models to the CLI', () => {
    const training = TRAINING_FILE;
    const loads = (name: string, args: string[]) => {
      const trace = path.join(mkdtempSync(path.join(tmpdir(), 'npm-scripts-loads-')), 'trace');
      // the launcher the npm script runs (npm adds nothing to what is loaded)
      const r = spawnSync(process.execPath, [LAUNCHER, ...scriptArgs(name), ...args], { cwd: ROOT, env: { ...env, [FAULT_TRACE_ENV]: trace }, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return readFileSync(trace, 'utf8').split('\n').filter((l) => l.startsWith('load:'));
    };
    const out = mkdtempSync(path.join(tmpdir(), 'npm-scripts-once-'));
    expect(loads('synth', ['--config', REFERENCE_FILE, '--config', training, '--out', out, '--no-validate', '--quiet'])).toEqual(['load:1', 'load:2']);
    expect(loads('diff', ['--config', REFERENCE_FILE, '--out', out, '--no-validate'])).toEqual(['load:1']);
  });

  it.skipIf(!HAS_SCHEMAS)('npm run validate passes a validation failure through as exit 1', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'npm-scripts-fail-'));
    writeFileSync(path.join(out, 'sc.yaml'), 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: x\nprovisioner: p\nvolumeBindingMod: Immediate\n');
    const r = spawnSync('npm', ['run', 'validate', '--', out], { cwd: ROOT, env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^error: .*volumeBindingMod: unknown field$/m);
    expect(r.stderr).not.toMatch(/npm error/);
  });
});

// The plain synth (every description of the project into its output folder) is answered by the
// launcher's up-to-date record when nothing it reads changed, and renders only the clusters of the
// descriptions that changed when nothing else did. This test runs the launcher in a clusters
// repository of the fixtures (a temporary folder with its own project file), so neither this
// repository's dist/ nor its examples play a part. The fault trace counts the descriptions loaded.
describe('the launcher\'s up-to-date check of the plain synth', () => {
  const cache = mkdtempSync(path.join(tmpdir(), 'up-to-date-'));
  const recordFile = () => path.join(cache, readdirSync(cache).find((f) => /^synth-up-to-date-[0-9a-f]{16}\.json$/.test(f))!);
  const project = fixtureProject('up-to-date-project-');
  const trace = path.join(dir, 'up-to-date.trace');
  const run = (...args: string[]) => {
    writeFileSync(trace, '');
    const r = spawnSync(process.execPath, [LAUNCHER, 'synth', ...args], { cwd: project, env: { ...env, GPU_CLUSTER_MANIFESTS_CACHE: cache, [FAULT_TRACE_ENV]: trace }, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    return { stdout: r.stdout, loads: readFileSync(trace, 'utf8').split('\n').filter((l) => l.startsWith('load:')).length };
  };
  const synth = () => run();
  const UP_TO_DATE = /dist already up to date \(\d+ files\): no description, source or schema file changed/;
  const dist = path.join(project, 'dist');

  it.skipIf(!HAS_SCHEMAS)('answers from its record only while the inputs and the output folder are what the record says', () => {
    // the first render creates the output folder (the project folder it lists changes, but not in what it holds for the render)
    const first = synth();
    expect(first.stdout).not.toMatch(UP_TO_DATE);
    expect(first.loads).toBe(2);
    expect(readdirSync(dist).sort()).toEqual(['fleet', 'instant-cluster', 'training-cluster']);
    const second = synth();
    expect(second.stdout).toMatch(UP_TO_DATE);
    expect(second.loads).toBe(0);
    // the same per-cluster summary as the render it stands for
    expect(second.stdout.split('\n').slice(0, -2)).toEqual(first.stdout.split('\n').slice(0, -2));
    // what the record holds: the content of what the render read, found by watching it
    const read = Object.keys((JSON.parse(readFileSync(recordFile(), 'utf8')) as { files: Record<string, string> }).files);
    // (the code: the bundled command line, the typed imports and cdk8s it loads from beside it)
    for (const input of [/up-to-date-project-[^/]+\/clusters\/instant-cluster\.yaml$/, /shared\/crds\/kueue\/.*\.yaml$/, /lib\/bundle\/cli\.js$/, /lib\/imports\/kueue-/, /node_modules\/cdk8s\/lib\//, /package-lock\.json$/]) {
      expect(read.some((f) => input.test(f)), String(input)).toBe(true);
    }
    // synth reads no upstream install (the rules that render them are check's), so none of them is in the record
    expect(read.filter((f) => f.includes('upstream-installs'))).toEqual([]);

    // a file of the output edited by hand: everything rendered again, and the file as the render writes it
    const queue = path.join(dist, 'instant-cluster', 'kueue', 'localqueue.default.default.yaml');
    const rendered = readFileSync(queue, 'utf8');
    writeFileSync(queue, `${rendered}# edited\n`);
    const restored = synth();
    expect(restored.stdout).not.toMatch(UP_TO_DATE);
    expect(restored.loads).toBe(2);
    expect(readFileSync(queue, 'utf8')).toBe(rendered);

    // one description changed: only its cluster is rendered (and the fleet folder), the output a full render's
    const training = path.join(project, 'clusters', 'training-cluster.yaml');
    writeFileSync(training, readFileSync(training, 'utf8').replace(/^(\s+gpus: )(\d+)$/m, (_, key: string, n: string) => `${key}${Number(n) - 1}`));
    const incremental = synth();
    expect(incremental.loads).toBe(1);
    expect(incremental.stdout).toMatch(/wrote \d+ files to dist: 2 cluster folders and fleet\/ \(1 replaced, 2 unchanged\)/);
    const full = path.join(mkdtempSync(path.join(tmpdir(), 'up-to-date-full-')), 'dist');
    expect(run('--out', full).loads).toBe(2);
    expect([...readTreeFiles(dist)]).toEqual([...readTreeFiles(full)]);
    expect(synth().stdout).toMatch(UP_TO_DATE);

    // a file the render read besides the descriptions is no longer what it was: everything rendered again
    const saved = JSON.parse(readFileSync(recordFile(), 'utf8')) as { files: Record<string, string | null> };
    const crd = Object.keys(saved.files).find((f) => /shared\/crds\/kueue\/.*\.yaml$/.test(f))!;
    saved.files[crd] = '0'.repeat(64);
    writeFileSync(recordFile(), JSON.stringify(saved));
    const again = synth();
    expect(again.stdout).not.toMatch(UP_TO_DATE);
    expect(again.loads).toBe(2);

    // another project file (an output folder elsewhere) is another run: rendered, not answered
    writeFileSync(path.join(project, PROJECT_FILE), 'clusters: clusters\nout: rendered\n');
    const moved = synth();
    expect(moved.stdout).not.toMatch(/already up to date/);
    expect(readdirSync(path.join(project, 'rendered'))).toContain('instant-cluster');
  });
});

// npm runs every script in the package root; paths the user types are relative to where they typed
// them (npm's INIT_CWD), for every command. Typed in test/fixtures/ (the fixture descriptions are in
// clusters/ there); the project found from there is this repository's, whose defaults nothing here uses.
// npm runs synth there: the launcher moves into the folder the user typed in (the same for every script that
// is the launcher and its command, which the other commands' scripts are); each of the other commands, run in
// this process in that folder, reads the paths typed there.
describe('paths typed in a subfolder of the project', () => {
  const SUB = path.join(ROOT, 'test', 'fixtures');
  const npmIn = (cwd: string, name: string, ...args: string[]) => spawnSync('npm', ['run', '-s', name, '--', ...args], { cwd, env, encoding: 'utf8' });
  const snapshot = path.relative(SUB, SNAPSHOT);
  const description = path.join('clusters', 'instant-cluster.yaml');

  it('synth --config and --out resolve where they were typed', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'npm-scripts-subfolder-'));
    const r = npmIn(SUB, 'synth', '--config', description, '--out', path.relative(SUB, out));
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(path.join(out, 'instant-cluster', 'kueue', 'localqueue.default.default.yaml'), 'utf8')).toContain('kind: LocalQueue');
  });

  it.skipIf(!HAS_SCHEMAS)('validate, check, diff, preflight and init read the paths typed there', async () => {
    for (const name of ['validate', 'check', 'diff', 'preflight', 'init']) expect(scriptArgs(name)).toEqual([name]);
    const inSub = (...argv: string[]) => runCliInProcess(argv, { cwd: SUB });
    const tree = path.relative(SUB, renderedFixtures());
    expect((await inSub('validate', '--quiet', path.join(tree, 'instant-cluster'))).code).toBe(0);
    const check = await inSub('check', '--config', description, path.join(tree, 'instant-cluster'));
    expect(check.code, check.stderr).toBe(0);
    const diff = await inSub('diff', '--config', description, '--out', tree);
    expect(diff.code, diff.stderr).toBe(0);
    const preflight = await inSub('preflight', '--config', description, '--snapshot', snapshot);
    expect([0, 1], preflight.stderr).toContain(preflight.code);
    // printed (--out -): without --out, init writes into the project's descriptions folder
    const init = await inSub('init', '--snapshot', snapshot, '--name', 'lab', '--out', '-');
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain('name: lab');
  });
});
