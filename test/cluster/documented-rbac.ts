import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { PolicyRule } from '../../src/preflight/reads';
import { fencedBlocks } from '../docs/markdown-blocks';
import { ROOT } from '../paths';

/** The page of the documentation that gives the identities' ClusterRoles. */
export const RBAC_PAGE = path.join(ROOT, 'docs', 'commands.md');

/**
 * The rules of a ClusterRole as the documentation gives it (a ```yaml block of docs/commands.md holding a ClusterRole
 * of that name): what the control plane tests bind their identities to, so that what the docs tell a user to grant is
 * what the tests prove enough, and no more.
 */
export function documentedClusterRole(name: string, page = RBAC_PAGE): PolicyRule[] {
  const found: PolicyRule[][] = [];
  for (const block of fencedBlocks(page, readFileSync(page, 'utf8')).filter((b) => b.info === 'yaml')) {
    for (const doc of parseAllDocuments(block.body)) {
      const o = doc.toJS() as { kind?: string; metadata?: { name?: string }; rules?: PolicyRule[] } | null;
      if (o?.kind === 'ClusterRole' && o.metadata?.name === name) found.push(o.rules ?? []);
    }
  }
  if (found.length !== 1) throw new Error(`${path.relative(ROOT, page)}: expected one ClusterRole ${name} in its yaml blocks, found ${found.length}`);
  return found[0];
}
