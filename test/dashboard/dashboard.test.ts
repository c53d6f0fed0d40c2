import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { DashboardNodePort } from '../../src/components/dashboard/dashboard-node-port';
import { DescriptionError, parseDescription } from '../../src/model/load';
import { findObject, folderObjects, HAS_SCHEMAS, referenceInput, renderOf, schemaErrors } from '../helpers';

const dashboardOf = (edit?: Parameters<typeof renderOf>[0]) => folderObjects(renderOf(edit), 'dashboard');

describe('dashboard', () => {
  it('renders the reference cluster\'s Dashboard access objects', () => {
    expect(dashboardOf()).toMatchSnapshot();
  });

  describe.skipIf(!HAS_SCHEMAS)('schemas', () => {
    it('is strictly valid', () => {
      const rendered = renderOf();
      expect(schemaErrors({ ...rendered, folders: rendered.folders.filter((f) => f.folder === 'dashboard') })).toEqual([]);
    });
  });

  it('exposes the Kong proxy of the Dashboard release on NodePort 32443', () => {
    const svc = findObject(dashboardOf(), 'Service', 'kubernetes-dashboard-nodeport', 'kubernetes-dashboard');
    const spec = svc.spec as any;
    expect(spec.type).toBe('NodePort');
    expect(spec.selector).toEqual({
      'app.kubernetes.io/name': 'kong', 'app.kubernetes.io/component': 'app', 'app.kubernetes.io/instance': 'kubernetes-dashboard',
    });
    expect(spec.ports).toEqual([{ name: 'https', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 32443 }]);
  });

  it('takes the port, namespace and release from the description', () => {
    const objects = dashboardOf((d) => { d.monitoring = { dashboard: { nodePort: 30443, namespace: 'dash', release: 'kd' } }; });
    const spec = findObject(objects, 'Service', 'kd-nodeport', 'dash').spec as any;
    expect(spec.ports[0].nodePort).toBe(30443);
    expect(spec.selector['app.kubernetes.io/instance']).toBe('kd');
    expect(findObject(objects, 'ServiceAccount', 'dashboard-viewer', 'dash').metadata.namespace).toBe('dash');
  });

  it('renders nothing when disabled', () => {
    expect(renderOf((d) => { d.monitoring = { dashboard: { enabled: false } }; }).folders.map((f) => f.folder)).not.toContain('dashboard');
  });

  it('rejects a port outside the NodePort range, naming the field and the prop', () => {
    const d = referenceInput();
    d.monitoring = { dashboard: { nodePort: 443 } };
    try {
      parseDescription(d);
      expect.unreachable('a port of 443 was accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(DescriptionError);
      expect((e as DescriptionError).issues.map((i) => i.path)).toContain('monitoring.dashboard.nodePort');
    }
    expect(() => new DashboardNodePort(Testing.chart(), 'S', { namespace: 'n', release: 'r', nodePort: 80 })).toThrow(/nodePort.*80/);
  });

  it('gives the viewer read-only access: view plus cluster-scoped reads, never cluster-admin, no token Secret', () => {
    const objects = dashboardOf();
    const sa = findObject(objects, 'ServiceAccount', 'dashboard-viewer', 'kubernetes-dashboard');
    expect(sa.automountServiceAccountToken).toBe(false);
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
    expect(findObject(objects, 'ClusterRoleBinding', 'dashboard-viewer-view').roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' });
    for (const role of objects.filter((o) => o.kind === 'ClusterRole')) {
      for (const rule of role.rules as { verbs: string[]; resources?: string[] }[]) {
        expect(rule.verbs.every((v) => ['get', 'list', 'watch'].includes(v))).toBe(true);
        expect(rule.resources ?? []).not.toContain('secrets');
        expect(rule.resources ?? []).not.toContain('*');
      }
    }
  });

  it('no rendered object anywhere grants cluster-admin or renders a ServiceAccount token Secret', () => {
    const objects = renderOf().folders.flatMap((f) => f.objects);
    for (const o of objects.filter((m) => m.kind === 'ClusterRoleBinding' || m.kind === 'RoleBinding')) {
      expect((o.roleRef as { name: string }).name, `${o.kind}/${o.metadata.name}`).not.toBe('cluster-admin');
    }
    for (const o of objects.filter((m) => m.kind === 'Secret')) {
      expect(o.type, `Secret/${o.metadata.name}`).not.toBe('kubernetes.io/service-account-token');
    }
  });
});
