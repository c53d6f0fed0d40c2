import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, copyFileSync, createReadStream, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { availableParallelism, homedir, hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { CRD_SOURCE_FILES, crdSourceFileName } from './chart-crds';
import { sleep } from './poll';
import { verifyPackagedAsset } from '../cache/asset-sums';
import { sha256 } from '../cache/digests';
import { DEV_CHECKOUT, PACKAGE_ASSETS, PACKAGE_ROOT } from '../paths';

/**
 * The binaries of the cluster tests, each built from a Go module of its own in this folder, once per machine, into a
 * cache folder outside the repository, keyed by what decides the build, verified on every use and shared by every
 * checkout and test process of this user:
 *
 * - the control plane as one binary (test/cluster/main.go: kube-apiserver, kube-controller-manager, kube-scheduler and
 *   etcd from the pinned Go modules of test/cluster/go.mod): controlPlaneBinary;
 * - Kueue's manager (`sigs.k8s.io/kueue/cmd/kueue`, the `tool` of test/cluster/kueue/go.mod, at the release this
 *   toolkit pins, with the dependency graph of that release): kueueBinary;
 * - the Argo CD twin as one binary (test/cluster/twin/main.go: Argo CD's commands, KWOK, kustomize, helm and a Redis
 *   server, from the pinned Go modules of test/cluster/twin/go.mod), with the files of its modules it runs beside it
 *   (Argo CD's git and gpg wrappers, KWOK's stage files): twinBinary.
 *
 * They share Go's module and build caches. Imports nothing but Node's own modules: the test task runs it before
 * anything else (test/cluster/prepare.ts).
 */

/**
 * The control plane's Go module: go.mod, go.sum and the sources of the binary. In this checkout src/twin/; the package
 * ships the Go module files (never a binary) as an asset, copied with their checksums at pack time
 * (projenrc/package-assets.cjs, lib/assets/twin/) and verified before a build reads them (moduleFiles).
 */
export const MODULE_DIR = DEV_CHECKOUT ? path.join(PACKAGE_ROOT, 'src', 'twin') : path.join(PACKAGE_ASSETS, 'twin');
/** Kueue's Go module: go.mod (its `tool` line names the command built) and go.sum, no source of ours. */
export const KUEUE_MODULE_DIR = path.join(MODULE_DIR, 'kueue');
/** The twin's Go module: go.mod, go.sum and the sources of the binary (the dispatch of the upstream commands). */
export const TWIN_MODULE_DIR = path.join(MODULE_DIR, 'twin');

/** Names the control plane's cache folder (default: `$XDG_CACHE_HOME/gpu-cluster-manifests/control-plane`, else `~/.cache/...`). */
export const CACHE_ENV = 'GPU_CLUSTER_MANIFESTS_CONTROL_PLANE_CACHE';
/** Names Kueue's cache folder (default: `$XDG_CACHE_HOME/gpu-cluster-manifests/kueue`, else `~/.cache/...`). */
export const KUEUE_CACHE_ENV = 'GPU_CLUSTER_MANIFESTS_KUEUE_CACHE';
/** Names the twin's cache folder (default: `$XDG_CACHE_HOME/gpu-cluster-manifests/twin`, else `~/.cache/...`). */
export const TWIN_CACHE_ENV = 'GPU_CLUSTER_MANIFESTS_TWIN_CACHE';

/** The go command to build with (default: `go` on PATH, else /usr/local/go/bin/go). */
export const GO_ENV = 'GPU_CLUSTER_MANIFESTS_GO';

const BUILD_ENV = { CGO_ENABLED: '0', GOFLAGS: '-mod=readonly -buildvcs=false', GOWORK: 'off' };

/** A cold build on CI's 2 cores takes some 15 to 20 minutes (bench/README.md); this bounds a hung one. */
const BUILD_TIMEOUT_MS = 60 * 60 * 1000;

const RECORD = 'record.json';

/** What is built, from which module, into which cache: everything of a build that differs between the binaries. */
export interface GoBinarySpec {
  /** In messages: `the control plane`, `Kueue`. */
  readonly what: string;
  /** The module folder, as messages name it (`test/cluster`). */
  readonly folder: string;
  readonly moduleDir: string;
  /** The files of the module that decide the binary (besides the Go version and platform). */
  readonly sources: readonly string[];
  readonly binary: string;
  /** The cache folder's name under gpu-cluster-manifests/, and the variable that names another. */
  readonly cache: string;
  readonly cacheEnv: string;
  /** `go build` and its flags up to `-o`: part of the key. */
  readonly args: () => readonly string[];
  /** The package built (`.`, or the module's tool). */
  readonly target: () => string;
  /** The progress line said before a build, into `dir`. */
  readonly building: (dir: string) => string;
  /** Module versions the built binary reports. */
  readonly versions: (bin: string, go: string) => Record<string, string>;
  /**
   * Files of the module's dependencies the binary runs beside it (scripts it executes, configuration it reads), copied
   * from the module cache into the entry and verified with it: the name in the entry, the module and the path in it.
   */
  readonly companions?: readonly Companion[];
  /**
   * What a cold build costs, in CPU seconds (user + system; modules fetched, an empty build cache), as bench/README.md
   * measured it: what the line said before the twin's builds adds up (buildTimeLine). @default unknown (not counted)
   */
  readonly coldCpuSeconds?: number;
}

/** A file of a dependency module kept beside a binary (GoBinarySpec.companions). */
export interface Companion {
  readonly name: string;
  readonly module: string;
  readonly file: string;
  /** Made executable in the entry. */
  readonly executable?: boolean;
  /**
   * A module outside the build's graph, at this version: the file is fetched with `go mod download` and must match the
   * module's go.sum hash and its own SHA-256 (a module of the graph is taken as the build resolved it).
   */
  readonly pinned?: PinnedModuleFile;
}

/** A file of a Go module version, pinned by content. */
export interface PinnedModuleFile {
  readonly version: string;
  /** The module zip's hash as go.sum writes it (`h1:...`). */
  readonly sum: string;
  /** The file's SHA-256 (hex). */
  readonly sha256: string;
}

export interface GoBinary {
  /** The executable. */
  readonly path: string;
  /** The cache key (hex): go.mod, go.sum, the sources, the Go version, GOOS/GOARCH and the build flags. */
  readonly key: string;
  /** Module versions the binary was built from, as it reports them (`go` and the pinned modules). */
  readonly versions: Readonly<Record<string, string>>;
  /** True when this call built it. */
  readonly built: boolean;
  /** The companion files beside it (GoBinarySpec.companions), by name: their paths in the entry. */
  readonly companions: Readonly<Record<string, string>>;
}

/** The control plane: `<path> etcd|kube-apiserver|kube-controller-manager|kube-scheduler|version [flags]`. */
export type ControlPlaneBinary = GoBinary;

interface BuildRecord {
  readonly key: string;
  readonly sha256: string;
  readonly size: number;
  readonly versions: Record<string, string>;
  readonly seconds: number;
  /** The companion files' SHA-256, by name. */
  readonly companions?: Record<string, string>;
}

/** Why the control plane cannot be had: one line, the first thing the suite prints. */
export class ControlPlaneBuildError extends Error {}

/** The cache folder of every key of a binary (default: the control plane's). */
export function cacheRoot(spec: GoBinarySpec = CONTROL_PLANE): string {
  const given = process.env[spec.cacheEnv];
  if (given) return path.resolve(given);
  return path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'gpu-cluster-manifests', spec.cache);
}

function isExecutable(p: string): boolean {
  try {

    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The go command, or a ControlPlaneBuildError that says what to install. */
export function goCommand(): string {
  const given = process.env[GO_ENV];
  if (given) {
    if (isExecutable(given)) return given;
    throw new ControlPlaneBuildError(`${GO_ENV}=${given} is not an executable go command`);
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, 'go'))) return path.join(dir, 'go');
  }
  if (isExecutable('/usr/local/go/bin/go')) return '/usr/local/go/bin/go';
  throw new ControlPlaneBuildError(
    'the cluster tests build the Kubernetes control plane from Go modules (test/cluster/README.md), and there is no go command: '
    + `install Go ${requiredGo()} or later (on PATH or /usr/local/go/bin), or name it with ${GO_ENV}`);
}

/** The `go` line of go.mod: the oldest Go that builds the module. */
function requiredGo(): string {
  return /^go (\S+)$/m.exec(readFileSync(path.join(MODULE_DIR, 'go.mod'), 'utf8'))?.[1] ?? '?';
}

/** A module's version as go.mod (of the control plane's module, or of `moduleDir`) requires it (replaced staging modules aside). */
export function requiredVersion(module: string, moduleDir = MODULE_DIR): string | undefined {
  const text = readFileSync(path.join(moduleDir, 'go.mod'), 'utf8');
  return new RegExp(`^\\s+${module.replace(/[.]/g, '\\.')} (v\\S+)`, 'm').exec(text)?.[1];
}

/** The command of a module's `tool` line (go.mod): what its build compiles. */
function toolOf(moduleDir: string): string {
  const tool = /^tool (\S+)$/m.exec(readFileSync(path.join(moduleDir, 'go.mod'), 'utf8'))?.[1];
  if (!tool) throw new ControlPlaneBuildError(`${path.join(moduleDir, 'go.mod')} names no tool to build`);
  return tool;
}

/** The environment of every go command: the build's settings on top of this process's. */
function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, ...BUILD_ENV };
}

/** `go env GOVERSION GOOS GOARCH`, as the build would see them. */
function goFacts(go: string, moduleDir: string): { version: string; os: string; arch: string } {
  const r = spawnSync(go, ['env', 'GOVERSION', 'GOOS', 'GOARCH'], { cwd: moduleDir, env: goEnv(), encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) {
    const why = (r.error?.message ?? r.stderr ?? '').trim().split('\n')[0];
    throw new ControlPlaneBuildError(`${go} env failed: ${why || `exit ${r.status}`}`);
  }
  const [version, os, arch] = r.stdout.trim().split('\n');
  return { version, os, arch };
}

/**
 * The cache key of the binary this machine's Go builds from a module (default: the control plane's). The target is
 * not hashed: `.` for the control plane, and the tool of go.mod (hashed with it) for Kueue.
 */
export function buildKey(go: string, spec: GoBinarySpec = CONTROL_PLANE): string {
  verifyModule(spec);
  const facts = goFacts(go, spec.moduleDir);
  const h = createHash('sha256');
  for (const f of spec.sources) h.update(`${f}\0`).update(readFileSync(path.join(spec.moduleDir, f))).update('\0');
  const companions = spec.companions ?? [];
  h.update(JSON.stringify({ go: facts.version, os: facts.os, arch: facts.arch, args: spec.args(), env: BUILD_ENV, companions }));
  return `${facts.version}-${facts.os}-${facts.arch}-${h.digest('hex').slice(0, 16)}`;
}

/**
 * In an installed package, every file of a module's folder (what go build reads: each file there, the folders below
 * are modules of their own) is one the package shipped, as shipped (its checksum): a file edited or added inside the
 * installation is a damaged installation, said in one line, and nothing is built from it. A no-op in this checkout.
 */
function verifyModule(spec: GoBinarySpec): void {
  if (DEV_CHECKOUT) return;
  for (const e of readdirSync(spec.moduleDir, { withFileTypes: true })) if (!e.isDirectory()) verifyPackagedAsset(path.join(spec.moduleDir, e.name));
  for (const f of spec.sources) verifyPackagedAsset(path.join(spec.moduleDir, f));
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/** A small regular file's JSON (never a FIFO to wait on, a device or a folder), or undefined. */
function readSmallJson(file: string): unknown {
  try {
    const st = lstatSync(file, { throwIfNoEntry: false });
    return st?.isFile() && st.size <= 64 * 1024 ? JSON.parse(readFileSync(file, 'utf8')) as unknown : undefined;
  } catch {
    return undefined;
  }
}

function readRecord(dir: string): BuildRecord | undefined {
  const record = readSmallJson(path.join(dir, RECORD)) as BuildRecord | undefined;
  return typeof record === 'object' && record !== null && typeof record.key === 'string' && typeof record.sha256 === 'string' ? record : undefined;
}

/*
 * What the cache touches is only what it made, whatever else its folder holds (the folder its variable names may be a
 * user's): an entry is a folder (never a link) whose record names its key; a build in progress is a folder
 * `<key>.build-<pid>-<hex>` whose owner file names that process; a lock is a file of JSON naming its owner (written
 * whole: a temporary file linked into place). Anything else (a plain file, a folder of the user's, a file of another
 * tool named *.lock) is left alone and never breaks a build.
 */

/** The file in a build folder that names the process building there. */
const BUILD_OWNER = '.build-owner';

/** Whether `<root>/<name>` is an entry this cache made: a folder whose record names the key `name`. */
function ownEntry(root: string, name: string): boolean {
  return lstatSync(path.join(root, name), { throwIfNoEntry: false })?.isDirectory() === true && readRecord(path.join(root, name))?.key === name;
}

/** The owner a lock file or a build's owner file names, when it is one this cache wrote. */
function ownerOf(file: string): LockOwner | undefined {
  const owner = readSmallJson(file) as Partial<LockOwner> | undefined;
  return typeof owner === 'object' && owner !== null && Number.isInteger(owner.pid) && typeof owner.host === 'string' ? owner as LockOwner : undefined;
}

/**
 * Verified in this process already (a binary of 100 MB is hashed once per process, not per test file), with its
 * size and modification time then: a file changed since is verified again.
 */
const verified = new Map<string, { binary: GoBinary; size: number; mtimeMs: number }>();

function remember(b: GoBinary): GoBinary {
  const st = statSync(b.path);
  verified.set(b.key, { binary: b, size: st.size, mtimeMs: st.mtimeMs });
  return b;
}

function remembered(key: string): GoBinary | undefined {
  const known = verified.get(key);
  if (!known) return undefined;
  const st = statSync(known.binary.path, { throwIfNoEntry: false });
  return st && st.size === known.size && st.mtimeMs === known.mtimeMs ? { ...known.binary, built: false } : undefined;
}

/** The record of the entry `dir` of `key` when its binary is there at the size it records (the SHA-256 not read). */
function recordedEntry(spec: GoBinarySpec, dir: string, key: string): BuildRecord | undefined {
  const bin = path.join(dir, spec.binary);
  const record = readRecord(dir);
  return record && record.key === key && isExecutable(bin) && statSync(bin).size === record.size ? record : undefined;
}

/** The entry of `dir` when it is complete and its binary is what was built (size and SHA-256 of its record). */
async function verifiedEntry(spec: GoBinarySpec, dir: string, key: string): Promise<GoBinary | undefined> {
  const bin = path.join(dir, spec.binary);
  const record = recordedEntry(spec, dir, key);
  if (!record) return undefined;
  if (await sha256File(bin) !== record.sha256) return undefined;
  const companions: Record<string, string> = {};
  for (const c of spec.companions ?? []) {
    const file = path.join(dir, c.name);
    if (!existsSync(file) || record.companions?.[c.name] !== await sha256File(file)) return undefined;
    companions[c.name] = file;
  }
  return { path: bin, key, versions: record.versions, built: false, companions };
}

/** Start time of a process (Linux /proc/<pid>/stat), to tell a reused pid from the lock's owner. */
function procStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface LockOwner {
  readonly pid: number;
  readonly host: string;
  readonly start?: string;
}

/**
 * True when the lock's (or build's) owner is certainly gone: a process of this host that no longer runs (or whose pid
 * was reused). A file that names no owner is not the cache's: never judged gone, never removed.
 */
function ownerGone(file: string): boolean {
  const owner = ownerOf(file);
  if (!owner || owner.host !== hostname()) return false;
  if (!alive(owner.pid)) return true;
  return owner.start !== undefined && procStart(owner.pid) !== undefined && procStart(owner.pid) !== owner.start;
}


/**
 * Holds `<root>/<key>.lock` while `fn` runs: one build per key at a time on this machine, whatever the number of
 * test processes; a lock whose owner is gone (a crashed run) is taken over.
 */
async function withLock<T>(file: string, waiting: () => void, fn: () => Promise<T>): Promise<T> {
  const me: LockOwner = { pid: process.pid, host: hostname(), start: procStart(process.pid) };
  const deadline = Date.now() + BUILD_TIMEOUT_MS;
  let said = false;
  for (;;) {
    // written whole, then linked into place: a lock file is never seen half-written
    const tmp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(tmp, JSON.stringify(me));
    try {
      linkSync(tmp, file);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      rmSync(tmp, { force: true });
    }
    if (ownerGone(file)) {
      rmSync(file, { force: true });
      continue;
    }
    // a file of that name that names no owner (after a minute: a writer of an older version may be between create and write)
    const st = lstatSync(file, { throwIfNoEntry: false });
    if (st && !ownerOf(file) && (!st.isFile() || Date.now() - st.mtimeMs > 60_000)) {
      throw new ControlPlaneBuildError(`${file} is in the way: no lock of this cache (it names no owner); remove it, or name another cache folder`);
    }
    if (Date.now() > deadline) throw new ControlPlaneBuildError(`another process has held ${file} for over ${BUILD_TIMEOUT_MS / 60_000} minutes`);
    if (!said) waiting();
    said = true;
    await sleep(1000);
  }
  try {
    return await fn();
  } finally {
    try {
      if ((JSON.parse(readFileSync(file, 'utf8')) as LockOwner).pid === process.pid) rmSync(file, { force: true });
    } catch {
      // gone already
    }
  }
}

/** The last lines of a build's output, for its error. */
function tail(text: string, lines = 20): string {
  return text.trim().split('\n').slice(-lines).join('\n');
}

/** Runs the build into `out`; rejects with the tail of go's output. */
function runBuild(spec: GoBinarySpec, go: string, out: string): Promise<void> {
  return new Promise((resolve, reject) => {
    // in this process's group: a Ctrl-C of the test run ends the build with it
    const child = spawn(go, [...spec.args(), out, spec.target()], { cwd: spec.moduleDir, env: goEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (c: Buffer) => {
      output = (output + c.toString()).slice(-64 * 1024);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const killBuild = () => {
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      killBuild();
      reject(new ControlPlaneBuildError(`go build of ${spec.what} did not finish within ${BUILD_TIMEOUT_MS / 60_000} minutes`));
    }, BUILD_TIMEOUT_MS);
    // a test run that ends (Ctrl-C, a crash) ends its build too
    process.once('exit', killBuild);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new ControlPlaneBuildError(`${go} build: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      process.removeListener('exit', killBuild);
      if (code === 0) resolve();
      else reject(new ControlPlaneBuildError(`go build of ${spec.what} (${spec.folder}) failed (${signal ?? `exit ${code}`}):\n${tail(output)}`));
    });
  });
}

/** The versions a built multicall binary of ours reports (`<bin> version`: the control plane, the twin). */
function reportedVersions(bin: string): Record<string, string> {
  const r = spawnSync(bin, ['version'], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new ControlPlaneBuildError(`the built ${path.basename(bin)} does not run: ${(r.error?.message ?? r.stderr ?? '').trim().split('\n')[0] || `exit ${r.status}`}`);
  return Object.fromEntries(r.stdout.trim().split('\n').map((l) => l.split(' ') as [string, string]));
}

/** The modules of a Go binary's build information (`go version -m`) that name what it is: Go, and `modules`. */
export function buildInfoVersions(go: string, bin: string, modules: readonly string[]): Record<string, string> {
  const r = spawnSync(go, ['version', '-m', bin], { env: goEnv(), encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new ControlPlaneBuildError(`go version -m ${bin}: ${(r.error?.message ?? r.stderr ?? '').trim().split('\n')[0] || `exit ${r.status}`}`);
  const out: Record<string, string> = {};
  const head = /^\S+: (go\S+)$/m.exec(r.stdout);
  if (head) out.go = head[1];
  for (const line of r.stdout.split('\n')) {
    const [kind, module, version] = line.trim().split('\t');
    // `mod`: the module of the command built (Kueue's, for the tool of a go.mod), `dep`: its dependencies
    if ((kind === 'mod' || kind === 'dep' || kind === '=>') && modules.includes(module)) out[module] = version;
  }
  return out;
}

/**
 * The release the control plane reports (`/version`), stamped in as Kubernetes' own build does (hack/lib/version.sh):
 * a plain `go build` reports `v0.0.0-master+$Format:%H$`, which clients that read the server's version refuse (Kueue
 * exits: "could not parse pre-release/metadata"). With a warm build cache only the link differs.
 */
function kubernetesVersionFlags(): string {
  const version = requiredVersion('k8s.io/kubernetes') ?? '';
  const [major, minor] = version.replace(/^v/, '').split('.');
  const pkg = 'k8s.io/component-base/version';
  return [`${pkg}.gitVersion=${version}`, `${pkg}.gitMajor=${major}`, `${pkg}.gitMinor=${minor}`, `${pkg}.gitTreeState=clean`].map((x) => `-X ${x}`).join(' ');
}

/** The control plane (test/cluster/main.go). */
const CONTROL_PLANE: GoBinarySpec = {
  what: 'the control plane',
  coldCpuSeconds: 1_120, // bench/README.md: the cold builds of 2026-12-07, its share of their CPU by wall time
  folder: 'src/twin',
  moduleDir: MODULE_DIR,
  sources: ['go.mod', 'go.sum', 'main.go', 'version.go'],
  binary: 'control-plane',
  cache: 'control-plane',
  cacheEnv: CACHE_ENV,
  args: () => ['build', '-trimpath', `-ldflags=-s -w ${kubernetesVersionFlags()}`, '-o'],
  target: () => '.',
  building: (dir) => `building the Kubernetes control plane (first run on this machine, a few minutes): kube-apiserver, kube-controller-manager, kube-scheduler ${requiredVersion('k8s.io/kubernetes')} and etcd ${requiredVersion('go.etcd.io/etcd/server/v3')} into ${dir}`,
  versions: (bin) => reportedVersions(bin),
};

/** The Kueue module whose command is built. */
export const KUEUE_MODULE = 'sigs.k8s.io/kueue';

/**
 * Kueue's manager, `go build` of the tool of test/cluster/kueue/go.mod with the release's version stamped in (as
 * Kueue's Makefile does: its log and user agent name it).
 */
const KUEUE: GoBinarySpec = {
  what: 'Kueue',
  coldCpuSeconds: 770, // bench/README.md: the cold builds of 2026-12-07, its share of their CPU by wall time (230 was a warm module cache)
  folder: 'src/twin/kueue',
  moduleDir: KUEUE_MODULE_DIR,
  sources: ['go.mod', 'go.sum'],
  binary: 'kueue',
  cache: 'kueue',
  cacheEnv: KUEUE_CACHE_ENV,
  args: () => ['build', '-trimpath', `-ldflags=-s -w -X ${KUEUE_MODULE}/pkg/version.GitVersion=${requiredVersion(KUEUE_MODULE, KUEUE_MODULE_DIR)}`, '-o'],
  target: () => toolOf(KUEUE_MODULE_DIR),
  building: (dir) => `building Kueue (first run on this machine, a few minutes): ${toolOf(KUEUE_MODULE_DIR)} ${requiredVersion(KUEUE_MODULE, KUEUE_MODULE_DIR)} into ${dir}`,
  versions: (bin, go) => buildInfoVersions(go, bin, [KUEUE_MODULE, 'k8s.io/client-go', 'sigs.k8s.io/controller-runtime']),
};

/** The Argo CD module of the twin. */
export const ARGOCD_MODULE = 'github.com/argoproj/argo-cd/v3';
/** KWOK's module: its stage files are companions of the twin. */
export const KWOK_MODULE = 'sigs.k8s.io/kwok';
/** The MPI Operator's module: its command is the twin's `mpi-operator` (mpi-operator.ts). */
export const MPI_OPERATOR_MODULE = 'github.com/kubeflow/mpi-operator';
/** The Training Operator's module: its command is the twin's `training-operator` (training-operator.ts). */
export const TRAINING_OPERATOR_MODULE = 'github.com/kubeflow/training-operator';

/**
 * What Argo CD's Makefile stamps into a release (common.gitCommit, common.buildDate) for the release the twin pins: the
 * commit of the tag, and the tag's time as the module proxy serves it (`.info` of v3.5.1). The version, the tag and
 * kubectl's version come from go.mod.
 */
const ARGOCD_RELEASE = { commit: '109ca7ca71139e514114499d294a492e7910a965', date: '2026-08-12T11:24:40Z' };

/**
 * The release stamps of the twin's commands, as each project's own build sets them: Argo CD's Makefile (its version
 * without the `v`, the tag, commit, build date, kubectl's version: the client-go of its graph), kustomize's
 * (provenance: Argo CD reads `kustomize version` to know what the engine can do) and helm's Makefile.
 */
function twinVersionFlags(): string {
  const argo = requiredVersion(ARGOCD_MODULE, TWIN_MODULE_DIR) ?? '';
  const common = `${ARGOCD_MODULE}/common`;
  return [
    `${common}.version=${argo.replace(/^v/, '')}`, `${common}.buildDate=${ARGOCD_RELEASE.date}`, `${common}.gitCommit=${ARGOCD_RELEASE.commit}`,
    `${common}.gitTreeState=clean`, `${common}.gitTag=${argo}`, `${common}.kubectlVersion=${requiredVersion('k8s.io/client-go', TWIN_MODULE_DIR)}`,
    `sigs.k8s.io/kustomize/api/provenance.version=kustomize/${requiredVersion('sigs.k8s.io/kustomize/kustomize/v5', TWIN_MODULE_DIR)}`,
    `helm.sh/helm/v4/internal/version.version=${requiredVersion('helm.sh/helm/v4', TWIN_MODULE_DIR)}`, 'helm.sh/helm/v4/internal/version.gitTreeState=clean',
  ].map((x) => `-X ${x}`).join(' ');
}

/** KWOK's stage files of the release (kustomize/stage of its module), beside the twin: what the tests give KWOK. */
export const KWOK_STAGES = {
  nodeInitialize: 'kustomize/stage/node/fast/node-initialize.yaml',
  nodeHeartbeatWithLease: 'kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  nodeNotReady: 'kustomize/stage/node/chaos/node-not-ready.yaml',
  podReady: 'kustomize/stage/pod/fast/pod-ready.yaml',
  podComplete: 'kustomize/stage/pod/fast/pod-complete.yaml',
  podDelete: 'kustomize/stage/pod/fast/pod-delete.yaml',
} as const;

/**
 * The twin (test/cluster/twin/main.go): Argo CD's application controller, repo server, ApplicationSet controller, API
 * server and CLI, kubectl, KWOK, kustomize, helm, the MPI Operator, the Training Operator and Redis in one binary, each run by name. Beside it: the two scripts of Argo
 * CD's module that its repo server executes from PATH (the image carries them; v3.5.1 always calls the commit
 * signature check, which execs git-verify-wrapper.sh), and KWOK's stage files.
 */
export const TWIN: GoBinarySpec = {
  what: 'the Argo CD twin',
  coldCpuSeconds: 1_220, // bench/README.md: some 1 220 s for the one graph
  folder: 'src/twin/twin',
  moduleDir: TWIN_MODULE_DIR,
  sources: ['go.mod', 'go.sum', 'main.go', 'argocd.go', 'kubectl.go', 'tools.go', 'redis.go', 'mpioperator.go', 'trainingoperator.go', 'version.go'],
  binary: 'twin',
  cache: 'twin',
  cacheEnv: TWIN_CACHE_ENV,
  args: () => ['build', '-trimpath', `-ldflags=-s -w ${twinVersionFlags()}`, '-o'],
  target: () => 'gpu-cluster-manifests/test/cluster/twin',
  building: (dir) => `building the Argo CD twin (first run on this machine, some 20 minutes): Argo CD ${requiredVersion(ARGOCD_MODULE, TWIN_MODULE_DIR)}, KWOK ${requiredVersion(KWOK_MODULE, TWIN_MODULE_DIR)}, kustomize ${requiredVersion('sigs.k8s.io/kustomize/kustomize/v5', TWIN_MODULE_DIR)}, helm ${requiredVersion('helm.sh/helm/v4', TWIN_MODULE_DIR)}, the MPI Operator ${requiredVersion(MPI_OPERATOR_MODULE, TWIN_MODULE_DIR)}, the Training Operator ${requiredVersion(TRAINING_OPERATOR_MODULE, TWIN_MODULE_DIR)} and Redis (miniredis ${requiredVersion('github.com/alicebob/miniredis/v2', TWIN_MODULE_DIR)}) into ${dir}`,
  versions: (bin) => reportedVersions(bin),
  companions: [
    { name: 'git-verify-wrapper.sh', module: ARGOCD_MODULE, file: 'hack/git-verify-wrapper.sh', executable: true },
    { name: 'gpg-wrapper.sh', module: ARGOCD_MODULE, file: 'hack/gpg-wrapper.sh', executable: true },
    ...Object.entries(KWOK_STAGES).map(([, file]) => ({ name: path.basename(file), module: KWOK_MODULE, file })),
    // the CRDs the chart mirror puts into the packages of charts that carry them (chart-crds.ts): the twin runs no go
    // (the pins alone: the key of the build hashes the companions, and a source's evidence is prose)
    ...CRD_SOURCE_FILES.map((c) => ({
      name: crdSourceFileName(c), module: c.module, file: c.file, pinned: { version: c.version, sum: c.sum, sha256: c.sha256 },
    })),
  ],
};

/** The folders of modules of a build's graph (`go list -m`, as the build resolved them: replacements included). */
function moduleDirs(go: string, moduleDir: string, modules: readonly string[]): Map<string, string> {
  const r = spawnSync(go, ['list', '-m', '-f', '{{.Path}}\t{{with .Replace}}{{.Dir}}{{else}}{{.Dir}}{{end}}', ...modules], { cwd: moduleDir, env: goEnv(), encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new ControlPlaneBuildError(`go list -m ${modules.join(' ')}: ${(r.error?.message ?? r.stderr ?? '').trim().split('\n')[0] || `exit ${r.status}`}`);
  return new Map(r.stdout.trim().split('\n').map((l) => l.split('\t') as [string, string]));
}

/** Copies a spec's companion files from the module cache into `dir`; answers their SHA-256 by name. */
async function copyCompanions(spec: GoBinarySpec, go: string, dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  if (!spec.companions?.length) return out;
  const ofGraph = spec.companions.filter((c) => !c.pinned);
  const dirs = ofGraph.length > 0 ? moduleDirs(go, spec.moduleDir, [...new Set(ofGraph.map((c) => c.module))]) : new Map<string, string>();
  for (const c of spec.companions) {
    const to = path.join(dir, c.name);
    if (c.pinned) {
      writeFileSync(to, downloadModuleFile(go, c.module, c.file, c.pinned));
    } else {
      const from = dirs.get(c.module) ? path.join(dirs.get(c.module)!, c.file) : '';
      if (!from || !existsSync(from)) throw new ControlPlaneBuildError(`${spec.what}: ${c.module} has no ${c.file} (module folder ${dirs.get(c.module) ?? 'unknown'})`);
      copyFileSync(from, to);
    }
    chmodSync(to, c.executable ? 0o755 : 0o644);
    out[c.name] = await sha256File(to);
  }
  return out;
}

const firstLine = (s: string) => s.trim().split('\n')[0];

/**
 * The bytes of `file` of `module` at a pinned version, fetched with `go mod download` (through the module proxy, into the
 * module cache) and checked against the module's go.sum hash and the file's SHA-256. A ControlPlaneBuildError of one
 * line naming module, version and file when it cannot be had or does not match.
 */
export function downloadModuleFile(go: string, module: string, file: string, pinned: PinnedModuleFile): Buffer {
  const what = `${module}@${pinned.version} ${file}`;
  const scratch = mkdtempSync(path.join(tmpdir(), 'module-file-'));
  try {
    const r = spawnSync(go, ['mod', 'download', '-json', `${module}@${pinned.version}`], {
      cwd: scratch, encoding: 'utf8', timeout: 10 * 60_000, maxBuffer: 1024 * 1024, env: { ...goEnv(), GOFLAGS: '-mod=mod' },
    });
    let info: { Error?: string; Sum?: string; Dir?: string } = {};
    try {
      info = JSON.parse(r.stdout) as typeof info;
    } catch {
      // no JSON: the reason is on stderr
    }
    if (r.status !== 0 || info.Error || !info.Dir) {
      throw new ControlPlaneBuildError(`cannot fetch ${what}: go mod download failed: ${firstLine(info.Error ?? r.error?.message ?? (r.stderr || `exit ${r.status}`))}`);
    }
    if (info.Sum !== pinned.sum) throw new ControlPlaneBuildError(`cannot use ${what}: the module's hash is ${info.Sum}, pinned ${pinned.sum}`);
    const from = path.join(info.Dir, file);
    if (!existsSync(from)) throw new ControlPlaneBuildError(`cannot use ${what}: the module has no such file`);
    const bytes = readFileSync(from);
    const digest = sha256(bytes);
    if (digest !== pinned.sha256) throw new ControlPlaneBuildError(`cannot use ${what}: its SHA-256 is ${digest}, pinned ${pinned.sha256}`);
    return bytes;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Removes what builds of processes that are gone left in the cache folder: their folders (whose owner file names the
 * process of the name), and their locks of other keys; nothing that names no owner of this cache.
 */
function removeDeadBuilds(root: string): void {
  for (const name of readdirSync(root)) {
    const m = /\.build-(\d+)-[0-9a-f]+$/.exec(name);
    const dir = path.join(root, name);
    if (m && lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() && ownerOf(path.join(dir, BUILD_OWNER))?.pid === Number(m[1])
      && ownerGone(path.join(dir, BUILD_OWNER))) {
      rmSync(dir, { recursive: true, force: true });
    }
    // a lock, or the file a lock was linked from (a process killed between the two)
    if ((name.endsWith('.lock') || /\.lock\.\d+-[0-9a-f]+\.tmp$/.test(name)) && ownerGone(dir)) rmSync(dir, { force: true });
  }
}

/** An entry of another key (an older pin, another Go) unused this long is removed when a new one is built. */
export const UNUSED_ENTRY_MS = 7 * 24 * 60 * 60 * 1000;

/** Marks an entry used (its record's modification time): what evictUnused goes by. */
function markUsed(dir: string): void {
  const now = new Date();
  try {
    utimesSync(path.join(dir, RECORD), now, now);
  } catch {
    // a read-only cache is used as it is; nothing is evicted by its age then
  }
}

/**
 * Removes the entries of other keys that no run used for UNUSED_ENTRY_MS (100 MB and more each, one per pin ever
 * built), except one a process is building or holds the lock of.
 */
function evictUnused(root: string, keep: string): void {
  const names = readdirSync(root);
  for (const name of names) {
    if (name === keep || names.includes(`${name}.lock`) || !ownEntry(root, name)) continue;
    const record = lstatSync(path.join(root, name, RECORD));
    if (Date.now() - record.mtimeMs > UNUSED_ENTRY_MS) rmSync(path.join(root, name), { recursive: true, force: true });
  }
}

export interface BinaryOptions {
  /** Told once before a build starts, and when it ends (the test task prints them). */
  readonly progress?: (line: string) => void;
}

/**
 * The control plane binary: from the cache when a verified entry of this key is there, else built (under the key's
 * lock, into a temporary folder renamed into place whole). Throws a ControlPlaneBuildError with one line when it
 * cannot be had (no Go, a failed build): the cluster tests fail on it, never skip.
 */
export function controlPlaneBinary(opts: BinaryOptions = {}): Promise<ControlPlaneBinary> {
  return goBinary(CONTROL_PLANE, opts);
}

/** Kueue's manager (`kueue --config FILE`), as controlPlaneBinary has the control plane. */
export function kueueBinary(opts: BinaryOptions = {}): Promise<GoBinary> {
  return goBinary(KUEUE, opts);
}

/**
 * The Argo CD twin (`<path> argocd-repo-server|argocd-application-controller|argocd|kwok|kustomize|helm|redis|version
 * [flags]`, or run by those names through symbolic links), with its companion files, as controlPlaneBinary has the
 * control plane.
 */
export function twinBinary(opts: BinaryOptions = {}): Promise<GoBinary> {
  return goBinary(TWIN, opts);
}

export async function goBinary(spec: GoBinarySpec, opts: BinaryOptions): Promise<GoBinary> {
  if (prebuiltDir !== undefined && TWIN_BINARIES.includes(spec)) return prebuiltBinary(spec, prebuiltDir);
  const go = goCommand();
  const key = buildKey(go, spec);
  const known = remembered(key);
  if (known) {
    markUsed(path.dirname(known.path));
    return known;
  }
  const root = cacheRoot(spec);
  const dir = path.join(root, key);
  const ready = existsSync(dir) ? await verifiedEntry(spec, dir, key) : undefined;
  if (ready) {
    markUsed(dir);
    return remember(ready);
  }
  mkdirSync(root, { recursive: true });
  const say = opts.progress ?? (() => {});
  const result = await withLock(path.join(root, `${key}.lock`), () => say(`waiting for another process to build ${spec.what} (${root})...`), async () => {
    const done = existsSync(dir) ? await verifiedEntry(spec, dir, key) : undefined;
    if (done) return done;
    removeDeadBuilds(root);
    say(spec.building(dir));
    const t0 = Date.now();
    const tmp = path.join(root, `${key}.build-${process.pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(tmp);
    writeFileSync(path.join(tmp, BUILD_OWNER), JSON.stringify({ pid: process.pid, host: hostname(), start: procStart(process.pid) }));
    try {
      const bin = path.join(tmp, spec.binary);
      await runBuild(spec, go, bin);
      const versions = spec.versions(bin, go);
      const companions = await copyCompanions(spec, go, tmp);
      const seconds = Math.round((Date.now() - t0) / 1000);
      const record: BuildRecord = {
        key, sha256: await sha256File(bin), size: statSync(bin).size, versions, seconds, ...(spec.companions ? { companions } : {}),
      };
      writeFileSync(path.join(tmp, RECORD), `${JSON.stringify(record, undefined, 2)}\n`);
      rmSync(path.join(tmp, BUILD_OWNER));
      // a damaged entry of this key (it failed verification) makes way for the new one; what is not the cache's never does
      if (lstatSync(dir, { throwIfNoEntry: false }) && !ownEntry(root, key)) {
        throw new ControlPlaneBuildError(`${dir} is in the way: not an entry of this cache (no record of its key); remove it, or name another cache folder`);
      }
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
      evictUnused(root, key);
      say(`built ${spec.what} in ${record.seconds} s`);
      const beside = Object.fromEntries(Object.keys(companions).map((n) => [n, path.join(dir, n)]));
      return { path: path.join(dir, spec.binary), key, versions, built: true, companions: beside };
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
  return remember(result);
}

/*
 * Prebuilt binaries (`rehearse --binaries DIR`): a folder holding the three binaries by their cache names, and the
 * twin's companion files beside them, as a build of this package's modules leaves them in its cache entries. Each is
 * checked before use: an executable regular file whose Go build information (read from the file, nothing run) names
 * the module versions go.mod pins.
 */

/** The binaries a twin of a cluster runs, in the order a rehearsal needs them. */
const TWIN_BINARIES: readonly GoBinarySpec[] = [CONTROL_PLANE, KUEUE, TWIN];

/** The modules whose versions name each binary (each must be go.mod's). */
export const PINNED_MODULES: Readonly<Record<string, readonly string[]>> = {
  [CONTROL_PLANE.binary]: ['k8s.io/kubernetes', 'go.etcd.io/etcd/server/v3'],
  [KUEUE.binary]: [KUEUE_MODULE],
  [TWIN.binary]: [ARGOCD_MODULE, KWOK_MODULE, 'sigs.k8s.io/kustomize/kustomize/v5', 'helm.sh/helm/v4', MPI_OPERATOR_MODULE, TRAINING_OPERATOR_MODULE, 'github.com/alicebob/miniredis/v2'],
};

let prebuiltDir: string | undefined;

/** Takes every binary from `dir` (a folder of prebuilt ones) instead of the cache; undefined: build into the cache again. */
export function usePrebuiltBinaries(dir: string | undefined): void {
  prebuiltDir = dir === undefined ? undefined : path.resolve(dir);
}

/** The oldest Go that builds the modules (the `go` line of their go.mod). */
export function requiredGoVersion(): string {
  return requiredGo();
}

/** What a folder of prebuilt binaries holds: one line per file, with the versions it must be built from. */
export function prebuiltLayout(): string[] {
  return TWIN_BINARIES.flatMap((spec) => {
    const dir = spec.moduleDir;
    const versions = PINNED_MODULES[spec.binary].map((m) => `${m} ${requiredVersion(m, dir) ?? '?'}`).join(', ');
    const companions = (spec.companions ?? []).map((c) => c.name);
    return [`${spec.binary}: ${spec.what} (${versions}), go build of ${path.relative(PACKAGE_ROOT, spec.moduleDir)}`,
      ...(companions.length > 0 ? [`beside it: ${companions.join(', ')} (files of ${[...new Set((spec.companions ?? []).map((c) => `${c.module} ${c.pinned?.version ?? requiredVersion(c.module, dir) ?? '?'}`))].join(', ')})`] : [])];
  });
}

/** The Go version and module versions embedded in a Go binary (its build information), read from the file. */
export function embeddedBuildInfo(file: string): Record<string, string> | undefined {
  const bytes = readFileSync(file);
  const at = bytes.indexOf(Buffer.from('\xff Go buildinf:', 'latin1'));
  // Go 1.18 and later: flags bit 2 = the two strings follow the 32-byte header inline, each with a varint length
  if (at < 0 || Math.floor(bytes[at + 15] / 2) % 2 === 0) return undefined;
  let pos = at + 32;
  const next = (): string => {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      const b = bytes[pos++];
      n += (b % 0x80) * 2 ** shift;
      if (b < 0x80) break;
    }
    const s = bytes.subarray(pos, pos + n).toString('utf8');
    pos += n;
    return s;
  };
  const out: Record<string, string> = { go: next() };
  for (const line of next().split('\n')) {
    const [kind, module, version] = line.split('\t');
    if ((kind === 'mod' || kind === 'dep') && module && version) out[module] = version;
  }
  return out;
}

/** A prebuilt binary of `dir`, checked; a ControlPlaneBuildError naming the file and what is wrong. */
async function prebuiltBinary(spec: GoBinarySpec, dir: string): Promise<GoBinary> {
  const bin = path.join(dir, spec.binary);
  if (!isExecutable(bin)) throw new ControlPlaneBuildError(`--binaries ${dir}: no executable ${spec.binary} (${spec.what}; rehearse --help lists what the folder holds)`);
  const info = embeddedBuildInfo(bin);
  if (!info) throw new ControlPlaneBuildError(`--binaries ${dir}: ${spec.binary} is not a Go binary with build information (go build of ${spec.folder})`);
  const wrong = PINNED_MODULES[spec.binary].filter((m) => info[m] !== requiredVersion(m, spec.moduleDir));
  if (wrong.length > 0) {
    throw new ControlPlaneBuildError(`--binaries ${dir}: ${spec.binary} is built from ${wrong.map((m) => `${m} ${info[m] ?? '(none)'}`).join(', ')}, `
      + `this version of the package needs ${wrong.map((m) => `${m} ${requiredVersion(m, spec.moduleDir)}`).join(', ')}`);
  }
  const companions: Record<string, string> = {};
  for (const c of spec.companions ?? []) {
    const file = path.join(dir, c.name);
    if (!lstatSync(file, { throwIfNoEntry: false })?.isFile() || (c.executable && !isExecutable(file))) {
      throw new ControlPlaneBuildError(`--binaries ${dir}: no ${c.executable ? 'executable ' : ''}${c.name} beside ${spec.binary} (${c.file} of ${c.module})`);
    }
    const digest = c.pinned ? await sha256File(file) : undefined;
    if (c.pinned && digest !== c.pinned.sha256) {
      throw new ControlPlaneBuildError(`--binaries ${dir}: ${c.name} is not ${c.file} of ${c.module}@${c.pinned.version} (its SHA-256 is ${digest}, pinned ${c.pinned.sha256})`);
    }
    companions[c.name] = file;
  }
  const versions = Object.fromEntries(Object.entries(info).filter(([m]) => m === 'go' || PINNED_MODULES[spec.binary].includes(m)));
  return { path: bin, key: `prebuilt:${bin}`, versions, built: false, companions };
}

/**
 * The binaries of a twin that are still to be built: neither prebuilt (--binaries) nor in the cache under the key this
 * machine's Go would build (their record and size read, not their SHA-256: goBinary verifies what it uses).
 */
export function buildsNeeded(specs: readonly GoBinarySpec[] = TWIN_BINARIES): GoBinarySpec[] {
  if (prebuiltDir !== undefined) return specs.filter((spec) => !TWIN_BINARIES.includes(spec));
  const go = goCommand();
  return specs.filter((spec) => {
    const key = buildKey(go, spec);
    return !remembered(key) && !recordedEntry(spec, path.join(cacheRoot(spec), key), key);
  });
}

/**
 * One line said before the first of `needed` builds: what is built, and the whole time it takes (the builds run one
 * after the other), from their cold CPU seconds spread over this machine's cores; undefined when nothing is built.
 */
export function buildTimeLine(needed: readonly GoBinarySpec[], cores = availableParallelism()): string | undefined {
  if (needed.length === 0) return undefined;
  const cpu = needed.reduce((n, spec) => n + (spec.coldCpuSeconds ?? 0), 0);
  const minutes = Math.ceil(cpu / Math.max(1, cores) / 60);
  const names = needed.map((spec) => spec.what);
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  return `${needed.length} of the ${TWIN_BINARIES.length} binaries the twin runs to build, once per machine (${list}): some ${cpu.toLocaleString('en-US').replace(/,/g, ' ')} CPU seconds of Go, `
    + `about ${minutes} minutes in all on ${cores} idle core(s), longer on a busy machine`;
}

/**
 * Every binary of a twin of a cluster: each from the prebuilt folder when one is given, else from the cache (built when
 * missing; the whole time of the builds still needed said first, buildTimeLine).
 */
export async function twinBinaries(opts: BinaryOptions = {}): Promise<GoBinary[]> {
  const total = opts.progress ? buildTimeLine(buildsNeeded()) : undefined;
  if (total) opts.progress!(total);
  const out: GoBinary[] = [];
  for (const spec of TWIN_BINARIES) out.push(await goBinary(spec, opts));
  return out;
}
