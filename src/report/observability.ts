import { code, table } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { manifestFileName, RenderedCluster } from '../render/manifest';

interface AlertRule {
  readonly alert?: string;
  readonly expr?: string;
  readonly for?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

interface DashboardModel {
  readonly uid?: string;
  readonly title?: string;
  readonly description?: string;
  readonly panels?: readonly { readonly type?: string; readonly title?: string }[];
}

/** Every alert of the rendered VMRules: group, name, severity, how long it must hold, what it says. */
function alertsPart(index: ClusterIndex): string {
  const rows: string[][] = [];
  const rules = index.ofKind('VMRule', 'operator.victoriametrics.com');
  for (const r of rules) {
    const groups = ((r.spec ?? {}) as { groups?: { name?: string; rules?: AlertRule[] }[] }).groups ?? [];
    for (const g of groups) {
      for (const a of g.rules ?? []) {
        if (!a.alert) continue;
        rows.push([code(a.alert), g.name ?? '', a.labels?.severity ?? '-', a.for ?? 'at once', a.annotations?.summary ?? '']);
      }
    }
  }
  if (rows.length === 0) return 'No alerting rules are rendered for this cluster.';
  const where = rules.map((r) => `[${code(`${r.metadata.namespace}/${r.metadata.name}`)}](${index.folderOf(r)}/${manifestFileName(r)})`).join(', ');
  return [
    `${rows.length} alerts (VMRule ${where}, evaluated by vmalert; each names a runbook in its annotations):`,
    '',
    table(['Alert', 'Group', 'Severity', 'For', 'Summary'], rows),
  ].join('\n');
}

/** Every dashboard ConfigMap the Grafana sidecar loads (the description's label): title, uid, panels. */
function dashboardsPart(c: RenderedCluster, index: ClusterIndex): string {
  const { key, value } = c.model.description.monitoring.grafanaDashboardLabel;
  const rows: string[][] = [];
  for (const cm of index.ofKind('ConfigMap').filter((m) => m.metadata.labels?.[key] === value)) {
    for (const [file, text] of Object.entries((cm as { data?: Record<string, string> }).data ?? {})) {
      let d: DashboardModel;
      try {
        d = JSON.parse(text) as DashboardModel;
      } catch {
        continue;
      }
      const panels = (d.panels ?? []).filter((p) => p.type !== 'row').map((p) => p.title ?? '').filter((t) => t !== '');
      rows.push([
        `[${d.title ?? file}](${index.folderOf(cm)}/${manifestFileName(cm)})`,
        code(d.uid ?? ''),
        d.description ?? '',
        `${panels.length}: ${panels.join(', ')}`,
      ]);
    }
  }
  if (rows.length === 0) return 'No Grafana dashboards are rendered for this cluster.';
  return [
    `${rows.length} Grafana dashboards (ConfigMaps labelled ${code(`${key}: "${value}"`)}, which Grafana's dashboard sidecar loads):`,
    '',
    table(['Dashboard', 'UID', 'What', 'Panels'], rows),
  ].join('\n');
}

/** The alerts and dashboards the monitoring folder installs, read from the rendered VMRules and dashboard ConfigMaps. */
export function observabilitySection(c: RenderedCluster, index: ClusterIndex): string {
  return ['### Alerts', '', alertsPart(index), '', '### Dashboards', '', dashboardsPart(c, index)].join('\n');
}
