import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkEntry, EntryRecord, recordEntry } from './output-record';
import { defaultCacheDir } from '../cache/cache-dir';
import { fileDigest, sha256 } from '../cache/digests';
import { Observed, stillObserved, watchExclusions, Watcher } from '../cache/read-watch';
import { FAULT_ENV } from '../fault';
import { INSTALL_ROOT, PACKAGE_ROOT } from '../paths';
import { Project, projectOf } from '../project/project-file';
import type { ReusedCluster, SynthResult } from '../synth/pipeline';

/**
 * The up-to-date answer of the plain `synth` (every description of the project into its output folder, as the
 * project file names them), as make gives it, with the dependencies found as tup and bazel find them: by watching (src/cache/read-watch.ts), and
 * kept per description, so that a fleet where one description changed renders that cluster only.
 *
 * A run that renders records everything it observed while it ran, its render threads included: the SHA-256 of
 * every file it read (descriptions, CRDs, upstream charts, and every module of lib/ and node_modules/ it loaded,
 * hashed from the bytes it was given), the listing of every folder it listed, whether each path it probed
 * existed, every environment variable it looked at; then Node's version, the arguments, the working folder,
 * package-lock.json (and npm's record of what is installed); per description, what its cluster left for the
 * summary and the fleet folder; and per entry of dist/, its files (output-record.ts). The next plain synth
 * checks all of it (file digests are remembered by inode and ctime, see src/cache/digests.ts):
 *
 * - nothing differs and dist/ holds exactly those entries: it prints the recorded warnings and summary instead
 *   of rendering (a render would write the same bytes);
 * - only descriptions differ (their content; the listing of the descriptions folder is a folder the render listed, so a
 *   description added or removed renders everything): synth renders, validates, checks and swaps in those
 *   clusters and the fleet folder, and keeps every other folder as it is (SynthOptions.reuse), the same bytes
 *   as a full render;
 * - anything else renders everything.
 *
 * A run that did what cannot be checked this way (started a process such as a TypeScript description's
 * sandbox, a thread that does not watch itself, read a file asynchronously) is not recorded.
 */

/** The record of a project's plain synth, named after its project file (one toolkit install may serve several projects). */
const recordFileOf = (project: Project): string => `synth-up-to-date-${sha256(project.file).slice(0, 16)}.json`;
const RECORD_VERSION = 2;
/** The arguments answered from the record; anything else renders. */
const ELIGIBLE = [['synth'], ['synth', '--quiet']];
/** Always inputs, whether or not the render reads them: what npm installed. */
const INSTALL_FILES = ['package-lock.json', path.join('node_modules', '.package-lock.json')];
/** The fleet folder's entry (components/gitops/plan FLEET_FOLDER; not imported: the launcher loads this module before the render stack). */
const FLEET_ENTRY = 'fleet';

/** Where the plain synth's inputs and output are: its project (the project file is read before the watch begins) and its record. */
interface Scope {
  readonly project: Project;
  readonly out: string;
  readonly record: string;
  readonly cacheDir: string;
}

/** The scope of a plain synth in a project; undefined for any other run, or when the cache setting or project file is unusable (the CLI reports it). */
function scopeOf(argv: readonly string[]): Scope | undefined {
  if (process.env[FAULT_ENV] || !ELIGIBLE.some((a) => JSON.stringify(a) === JSON.stringify(argv))) return undefined;
  let dir: string | undefined;
  let project: Project | undefined;
  try {
    dir = defaultCacheDir();
    project = projectOf();
  } catch {
    return undefined;
  }
  if (dir === undefined || project === undefined) return undefined;
  return { project, out: project.out, record: path.join(dir, recordFileOf(project)), cacheDir: dir };
}

/** One description of the fleet: its file (its digest is the record's `files` entry) and what its cluster left. */
interface ClusterRecord {
  readonly config: string;
  readonly cluster: ReusedCluster;
}

interface RunRecord extends Observed {
  version: number;
  context: string;
  clusters: ClusterRecord[];
  /** Entry of dist/ (a cluster folder, fleet/) -> its files. */
  entries: Record<string, EntryRecord>;
  stdout: string[];
  stderr: string[];
}

/** What the watch of the plain synth leaves out: its output and the cache. */
function unwatched(scope: Scope): string[] {
  return [scope.out, scope.cacheDir];
}

/**
 * Node, the platform, the arguments, where they were typed, the toolkit and the project's folders: a record of
 * another of these is another run's.
 */
function context(argv: readonly string[], scope: Scope): string {
  const { project } = scope;
  const where = [process.cwd(), PACKAGE_ROOT, project.file, project.clusters, project.out];
  return JSON.stringify([RECORD_VERSION, process.version, process.platform, process.arch, argv, ...where]);
}

/** Leftovers of an interrupted write beside the output folder: the CLI recovers them. */
function interruptedWrite(out: string): boolean {
  const parent = path.dirname(out);
  const base = path.basename(out);
  return fs.readdirSync(parent).some((n) => n.startsWith(`${base}.tmp-`) || n.startsWith(`${base}.old-`));
}

type Plan =
  | { readonly kind: 'render' }
  | { readonly kind: 'answer'; readonly record: RunRecord; readonly refreshed: boolean }
  | { readonly kind: 'incremental'; readonly record: RunRecord; readonly changed: ReadonlySet<string> };

/**
 * What the plain synth has to do, by its record: nothing (answer), render the clusters of the changed
 * descriptions (incremental), or render everything. Entries of dist/ whose signatures were not settled are read and
 * compared; their records are refreshed then (`refreshed`: the record is to be written again).
 */
function planOf(argv: readonly string[], scope: Scope): Plan {
  const render = { kind: 'render' } as const;
  if (interruptedWrite(scope.out)) return render;
  const r = JSON.parse(fs.readFileSync(scope.record, 'utf8')) as RunRecord;
  if (r.version !== RECORD_VERSION || r.context !== context(argv, scope) || !Array.isArray(r.clusters)) return render;
  const configs = new Set(r.clusters.map((c) => c.config));
  if (!stillObserved(r, watchExclusions(unwatched(scope)), configs)) return render;
  const changed = new Set([...configs].filter((c) => (fileDigest(c) ?? null) !== r.files[c]));
  // dist/ holds exactly the recorded entries, each as recorded (but those rendered again)
  const names = fs.readdirSync(scope.out).sort();
  const recorded = Object.keys(r.entries).sort();
  if (JSON.stringify(names) !== JSON.stringify(recorded)) return render;
  const again = new Set(r.clusters.filter((c) => changed.has(c.config)).map((c) => c.cluster.summary.name));
  if (changed.size > 0) again.add(FLEET_ENTRY);
  let refreshed = false;
  for (const name of recorded) {
    if (again.has(name)) continue;
    const state = checkEntry(path.join(scope.out, name), r.entries[name]);
    if (state.state === 'changed') return render;
    if (state.state === 'verified') {
      r.entries[name] = state.fresh;
      refreshed = true;
    }
  }
  return changed.size === 0 ? { kind: 'answer', record: r, refreshed } : { kind: 'incremental', record: r, changed };
}

/** The plan of this process's plain synth, when it is to render some clusters only (runSynth asks). */
let pending: { readonly record: RunRecord; readonly changed: ReadonlySet<string> } | undefined;

/**
 * Prints the last render's output and returns 0 when the plain synth has nothing to do; undefined (render)
 * otherwise. When only descriptions changed, the clusters to keep are remembered for the render
 * (reusableClusters).
 */
export function answerFromRecord(argv: readonly string[]): number | undefined {
  const scope = scopeOf(argv);
  if (!scope) return undefined;
  const t0 = performance.now();
  let plan: Plan;
  try {
    plan = planOf(argv, scope);
  } catch {
    return undefined;
  }
  if (plan.kind === 'render') return undefined;
  if (plan.kind === 'incremental') {
    pending = { record: plan.record, changed: plan.changed };
    return undefined;
  }
  const r = plan.record;
  if (plan.refreshed) writeRecord(scope.record, r);
  for (const l of r.stderr) process.stderr.write(l);
  if (!argv.includes('--quiet')) {
    for (const l of r.stdout) process.stdout.write(l);
    const files = Object.values(r.entries).reduce((n, e) => n + e.files, 0);
    const s = ((performance.now() - t0) / 1000).toFixed(2);
    const shown = path.relative(process.cwd(), scope.out) || '.';
    process.stdout.write(`${shown} already up to date (${files} files): no description, source or schema file changed since the last render (checked in ${s} s)\n`);
  }
  return 0;
}

/**
 * The clusters the plain synth of this process keeps as they are, by description file: those of the unchanged
 * descriptions, when the record found that only descriptions changed (answerFromRecord); undefined otherwise.
 */
export function reusableClusters(): ReadonlyMap<string, ReusedCluster> | undefined {
  if (!pending) return undefined;
  const { record, changed } = pending;
  return new Map(record.clusters.filter((c) => !changed.has(c.config)).map((c) => [c.config, c.cluster]));
}

/** The result of this process's synth, told by runSynth: what each cluster leaves for the record. */
let synthResult: SynthResult | undefined;

export function noteSynthResult(result: SynthResult): void {
  synthResult = result;
}

/** Copies what a stream writes. */
function tap(stream: NodeJS.WriteStream, into: string[]): () => void {
  const write = stream.write;
  stream.write = function tapped(this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
    into.push(String(chunk));
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof stream.write;
  return () => {
    stream.write = write;
  };
}

/**
 * Runs the plain synth while watching what it reads, and records it for answerFromRecord when it succeeds and
 * everything it depended on could be watched. Other commands just run.
 */
export function runRecorded(argv: readonly string[], run: () => number | Promise<number>): number | Promise<number> {
  const scope = scopeOf(argv);
  if (!scope) return run();
  const watcher = new Watcher(unwatched(scope));
  const stdout: string[] = [];
  const stderr: string[] = [];
  const untap = [tap(process.stdout, stdout), tap(process.stderr, stderr)];
  const stop = () => {
    watcher.stop();
    for (const u of untap) u();
  };
  const finish = (code: number): number => {
    stop();
    if (code === 0 && watcher.whyUnsound() === undefined) save(scope, argv, watcher, stdout, stderr);
    return code;
  };
  watcher.start();
  let result: number | Promise<number>;
  try {
    result = run();
  } catch (e) {
    stop();
    throw e;
  }
  return typeof result === 'number' ? finish(result) : result.then(finish, (e: unknown) => {
    stop();
    throw e;
  });
}

function save(scope: Scope, argv: readonly string[], watcher: Watcher, stdout: string[], stderr: string[]): void {
  const members = synthResult?.members;
  if (!synthResult || !members) return;
  // the modules loaded before the watch began (the launcher's), and what npm installed
  watcher.addLoadedModules();
  const seen = watcher.seen;
  for (const f of INSTALL_FILES) {
    const abs = path.join(INSTALL_ROOT, f);
    if (!(abs in seen.files)) seen.files[abs] = fileDigest(abs) ?? null;
  }
  // a render of some clusters: what the record it started from observed holds still (checked when it was planned)
  const old = pending?.record;
  if (old) {
    for (const key of ['files', 'dirs', 'kinds', 'realpaths', 'env'] as const) {
      const into = seen[key] as Record<string, unknown>;
      for (const [k, v] of Object.entries(old[key])) if (!(k in into)) into[k] = v;
    }
  }
  // a file whose content is recorded needs no separate check that it exists
  for (const key of Object.keys(seen.kinds)) {
    const [p, how] = key.split('\0');
    if (how === 'stat' && seen.kinds[key] === 'file' && typeof seen.files[p] === 'string') delete seen.kinds[key];
  }
  // every description read (this run, or the one whose clusters were kept)
  if (members.some((m) => typeof seen.files[m.config] !== 'string')) return;
  const rendered = new Set([...synthResult.rendered, FLEET_ENTRY]);
  const entries: Record<string, EntryRecord> = {};
  const names = fs.readdirSync(scope.out).sort();
  const expected = [...members.map((m) => m.summary.name), FLEET_ENTRY].sort();
  if (JSON.stringify(names) !== JSON.stringify(expected)) return;
  for (const name of names) {
    const kept = rendered.has(name) ? undefined : old?.entries[name];
    const entry = kept ?? recordEntry(path.join(scope.out, name));
    if (!entry) return;
    entries[name] = entry;
  }
  const record: RunRecord = {
    version: RECORD_VERSION,
    context: context(argv, scope),
    ...seen,
    clusters: members.map(({ config, ...cluster }) => ({ config, cluster })),
    entries,
    // the summary's last line (files written, timings) belongs to that run only
    stdout: argv.includes('--quiet') ? [] : stdout.slice(0, -1),
    stderr,
  };
  writeRecord(scope.record, record);
}

function writeRecord(file: string, record: RunRecord): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(tmp, JSON.stringify(record));
    fs.renameSync(tmp, file);
  } catch {
    // no record: the next run renders again
    fs.rmSync(tmp, { force: true });
  }
}
