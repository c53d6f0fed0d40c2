import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/cache/digests';
import { isExecutableFile } from '../../src/engines/packaged';
import { ARGOCD_MODULE, buildKey as keyOfBuild, CACHE_ENV, ControlPlaneBuildError, controlPlaneBinary, GO_ENV, goCommand, KUEUE_CACHE_ENV, kueueBinary, KWOK_MODULE, KWOK_STAGES, MPI_OPERATOR_MODULE, prebuiltLayout, requiredVersion, TWIN, TWIN_CACHE_ENV, TRAINING_OPERATOR_MODULE, TWIN_MODULE_DIR, twinBinary, UNUSED_ENTRY_MS } from '../../src/twin/binary';
import { CRD_SOURCE_FILES, crdSourceFileName } from '../../src/twin/chart-crds';

/**
 * The cache of the control plane, Kueue and twin binaries (binary.ts), with a stand-in for the go command: it answers
 * `go env` with a Go version of the test's own (a key of its own), "builds" a small script that answers `version`,
 * answers `go version -m` as for a Kueue build, `go list -m` with module folders of the test's own (the twin's
 * companion files), hands `go mod download` to the real go (the pinned CRD files), and counts its builds. The real builds are what npm test's first step does (prepare.ts); their
 * cold times are in bench/README.md.
 */

const work = mkdtempSync(path.join(tmpdir(), 'control-plane-binary-'));
const fakeGo = path.join(work, 'go');
/** The module folders `go list -m` answers: Argo CD's with its two wrappers, KWOK's with its stage files. */
const fakeModules = { [ARGOCD_MODULE]: path.join(work, 'mod', 'argo-cd'), [KWOK_MODULE]: path.join(work, 'mod', 'kwok') };
for (const f of ['hack/git-verify-wrapper.sh', 'hack/gpg-wrapper.sh']) {
  mkdirSync(path.dirname(path.join(fakeModules[ARGOCD_MODULE], f)), { recursive: true });
  writeFileSync(path.join(fakeModules[ARGOCD_MODULE], f), `#!/bin/sh
# ${f}
`);
}
for (const f of Object.values(KWOK_STAGES)) {
  mkdirSync(path.dirname(path.join(fakeModules[KWOK_MODULE], f)), { recursive: true });
  writeFileSync(path.join(fakeModules[KWOK_MODULE], f), `kind: Stage
metadata: {name: ${path.basename(f)}}
`);
}
writeFileSync(fakeGo, [
  '#!/bin/sh',
  'case "$1" in',
  '  env) echo "$FAKE_GOVERSION"; echo linux; echo amd64 ;;',
  // a module outside the build's graph (the CRD files chart-crds.ts pins): the real go fetches it, as the build does
  '  mod) exec "$REAL_GO" "$@" ;;',
  `  list) printf '${ARGOCD_MODULE}\t${fakeModules[ARGOCD_MODULE]}\n${KWOK_MODULE}\t${fakeModules[KWOK_MODULE]}\n' ;;`,
  '  version) printf \'%s: %s\\n\\tpath\\tsigs.k8s.io/kueue/cmd/kueue\\n\\tmod\\tsigs.k8s.io/kueue\\tv0.19.2\\th1:x=\\n\' "$3" "$FAKE_GOVERSION" ;;',
  '  build)',
  '    echo "build $6" >> "$FAKE_GO_LOG"',
  // held until the test lets it go (bounded: some 120 s), so that a second process surely finds the build under way
  '    n=0; while [ -n "$FAKE_GO_HOLD" ] && [ ! -e "$FAKE_GO_HOLD" ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done',
  '    if [ "$FAKE_GO_FAIL" = 1 ]; then echo "main.go:12:2: undefined: app.NewAPIServerCommand" >&2; exit 1; fi',
  '    if [ "$FAKE_GO_FAIL" = kueue ] && [ "$6" = sigs.k8s.io/kueue/cmd/kueue ]; then printf \'# sigs.k8s.io/kueue/pkg/cache\\ncache.go:7:2: undefined: x\\n\' >&2; exit 1; fi',
  '    printf \'#!/bin/sh\\necho go %s\\necho k8s.io/kubernetes v1.36.3\\n\' "$FAKE_GOVERSION" > "$5"',
  '    chmod +x "$5" ;;',
  'esac',
].join('\n'));
chmodSync(fakeGo, 0o755);

let serial = 0;
const saved = { ...process.env };
/** The go command of the machine, for what the stand-in hands over (`go mod download`). */
const realGo = goCommand();
let root: string;
let kueueRoot: string;
let twinRoot: string;
let log: string;

beforeEach(() => {
  serial += 1;
  root = path.join(work, `cache-${serial}`);
  kueueRoot = path.join(work, `kueue-cache-${serial}`);
  twinRoot = path.join(work, `twin-cache-${serial}`);
  log = path.join(work, `builds-${serial}.log`);
  Object.assign(process.env, { [GO_ENV]: fakeGo, [CACHE_ENV]: root, [KUEUE_CACHE_ENV]: kueueRoot, [TWIN_CACHE_ENV]: twinRoot, FAKE_GOVERSION: `go1.99.${serial}-test`, FAKE_GO_LOG: log, REAL_GO: realGo });
  delete process.env.FAKE_GO_FAIL;
  delete process.env.FAKE_GO_HOLD;
});
afterEach(() => {
  for (const k of [GO_ENV, CACHE_ENV, KUEUE_CACHE_ENV, TWIN_CACHE_ENV, 'FAKE_GOVERSION', 'FAKE_GO_LOG', 'FAKE_GO_FAIL', 'FAKE_GO_HOLD', 'REAL_GO']) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The package the twin's build names (binary.ts TWIN). */
const TWIN_TARGET = 'gpu-cluster-manifests/test/cluster/twin';

/** Builds of the control plane (`go build ... .`), or of what `target` names. */
const builds = (target = '.') => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter((l) => l === `build ${target}`).length : 0);

describe('the control plane binary, built once per machine into a cache keyed by version', () => {
  it('is built once, said while it builds, recorded, and reused', async () => {
    const lines: string[] = [];
    const first = await controlPlaneBinary({ progress: (l) => lines.push(l) });
    expect(first.built).toBe(true);
    expect(lines[0]).toMatch(/^building the Kubernetes control plane \(first run on this machine, a few minutes\): .* v1\.36\.3 and etcd v3\.6\.8 into /);
    expect(lines[1]).toMatch(/^built the control plane in \d+ s$/);
    expect(first.path).toBe(path.join(root, first.key, 'control-plane'));
    expect(first.key).toMatch(/^go1\.99\.\d+-test-linux-amd64-[0-9a-f]{16}$/);
    expect(first.versions['k8s.io/kubernetes']).toBe('v1.36.3');
    expect(JSON.parse(readFileSync(path.join(root, first.key, 'record.json'), 'utf8'))).toMatchObject({ key: first.key, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // nothing else is left in the cache folder: no lock, no temporary build
    expect(readdirSync(root)).toEqual([first.key]);
    expect(builds()).toBe(1);
  });

  it('two test processes at once build it once (the second waits on the lock, then takes the first one\'s)', async () => {
    // the first build is held until the other process says it waits for it (not a race on the machine's speed)
    const hold = path.join(work, 'go-hold');
    process.env.FAKE_GO_HOLD = hold;
    const prepare = () => new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'prepare.ts')], { env: process.env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
        if (/^waiting for another process to build/m.test(stderr)) writeFileSync(hold, '');
      });
      child.on('close', (code) => resolve({ code, stderr }));
    });
    const [a, b] = await Promise.all([prepare(), prepare()]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(builds()).toBe(1);
    expect(builds('sigs.k8s.io/kueue/cmd/kueue')).toBe(1);
    expect(builds(TWIN_TARGET)).toBe(1);
    const said = `${a.stderr}${b.stderr}`;
    expect(said.match(/^3 of the 3 binaries the twin runs to build, once per machine \(the control plane, Kueue and the Argo CD twin\): some [\d ]+ CPU seconds of Go/gm)).toHaveLength(2);
    expect(said.match(/^building the Kubernetes control plane/gm)).toHaveLength(1);
    expect(said.match(/^building Kueue/gm)).toHaveLength(1);
    expect(said.match(/^building the Argo CD twin/gm)).toHaveLength(1);
    expect(said).toMatch(/^waiting for another process to build the control plane/m);
  });

  it('prepare.ts builds Kueue and the twin only with a control plane; one that does not build is one line, and the run goes on', async () => {
    const prepare = () => spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'prepare.ts')], { env: process.env, encoding: 'utf8' });
    process.env.FAKE_GO_FAIL = 'kueue';
    const kueueFails = prepare();
    expect(kueueFails.status).toBe(0);
    expect(kueueFails.stderr).toMatch(/^cannot prepare the Kueue tests \(test\/cluster\/kueue\.test\.ts fails on it\): go build of Kueue \(src\/twin\/kueue\) failed \(exit 1\): cache\.go:7:2: undefined: x$/m);
    expect(kueueFails.stderr.trim().split('\n').filter((l) => l.startsWith('cannot'))).toHaveLength(1);
    expect([builds(), builds('sigs.k8s.io/kueue/cmd/kueue'), builds(TWIN_TARGET)]).toEqual([1, 1, 1]);

    // a twin whose companion files its module does not have: one line, and the run goes on
    process.env.FAKE_GOVERSION = `${process.env.FAKE_GOVERSION}-t`;
    delete process.env.FAKE_GO_FAIL;
    rmSync(path.join(fakeModules[ARGOCD_MODULE], 'hack', 'gpg-wrapper.sh'));
    try {
      const twinFails = prepare();
      expect(twinFails.status).toBe(0);
      expect(twinFails.stderr.trim().split('\n').filter((l) => l.startsWith('cannot'))).toEqual([
        expect.stringMatching(/^cannot prepare the Argo CD twin \(test\/cluster\/argocd-twin\.test\.ts fails on it\): the Argo CD twin: github\.com\/argoproj\/argo-cd\/v3 has no hack\/gpg-wrapper\.sh /),
      ]);
      expect(readdirSync(twinRoot).filter((n) => !n.endsWith('.lock') && !n.includes('.build-'))).toHaveLength(1); // the first key's entry only
    } finally {
      writeFileSync(path.join(fakeModules[ARGOCD_MODULE], 'hack', 'gpg-wrapper.sh'), '#!/bin/sh\n# hack/gpg-wrapper.sh\n');
    }

    process.env.FAKE_GOVERSION = `${process.env.FAKE_GOVERSION}-b`; // a new key: the control plane is built again
    process.env.FAKE_GO_FAIL = '1';
    const planeFails = prepare();
    expect(planeFails.status).toBe(1);
    expect(planeFails.stderr).toMatch(/^cannot prepare the cluster tests: go build of the control plane/m);
    // nothing of Kueue or the twin but the builds' total said first (the control plane's failure ends the run)
    expect(planeFails.stderr.split('\n').filter((l) => !/ binaries the twin runs to build/.test(l)).join('\n')).not.toMatch(/Kueue|the Argo CD twin/);
    expect(planeFails.stderr).toMatch(/^\d of the 3 binaries the twin runs to build/);
    expect([builds(), builds('sigs.k8s.io/kueue/cmd/kueue')]).toEqual([3, 2]);
  });

  it('Kueue is built the same way, from its own module (the tool of test/cluster/kueue/go.mod), into a cache of its own', async () => {
    const lines: string[] = [];
    const kueue = await kueueBinary({ progress: (l) => lines.push(l) });
    expect(kueue.built).toBe(true);
    expect(lines).toEqual([
      expect.stringMatching(/^building Kueue \(first run on this machine, a few minutes\): sigs\.k8s\.io\/kueue\/cmd\/kueue v0\.19\.2 into /),
      expect.stringMatching(/^built Kueue in \d+ s$/),
    ]);
    expect(kueue.path).toBe(path.join(kueueRoot, kueue.key, 'kueue'));
    expect(kueue.versions).toEqual({ 'go': process.env.FAKE_GOVERSION, 'sigs.k8s.io/kueue': 'v0.19.2' });
    const plane = await controlPlaneBinary();
    expect(plane.key).not.toBe(kueue.key);
    expect((await kueueBinary()).built).toBe(false);
    expect([builds(), builds('sigs.k8s.io/kueue/cmd/kueue')]).toEqual([1, 1]);
    expect(readdirSync(kueueRoot)).toEqual([kueue.key]);
  });

  it('the twin is built the same way, with its companion files (Argo CD\'s wrappers, KWOK\'s stages, the pinned CRD files) copied from its modules and verified', async () => {
    const lines: string[] = [];
    const twin = await twinBinary({ progress: (l) => lines.push(l) });
    expect(twin.built).toBe(true);
    expect(lines).toEqual([
      expect.stringMatching(/^building the Argo CD twin \(first run on this machine, some 20 minutes\): Argo CD v3\.5\.1, KWOK v0\.8\.0, kustomize v5\.8\.1, helm v4\.2\.1, the MPI Operator v0\.8\.2, the Training Operator v1\.9\.4 and Redis \(miniredis v2\.38\.0\) into /),
      expect.stringMatching(/^built the Argo CD twin in \d+ s$/),
    ]);
    expect(twin.path).toBe(path.join(twinRoot, twin.key, 'twin'));
    expect(Object.keys(twin.companions).sort()).toEqual(['git-verify-wrapper.sh', 'gpg-wrapper.sh', ...Object.values(KWOK_STAGES).map((f) => path.basename(f)), ...CRD_SOURCE_FILES.map(crdSourceFileName)].sort());
    for (const c of CRD_SOURCE_FILES) expect(sha256(readFileSync(twin.companions[crdSourceFileName(c)]))).toBe(c.sha256);
    expect(readFileSync(twin.companions['git-verify-wrapper.sh'], 'utf8')).toBe('#!/bin/sh\n# hack/git-verify-wrapper.sh\n');
    expect(isExecutableFile(twin.companions['git-verify-wrapper.sh'])).toBe(true);
    expect(isExecutableFile(twin.companions['pod-ready.yaml'])).toBe(false);
    expect((await twinBinary()).built).toBe(false);
    // a companion changed in the cache is a damaged entry: built again
    writeFileSync(twin.companions['pod-ready.yaml'], 'kind: Stage\n# edited\n');
    expect((await twinBinary()).built).toBe(false); // verified once per process: the same process takes its entry as it was
    const again = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', 'require(\'../../src/twin/binary\').twinBinary().then((b) => console.log(b.built))'], { cwd: __dirname, env: process.env, encoding: 'utf8' });
    expect(again.stdout.trim()).toBe('true');
    expect(builds(TWIN_TARGET)).toBe(2);
    expect(readFileSync(twin.companions['pod-ready.yaml'], 'utf8')).not.toMatch(/edited/);
  });

  it('the MPI and Training Operators are commands of the twin: their sources are part of the twin\'s key (every Go file of the module is), and the twin\'s record names their module versions', async () => {
    const goFiles = readdirSync(TWIN_MODULE_DIR).filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum');
    expect([...TWIN.sources].sort()).toEqual(goFiles.sort());
    expect(TWIN.sources).toContain('mpioperator.go');
    expect(TWIN.sources).toContain('trainingoperator.go');
    // the key hashes each source: the same module with the MPI Operator's command edited is another key
    const copy = path.join(work, `twin-module-${serial}`);
    mkdirSync(copy);
    for (const f of TWIN.sources) copyFileSync(path.join(TWIN_MODULE_DIR, f), path.join(copy, f));
    const key = keyOfBuild(fakeGo, { ...TWIN, moduleDir: copy });
    expect(key).toBe(keyOfBuild(fakeGo, TWIN));
    writeFileSync(path.join(copy, 'mpioperator.go'), `${readFileSync(path.join(copy, 'mpioperator.go'), 'utf8')}\n// edited\n`);
    expect(keyOfBuild(fakeGo, { ...TWIN, moduleDir: copy })).not.toBe(key);
    // what a prebuilt twin must be built from (rehearse --binaries): the MPI Operator's version of go.mod among them
    expect(prebuiltLayout().find((l) => l.startsWith('twin: '))).toContain(`${MPI_OPERATOR_MODULE} ${requiredVersion(MPI_OPERATOR_MODULE, TWIN_MODULE_DIR)}`);
    expect(prebuiltLayout().find((l) => l.startsWith('twin: '))).toContain(`${TRAINING_OPERATOR_MODULE} ${requiredVersion(TRAINING_OPERATOR_MODULE, TWIN_MODULE_DIR)}`);
  });

  it('a damaged binary is built again; a lock and a build of a process that is gone are taken over and removed', async () => {
    const first = await controlPlaneBinary();
    // a dead owner's lock of the key and its half-done build, as a killed run leaves them
    const dead = 2 ** 22 + 1;
    const owner = JSON.stringify({ pid: dead, host: (await import('node:os')).hostname() });
    writeFileSync(path.join(root, `${first.key}.lock`), owner);
    mkdirSync(path.join(root, `${first.key}.build-${dead}-0abc`));
    writeFileSync(path.join(root, `${first.key}.build-${dead}-0abc`, '.build-owner'), owner);
    writeFileSync(path.join(root, `${first.key}.lock.${dead}-0abc1234.tmp`), owner);
    truncateSync(first.path, 10);
    const again = await controlPlaneBinary();
    expect(again.built).toBe(true);
    expect(builds()).toBe(2);
    expect(readdirSync(root)).toEqual([first.key]);
  });

  it('a new build removes the entries of other keys no run used for a week; a use keeps an entry, and so does its lock', async () => {
    const first = await controlPlaneBinary();
    const aged = (dir: string, ms: number) => {
      mkdirSync(path.join(root, dir), { recursive: true });
      writeFileSync(path.join(root, dir, 'record.json'), JSON.stringify({ key: dir, sha256: '0'.repeat(64), size: 1, versions: {}, seconds: 1 }));
      const at = new Date(Date.now() - ms);
      utimesSync(path.join(root, dir, 'record.json'), at, at);
    };
    const day = 24 * 60 * 60 * 1000;
    aged('go1.98.0-linux-amd64-old', UNUSED_ENTRY_MS + day);
    aged('go1.98.0-linux-amd64-recent', UNUSED_ENTRY_MS - day);
    aged('go1.98.0-linux-amd64-locked', UNUSED_ENTRY_MS + day);
    writeFileSync(path.join(root, 'go1.98.0-linux-amd64-locked.lock'), JSON.stringify({ pid: process.pid, host: (await import('node:os')).hostname() }));
    // this run's own entry, last used long ago, is used now: it stays however old its build is
    const record = path.join(path.dirname(first.path), 'record.json');
    const longAgo = new Date(Date.now() - UNUSED_ENTRY_MS - day);
    utimesSync(record, longAgo, longAgo);
    expect((await controlPlaneBinary()).built).toBe(false);
    expect(Date.now() - statSync(record).mtimeMs).toBeLessThan(day);
    // a new key's build (another Go) evicts what went unused
    process.env.FAKE_GOVERSION = `go1.99.${serial}-next`;
    const next = await controlPlaneBinary();
    expect(next.built).toBe(true);
    expect(readdirSync(root).sort()).toEqual([first.key, 'go1.98.0-linux-amd64-locked', 'go1.98.0-linux-amd64-locked.lock', 'go1.98.0-linux-amd64-recent', next.key].sort());
  });

  it('touches only what it made: a user\'s files in its folder survive every build and eviction, and break none', async () => {
    // the cache folder named by its variable is a user's folder: what it holds looks like the cache's, and is not
    mkdirSync(root, { recursive: true });
    const dead = 2 ** 22 + 3;
    const old = new Date(Date.now() - UNUSED_ENTRY_MS - 24 * 60 * 60 * 1000);
    const users = {
      'notes.lock': 'my own lock file, no JSON',
      [`report.build-${dead}-abcd`]: undefined, // a folder of the user's named like a dead build
      'photos': { 'record.json': '{"album": 1}' }, // a folder with an old record.json of something else
      'plain-file': 'a plain file',
      'lib.bin': 'x',
    };
    for (const [name, content] of Object.entries(users)) {
      const p = path.join(root, name);
      if (content === undefined) {mkdirSync(p);} else if (typeof content === 'string') {writeFileSync(p, content);} else {
        mkdirSync(p);
        for (const [f, text] of Object.entries(content)) writeFileSync(path.join(p, f), text);
        utimesSync(path.join(p, 'record.json'), old, old);
      }
      utimesSync(p, old, old);
    }
    const first = await controlPlaneBinary();
    expect(first.built).toBe(true);
    // a second key's build runs the eviction and the removal of dead builds: the user's files stay, the build works
    process.env.FAKE_GOVERSION = `go1.99.${serial}-second`;
    const second = await controlPlaneBinary();
    expect(second.built).toBe(true);
    expect(readdirSync(root).sort()).toEqual([...Object.keys(users), first.key, second.key].sort());
    expect(readFileSync(path.join(root, 'notes.lock'), 'utf8')).toBe('my own lock file, no JSON');
    // a file of the user's named like the lock of a key the cache builds is said, never removed
    process.env.FAKE_GOVERSION = `go1.99.${serial}-third`;
    const { buildKey } = await import('../../src/twin/binary');
    writeFileSync(path.join(root, `${buildKey(fakeGo)}.lock`), 'not ours');
    utimesSync(path.join(root, `${buildKey(fakeGo)}.lock`), old, old);
    await expect(controlPlaneBinary()).rejects.toThrow(/\.lock is in the way: no lock of this cache \(it names no owner\); remove it/);
    expect(readFileSync(path.join(root, `${buildKey(fakeGo)}.lock`), 'utf8')).toBe('not ours');
    // and a folder of the user's named like an entry of that key
    rmSync(path.join(root, `${buildKey(fakeGo)}.lock`));
    mkdirSync(path.join(root, buildKey(fakeGo)));
    writeFileSync(path.join(root, buildKey(fakeGo), 'mine.txt'), 'keep');
    await expect(controlPlaneBinary()).rejects.toThrow(/is in the way: not an entry of this cache \(no record of its key\)/);
    expect(readFileSync(path.join(root, buildKey(fakeGo), 'mine.txt'), 'utf8')).toBe('keep');
  });

  it('fails closed, in one line: no go command, a build that fails', async () => {
    process.env[GO_ENV] = path.join(work, 'no-such-go');
    await expect(controlPlaneBinary()).rejects.toThrow(new ControlPlaneBuildError(`${GO_ENV}=${path.join(work, 'no-such-go')} is not an executable go command`));
    delete process.env[GO_ENV];
    const pathWas = process.env.PATH;
    process.env.PATH = work.replace(/$/, '-empty');
    try {
      // (the machine's /usr/local/go/bin/go is the last resort: only where it is missing does this say so)
      if (!existsSync('/usr/local/go/bin/go')) {
        await expect(controlPlaneBinary()).rejects.toThrow(/^the cluster tests build the Kubernetes control plane from Go modules \(test\/cluster\/README\.md\), and there is no go command: install Go 1\.26\.0 or later/);
      }
    } finally {
      process.env.PATH = pathWas;
    }
    process.env[GO_ENV] = fakeGo;
    process.env.FAKE_GO_FAIL = '1';
    const e = await controlPlaneBinary().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ControlPlaneBuildError);
    expect((e as Error).message).toMatch(/^go build of the control plane \(src\/twin\) failed \(exit 1\):\nmain\.go:12:2: undefined: app\.NewAPIServerCommand$/);
    // nothing half-built is left to be taken for a build
    expect(readdirSync(root)).toEqual([]);
  });
});
