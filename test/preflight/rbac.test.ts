import { describe, expect, it } from 'vitest';
import { isBuiltInGroup } from '../../src/components/gitops/api-kinds';
import { DEFAULT_SCHEMAS } from '../../src/paths';
import { BASE_CUSTOM_KINDS, PREFLIGHT_CLUSTER_ROLE, preflightRbacRules, RENDERED_CUSTOM_KINDS } from '../../src/preflight/reads';
import { apiGroup } from '../../src/render/manifest';
import { loadModels } from '../../src/synth/pipeline';
import { renderCluster } from '../../src/synth/render';
import { vendoredCrds } from '../../src/twin/argocd-sync';
import { documentedClusterRole } from '../cluster/documented-rbac';
import { serviceMonitorCrd } from '../helpers';
import { REFERENCE_FILE, TRAINING_FILE } from '../paths';

/*
 * The least-privilege identity of preflight and init: the ClusterRole docs/commands.md tells users to grant is
 * exactly what src/preflight/reads.ts reads (test/cluster/live-commands.test.ts proves it enough against a real
 * API server, and that it reads no Secret), with the resource names the CRDs give.
 */

describe('the documented ClusterRole of preflight and init', () => {
  it('is get and list on exactly what preflight reads, per API group', () => {
    expect(documentedClusterRole(PREFLIGHT_CLUSTER_ROLE)).toEqual(preflightRbacRules());
    expect(preflightRbacRules().flatMap((r) => r.resources)).not.toContain('secrets');
  });

  it('names each custom kind by the plural of its CRD', () => {
    const crds = vendoredCrds(DEFAULT_SCHEMAS);
    // the ServiceMonitor CRD is the cluster's own (prometheus-operator's, monitoring.serviceMonitorCrd): the one
    // nothing vendors; the test helpers' stand-in names its plural as the upstream CRD does
    const unvendored: string[] = [];
    for (const c of [...BASE_CUSTOM_KINDS, ...RENDERED_CUSTOM_KINDS]) {
      const found = crds.get(`${c.group}/${c.kind}`)?.map((f) => f.crd) ?? (c.kind === 'ServiceMonitor' ? [serviceMonitorCrd()] : undefined);
      if (!found) unvendored.push(`${c.group}/${c.kind}`);
      else expect(new Set(found.map((crd) => (crd.spec as { names: { plural: string } }).names.plural)), `${c.group}/${c.kind}`).toEqual(new Set([c.plural]));
    }
    expect(unvendored).toEqual([]);
  });

  it('covers every custom kind the fixture clusters render (what preflight must read to see what Argo CD takes over)', () => {
    const listed = new Set([...BASE_CUSTOM_KINDS, ...RENDERED_CUSTOM_KINDS].map((c) => `${c.group}/${c.kind}`));
    const rendered = new Set(loadModels([REFERENCE_FILE, TRAINING_FILE]).flatMap((m) => renderCluster(m).folders.flatMap((f) => f.objects))
      .filter((o) => !isBuiltInGroup(apiGroup(o.apiVersion)))
      .map((o) => `${apiGroup(o.apiVersion)}/${o.kind}`));
    expect(rendered.size).toBeGreaterThan(5);
    expect([...rendered].filter((k) => !listed.has(k)).sort()).toEqual([]);
  });
});
