import { Construct } from 'constructs';
import { KSM_GPU_RESOURCE } from './metric-catalogue';
import { series } from './promql';
import { VmRule, VmRuleSpecGroups } from '../../../imports/vm-rule-operator.victoriametrics.com';

export type AlertSeverity = 'critical' | 'warning' | 'info';

/** One alerting rule, with the annotations every alert of the toolkit carries. */
export interface AlertDefinition {
  readonly alert: string;
  readonly expr: string;
  /** Omitted: fires on the first evaluation. */
  readonly for?: string;
  readonly severity: AlertSeverity;
  /** One line, with $labels templates. */
  readonly summary: string;
  /** What to check first. */
  readonly runbook: string;
}

export interface AlertGroup {
  readonly name: string;
  readonly rules: readonly AlertDefinition[];
}

export interface GpuClusterAlertsProps {
  /** Namespace of the VMRule (the monitoring stack's own). */
  readonly namespace: string;
  /** nvidia.com/gpu every GPU worker should advertise. */
  readonly gpusPerNode: number;
  /** InfiniBand HCAs of each GPU worker; no fabric alerts without them. */
  readonly hcas?: readonly string[];
  /** Namespace of the Network Operator (its controller metrics carry it). */
  readonly networkOperatorNamespace: string;
  /**
   * Default "for" of alerts.
   * @default "5m"
   */
  readonly for?: string;
  /** @default 85 */
  readonly gpuTemperatureCelsius?: number;
  /** @default 95 */
  readonly gpuMemoryTemperatureCelsius?: number;
  /**
   * XIDs that do not alert.
   * @default [13, 31, 43, 45]
   */
  readonly ignoredXids?: readonly number[];
  /** @default "30m" */
  readonly pendingWorkloadsFor?: string;
  /** @default 1 */
  readonly quotaUsageRatio?: number;
  /**
   * Base URL of the runbooks (annotation runbook_url = <base>#<alert in lower case>).
   * @default no runbook_url
   */
  readonly runbookBaseUrl?: string;
  /**
   * VMRule name.
   * @default "gpu-cluster-alerts"
   */
  readonly name?: string;
}

/** How long GpuXidError fires after a GPU reports a new XID. */
const XID_WINDOW = '15m';

/** node_infiniband_state_id of a port that carries traffic. */
const IB_PORT_ACTIVE = 4;

/**
 * The alerting rules of a GPU cluster as one VMRule: GPU health (XID, temperature, throttling,
 * ECC and row remapping, GPUs missing from a node), the InfiniBand fabric, Kueue queueing and
 * the operators. Every expression aggregates with `max by` so duplicate scrapes of the same
 * exporter (the monitoring stack's own and these) never double-count.
 */
export class GpuClusterAlerts extends Construct {
  readonly name: string;
  readonly groups: readonly AlertGroup[];

  constructor(scope: Construct, id: string, props: GpuClusterAlertsProps) {
    super(scope, id);
    if (!Number.isInteger(props.gpusPerNode) || props.gpusPerNode < 1) {
      throw new Error(`GpuClusterAlerts: gpusPerNode must be a positive integer, got ${props.gpusPerNode}`);
    }
    const quotaUsageRatio = props.quotaUsageRatio ?? 1;
    if (!(quotaUsageRatio > 0)) throw new Error(`GpuClusterAlerts: quotaUsageRatio must be above 0, got ${quotaUsageRatio}`);
    this.name = props.name ?? 'gpu-cluster-alerts';
    const forDefault = props.for ?? '5m';
    const gpuTemperature = props.gpuTemperatureCelsius ?? 85;
    const memoryTemperature = props.gpuMemoryTemperatureCelsius ?? 95;
    const ignoredXids = props.ignoredXids ?? [13, 31, 43, 45];
    const pendingFor = props.pendingWorkloadsFor ?? '30m';
    const perGpu = 'node, gpu';

    // DCGM_FI_DEV_XID_ERRORS holds the last XID a GPU reported, for ever: alert while it changed within the
    // window (a new XID), not on its value alone. The same XID twice in a row does not change the gauge.
    const lastXid = `max by (${perGpu}) (${series('DCGM_FI_DEV_XID_ERRORS')})`;
    const xidChanged = `max by (${perGpu}) (changes(${series('DCGM_FI_DEV_XID_ERRORS')}[${XID_WINDOW}])) > 0`;
    const xidExpr = ignoredXids.length === 0
      ? `${lastXid} > 0 and ${xidChanged}`
      : `(${lastXid} > 0 unless (${ignoredXids.map((x) => `${lastXid} == ${x}`).join(' or ')})) and ${xidChanged}`;

    const gpu: AlertGroup = {
      name: 'gpu-health',
      rules: [
        {
          alert: 'GpuXidError',
          expr: xidExpr,
          severity: 'critical',
          summary: `GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $value }} in the last ${XID_WINDOW}`,
          runbook: 'Look the XID up in NVIDIA\'s XID catalogue; check `dmesg | grep -i xid` on the node; drain the node and run the dcgm diag sample (level 3) before returning it to service.',
        },
        {
          alert: 'GpuTemperatureHigh',
          expr: `max by (${perGpu}) (${series('DCGM_FI_DEV_GPU_TEMP')}) > ${gpuTemperature}`,
          for: forDefault,
          severity: 'warning',
          summary: `GPU {{ $labels.gpu }} on {{ $labels.node }} is at {{ $value }} C (threshold ${gpuTemperature} C)`,
          runbook: 'Check the node\'s fans, airflow and inlet temperature with the datacenter; compare with the other GPUs of the node.',
        },
        {
          alert: 'GpuMemoryTemperatureHigh',
          expr: `max by (${perGpu}) (${series('DCGM_FI_DEV_MEMORY_TEMP')}) > ${memoryTemperature}`,
          for: forDefault,
          severity: 'warning',
          summary: `GPU memory of {{ $labels.gpu }} on {{ $labels.node }} is at {{ $value }} C (threshold ${memoryTemperature} C)`,
          runbook: 'HBM runs hot before the GPU does: check cooling; sustained high memory temperature leads to thermal throttling and ECC errors.',
        },
        {
          alert: 'GpuThermalThrottling',
          expr: `max by (${perGpu}) (rate(${series('DCGM_FI_DEV_THERMAL_VIOLATION')}[5m])) > 0`,
          for: forDefault,
          severity: 'warning',
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.node }} is throttled by temperature',
          runbook: 'Thermal throttling lowers clocks and slows the whole collective job; check cooling and `nvidia-smi -q -d PERFORMANCE` on the node.',
        },
        {
          alert: 'GpuPowerThrottling',
          expr: `max by (${perGpu}) (rate(${series('DCGM_FI_DEV_POWER_VIOLATION')}[5m])) > 0`,
          for: forDefault,
          severity: 'warning',
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.node }} is throttled by its power limit',
          runbook: 'Compare DCGM_FI_DEV_POWER_USAGE with the power limit (`nvidia-smi -q -d POWER`); check the node\'s PSUs and any power capping.',
        },
        {
          alert: 'GpuDoubleBitEccErrors',
          expr: `max by (${perGpu}) (increase(${series('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL')}[10m])) > 0`,
          severity: 'critical',
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.node }} had uncorrectable (double-bit) ECC errors',
          runbook: 'Uncorrectable memory errors kill the running job; drain the node, reset the GPU and run the dcgm diag sample; RMA if it repeats.',
        },
        {
          alert: 'GpuRowRemapFailure',
          expr: `max by (${perGpu}) (${series('DCGM_FI_DEV_ROW_REMAP_FAILURE')}) > 0`,
          severity: 'critical',
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.node }} failed to remap a memory row',
          runbook: 'The GPU has no spare rows left: drain the node and replace the GPU (RMA).',
        },
        {
          alert: 'GpuUncorrectableRowRemap',
          expr: `max by (${perGpu}) (increase(${series('DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS')}[1h])) > 0`,
          severity: 'warning',
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.node }} remapped a row after an uncorrectable error',
          runbook: 'The remap takes effect after a GPU reset: drain the node and reset the GPU (`nvidia-smi -r`) or reboot it.',
        },
        {
          alert: 'GpuMissingFromNode',
          expr: `max by (node) (${series('kube_node_status_allocatable', { resource: KSM_GPU_RESOURCE })}) < ${props.gpusPerNode}`,
          for: forDefault,
          severity: 'critical',
          summary: `Node {{ $labels.node }} advertises {{ $value }} of ${props.gpusPerNode} GPUs`,
          runbook: 'A GPU fell off the bus or was marked unhealthy: check `nvidia-smi` and `dmesg` on the node and the device plugin\'s log; a reboot usually brings it back, a repeat means hardware.',
        },
      ],
    };

    const hcas = props.hcas ?? [];
    // Node exporter series carry no node label when the monitoring stack scrapes them (its Service scrape labels
    // the pod): group per target (instance, the node's address: node exporter runs on the host network) and
    // name the node by uname's nodename, so one node's down port is never hidden by another's active one.
    const perPort = (expr: string) => `max by (instance, device, port) (${expr}) * on (instance) group_left (nodename) max by (instance, nodename) (${series('node_uname_info')})`;
    const fabric: AlertGroup | undefined = hcas.length === 0 ? undefined : {
      name: 'infiniband',
      rules: [
        {
          alert: 'InfinibandLinkDown',
          expr: `${perPort(series('node_infiniband_state_id', { device: { oneOf: hcas } }))} != ${IB_PORT_ACTIVE}`,
          for: forDefault,
          severity: 'critical',
          summary: 'InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.nodename }} is not active',
          runbook: 'Check `ibstat` on the node and the cable and switch port; NCCL jobs on this node fall back or fail until the link is up.',
        },
        {
          alert: 'InfinibandLinkFlapping',
          expr: `${perPort(`increase(${series('node_infiniband_link_downed_total', { device: { oneOf: hcas } })}[1h])`)} > 0`,
          severity: 'warning',
          summary: 'InfiniBand port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.nodename }} went down in the last hour',
          runbook: 'A link that drops and recovers degrades collectives: check the port\'s error counters (`perfquery`) and reseat or replace the cable.',
        },
      ],
    };

    const queueUsage = series('kueue_cluster_queue_resource_usage');
    const nominalQuota = series('kueue_cluster_queue_nominal_quota');
    const queueing: AlertGroup = {
      name: 'kueue',
      rules: [
        {
          alert: 'KueueWorkloadsPendingTooLong',
          expr: `sum by (cluster_queue) (${series('kueue_pending_workloads')}) > 0`,
          for: pendingFor,
          severity: 'warning',
          summary: `ClusterQueue {{ $labels.cluster_queue }} has had pending workloads for more than ${pendingFor}`,
          runbook: 'List them with `kubectl get workloads -A` and read their conditions: quota exhausted (wait or borrow), a resource no flavor covers, or an inadmissible request.',
        },
        {
          alert: 'ClusterQueueOverQuota',
          expr: `max by (cluster_queue, resource) (${queueUsage}) / max by (cluster_queue, resource) (${nominalQuota} > 0) > ${quotaUsageRatio}`,
          for: forDefault,
          severity: 'info',
          summary: `ClusterQueue {{ $labels.cluster_queue }} uses {{ $value | humanizePercentage }} of its nominal {{ $labels.resource }} quota (threshold ${quotaUsageRatio})`,
          runbook: 'The queue is borrowing from the cohort; its workloads may be preempted when the lenders reclaim. Raise the tenant quota if this is the normal load.',
        },
      ],
    };

    const operators: AlertGroup = {
      name: 'operators',
      rules: [
        {
          alert: 'GpuOperatorNotReconciled',
          expr: `max(${series('gpu_operator_reconciliation_status')}) < 1`,
          for: '15m',
          severity: 'warning',
          summary: 'The GPU Operator has not reconciled the ClusterPolicy successfully for 15 minutes (status {{ $value }})',
          runbook: 'Read `kubectl get clusterpolicy cluster-policy -o yaml` status and the gpu-operator pod log; operands stuck in Init usually name the cause.',
        },
        {
          alert: 'NetworkOperatorReconcileErrors',
          expr: `sum by (controller) (rate(${series('controller_runtime_reconcile_errors_total', { namespace: props.networkOperatorNamespace })}[10m])) > 0`,
          for: forDefault,
          severity: 'warning',
          summary: 'Network Operator controller {{ $labels.controller }} keeps failing to reconcile',
          runbook: 'Read the NicClusterPolicy status and the network-operator pod log.',
        },
      ],
    };

    this.groups = [gpu, ...(fabric ? [fabric] : []), queueing, operators];
    const runbookUrl = (alert: string): Record<string, string> => (props.runbookBaseUrl === undefined ? {} : { runbook_url: `${props.runbookBaseUrl.replace(/\/$/, '')}#${alert.toLowerCase()}` });
    const groups: VmRuleSpecGroups[] = this.groups.map((g) => ({
      name: g.name,
      rules: g.rules.map((r) => ({
        alert: r.alert,
        expr: r.expr,
        ...(r.for === undefined ? {} : { for: r.for }),
        labels: { severity: r.severity },
        annotations: { summary: r.summary, runbook: r.runbook, ...runbookUrl(r.alert) },
      })),
    }));
    new VmRule(this, 'Resource', { metadata: { name: this.name, namespace: props.namespace }, spec: { groups } });
  }
}
