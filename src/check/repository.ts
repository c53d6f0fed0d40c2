import { Finding } from './rule';
import { maskCredentials } from '../errors';
import { GitRepo, repositoryKey } from '../project/git';

/** Where a description tells Argo CD to read its cluster's manifests (gitops.repoURL and targetRevision). */
export interface GitopsSource {
  readonly cluster: string;
  readonly repoURL: string;
  readonly targetRevision: string;
}

/** The id of the findings below (warnings of synth and check; not a rule of the tree). */
export const REPOSITORY_RULE = 'gitops-repository';

/** A full commit id (Argo CD syncs exactly it, whatever the branch). */
const COMMIT = /^[0-9a-f]{40}$/i;

/**
 * What a description's gitops source says that the clusters repository contradicts: Argo CD would read another
 * repository than the one this checkout pushes to (remote `origin`), or another branch than the one checked out
 * (`HEAD`: origin's default branch, when the checkout knows it). A commit id or a tag of the checkout is a pin and is
 * not compared; a remote that is a local path is no server Argo CD reads, and is not compared either. The branch is
 * compared only in the repository Argo CD reads (origin is gitops.repoURL): another checkout's branch (no origin, a
 * local one, or another repository, which is warned of already) says nothing of what Argo CD syncs.
 */
export function repositoryFindings(repo: GitRepo | undefined, sources: readonly GitopsSource[]): Finding[] {
  if (!repo) return [];
  const out: Finding[] = [];
  const warn = (cluster: string, message: string) => out.push({ rule: REPOSITORY_RULE, severity: 'warning', cluster, message, objects: [] });
  const originKey = repo.origin === undefined ? undefined : repositoryKey(repo.origin);
  for (const s of sources) {
    const key = repositoryKey(s.repoURL);
    if (originKey === undefined) continue;
    if (key !== originKey) {
      warn(s.cluster, `gitops.repoURL is ${s.repoURL}, but this repository's remote origin is ${maskCredentials(repo.origin ?? '')} (${repo.root}): `
        + 'Argo CD would sync another repository than the one you push dist/ to');
      continue;
    }
    const wanted = s.targetRevision.replace(/^refs\/heads\//, '');
    if (repo.pushedBranch === undefined || COMMIT.test(wanted) || repo.hasTag(wanted.replace(/^refs\/tags\//, ''))) continue;
    const branch = wanted === 'HEAD' ? repo.originDefaultBranch : wanted;
    if (branch !== undefined && branch !== repo.pushedBranch) {
      const what = wanted === 'HEAD' ? `HEAD, origin's default branch ${branch}` : branch;
      warn(s.cluster, `gitops.targetRevision is ${what}, but this checkout is on branch ${repo.branch}`
        + `${repo.pushedBranch !== repo.branch ? ` (pushed to ${repo.pushedBranch})` : ''}: Argo CD syncs ${branch}; what you push here reaches the cluster `
        + `only once merged into ${branch}`);
    }
  }
  return out;
}
