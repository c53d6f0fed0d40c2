import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { gpuOperatorHelmValues } from '../../src/components/gpu-operator/helm-values';
import { GpuClusterAlerts } from '../../src/components/monitoring/gpu-cluster-alerts';
import { dashboardJson } from '../../src/components/monitoring/grafana-model';
import { catalogueSeriesNames, DCGM_FIELDS, dcgmMetricsCsv } from '../../src/components/monitoring/metric-catalogue';
import { series } from '../../src/components/monitoring/promql';
import { DCGM_EXPORTER_METRICS } from '../../src/model/names';
import { Manifest } from '../../src/render/manifest';
import { Edit, findObject, folderObjects, HAS_SCHEMAS, issuesOf, modelOf, renderOf, schemaErrors, SHARED } from '../helpers';

const UPSTREAM = path.join(SHARED, 'upstream-installs');
const HAS_UPSTREAM = existsSync(path.join(UPSTREAM, 'victoria-metrics-k8s-stack-0.54.0')) && existsSync(path.join(UPSTREAM, 'gpu-operator-v26.7.0'));

const monitoringOf = (edit?: Parameters<typeof renderOf>[0]) => folderObjects(renderOf(edit), 'monitoring');

/** Syntax errors of a PromQL expression (lezer marks them as error nodes) and the series names it selects. */
function parsePromql(expr: string): { errors: string[]; seriesNames: string[] } {
  const tree = parser.parse(expr);
  const errors: string[] = [];
  const seriesNames: string[] = [];
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`syntax error at ${node.from} in: ${expr}`);
      if (node.name === 'VectorSelector') {
        const id = node.node.getChild('Identifier');
        if (id) seriesNames.push(expr.slice(id.from, id.to));
      }
    },
  });
  return { errors, seriesNames };
}

interface RuleJson { alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }

function rulesOf(objects: readonly Manifest[]): RuleJson[] {
  const rule = findObject(objects, 'VMRule', 'gpu-cluster-alerts', 'monitoring');
  return (rule.spec as { groups: { rules: RuleJson[] }[] }).groups.flatMap((g) => g.rules);
}

function dashboardsOf(objects: readonly Manifest[]): any[] {
  return objects
    .filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1')
    .flatMap((cm) => Object.values(cm.data as Record<string, string>).map((text) => JSON.parse(text)));
}

function dashboardExprs(dashboard: any): string[] {
  return dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr as string));
}

describe('monitoring', () => {
  it('renders the reference cluster\'s monitoring objects', () => {
    expect(monitoringOf()).toMatchSnapshot();
  });

  describe.skipIf(!HAS_SCHEMAS)('schemas', () => {
    it('is strictly valid against the VictoriaMetrics CRDs and the core API', () => {
      const rendered = renderOf();
      const errors = schemaErrors({ ...rendered, folders: rendered.folders.filter((f) => f.folder === 'monitoring' || f.folder === 'dashboard') });
      expect(errors).toEqual([]);
    });
  });

  it('scrapes each exporter where upstream exposes it', () => {
    const objects = monitoringOf();
    const dcgm = findObject(objects, 'VMServiceScrape', 'dcgm-exporter', 'monitoring').spec as any;
    expect(dcgm.namespaceSelector).toEqual({ matchNames: ['gpu-operator'] });
    expect(dcgm.selector.matchLabels).toEqual({ app: 'nvidia-dcgm-exporter' });
    expect(dcgm.endpoints[0]).toMatchObject({ port: 'gpu-metrics', scheme: 'http', honorLabels: true });

    const kueue = findObject(objects, 'VMServiceScrape', 'kueue-controller', 'monitoring').spec as any;
    expect(kueue.namespaceSelector).toEqual({ matchNames: ['kueue-system'] });
    expect(kueue.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'kueue', 'app.kubernetes.io/component': 'metrics-service' });
    expect(kueue.endpoints[0]).toMatchObject({ port: 'https', scheme: 'https', bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' });

    expect((findObject(objects, 'VMServiceScrape', 'gpu-operator', 'monitoring').spec as any).endpoints[0].port).toBe('gpu-operator-metrics');
    expect((findObject(objects, 'VMPodScrape', 'network-operator', 'monitoring').spec as any).namespaceSelector).toEqual({ matchNames: ['nvidia-network-operator'] });
    const withNodeExporter = monitoringOf((d) => { d.monitoring = { scrape: { nodeExporter: true } }; });
    expect((findObject(withNodeExporter, 'VMNodeScrape', 'node-exporter', 'monitoring').spec as any).port).toBe('9100');
    for (const o of objects.filter((m) => m.kind.startsWith('VM'))) expect(o.metadata.namespace).toBe('monitoring');
  });

  it('lets the scraper\'s ServiceAccount read /metrics and nothing more (test/monitoring/metrics-reader.test.ts derives its name)', () => {
    const objects = monitoringOf();
    const role = findObject(objects, 'ClusterRole', 'monitoring-metrics-reader');
    expect(role.rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    const binding = findObject(objects, 'ClusterRoleBinding', 'monitoring-metrics-reader');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'vmagent-vm-victoria-metrics-k8s-stack', namespace: 'monitoring' }]);
    const preinstalled = findObject(monitoringOf((d) => { d.monitoring = { namespace: 'observability', scraperServiceAccount: 'vmagent-stack' }; }), 'ClusterRoleBinding', 'monitoring-metrics-reader');
    expect(preinstalled.subjects).toEqual([{ kind: 'ServiceAccount', name: 'vmagent-stack', namespace: 'observability' }]);
  });

  it('scrapes the node status exporter only when the ClusterPolicy runs it', () => {
    const names = (edit?: Parameters<typeof renderOf>[0]) => monitoringOf(edit).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names()).not.toContain('VMServiceScrape/gpu-node-status-exporter');
    expect(names((d) => { d.gpuOperator = { nodeStatusExporter: true }; })).toContain('VMServiceScrape/gpu-node-status-exporter');
  });

  it('where the cluster serves the ServiceMonitor CRD, leaves the GPU Operator and its node status exporter to the operator\'s own ServiceMonitors', () => {
    const names = (serviceMonitorCrd: boolean) => monitoringOf((d) => {
      d.gpuOperator = { nodeStatusExporter: true };
      d.monitoring = { serviceMonitorCrd };
    }).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names(false)).toEqual(expect.arrayContaining(['VMServiceScrape/gpu-operator', 'VMServiceScrape/gpu-node-status-exporter']));
    // GPU Operator v26.7.0 creates ServiceMonitor gpu-operator whenever the CRD exists (it cannot be switched off for the
    // operator) and the VictoriaMetrics operator converts it: a scrape of ours would collect every series twice
    expect(names(true)).not.toContain('VMServiceScrape/gpu-operator');
    expect(names(true)).not.toContain('VMServiceScrape/gpu-node-status-exporter');
    expect(names(true)).toContain('VMServiceScrape/dcgm-exporter');
    expect(modelOf((d) => { d.monitoring = { serviceMonitorCrd: true }; }).servedApiVersions).toEqual(['monitoring.coreos.com/v1']);
  });

  it('leaves node exporter and kube-state-metrics to the monitoring stack by default, pre-installed or managed', () => {
    for (const monitoring of ['preinstalled', 'managed']) {
      const names = monitoringOf((d) => { d.installs = { monitoring }; }).map((o) => `${o.kind}/${o.metadata.name}`);
      expect(names, monitoring).not.toContain('VMNodeScrape/node-exporter');
      expect(names, monitoring).not.toContain('VMServiceScrape/kube-state-metrics');
    }
    const both = monitoringOf((d) => { d.monitoring = { scrape: { nodeExporter: true, kubeStateMetrics: true } }; }).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(both).toEqual(expect.arrayContaining(['VMNodeScrape/node-exporter', 'VMServiceScrape/kube-state-metrics']));
  });

  it.skipIf(!HAS_UPSTREAM)('the vendored stack and GPU Operator charts would scrape node exporter, kube-state-metrics and DCGM themselves', () => {
    const stack = parse(readFileSync(path.join(UPSTREAM, 'victoria-metrics-k8s-stack-0.54.0', 'charts', 'victoria-metrics-k8s-stack', 'values.yaml'), 'utf8'));
    for (const sub of ['prometheus-node-exporter', 'kube-state-metrics']) {
      expect(stack[sub].enabled, sub).toBe(true);
      expect(stack[sub].vmScrape.enabled, sub).toBe(true);
    }
    // The VictoriaMetrics operator converts Prometheus ServiceMonitors into scrapes as well.
    expect(stack['victoria-metrics-operator'].operator.disable_prometheus_converter).toBe(false);
    const gpuOperator = parse(readFileSync(path.join(UPSTREAM, 'gpu-operator-v26.7.0', 'deployments', 'gpu-operator', 'values.yaml'), 'utf8'));
    expect(gpuOperator.dcgmExporter.serviceMonitor.enabled).toBe(true);
    // So the rendered ClusterPolicy and the managed chart's values switch the operator's ServiceMonitor off.
    const policy = findObject(renderOf().folders.find((f) => f.folder === 'gpu-operator')!.objects, 'ClusterPolicy', 'cluster-policy');
    expect((policy.spec as any).dcgmExporter.serviceMonitor).toEqual({ enabled: false });
    expect(gpuOperatorHelmValues(modelOf()).dcgmExporter).toEqual({ serviceMonitor: { enabled: false } });
  });

  it('parses every alert expression with the PromQL grammar and uses only catalogued metrics', () => {
    const allowed = catalogueSeriesNames();
    const rules = rulesOf(monitoringOf());
    expect(rules.length).toBeGreaterThanOrEqual(12);
    for (const r of rules) {
      const { errors, seriesNames } = parsePromql(r.expr);
      expect(errors, r.alert).toEqual([]);
      expect(seriesNames.length, r.alert).toBeGreaterThan(0);
      for (const name of seriesNames) expect(allowed.has(name), `${r.alert}: ${name}`).toBe(true);
    }
  });

  it('the parser check catches broken expressions and unknown metrics', () => {
    expect(parsePromql('max by (node) (DCGM_FI_DEV_GPU_TEMP{node="a"').errors).not.toEqual([]);
    expect(parsePromql('sum(rate(foo_total[5m])) > 0').seriesNames).toEqual(['foo_total']);
    expect(catalogueSeriesNames().has('foo_total')).toBe(false);
  });

  it('gives every alert a summary, a runbook hint and a severity', () => {
    for (const r of rulesOf(monitoringOf())) {
      expect(r.annotations.summary, r.alert).toMatch(/\S/);
      expect(r.annotations.runbook, r.alert).toMatch(/\S/);
      expect(['critical', 'warning', 'info']).toContain(r.labels.severity);
    }
  });

  it('covers the GPU, fabric and queueing failure modes', () => {
    const alerts = rulesOf(monitoringOf()).map((r) => r.alert);
    expect(alerts).toEqual(expect.arrayContaining([
      'GpuXidError', 'GpuTemperatureHigh', 'GpuThermalThrottling', 'GpuPowerThrottling', 'GpuDoubleBitEccErrors',
      'GpuRowRemapFailure', 'GpuMissingFromNode', 'InfinibandLinkDown', 'KueueWorkloadsPendingTooLong', 'ClusterQueueOverQuota',
    ]));
    expect(new Set(alerts).size).toBe(alerts.length);
  });

  it('takes thresholds and durations from the description', () => {
    const rules = rulesOf(monitoringOf((d) => {
      d.nodes.gpuWorkers.gpusPerNode = 4;
      d.tenants = [];
      d.monitoring = {
        alerts: {
          for: '10m',
          gpuTemperatureCelsius: 80,
          pendingWorkloadsFor: '2h',
          quotaUsageRatio: 1.5,
          ignoredXids: [],
          runbookBaseUrl: 'https://wiki.example.com/runbooks/',
        },
      };
    }));
    const byName = new Map(rules.map((r) => [r.alert, r]));
    expect(byName.get('GpuTemperatureHigh')).toMatchObject({ expr: 'max by (node, gpu) (DCGM_FI_DEV_GPU_TEMP) > 80', for: '10m' });
    expect(byName.get('GpuMissingFromNode')!.expr).toBe('max by (node) (kube_node_status_allocatable{resource="nvidia_com_gpu"}) < 4');
    expect(byName.get('KueueWorkloadsPendingTooLong')!.for).toBe('2h');
    expect(byName.get('ClusterQueueOverQuota')!.expr).toMatch(/ > 1\.5$/);
    expect(byName.get('GpuXidError')!.expr)
      .toBe('max by (node, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0 and max by (node, gpu) (changes(DCGM_FI_DEV_XID_ERRORS[15m])) > 0');
    expect(byName.get('GpuXidError')!.annotations.runbook_url).toBe('https://wiki.example.com/runbooks#gpuxiderror');
  });

  it('ignores the application XIDs by default', () => {
    const xid = rulesOf(monitoringOf()).find((r) => r.alert === 'GpuXidError')!;
    for (const x of [13, 31, 43, 45]) expect(xid.expr).toContain(`== ${x}`);
  });

  it('alerts on a new XID within a window, not for ever after one (the gauge keeps the last XID)', () => {
    const xid = rulesOf(monitoringOf()).find((r) => r.alert === 'GpuXidError')!;
    expect(xid.expr).toMatch(/\) and max by \(node, gpu\) \(changes\(DCGM_FI_DEV_XID_ERRORS\[15m\]\)\) > 0$/);
    expect(xid.for).toBeUndefined();
  });

  it('names the node of an InfiniBand port from uname, grouping per scrape target (no node label from the stack\'s scrape)', () => {
    const link = rulesOf(monitoringOf()).find((r) => r.alert === 'InfinibandLinkDown')!;
    expect(link.expr).toMatch(/^max by \(instance, device, port\) \(node_infiniband_state_id\{.*\}\) \* on \(instance\) group_left \(nodename\) max by \(instance, nodename\) \(node_uname_info\) != 4$/);
    expect(link.annotations.summary).toContain('{{ $labels.nodename }}');
  });

  it('watches exactly the described HCAs, and has no fabric alerts without InfiniBand', () => {
    const link = rulesOf(monitoringOf()).find((r) => r.alert === 'InfinibandLinkDown')!;
    expect(link.expr).toContain('device=~"mlx5_0|mlx5_1|mlx5_2|mlx5_3|mlx5_4|mlx5_5|mlx5_6|mlx5_7"');
    const noIb = monitoringOf((d) => { delete d.network.infiniband; });
    expect(rulesOf(noIb).map((r) => r.alert).filter((a) => a.startsWith('Infiniband'))).toEqual([]);
    expect(noIb.map((o) => o.kind)).not.toContain('VMPodScrape');
  });

  it('escapes label values it puts into queries', () => {
    expect(series('node_infiniband_state_id', { device: { oneOf: ['mlx5.0', 'a"b'] } }))
      .toBe('node_infiniband_state_id{device=~"mlx5\\\\.0|a\\"b"}');
    expect(parsePromql(series('node_infiniband_state_id', { device: { oneOf: ['mlx5.0', 'a"b'] } })).errors).toEqual([]);
    expect(() => series('node_infiniband_state_id', { device: { oneOf: [] } })).toThrow(/device/);
  });

  it('rejects impossible alert props with the prop name', () => {
    expect(() => new GpuClusterAlerts(Testing.chart(), 'A', { namespace: 'm', gpusPerNode: 0, networkOperatorNamespace: 'n' })).toThrow(/gpusPerNode/);
    expect(() => new GpuClusterAlerts(Testing.chart(), 'A', { namespace: 'm', gpusPerNode: 8, networkOperatorNamespace: 'n', quotaUsageRatio: 0 })).toThrow(/quotaUsageRatio/);
  });

  it('rejects bad monitoring fields, naming them', () => {
    const errorOf = (edit: Edit) => issuesOf(edit).map((i) => i.path).join(', ') || 'no error';
    expect(errorOf((d) => { d.monitoring = { alerts: { pendingWorkloadsFor: 'half an hour' } }; })).toContain('monitoring.alerts.pendingWorkloadsFor');
    expect(errorOf((d) => { d.monitoring = { alerts: { quotaUsageRatio: 0 } }; })).toContain('monitoring.alerts.quotaUsageRatio');
    expect(errorOf((d) => { d.monitoring = { alerts: { runbookBaseUrl: 'not a url' } }; })).toContain('monitoring.alerts.runbookBaseUrl');
    expect(errorOf((d) => { d.monitoring = { scrape: { interval: 'often' } }; })).toContain('monitoring.scrape.interval');
  });

  describe('grafana dashboards', () => {
    it('renders the GPU fleet and queue dashboards as sidecar-labelled ConfigMaps', () => {
      const objects = monitoringOf();
      const fleet = findObject(objects, 'ConfigMap', 'grafana-dashboard-gpu-fleet', 'monitoring');
      const queues = findObject(objects, 'ConfigMap', 'grafana-dashboard-kueue-queues', 'monitoring');
      for (const cm of [fleet, queues]) expect(cm.metadata.labels?.grafana_dashboard).toBe('1');
      expect(Object.keys(fleet.data as object)).toEqual(['gpu-fleet.json']);
    });

    it('uses the configured sidecar label', () => {
      const objects = monitoringOf((d) => { d.monitoring = { grafanaDashboardLabel: { key: 'grafana.example.com/dashboard', value: 'gpu' } }; });
      const cms = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('grafana-dashboard-'));
      expect(cms).toHaveLength(2);
      for (const cm of cms) expect(cm.metadata.labels?.['grafana.example.com/dashboard']).toBe('gpu');
    });

    it('is valid dashboard JSON: schemaVersion, unique panel ids, grid positions inside 24 columns without overlap', () => {
      const dashboards = dashboardsOf(monitoringOf());
      expect(dashboards.map((d) => d.uid).sort()).toEqual(['gpu-fleet', 'kueue-queues']);
      for (const d of dashboards) {
        expect(d.schemaVersion).toBeGreaterThanOrEqual(36);
        const ids = d.panels.map((p: any) => p.id);
        expect(new Set(ids).size).toBe(ids.length);
        const cells = new Set<string>();
        for (const p of d.panels) {
          const { x, y, w, h } = p.gridPos;
          expect(x + w).toBeLessThanOrEqual(24);
          for (let i = x; i < x + w; i++) {
            for (let j = y; j < y + h; j++) {
              expect(cells.has(`${i},${j}`), `${d.uid}: panel ${p.title} overlaps`).toBe(false);
              cells.add(`${i},${j}`);
            }
          }
          expect(p.targets.length).toBeGreaterThan(0);
          expect(p.datasource.uid).toBe('${datasource}');
        }
        expect(d.templating.list[0]).toMatchObject({ name: 'datasource', type: 'datasource', query: 'prometheus' });
      }
    });

    it('shows utilisation, memory, power, temperature and XIDs per node, and queue state per ClusterQueue', () => {
      const [fleet, queues] = ['gpu-fleet', 'kueue-queues'].map((uid) => dashboardsOf(monitoringOf()).find((d) => d.uid === uid));
      const fleetText = dashboardExprs(fleet).join('\n');
      for (const m of ['DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_XID_ERRORS']) {
        expect(fleetText).toContain(m);
      }
      expect(fleetText).toContain('by (node)');
      const queueText = dashboardExprs(queues).join('\n');
      for (const m of ['kueue_pending_workloads', 'kueue_admitted_active_workloads', 'kueue_cluster_queue_resource_usage', 'kueue_cluster_queue_nominal_quota']) {
        expect(queueText).toContain(m);
      }
    });

    it('parses every panel query and uses only catalogued metrics', () => {
      const allowed = catalogueSeriesNames();
      for (const d of dashboardsOf(monitoringOf())) {
        for (const expr of dashboardExprs(d)) {
          // Grafana substitutes $node before the query reaches the datasource.
          const { errors, seriesNames } = parsePromql(expr.replace(/\$node/g, 'gpu-node-1'));
          expect(errors, expr).toEqual([]);
          for (const name of seriesNames) expect(allowed.has(name), `${d.uid}: ${name}`).toBe(true);
        }
      }
    });

    it('rejects a malformed dashboard naming the panel', () => {
      const panel = { kind: 'stat' as const, title: 'Too wide', width: 25, queries: [{ expr: 'up' }] };
      expect(() => dashboardJson({ uid: 'x', title: 'x', tags: [], panels: [panel] }, 39)).toThrow(/Too wide.*width/);
      expect(() => dashboardJson({ uid: 'no spaces', title: 'x', tags: [], panels: [{ ...panel, width: 6 }] }, 39)).toThrow(/uid/);
      expect(() => dashboardJson({ uid: 'x', title: 'x', tags: [], panels: [{ ...panel, width: 6, queries: [] }] }, 39)).toThrow(/queries/);
    });
  });

  describe('DCGM exporter metrics list', () => {
    it('enables every catalogued DCGM field, in the gpu-operator namespace under the shared name', () => {
      const cm = findObject(folderObjects(renderOf(), 'gpu-operator'), 'ConfigMap', DCGM_EXPORTER_METRICS.configMap, 'gpu-operator');
      const csv = (cm.data as Record<string, string>)[DCGM_EXPORTER_METRICS.file];
      expect(csv).toBe(dcgmMetricsCsv());
      const fields = csv.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(',')[0]);
      for (const field of Object.keys(DCGM_FIELDS)) expect(fields).toContain(field);
    });

    it('writes three comma-separated columns per line (the exporter\'s CSV format)', () => {
      for (const line of dcgmMetricsCsv().split('\n').filter((l) => l && !l.startsWith('#'))) {
        const cols = line.split(',').map((c) => c.trim());
        expect(cols, line).toHaveLength(3);
        expect(['gauge', 'counter', 'label']).toContain(cols[1]);
      }
    });
  });

  it('runs no pods and renders no Secret', () => {
    const objects = monitoringOf();
    const kinds = new Set(objects.map((o) => o.kind));
    for (const k of ['Pod', 'Deployment', 'DaemonSet', 'StatefulSet', 'Job', 'Secret']) expect(kinds.has(k), k).toBe(false);
  });
});
