import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';

/**
 * What the Git checkout of a clusters repository says about where it pushes, read from its files (`.git/HEAD`,
 * `.git/config`, `refs/remotes/origin/HEAD`): nothing is run, so nothing a description or a repository holds can
 * become a command or a flag. Only the repository's own config is read (not ~/.gitconfig, nor includes).
 */
export interface GitRepo {
  /** The folder holding `.git`. */
  readonly root: string;
  /** The URL of the remote `origin` (its `url.<base>.insteadOf` rewrites of this config applied), if there is one. */
  readonly origin?: string;
  /** The branch checked out (undefined: a detached HEAD). */
  readonly branch?: string;
  /** The branch of origin that branch pushes to and pulls from (`branch.<name>.merge` with `remote = origin`), else the branch. */
  readonly pushedBranch?: string;
  /** origin's default branch, as `git clone` recorded it (`refs/remotes/origin/HEAD`), if known. */
  readonly originDefaultBranch?: string;
  /** Whether a tag of this name exists in the checkout (refs/tags/ or packed-refs). */
  hasTag(name: string): boolean;
}

/** At most this much of a Git file is read (a config, HEAD, packed-refs): a repository's files are input too. */
const MAX_READ = 4 * 1024 * 1024;

/** A regular file's text (its first MAX_READ bytes), or undefined when there is none. */
function readSmall(file: string): string | undefined {
  try {
    if (!statSync(file).isFile()) return undefined;
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(Math.min(statSync(file).size, MAX_READ));
      const n = readSync(fd, buf, 0, buf.length, 0);
      return buf.subarray(0, n).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** The git folder of a checkout (`.git`, or where a `.git` file's `gitdir:` points: a worktree, a submodule). */
function gitDirOf(root: string): string | undefined {
  const dotGit = path.join(root, '.git');
  let st;
  try {
    st = statSync(dotGit);
  } catch {
    return undefined;
  }
  if (st.isDirectory()) return dotGit;
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(readSmall(dotGit) ?? '');
  return m ? path.resolve(root, m[1]) : undefined;
}

/** Git config, parsed: values by `section.subsection.key` (section and key lower-cased, subsection as written); the last wins. */
export function parseGitConfig(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/.exec(line);
    if (head) {
      const [name, ...rest] = head[1].split('.');
      const sub = head[2] !== undefined ? head[2].replace(/\\(.)/g, '$1') : rest.join('.');
      section = sub ? `${name.toLowerCase()}.${sub}` : name.toLowerCase();
      continue;
    }
    const kv = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(line);
    if (!kv || section === '') continue;
    let value = (kv[2] ?? 'true').replace(/\s+[#;].*$/, '');
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1).replace(/\\(.)/g, '$1');
    const key = `${section}.${kv[1].toLowerCase()}`;
    out.set(key, [...(out.get(key) ?? []), value.trim()]);
  }
  return out;
}

/** A URL with the longest `url.<base>.insteadOf` prefix of the config rewritten, as git does. */
function rewriteInsteadOf(url: string, config: ReadonlyMap<string, string[]>): string {
  let best: { base: string; prefix: string } | undefined;
  for (const [key, values] of config) {
    const m = /^url\.(.+)\.insteadof$/.exec(key);
    if (!m) continue;
    for (const prefix of values) if (url.startsWith(prefix) && (!best || prefix.length > best.prefix.length)) best = { base: m[1], prefix };
  }
  return best ? best.base + url.slice(best.prefix.length) : url;
}

/** The Git checkout `from` is in (the nearest folder above with `.git`), read; undefined outside one. */
export function readGitRepo(from: string): GitRepo | undefined {
  let root = path.resolve(from);
  for (let depth = 0; depth < 256 && !existsSync(path.join(root, '.git')); depth++) {
    const up = path.dirname(root);
    if (up === root) return undefined;
    root = up;
  }
  const gitDir = gitDirOf(root);
  if (!gitDir) return undefined;
  // a worktree keeps its HEAD; its config and refs are the common folder's
  const common = (() => {
    const c = readSmall(path.join(gitDir, 'commondir'))?.trim();
    return c ? path.resolve(gitDir, c) : gitDir;
  })();
  const config = parseGitConfig(readSmall(path.join(common, 'config')) ?? '');
  const last = (key: string) => config.get(key)?.at(-1);
  const head = /^ref:\s*refs\/heads\/(.+?)\s*$/m.exec(readSmall(path.join(gitDir, 'HEAD')) ?? '')?.[1];
  const originUrl = last('remote.origin.url');
  const merge = head !== undefined && last(`branch.${head}.remote`) === 'origin' ? last(`branch.${head}.merge`)?.replace(/^refs\/heads\//, '') : undefined;
  const originHead = /^ref:\s*refs\/remotes\/origin\/(.+?)\s*$/m.exec(readSmall(path.join(common, 'refs', 'remotes', 'origin', 'HEAD')) ?? '')?.[1];
  let packed: string | undefined;
  return {
    root,
    ...(originUrl ? { origin: rewriteInsteadOf(originUrl, config) } : {}),
    ...(head ? { branch: head, pushedBranch: merge ?? head } : {}),
    ...(originHead ? { originDefaultBranch: originHead } : {}),
    hasTag(name: string): boolean {
      if (name.includes('..') || name.startsWith('/')) return false;
      if (existsSync(path.join(common, 'refs', 'tags', name))) return true;
      packed ??= readSmall(path.join(common, 'packed-refs')) ?? '';
      return packed.split('\n').some((l) => l.endsWith(` refs/tags/${name}`));
    },
  };
}

/**
 * A repository URL reduced to what names the repository: host (lower case, no user, no port) and path (no `.git`,
 * no slashes around), for `https://`, `ssh://`, `git://` URLs and scp-like `user@host:path`. Undefined for a local
 * path or `file://` (no server Argo CD could read).
 */
export function repositoryKey(url: string): string | undefined {
  const u = url.trim();
  let host: string;
  let p: string;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/(?:[^@/]*@)?([^/:]+)(?::\d+)?(\/.*)?$/i.exec(u);
  const scp = /^(?:[^@/]+@)?([^/:]+):(?!\/\/)(.+)$/.exec(u);
  if (scheme) {
    if (scheme[1].toLowerCase() === 'file') return undefined;
    [host, p] = [scheme[2], scheme[3] ?? ''];
  } else if (scp && !/^[A-Za-z]$/.test(scp[1])) {
    [host, p] = [scp[1], scp[2]];
  } else {
    return undefined;
  }
  const clean = p.replace(/^\/+/, '').replace(/\/+$/, '').replace(/\.git$/, '');
  return `${host.toLowerCase()}/${clean}`;
}
