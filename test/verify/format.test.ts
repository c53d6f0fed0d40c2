import { describe, expect, it } from 'vitest';
import { VerifyFinding, VerifyResult } from '../../src/verify/dry-run';
import { verifyText } from '../../src/verify/format';

/*
 * verify's text for people, on findings made here (what the API server answers: test/cluster/live-commands.test.ts).
 * On a fresh cluster most objects cannot be dry-run yet (their CRD or namespace comes earlier in the same sync): one
 * line for all of them, by what brings them; each with --verbose.
 */

const base = { application: 'lab-kueue', wave: 1, apiVersion: 'kueue.x-k8s.io/v1beta2' } as const;
const pendingCrd = (i: number): VerifyFinding => ({
  ...base,
  severity: 'info',
  type: 'crd-pending',
  object: `ClusterQueue q${i}`,
  after: 'wave 0 (Application lab-kueue-install)',
  message: 'not verified yet: its CRD arrives with wave 0 (Application lab-kueue-install), which syncs before it',
});
const bootstrapNs: VerifyFinding = {
  application: 'lab-argocd',
  wave: null,
  apiVersion: 'v1',
  severity: 'info',
  type: 'namespace-pending',
  object: 'ConfigMap argocd/argocd-cm',
  after: 'the bootstrap (kubectl apply --server-side -k dist/lab/argocd)',
  message: 'not verified yet: its namespace argocd arrives with the bootstrap (kubectl apply --server-side -k dist/lab/argocd), which applies it first',
};
const refused: VerifyFinding = { ...base, severity: 'error', type: 'refused', object: 'ClusterQueue bad', status: 422, message: 'refused (HTTP 422 Invalid): spec: bad' };
const drift: VerifyFinding = { ...base, severity: 'info', type: 'drift', object: 'ClusterQueue research', paths: ['spec.cohort'], message: 'the sync would change spec.cohort' };
const result = (findings: VerifyFinding[]): VerifyResult => ({
  findings,
  counts: {
    checked: 200,
    accepted: 0,
    unchanged: 3,
    changed: findings.filter((f) => f.type === 'drift').length,
    created: 40,
    refused: findings.filter((f) => f.severity === 'error').length,
    pending: findings.filter((f) => f.type.endsWith('-pending')).length,
    warned: findings.filter((f) => f.type === 'server-warning').length,
  },
});

describe('verify as text', () => {
  const findings = [bootstrapNs, ...Array.from({ length: 149 }, (_, i) => pendingCrd(i)), drift, refused];

  it('the refusals on stderr; what would change; one line for the objects not verified yet, by what brings them; the counts', () => {
    const text = verifyText('lab', 'https://127.0.0.1:6443', result(findings));
    expect(text.err).toEqual(['error: lab-kueue (wave 1): ClusterQueue bad: refused (HTTP 422 Invalid): spec: bad']);
    expect(text.out).toEqual([
      'info: lab-kueue (wave 1): ClusterQueue research: the sync would change spec.cohort',
      'not verified yet: 150 object(s) whose CRD or namespace the sync brings before them, which a dry run cannot create: 1 after the bootstrap '
        + '(kubectl apply --server-side -k dist/lab/argocd), 149 after wave 0 (Application lab-kueue-install) (--verbose names each)',
      'REFUSED: lab against https://127.0.0.1:6443: 200 objects dry-run as Argo CD syncs them: 1 refused, 150 not verified yet (their CRD or namespace comes first), '
        + '1 would change, 40 would be created, 3 unchanged',
    ]);
    expect(text.out.join('\n')).not.toMatch(/wave 1.*argocd-cm/);
  });

  it('--verbose: each object not verified yet on its line, the bootstrap\'s named as the bootstrap\'s', () => {
    const text = verifyText('lab', 'https://127.0.0.1:6443', result(findings), { verbose: true });
    expect(text.out).toHaveLength(findings.length - 1 + 1);
    expect(text.out).toContain('info: lab-argocd (bootstrap): ConfigMap argocd/argocd-cm: not verified yet: its namespace argocd arrives with the bootstrap '
      + '(kubectl apply --server-side -k dist/lab/argocd), which applies it first');
  });

  it('the warnings first on stdout (the fields the API server drops: unknown, given twice), counted; exit stays 0', () => {
    const dropped = (object: string, warning: string): VerifyFinding => ({
      ...base,
      severity: 'warning',
      type: 'server-warning',
      object,
      warnings: [warning],
      message: `accepted with a warning of the API server, as Argo CD (client-side apply) applies it (no fieldValidation: an unknown field is dropped, not refused): ${warning}`,
    });
    const unknown = dropped('ClusterQueue research', 'unknown field "spec.sideways"');
    const twice = dropped('LocalQueue team-a/default', 'duplicate field "spec.clusterQueue"');
    const text = verifyText('lab', 's', result([drift, unknown, twice]));
    expect(text.err).toEqual([]);
    expect(text.out.slice(0, 3)).toEqual([
      `warning: lab-kueue (wave 1): ClusterQueue research: ${unknown.message}`,
      `warning: lab-kueue (wave 1): LocalQueue team-a/default: ${twice.message}`,
      'info: lab-kueue (wave 1): ClusterQueue research: the sync would change spec.cohort',
    ]);
    expect(text.out.at(-1)).toMatch(/^ok: lab against s: .* 3 unchanged; 2 with a warning$/);
    expect(verifyText('lab', 's', result([unknown, twice]), { quiet: true })).toEqual({ out: [], err: [] });
  });

  it('--quiet: the refusals only; nothing at all when there is none', () => {
    expect(verifyText('lab', 's', result(findings), { quiet: true })).toEqual({ out: [], err: ['error: lab-kueue (wave 1): ClusterQueue bad: refused (HTTP 422 Invalid): spec: bad'] });
    expect(verifyText('lab', 's', result([drift, pendingCrd(1)]), { quiet: true })).toEqual({ out: [], err: [] });
  });
});
