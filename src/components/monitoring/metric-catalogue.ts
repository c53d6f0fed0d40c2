import { RESOURCES } from '../../model/names';

/**
 * Every metric the alerts and dashboards of this toolkit may use, per exporter, with the upstream
 * source it was read from. Alerts and dashboards name metrics only through `metric()`, so a
 * metric that no scraped exporter publishes is a compile error (and the tests parse every query
 * to check the same at run time).
 */

/** Prometheus metric type; histograms are also published as `<name>_bucket`, `_sum`, `_count`. */
export type MetricType = 'gauge' | 'counter' | 'histogram';

export interface MetricInfo {
  readonly type: MetricType;
  readonly help: string;
}

/** Where a DCGM field comes from: the exporter's default list, or added by this toolkit's list. */
export type DcgmFieldSource = 'default' | 'added';

export interface DcgmFieldInfo extends MetricInfo {
  readonly source: DcgmFieldSource;
}

/**
 * DCGM exporter (GPU Operator operand `nvidia-dcgm-exporter`). `default`: the fields of
 * dcgm-exporter's etc/dcp-metrics-included.csv, which the GPU Operator runs with by default.
 * `added`: throttling and ECC counters that list leaves commented out; the toolkit's own list
 * (ConfigMap DCGM_EXPORTER_METRICS) enables them. Labels: gpu, UUID, device, modelName,
 * Hostname, and pod/namespace/container of the workload holding the GPU.
 */
export const DCGM_FIELDS = {
  DCGM_FI_DEV_SM_CLOCK: { type: 'gauge', source: 'default', help: 'SM clock frequency (in MHz).' },
  DCGM_FI_DEV_MEM_CLOCK: { type: 'gauge', source: 'default', help: 'Memory clock frequency (in MHz).' },
  DCGM_FI_DEV_MEMORY_TEMP: { type: 'gauge', source: 'default', help: 'Memory temperature (in C).' },
  DCGM_FI_DEV_GPU_TEMP: { type: 'gauge', source: 'default', help: 'GPU temperature (in C).' },
  DCGM_FI_DEV_POWER_USAGE: { type: 'gauge', source: 'default', help: 'Power draw (in W).' },
  DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION: { type: 'counter', source: 'default', help: 'Total energy consumption since boot (in mJ).' },
  DCGM_FI_DEV_PCIE_REPLAY_COUNTER: { type: 'counter', source: 'default', help: 'Total number of PCIe retries.' },
  DCGM_FI_DEV_GPU_UTIL: { type: 'gauge', source: 'default', help: 'GPU utilization (in %).' },
  DCGM_FI_DEV_MEM_COPY_UTIL: { type: 'gauge', source: 'default', help: 'Memory utilization (in %).' },
  DCGM_FI_DEV_ENC_UTIL: { type: 'gauge', source: 'default', help: 'Encoder utilization (in %).' },
  DCGM_FI_DEV_DEC_UTIL: { type: 'gauge', source: 'default', help: 'Decoder utilization (in %).' },
  DCGM_FI_DEV_XID_ERRORS: { type: 'gauge', source: 'default', help: 'Value of the last XID error encountered.' },
  DCGM_FI_DEV_FB_FREE: { type: 'gauge', source: 'default', help: 'Framebuffer memory free (in MiB).' },
  DCGM_FI_DEV_FB_USED: { type: 'gauge', source: 'default', help: 'Framebuffer memory used (in MiB).' },
  DCGM_FI_DEV_FB_RESERVED: { type: 'gauge', source: 'default', help: 'Framebuffer memory reserved (in MiB).' },
  DCGM_FI_DEV_RETIRED_SBE: { type: 'counter', source: 'default', help: 'Total number of retired pages due to single-bit errors.' },
  DCGM_FI_DEV_RETIRED_DBE: { type: 'counter', source: 'default', help: 'Total number of retired pages due to double-bit errors.' },
  DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: { type: 'counter', source: 'default', help: 'Total number of NVLink bandwidth counters for all lanes.' },
  DCGM_FI_DEV_VGPU_LICENSE_STATUS: { type: 'gauge', source: 'default', help: 'vGPU License status' },
  DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS: { type: 'counter', source: 'default', help: 'Number of remapped rows for uncorrectable errors' },
  DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS: { type: 'counter', source: 'default', help: 'Number of remapped rows for correctable errors' },
  DCGM_FI_DEV_ROW_REMAP_FAILURE: { type: 'gauge', source: 'default', help: 'Whether remapping of rows has failed' },
  DCGM_FI_PROF_GR_ENGINE_ACTIVE: { type: 'gauge', source: 'default', help: 'Ratio of time the graphics engine is active.' },
  DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: { type: 'gauge', source: 'default', help: 'Ratio of cycles the tensor (HMMA) pipe is active.' },
  DCGM_FI_PROF_DRAM_ACTIVE: { type: 'gauge', source: 'default', help: 'Ratio of cycles the device memory interface is active sending or receiving data.' },
  DCGM_FI_PROF_PCIE_TX_BYTES: { type: 'gauge', source: 'default', help: 'The rate of data transmitted over the PCIe bus (in bytes per second).' },
  DCGM_FI_PROF_PCIE_RX_BYTES: { type: 'gauge', source: 'default', help: 'The rate of data received over the PCIe bus (in bytes per second).' },
  DCGM_FI_DEV_POWER_MGMT_LIMIT: { type: 'gauge', source: 'added', help: 'Power management limit (in W).' },
  DCGM_FI_DEV_POWER_VIOLATION: { type: 'counter', source: 'added', help: 'Throttling duration due to power constraints.' },
  DCGM_FI_DEV_THERMAL_VIOLATION: { type: 'counter', source: 'added', help: 'Throttling duration due to thermal constraints.' },
  DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: { type: 'counter', source: 'added', help: 'Total number of single-bit volatile ECC errors.' },
  DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: { type: 'counter', source: 'added', help: 'Total number of double-bit volatile ECC errors.' },
} as const satisfies Record<string, DcgmFieldInfo>;

/** DCGM fields published as labels of every DCGM metric (not metrics of their own). */
export const DCGM_LABEL_FIELDS = {
  DCGM_FI_DRIVER_VERSION: 'Driver Version',
} as const;

/** GPU Operator controller (Service `gpu-operator`, port `gpu-operator-metrics`; controllers/operator_metrics.go). */
export const GPU_OPERATOR_METRICS = {
  gpu_operator_gpu_nodes_total: { type: 'gauge', help: 'Number of nodes with GPUs' },
  gpu_operator_reconciliation_status: { type: 'gauge', help: '1 if the reconciliation is successful, 0 operands not ready, -1 ClusterPolicy unavailable, -2 operator error.' },
  gpu_operator_reconciliation_total: { type: 'counter', help: 'Total number of reconciliation' },
  gpu_operator_reconciliation_failed_total: { type: 'counter', help: 'Number of failed reconciliation' },
  gpu_operator_reconciliation_last_success_ts_seconds: { type: 'gauge', help: 'Timestamp (in seconds) of the last reconciliation loop success' },
} as const satisfies Record<string, MetricInfo>;

/** GPU Operator node status exporter (Service `nvidia-node-status-exporter`, port `node-status`; cmd/nvidia-validator/metrics.go). Label: node. */
export const NODE_STATUS_EXPORTER_METRICS = {
  gpu_operator_node_driver_ready: { type: 'gauge', help: '1 if the driver synchronization barrier of the local node is open, 0 otherwise' },
  gpu_operator_node_toolkit_ready: { type: 'gauge', help: '1 if the container-toolkit synchronization barrier on the local node is open, 0 otherwise' },
  gpu_operator_node_plugin_ready: { type: 'gauge', help: '1 if the device plugin synchronization barrier on the local node is open, 0 otherwise' },
  gpu_operator_node_cuda_ready: { type: 'gauge', help: '1 if cuda synchronization barrier on the local node is open, 0 otherwise' },
  gpu_operator_node_device_plugin_devices_total: { type: 'gauge', help: 'number of GPU devices exposed by the DevicePlugin on the local node. -1 if failing to inspect the node spec.' },
} as const satisfies Record<string, MetricInfo>;

/** controller-runtime metrics every kubebuilder manager publishes (here: the Network Operator). Label: controller. */
export const CONTROLLER_RUNTIME_METRICS = {
  controller_runtime_reconcile_total: { type: 'counter', help: 'Total number of reconciliations per controller' },
  controller_runtime_reconcile_errors_total: { type: 'counter', help: 'Total number of reconciliation errors per controller' },
} as const satisfies Record<string, MetricInfo>;

/**
 * Kueue controller manager (Service `kueue-controller-manager-metrics-service`, port `https`;
 * pkg/metrics/metrics.go). The `cluster_queue_*` resource metrics are published only with
 * `metrics.enableClusterQueueResources: true` in the Kueue configuration.
 */
export const KUEUE_METRICS = {
  kueue_pending_workloads: { type: 'gauge', help: 'Number of pending workloads, per cluster_queue and status (active, inadmissible).' },
  kueue_admitted_active_workloads: { type: 'gauge', help: 'Number of admitted workloads that are active (unsuspended and not finished), per cluster_queue.' },
  kueue_reserving_active_workloads: { type: 'gauge', help: 'Number of workloads reserving quota, per cluster_queue.' },
  kueue_admitted_workloads_total: { type: 'counter', help: 'Total number of admitted workloads, per cluster_queue.' },
  kueue_evicted_workloads_total: { type: 'counter', help: 'Number of evicted workloads, per cluster_queue and reason.' },
  kueue_admission_wait_time_seconds: { type: 'histogram', help: 'Time from creation or requeue until admission, per cluster_queue.' },
  kueue_cluster_queue_status: { type: 'gauge', help: 'Status of the ClusterQueue (pending, active, terminating).' },
  kueue_cluster_queue_resource_usage: { type: 'gauge', help: 'Total resource usage of a ClusterQueue, per flavor and resource.' },
  kueue_cluster_queue_nominal_quota: { type: 'gauge', help: 'Nominal quota of a ClusterQueue, per flavor and resource.' },
  kueue_cluster_queue_borrowing_limit: { type: 'gauge', help: 'Borrowing limit of a ClusterQueue, per flavor and resource.' },
} as const satisfies Record<string, MetricInfo>;

/** Prometheus node exporter (every node, port 9100; collector/infiniband_linux.go). Labels: device (HCA), port. */
export const NODE_EXPORTER_METRICS = {
  node_infiniband_state_id: { type: 'gauge', help: 'State of the InfiniBand port (1: down, 2: init, 3: armed, 4: active, 5: act defer)' },
  node_infiniband_physical_state_id: { type: 'gauge', help: 'Physical state of the InfiniBand port (5: link up)' },
  node_infiniband_rate_bytes_per_second: { type: 'gauge', help: 'Maximum signal transfer rate' },
  node_infiniband_link_downed_total: { type: 'counter', help: 'Number of times the link failed to recover from an error state and went down' },
  node_infiniband_port_data_received_bytes_total: { type: 'counter', help: 'Number of data octets received on all links' },
  node_infiniband_port_data_transmitted_bytes_total: { type: 'counter', help: 'Number of data octets transmitted on all links' },
  node_uname_info: { type: 'gauge', help: 'Labeled system information as provided by the uname system call (nodename: the node\'s hostname).' },
} as const satisfies Record<string, MetricInfo>;

/** The GPU resource as kube-state-metrics spells it in the `resource` label (`.` and `/` become `_`). */
export const KSM_GPU_RESOURCE = RESOURCES.gpu.replace(/[./]/g, '_');

/** kube-state-metrics. Extended resources are sanitised in the `resource` label: nvidia.com/gpu -> nvidia_com_gpu. */
export const KUBE_STATE_METRICS = {
  kube_node_status_allocatable: { type: 'gauge', help: 'The allocatable for different resources of a node, per resource and unit.' },
  kube_node_status_capacity: { type: 'gauge', help: 'The capacity for different resources of a node, per resource and unit.' },
  kube_pod_container_resource_requests: { type: 'gauge', help: 'The number of requested resource by a container, per resource and unit.' },
} as const satisfies Record<string, MetricInfo>;

/** The catalogue: every scraped exporter and what it publishes. */
export const METRIC_CATALOGUE = {
  dcgmExporter: DCGM_FIELDS,
  gpuOperator: GPU_OPERATOR_METRICS,
  nodeStatusExporter: NODE_STATUS_EXPORTER_METRICS,
  networkOperator: CONTROLLER_RUNTIME_METRICS,
  kueue: KUEUE_METRICS,
  nodeExporter: NODE_EXPORTER_METRICS,
  kubeStateMetrics: KUBE_STATE_METRICS,
} as const;

export type ExporterName = keyof typeof METRIC_CATALOGUE;
type CatalogueEntry = (typeof METRIC_CATALOGUE)[ExporterName];
/** Every metric name in the catalogue (a compile-time union). */
export type MetricName = { [E in ExporterName]: keyof (typeof METRIC_CATALOGUE)[E] }[ExporterName] & string;

type HistogramName = { [E in ExporterName]: { [M in keyof (typeof METRIC_CATALOGUE)[E]]: (typeof METRIC_CATALOGUE)[E][M] extends { type: 'histogram' } ? M : never }[keyof (typeof METRIC_CATALOGUE)[E]] }[ExporterName] & string;

/** A catalogued metric name, checked by the compiler. */
export function metric(name: MetricName): string {
  return name;
}

/** The `_bucket` series of a catalogued histogram. */
export function histogramBuckets(name: HistogramName): string {
  return `${name}_bucket`;
}

/**
 * Every series name the catalogue allows in a query: the metric names, plus `_bucket`, `_sum`
 * and `_count` of histograms. Used by tests to check parsed queries.
 */
export function catalogueSeriesNames(): ReadonlySet<string> {
  const names = new Set<string>();
  for (const exporter of Object.values(METRIC_CATALOGUE) as CatalogueEntry[]) {
    for (const [name, info] of Object.entries(exporter) as [string, MetricInfo][]) {
      if (info.type === 'histogram') {
        for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
      } else {
        names.add(name);
      }
    }
  }
  return names;
}

/**
 * The DCGM exporter's metrics list (dcgm-exporter CSV format: `field, type, help`): every field
 * of DCGM_FIELDS, then the label fields.
 */
export function dcgmMetricsCsv(): string {
  const lines = [
    '# DCGM FIELD, Prometheus metric type, help message',
    '# Rendered by gpu-cluster-manifests from its metric catalogue: dcgm-exporter\'s',
    '# dcp-metrics-included.csv plus throttling and ECC counters.',
    ...Object.entries(DCGM_FIELDS).map(([field, info]) => `${field}, ${info.type}, ${info.help}`),
    ...Object.entries(DCGM_LABEL_FIELDS).map(([field, help]) => `${field}, label, ${help}`),
  ];
  return `${lines.join('\n')}\n`;
}
