import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repositoryFindings } from '../../src/check/repository';
import { parseGitConfig, readGitRepo, repositoryKey } from '../../src/project/git';
import { fixtureProject, HAS_SCHEMAS, runCliInProcess } from '../helpers';
import { SNAPSHOT } from '../preflight/snapshots';

const temp = mkdtempSync(path.join(tmpdir(), 'git-facts-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** A checkout's .git folder as git writes it (no git is run): HEAD, config, and optional files relative to it. */
function checkout(root: string, opts: { branch?: string; config?: string; files?: Record<string, string> } = {}): string {
  const git = path.join(root, '.git');
  mkdirSync(git, { recursive: true });
  writeFileSync(path.join(git, 'HEAD'), opts.branch === undefined ? '9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b\n' : `ref: refs/heads/${opts.branch}\n`);
  writeFileSync(path.join(git, 'config'), opts.config ?? '[core]\n\trepositoryformatversion = 0\n');
  for (const [f, content] of Object.entries(opts.files ?? {})) {
    mkdirSync(path.dirname(path.join(git, f)), { recursive: true });
    writeFileSync(path.join(git, f), content);
  }
  return root;
}

const ORIGIN = '[remote "origin"]\n\turl = git@git.example.com:platform/clusters.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n';
const source = (repoURL: string, targetRevision: string) => [{ cluster: 'lab', repoURL, targetRevision }];

describe('the Git checkout, read from its files', () => {
  it('parses git config: sections, subsections, quoting, comments; the last value wins', () => {
    const c = parseGitConfig('# c\n[remote "origin"]\n\turl = "https://a/b.git" ; comment\n[Branch "Main"]\n\tremote = origin\n\tmerge = refs/heads/main\n[core.x]\nbare\n');
    expect(c.get('remote.origin.url')).toEqual(['https://a/b.git']);
    expect(c.get('branch.Main.merge')).toEqual(['refs/heads/main']);
    expect(c.get('core.x.bare')).toEqual(['true']);
  });

  it('names a repository the same whatever the form of its URL; a local path names none', () => {
    const key = 'git.example.com/platform/clusters';
    for (const u of ['https://git.example.com/platform/clusters.git', 'https://user@git.example.com:443/platform/clusters/', 'ssh://git@git.example.com:22/platform/clusters.git',
      'git@git.example.com:platform/clusters.git', 'GIT.example.com:platform/clusters']) expect(repositoryKey(u), u).toBe(key);
    expect(repositoryKey('https://git.example.com/platform/other.git')).not.toBe(key);
    for (const local of ['/srv/git/clusters.git', '../clusters', 'file:///srv/git/clusters.git', 'C:\\repos\\clusters']) expect(repositoryKey(local), local).toBeUndefined();
  });

  it('reads origin (insteadOf applied), the branch and where it pushes, origin\'s default branch, and tags; a worktree through its .git file', () => {
    const root = checkout(path.join(temp, 'main'), {
      branch: 'lab-2',
      config: `${ORIGIN}[branch "lab-2"]\n\tremote = origin\n\tmerge = refs/heads/lab\n[url "https://git.example.com/"]\n\tinsteadOf = git@git.example.com:\n`,
      files: { 'refs/remotes/origin/HEAD': 'ref: refs/remotes/origin/main\n', 'refs/tags/v1': 'x\n', 'packed-refs': '# pack-refs\nabc refs/tags/v2\n' },
    });
    const repo = readGitRepo(path.join(root, 'clusters'))!;
    expect(repo).toMatchObject({ root, origin: 'https://git.example.com/platform/clusters.git', branch: 'lab-2', pushedBranch: 'lab', originDefaultBranch: 'main' });
    expect([repo.hasTag('v1'), repo.hasTag('v2'), repo.hasTag('v3'), repo.hasTag('../HEAD')]).toEqual([true, true, false, false]);
    // a worktree: its own HEAD, the common folder's config
    const wt = path.join(temp, 'wt');
    mkdirSync(path.join(root, '.git', 'worktrees', 'wt'), { recursive: true });
    writeFileSync(path.join(root, '.git', 'worktrees', 'wt', 'HEAD'), 'ref: refs/heads/feature\n');
    writeFileSync(path.join(root, '.git', 'worktrees', 'wt', 'commondir'), '../..\n');
    mkdirSync(wt, { recursive: true });
    writeFileSync(path.join(wt, '.git'), `gitdir: ${path.join(root, '.git', 'worktrees', 'wt')}\n`);
    expect(readGitRepo(wt)).toMatchObject({ root: wt, origin: 'https://git.example.com/platform/clusters.git', branch: 'feature', pushedBranch: 'feature' });
    expect(readGitRepo(mkdtempSync(path.join(tmpdir(), 'no-git-')))).toBeUndefined();
  });

  it('warns when the description reads another repository or branch than the checkout pushes to; pins and local remotes are not compared', () => {
    const repo = readGitRepo(checkout(path.join(temp, 'warn'), { branch: 'main', config: ORIGIN, files: { 'refs/remotes/origin/HEAD': 'ref: refs/remotes/origin/main\n', 'refs/tags/v1': 'x' } }))!;
    expect(repositoryFindings(repo, source('https://git.example.com/platform/clusters.git', 'main'))).toEqual([]);
    expect(repositoryFindings(repo, source('https://git.example.com/platform/clusters', 'HEAD'))).toEqual([]);
    const other = repositoryFindings(repo, source('https://git.example.com/platform/other.git', 'main'));
    expect(other.map((f) => [f.rule, f.severity, f.cluster])).toEqual([['gitops-repository', 'warning', 'lab']]);
    expect(other[0].message).toBe(`gitops.repoURL is https://git.example.com/platform/other.git, but this repository's remote origin is git@git.example.com:platform/clusters.git (${repo.root}): `
      + 'Argo CD would sync another repository than the one you push dist/ to');
    expect(repositoryFindings(repo, source('https://git.example.com/platform/clusters.git', 'production'))[0].message)
      .toBe('gitops.targetRevision is production, but this checkout is on branch main: Argo CD syncs production; what you push here reaches the cluster only once merged into production');
    for (const pin of ['v1', '9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b']) expect(repositoryFindings(repo, source('https://git.example.com/platform/clusters.git', pin)), pin).toEqual([]);
    const onFeature = readGitRepo(checkout(path.join(temp, 'feature'), { branch: 'feature', config: ORIGIN, files: { 'refs/remotes/origin/HEAD': 'ref: refs/remotes/origin/main\n' } }))!;
    expect(repositoryFindings(onFeature, source('https://git.example.com/platform/clusters.git', 'HEAD'))[0].message)
      .toBe('gitops.targetRevision is HEAD, origin\'s default branch main, but this checkout is on branch feature: Argo CD syncs main; '
        + 'what you push here reaches the cluster only once merged into main');
    const local = readGitRepo(checkout(path.join(temp, 'local'), { branch: 'main', config: '[remote "origin"]\n\turl = /srv/git/clusters.git\n' }))!;
    expect(repositoryFindings(local, source('https://git.example.com/platform/other.git', 'main'))).toEqual([]);
    // the branch of a checkout that is not the repository Argo CD reads (a local or no origin, another repository) is not compared
    expect(repositoryFindings(local, source('https://git.example.com/platform/clusters.git', 'production'))).toEqual([]);
    const none = readGitRepo(checkout(path.join(temp, 'none'), { branch: 'feature' }))!;
    expect(repositoryFindings(none, source('https://git.example.com/platform/clusters.git', 'main'))).toEqual([]);
    expect(repositoryFindings(onFeature, source('https://git.example.com/platform/other.git', 'main')).map((f) => f.message))
      .toEqual([expect.stringMatching(/^gitops.repoURL is https:\/\/git.example.com\/platform\/other.git, but/)]);
  });
});

describe.skipIf(!HAS_SCHEMAS)('synth, check and init read the project\'s checkout', () => {
  it('synth and check warn (exit 0) when a description reads another repository than origin; init takes --repo from origin', async () => {
    const project = fixtureProject('git-project-');
    try {
      checkout(project, { branch: 'main', config: ORIGIN.replace('platform/clusters', 'platform/elsewhere') });
      const synth = await runCliInProcess(['synth'], { cwd: project });
      expect(synth.code, synth.stderr).toBe(0);
      expect(synth.stderr).toMatch(/^warning \[gitops-repository\] instant-cluster: gitops.repoURL is https:\/\/git.example.com\/platform\/clusters.git, but this repository's remote origin is git@git.example.com:platform\/elsewhere.git/m);
      expect(synth.stderr).toMatch(/^warning \[gitops-repository\] training-cluster: /m);
      const check = await runCliInProcess(['check'], { cwd: project });
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toMatch(/^warning \[gitops-repository\] instant-cluster: gitops.repoURL is /m);
      const init = await runCliInProcess(['init', '--snapshot', SNAPSHOT, '--name', 'lab'], { cwd: project });
      expect(init.code, init.stderr).toBe(0);
      const text = readFileSync(path.join(project, 'clusters', 'lab.yaml'), 'utf8');
      expect(parse(text).gitops.repoURL).toBe('git@git.example.com:platform/elsewhere.git');
      expect(text).toMatch(/repoURL: git@git.example.com:platform\/elsewhere.git # from the remote origin of this Git checkout/);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});
