/** GPU Operator release; the published chart's appVersion is the same tag (../shared/upstream-installs/SOURCES.md). */
const GPU_OPERATOR_RELEASE = 'v26.7.0';

/**
 * NVIDIA Dynamo release, the newest (v1.4.0, GA 2026-08-14): its platform chart's version, and the tag of its
 * container images (../shared/upstream-installs/SOURCES.md, dynamo-platform-1.4.0-branchpoint).
 */
const DYNAMO_RELEASE = '1.4.0';

/** Registry path of NVIDIA Dynamo's container images. */
const DYNAMO_REGISTRY = 'nvcr.io/nvidia/ai-dynamo';

/**
 * Every upstream release this toolkit renders for, in one place. Chart versions, CRD versions
 * (../shared/crds/SOURCES.md) and image tags move in lockstep: bump them together.
 */
export const VERSIONS = {
  /** NVIDIA GPU Operator: chart, CRD and ClusterPolicy component images. */
  gpuOperator: {
    chart: 'gpu-operator',
    repoURL: 'https://helm.ngc.nvidia.com/nvidia',
    version: GPU_OPERATOR_RELEASE,
    /**
     * ClusterPolicy operand images: the defaults of the chart's values.yaml at the tag (the rule
     * image-matches-upstream and test/upstream compare every entry with it). The validator and the
     * node status exporter live in the operator image itself since v25.10, tagged with the chart's appVersion.
     */
    images: {
      validator: { repository: 'nvcr.io/nvidia', image: 'gpu-operator', version: GPU_OPERATOR_RELEASE },
      driver: { repository: 'nvcr.io/nvidia', image: 'driver', version: '595.91.07' },
      driverManager: { repository: 'nvcr.io/nvidia/cloud-native', image: 'k8s-driver-manager', version: 'v0.12.0' },
      toolkit: { repository: 'nvcr.io/nvidia/k8s', image: 'container-toolkit', version: 'v1.20.0' },
      devicePlugin: { repository: 'nvcr.io/nvidia', image: 'k8s-device-plugin', version: 'v0.20.0' },
      gfd: { repository: 'nvcr.io/nvidia', image: 'k8s-device-plugin', version: 'v0.20.0' },
      dcgm: { repository: 'nvcr.io/nvidia/cloud-native', image: 'dcgm', version: '4.6.0-1-ubuntu24.04' },
      dcgmExporter: { repository: 'nvcr.io/nvidia/k8s', image: 'dcgm-exporter', version: '4.6.0-4.8.3-distroless' },
      migManager: { repository: 'nvcr.io/nvidia/cloud-native', image: 'k8s-mig-manager', version: 'v0.15.0' },
      nodeStatusExporter: { repository: 'nvcr.io/nvidia', image: 'gpu-operator', version: GPU_OPERATOR_RELEASE },
    },
    /**
     * The release before the pinned one (../shared/upstream-installs/gpu-operator-v26.3.3, SOURCES.md): upgrade-plan
     * renders it with helm and compares it with the pinned release. `reads`: the paths of its folder upgrade-plan
     * reads, all the package needs to carry of it (the chart with its crds/).
     */
    previous: [{
      version: 'v26.3.3',
      folder: 'gpu-operator-v26.3.3',
      reads: ['deployments/gpu-operator'],
      /**
       * The ClusterPolicy operand images of that release (its chart's values.yaml; the validator and the node status
       * exporter are the operator image, tagged with the release): what an adopted ClusterPolicy names on a cluster that
       * runs it (releases.gpuOperator). test/upstream compares every entry with the chart's own render.
       */
      images: {
        validator: { repository: 'nvcr.io/nvidia', image: 'gpu-operator', version: 'v26.3.3' },
        driver: { repository: 'nvcr.io/nvidia', image: 'driver', version: '580.126.20' },
        driverManager: { repository: 'nvcr.io/nvidia/cloud-native', image: 'k8s-driver-manager', version: 'v0.11.0' },
        toolkit: { repository: 'nvcr.io/nvidia/k8s', image: 'container-toolkit', version: 'v1.19.1' },
        devicePlugin: { repository: 'nvcr.io/nvidia', image: 'k8s-device-plugin', version: 'v0.19.3' },
        gfd: { repository: 'nvcr.io/nvidia', image: 'k8s-device-plugin', version: 'v0.19.3' },
        dcgm: { repository: 'nvcr.io/nvidia/cloud-native', image: 'dcgm', version: '4.5.2-1-ubuntu22.04' },
        dcgmExporter: { repository: 'nvcr.io/nvidia/k8s', image: 'dcgm-exporter', version: '4.5.3-4.8.2-distroless' },
        migManager: { repository: 'nvcr.io/nvidia/cloud-native', image: 'k8s-mig-manager', version: 'v0.14.2' },
        nodeStatusExporter: { repository: 'nvcr.io/nvidia', image: 'gpu-operator', version: 'v26.3.3' },
      },
    }],
  },
  /** NVIDIA Network Operator: chart, CRD and NicClusterPolicy component images. */
  networkOperator: {
    chart: 'network-operator',
    repoURL: 'https://helm.ngc.nvidia.com/nvidia',
    version: '26.4.1',
    /** NicClusterPolicy spec.global: default repository and tag of every component (example/crs at v26.4.1). */
    global: { repository: 'nvcr.io/nvidia/mellanox', version: 'network-operator-v26.4.1' },
    /** Component image names under spec.global. */
    images: {
      rdmaSharedDevicePlugin: 'k8s-rdma-shared-dev-plugin',
      multus: 'multus-cni',
      cniPlugins: 'plugins',
      ipoib: 'ipoib-cni',
      nvIpam: 'nvidia-k8s-ipam',
    },
    /** DOCA driver container: its own tag (DOCA release), repository from spec.global. */
    docaDriver: { image: 'doca-driver', version: 'doca3.4.1-26.04-1.1.0.0-1' },
    /** The release before the pinned one, for upgrade-plan (as gpuOperator.previous; the chart with its crds/). */
    previous: [{
      version: '26.1.2',
      folder: 'network-operator-v26.1.2',
      reads: ['deployment/network-operator'],
      /** Registry and tag of that release's component images (its chart's values.yaml tags them alike). */
      global: { repository: 'nvcr.io/nvidia/mellanox', version: 'network-operator-v26.1.2' },
      /**
       * Its NicClusterPolicy CRD has no spec.global and requires repository and version on every component
       * (deployment/network-operator/crds/ at the tag): an adopted NicClusterPolicy names them on each.
       */
      specGlobal: false,
    }],
  },
  /** Kueue (CRDs v1beta2). */
  kueue: {
    chart: 'kueue',
    /** OCI chart repository (Argo CD reads `oci://` sources natively since v3.1). */
    repoURL: 'oci://registry.k8s.io/kueue/charts',
    version: '0.19.2',
    /**
     * The release before the pinned one, for upgrade-plan (as gpuOperator.previous): the chart only, whose templates
     * hold the CRDs helm renders (the folder's config/components/crd/bases/ copies of them are not read).
     */
    previous: [{ version: '0.18.6', folder: 'kueue-v0.18.6', reads: ['charts/kueue'] }],
  },
  /**
   * Argo CD, for a cluster that is its own Argo CD (gitops.argocd: managed): the `cluster-install` kustomize base of
   * the release tag, the tree behind its install.yaml (../shared/upstream-installs/argo-cd-v3.5.1/, SOURCES.md), as a
   * remote base of the argocd folder's kustomization (upstream's documented kustomize install).
   */
  argocd: {
    repoURL: 'https://github.com/argoproj/argo-cd.git',
    path: 'manifests/cluster-install',
    version: 'v3.5.1',
  },
  /** MPI Operator (MPIJob v2beta1). No Helm chart: the release's kustomize overlay, read from git at the tag. */
  mpiOperator: {
    repoURL: 'https://github.com/kubeflow/mpi-operator.git',
    path: 'manifests/overlays/standalone',
    version: 'v0.8.2',
  },
  /** Kubeflow Training Operator (PyTorchJob v1). No Helm chart: the v1 standalone overlay at the tag. */
  trainingOperator: {
    repoURL: 'https://github.com/kubeflow/trainer.git',
    path: 'manifests/overlays/standalone',
    version: 'v1.9.4',
  },
  /** rancher/local-path-provisioner. */
  localPathProvisioner: {
    image: 'rancher/local-path-provisioner:v0.0.37',
    helperImage: 'busybox:1.37.0',
    version: 'v0.0.37',
  },
  /** Argo CD (Application, AppProject, ApplicationSet v1alpha1). */
  argoCd: {
    version: 'v3.5.1',
  },
  /**
   * NVIDIA Dynamo release the DynamoGraphDeployment samples are written for; the platform chart
   * (dynamoPlatform) is the same release.
   */
  dynamo: {
    release: DYNAMO_RELEASE,
    registry: DYNAMO_REGISTRY,
    /**
     * The container images published with the release, by repository: their tags. The release's artifact
     * inventory as ../shared/upstream-installs/SOURCES.md (dynamo-platform-1.4.0-branchpoint) quotes it (a test
     * reads it there); the evidence of released-versions and dynamo-image-release for images no chart renders.
     * `-efa`: the experimental AWS EFA variants.
     */
    publishedImages: {
      [`${DYNAMO_REGISTRY}/vllm-runtime`]: [DYNAMO_RELEASE, `${DYNAMO_RELEASE}-efa`],
      [`${DYNAMO_REGISTRY}/sglang-runtime`]: [DYNAMO_RELEASE, `${DYNAMO_RELEASE}-efa`],
      [`${DYNAMO_REGISTRY}/tensorrtllm-runtime`]: [DYNAMO_RELEASE, `${DYNAMO_RELEASE}-efa`],
      [`${DYNAMO_REGISTRY}/dynamo-frontend`]: [DYNAMO_RELEASE],
      [`${DYNAMO_REGISTRY}/dynamo-planner`]: [DYNAMO_RELEASE],
      [`${DYNAMO_REGISTRY}/kubernetes-operator`]: [DYNAMO_RELEASE],
      [`${DYNAMO_REGISTRY}/snapshot-agent`]: [DYNAMO_RELEASE],
    } as Readonly<Record<string, readonly string[]>>,
    vllmRuntimeImage: `${DYNAMO_REGISTRY}/vllm-runtime:${DYNAMO_RELEASE}`,
    /**
     * The release's DynamoGraphDeployment CRD, relative to the schema folder (../shared/crds,
     * SOURCES.md there): the file at the inferred v1.4.0 branch point, the tag itself being unreadable.
     * The typed import (imports/dynamo-nvidia.com.ts), strict validation and the CEL tests use it.
     */
    graphDeploymentCrd: 'dynamo/nvidia.com_dynamographdeployments.1.4.0-branchpoint.yaml',
  },
  /** VictoriaMetrics operator (VMServiceScrape, VMPodScrape, VMNodeScrape, VMRule). */
  victoriaMetricsOperator: {
    version: 'v0.74.1',
  },
  /**
   * victoria-metrics-k8s-stack chart (operator, VMSingle, vmagent, Grafana) for installs.monitoring: managed.
   * 0.54.0 is the newest release whose Chart.yaml could be checked here; bump it with victoriaMetricsOperator.
   */
  victoriaMetricsK8sStack: {
    chart: 'victoria-metrics-k8s-stack',
    repoURL: 'https://victoriametrics.github.io/helm-charts/',
    version: '0.54.0',
  },
  /** Grafana dashboard JSON model (schemaVersion 39: Grafana 10.4 and later read it without migration). */
  grafana: {
    dashboardSchemaVersion: 39,
  },
  /**
   * NVIDIA Dynamo platform chart of the Dynamo release (operator `nvcr.io/nvidia/ai-dynamo/kubernetes-operator`,
   * tagged with the operator chart's appVersion, the release; its crd-apply init container applies the CRDs the
   * operator image ships). 1.4.0 is the newest release (GA 2026-08-14), vendored in
   * ../shared/upstream-installs/dynamo-platform-1.4.0-branchpoint; 1.5.0 is unreleased.
   */
  dynamoPlatform: {
    chart: 'dynamo-platform',
    repoURL: 'https://helm.ngc.nvidia.com/nvidia/ai-dynamo',
    version: DYNAMO_RELEASE,
  },
  /** Kubernetes Dashboard Helm chart (v7: the UI is served through its Kong proxy). */
  kubernetesDashboard: {
    chart: 'kubernetes-dashboard',
    repoURL: 'https://kubernetes.github.io/dashboard/',
    majorVersion: 7,
  },
} as const;
