import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';

/**
 * Git over smart HTTP on loopback: the bare repositories of a folder, served read-only by git's own `git
 * http-backend` (the CGI every Git host runs behind its web server), one process per request. What the twin's Argo
 * CD reads its repositories from, and kustomize its remote bases: an `http://127.0.0.1:<port>/<path>.git` URL is a
 * repository URL the cluster description accepts (`gitops.repoURL`, `mirrors.git`), so the render needs no rewriting.
 * A static file server is not enough: kustomize fetches remote bases with `git fetch --depth=1`, which needs the
 * protocol.
 *
 * Imports nothing but Node's own modules (the twin's process management: no test framework).
 */

/** git as every helper here runs it: no user or system configuration, a fixed identity. */
export function gitEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'gpu-cluster-manifests tests',
    GIT_AUTHOR_EMAIL: 'tests@gpu-cluster-manifests.invalid',
    GIT_COMMITTER_NAME: 'gpu-cluster-manifests tests',
    GIT_COMMITTER_EMAIL: 'tests@gpu-cluster-manifests.invalid',
    ...extra,
  };
}

/** Runs git; answers its standard output, or throws with its standard error. */
export function git(args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const r = spawnSync('git', args, { cwd: opts.cwd, env: gitEnv(opts.env), encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? '').trim()}`);
  return r.stdout;
}

/** A bare repository at `<root>/<name>` (`name` ends in `.git`), made when it is not there yet. */
export function bareRepository(root: string, name: string): string {
  const dir = path.join(root, name);
  if (!existsSync(path.join(dir, 'HEAD'))) {
    mkdirSync(dir, { recursive: true });
    git(['init', '--quiet', '--bare', '--initial-branch=main', dir]);
  }
  return dir;
}

/**
 * Commits the whole of `tree` (a folder) as the next commit of `branch` of a bare repository, as a push of that tree
 * would (the previous commit its parent; files not in `tree` deleted), tags it when `tag` is given, and answers the
 * commit's SHA. The bare repository's own index and a work tree pointed at `tree` do it: nothing is written into
 * `tree`.
 */
export function commitTree(bare: string, tree: string, message: string, opts: { branch?: string; tag?: string } = {}): string {
  const branch = opts.branch ?? 'main';
  const env = { GIT_DIR: bare, GIT_WORK_TREE: tree, GIT_INDEX_FILE: path.join(bare, `index-${branch}`) };
  const parent = spawnSync('git', ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { env: gitEnv(env), encoding: 'utf8' }).stdout.trim();
  git(['read-tree', ...(parent ? [parent] : ['--empty'])], { env });
  git(['add', '--all', '--force', '.'], { env, cwd: tree });
  const treeId = git(['write-tree'], { env }).trim();
  const commit = git(['commit-tree', treeId, ...(parent ? ['-p', parent] : []), '-m', message], { env }).trim();
  git(['update-ref', `refs/heads/${branch}`, commit, ...(parent ? [parent] : [])], { env });
  if (opts.tag) git(['tag', '--force', opts.tag, commit], { env });
  return commit;
}

/** One request the server answered: method, path, status (what reached out to it, for a test's assertions). */
export interface GitRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

/** The CGI response header block of http-backend: status and headers, and where the body starts. */
function cgiHead(buf: Buffer): { status: number; headers: Record<string, string>; body: Buffer } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  const [at, sep] = end >= 0 && (lf < 0 || end < lf) ? [end, 4] : lf >= 0 ? [lf, 2] : [-1, 0];
  if (at < 0) return undefined;
  const headers: Record<string, string> = {};
  let status = 200;
  for (const line of buf.subarray(0, at).toString('latin1').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const k = line.slice(0, i).trim();
    const v = line.slice(i + 1).trim();
    if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]) || 500;
    else headers[k] = v;
  }
  return { status, headers, body: buf.subarray(at + sep) };
}

/** A loopback smart-HTTP Git server of the bare repositories under a folder (startGitServer). */
export class GitServer {
  /** Every request answered, in order. */
  readonly requests: GitRequest[] = [];

  /** @internal */
  constructor(
    /** The folder of the bare repositories: `<url>/<name>` serves `<root>/<name>`. */
    readonly root: string,
    private readonly server: http.Server,
    /** `http://127.0.0.1:<port>` */
    readonly url: string,
  ) {}

  /** The URL of a repository of the root (`name` as under the root, `platform/clusters.git`). */
  repoUrl(name: string): string {
    return `${this.url}/${name}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** Serves the bare repositories under `root` on a free port of 127.0.0.1, read-only (no push over HTTP). */
export async function startGitServer(root: string): Promise<GitServer> {
  mkdirSync(root, { recursive: true });
  let self: GitServer | undefined;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const record = (status: number) => self?.requests.push({ method: req.method ?? 'GET', path: url.pathname, status });
    // read-only: receive-pack (a push) is refused here, and http-backend refuses it too without a user
    if (url.pathname.endsWith('/git-receive-pack') || url.searchParams.get('service') === 'git-receive-pack' || url.pathname.includes('..')) {
      record(403);
      res.writeHead(403).end();
      return;
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...gitEnv(),
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.replace(/^\?/, ''),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let head: Buffer = Buffer.alloc(0);
    let started = false;
    let stderr = '';
    cgi.stderr.on('data', (c: Buffer) => { stderr = (stderr + c.toString()).slice(-4096); });
    cgi.stdout.on('data', (c: Buffer) => {
      if (started) {
        res.write(c);
        return;
      }
      head = Buffer.concat([head, c]);
      const parsed = cgiHead(head);
      if (!parsed) return;
      started = true;
      record(parsed.status);
      res.writeHead(parsed.status, parsed.headers);
      if (parsed.body.length > 0) res.write(parsed.body);
    });
    cgi.on('error', () => {
      if (!started) res.writeHead(500).end();
    });
    cgi.on('close', (code) => {
      if (!started) {
        record(500);
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`git http-backend exited ${code}: ${stderr}`);
      } else {res.end();}
    });
    req.pipe(cgi.stdin);
    cgi.stdin.on('error', () => {});
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  self = new GitServer(root, server, `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`);
  return self;
}
