/**
 * The library surface of `gpu-cluster-manifests` for other cdk8s apps and tools:
 * `import { ... } from 'gpu-cluster-manifests'`. Named exports only, chosen on purpose; anything
 * not listed here is internal and may change without notice.
 *
 * - the cluster description: its types, schema, loader and parser, and `defineCluster` for
 *   descriptions written in TypeScript;
 * - the model built from a description (`buildModel`, `ClusterModel` and its parts);
 * - each component's chart and the constructs it is made of;
 * - the pipeline: render, validate, check, synth (render + validate + check + write).
 */

// ---- the cluster description
export { ClusterDescriptionSchema } from './model/description';
export type { ClusterDescription, ClusterDescriptionInput, TenantDescription, Taint } from './model/description';
export { defineCluster } from './model/define';
export { isDescriptionFile } from './model/description-files';
export { DescriptionError, loadDescription, parseDescription } from './model/load';
export type { DescriptionIssue } from './model/load';
export { descriptionJsonSchema } from './model/json-schema';

// ---- the model
export { buildModel } from './model/model';
export type {
  Capacity, ClusterModel, CpuOnlyAmounts, NodePlacement, PodPlacement, PriorityModel, QueueModel, QueueQuota,
  RdmaFacts, ResourceAmounts, TenantModel, TolerationSpec,
} from './model/model';
export { LABELS, NAMESPACES, RESOURCES, STORAGE_CLASSES } from './model/names';
export { VERSIONS } from './versions';

// ---- the components: one chart each, and its constructs
export { COMPONENTS } from './components';
export type { ComponentChartProps, ComponentDefinition } from './components/component';

export { StorageChart } from './components/storage/chart';
export { LocalPathConfig } from './components/storage/local-path-config';
export type { LocalPathClassConfig, LocalPathConfigProps } from './components/storage/local-path-config';
export { LocalPathProvisioner } from './components/storage/local-path-provisioner';
export type { LocalPathProvisionerProps } from './components/storage/local-path-provisioner';
export { LocalPathStorageClass } from './components/storage/local-path-storage-class';
export type { LocalPathStorageClassProps } from './components/storage/local-path-storage-class';

export { GpuOperatorChart } from './components/gpu-operator/chart';
export { ClusterPolicy } from './components/gpu-operator/cluster-policy';
export type { ClusterPolicyImages, ClusterPolicyProps, MigStrategy, OperandImage } from './components/gpu-operator/cluster-policy';
export { DcgmMetricsConfig } from './components/gpu-operator/dcgm-metrics-config';
export type { DcgmMetricsConfigProps } from './components/gpu-operator/dcgm-metrics-config';
export { gpuOperatorHelmValues } from './components/gpu-operator/helm-values';

export { NetworkOperatorChart } from './components/network-operator/chart';
export type { NetworkOperatorChartProps } from './components/network-operator/chart';
export { NicClusterPolicy } from './components/network-operator/nic-cluster-policy';
export type { NicClusterPolicyProps, SecondaryNetworkOptions } from './components/network-operator/nic-cluster-policy';
export { rdmaSharedDevicePluginConfig } from './components/network-operator/rdma-shared-device-config';
export type { RdmaDeviceSelectors, RdmaSharedDevice } from './components/network-operator/rdma-shared-device-config';
export { networkOperatorHelmValues } from './components/network-operator/helm-values';

export { KueueChart } from './components/kueue/chart';
export { KueueClusterQueue } from './components/kueue/cluster-queue';
export type { KueueClusterQueueProps } from './components/kueue/cluster-queue';
export { KueueLocalQueue } from './components/kueue/local-queue';
export type { KueueLocalQueueProps } from './components/kueue/local-queue';
export { KueueResourceFlavor } from './components/kueue/resource-flavor';
export type { KueueResourceFlavorProps } from './components/kueue/resource-flavor';
export { KueueTopology } from './components/kueue/topology';
export type { KueueTopologyProps } from './components/kueue/topology';
export { KueueWorkloadPriorityClass } from './components/kueue/workload-priority-class';
export type { KueueWorkloadPriorityClassProps } from './components/kueue/workload-priority-class';
export { PodPriorityClass } from './components/kueue/pod-priority-class';
export type { PodPriorityClassProps } from './components/kueue/pod-priority-class';
export { kueueHelmValues, kueueManagerConfig } from './components/kueue/manager-config';

export { TenantsChart } from './components/tenants/chart';
export { Tenant } from './components/tenants/tenant';
export type { TenantProps } from './components/tenants/tenant';
export { TenantRole } from './components/tenants/tenant-role';
export type { TenantRoleProps } from './components/tenants/tenant-role';
export { TenantGuardrails } from './components/tenants/tenant-guardrails';
export type { TenantGuardrailsProps } from './components/tenants/tenant-guardrails';
export { TenantUnqueued } from './components/tenants/tenant-unqueued';
export type { TenantUnqueuedProps } from './components/tenants/tenant-unqueued';

export { MonitoringChart } from './components/monitoring/chart';
export { ExporterScrapes } from './components/monitoring/exporter-scrapes';
export type { ExporterScrapesProps } from './components/monitoring/exporter-scrapes';
export { GpuClusterAlerts } from './components/monitoring/gpu-cluster-alerts';
export type { GpuClusterAlertsProps } from './components/monitoring/gpu-cluster-alerts';
export { GrafanaDashboard } from './components/monitoring/grafana-dashboard';
export type { GrafanaDashboardProps } from './components/monitoring/grafana-dashboard';
export { MetricsReader } from './components/monitoring/metrics-reader';
export type { MetricsReaderProps } from './components/monitoring/metrics-reader';

export { DashboardChart } from './components/dashboard/chart';
export { DashboardNodePort } from './components/dashboard/dashboard-node-port';
export type { DashboardNodePortProps } from './components/dashboard/dashboard-node-port';
export { DashboardViewer } from './components/dashboard/dashboard-viewer';
export type { DashboardViewerProps } from './components/dashboard/dashboard-viewer';

export { SamplesChart } from './components/samples/chart';
export { NcclTest } from './components/samples/nccl-test';
export type { NcclTestProps } from './components/samples/nccl-test';
export { PyTorchTrainingJob } from './components/samples/pytorch-training-job';
export type { PyTorchTrainingJobProps } from './components/samples/pytorch-training-job';
export { DcgmDiagnostic } from './components/samples/dcgm-diagnostic';
export type { DcgmDiagnosticProps } from './components/samples/dcgm-diagnostic';

export { GitopsChart } from './components/gitops/chart';
export type { GitopsChartProps } from './components/gitops/chart';
export { ClusterAppProject } from './components/gitops/cluster-app-project';
export type { ClusterAppProjectProps } from './components/gitops/cluster-app-project';
export { GitopsApplication } from './components/gitops/gitops-application';
export type { GitopsApplicationProps } from './components/gitops/gitops-application';
export { FleetAppProject } from './components/gitops/fleet-app-project';
export type { FleetAppProjectProps } from './components/gitops/fleet-app-project';
export { FleetApplicationSet } from './components/gitops/fleet-application-set';
export type { FleetApplicationSetProps, FleetMember } from './components/gitops/fleet-application-set';
export { renderFleet } from './components/gitops/fleet';

// ---- the pipeline
export { renderCluster } from './synth/render';
export type { RenderedCluster } from './render/manifest';
export type { Manifest, RenderedFolder } from './render/manifest';
export { clusterFiles } from './synth/layout';
export type { RenderedFile } from './render/folder-files';
export { SchemaDirectoryMissing, SchemaStore } from './validate/schemas';
export { ManifestValidator } from './validate/validator';
export type { ValidationIssue, ValidatorOptions } from './validate/validator';
export type { ValidationInput } from './render/manifest';
export { CheckFailed, checkCluster, checkClusterRendered, checkClusters, formatFinding, RULES } from './check/engine';
export { renderClusterSources } from './check/renders';
export type { RenderOptions } from './check/renders';
export { describeEngines, resolveEngines } from './engines';
export type { Engine, EngineOptions, Engines } from './engines';
export type { CheckOptions } from './check/engine';
export type { Finding, Rule, Severity } from './check/rule';
export { InputError, synth, validateClusters, ValidationFailed } from './synth/pipeline';
export type { SynthOptions, SynthResult, Timings } from './synth/pipeline';
