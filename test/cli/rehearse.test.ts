import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { sha256 } from '../../src/cache/digests';
import { nominalQuota } from '../../src/check/kueue';
import { EXIT } from '../../src/cli';
import { HEALTH_DIR, HELD_ON_PURPOSE, WAVES_GO_AHEAD } from '../../src/components/argocd/health-checks';
import { parseQuantity } from '../../src/model/quantity';
import { readSnapshot } from '../../src/preflight/snapshot';
import type { Manifest } from '../../src/render/manifest';
import { loadModels } from '../../src/synth/pipeline';
import { applicationState } from '../../src/twin/applications';
import { buildKey, buildsNeeded, buildTimeLine, CACHE_ENV, embeddedBuildInfo, GO_ENV, type GoBinarySpec, goCommand, KUEUE_CACHE_ENV, KUEUE_MODULE_DIR, MODULE_DIR, PINNED_MODULES, requiredVersion, TWIN_CACHE_ENV, TWIN_MODULE_DIR, twinBinaries } from '../../src/twin/binary';
import { CRD_SOURCE_FILES, crdSourceFileName } from '../../src/twin/chart-crds';
import { rehearsalTimeoutMs } from '../../src/twin/command';
import { describe as describeObject } from '../../src/twin/kube-client';
import { asYamlDescription, atCommit, convergedAt, onTheTwin, rootWentPast, settledAt } from '../../src/twin/rehearse';
import { decided, jobsReport, jobState, queuedSamples, withNominal, WorkloadState, workloadState } from '../../src/twin/sample-jobs';
import { findObject, folderObjects, REFERENCE_FILE, renderOf, ROOT, runMain, TRAINING_FILE } from '../helpers';
import { changedSnapshot, SNAPSHOT } from '../preflight/snapshots';

/*
 * rehearse's arguments, in process and without Go or a twin: what it refuses before anything starts (exit 2, one line
 * each), how it says where the binaries come from, and the prebuilt binaries' checks (their Go build information, read
 * from the file). The rehearsals themselves are test/cluster/rehearse.test.ts.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'rehearse-args-'));
const TYPED_FILE = path.join(ROOT, 'test', 'fixtures', 'descriptions', 'typed-cluster.ts');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const savedGo = process.env[GO_ENV];
afterEach(() => {
  if (savedGo === undefined) delete process.env[GO_ENV];
  else process.env[GO_ENV] = savedGo;
});

/** A file with Go build information as the linker writes it (Go 1.18 and later: the strings inline after the header). */
function goBinaryFile(file: string, modules: Record<string, string>, go = 'go1.26.8'): void {
  const varint = (n: number) => {
    const out: number[] = [];
    for (; n >= 0x80; n = Math.floor(n / 0x80)) out.push((n % 0x80) + 0x80);
    out.push(n);
    return Buffer.from(out);
  };
  const str = (s: string) => Buffer.concat([varint(Buffer.byteLength(s)), Buffer.from(s)]);
  const mod = ['path\tcommand', 'mod\texample.com/main\t(devel)\t', ...Object.entries(modules).map(([m, v]) => `dep\t${m}\t${v}\th1:x=`)].join('\n');
  const header = Buffer.alloc(32);
  header.write('\xff Go buildinf:', 0, 'latin1');
  header[14] = 8;
  header[15] = 2;
  writeFileSync(file, Buffer.concat([Buffer.from('#!/bin/sh\nexit 0\n'), Buffer.alloc(100), header, str(go), str(mod), Buffer.alloc(64)]));
  chmodSync(file, 0o755);
}

/** What go.mod pins for each binary (read from the modules, never retyped). */
/** What each binary of a --binaries folder must be built from: the modules binary.ts names, at the versions the shipped go.mod files pin. */
const pinned = () => {
  const dirs: Record<string, string> = { 'control-plane': MODULE_DIR, 'kueue': KUEUE_MODULE_DIR, 'twin': TWIN_MODULE_DIR };
  const versions = (binary: string, moduleDir: string) => Object.fromEntries(PINNED_MODULES[binary].map((m) => [m, requiredVersion(m, moduleDir)!]));
  return Object.fromEntries(Object.entries(dirs).map(([binary, moduleDir]) => [binary, versions(binary, moduleDir)]));
};

describe('rehearse: arguments', () => {
  it('--help names each binary a --binaries folder holds, with the versions the shipped Go modules pin', async () => {
    const r = await runMain('rehearse', '--help');
    expect(r.code).toBe(EXIT.ok);
    const help = r.out.join('\n').replace(/\s+/g, ' ');
    for (const [binary, modules] of Object.entries(pinned())) {
      expect(help).toContain(`${binary}: `);
      for (const [m, v] of Object.entries(modules)) expect(help, `${binary}: ${m}`).toContain(`${m} ${v}`);
    }
    expect(help).toContain('git-verify-wrapper.sh');
  });

  it.each([
    [['rehearse'], /^error: rehearse: name the description: --config FILE/],
    [['rehearse', '--config', 'nowhere.yaml'], /^error: --config nowhere\.yaml: no such file/],
    [['rehearse', '--config', REFERENCE_FILE, '--timeout', 'soon'], /^error: --timeout soon: expected seconds from 1 to 3600/],
    [['rehearse', '--config', REFERENCE_FILE, '--timeout', '0'], /^error: --timeout 0: expected seconds/],
    [['rehearse', '--config', REFERENCE_FILE, '--verbose', '--quiet'], /^error: rehearse: give --verbose or --quiet, not both/],
    [['rehearse', '--config', REFERENCE_FILE, '--binaries', path.join(dir, 'none')], /^error: --binaries .*none: no such folder/],
    [['rehearse', 'lab.yaml'], /^error: Unexpected argument 'lab\.yaml'\. This command does not take positional arguments; see --help/],
  ])('%j: exit 2, one line', async (args, says) => {
    const r = await runMain(...args);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(says);
    expect(r.out).toEqual([]);
  });

  it('a file that is no description (fleet.yaml, a .txt): exit 2, one line', async () => {
    const folder = path.join(dir, 'not-descriptions');
    mkdirSync(folder, { recursive: true });
    for (const name of ['fleet.yaml', 'lab.txt']) {
      const file = path.join(folder, name);
      writeFileSync(file, 'name: lab\n');
      const r = await runMain('rehearse', '--config', file);
      expect(r.code).toBe(EXIT.badInput);
      expect(r.err).toEqual([expect.stringMatching(new RegExp(`^error: --config .*${name.replace('.', '\\.')}: expected a cluster description \\(a \\.yaml, \\.yml, \\.json or \\.ts file, not fleet\\.yaml\\)`))]);
    }
  });

  it('a TypeScript description is validated as synth validates it (a wrong value: exit 2, naming the file and the field); a valid one goes on to the binaries', async () => {
    const ts = path.join(dir, 'typed-cluster.ts');
    const source = readFileSync(TYPED_FILE, 'utf8');
    writeFileSync(ts, source.replace(/^(\s+)gpusPerNode,$/m, "$1gpusPerNode: 'eight' as unknown as number,"));
    const bad = await runMain('rehearse', '--config', ts);
    expect(bad.code).toBe(EXIT.badInput);
    expect(bad.err.join('\n')).toMatch(/typed-cluster\.ts.*nodes\.gpuWorkers\.gpusPerNode/);
    // a valid one gets as far as the binaries
    writeFileSync(ts, source);
    process.env[GO_ENV] = path.join(dir, 'no-go');
    const good = await runMain('rehearse', '--config', ts);
    expect(good.err).toEqual([expect.stringMatching(/^error: rehearse: no go command, and no --binaries DIR/)]);
  });

  it('the twin gets a TypeScript description\'s value as YAML: the same value its YAML twin holds', () => {
    const out = path.join(dir, 'evaluated');
    const yaml = asYamlDescription(TYPED_FILE, out);
    expect(path.dirname(yaml)).toBe(out);
    expect(parse(readFileSync(yaml, 'utf8'))).toEqual(parse(readFileSync(TYPED_FILE.replace(/\.ts$/, '.yaml'), 'utf8')));
    // a YAML or JSON description is read as it is
    expect(asYamlDescription(REFERENCE_FILE, out)).toBe(REFERENCE_FILE);
  });

  it('a TypeScript value that shares one object in many places is written out in full (no YAML alias: the reader allows few)', () => {
    const ts = path.join(dir, 'shared-objects.ts');
    writeFileSync(ts, 'const toleration = { key: "example.com/k", operator: "Exists" };\n'
      + 'export default { name: "shared", tenants: Array.from({ length: 150 }, (_, i) => ({ name: `t${i}`, tolerations: [toleration] })) };\n');
    const text = readFileSync(asYamlDescription(ts, path.join(dir, 'evaluated-shared')), 'utf8');
    expect(text).not.toMatch(/[&*]a\d/);
    expect((parse(text) as { tenants: unknown[] }).tenants[149]).toEqual({ name: 't149', tolerations: [{ key: 'example.com/k', operator: 'Exists' }] });
  });

  it('without Go and without --binaries: one line saying how to get them, exit 2', async () => {
    process.env[GO_ENV] = path.join(dir, 'no-go');
    const r = await runMain('rehearse', '--config', REFERENCE_FILE);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(/^error: rehearse: no go command, and no --binaries DIR: install Go 1\.26(\.0)? or later .*, or give --binaries DIR holding them prebuilt \(rehearse --help lists the files and versions\)/);
  });

  it('a Go older than the modules need: the same line, naming it', async () => {
    const go = path.join(dir, 'old-go');
    writeFileSync(go, '#!/bin/sh\necho go1.25.4\n');
    chmodSync(go, 0o755);
    process.env[GO_ENV] = go;
    const r = await runMain('rehearse', '--config', REFERENCE_FILE);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(/^error: rehearse: .*old-go is go1\.25\.4: install Go 1\.26/)]);
  });
});

describe('the twin\'s binaries: the whole time of the builds still needed said before the first build', () => {
  const saved = Object.fromEntries([CACHE_ENV, KUEUE_CACHE_ENV, TWIN_CACHE_ENV].map((k) => [k, process.env[k]]));
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('an empty cache: one line with the three builds\' total first, then the first build\'s own line; an entry in the cache is not counted', async () => {
    // a go command that answers `go env` as Go 1.26 does and fails every build (nothing is built here)
    const go = path.join(dir, 'fake-go');
    writeFileSync(go, '#!/bin/sh\nif [ "$1" = env ]; then printf \'go1.26.0\\nlinux\\namd64\\n\'; exit 0; fi\necho "no build here" >&2\nexit 1\n');
    chmodSync(go, 0o755);
    process.env[GO_ENV] = go;
    const caches = mkdtempSync(path.join(dir, 'caches-'));
    for (const [k, name] of [[CACHE_ENV, 'control-plane'], [KUEUE_CACHE_ENV, 'kueue'], [TWIN_CACHE_ENV, 'twin']]) process.env[k] = path.join(caches, name);
    const lines: string[] = [];
    await expect(twinBinaries({ progress: (l) => lines.push(l) })).rejects.toThrow(/no build here/);
    // the line's figures are the specs' cold CPU seconds (bench/README.md), added and spread over the cores
    const [controlPlane, kueue, twin] = buildsNeeded();
    const cpu = (...specs: GoBinarySpec[]) => specs.reduce((n, spec) => n + spec.coldCpuSeconds!, 0);
    const said = (n: number) => n.toLocaleString('en-US').replace(/,/g, ' ');
    const all = cpu(controlPlane, kueue, twin);
    expect(lines[0]).toBe('3 of the 3 binaries the twin runs to build, once per machine (the control plane, Kueue and the Argo CD twin): '
      + `some ${said(all)} CPU seconds of Go, about ${Math.ceil(all / availableParallelism() / 60)} minutes in all on ${availableParallelism()} idle core(s), longer on a busy machine`);
    expect(lines[1]).toMatch(/^building the Kubernetes control plane \(first run on this machine/);
    expect(lines).toHaveLength(2);
    // the control plane in the cache (a complete entry of its key): two builds left, the total of those two
    const key = buildKey(goCommand(), controlPlane);
    const entry = path.join(caches, 'control-plane', key);
    mkdirSync(entry, { recursive: true });
    writeFileSync(path.join(entry, 'control-plane'), '#!/bin/sh\n');
    chmodSync(path.join(entry, 'control-plane'), 0o755);
    writeFileSync(path.join(entry, 'record.json'), JSON.stringify({ key, sha256: 'x', size: 10, versions: {}, seconds: 1 }));
    expect(buildsNeeded().map((spec) => spec.what)).toEqual([kueue.what, twin.what]);
    expect(buildTimeLine(buildsNeeded(), 2)).toBe(`2 of the 3 binaries the twin runs to build, once per machine (Kueue and the Argo CD twin): some ${said(cpu(kueue, twin))} CPU seconds of Go, `
      + `about ${Math.ceil(cpu(kueue, twin) / 2 / 60)} minutes in all on 2 idle core(s), longer on a busy machine`);
    expect(buildTimeLine([twin], 2)).toMatch(new RegExp(`^1 of the 3 binaries the twin runs to build, once per machine \\(the Argo CD twin\\): some ${said(cpu(twin))} CPU seconds`));
    expect(buildTimeLine([], 2)).toBeUndefined();
  });
});

describe('rehearse --binaries DIR: each prebuilt binary is checked before anything starts', () => {
  const layout = (name: string, versions = pinned(), companions = true) => {
    const bin = path.join(dir, name);
    mkdirSync(bin, { recursive: true });
    for (const [binary, modules] of Object.entries(versions)) goBinaryFile(path.join(bin, binary), modules);
    if (companions) {
      for (const f of ['git-verify-wrapper.sh', 'gpg-wrapper.sh']) {
        writeFileSync(path.join(bin, f), '#!/bin/sh\n');
        chmodSync(path.join(bin, f), 0o755);
      }
      for (const f of ['node-initialize.yaml', 'node-heartbeat-with-lease.yaml', 'node-not-ready.yaml', 'pod-ready.yaml', 'pod-complete.yaml', 'pod-delete.yaml']) writeFileSync(path.join(bin, f), 'kind: Stage\n');
    }
    return bin;
  };

  it('reads the build information of a Go binary', () => {
    const file = path.join(dir, 'info');
    goBinaryFile(file, { 'sigs.k8s.io/kueue': 'v9.9.9' });
    expect(embeddedBuildInfo(file)).toEqual({ 'go': 'go1.26.8', 'example.com/main': '(devel)', 'sigs.k8s.io/kueue': 'v9.9.9' });
    writeFileSync(file, 'no build information here');
    expect(embeddedBuildInfo(file)).toBeUndefined();
  });

  it('an empty folder: exit 2 naming the first binary it lacks', async () => {
    mkdirSync(path.join(dir, 'empty'));
    const r = await runMain('rehearse', '--config', REFERENCE_FILE, '--binaries', path.join(dir, 'empty'));
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(/--binaries .*empty: no executable control-plane \(the control plane; rehearse --help lists what the folder holds\)/)]);
  });

  it('a binary built from another release: exit 2 naming the module, the version it has and the one needed', async () => {
    const versions = pinned();
    const bin = layout('old-argo', { ...versions, twin: { ...versions.twin, 'github.com/argoproj/argo-cd/v3': 'v3.4.0' } });
    const r = await runMain('rehearse', '--config', REFERENCE_FILE, '--binaries', bin);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(new RegExp(`twin is built from github\\.com/argoproj/argo-cd/v3 v3\\.4\\.0, this version of the package needs github\\.com/argoproj/argo-cd/v3 ${versions.twin['github.com/argoproj/argo-cd/v3'].replace(/\./g, '\\.')}`))]);
  });

  it('a CRD file beside the twin that is not the pinned one: exit 2 naming the file, the module file it stands for and the SHA-256 pinned', async () => {
    const bin = layout('wrong-crds');
    for (const c of CRD_SOURCE_FILES) writeFileSync(path.join(bin, crdSourceFileName(c)), 'kind: CustomResourceDefinition\n');
    const [first] = CRD_SOURCE_FILES;
    const r = await runMain('rehearse', '--config', REFERENCE_FILE, '--binaries', bin);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([`error: --binaries ${bin}: ${crdSourceFileName(first)} is not ${first.file} of ${first.module}@${first.version} (its SHA-256 is ${sha256('kind: CustomResourceDefinition\n')}, pinned ${first.sha256}); nothing was written`]);
  });

  it('the twin without its companion files: exit 2 naming the file', async () => {
    const r = await runMain('rehearse', '--config', REFERENCE_FILE, '--binaries', layout('bare', pinned(), false));
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(/no executable git-verify-wrapper\.sh beside twin \(hack\/git-verify-wrapper\.sh of github\.com\/argoproj\/argo-cd\/v3\)/)]);
  });
});

describe('rehearse --from REV: the commit is checked before anything starts (exit 2, one line)', () => {
  /** A clusters repository: the reference description committed once, `extra` committed after it. */
  const repo = (name: string) => {
    const root = path.join(dir, name);
    mkdirSync(path.join(root, 'clusters'), { recursive: true });
    const git = (...args: string[]) => spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: root, encoding: 'utf8' });
    git('init', '-q');
    const file = path.join(root, 'clusters', 'lab.yaml');
    writeFileSync(file, readFileSync(REFERENCE_FILE));
    git('add', '.');
    git('commit', '-q', '-m', 'lab');
    return { root, file, git };
  };
  const noBinaries = path.join(dir, 'none');

  it.each([
    ['-x', /^error: --from -x: expected a commit \(a branch, a tag, HEAD~1, a SHA\), not an option/],
    ['--output=/tmp/x', /^error: --from --output=\/tmp\/x: expected a commit .*not an option/],
    ['HEAD~5', /^error: --from HEAD~5: no such commit in .*from-repo-1/],
    ['no-such-branch', /^error: --from no-such-branch: no such commit in /],
  ])('--from %s: exit 2, one line; nothing runs', async (rev, says) => {
    const { file } = repo('from-repo-1');
    const r = await runMain('rehearse', '--config', file, `--from=${rev}`, '--binaries', noBinaries);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(says)]);
    expect(r.out).toEqual([]);
  });

  it('a description outside a Git repository: exit 2, one line', async () => {
    const outside = mkdtempSync(path.join(tmpdir(), 'rehearse-nogit-'));
    try {
      const file = path.join(outside, 'lab.yaml');
      writeFileSync(file, readFileSync(REFERENCE_FILE));
      const r = await runMain('rehearse', '--config', file, '--from', 'HEAD', '--binaries', noBinaries);
      expect(r.code).toBe(EXIT.badInput);
      expect(r.err).toEqual([expect.stringMatching(/^error: --from HEAD: .*lab\.yaml is not in a Git repository/)]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('a description the commit does not have: exit 2, one line naming the file and the commit', async () => {
    const { root } = repo('from-repo-2');
    const file = path.join(root, 'clusters', 'new.yaml');
    writeFileSync(file, readFileSync(REFERENCE_FILE));
    const r = await runMain('rehearse', '--config', file, '--from', 'HEAD', '--binaries', noBinaries);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(/^error: --from HEAD: clusters\/new\.yaml does not exist at [0-9a-f]{12}/)]);
  });

  /** A repository whose HEAD holds a description with a wrong value, its working tree the reference one. */
  const brokenAtHead = (name: string) => {
    const r = repo(name);
    const text = readFileSync(REFERENCE_FILE, 'utf8');
    writeFileSync(r.file, text.replace(/^(\s+gpusPerNode:) \d+$/m, '$1 eight'));
    r.git('commit', '-q', '-am', 'broken');
    writeFileSync(r.file, text);
    return r;
  };

  it('the description at the commit is validated as the working tree\'s is: a problem there is one line naming REV:path', async () => {
    const { file } = brokenAtHead('from-repo-3');
    const empty = path.join(dir, 'from-empty-binaries');
    mkdirSync(empty, { recursive: true });
    const r = await runMain('rehearse', '--config', file, '--from', 'HEAD', '--binaries', empty);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(/^HEAD:clusters\/lab\.yaml:\d+:\d+ nodes\.gpuWorkers\.gpusPerNode: /)]);
    // the working tree's description alone is fine: the same run without --from gets as far as the binaries
    const plain = await runMain('rehearse', '--config', file, '--binaries', empty);
    expect(plain.err).toEqual([expect.stringMatching(/no executable control-plane/)]);
  });

  it('a change of installs.kueue (pre-installed to managed) is refused in one line before anything starts: the twin runs Kueue as the commit says', async () => {
    const r = repo('from-repo-5');
    writeFileSync(r.file, `${readFileSync(REFERENCE_FILE, 'utf8').replace(/\n*$/, '\n')}installs:\n  kueue: managed\n`);
    const run = await runMain('rehearse', '--config', r.file, '--from', 'HEAD', '--binaries', noBinaries);
    expect(run.code).toBe(EXIT.badInput);
    expect(run.err).toEqual([expect.stringMatching(/^error: --from HEAD:clusters\/lab\.yaml: installs\.kueue changes from preinstalled to managed, .*without --from\)/)]);
  });

  it('--from alone (last, or before another option) is --from HEAD: the description at HEAD is the one read', async () => {
    const { file } = brokenAtHead('from-repo-4');
    for (const args of [['--binaries', noBinaries, '--from'], ['--from', '--binaries', noBinaries]]) {
      const r = await runMain('rehearse', '--config', file, ...args);
      expect(r.code).toBe(EXIT.badInput);
      expect(r.err).toEqual([expect.stringMatching(/^HEAD:clusters\/lab\.yaml:\d+:\d+ nodes\.gpuWorkers\.gpusPerNode: /)]);
    }
  });
});

describe('rehearse --from: the change report, from the two converged states', () => {
  const pod = (uid: string, name: string, node: string, owner: { kind: string; name: string }, hash?: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { uid, name, namespace: 'ns', ownerReferences: [owner], labels: hash ? { 'pod-template-hash': hash } : {} },
    spec: { nodeName: node },
  });
  const app = (name: string, p: string, resources: string[], pruned: string[] = []) => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name },
    spec: { source: { path: p } },
    status: {
      resources: resources.map((r) => ({ kind: 'ConfigMap', namespace: 'ns', name: r })),
      operationState: { syncResult: { resources: pruned.map((r) => ({ kind: 'ConfigMap', namespace: 'ns', name: r, status: 'Pruned' })) } },
    },
  });

  it('a DaemonSet roll on the GPU workers comes first; changed Applications by wave; pruned objects by Application', async () => {
    const { changeReport } = await import('../../src/twin/rehearse');
    const ds = { kind: 'DaemonSet', name: 'nvidia-device-plugin-daemonset' };
    const rs = { kind: 'ReplicaSet', name: 'kueue-controller-manager-5d9f' };
    const before = [pod('a', 'dp-a', 'gpu-1', ds), pod('b', 'dp-b', 'gpu-2', ds), pod('c', 'kueue-x', 'svc', rs, '5d9f'), pod('d', 'dp-c', 'gpu-3', ds)];
    const after = [pod('e', 'dp-d', 'gpu-1', ds), pod('f', 'dp-e', 'gpu-2', ds), pod('g', 'kueue-y', 'svc', { ...rs, name: 'kueue-controller-manager-77aa' }, '77aa'), pod('d', 'dp-c', 'gpu-3', ds)];
    const { podsOf } = await import('../../src/twin/pod-watch');
    const lines = changeReport({
      apps: {
        before: [app('lab-kueue', 'dist/lab/kueue', ['q', 'old']), app('lab-gpu-operator', 'dist/lab/gpu-operator', ['p'])],
        after: [app('lab-kueue', 'dist/lab/kueue', ['q']), app('lab-gpu-operator', 'dist/lab/gpu-operator', ['p'])],
      },
      stillThere: new Set(),
      clusterPath: 'dist/lab',
      changedFiles: ['gpu-operator/clusterpolicy.yaml', 'kueue/x.yaml'],
      pods: { before: podsOf(before), seen: podsOf([...before, ...after]), after: podsOf(after) },
      nodeRole: new Map([['gpu-1', 'gpu'], ['gpu-2', 'gpu'], ['gpu-3', 'gpu'], ['svc', 'service']]),
      timeline: [{ application: 'lab-kueue', wave: 1, syncedAt: 3000, healthyAt: 4000 }, { application: 'lab-gpu-operator', wave: 0, syncedAt: 1000, healthyAt: 9000 }],
    });
    expect(lines).toEqual([
      'pods: GPU workers: DaemonSet ns/nvidia-device-plugin-daemonset rolled on 2 of 3 (gpu-1, gpu-2; 2 pod(s) deleted, 2 created)',
      'pods: service node: Deployment ns/kueue-controller-manager replaced on 1 of 1 (svc; 1 pod(s) deleted, 1 created)',
      'changed: 2 Application(s) whose rendered folder changed, in the order they converged:',
      '  wave 0: lab-gpu-operator: Synced 1.0 s, Healthy 9.0 s after the push',
      '  wave 1: lab-kueue: Synced 3.0 s, Healthy 4.0 s after the push',
      'pruned: lab-kueue: ConfigMap ns/old',
    ]);
  });
  it('a CRD that left an Application and is still on the twin reads "not pruned" with the kubectl command (Argo CD never prunes a CRD); so does what a deleted Application left', async () => {
    const { changeReport, goneResources, resourceKey, resourceObject } = await import('../../src/twin/rehearse');
    const crd = { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', name: 'widgets.example.com' };
    const widget = { group: 'example.com', version: 'v1', kind: 'Widget', namespace: 'ns', name: 'w' };
    const deployment = { group: 'apps', version: 'v1', kind: 'Deployment', namespace: 'kueue-system', name: 'kueue-controller-manager' };
    const application = (name: string, resources: object[]) => ({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name }, spec: { source: { path: `dist/lab/${name}` } }, status: { resources } });
    const before = [application('lab-storage', [crd, widget]), application('lab-kueue-install', [deployment])];
    const after = [application('lab-storage', [])];
    const gone = goneResources(before, after);
    expect(gone.map((g) => `${g.application} ${resourceKey(g)}`)).toEqual([
      'lab-storage apiextensions.k8s.io/CustomResourceDefinition /widgets.example.com', 'lab-storage example.com/Widget ns/w', 'lab-kueue-install apps/Deployment kueue-system/kueue-controller-manager',
    ]);
    // what rehearse reads from the twin for each
    expect(resourceObject(gone[0])).toEqual({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' } });
    expect(resourceObject({ group: '', version: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'c' })).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } });
    const report = (stillThere: Set<string>) => changeReport({
      apps: { before, after }, stillThere, clusterPath: 'dist/lab', changedFiles: [], pods: { before: new Map(), seen: new Map(), after: new Map() }, nodeRole: new Map(), timeline: [],
    }).filter((l) => /^(not )?pruned: /.test(l));
    expect(report(new Set([resourceKey(crd), resourceKey(deployment)]))).toEqual([
      'pruned: lab-storage: Widget ns/w',
      'not pruned: lab-storage: CustomResourceDefinition widgets.example.com: stays in the cluster: Argo CD never prunes a CRD (no Application owns one), '
        + 'only the custom resources it applied; an admin deletes it if wanted: kubectl delete crd widgets.example.com (deletes every custom resource of it left)',
      'not pruned: lab-kueue-install: Deployment kueue-system/kueue-controller-manager: still in the cluster (its Application was deleted without deleting what it applied)',
    ]);
    // what the twin no longer has was pruned, whatever its kind
    expect(report(new Set())).toEqual(['pruned: lab-storage: CustomResourceDefinition widgets.example.com', 'pruned: lab-storage: Widget ns/w', 'pruned: lab-kueue-install: Deployment kueue-system/kueue-controller-manager']);
  });

  it('reads each resource that left its Application from the cluster: live is still there; not found, its kind no longer served or being deleted is pruned; another error is thrown', async () => {
    const { stillInCluster, resourceKey } = await import('../../src/twin/rehearse');
    const { ApiError } = await import('../../src/twin/kube-client');
    const ref = (name: string) => ({ group: 'example.com', version: 'v1', kind: 'Widget', namespace: 'ns', name });
    const live = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'live', namespace: 'ns' } };
    const client = {
      read: async (o: { metadata: { name: string } }) => {
        switch (o.metadata.name) {
          case 'live': return live;
          case 'deleting': return { ...live, metadata: { ...live.metadata, name: 'deleting', deletionTimestamp: '2026-12-07T00:00:00Z' } };
          case 'unserved': throw new ApiError(404, 'NotFound', 'the server does not serve example.com/v1 Widget', undefined);
          case 'forbidden': throw new ApiError(403, 'Forbidden', 'widgets.example.com "forbidden" is forbidden', undefined);
          default: return undefined;
        }
      },
    };
    const still = await stillInCluster(client as never, ['live', 'deleting', 'unserved', 'gone'].map(ref));
    expect([...still]).toEqual([resourceKey(ref('live'))]);
    await expect(stillInCluster(client as never, [ref('forbidden')])).rejects.toThrow(/forbidden/);
  });
});

describe('rehearse --snapshot FILE | --kubeconfig: the cluster\'s own Nodes, read as init reads them', () => {
  const noBinaries = path.join(dir, 'none');

  it('the twin\'s Nodes are the snapshot\'s: names, labels, taints and allocatable as the cluster shows them, by role; a node in trouble\'s taints left off', async () => {
    const { nodesFromCluster } = await import('../../src/twin/cluster-nodes');
    const file = changedSnapshot(dir, 'troubled', (objects) => {
      const worker = objects.find((o) => o.kind === 'Node' && o.metadata.name === 'gpu-worker-1');
      worker.spec = { taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }, { key: 'dedicated', value: 'training', effect: 'NoSchedule' }] };
    });
    const state = readSnapshot(file);
    const [model] = loadModels([REFERENCE_FILE]);
    const nodes = nodesFromCluster(state, model);
    const snapshotNodes = state.list('', 'Node');
    expect(nodes.map((n) => [n.node.metadata.name, n.kind.role])).toEqual([
      ['service-0', 'service'], ['gpu-worker-0', 'gpu'], ['gpu-worker-1', 'gpu'], ['gpu-worker-2', 'gpu'],
    ]);
    for (const n of nodes) {
      const read = snapshotNodes.find((s) => s.metadata.name === n.node.metadata.name)! as any;
      expect(n.node.metadata.labels, n.node.metadata.name).toEqual(read.metadata.labels);
      expect(n.node.status?.allocatable, n.node.metadata.name).toEqual(read.status.allocatable);
    }
    const taints = (name: string) => (nodes.find((n) => n.node.metadata.name === name)!.node.spec as { taints: object[] }).taints;
    expect(taints('service-0')).toEqual([{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]);
    expect(taints('gpu-worker-1')).toEqual([{ key: 'dedicated', value: 'training', effect: 'NoSchedule' }]);
    expect(taints('gpu-worker-0')).toEqual([]);
  });

  it.each([
    ['an allocatable amount that is no quantity', (o: any[]) => { o.find((x) => x.metadata.name === 'gpu-worker-2').status.allocatable.cpu = 'eight'; },
      /^error: --snapshot .*bad-1\.yaml: document 1, items\[3\] \(Node gpu-worker-2\): status\.allocatable\.cpu: expected a quantity such as "8" or "1800Gi", got "eight"/],
    ['a Node without allocatable', (o: any[]) => { delete o.find((x) => x.metadata.name === 'service-0').status; },
      /^error: --snapshot .*bad-2\.yaml: Node service-0: status\.allocatable: missing/],
    ['no Node at all', (o: any[]) => { o.splice(0, o.length, ...o.filter((x) => x.kind !== 'Node')); },
      /^error: --snapshot .*bad-3\.yaml: no Node \(rehearse runs the cluster's Nodes/],
  ])('%s: exit 2, one line naming the snapshot and the field; nothing runs', async (_, change, says) => {
    const n = ['an allocatable amount that is no quantity', 'a Node without allocatable', 'no Node at all'].indexOf(_) + 1;
    const file = changedSnapshot(dir, `bad-${n}`, change);
    const r = await runMain('rehearse', '--config', REFERENCE_FILE, '--snapshot', file, '--binaries', noBinaries);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(says)]);
    expect(r.out).toEqual([]);
  });

  it.each([
    [['--snapshot', path.join(dir, 'no-such.yaml')], /^error: --snapshot .*no-such\.yaml: cannot read the file: no such file/],
    [['--snapshot', SNAPSHOT, '--kubeconfig', 'kc'], /^error: rehearse: give --snapshot FILE or --kubeconfig \[PATH\], not both/],
    [['--context', 'lab'], /^error: --context needs --kubeconfig/],
    [['--kubeconfig', path.join(dir, 'no-such-kubeconfig')], /^error: .*no-such-kubeconfig/],
  ])('%j: exit 2, one line', async (args, says) => {
    const r = await runMain('rehearse', '--config', REFERENCE_FILE, ...args, '--binaries', noBinaries);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(says)]);
  });

  it('a good snapshot gets as far as the binaries (the Nodes are read before them)', async () => {
    const r = await runMain('rehearse', '--config', REFERENCE_FILE, '--snapshot', SNAPSHOT, '--binaries', noBinaries);
    expect(r.err).toEqual([expect.stringMatching(/^error: --binaries .*none: no such folder/)]);
  });

  it('--help says where the Nodes come from', async () => {
    const help = (await runMain('rehearse', '--help')).out.join('\n').replace(/\s+/g, ' ');
    expect(help).toContain('[--snapshot FILE | --kubeconfig [PATH] [--context NAME]]');
    expect(help).toMatch(/--snapshot FILE .*the cluster's own Nodes \(names, labels, taints, allocatable\)/);
  });
});

describe('rehearse --timeout: the default of each mode', () => {
  it('the bootstrap 600 s; change mode (--from) twice that, for its two converged states; a given one wins', () => {
    expect(rehearsalTimeoutMs({})).toBe(600_000);
    expect(rehearsalTimeoutMs({ from: 'HEAD' })).toBe(1_200_000);
    expect(rehearsalTimeoutMs({ from: 'HEAD', timeout: '90' })).toBe(90_000);
    expect(rehearsalTimeoutMs({ timeout: '1800' })).toBe(1_800_000);
    expect(() => rehearsalTimeoutMs({ timeout: '3601' })).toThrow(/--timeout 3601: expected seconds from 1 to 3600/);
  });

  it('a description that manages an install: the bootstrap 1200 s, change mode 2400 s; a given one wins', () => {
    expect(rehearsalTimeoutMs({}, true)).toBe(1_200_000);
    expect(rehearsalTimeoutMs({ from: 'HEAD' }, true)).toBe(2_400_000);
    expect(rehearsalTimeoutMs({ timeout: '300' }, true)).toBe(300_000);
  });

  it('--help gives both defaults', async () => {
    const help = (await runMain('rehearse', '--help')).out.join('\n').replace(/\s+/g, ' ');
    expect(help).toContain('(default: 600, 1200 where the description manages an install; twice that with --from, which converges two states; at most 3600)');
  });
});

describe('rehearse: when the root\'s sync has gone past an Application that is not Healthy (the early end, exit 1)', () => {
  // the messages the toolkit's Application health check gives, as its own tests state them (health_test.yaml, run
  // against the Lua by test/argocd/health-checks.test.ts): a child past gitops.waveWait, and one still within it
  const cases = (parse(readFileSync(path.join(HEALTH_DIR, 'argoproj.io', 'Application', 'health_test.yaml'), 'utf8')) as { tests: { healthStatus: { status: string; message: string }; inputPath: string }[] }).tests;
  const check = (input: string) => cases.find((c) => c.inputPath === `testdata/${input}.yaml`)!.healthStatus;
  const REV = 'a'.repeat(40);
  const child = (name: string, health: string, revision = REV, sync = 'Synced') => applicationState({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, annotations: { 'argocd.argoproj.io/sync-wave': '2' } },
    status: { sync: { status: sync, revision }, health: { status: health } },
  });
  const root = (seen: Record<string, { status: string; message: string }>, phase = 'Succeeded') => applicationState({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'lab' },
    status: {
      sync: { status: 'Synced', revision: REV },
      health: { status: 'Healthy' },
      operationState: { phase, syncResult: { revision: REV } },
      resources: Object.entries(seen).map(([name, health]) => ({ group: 'argoproj.io', kind: 'Application', namespace: 'argocd', name, status: 'Synced', health })),
    },
  });
  const names = ['lab', 'lab-kueue', 'lab-gpu-operator'];
  const healthy = { status: 'Healthy', message: 'The Application is Healthy' };

  it('the root reports the child gone ahead of after gitops.waveWait (Degraded or Progressing past the bound): the verdict is in', () => {
    expect(check('degraded-long-after-sync').message.endsWith(WAVES_GO_AHEAD)).toBe(true);
    for (const [health, input] of [['Degraded', 'degraded-long-after-sync'], ['Progressing', 'progressing-past-wait']] as const) {
      const states = [root({ 'lab-kueue': healthy, 'lab-gpu-operator': check(input) }), child('lab-kueue', 'Healthy'), child('lab-gpu-operator', health)];
      expect(rootWentPast(REV, 'lab', names, states), input).toBe(true);
    }
  });

  it('an operator that reacts late: the root passed the wave Healthy, the child now Progressing within the bound, is waited for', () => {
    // the root's sync ended while the child was Healthy; the child then turned Progressing (a roll the operator starts late)
    const late = [root({ 'lab-kueue': healthy, 'lab-gpu-operator': healthy }), child('lab-kueue', 'Healthy'), child('lab-gpu-operator', 'Progressing')];
    expect(rootWentPast(REV, 'lab', names, late)).toBe(false);
    // the root's check now sees it Progressing, within gitops.waveWait
    const within = [root({ 'lab-kueue': healthy, 'lab-gpu-operator': check('progressing-within-wait') }), child('lab-kueue', 'Healthy'), child('lab-gpu-operator', 'Progressing')];
    expect(check('progressing-within-wait').status).toBe('Progressing');
    expect(rootWentPast(REV, 'lab', names, within)).toBe(false);
  });

  it('not while the root\'s sync is not done at the revision, an Application is missing, or one is only behind in its sync', () => {
    const gone = { 'lab-kueue': healthy, 'lab-gpu-operator': check('degraded-long-after-sync') };
    expect(rootWentPast(REV, 'lab', names, [root(gone, 'Running'), child('lab-kueue', 'Healthy'), child('lab-gpu-operator', 'Degraded')])).toBe(false);
    expect(rootWentPast(REV, 'lab', names, [root(gone), child('lab-gpu-operator', 'Degraded')])).toBe(false);
    expect(rootWentPast(REV, 'lab', names, [root(gone), child('lab-kueue', 'Healthy'), child('lab-gpu-operator', 'Degraded', 'b'.repeat(40))])).toBe(false);
    expect(rootWentPast(REV, 'lab', names, [root(gone), child('lab-kueue', 'Healthy', REV, 'OutOfSync'), child('lab-gpu-operator', 'Degraded')])).toBe(false);
    // every Application converged: that is done, not gone past
    expect(rootWentPast(REV, 'lab', names, [root(gone), child('lab-kueue', 'Healthy'), child('lab-gpu-operator', 'Healthy')])).toBe(false);
  });

  it('a managed install (its source a chart at its release, not the cluster\'s repository) converges at the revision it compared; the root and the folders only at the commit', () => {
    const repo = 'http://127.0.0.1:8080/platform/clusters.git';
    const app = (name: string, repoURL: string, revision: string, health = 'Healthy') => applicationState({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name },
      spec: { source: { repoURL, targetRevision: repoURL === repo ? 'main' : '0.19.2' } },
      status: { sync: { status: 'Synced', revision }, health: { status: health }, operationState: { phase: 'Succeeded', syncResult: { revision } } },
    });
    const install = app('lab-kueue-install', 'oci://127.0.0.1:8081/kueue/charts/kueue', '0.19.2');
    const at = atCommit(REV, repo);
    expect(convergedAt(at)(install)).toBe(true);
    // a revision the commit alone names for every Application: the install never converged (the rehearsal of a cluster
    // with managed installs never ended green before)
    expect(convergedAt(REV)(install)).toBe(false);
    expect(convergedAt(at)(app('lab-kueue', repo, REV))).toBe(true);
    expect(convergedAt(at)(app('lab-kueue', repo, 'b'.repeat(40)))).toBe(false);
    expect(convergedAt(at)(app('lab-kueue-install', 'oci://127.0.0.1:8081/kueue/charts/kueue', '0.19.2', 'Progressing'))).toBe(false);
    // not compared yet (no revision): not converged
    expect(convergedAt(at)(app('lab-kueue-install', 'oci://127.0.0.1:8081/kueue/charts/kueue', ''))).toBe(false);
    const lab = { ...app('lab', repo, REV), wentAheadOf: ['lab-kueue-install'] };
    expect(rootWentPast(at, 'lab', ['lab', 'lab-kueue-install'], [lab, app('lab-kueue-install', 'oci://127.0.0.1:8081/kueue/charts/kueue', '0.19.2', 'Degraded')])).toBe(true);
    expect(rootWentPast(at, 'lab', ['lab', 'lab-kueue-install'], [lab, install])).toBe(false);
  });

  it('a child held on purpose (a queue held by its stop policy: Suspended, the root going ahead of it) is settled, not stuck', () => {
    expect(check('suspended').message.endsWith(HELD_ON_PURPOSE)).toBe(true);
    const held = root({ 'lab-kueue': check('suspended'), 'lab-gpu-operator': healthy });
    const suspended = child('lab-kueue', 'Suspended');
    expect(settledAt(REV, held)(suspended)).toBe(true);
    // Suspended without the root saying so, or not synced at the revision: not settled
    expect(settledAt(REV, root({ 'lab-kueue': healthy, 'lab-gpu-operator': healthy }))(suspended)).toBe(false);
    expect(settledAt(REV, held)(child('lab-kueue', 'Suspended', 'b'.repeat(40)))).toBe(false);
    // everything settled: done, not gone past
    expect(rootWentPast(REV, 'lab', names, [held, suspended, child('lab-gpu-operator', 'Healthy')])).toBe(false);
    // one held, one gone past after the bound: the verdict is in for the second only
    const both = root({ 'lab-kueue': check('suspended'), 'lab-gpu-operator': check('degraded-long-after-sync') });
    expect(rootWentPast(REV, 'lab', names, [both, suspended, child('lab-gpu-operator', 'Degraded')])).toBe(true);
  });
});

describe('rehearse --from: what Kueue does to the samples\' queued jobs, from their Workloads', () => {
  const wl = (conditions: Record<string, [string, string?, string?]>, admission?: { clusterQueue: string; gpus: number[] }) => ({
    metadata: { name: 'mpijob-nccl-all-reduce-1a2b3', namespace: 'research' },
    status: {
      conditions: Object.entries(conditions).map(([type, [status, reason, message]]) => ({ type, status, reason, message })),
      ...(admission ? {
        admission: {
          clusterQueue: admission.clusterQueue,
          // a launcher (no GPU) on a CPU flavor, the workers' GPUs and CPUs on the GPU flavor
          podSetAssignments: admission.gpus.map((g) => ({
            flavors: { 'cpu': g === 0 ? 'cpu-only' : 'h100', 'memory': 'h100', 'nvidia.com/gpu': 'h100' },
            resourceUsage: { 'cpu': '1500m', 'memory': '2Gi', 'nvidia.com/gpu': String(g) },
          })),
        },
      } : {}),
    },
  });

  it('reads a Workload\'s state from Kueue\'s conditions: admitted (its ClusterQueue and GPUs), pending, evicted, finished, none', () => {
    expect(workloadState(wl({ QuotaReserved: ['True'], Admitted: ['True'] }, { clusterQueue: 'research', gpus: [0, 8, 8] }))).toEqual({
      state: 'admitted',
      clusterQueue: 'research',
      holds: [
        // as Kueue wrote them: a pod set's as it is, several summed in their unit
        { resource: 'cpu', flavor: 'cpu-only', amount: 1.5, written: '1500m' },
        { resource: 'cpu', flavor: 'h100', amount: 3, written: '3' },
        { resource: 'memory', flavor: 'h100', amount: 3 * 2 ** 31, written: '6Gi' },
        { resource: 'nvidia.com/gpu', flavor: 'h100', amount: 16, written: '16' },
      ],
    });
    expect(workloadState(wl({ QuotaReserved: ['False', 'Pending', 'couldn\'t assign flavors to pod set launcher: insufficient unused quota for nvidia.com/gpu'] })))
      .toEqual({ state: 'pending', reason: 'Pending', message: 'couldn\'t assign flavors to pod set launcher: insufficient unused quota for nvidia.com/gpu' });
    expect(workloadState(wl({ QuotaReserved: ['False', 'Pending', 'p'], Admitted: ['False'], Evicted: ['True', 'Preempted', 'Preempted to accommodate a workload'] })))
      .toEqual({ state: 'evicted', reason: 'Preempted', message: 'Preempted to accommodate a workload' });
    expect(workloadState(wl({ Finished: ['True', 'Succeeded', 'done'] })).state).toBe('finished');
    expect(workloadState(undefined)).toEqual({ state: 'gone' });
    // decided: admitted, or the scheduler said why not; a Workload Kueue has not looked at yet is not
    expect(decided(wl({}))).toBe(false);
    expect(decided(wl({ QuotaReserved: ['False', 'Pending', 'p'] }))).toBe(true);
    expect(decided(undefined)).toBe(false);
  });

  it('one summary line; with --verbose one line per job: its state before the push, what it went through, after', () => {
    const admitted = (nominal: number, gpus = 16) => ({ state: 'admitted' as const, clusterQueue: 'research', holds: [{ resource: 'nvidia.com/gpu', amount: gpus, written: String(gpus), nominal }] });
    const stays = { job: 'MPIJob research/nccl-all-reduce', before: admitted(16), seen: [admitted(8)], after: admitted(8) };
    const evicted = { state: 'evicted' as const, reason: 'Preempted', message: 'Preempted to accommodate a workload' };
    const bounced = { job: 'Job research/a', before: admitted(16), seen: [evicted, admitted(16)], after: admitted(16) };
    const pending = { state: 'pending' as const, reason: 'Pending', message: 'insufficient unused quota' };
    const now = { job: 'Job default/b', before: pending, seen: [], after: { ...admitted(4, 4), clusterQueue: 'default' } };
    const out = { job: 'Job research/c', before: admitted(16), seen: [], after: evicted };
    expect(jobsReport([stays], false)).toEqual(['jobs: 1 sample job(s) Kueue queues: 1 stays admitted (1 over its ClusterQueue\'s nominal GPU quota after the change)']);
    // over the quota before and after, the quota unchanged: the change did not do it
    const borrowing = { job: 'MPIJob default/nccl-all-reduce', before: admitted(4), seen: [], after: admitted(4) };
    expect(jobsReport([borrowing], false)).toEqual(['jobs: 1 sample job(s) Kueue queues: 1 stays admitted (1 over its ClusterQueue\'s unchanged nominal GPU quota, borrowing from the cohort as before)']);
    expect(jobsReport([stays, bounced, now, out], true)).toEqual([
      'jobs: 4 sample job(s) Kueue queues: 1 admitted, 1 evicted, 1 re-admitted after an eviction, 1 stays admitted (1 over its ClusterQueue\'s nominal GPU quota after the change)',
      '  MPIJob research/nccl-all-reduce: stays admitted: admitted by ClusterQueue research with 16 GPU(s) (its nominal quota 16) -> admitted by ClusterQueue research with 16 GPU(s) (its nominal quota 8: over it, borrowing from the cohort)',
      '  Job research/a: re-admitted after an eviction: admitted by ClusterQueue research with 16 GPU(s) (its nominal quota 16) -> evicted (Preempted: Preempted to accommodate a workload) -> admitted by ClusterQueue research with 16 GPU(s) (its nominal quota 16)',
      '  Job default/b: admitted: pending (Pending: insufficient unused quota) -> admitted by ClusterQueue default with 4 GPU(s) (its nominal quota 4)',
      '  Job research/c: evicted: admitted by ClusterQueue research with 16 GPU(s) (its nominal quota 16) -> evicted (Preempted: Preempted to accommodate a workload)',
    ]);
    expect(jobsReport([], true, ['MPIJob research/x: not submitted: forbidden'])).toEqual(['jobs: 0 sample job(s) Kueue queues: none submitted; 1 not submitted', '  MPIJob research/x: not submitted: forbidden']);
    expect(jobsReport([], true)).toEqual(['jobs: no sample job names a Kueue queue']);
    // a job Kueue did not decide before the push is named, --verbose or not; one Kueue does not manage says so
    const unmanaged = { job: 'MPIJob default/y', before: { state: 'unmanaged' as const }, seen: [], after: { state: 'unmanaged' as const } };
    expect(jobsReport([unmanaged], false, [], ['MPIJob default/y: not decided by Kueue within 120 s before the push (no Workload: ...)'])).toEqual([
      'jobs: 1 sample job(s) Kueue queues: 1 still unmanaged; 1 not decided by Kueue before the push',
      '  MPIJob default/y: not decided by Kueue within 120 s before the push (no Workload: ...)',
    ]);
    expect(jobsReport([unmanaged], true)[1]).toMatch(/^ {2}MPIJob default\/y: still unmanaged: no Workload \(the job is there: Kueue does not manage it; is its integration for this kind enabled\?\)$/);
  });

  it('over quota is read for every resource the ClusterQueue covers, in the flavor Kueue assigned: a CPU quota cut below what an admitted job holds is reported', () => {
    const research = findObject(folderObjects(renderOf(), 'kueue'), 'ClusterQueue', 'research');
    const flavor = (research.spec as any).resourceGroups[0].flavors[0];
    const quota = (r: string) => parseQuantity(flavor.resources.find((x: { name: string }) => x.name === r).nominalQuota);
    const holds = (usage: Record<string, number>, flavors: Record<string, string> = {}) => ({
      state: 'admitted' as const,
      clusterQueue: 'research',
      holds: Object.entries(usage)
        .map(([resource, amount]) => ({ resource, amount, written: String(amount), ...(flavors[resource] ? { flavor: flavors[resource] } : {}) })),
    });
    const nominals = (s: WorkloadState) => Object.fromEntries((s.holds ?? []).map((h) => [`${h.resource} ${h.flavor ?? '-'}`, h.nominal]));
    // what it holds of each covered resource, in its flavor; a resource the queue does not cover is not compared
    const within = withNominal(holds({ 'cpu': quota('cpu'), 'nvidia.com/gpu': 8, 'example.com/other': 1 }, { cpu: flavor.name }), research);
    expect(nominals(within)).toEqual({ [`cpu ${flavor.name}`]: quota('cpu'), 'nvidia.com/gpu -': quota('nvidia.com/gpu'), 'example.com/other -': undefined });
    // another flavor: that flavor's quota (none here), not the first one's
    expect(nominals(withNominal(holds({ cpu: 1 }, { cpu: 'another-flavor' }), research))).toEqual({ 'cpu another-flavor': 0 });
    // the quota cut: the same job, its ClusterQueue's CPU quota now below what it holds
    const cut = JSON.parse(JSON.stringify(research)) as Manifest & { spec: Record<string, any> };
    cut.spec.resourceGroups[0].flavors[0].resources.find((r: { name: string }) => r.name === 'cpu').nominalQuota = '16';
    const after = withNominal(holds({ 'cpu': 24, 'memory': 2 ** 40, 'nvidia.com/gpu': 8 }, { cpu: flavor.name }), cut);
    const before = withNominal(holds({ 'cpu': 24, 'memory': 2 ** 40, 'nvidia.com/gpu': 8 }, { cpu: flavor.name }), research);
    const lines = jobsReport([{ job: 'Job research/a', before, seen: [], after }], true);
    expect(lines[0]).toBe('jobs: 1 sample job(s) Kueue queues: 1 stays admitted (1 over its ClusterQueue\'s nominal CPU quota after the change)');
    expect(lines[1]).toBe(`  Job research/a: stays admitted: admitted by ClusterQueue research with 8 GPU(s) (its nominal quota ${quota('nvidia.com/gpu')}) -> `
      + `admitted by ClusterQueue research with 8 GPU(s) (its nominal quota ${quota('nvidia.com/gpu')}; its nominal cpu quota in ${flavor.name} 16: over it with 24, borrowing from the cohort)`);
  });

  it('samples in a tenant\'s own namespace (samples.namespace): a cut of that tenant\'s GPU quota under its admitted sample job is reported on the job, against the tenant\'s ClusterQueue', async () => {
    // the reference cluster with its samples in research's namespace, rendered as committed and with research's quota cut
    const d = parse(readFileSync(REFERENCE_FILE, 'utf8')) as Record<string, any>;
    const committed = { ...d, samples: { ...d.samples, namespace: 'research' } };
    const cut = { ...committed, tenants: d.tenants.map((t: { name: string; gpus: number }) => (t.name === 'research' ? { ...t, gpus: t.gpus / 2 } : t)) };
    const rendered = async (description: Record<string, any>, name: string) => {
      const file = path.join(dir, `${name}.yaml`);
      writeFileSync(file, stringify(description));
      const out = path.join(dir, `${name}-dist`);
      expect((await runMain('synth', '--config', file, '--out', out, '--no-validate', '--quiet')).code).toBe(EXIT.ok);
      const clusterDir = path.join(out, d.name as string);
      const objects = readdirSync(clusterDir, { recursive: true }).map(String).filter((f) => f.endsWith('.yaml') && !f.startsWith('gitops/'))
        .flatMap((f) => [parse(readFileSync(path.join(clusterDir, f), 'utf8')) as Manifest]).filter((o) => o?.kind);
      return { clusterDir, objects };
    };
    const before = await rendered(committed, 'tenant-samples');
    const after = await rendered(cut, 'tenant-samples-cut');
    // the queued samples are placed in the tenant's namespace, through its LocalQueue
    const [job] = queuedSamples(before.clusterDir).filter((j) => j.kind === 'MPIJob' && j.metadata.name === 'nccl-all-reduce');
    expect(job.metadata.namespace).toBe('research');
    const localQueue = findObject(before.objects, 'LocalQueue', (job.metadata.labels as Record<string, string>)['kueue.x-k8s.io/queue-name'], 'research');
    const queueName = (localQueue.spec as { clusterQueue: string }).clusterQueue;
    const queues = (objects: readonly Manifest[]) => new Map([[queueName, findObject(objects, 'ClusterQueue', queueName)]]);
    const gpuFlavor = ((findObject(before.objects, 'ClusterQueue', queueName).spec as any).resourceGroups as { coveredResources: string[]; flavors: { name: string }[] }[])
      .find((g) => g.coveredResources.includes('nvidia.com/gpu'))!.flavors[0].name;
    // what the job asks: each worker's GPUs (as rendered), the workers' count
    const workers = (job.spec as any).mpiReplicaSpecs.Worker;
    const gpus = Number(workers.replicas) * Number(workers.template.spec.containers[0].resources.limits['nvidia.com/gpu']);
    // its Workload as Kueue writes it in the tenant's namespace, admitted by the tenant's ClusterQueue
    const workload = {
      metadata: { name: 'mpijob-nccl-all-reduce-1a2b3', namespace: 'research' },
      status: {
        conditions: [{ type: 'QuotaReserved', status: 'True' }, { type: 'Admitted', status: 'True' }],
        admission: { clusterQueue: queueName, podSetAssignments: [{ flavors: { 'nvidia.com/gpu': gpuFlavor }, resourceUsage: { 'nvidia.com/gpu': String(gpus) } }] },
      },
    };
    const quota = (objects: readonly Manifest[]) => nominalQuota(findObject(objects, 'ClusterQueue', queueName), 'nvidia.com/gpu', gpuFlavor);
    // the fixture's research quota is below the job's GPUs before the cut already (it borrows from the cohort)
    expect(quota(before.objects)).toBeLessThan(gpus);
    expect(quota(after.objects)).toBeLessThan(quota(before.objects));
    const stateWith = (objects: readonly Manifest[]) => jobState(workload, true, queues(objects));
    const history = { job: describeObject(job), before: stateWith(before.objects), seen: [], after: stateWith(after.objects) };
    expect(jobsReport([history], true)).toEqual([
      'jobs: 1 sample job(s) Kueue queues: 1 stays admitted (1 over its ClusterQueue\'s nominal GPU quota after the change)',
      `  MPIJob research/nccl-all-reduce: stays admitted: admitted by ClusterQueue ${queueName} with ${gpus} GPU(s) (its nominal quota ${quota(before.objects)}: over it, borrowing from the cohort) -> `
        + `admitted by ClusterQueue ${queueName} with ${gpus} GPU(s) (its nominal quota ${quota(after.objects)}: over it, borrowing from the cohort)`,
    ]);
    expect(queueName).toBe('research');
  });

  it('the working tree\'s description is rendered pointed at the twin: its loopback repository, its GitHub mirror and its managed installs\' chart mirror', () => {
    const twin = {
      name: 'lab',
      gitops: { repoURL: 'http://127.0.0.1:1/platform/clusters.git', path: 'dist/lab' },
      mirrors: { git: { 'https://github.com/': 'http://127.0.0.1:1/github/' }, charts: { 'oci://registry.k8s.io/kueue/charts': 'oci://127.0.0.1:2/registry.k8s.io/kueue/charts' } },
    };
    const next = { name: 'lab', gitops: { repoURL: 'https://git.example.com/platform/clusters.git', path: 'dist/lab' }, tenants: [{ name: 'research', gpus: 4 }], mirrors: { images: { 'nvcr.io': 'registry.example.com/nvcr' } } };
    expect(onTheTwin(next, twin)).toEqual({
      name: 'lab',
      gitops: { repoURL: 'http://127.0.0.1:1/platform/clusters.git', path: 'dist/lab' },
      tenants: [{ name: 'research', gpus: 4 }],
      mirrors: { images: { 'nvcr.io': 'registry.example.com/nvcr' }, git: twin.mirrors.git, charts: twin.mirrors.charts },
    });
    // a twin that mirrors no chart (nothing managed) adds no chart mirror
    expect(onTheTwin(next, { ...twin, mirrors: { git: twin.mirrors.git } }).mirrors).toEqual({ images: next.mirrors.images, git: twin.mirrors.git });
  });

  it('the samples Kueue queues: those the samples folder lists with a queue label (not the per-node templates)', () => {
    const jobs = queuedSamples(path.join(ROOT, 'dist', 'instant-cluster'));
    expect(jobs.map((j) => `${j.kind} ${j.metadata.namespace}/${j.metadata.name}`)).toEqual(['MPIJob default/nccl-all-reduce']);
  });

  it('a managed Kueue (the training example) runs on the twin as a pre-installed one does (twin-cluster.ts): the samples it queues are submitted in change mode', () => {
    const [training] = loadModels([TRAINING_FILE]);
    expect(training.description.installs.kueue).toBe('managed');
    const jobs = queuedSamples(path.join(ROOT, 'dist', 'training-cluster'));
    expect(jobs.map((j) => `${j.kind} ${j.metadata.namespace}/${j.metadata.name}`)).toEqual(['MPIJob default/nccl-all-reduce', 'PyTorchJob default/pytorch-ddp']);
  });

});
