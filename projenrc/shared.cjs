#!/usr/bin/env node
// Lays out ../shared, the pinned upstream files this checkout builds from, from their public sources:
//
//   npm run shared [-- --mirror URL] [--into DIR]
//   node projenrc/shared.cjs [--mirror URL] [--into DIR] [--jobs N]
//   node projenrc/shared.cjs --check COMMAND          exit 1 with one line when ../shared is missing
//
// projenrc/shared-sources.json lists every file (the CRDs, the upstream installs, the upstream samples) with the
// repository and commit it comes from and its SHA-256, as ../shared/*/SOURCES.md and upstream-installs/SHA256SUMS
// record them. Each file is read from <base>/<owner>/<repo>/<commit>/<path> (base: https://raw.githubusercontent.com,
// or --mirror URL, a copy with the same layout), a few CRDs cut out of the multi-document file they come in, verified
// against its SHA-256 and written in place atomically. A file already there is verified, never overwritten: one that
// differs stops the run. Then upstream-installs/SHA256SUMS (verified against the digest the lock records) and, where
// none is there, a SOURCES.md per folder naming the sources. Plain JavaScript without dependencies: it runs on a fresh
// clone before npm ci (Node.js 20's fetch).
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const LOCK_FILE = path.join(__dirname, 'shared-sources.json');
/** Where this checkout reads the pinned files from (src/paths.ts SHARED_DIR). */
const DEFAULT_SHARED = path.resolve(ROOT, '..', 'shared');
/** The command that lays ../shared out, as messages name it. */
const COMMAND = 'npm run shared';
/** The folders of ../shared the lock lays out: what the package, the imports and the tests read. */
const FOLDERS = ['crds', 'upstream-installs', 'upstream-samples'];

/** The largest file read (the multi-document CRD file of the VictoriaMetrics operator is 3 MB). */
const MAX_BYTES = 32 * 2 ** 20;
/** One request: connect, answer and body. */
const REQUEST_TIMEOUT_MS = 120_000;
/** A request that fails on the network or with a 5xx is tried this many times more. */
const RETRIES = 2;

const sha256 = (buf) => crypto.createHash('sha256').update(buf).digest('hex');
const shown = (p) => path.relative(process.cwd(), p) || '.';

class SharedError extends Error {}

/** The lock: its sources by key and its files (`[path, sha256, source, upstream path, extra?]`), checked for shape. */
function readLock(file = LOCK_FILE) {
  const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
  const bad = (why) => new SharedError(`${shown(file)}: ${why}`);
  if (typeof lock.base !== 'string' || typeof lock.sources !== 'object' || !Array.isArray(lock.files)) throw bad('not a lock of shared sources');
  for (const [key, s] of Object.entries(lock.sources)) {
    if (!/^[\w.-]+\/[\w.-]+$/.test(s.repo ?? '') || !/^[0-9a-f]{40}$/.test(s.commit ?? '')) throw bad(`source ${key}: a repository owner/name and a 40-digit commit`);
  }
  const seen = new Set();
  const files = lock.files.map(([file, digest, source, upstream, extra = {}]) => {
    const top = file.split('/')[0];
    if (!FOLDERS.includes(top) || file.split('/').some((p) => p === '' || p === '.' || p === '..') || seen.has(file)) throw bad(`file ${file}: a new path inside ${FOLDERS.join(', ')}`);
    if (!/^[0-9a-f]{64}$/.test(digest) || !lock.sources[source] || typeof upstream !== 'string' || upstream.split('/').includes('..')) throw bad(`file ${file}: its sha256, source and upstream path`);
    seen.add(file);
    return { file, digest, source, upstream, cut: extra.cut, unsummed: extra.unsummed !== undefined };
  });
  return { base: lock.base, sources: lock.sources, sums: lock.sums ?? {}, files };
}

/** One document of a multi-document YAML file, by its metadata.name, as its own file: `---` and the document. */
function cutDocument(text, name, url) {
  const docs = text.split(/^---\n/m).filter((d) => new RegExp(`^metadata:\\n(?:  .*\\n)*?  name: ${name.replace(/\./g, '\\.')}\\n`, 'm').test(d));
  if (docs.length !== 1) throw new SharedError(`${url}: ${docs.length === 0 ? 'no document' : `${docs.length} documents`} named ${name}`);
  return Buffer.from(`---\n${docs[0]}`);
}

/** The bytes at `url`, bounded in size and time; retried on a network error or a 5xx. */
async function download(url) {
  let last;
  for (let attempt = 0; attempt <= RETRIES; attempt++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), redirect: 'follow' });
      if (res.status >= 500) {
        last = new SharedError(`${url}: HTTP ${res.status}`);
        continue;
      }
      if (res.status !== 200) throw new SharedError(`${url}: HTTP ${res.status}${res.status === 404 ? ' (not at that commit: is the mirror a copy of the sources\' layout <owner>/<repo>/<commit>/<path>?)' : ''}`);
      const chunks = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += chunk.length;
        if (size > MAX_BYTES) throw new SharedError(`${url}: more than ${MAX_BYTES / 2 ** 20} MiB`);
        chunks.push(chunk);
      }
      return Buffer.concat(chunks);
    } catch (e) {
      if (e instanceof SharedError) throw e;
      last = new SharedError(`${url}: ${e.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : e.cause?.message ?? e.message}`);
    }
  }
  throw last;
}

/** Writes `data` at `file` whole or not at all (a temporary file beside it, renamed into place). */
function writeAtomically(file, data) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  try {
    fs.writeFileSync(tmp, data, { flag: 'wx' });
    fs.renameSync(tmp, file);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** The digest of a file there, or undefined when there is none (a folder or a link in its place is a problem). */
function digestThere(file) {
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!st) return undefined;
  if (!st.isFile()) throw new SharedError(`${shown(file)}: ${st.isDirectory() ? 'a folder' : 'not a regular file'} where the pinned file belongs: move it away and run ${COMMAND} again`);
  return sha256(fs.readFileSync(file));
}

/** `upstream-installs/SHA256SUMS` as the lock's files give it (in their order). */
function sumsText(files, folder) {
  return files.filter((f) => f.file.startsWith(`${folder}/`) && !f.unsummed).map((f) => `${f.digest}  ${f.file.slice(folder.length + 1)}\n`).join('');
}

/**
 * A SOURCES.md for a folder laid out here (only where none is): per folder of it, the sources of its files (tag or
 * ref and commit, the first its own, then those of the charts placed inside it), and where the lock is.
 */
function sourcesText(lock, top, base) {
  const mine = lock.files.filter((f) => f.file.startsWith(`${top}/`));
  const folders = [...new Set(mine.map((f) => f.file.split('/')[1]))];
  const ref = (s) => (/^v?\d|-\d+\.\d+/.test(s.ref) ? `Ref tag \`${s.ref}\`` : `Ref \`${s.ref}\``);
  return [
    `# ${top}/: sources`,
    '',
    `Laid out by \`${COMMAND}\` of gpu-cluster-manifests from ${base}: every file read from \`<owner>/<repo>/<commit>/<path>\``,
    'there and verified against the SHA-256 its lock (projenrc/shared-sources.json) records, which also names each file\'s',
    'upstream path. Why each release and commit was chosen is in the team\'s own ../shared, whose notes this copy lacks.',
    ...folders.flatMap((folder) => {
      const used = [...new Set(mine.filter((f) => f.file.split('/')[1] === folder).map((f) => f.source))];
      const [own, ...placed] = used.map((k) => lock.sources[k]);
      return [
        '',
        `## ${folder}/ — ${own.repo}`,
        '',
        `${ref(own)}, commit \`${own.commit}\`.`,
        ...placed.map((s) => `- also from ${s.repo}: ${ref(s).replace(/^Ref/, 'ref')}, commit \`${s.commit}\``),
      ];
    }),
    '',
  ].join('\n');
}

/** Runs `fn` over `items`, `jobs` at a time; every item runs, whatever the others do. */
async function pool(items, jobs, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(jobs, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/**
 * Lays the lock's files out in `into` from `base` (default: the lock's). Returns what it did; throws a SharedError
 * whose message lists every file that failed (the others are in place, verified).
 */
async function layOut({ into = DEFAULT_SHARED, base, jobs = 8, lockFile = LOCK_FILE, say = () => {} } = {}) {
  const lock = readLock(lockFile);
  const from = (base ?? lock.base).replace(/\/+$/, '');
  const problems = [];
  const todo = [];
  let present = 0;
  for (const f of lock.files) {
    try {
      const there = digestThere(path.join(into, ...f.file.split('/')));
      if (there === undefined) todo.push(f);
      else if (there === f.digest) present++;
      else problems.push(`${f.file}: sha256 ${there} there, the pinned file's is ${f.digest}: move it away and run ${COMMAND} again (nothing was overwritten)`);
    } catch (e) {
      if (!(e instanceof SharedError)) throw e;
      problems.push(e.message);
    }
  }
  // each source file once (several CRDs are cut out of one)
  const byUrl = new Map();
  for (const f of todo) {
    const s = lock.sources[f.source];
    const url = `${from}/${s.repo}/${s.commit}/${f.upstream.split('/').map(encodeURIComponent).join('/')}`;
    byUrl.set(url, [...(byUrl.get(url) ?? []), f]);
  }
  let fetched = 0;
  let bytes = 0;
  const urls = [...byUrl.keys()];
  await pool(urls, jobs, async (url) => {
    let data;
    try {
      data = await download(url);
    } catch (e) {
      if (!(e instanceof SharedError)) throw e;
      problems.push(`${byUrl.get(url).map((f) => f.file).join(', ')}: ${e.message}`);
      return;
    }
    for (const f of byUrl.get(url)) {
      try {
        const content = f.cut ? cutDocument(data.toString('utf8'), f.cut, url) : data;
        const digest = sha256(content);
        if (digest !== f.digest) throw new SharedError(`${url}: sha256 ${digest}, the lock says ${f.digest}: nothing written`);
        writeAtomically(path.join(into, ...f.file.split('/')), content);
        fetched++;
        bytes += content.length;
        if (fetched % 25 === 0) say(`shared: ${fetched}/${todo.length} files fetched and verified`);
      } catch (e) {
        if (!(e instanceof SharedError)) throw e;
        problems.push(`${f.file}: ${e.message}`);
      }
    }
  });
  // the checksums of upstream-installs (package-assets verifies every copy against them), and SOURCES.md where none is
  for (const [file, digest] of Object.entries(lock.sums)) {
    const folder = file.split('/')[0];
    const text = sumsText(lock.files, folder);
    if (sha256(text) !== digest) throw new SharedError(`${shown(lockFile)}: the files of ${folder}/ give a ${path.posix.basename(file)} of sha256 ${sha256(text)}, the lock says ${digest}`);
    const target = path.join(into, ...file.split('/'));
    const there = digestThere(target);
    if (there === undefined) writeAtomically(target, text);
    else if (there !== digest) problems.push(`${file}: differs from the pinned one: move it away and run ${COMMAND} again (nothing was overwritten)`);
  }
  for (const folder of FOLDERS) {
    const target = path.join(into, folder, 'SOURCES.md');
    if (fs.existsSync(path.join(into, folder)) && !fs.existsSync(target)) writeAtomically(target, sourcesText(lock, folder, from));
  }
  if (problems.length > 0) {
    const shownProblems = problems.slice(0, 10).map((p) => `  ${p}`);
    throw new SharedError(`${problems.length} of ${lock.files.length} pinned file(s) not laid out in ${shown(into)}:\n${shownProblems.join('\n')}`
      + `${problems.length > 10 ? `\n  ... and ${problems.length - 10} more` : ''}`);
  }
  return { files: lock.files.length, fetched, present, bytes, from, into };
}

/**
 * The one line a command that needs ../shared (`folders` of it) prints when it is missing (undefined when it is
 * there): what it is, and the command that lays it out.
 */
function missingShared(command, dir = DEFAULT_SHARED, folders = FOLDERS) {
  const absent = folders.filter((f) => !fs.statSync(path.join(dir, f), { throwIfNoEntry: false })?.isDirectory());
  if (absent.length === 0) return undefined;
  const what = absent.length === FOLDERS.length ? shown(dir) : absent.map((f) => shown(path.join(dir, f))).join(', ');
  return `${command}: ${what} is missing: the pinned upstream CRDs and installs this checkout builds from; lay it out with ${COMMAND} (docs/development.md#the-pinned-upstream-files-shared)`;
}

module.exports = { COMMAND, DEFAULT_SHARED, FOLDERS, LOCK_FILE, SharedError, cutDocument, layOut, missingShared, readLock };

function usage() {
  return [
    `usage: ${COMMAND} [-- --mirror URL] [--into DIR] [--jobs N]`,
    '',
    'Lays out the pinned upstream files of projenrc/shared-sources.json (../shared: crds/, upstream-installs/,',
    'upstream-samples/) from their public sources, https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>,',
    'or from --mirror URL (a copy with the same layout), each verified against its SHA-256. Files already there are',
    'verified and kept. --check COMMAND: exit 1 with one line when ../shared is missing (what the scripts that need it run first).',
  ].join('\n');
}

async function main(args) {
  const known = new Set(['--mirror', '--into', '--jobs', '--check', '--help', '-h']);
  const opts = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(`${usage()}\n`);
      return 0;
    }
    if (!known.has(a) || args[i + 1] === undefined) {
      process.stderr.write(`error: shared: ${known.has(a) ? `${a} needs a value` : `unknown argument ${JSON.stringify(a)}`}; see ${COMMAND} -- --help\n`);
      return 2;
    }
    opts[a.slice(2)] = args[++i];
  }
  if (opts.check !== undefined) {
    const line = missingShared(opts.check, opts.into ? path.resolve(opts.into) : DEFAULT_SHARED);
    if (line) process.stderr.write(`error: ${line}\n`);
    return line ? 1 : 0;
  }
  if (opts.mirror !== undefined && !/^https?:\/\/[^/]/.test(opts.mirror)) {
    process.stderr.write(`error: shared: --mirror ${opts.mirror}: an http:// or https:// URL\n`);
    return 2;
  }
  const jobs = opts.jobs === undefined ? 8 : Number(opts.jobs);
  if (!Number.isInteger(jobs) || jobs < 1 || jobs > 64) {
    process.stderr.write(`error: shared: --jobs ${opts.jobs}: a whole number from 1 to 64\n`);
    return 2;
  }
  const t0 = Date.now();
  try {
    // progress on a terminal only: one line redrawn in place, cleared at the end
    const tty = Boolean(process.stderr.isTTY);
    const say = tty ? (l) => process.stderr.write(`\r\x1b[K${l}`) : () => {};
    let r;
    try {
      r = await layOut({ into: opts.into ? path.resolve(opts.into) : DEFAULT_SHARED, base: opts.mirror, jobs, say });
    } finally {
      if (tty) process.stderr.write('\r\x1b[K');
    }
    process.stdout.write(`shared: ${r.files} pinned files in ${shown(r.into)}, every one verified (SHA-256): ${r.fetched} fetched from ${r.from} `
      + `(${(r.bytes / 2 ** 20).toFixed(1)} MiB), ${r.present} already there (${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof SharedError) && !(e instanceof SyntaxError) && e.code === undefined) throw e;
    process.stderr.write(`error: shared: ${e.message}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
