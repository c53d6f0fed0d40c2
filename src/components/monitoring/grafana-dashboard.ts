import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { dashboardJson, DashboardSpec } from './grafana-model';
import { VERSIONS } from '../../versions';

export interface GrafanaDashboardProps {
  /** Namespace the Grafana sidecar watches. */
  readonly namespace: string;
  /** The dashboard, as typed panels. */
  readonly dashboard: DashboardSpec;
  /** Label the Grafana sidecar selects dashboard ConfigMaps by. */
  readonly sidecarLabel: { readonly key: string; readonly value: string };
}

/**
 * One Grafana dashboard as a ConfigMap `grafana-dashboard-<uid>` with key `<uid>.json`, labelled
 * for the Grafana dashboard sidecar.
 */
export class GrafanaDashboard extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: GrafanaDashboardProps) {
    super(scope, id);
    const json = dashboardJson(props.dashboard, VERSIONS.grafana.dashboardSchemaVersion);
    this.name = `grafana-dashboard-${props.dashboard.uid.toLowerCase().replace(/_/g, '-')}`;
    new k8s.KubeConfigMap(this, 'Resource', {
      metadata: {
        name: this.name,
        namespace: props.namespace,
        labels: { [props.sidecarLabel.key]: props.sidecarLabel.value },
      },
      data: { [`${props.dashboard.uid}.json`]: `${JSON.stringify(json, undefined, 2)}\n` },
    });
  }
}
