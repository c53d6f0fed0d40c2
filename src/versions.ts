/**
 * Every upstream release this toolkit renders for, in one place. Chart versions, CRD versions
 * (../shared/crds/SOURCES.md) and image tags move in lockstep: bump them together.
 */
export const VERSIONS = {
  /** NVIDIA GPU Operator: chart, CRD and ClusterPolicy component images. */
  gpuOperator: {
    chart: 'gpu-operator',
    repoURL: 'https://helm.ngc.nvidia.com/nvidia',
    version: 'v26.7.0',
  },
  /** NVIDIA Network Operator: chart, CRD and NicClusterPolicy component images. */
  networkOperator: {
    chart: 'network-operator',
    repoURL: 'https://helm.ngc.nvidia.com/nvidia',
    version: '26.4.1',
  },
  /** Kueue (CRDs v1beta2). */
  kueue: {
    chart: 'kueue',
    repoURL: 'registry.k8s.io/kueue/charts',
    version: '0.19.2',
  },
  /** MPI Operator (MPIJob v2beta1). */
  mpiOperator: {
    version: 'v0.8.2',
  },
  /** Kubeflow Training Operator (PyTorchJob v1). */
  trainingOperator: {
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
  /** VictoriaMetrics operator (VMServiceScrape, VMPodScrape, VMNodeScrape, VMRule). */
  victoriaMetricsOperator: {
    version: 'v0.74.1',
  },
} as const;
