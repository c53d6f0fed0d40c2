import { DashboardSpec } from './grafana-model';
import { histogramBuckets, KSM_GPU_RESOURCE } from './metric-catalogue';
import { series } from './promql';
import { RESOURCES } from '../../model/names';

/** Dashboard variable selecting nodes; the per-node panels filter on it. */
const NODE_VARIABLE = 'node';
const NODE_FILTER = { node: { variable: NODE_VARIABLE } };

export interface GpuFleetDashboardProps {
  /** Warning line of the temperature panel (the alert threshold). */
  readonly gpuTemperatureCelsius: number;
  /** GPUs each worker should advertise. */
  readonly gpusPerNode: number;
}

/** GPU fleet: allocatable GPUs, utilisation, memory, power, temperature and XIDs per node. */
export function gpuFleetDashboard(props: GpuFleetDashboardProps): DashboardSpec {
  const dcgm = (name: Parameters<typeof series>[0]) => series(name, NODE_FILTER);
  const util = dcgm('DCGM_FI_DEV_GPU_UTIL');
  const fbUsed = dcgm('DCGM_FI_DEV_FB_USED');
  const fbFree = dcgm('DCGM_FI_DEV_FB_FREE');
  const allocatable = series('kube_node_status_allocatable', { resource: KSM_GPU_RESOURCE });
  return {
    uid: 'gpu-fleet',
    title: 'GPU fleet',
    description: 'Every GPU of the cluster, per node (DCGM exporter, kube-state-metrics).',
    tags: ['gpu', 'dcgm'],
    variables: [{ name: NODE_VARIABLE, label: 'Node', query: `label_values(${series('DCGM_FI_DEV_GPU_UTIL')}, node)` }],
    panels: [
      {
        kind: 'stat',
        title: 'Allocatable GPUs',
        width: 6,
        height: 4,
        description: `GPUs the device plugins advertise (each worker should have ${props.gpusPerNode}).`,
        queries: [{ expr: `sum(max by (node) (${allocatable}))`, instant: true }],
      },
      {
        kind: 'stat',
        title: 'GPUs in use by pods',
        width: 6,
        height: 4,
        queries: [{ expr: `count(max by (node, gpu) (${series('DCGM_FI_DEV_GPU_UTIL', { pod: { not: '' } })}))`, instant: true }],
      },
      {
        kind: 'stat',
        title: 'Mean GPU utilisation',
        width: 6,
        height: 4,
        unit: 'percent',
        min: 0,
        max: 100,
        queries: [{ expr: `avg(${util})`, instant: true }],
      },
      {
        kind: 'stat',
        title: 'Fleet power draw',
        width: 6,
        height: 4,
        unit: 'watt',
        queries: [{ expr: `sum(max by (node, gpu) (${dcgm('DCGM_FI_DEV_POWER_USAGE')}))`, instant: true }],
      },
      {
        kind: 'timeseries',
        title: 'GPU utilisation per node',
        width: 12,
        unit: 'percent',
        min: 0,
        max: 100,
        queries: [{ expr: `avg by (node) (${util})`, legend: '{{node}}' }],
      },
      {
        kind: 'timeseries',
        title: 'GPU memory used per node',
        width: 12,
        unit: 'percentunit',
        min: 0,
        max: 1,
        queries: [{ expr: `sum by (node) (${fbUsed}) / (sum by (node) (${fbUsed}) + sum by (node) (${fbFree}))`, legend: '{{node}}' }],
      },
      {
        kind: 'timeseries',
        title: 'Power draw per node',
        width: 12,
        unit: 'watt',
        queries: [{ expr: `sum by (node) (max by (node, gpu) (${dcgm('DCGM_FI_DEV_POWER_USAGE')}))`, legend: '{{node}}' }],
      },
      {
        kind: 'timeseries',
        title: 'Hottest GPU per node',
        width: 12,
        unit: 'celsius',
        thresholds: [{ value: props.gpuTemperatureCelsius, color: 'red' }],
        queries: [{ expr: `max by (node) (${dcgm('DCGM_FI_DEV_GPU_TEMP')})`, legend: '{{node}}' }],
      },
      {
        kind: 'table',
        title: 'Last XID per GPU',
        width: 12,
        description: 'Non-zero: the last XID error the GPU reported.',
        queries: [{ expr: `max by (node, gpu) (${dcgm('DCGM_FI_DEV_XID_ERRORS')}) > 0`, instant: true }],
      },
      {
        kind: 'bargauge',
        title: 'Allocatable GPUs per node',
        width: 12,
        min: 0,
        max: props.gpusPerNode,
        thresholds: [{ value: 0, color: 'red' }, { value: props.gpusPerNode, color: 'green' }],
        queries: [{ expr: `max by (node) (${allocatable})`, legend: '{{node}}', instant: true }],
      },
    ],
  };
}

/** Kueue: pending and admitted workloads, and quota usage per ClusterQueue. */
export function queueDashboard(): DashboardSpec {
  const gpuQuota = { resource: RESOURCES.gpu };
  const usage = series('kueue_cluster_queue_resource_usage', gpuQuota);
  const nominal = series('kueue_cluster_queue_nominal_quota', gpuQuota);
  return {
    uid: 'kueue-queues',
    title: 'Kueue queues',
    description: 'Workloads and GPU quota per ClusterQueue (Kueue controller metrics).',
    tags: ['kueue', 'gpu'],
    panels: [
      {
        kind: 'timeseries',
        title: 'Pending workloads per ClusterQueue',
        width: 12,
        queries: [{ expr: `sum by (cluster_queue, status) (${series('kueue_pending_workloads')})`, legend: '{{cluster_queue}} ({{status}})' }],
      },
      {
        kind: 'timeseries',
        title: 'Admitted active workloads per ClusterQueue',
        width: 12,
        queries: [{ expr: `sum by (cluster_queue) (${series('kueue_admitted_active_workloads')})`, legend: '{{cluster_queue}}' }],
      },
      {
        kind: 'bargauge',
        title: 'GPU quota usage per ClusterQueue',
        width: 12,
        unit: 'percentunit',
        min: 0,
        description: 'Used GPUs / nominal GPU quota; above 100% the queue borrows from the cohort.',
        thresholds: [{ value: 1, color: 'orange' }],
        queries: [{ expr: `max by (cluster_queue) (${usage}) / max by (cluster_queue) (${nominal} > 0)`, legend: '{{cluster_queue}}', instant: true }],
      },
      {
        kind: 'timeseries',
        title: 'GPUs used and nominal quota per ClusterQueue',
        width: 12,
        queries: [
          { expr: `sum by (cluster_queue) (${usage})`, legend: '{{cluster_queue}} used' },
          { expr: `sum by (cluster_queue) (${nominal})`, legend: '{{cluster_queue}} nominal' },
        ],
      },
      {
        kind: 'timeseries',
        title: 'Admission wait time (p90) per ClusterQueue',
        width: 24,
        unit: 's',
        queries: [{
          expr: `histogram_quantile(0.9, sum by (cluster_queue, le) (rate(${histogramBuckets('kueue_admission_wait_time_seconds')}[15m])))`,
          legend: '{{cluster_queue}}',
        }],
      },
    ],
  };
}
