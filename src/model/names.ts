/**
 * Names shared by more than one component: label keys, resource names, namespaces of the
 * add-ons. Components import them from here and never re-type the strings.
 */

/** Extended and standard resource names. The RDMA resource is per cluster: see ClusterModel.rdma. */
export const RESOURCES = {
  cpu: 'cpu',
  memory: 'memory',
  gpu: 'nvidia.com/gpu',
  /** Prefix of every RDMA shared device resource (`rdma/<name>`). */
  rdmaPrefix: 'rdma/',
} as const;

/** Argo CD's field manager (gitops-engine applies as `argocd-controller`, with ServerSideApply=true). */
export const ARGOCD_FIELD_MANAGER = 'argocd-controller';
/** The annotation Argo CD tracks its objects by (resourceTrackingMethod `annotation`, the default since Argo CD 3.0). */
export const ARGOCD_TRACKING_ANNOTATION = 'argocd.argoproj.io/tracking-id';

/** Well-known label and annotation keys. */
export const LABELS = {
  /** Set by GPU Feature Discovery on every GPU node (`<product>-MIG-<profile>` under MIG strategy single with MIG on). */
  gpuProduct: 'nvidia.com/gpu.product',
  /** Set to "true" by the GPU Operator on every node with an NVIDIA GPU; survives MIG. */
  gpuPresent: 'nvidia.com/gpu.present',
  hostname: 'kubernetes.io/hostname',
  /** Set by the API server on every namespace to its name. */
  namespaceName: 'kubernetes.io/metadata.name',
  queueName: 'kueue.x-k8s.io/queue-name',
  priorityClass: 'kueue.x-k8s.io/priority-class',
  managedBy: 'app.kubernetes.io/managed-by',
  partOf: 'app.kubernetes.io/part-of',
  component: 'app.kubernetes.io/component',
  name: 'app.kubernetes.io/name',
  /** The release of the application an object belongs to (Helm charts set it to the chart's appVersion). */
  version: 'app.kubernetes.io/version',
  /** Marks tenant namespaces (and names the tenant). */
  tenant: 'gpu-cluster.dev/tenant',
  defaultStorageClass: 'storageclass.kubernetes.io/is-default-class',
  syncWave: 'argocd.argoproj.io/sync-wave',
  syncOptions: 'argocd.argoproj.io/sync-options',
  compareOptions: 'argocd.argoproj.io/compare-options',
  /**
   * The field manager whose client-side applies (operation `Update`) Argo CD moves to its server-side `Apply` set before
   * it applies an object server-side (default `kubectl-client-side-apply`; argo-cd v3.5.1 controller/sync.go, gitops-engine
   * sync_context.go applyObject and performCSAUpgradeMigration, with client-go's csaupgrade).
   */
  clientSideApplyMigrationManager: 'argocd.argoproj.io/client-side-apply-migration-manager',
  /**
   * Confirms the deletions an Application waits for (Prune=confirm or Delete=confirm): a time in RFC 3339, no earlier
   * than the sync operation's start or the Application's deletion (argo-cd v3.5.1 pkg/apis/application/v1alpha1/types.go
   * IsDeletionConfirmed); `argocd app confirm-deletion` sets it to the client's time (cmd/argocd/commands/app.go:3276).
   */
  deletionApproved: 'argocd.argoproj.io/deletion-approved',
  /**
   * Marks a rendered object as a template a user fills in before `kubectl create` (e.g. a node name):
   * written to dist/, but left out of kustomization.yaml, so neither kustomize nor Argo CD applies it.
   */
  template: 'gpu-cluster.dev/template',
  /**
   * Marks an object applied by hand only: written to dist/, but left out of kustomization.yaml. The samples' Argo CD
   * Application (the root Application neither creates it nor counts its health), and the root Application itself,
   * which the bootstrap applies (an Application that syncs itself waits in its own sync for its own health).
   */
  byHand: 'gpu-cluster.dev/apply-by-hand',
  /**
   * The commit the root Application synced, stamped on every object of the gitops folder when Argo CD builds it (the
   * root's kustomize commonAnnotations, `${ARGOCD_APP_REVISION}`); the folder's kustomization copies it into the
   * targetRevision of every child Application that reads this repository (components/gitops/plan.ts revisionPins).
   */
  revision: 'gpu-cluster.dev/revision',
  /**
   * On the Applications the root syncs: how long, in seconds, the root's sync waves wait on it when it does not get
   * Healthy (gitops.waveWait), read by the Application health check (health/argoproj.io/Application/health.lua).
   */
  waveWait: 'gpu-cluster.dev/wave-wait-seconds',
  /**
   * On the ClusterPolicy of a cluster that needs no GPU node of its own (a MultiKueue manager): why. Read by the
   * ClusterPolicy health check, which then takes "ready" without GPU nodes (NoGPUNodes) as Healthy.
   */
  gpuNodesOptional: 'gpu-cluster.dev/gpu-nodes-optional',
  /** On Argo CD Applications that install an add-on: the API kinds it brings (`group/Kind` or `group/*`, comma-separated). */
  provides: 'gpu-cluster.dev/provides',
  /**
   * Annotation ("true") on an object the Instant Cluster already runs and this toolkit takes over
   * (adopts): Argo CD must never delete it (see ADOPTED_SYNC_OPTIONS).
   */
  adopted: 'gpu-cluster.dev/adopted',
} as const;

/**
 * What Helm writes on the objects of a release, and the annotation it honours: an object whose live copy says
 * `helm.sh/resource-policy: keep` is left in place when an upgrade or uninstall of its release would delete it.
 */
export const HELM = {
  resourcePolicy: 'helm.sh/resource-policy',
  keep: 'keep',
  releaseName: 'meta.helm.sh/release-name',
  releaseNamespace: 'meta.helm.sh/release-namespace',
  /** `<chart>-<version>` on the objects of most charts' templates. */
  chart: 'helm.sh/chart',
} as const;

/**
 * Kueue's names on plain pods (v0.19 pod integration): the gates its webhook puts on every queued
 * pod and lifts on admission, and the labels of a pod group (gang).
 */
export const KUEUE_POD = {
  admissionGate: 'kueue.x-k8s.io/admission',
  topologyGate: 'kueue.x-k8s.io/topology',
  groupNameLabel: 'kueue.x-k8s.io/pod-group-name',
  groupTotalCountAnnotation: 'kueue.x-k8s.io/pod-group-total-count',
} as const;

/**
 * What keeps tenants in their lane outside Kueue (the tenants component renders it, the guardrails enforce it).
 * A pod in a tenant namespace that Kueue does not admit (no queue label, or not gated by Kueue) must name the
 * PriorityClass `unqueuedPriorityClass`: the lowest priority, which never preempts, and the scope of the namespace's
 * ResourceQuota `unqueuedQuota` (ResourceQuota scopes cannot select "not queued" otherwise: Kubernetes matches a
 * quota's scope on a pod's priority class, activeDeadlineSeconds, QoS or cross-namespace affinity only). The priorities
 * a tenant may use are namespace labels `<priorityLabelPrefix><name>: allowed`, which one policy reads for every
 * tenant through `namespaceObject` (tenants cannot write Namespaces).
 */
export const TENANCY = {
  unqueuedPriorityClass: 'unqueued',
  unqueuedQuota: 'unqueued',
  limitRange: 'container-defaults',
  priorityLabelPrefix: 'priority.gpu-cluster.dev/',
  priorityAllowed: 'allowed',
} as const;

/**
 * RuntimeClasses the GPU Operator creates (v26.7.0, assets/pre-requisites): `operator.runtimeClass` (CRD and chart
 * default "nvidia") and, with CDI on, "nvidia-cdi" and "nvidia-legacy". A pod using one runs under the NVIDIA
 * container runtime, which gives a container the GPUs its NVIDIA_VISIBLE_DEVICES names.
 */
export const NVIDIA_RUNTIME_CLASSES = { operator: 'nvidia', cdi: 'nvidia-cdi', legacy: 'nvidia-legacy' } as const;

/**
 * Kueue's LocalQueue defaulting (GA since v0.17, cannot be switched off): its webhooks label every pod and job
 * created without a queue label `kueue.x-k8s.io/queue-name: default` when the namespace has a LocalQueue of this
 * name (and is one Kueue manages), so the pod is gated, charged to that queue's ClusterQueue and placed by its
 * flavor. pkg/controller/jobs/pod/pod_webhook.go and jobframework/defaults.go (v0.19.2).
 */
export const KUEUE_DEFAULT_LOCAL_QUEUE = 'default';

/**
 * Resource-level Argo CD sync options of every adopted object: no prune when it leaves dist/ (a rename),
 * no delete when its Application is deleted in cascade. A resource's own option overrides the Application's.
 */
export const ADOPTED_SYNC_OPTIONS: readonly string[] = ['Prune=false', 'Delete=false'];

/** Folder of the Argo CD objects of a cluster (dist/<cluster>/gitops/), synced by the cluster's root Application. */
export const GITOPS_FOLDER = 'gitops';

/** Output folder of the fleet objects: dist/fleet/ (so no cluster may be named "fleet"). */
export const FLEET_FOLDER = 'fleet';

/** The Application that syncs a folder of a cluster: `<cluster>-<folder>`; the root, named as the cluster, for the gitops folder. */
export const folderApplicationName = (cluster: string, folder: string): string => (folder === GITOPS_FOLDER ? cluster : `${cluster}-${folder}`);

/**
 * Argo CD's cascading delete: an Application that carries this finalizer deletes the resources it applied when it is
 * deleted (argo-cd v3.5.1 controller/appcontroller.go finalizeApplicationDeletion, `app.CascadedDeletion()`); one
 * without it is removed at once and leaves them in the cluster.
 */
export const RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';

/**
 * Whether a finalizer is Argo CD's cascading delete: RESOURCES_FINALIZER or its `/foreground` and `/background` forms
 * (v3.5.1 pkg/apis/application/v1alpha1/types.go isPropagationPolicyFinalizer).
 */
export const isResourcesFinalizer = (f: unknown): boolean => typeof f === 'string' && (f === RESOURCES_FINALIZER || f.startsWith(`${RESOURCES_FINALIZER}/`));

/** Whether an Application carries Argo CD's resources finalizer: deleting it deletes what it applied. */
export const hasResourcesFinalizer = (app: { readonly metadata: object }): boolean => {
  const finalizers = (app.metadata as { finalizers?: unknown }).finalizers;
  return Array.isArray(finalizers) && finalizers.some(isResourcesFinalizer);
};

/**
 * MultiKueue's names (kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/multikueue_types.go), and the label this toolkit
 * puts on the identity a manager uses on each of its workers.
 */
export const MULTIKUEUE = {
  /** controllerName of MultiKueue's AdmissionChecks (MultiKueueControllerName). */
  controllerName: 'kueue.x-k8s.io/multikueue',
  /** The key of a kubeconfig Secret (MultiKueueConfigSecretKey). */
  kubeconfigKey: 'kubeconfig',
  /** On a worker's ServiceAccount, ClusterRole and ClusterRoleBinding for the manager: the manager's cluster name. */
  managerLabel: 'gpu-cluster.dev/multikueue-manager',
  /** On the manager's kubeconfig reader Role: the worker kubeconfig Secrets it may read, comma-separated. */
  kubeconfigSecretsAnnotation: 'gpu-cluster.dev/kubeconfig-secrets',
  /** On a MultiKueueCluster reached through a kubeconfig Secret: the worker API server's address as the manager reaches it (fleet.yaml). */
  serverAnnotation: 'gpu-cluster.dev/worker-server',
  /** The kind a cluster inventory keeps per worker, which the manager reaches ClusterProfile workers through. */
  clusterProfile: { group: 'multicluster.x-k8s.io', kind: 'ClusterProfile', crd: 'clusterprofiles.multicluster.x-k8s.io' },
} as const;

/** The job kinds (kubeflow.org) the Training Operator runs, each enabled as a scheme; MPIJob is left to the MPI Operator (v2beta1). */
export const TRAINING_OPERATOR_KINDS: readonly string[] = ['PyTorchJob', 'TFJob', 'XGBoostJob', 'PaddleJob', 'JAXJob'];

/**
 * The kubeflow.org job kinds Kueue admits as a whole, as their typed imports declare them (`MpiJob.GVK`,
 * `PyTorchJob.GVK`; test/tenants/lane.test.ts proves they agree): every cluster's tenant guardrails need these strings,
 * and reading them from the imports would load two generated modules of some 350 KB each for every render, only the
 * samples need the classes.
 */
export const KUBEFLOW_JOB_GVK = {
  mpiJob: { apiVersion: 'kubeflow.org/v2beta1', kind: 'MPIJob' },
  pyTorchJob: { apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob' },
} as const;

/** The value of app.kubernetes.io/managed-by on everything this toolkit renders. */
export const MANAGED_BY = 'gpu-cluster-manifests';

/**
 * The prometheus-operator ServiceMonitor API (monitoring.serviceMonitorCrd): where the cluster serves it, GPU Operator
 * v26.7.0 creates ServiceMonitors, and charts render theirs (Argo CD passes the API to helm).
 */
export const SERVICE_MONITOR_API = { group: 'monitoring.coreos.com', version: 'v1', kind: 'ServiceMonitor', crd: 'servicemonitors.monitoring.coreos.com' } as const;

/** Namespaces of the add-ons (where their operators and agents run). */
export const NAMESPACES = {
  gpuOperator: 'gpu-operator',
  networkOperator: 'nvidia-network-operator',
  kueue: 'kueue-system',
  mpiOperator: 'mpi-operator',
  trainingOperator: 'kubeflow',
  localPathStorage: 'local-path-storage',
  /** The Dynamo platform (operator) of installs.dynamo: managed, as Dynamo's installation guide names it. */
  dynamo: 'dynamo-system',
  default: 'default',
  /** Argo CD of the fleet hub (the ApplicationSet and its AppProject live there). */
  argocd: 'argocd',
} as const;

/**
 * Helm release names of the add-ons installed from a chart. They name what the chart creates (e.g.
 * Kueue's `<release>-controller-manager` ServiceAccount, whose requests the tenant guardrails trust).
 */
export const RELEASES = {
  kueue: 'kueue',
  /** victoria-metrics-k8s-stack: the VMAgent is `vm-victoria-metrics-k8s-stack`. */
  monitoring: 'vm',
} as const;

/** Names of the two operator singletons. */
export const SINGLETONS = {
  clusterPolicy: 'cluster-policy',
  nicClusterPolicy: 'nic-cluster-policy',
  /** local-path-provisioner's configuration (ConfigMap in NAMESPACES.localPathStorage). */
  localPathConfig: 'local-path-config',
} as const;

/** StorageClass names (fixed by the Instant Cluster product). */
export const STORAGE_CLASSES = {
  localPath: 'local-path',
  sharedPath: 'shared-path',
  localDisk: 'local-disk',
} as const;

/** Provisioner name of rancher/local-path-provisioner. */
export const LOCAL_PATH_PROVISIONER = 'rancher.io/local-path';

/**
 * The DCGM exporter's metrics list: the gpu-operator component renders this ConfigMap (namespace
 * gpu-operator, from the monitoring metric catalogue) beside the ClusterPolicy, which points the exporter at it with
 * `dcgmExporter.config.name` and `DCGM_EXPORTER_COLLECTORS=<path>` (the operator mounts the
 * ConfigMap at /etc/dcgm-exporter/).
 */
export const DCGM_EXPORTER_METRICS = {
  configMap: 'dcgm-exporter-metrics',
  file: 'dcgm-metrics.csv',
  path: '/etc/dcgm-exporter/dcgm-metrics.csv',
} as const;

/**
 * Node labels other components set and the placement simulation (src/check/placement) gives the
 * simulated nodes. Selectors that must survive MIG use these, never `nvidia.com/gpu.product`, which
 * GPU Feature Discovery rewrites to `<product>-MIG-<profile>` under the MIG strategy `single`.
 */
export const NODE_LABELS = {
  os: 'kubernetes.io/os',
  /** Set by GPU Feature Discovery when the MIG strategy is not `none`. */
  migStrategy: 'nvidia.com/mig.strategy',
  /** Set by GPU Feature Discovery: the node's GPUs support MIG. */
  migCapable: 'nvidia.com/mig.capable',
  /** Node Feature Discovery (with the GPU Operator's `deviceLabelFields: [vendor]`): a PCI device of NVIDIA. */
  nvidiaPci: 'feature.node.kubernetes.io/pci-10de.present',
  /** Node Feature Discovery (GPU Operator config, or the Network Operator's NodeFeatureRule): a Mellanox/NVIDIA NIC. */
  mellanoxPci: 'feature.node.kubernetes.io/pci-15b3.present',
  /** Set by the Network Operator on NIC nodes: "false" once the NIC driver is ready (or not managed). */
  mofedWait: 'network.nvidia.com/operator.mofed.wait',
  /** Prefix of the GPU Operator's per-operand labels on GPU nodes (`nvidia.com/gpu.deploy.<operand>=true`). */
  gpuDeployPrefix: 'nvidia.com/gpu.deploy.',
} as const;

/**
 * Node name in per-node sample templates, replaced at launch (`sed s/replace-with-node-name/$NODE/`);
 * the placement simulation gives it to the GPU workers the description does not name.
 */
export const NODE_NAME_PLACEHOLDER = 'replace-with-node-name';

/**
 * The Instant Cluster's pre-installed Kubernetes Dashboard (Helm chart kubernetes-dashboard 7.x, whose Kong
 * 2.x subchart serves the UI). Kong names its proxy Service `<kong.fullname>-proxy`, and kong.fullname is
 * `<release>-kong` (kong-2.46.0 templates/_helpers.tpl); the image exposes it on NodePort 32443.
 */
export const DASHBOARD = {
  /** Node port the pre-installed Dashboard's Kong proxy Service already holds. */
  preinstalledNodePort: 32443,
  /** Name of the Kong proxy Service of a Dashboard Helm release. */
  kongProxyService: (release: string) => `${release}-kong-proxy`,
} as const;

/** What the readers of Argo CD's annotations below need of an object or an Application. */
type Annotated = { readonly metadata: { readonly annotations?: Readonly<Record<string, string>> } };

/**
 * An object's own sync options as gitops-engine reads its annotation: comma-separated, each trimmed, empty ones and
 * repeats dropped, in order (argo-cd v3.5.1 gitops-engine/pkg/sync/resource/annotations.go:16-32 GetAnnotationCSVs).
 */
export function ownSyncOptions(m: Annotated): string[] {
  return [...new Set(parseSyncOptions(m.metadata.annotations?.[LABELS.syncOptions]))];
}

/** Parses an `argocd.argoproj.io/sync-options` value into trimmed entries, in order (repeats kept: ownSyncOptions drops them). */
export function parseSyncOptions(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** An Application's sync options (spec.syncPolicy.syncOptions). */
export function syncOptionsOf(app: object): string[] {
  return ((app as { spec?: { syncPolicy?: { syncOptions?: string[] } } }).spec?.syncPolicy?.syncOptions) ?? [];
}

/**
 * The value of a `KEY=value` sync option in a list of options: the FIRST `KEY=` entry, as Argo CD reads both lists
 * (a resource's annotation: gitops-engine pkg/sync/resource/annotations.go:48-56 GetAnnotationOptionValue; an
 * Application's spec.syncPolicy.syncOptions: pkg/apis/application/v1alpha1/types.go:1502-1510 SyncOptions.GetOptionValue).
 */
export function syncOptionValue(options: readonly string[], key: string): string | undefined {
  const prefix = `${key}=`;
  return options.find((o) => o.startsWith(prefix))?.slice(prefix.length);
}

/**
 * The `Prune=` or `Delete=` value that decides for an object: its own annotation's, else its Application's
 * (`app`, when known). Prune: gitops-engine sync_context.go:322-343 (objRequiresPruneConfirmation, isPruningDisabled)
 * falls back on the sync operation's option (controller/sync.go:333 WithDefaultPruneOption), which an automated sync
 * copies from spec.syncPolicy.syncOptions (controller/appcontroller.go:2378). Delete: controller/appcontroller.go:1252-1261
 * shouldBeDeleted reads the Application's spec.syncPolicy.syncOptions the same way.
 */
export function decidingSyncOption(m: Annotated, key: 'Prune' | 'Delete', app?: object): string | undefined {
  return syncOptionValue(ownSyncOptions(m), key) ?? (app ? syncOptionValue(syncOptionsOf(app), key) : undefined);
}

/** Whether an object's sync skips the dry run of a kind the server does not serve yet: its own option, or its Application's. */
export function skipsDryRunOnMissing(m: Annotated, app?: object): boolean {
  return [...ownSyncOptions(m), ...(app ? syncOptionsOf(app) : [])].includes('SkipDryRunOnMissingResource=true');
}

/** The sync wave of an object or an Application (its annotation; 0 when absent or not a number). */
export function syncWave(m: Annotated): number {
  const v = Number(m.metadata.annotations?.[LABELS.syncWave] ?? 0);
  return Number.isFinite(v) ? v : 0;
}

/** The `kubectl annotate` argument that confirms now, as `argocd app confirm-deletion` does (LABELS.deletionApproved), for a shell line. */
export const DELETION_APPROVED_NOW = `${LABELS.deletionApproved}=$(date -u +%Y-%m-%dT%H:%M:%SZ)`;
