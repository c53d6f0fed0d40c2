import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { Manifest, RenderedCluster } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { findObject, folderObjects, HAS_SCHEMAS, renderOf, schemaErrors, TRAINING_FILE } from '../helpers';

const renderTraining = () => renderCluster(buildModel(parseDescription(parse(readFileSync(TRAINING_FILE, 'utf8')))));
const tenantsOf = (edit?: Parameters<typeof renderOf>[0]) => folderObjects(renderOf(edit), 'tenants');
const all = (c: RenderedCluster): Manifest[] => c.folders.flatMap((f) => [...f.objects]);

/** Kinds a tenant may be granted: all namespaced. */
const CLUSTER_SCOPED_RBAC = new Set(['ClusterRole', 'ClusterRoleBinding']);

/** What a group may do, from the rendered RBAC alone: [apiGroup, resource, verb, namespace|"*"]. */
function grantsOf(c: RenderedCluster, group: string): string[] {
  const objects = all(c);
  const grants: string[] = [];
  for (const b of objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') as any[]) {
    if (!b.subjects?.some((s: any) => s.kind === 'Group' && s.name === group)) continue;
    const scope = b.kind === 'ClusterRoleBinding' ? '*' : b.metadata.namespace;
    const role = objects.find((o) => o.kind === b.roleRef.kind && o.metadata.name === b.roleRef.name && (b.roleRef.kind === 'ClusterRole' || o.metadata.namespace === b.metadata.namespace)) as any;
    if (!role) {
      grants.push(`missing ${b.roleRef.kind} ${b.roleRef.name}`);
      continue;
    }
    if (b.roleRef.kind === 'ClusterRole') grants.push(`${scope}: ClusterRole ${role.metadata.name}`);
    for (const r of role.rules) for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) grants.push(`${scope} ${g || 'core'}/${res} ${v}`);
  }
  return grants;
}

describe('tenants', () => {
  it('renders the reference cluster\'s tenants', () => {
    expect(tenantsOf()).toMatchSnapshot();
  });

  it('renders the training cluster\'s five tenants', () => {
    const objects = folderObjects(renderTraining(), 'tenants');
    expect(objects).toMatchSnapshot();
    expect(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name)).toEqual(['inference', 'interns', 'research', 'speech', 'vision']);
  });

  it('gives each tenant a labelled namespace and a LocalQueue named after the tenant (or tenants[].queue) on its ClusterQueue', () => {
    const objects = tenantsOf((d: any) => {
      d.queueing.defaultQueue = 'main';
      d.tenants[0].namespace = 'team-research';
      d.tenants[0].labels = { 'cost-center': 'r-and-d', 'gpu-cluster.dev/tenant': 'someone-else' };
      d.tenants[1].queue = 'serving';
    });
    const ns = findObject(objects, 'Namespace', 'team-research');
    expect(ns.metadata.labels).toMatchObject({ 'gpu-cluster.dev/tenant': 'research', 'cost-center': 'r-and-d', 'app.kubernetes.io/managed-by': 'gpu-cluster-manifests' });
    // Not "default": Kueue's LocalQueue defaulting would queue every unlabelled pod of the namespace to it.
    expect((findObject(objects, 'LocalQueue', 'research', 'team-research') as any).spec.clusterQueue).toBe('research');
    expect((findObject(objects, 'LocalQueue', 'serving', 'inference') as any).spec.clusterQueue).toBe('inference');
    expect(objects.filter((o) => o.kind === 'LocalQueue').map((o) => o.metadata.name)).not.toContain('default');
    const cq = findObject(folderObjects(renderOf((d: any) => { d.tenants[0].namespace = 'team-research'; }), 'kueue'), 'ClusterQueue', 'research') as any;
    expect(cq.spec.namespaceSelector.matchLabels).toEqual({ 'kubernetes.io/metadata.name': 'team-research' });
  });

  it('binds the tenant role to the described group (default tenant-<name>)', () => {
    const objects = tenantsOf((d: any) => { d.tenants[1].group = 'oidc:inference-team'; });
    expect((findObject(objects, 'RoleBinding', 'tenant', 'research') as any).subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'tenant-research' }]);
    const binding = findObject(objects, 'RoleBinding', 'tenant', 'inference') as any;
    expect(binding.subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'oidc:inference-team' }]);
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant' });
  });

  it('lets a tenant run Jobs, MPIJobs, PyTorchJobs and Pods (logs, exec, port-forward), keep Secrets, Services and ServiceAccounts, and read its queue and Workloads, in its namespace only', () => {
    const grants = grantsOf(renderOf(), 'tenant-research');
    for (const g of ['batch/jobs', 'kubeflow.org/mpijobs', 'kubeflow.org/pytorchjobs', 'core/pods']) {
      for (const v of ['create', 'get', 'list', 'watch', 'delete', 'patch']) expect(grants).toContain(`research ${g} ${v}`);
    }
    for (const g of ['kueue.x-k8s.io/localqueues', 'kueue.x-k8s.io/workloads', 'core/pods/log']) {
      for (const v of ['get', 'list', 'watch']) expect(grants).toContain(`research ${g} ${v}`);
    }
    expect(grants).toContain('research core/pods/exec create');
    // the service guardrails tell tenants to reach their ClusterIP Services with kubectl port-forward
    for (const v of ['create', 'get']) expect(grants).toContain(`research core/pods/portforward ${v}`);
    // Inference work: image-pull Secrets, Services and ServiceAccounts of its own, namespaced.
    for (const g of ['core/secrets', 'core/services', 'core/serviceaccounts']) {
      for (const v of ['create', 'update', 'delete', 'get']) expect(grants).toContain(`research ${g} ${v}`);
    }
    // Read-only where it must be: no writes to queues or Workloads, nothing on RBAC, quotas or policies.
    expect(grants.filter((g) => g.startsWith('research kueue.x-k8s.io/') && !/ (get|list|watch)$/.test(g))).toEqual([]);
    expect(grants.filter((g) => /rbac|resourcequotas|limitranges|namespaces|networkpolicies|serviceaccounts\/token|\*/.test(g))).toEqual([]);
    expect(grants.every((g) => g.startsWith('research '))).toBe(true);
  });

  it('gives tenants nothing cluster-scoped, in any folder', () => {
    for (const c of [renderOf(), renderTraining()]) {
      expect(folderObjects(c, 'tenants').filter((o) => CLUSTER_SCOPED_RBAC.has(o.kind))).toEqual([]);
      for (const t of c.model.tenants) {
        const grants = grantsOf(c, t.group);
        expect(grants.length).toBeGreaterThan(0);
        expect(grants.filter((g) => !g.startsWith(`${t.namespace} `))).toEqual([]);
      }
    }
  });

  it('the grant checker sees a cluster-wide binding (the check can fail)', () => {
    const c = renderOf();
    const extra = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'oops' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'tenant-research' }],
    } as unknown as Manifest;
    const broken: RenderedCluster = { ...c, folders: [...c.folders, { folder: 'x', description: '', objects: [extra] }] };
    expect(grantsOf(broken, 'tenant-research')).toContain('missing ClusterRole view');
  });

  it('renders no tenants folder without tenants', () => {
    expect(renderOf((d: any) => { d.tenants = []; }).folders.map((f) => f.folder)).not.toContain('tenants');
  });

  it.skipIf(!HAS_SCHEMAS)('passes strict validation', () => {
    expect(schemaErrors(renderOf()).filter((e) => e.source === 'tenants')).toEqual([]);
    expect(schemaErrors(renderTraining()).filter((e) => e.source === 'tenants')).toEqual([]);
  });
});
