/**
 * A small typed model of Grafana dashboards: dashboards are written as typed panels and turned
 * into Grafana's dashboard JSON here (ids, grid positions, datasource references), never pasted.
 */

/** A query of a panel (the datasource is the dashboard's `datasource` variable). */
export interface PanelQuery {
  readonly expr: string;
  /** Series legend, with {{label}} templates. */
  readonly legend?: string;
  /**
   * One value per series instead of a range.
   * @default false
   */
  readonly instant?: boolean;
}

/** A threshold step: from `value` upwards the colour applies (the first step starts at -infinity). */
export interface ThresholdStep {
  readonly value: number;
  readonly color: string;
}

export type PanelKind = 'timeseries' | 'stat' | 'bargauge' | 'table';

export interface PanelSpec {
  readonly kind: PanelKind;
  readonly title: string;
  readonly description?: string;
  readonly queries: readonly PanelQuery[];
  /** Grafana unit id, e.g. "percent", "watt", "celsius", "percentunit", "decmbytes", "short", "s". */
  readonly unit?: string;
  readonly min?: number;
  readonly max?: number;
  /** Extra colour steps on top of green (e.g. a warning threshold from the description). */
  readonly thresholds?: readonly ThresholdStep[];
  /** Grid columns of 24. */
  readonly width: number;
  /**
   * Grid rows.
   * @default 8
   */
  readonly height?: number;
}

/** A query variable (label values), offered as a multi-select with "All". */
export interface QueryVariableSpec {
  readonly name: string;
  readonly label: string;
  /** E.g. `label_values(DCGM_FI_DEV_GPU_UTIL, node)`. */
  readonly query: string;
}

export interface DashboardSpec {
  /** Stable id (Grafana URL); letters, digits, "-" and "_", at most 40. */
  readonly uid: string;
  readonly title: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly variables?: readonly QueryVariableSpec[];
  readonly panels: readonly PanelSpec[];
  /**
   * @default "30s"
   */
  readonly refresh?: string;
  /**
   * @default "now-6h"
   */
  readonly timeFrom?: string;
}

/** Name of the datasource variable every panel uses (the Prometheus-compatible VictoriaMetrics datasource). */
export const DATASOURCE_VARIABLE = 'datasource';
const GRID_COLUMNS = 24;
const DEFAULT_PANEL_HEIGHT = 8;

/** The parts of Grafana's dashboard JSON this model writes. */
export interface GrafanaDashboardJson {
  readonly uid: string;
  readonly title: string;
  readonly schemaVersion: number;
  readonly panels: readonly { readonly id: number; readonly gridPos: { x: number; y: number; w: number; h: number } }[];
  readonly [key: string]: unknown;
}

function validate(spec: DashboardSpec): void {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(spec.uid)) {
    throw new Error(`dashboard uid must be 1-40 letters, digits, "-" or "_", got "${spec.uid}"`);
  }
  if (spec.panels.length === 0) throw new Error(`dashboard ${spec.uid}: panels must not be empty`);
  for (const p of spec.panels) {
    if (!Number.isInteger(p.width) || p.width < 1 || p.width > GRID_COLUMNS) {
      throw new Error(`dashboard ${spec.uid}, panel "${p.title}": width must be an integer from 1 to ${GRID_COLUMNS}, got ${p.width}`);
    }
    if (p.height !== undefined && (!Number.isInteger(p.height) || p.height < 1)) {
      throw new Error(`dashboard ${spec.uid}, panel "${p.title}": height must be a positive integer, got ${p.height}`);
    }
    if (p.queries.length === 0) throw new Error(`dashboard ${spec.uid}, panel "${p.title}": queries must not be empty`);
  }
}

/** Panel options per kind (the ones Grafana would otherwise fill in on first save, which shows as drift). */
function optionsOf(kind: PanelKind): Record<string, unknown> {
  switch (kind) {
    case 'timeseries':
      return { legend: { displayMode: 'table', placement: 'right', showLegend: true, calcs: ['lastNotNull', 'max'] }, tooltip: { mode: 'multi', sort: 'desc' } };
    case 'stat':
      return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, colorMode: 'value', graphMode: 'area', justifyMode: 'auto', orientation: 'auto', textMode: 'auto' };
    case 'bargauge':
      return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, displayMode: 'gradient', orientation: 'horizontal', showUnfilled: true };
    case 'table':
      return { showHeader: true, cellHeight: 'sm' };
  }
}

/**
 * Grafana dashboard JSON of a typed dashboard. Panels flow left to right in a 24-column grid
 * and wrap to a new row; ids are 1..n in order.
 */
export function dashboardJson(spec: DashboardSpec, schemaVersion: number): GrafanaDashboardJson {
  validate(spec);
  const datasource = { type: 'prometheus', uid: `\${${DATASOURCE_VARIABLE}}` };
  let x = 0;
  let y = 0;
  let rowHeight = 0;
  const panels = spec.panels.map((p, index) => {
    const h = p.height ?? DEFAULT_PANEL_HEIGHT;
    if (x + p.width > GRID_COLUMNS) {
      x = 0;
      y += rowHeight;
      rowHeight = 0;
    }
    const gridPos = { x, y, w: p.width, h };
    x += p.width;
    rowHeight = Math.max(rowHeight, h);
    return {
      id: index + 1,
      type: p.kind,
      title: p.title,
      ...(p.description === undefined ? {} : { description: p.description }),
      gridPos,
      datasource,
      targets: p.queries.map((q, i) => ({
        refId: String.fromCharCode(65 + i),
        datasource,
        expr: q.expr,
        legendFormat: q.legend ?? '__auto',
        range: !(q.instant ?? false),
        instant: q.instant ?? false,
        ...(p.kind === 'table' ? { format: 'table' } : {}),
      })),
      fieldConfig: {
        defaults: {
          ...(p.unit === undefined ? {} : { unit: p.unit }),
          ...(p.min === undefined ? {} : { min: p.min }),
          ...(p.max === undefined ? {} : { max: p.max }),
          thresholds: {
            mode: 'absolute',
            steps: [{ color: 'green', value: null }, ...(p.thresholds ?? []).map((t) => ({ color: t.color, value: t.value }))],
          },
        },
        overrides: [],
      },
      options: optionsOf(p.kind),
    };
  });

  const variables = [
    {
      name: DATASOURCE_VARIABLE,
      label: 'Datasource',
      type: 'datasource',
      query: 'prometheus',
      current: {},
      hide: 0,
      refresh: 1,
      regex: '',
      skipUrlSync: false,
    },
    ...(spec.variables ?? []).map((v) => ({
      name: v.name,
      label: v.label,
      type: 'query',
      datasource,
      query: { query: v.query, refId: `${v.name}-values` },
      definition: v.query,
      current: {},
      hide: 0,
      includeAll: true,
      multi: true,
      refresh: 2,
      regex: '',
      sort: 1,
      skipUrlSync: false,
    })),
  ];

  return {
    uid: spec.uid,
    title: spec.title,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    tags: [...spec.tags],
    schemaVersion,
    version: 1,
    editable: false,
    graphTooltip: 1,
    timezone: 'browser',
    time: { from: spec.timeFrom ?? 'now-6h', to: 'now' },
    refresh: spec.refresh ?? '30s',
    annotations: { list: [] },
    links: [],
    templating: { list: variables },
    panels,
  };
}
