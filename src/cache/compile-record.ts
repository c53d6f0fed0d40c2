import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { digestOfParts, fileDigest, filesDigest, listTree, packageRoot } from './digests';
import { PACKAGE_ROOT } from '../paths';

/**
 * What the launcher (projenrc/launch.cjs) compiled: the SHA-256 of every source of lib/ at the
 * time, and the type errors of the TypeScript descriptions among them. The launcher compiles when
 * a source's content differs from the record (an edit that keeps the size and mtime included),
 * and the description loader uses a description's compiled twin in lib/ only while the record
 * matches the sources.
 */

/** What tsconfig.json compiles, and what else changes its output. */
const SOURCE_DIRS = ['src', 'imports'];
const SOURCE_FILES = ['tsconfig.json'];
const COMPILER = 'typescript';
const RECORD_VERSION = 1;

/** A type error of a description, where the compiler found it. */
export interface TypeErrorAt {
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

interface CompileRecord {
  readonly version: number;
  /** Path relative to the project root -> SHA-256; the compiler's code under COMPILER. */
  readonly sources: Record<string, string>;
  /** Type errors of descriptions (bad input, reported when the description is loaded), by path. */
  readonly descriptionErrors: Record<string, TypeErrorAt[]>;
}

/** Whether lib/ is compiled from the sources as they are now. */
export interface CompileState {
  readonly upToDate: boolean;
  /** Nothing was compiled yet (by this launcher): a fresh clone. */
  readonly first: boolean;
  /** Sources added, removed or changed since the last compilation. */
  readonly changed: number;
  /**
   * A source compiled before (unchanged since, or nothing recorded) lacks its compiled file in lib/:
   * the incremental compiler emits only what changed, so it must emit everything again. A new or
   * changed source is emitted anyway (adding a description costs an incremental compilation).
   */
  readonly outputsMissing: boolean;
  readonly sources: Record<string, string>;
}

const recordFile = (root: string) => path.join(root, 'lib', '.compiled-sources.json');

/** The compiled JavaScript of a source (`src/x.ts` -> `lib/src/x.js`). */
const compiledFile = (root: string, rel: string) => path.join(root, 'lib', rel.replace(/\.ts$/, '.js'));

const isDeclaration = (rel: string) => rel.endsWith('.d.ts');

/** Description files among the sources: what a type error in is bad input, not a broken build. */
export function isDescriptionSource(rel: string): boolean {
  return rel.split(path.sep).join('/').startsWith('src/clusters/') && rel.endsWith('.ts') && !isDeclaration(rel);
}

export function currentSources(root: string = PACKAGE_ROOT): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of SOURCE_DIRS) {
    for (const f of listTree(path.join(root, d), (n) => n.endsWith('.ts'))) out[path.relative(root, f)] = fileDigest(f) ?? '-';
  }
  for (const f of SOURCE_FILES) out[f] = fileDigest(path.join(root, f)) ?? '-';
  out[`(${COMPILER})`] = compilerDigest();
  return out;
}

/** The compiler's code: its package.json and the modules of its lib/ (not its type declarations and locales). */
function compilerDigest(): string {
  try {
    const dir = packageRoot(COMPILER);
    const lib = path.join(dir, 'lib');
    const files = [path.join(dir, 'package.json'), ...readdirSync(lib).filter((n) => n.endsWith('.js')).sort().map((n) => path.join(lib, n))];
    return filesDigest(dir, files);
  } catch {
    return '-';
  }
}

function readRecord(root: string): CompileRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(recordFile(root), 'utf8')) as CompileRecord;
    return r.version === RECORD_VERSION ? r : undefined;
  } catch {
    return undefined;
  }
}

export function compileState(root: string = PACKAGE_ROOT): CompileState {
  const sources = currentSources(root);
  const record = readRecord(root);
  const recorded = record?.sources ?? {};
  const names = new Set([...Object.keys(sources), ...Object.keys(recorded)]);
  const changed = [...names].filter((n) => sources[n] !== recorded[n]).length;
  const outputsMissing = Object.keys(sources).some((rel) => rel.endsWith('.ts') && !isDeclaration(rel) && (record === undefined || sources[rel] === recorded[rel]) && !existsSync(compiledFile(root, rel)));
  return { upToDate: changed === 0 && !outputsMissing, first: record === undefined, changed, outputsMissing, sources };
}

/** `src/x.ts(3,5): error TS2322: message` (tsc --pretty false), with its indented continuation lines. */
function parseDiagnostics(output: string): Array<{ file?: string; line: number; column: number; message: string }> {
  const out: Array<{ file?: string; line: number; column: number; message: string }> = [];
  for (const l of output.split('\n')) {
    const m = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/.exec(l);
    if (m) out.push({ file: m[1], line: Number(m[2]), column: Number(m[3]), message: `${m[5]} (${m[4]})` });
    else if (/^\s+\S/.test(l) && out.length > 0) out[out.length - 1].message += ` ${l.trim()}`;
    else if (/error TS\d+/.test(l)) out.push({ line: 0, column: 0, message: l.trim() });
  }
  return out;
}

/** What the compiler writes for a source `x.ts`. */
const OUTPUT = /\.(js|js\.map|d\.ts|d\.ts\.map)$/;

/**
 * Deletes compiled files of lib/ whose source is gone (the compiler never does): a removed
 * description or module would otherwise still load, and ship in the package.
 */
export function removeOrphanedOutputs(root: string = PACKAGE_ROOT): string[] {
  const removed: string[] = [];
  const walk = (rel: string) => {
    let names: string[];
    try {
      names = readdirSync(path.join(root, 'lib', rel));
    } catch {
      return;
    }
    for (const name of names) {
      const child = path.join(rel, name);
      const out = path.join(root, 'lib', child);
      if (statSync(out, { throwIfNoEntry: false })?.isDirectory()) {
        walk(child);
      } else if (OUTPUT.test(name) && !existsSync(path.join(root, child.replace(OUTPUT, '.ts')))) {
        rmSync(out, { force: true });
        removed.push(child);
      }
    }
  };
  for (const d of SOURCE_DIRS) walk(d);
  return removed;
}

/**
 * Records a compilation of `before` (the sources as they were when it started): returns false when
 * the compiler failed on anything but descriptions (the build is broken). Type errors only in
 * descriptions leave a usable lib/ (nothing stops emitting): they are recorded, and the loader
 * reports them as the description's own errors. Nothing is recorded when a source changed while
 * the compiler ran: the next run compiles again.
 */
export function recordCompilation(before: Record<string, string>, status: number | null, output: string, root: string = PACKAGE_ROOT): boolean {
  const diagnostics = status === 0 ? [] : parseDiagnostics(output);
  if (status !== 0 && (diagnostics.length === 0 || diagnostics.some((d) => !d.file || !isDescriptionSource(d.file)))) return false;
  removeOrphanedOutputs(root);
  const descriptionErrors: Record<string, TypeErrorAt[]> = {};
  for (const d of diagnostics) (descriptionErrors[path.normalize(d.file!)] ??= []).push({ line: d.line, column: d.column, message: d.message });
  const after = currentSources(root);
  if (JSON.stringify(after) !== JSON.stringify(before)) return true;
  const file = recordFile(root);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify({ version: RECORD_VERSION, sources: before, descriptionErrors } satisfies CompileRecord));
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
  return true;
}

/**
 * The command line's bundle (projenrc/bundle.cjs writes lib/bundle/cli.js from the compiled lib/src/ and the
 * dependencies, and beside it the list of the files it was made of): made again after a compilation that changed the
 * CLI's code (not one that changed only a description, src/clusters/: the bundle holds none), when a file it was made
 * of changed since (a compiled file of lib/ or a dependency edited in place: the edited code runs, as it would
 * without the bundle), and when it is missing or was itself edited.
 */
export const BUNDLES = ['cli'];
const bundleFile = (root: string, name: string) => path.join(root, 'lib', 'bundle', `${name}.js`);
const bundleInputsFile = (root: string, name: string) => path.join(root, 'lib', 'bundle', `${name}.inputs.json`);
const BUNDLER = 'esbuild';
/** What else the bundle is made of: the bundler's script, and the dependencies it copies in (their lock). */
const BUNDLE_INPUTS = [path.join('projenrc', 'bundle.cjs'), 'package-lock.json'];
const bundleRecordFile = (root: string) => path.join(root, 'lib', '.bundled-sources.json');

interface BundleRecord {
  /** The digest of the sources and the bundler (bundleState's `inputs`) when the bundles were made. */
  readonly inputs: string;
  /** Every file the bundles were made of, and the bundles themselves: path relative to the root -> SHA-256. */
  readonly files: Record<string, string>;
}

/** The files of the bundles and those they were made of (as the bundler listed them), relative to the root; undefined when a list is missing. */
function bundledFiles(root: string): string[] | undefined {
  const out: string[] = [];
  for (const name of BUNDLES) {
    try {
      out.push(path.relative(root, bundleFile(root, name)), ...(JSON.parse(readFileSync(bundleInputsFile(root, name), 'utf8')) as string[]));
    } catch {
      return undefined;
    }
  }
  return out;
}

/** Whether the bundles were made from the sources and files as they are now (`sources`: currentSources of the same root). */
export function bundleState(sources: Record<string, string>, root: string = PACKAGE_ROOT): { upToDate: boolean; inputs: string } {
  const parts: [string, string][] = Object.entries(sources).filter(([rel]) => !isDescriptionSource(rel));
  for (const f of BUNDLE_INPUTS) parts.push([f, fileDigest(path.join(root, f)) ?? '-']);
  let bundler = '-';
  try {
    bundler = fileDigest(path.join(packageRoot(BUNDLER), 'package.json')) ?? '-';
  } catch {
    // not installed: the bundler says so when it runs
  }
  parts.push([`(${BUNDLER})`, bundler]);
  const inputs = digestOfParts(parts.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  let record: BundleRecord | undefined;
  try {
    record = JSON.parse(readFileSync(bundleRecordFile(root), 'utf8')) as BundleRecord;
  } catch {
    record = undefined;
  }
  const files = bundledFiles(root);
  const unchanged = (f: string) => record?.files[f] !== undefined && fileDigest(path.join(root, f)) === record.files[f];
  const upToDate = record?.inputs === inputs && files !== undefined && files.every(unchanged);
  return { upToDate, inputs };
}

/** Records that the bundles were made from `inputs` (bundleState's), with the digests of the files they were made of. */
export function recordBundle(inputs: string, root: string = PACKAGE_ROOT): void {
  const files: Record<string, string> = {};
  for (const f of bundledFiles(root) ?? []) files[f] = fileDigest(path.join(root, f)) ?? '-';
  const file = bundleRecordFile(root);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify({ inputs, files } satisfies BundleRecord));
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
}

let matches: boolean | undefined;

/**
 * The compiled twin in lib/ of a description under src/ and the compiler's type errors in it, when
 * lib/ is compiled from the sources as they are now; undefined otherwise (it is then transpiled).
 */
export function compiledDescription(file: string): { js: string; typeErrors: readonly TypeErrorAt[] } | undefined {
  const rel = path.relative(PACKAGE_ROOT, path.resolve(file));
  if (!isDescriptionSource(rel)) return undefined;
  const record = readRecord(PACKAGE_ROOT);
  if (!record) return undefined;
  matches ??= compileState(PACKAGE_ROOT).upToDate;
  const js = compiledFile(PACKAGE_ROOT, rel);
  if (!matches || !(rel in record.sources) || !existsSync(js)) return undefined;
  return { js, typeErrors: record.descriptionErrors[rel] ?? [] };
}
