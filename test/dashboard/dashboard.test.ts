import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkCluster } from '../../src/check';
import { DashboardNodePort } from '../../src/components/dashboard/dashboard-node-port';
import { DescriptionError, parseDescription } from '../../src/model/load';
import { findObject, folderObjects, HAS_SCHEMAS, issuesOf, referenceInput, renderOf, schemaErrors, SHARED } from '../helpers';

const UPSTREAM = path.join(SHARED, 'upstream-installs');
const HAS_UPSTREAM = existsSync(path.join(UPSTREAM, 'kong-chart-2.46.0')) && existsSync(path.join(UPSTREAM, 'kubernetes-dashboard-7.13.0'));

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

  it('renders no Service by default: the pre-installed Dashboard already serves NodePort 32443', () => {
    const objects = dashboardOf();
    expect(objects.filter((o) => o.kind === 'Service')).toEqual([]);
    expect(findObject(objects, 'ServiceAccount', 'dashboard-viewer', 'kubernetes-dashboard')).toBeDefined();
  });

  it('"adopt" renders the chart\'s own Kong proxy Service on the node port, marked adopted', () => {
    const svc = findObject(dashboardOf((d) => { d.monitoring = { dashboard: { service: 'adopt' } }; }), 'Service', 'kubernetes-dashboard-kong-proxy', 'kubernetes-dashboard');
    expect(svc.metadata.annotations).toEqual({ 'gpu-cluster.dev/adopted': 'true', 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false' });
    const spec = svc.spec as any;
    expect(spec.type).toBe('NodePort');
    expect(spec.selector).toEqual({
      'app.kubernetes.io/name': 'kong', 'app.kubernetes.io/component': 'app', 'app.kubernetes.io/instance': 'kubernetes-dashboard',
    });
    expect(spec.ports).toEqual([{ name: 'kong-proxy-tls', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 32443 }]);
  });

  it('"own" renders a separate NodePort Service and needs a port the pre-installed Dashboard does not hold', () => {
    const objects = dashboardOf((d) => { d.monitoring = { dashboard: { service: 'own', nodePort: 30443, namespace: 'dash', release: 'kd' } }; });
    const svc = findObject(objects, 'Service', 'kd-nodeport', 'dash');
    expect(svc.metadata.annotations?.['gpu-cluster.dev/adopted']).toBeUndefined();
    const spec = svc.spec as any;
    expect(spec.ports).toEqual([{ name: 'https', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 30443 }]);
    expect(spec.selector['app.kubernetes.io/instance']).toBe('kd');
    expect(findObject(objects, 'ServiceAccount', 'dashboard-viewer', 'dash').metadata.namespace).toBe('dash');
    expect(issuesOf((d) => { d.monitoring = { dashboard: { service: 'own' } }; })).toEqual([{
      path: 'monitoring.dashboard.nodePort',
      message: expect.stringMatching(/32443 is already allocated to the pre-installed Dashboard's Service kubernetes-dashboard\/kubernetes-dashboard-kong-proxy/),
    }]);
  });

  it('every mode passes the nodeport-unique and adoption checks', () => {
    for (const service of ['preinstalled', 'adopt', 'own']) {
      const rendered = renderOf((d) => { d.monitoring = { dashboard: { service, nodePort: service === 'own' ? 30443 : 32443 } }; });
      const findings = checkCluster(rendered).filter((f) => ['nodeport-unique', 'adopted-no-cascade-delete'].includes(f.rule));
      expect(findings, service).toEqual([]);
    }
  });

  describe.skipIf(!HAS_UPSTREAM)('against the vendored kubernetes-dashboard 7.13.0 and kong 2.46.0 charts', () => {
    /** The Kong proxy Service the Dashboard chart renders, derived from the charts' templates and values. */
    function upstreamKongProxy(release: string) {
      const kong = path.join(UPSTREAM, 'kong-chart-2.46.0', 'charts', 'kong');
      const dashboardValues = parse(readFileSync(path.join(UPSTREAM, 'kubernetes-dashboard-7.13.0', 'charts', 'kubernetes-dashboard', 'values.yaml'), 'utf8'));
      const kongValues = parse(readFileSync(path.join(kong, 'values.yaml'), 'utf8'));
      const chartName = parse(readFileSync(path.join(kong, 'Chart.yaml'), 'utf8')).name as string;
      const helpers = readFileSync(path.join(kong, 'templates', '_helpers.tpl'), 'utf8');
      const serviceTemplate = readFileSync(path.join(kong, 'templates', 'service-kong-proxy.yaml'), 'utf8');
      const define = (name: string) => {
        const m = new RegExp(`{{- define "${name.replace(/\./g, '\\.')}" -}}\\n([\\s\\S]*?){{- end -}}`).exec(helpers);
        if (!m) throw new Error(`no ${name} in kong _helpers.tpl`);
        return m[1];
      };
      // kong.fullname: "<release>-<chart name>" (no nameOverride/fullnameOverride in either chart's values).
      expect(define('kong.fullname')).toContain('printf "%s-%s" .Release.Name $name');
      expect(kongValues.nameOverride ?? '').toBe('');
      expect(dashboardValues.kong.nameOverride ?? '').toBe('');
      const serviceName = /set \$serviceConfig "serviceName" "([a-z]+)"/.exec(serviceTemplate)![1];
      expect(define('kong.service')).toContain('name: {{ .fullName }}-{{ .serviceName }}');
      // kong.selectorLabels, with kong.name = the chart name and the release name filled in.
      const selector = Object.fromEntries(define('kong.selectorLabels').trim().split('\n').map((line) => {
        const [key, value] = line.split(': ');
        return [key, value.replace('{{ template "kong.name" . }}', chartName).replace('"{{ .Release.Name }}"', release)];
      }));
      // The proxy values: the kong chart's defaults under the Dashboard chart's kong.proxy overrides.
      const proxy = { ...kongValues.proxy, ...dashboardValues.kong.proxy };
      const http = { ...kongValues.proxy.http, ...dashboardValues.kong.proxy.http };
      const tls = { ...kongValues.proxy.tls, ...dashboardValues.kong.proxy?.tls };
      // kong.service names the TLS port kong-<serviceName>-tls, its target the containerPort unless overridden.
      expect(helpers).toContain('- name: kong-{{ .serviceName }}-tls');
      expect(helpers).toContain('targetPort: {{ .tls.overrideServiceTargetPort | default .tls.containerPort }}');
      return {
        name: `${release}-${chartName}-${serviceName}`,
        chartType: proxy.type as string,
        selector,
        ports: [
          ...(http.enabled ? [{ name: `kong-${serviceName}`, port: http.servicePort, targetPort: http.containerPort }] : []),
          ...(tls.enabled ? [{ name: `kong-${serviceName}-tls`, port: tls.servicePort, targetPort: tls.overrideServiceTargetPort ?? tls.containerPort }] : []),
        ],
      };
    }

    it('"adopt" renders the chart\'s name, selector and ports (only the type and node port differ)', () => {
      const release = 'kd';
      const expected = upstreamKongProxy(release);
      const svc = findObject(dashboardOf((d) => { d.monitoring = { dashboard: { service: 'adopt', release } }; }), 'Service', expected.name, 'kubernetes-dashboard');
      const spec = svc.spec as any;
      expect(spec.selector).toEqual(expected.selector);
      expect(spec.ports.map((p: any) => ({ name: p.name, port: p.port, targetPort: p.targetPort }))).toEqual(expected.ports);
      // The chart's own type is ClusterIP; the Instant Cluster serves it on a node port.
      expect(expected.chartType).toBe('ClusterIP');
      expect(spec.type).toBe('NodePort');
    });

    it('"own" selects the same Kong proxy pods on the same target port', () => {
      const expected = upstreamKongProxy('kubernetes-dashboard');
      const svc = findObject(dashboardOf((d) => { d.monitoring = { dashboard: { service: 'own', nodePort: 30443 } }; }), 'Service', 'kubernetes-dashboard-nodeport');
      expect((svc.spec as any).selector).toEqual(expected.selector);
      expect((svc.spec as any).ports.map((p: any) => p.targetPort)).toEqual(expected.ports.map((p) => p.targetPort));
    });
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
    expect(() => new DashboardNodePort(Testing.chart(), 'S', { namespace: 'n', release: 'r', nodePort: 80, adoptChartService: true })).toThrow(/nodePort.*80/);
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
