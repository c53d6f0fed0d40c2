import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli';
import { descriptionJsonSchemaText, fleetJsonSchemaText } from '../../src/model/json-schema';
import { BIN, fixtureProject, HAS_SCHEMAS, readTreeFiles, REFERENCE_FILE, renderedFixtures, ROOT } from '../helpers';

// These run the compiled CLI (lib/), as users do: `npm test` compiles first.
const env = { ...process.env, CDK8S_CHECK_UPGRADE: 'false' };

function cli(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env, encoding: 'utf8' });
}


/**
 * The modules a command line loads (NODE_DEBUG=module), relative to the root: through the bundle (BIN, as users run it),
 * where only what the bundle leaves out shows (the typed imports a render uses, the Kubernetes client of the live
 * commands), or through the modules of lib/src (`routeCli`), where every module shows.
 */
function loads(args: string[], route: 'bundle' | 'modules') {
  const run = route === 'bundle' ? [BIN, ...args] : ['-e', 'Promise.resolve(require(process.argv[1]).routeCli(process.argv.slice(2))).then((c) => { process.exitCode = c; })', BIN, ...args];
  const r = spawnSync(process.execPath, run, { cwd: ROOT, env: { ...env, NODE_DEBUG: 'module' }, encoding: 'utf8' });
  const loaded = [...r.stderr.matchAll(/^MODULE \d+: load "([^"]+)"/gm)].map((m) => path.relative(ROOT, m[1]));
  const builtins = [...new Set([...r.stderr.matchAll(/^MODULE \d+: load built-in module (?:node:)?(\S+)/gm)].map((m) => m[1]))];
  return { ...r, stderr: r.stderr.split('\n').filter((l) => !l.startsWith('MODULE')).join('\n'), loaded, builtins };
}

/** Modules of lib/src the entry point loads before it hands the command to the bundle (bin.js, its code cache, and the scratch folders with their fault points). */
const ENTRY_MODULES = /^lib\/src\/(bin|errors|paths|files|fault|processes|cache\/(module-cache|cache-dir|cache-write))\.js$/;

describe('the compiled CLI', () => {
  it('explains itself with --help, without loading the render stack', () => {
    for (const route of ['bundle', 'modules'] as const) {
      const r = loads(['--help'], route);
      expect(r.status, r.stderr).toBe(0);
      for (const word of ['synth', 'validate', '--config', '--out', '--schemas', 'Exit codes', 'Engines (check renders']) expect(r.stdout).toContain(word);
      if (route === 'modules') expect(r.loaded).toContain(path.join('lib', 'src', 'commands', 'help.js'));
      else expect(r.loaded.filter((f) => f.startsWith('lib/') && !ENTRY_MODULES.test(f))).toEqual([]);
      expect(r.loaded.filter((f) => /(^|\/)(cdk8s|cdk8s-plus-28|constructs|zod|yaml|ajv)\/|lib\/imports\/|lib\/src\/(cli|synth|render|check)\b/.test(f)), route).toEqual([]);
    }
  });

  it.skipIf(!HAS_SCHEMAS)('validates rendered folders without loading the render stack (cdk8s, the typed imports, zod, CEL)', () => {
    for (const route of ['bundle', 'modules'] as const) {
      const r = loads(['validate', renderedFixtures()], route);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^ok: \d+ objects, 0 errors/m);
      if (route === 'modules') expect(r.loaded).toContain(path.join('lib', 'src', 'commands', 'validate.js'));
      else expect(r.loaded.filter((f) => f.startsWith('lib/') && !ENTRY_MODULES.test(f))).toEqual([]);
      expect(r.loaded.filter((f) => /(^|\/)(cdk8s|cdk8s-plus-28|constructs|zod|@marcbachmann)\/|lib\/imports\/|lib\/src\/(cli|synth|check|components|model\/description)\b/.test(f)), route).toEqual([]);
    }
  });

  it('writes the description\'s JSON Schema without loading the render stack (the description schema alone)', () => {
    for (const route of ['bundle', 'modules'] as const) {
      const r = loads(['schema', '--out', '-'], route);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe(descriptionJsonSchemaText());
      if (route === 'modules') expect(r.loaded).toContain(path.join('lib', 'src', 'commands', 'schema.js'));
      expect(r.loaded.filter((f) => /(^|\/)(cdk8s|cdk8s-plus-28|constructs|ajv|@marcbachmann)\/|lib\/imports\/|lib\/src\/(cli|synth|check|components|render|validate\/validator)\b/.test(f)), route).toEqual([]);
    }
  });

  it.skipIf(!HAS_SCHEMAS)('renders through the bundle: the typed imports a cluster renders are loaded, those it does not are not', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'cli-'));
    const r = loads(['synth', '--config', REFERENCE_FILE, '--out', out], 'bundle');
    expect(r.status, r.stderr).toBe(0);
    expect(r.loaded.filter((f) => f.startsWith('lib/') && !ENTRY_MODULES.test(f) && !f.startsWith('lib/imports/'))).toEqual([]);
    const imports = r.loaded.filter((f) => f.startsWith('lib/imports/')).map((f) => path.basename(f, '.js'));
    // the reference cluster: Kueue, the GPU Operator and Argo CD's Applications, no fleet (ApplicationSet) and no Dynamo
    expect(imports).toEqual(expect.arrayContaining(['kueue-clusterqueue-kueue.x-k8s.io', 'gpu-operator-nvidia.com', 'argocd-application-argoproj.io']));
    expect(imports.filter((f) => /applicationset|dynamo/.test(f))).toEqual([]);
    // no Training Operator here: its PyTorchJob import is not loaded (the tenant guardrails name its version without it)
    expect(imports.filter((f) => /pytorchjob/.test(f))).toEqual([]);
    // the imports extend the bundle's own cdk8s and constructs: neither is loaded from node_modules
    expect(r.loaded.filter((f) => /(^|\/)node_modules\/(cdk8s|constructs)\//.test(f))).toEqual([]);
    // the other commands' modules load when they run (src/cli.ts, deferred): a render loads no live client
    expect(r.builtins).toContain('fs');
    expect(r.builtins.filter((b) => /^(https?|http2|tls|net)$/.test(b))).toEqual([]);
  });


  it('the bundle writes what the modules write, byte for byte: the schemas and a render of the fixtures', () => {
    // a project of the fixtures: its schema files (the fleet's holds a pattern with a non-ASCII character, as the sources
    // write it), then its render
    const project = fixtureProject('cli-bundle-');
    const inProject = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { cwd: project, env, encoding: 'utf8' });
    const schema = inProject('schema');
    expect(schema.status, schema.stderr).toBe(0);
    expect(readFileSync(path.join(project, 'clusters', 'cluster-description.schema.json'), 'utf8')).toBe(descriptionJsonSchemaText());
    expect(readFileSync(path.join(project, 'clusters', 'fleet.schema.json'), 'utf8')).toBe(fleetJsonSchemaText());
    if (!HAS_SCHEMAS) return;
    const synth = inProject('synth', '--quiet');
    expect(synth.status, synth.stderr).toBe(0);
    expect(readTreeFiles(path.join(project, 'dist'))).toEqual(readTreeFiles(renderedFixtures()));
  });

  it('exits 2 on a bad description, without a stack trace', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cli-'));
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, readFileSync(REFERENCE_FILE, 'utf8').replace('gpusPerNode: 8', 'gpusPerNode: eight'));
    const r = cli('synth', '--config', bad, '--out', path.join(dir, 'out'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('nodes.gpuWorkers.gpusPerNode: expected a positive integer, got "eight"');
    expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
  });

  it('exits 2 and says so when the schema directory is missing', () => {
    const r = cli('validate', renderedFixtures(), '--schemas', '/nonexistent/crds');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/schema directory \/nonexistent\/crds does not exist/);
  });

  it.skipIf(!HAS_SCHEMAS)('renders one description with a summary, and validates the result', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'cli-'));
    const r = cli('synth', '--config', REFERENCE_FILE, '--out', out);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/instant-cluster: \d+ objects in \d+ folders/);
    expect(r.stdout).toMatch(/storage\s+\d+\s+ConfigMap 1, StorageClass 3/);
    expect(r.stdout).toMatch(/wrote \d+ files to .* in \d+\.\d\d s/);
    const v = cli('validate', path.join(out, 'instant-cluster'));
    expect(v.status, v.stderr).toBe(0);
    expect(v.stdout).toMatch(/^ok: \d+ objects, 0 errors/m);
    // the whole output root: each cluster is its own API server, so shared names are no duplicates
    const all = cli('validate', renderedFixtures());
    expect(all.status, all.stderr).toBe(0);
  });

  it.skipIf(!HAS_SCHEMAS)('validate exits 1 on an unknown field', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cli-'));
    writeFileSync(path.join(dir, 'sc.yaml'), 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: x\nprovisioner: p\nvolumeBindingMod: Immediate\n');
    const r = cli('validate', dir, '--format', 'json');
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).issues[0]).toMatchObject({ path: 'volumeBindingMod', message: 'unknown field' });
  });

  // The cdk8s habit in a clusters repository of the fixtures: cdk8s.yaml's app is this checkout's launcher.
  const CDK8S = path.join(ROOT, 'node_modules', 'cdk8s-cli', 'bin', 'cdk8s');
  const cdk8sProject = () => {
    const root = fixtureProject('cdk8s-project-');
    writeFileSync(path.join(root, 'cdk8s.yaml'), `language: typescript\napp: node ${path.join(ROOT, 'projenrc', 'launch.cjs')} --cdk8s-app\noutput: cdk8s.out\n`);
    return root;
  };

  // cdk8s-cli asks registry.npmjs.org for a newer version first; offline the documented flag keeps it quiet.
  const canIsolateNetwork = process.platform === 'linux' && spawnSync('unshare', ['-n', 'true']).status === 0;
  it.skipIf(!HAS_SCHEMAS || !canIsolateNetwork)('cdk8s synth --no-check-upgrade without a network prints no stack trace', () => {
    const root = cdk8sProject();
    const home = mkdtempSync(path.join(tmpdir(), 'home-'));
    const offline = { ...process.env, HOME: home, CDK8S_CHECK_UPGRADE: undefined };
    const r = spawnSync('unshare', ['-n', process.execPath, CDK8S, 'synth', '--no-check-upgrade'], { cwd: root, env: offline, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/\n\s+at |new version|Error:/);
    // without the flag cdk8s-cli's own check fails offline (why the README documents the flag)
    const noisy = spawnSync('unshare', ['-n', process.execPath, CDK8S, 'synth', '--output', 'cdk8s.out-2'], { cwd: root, env: offline, encoding: 'utf8' });
    expect(noisy.stderr).toMatch(/new version undefined of cdk8s-cli/);
  });

  it.skipIf(!HAS_SCHEMAS)('cdk8s synth renders the project as synth does, into its own output folder', () => {
    const root = cdk8sProject();
    const r = spawnSync(process.execPath, [CDK8S, 'synth'], { cwd: root, env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(readTreeFiles(path.join(root, 'cdk8s.out'))).toEqual(readTreeFiles(renderedFixtures()));
  });
});

describe('bad input to every command exits 2 with a one-line reason', () => {
  const run = async (...args: string[]) => {
    let err = '';
    const code = await main(args, { out: () => {}, err: (l) => { err += `${l}\n`; } });
    return { code, err };
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'cli-bad-'));
  writeFileSync(path.join(dir, 'broken.yaml'), 'apiVersion: v1\nkind: [unclosed\n');

  it.each([
    ['validate of invalid YAML names the file', ['validate', path.join(dir, 'broken.yaml')], /broken\.yaml: invalid YAML/],
    ['check of a file instead of a folder', ['check', REFERENCE_FILE], /a file, not a folder \(ENOTDIR\)/],
    ['check of a folder without objects', ['check', mkdtempSync(path.join(tmpdir(), 'empty-'))], /no rendered objects/],
    ['validate of a folder without objects', ['validate', mkdtempSync(path.join(tmpdir(), 'empty-'))], /no Kubernetes objects/],
    ['schema --readme of a missing file', ['schema', '--readme', path.join(dir, 'missing.md')], /--readme .*missing\.md: no such file/],
    ['synth into a path under a file', ['synth', '--config', REFERENCE_FILE, '--out', path.join(REFERENCE_FILE, 'out'), '--no-validate'], /--out .*a file, not a folder \(ENOTDIR\)/],
    ['an unknown --format', ['synth', '--format', 'yaml'], /--format yaml: expected text or json/],
    ['a construct refusing a prop names the description field', ['synth', '--config', (() => {
      const f = path.join(dir, 'big-shm.yaml');
      writeFileSync(f, readFileSync(REFERENCE_FILE, 'utf8').replace(/(\n {4}image: ghcr\.io\/coreweave[^\n]*)/, '$1\n    shmSize: 4Ti'));
      return f;
    })(), '--out', dir, '--no-validate'], /^samples\.ncclTests\.shmSize: .*4Ti/m],
  ])('%s', async (_name, args, says) => {
    const r = await run(...(args as string[]));
    expect(r.code, r.err).toBe(2);
    expect(r.err).toMatch(says as RegExp);
    expect(r.err).not.toMatch(/internal error|\n\s+at /);
  });
});
