import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { ROOT, SHARED } from '../paths';

/*
 * `npm pack` of this checkout, once per content: its 5 s of npm's own walking and the gzip of 36 MB are the
 * same for the same files, so the pack test packs afresh only when something the tarball is made of changed
 * (a clean clone, as CI's, always packs). The key is a digest of everything `npm pack` reads: package.json
 * (its `files`, its prepack script), the files under every folder the `files` list names (lib/assets/
 * excepted: prepack writes it anew from ../shared), the files npm always adds, the prepack's scripts
 * (projenrc/) and the ../shared folders they copy, and npm's and node's versions. A tarball is reused only
 * when its sha512 is the one recorded when npm made it.
 */

export interface Packed {
  /** The tarball, in the folder asked for. */
  readonly tarball: string;
  /** What `npm pack --json` said of it. */
  readonly info: { filename: string; size: number; unpackedSize: number; entryCount: number; files: { path: string }[] };
  /** Whether npm packed it in this run (else: a tarball npm made of the same content). */
  readonly fresh: boolean;
}

const CACHE = path.join(ROOT, 'node_modules', '.cache', 'pack-test');
const NPM_ALWAYS = ['package.json', 'README.md', 'LICENSE', '.npmignore', '.gitignore'];

function addTree(hash: ReturnType<typeof createHash>, root: string, rel: string, skip: (rel: string) => boolean): void {
  const at = path.join(root, rel);
  if (!existsSync(at)) {
    hash.update(`absent ${rel}\0`);
    return;
  }
  if (statSync(at).isFile()) {
    hash.update(`file ${rel}\0`).update(readFileSync(at)).update('\0');
    return;
  }
  for (const name of readdirSync(at).sort()) {
    const child = rel ? `${rel}/${name}` : name;
    if (!skip(child)) addTree(hash, root, child, skip);
  }
}

/** The npm `npm pack` runs as (the first on PATH): its package.json's version. */
function npmVersion(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const npm = path.join(dir, 'npm');
    if (!existsSync(npm)) continue;
    const manifest = path.join(path.dirname(realpathSync(npm)), '..', 'package.json');
    return existsSync(manifest) ? (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version : realpathSync(npm);
  }
  return 'none';
}

/** The digest of what `npm pack` of this checkout is made of (lib/ compiled first, as prepack does). */
export function packInputsDigest(): string {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
  const hash = createHash('sha256').update(`npm ${npmVersion()} node ${process.version}\0`);
  // the folder (or file) each `files` pattern starts from: everything below it, a superset of what ships
  const roots = new Set(manifest.files.filter((f) => !f.startsWith('!')).map((f) => f.split(/[*?[{]/)[0].replace(/\/$/, '')));
  for (const rel of [...roots, ...NPM_ALWAYS, 'projenrc'].sort()) addTree(hash, ROOT, rel, (r) => r === 'lib/assets' || r.startsWith('lib/assets/'));
  const { ASSETS } = createRequire(__filename)(path.join(ROOT, 'projenrc', 'package-assets.cjs')) as { ASSETS: { from: string; base?: string }[] };
  for (const asset of ASSETS) addTree(hash, asset.base === 'repo' ? ROOT : SHARED, asset.from, () => false);
  return hash.digest('hex');
}

const sha512 = (file: string) => createHash('sha512').update(readFileSync(file)).digest('base64');

/**
 * This checkout packed into `destination`: `npm pack` when the digest of its inputs has no tarball yet (or
 * one whose bytes are no longer those npm wrote), else that tarball. `run` runs npm (the caller's environment).
 */
export function packOnce(destination: string, run: (args: string[]) => { status: number | null; stdout: string; stderr: string }): Packed {
  const compiled = spawnSync(process.execPath, [path.join(ROOT, 'projenrc', 'launch.cjs'), '--compile'], { cwd: ROOT, encoding: 'utf8' });
  if (compiled.status !== 0) throw new Error(`compiling before npm pack failed:\n${compiled.stderr}`);
  const digest = packInputsDigest();
  const record = path.join(CACHE, `${digest}.json`);
  if (existsSync(record)) {
    const { info, sha512: recorded } = JSON.parse(readFileSync(record, 'utf8')) as { info: Packed['info']; sha512: string };
    const cached = path.join(CACHE, `${digest}.tgz`);
    if (existsSync(cached) && sha512(cached) === recorded) {
      const tarball = path.join(destination, info.filename);
      copyFileSync(cached, tarball);
      return { tarball, info, fresh: false };
    }
  }
  const r = run(['pack', '--json', '--pack-destination', destination]);
  if (r.status !== 0) throw new Error(`npm pack: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
  const [info] = JSON.parse(r.stdout) as Packed['info'][];
  const tarball = path.join(destination, info.filename);
  // one tarball kept: the last content packed
  rmSync(CACHE, { recursive: true, force: true });
  mkdirSync(CACHE, { recursive: true });
  const tmp = path.join(CACHE, `${digest}.tgz.tmp-${process.pid}`);
  copyFileSync(tarball, tmp);
  renameSync(tmp, path.join(CACHE, `${digest}.tgz`));
  writeFileSync(`${record}.tmp-${process.pid}`, JSON.stringify({ info, sha512: sha512(tarball) }));
  renameSync(`${record}.tmp-${process.pid}`, record);
  return { tarball, info, fresh: true };
}
