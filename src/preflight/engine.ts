import { existsSync } from 'node:fs';
import { API_RULES } from './apis';
import { ARGOCD_RULES } from './argocd';
import { DRIFT_RULES } from './drift';
import { FOREIGN_CONFIG_RULES } from './foreign-config';
import { IMMUTABLE_RULES } from './immutable';
import { STATE_RULES } from './incomplete';
import { ISOLATION_RULES } from './isolation';
import { QUOTA_RULES } from './quota';
import { RELEASE_RULES } from './releases';
import type { CrdFileOf } from './remedies';
import { PreflightContext, PreflightFinding, PreflightRule, RenderedObject } from './rule';
import { ClusterState } from './state';
import { TAKEOVER_RULES } from './takeover';
import { printable } from '../errors';
import { valueAt } from '../json';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../paths';
import { RenderedCluster, RenderedFolder } from '../render/manifest';

/** Every preflight rule, by family. */
export const PREFLIGHT_RULES: readonly PreflightRule[] = [
  ...STATE_RULES, ...IMMUTABLE_RULES, ...QUOTA_RULES, ...API_RULES, ...RELEASE_RULES, ...DRIFT_RULES, ...FOREIGN_CONFIG_RULES, ...TAKEOVER_RULES,
  ...ARGOCD_RULES, ...ISOLATION_RULES,
];

/** Whether a folder's kustomization lists only files of the folder: what it syncs is exactly its rendered objects. */
function ownFilesOnly(folder: RenderedFolder): boolean {
  return (folder.kustomization?.bases ?? []).length === 0;
}

/**
 * Application name per rendered folder whose objects are all in the render, read from the rendered Applications'
 * source paths. A folder that pulls in more than its own files (the argocd folder's upstream install, a remote
 * base) syncs objects the render does not hold, so what its Application tracks cannot be judged without building
 * it: left out, as are sources of other folders (an upstream overlay's path).
 */
function applicationsOf(cluster: RenderedCluster): Map<string, string> {
  const folders = new Map(cluster.folders.map((f) => [f.folder, f]));
  const out = new Map<string, string>();
  for (const f of cluster.folders) {
    for (const m of f.objects) {
      if (m.kind !== 'Application') continue;
      const p = valueAt(m, ['spec', 'source', 'path']);
      if (typeof p !== 'string') continue;
      const folder = p.split('/').pop()!;
      const rendered = folders.get(folder);
      if (rendered && ownFilesOnly(rendered)) out.set(folder, m.metadata.name);
    }
  }
  return out;
}

/** Compares a rendered cluster with a cluster state; findings in rule order. */
export function preflight(
  cluster: RenderedCluster, state: ClusterState, rules: readonly PreflightRule[] = PREFLIGHT_RULES,
  options: Pick<PreflightContext, 'crdFileOf' | 'roots' | 'cacheDir'> = {},
): PreflightFinding[] {
  const rendered: RenderedObject[] = cluster.folders.flatMap((f) => f.objects.map((manifest) => ({ folder: f.folder, manifest })));
  const roots = options.roots ?? (existsSync(DEFAULT_SCHEMAS) ? { schemas: DEFAULT_SCHEMAS, upstream: DEFAULT_UPSTREAM } : undefined);
  const ctx: PreflightContext = {
    model: cluster.model, rendered, state, applications: applicationsOf(cluster), crdFileOf: options.crdFileOf, roots, cacheDir: options.cacheDir,
  };
  return rules.flatMap((r) => r.check(ctx));
}

/** Longest line of a finding; rules summarise long lists, this bounds what they did not foresee. */
const MAX_FINDING_LINE = 2000;

function bounded(line: string): string {
  return line.length <= MAX_FINDING_LINE ? line : `${line.slice(0, MAX_FINDING_LINE)}... (${line.length - MAX_FINDING_LINE} more characters)`;
}

/** A value of a change as YAML would say it, short: a long one cut (the JSON has it whole). */
function shown(v: unknown): string {
  if (v === undefined) return '(unset)';
  const s = JSON.stringify(v);
  return s.length > 100 ? `${s.slice(0, 97)}...` : s;
}

/**
 * `error [rule] Kind ns/name: message`, each field it changes on a line of its own (old -> new, and the description
 * field that keeps the old value), and the fix; what the cluster holds is never printed raw.
 */
export function formatPreflightFinding(f: PreflightFinding): string[] {
  return [
    bounded(printable(`${f.severity} [${f.rule}] ${f.object}: ${f.message}`)),
    ...(f.changes ?? []).map((c) => bounded(printable(`  ${c.path}: ${shown(c.from)} -> ${shown(c.to)}`
      + `${c.keep ? ` (keeps ${shown(c.from)}: ${c.keep.field}: ${shown(c.keep.value)})` : ''}`))),
    bounded(`  fix: ${printable(f.fix)}`),
  ];
}
