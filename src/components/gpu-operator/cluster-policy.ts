import { Construct } from 'constructs';
import * as nvidia from '../../../imports/gpu-operator-nvidia.com';
import { TolerationSpec } from '../../model/model';
import { LABELS, NVIDIA_RUNTIME_CLASSES, SINGLETONS } from '../../model/names';
import { VERSIONS } from '../../versions';

/** Where one operand image comes from (ClusterPolicy `repository`, `image`, `version`). */
export interface OperandImage {
  readonly repository: string;
  readonly image: string;
  /** Tag, pinned (never `latest`). */
  readonly version: string;
}

/** The image of every operand the ClusterPolicy names, from one GPU Operator release. */
export interface ClusterPolicyImages {
  readonly validator: OperandImage;
  readonly driver: OperandImage;
  readonly driverManager: OperandImage;
  readonly toolkit: OperandImage;
  readonly devicePlugin: OperandImage;
  readonly gfd: OperandImage;
  readonly dcgm: OperandImage;
  readonly dcgmExporter: OperandImage;
  readonly migManager: OperandImage;
  readonly nodeStatusExporter: OperandImage;
}

export interface EnvVarSpec {
  readonly name: string;
  readonly value: string;
}

export type MigStrategy = 'none' | 'single' | 'mixed';

export interface ClusterPolicyProps {
  /**
   * Tolerations of every operand DaemonSet: the GPU workers' taints, and only those, so that the
   * operands never land on the tainted service node.
   */
  readonly tolerations: readonly TolerationSpec[];
  /**
   * `preinstalled`: the node image ships the driver, `driver.enabled: false`. `managed`: the operator
   * runs driver containers (with the driver manager and an explicit upgrade policy).
   * @default "preinstalled"
   */
  readonly driver?: 'preinstalled' | 'managed';
  /**
   * `preinstalled`: the node image ships the container toolkit, `toolkit.enabled: false`.
   * @default "preinstalled"
   */
  readonly toolkit?: 'preinstalled' | 'managed';
  /**
   * GPUDirect RDMA with a managed driver: the driver container loads nvidia-peermem. `hostMofed`: the
   * node image ships the NIC driver; `docaDriver`: the Network Operator's DOCA driver containers do.
   * Ignored with a preinstalled driver (the node image loads nvidia-peermem or not).
   * @default "off"
   */
  readonly gpuDirectRdma?: 'off' | 'hostMofed' | 'docaDriver';
  /**
   * Run the device plugin (advertises `nvidia.com/gpu`).
   * @default true
   */
  readonly devicePlugin?: boolean;
  /**
   * Run GPU Feature Discovery (the `nvidia.com/gpu.*` node labels).
   * @default true
   */
  readonly gfd?: boolean;
  /**
   * Run the DCGM exporter.
   * @default true
   */
  readonly dcgmExporter?: boolean;
  /**
   * Metrics list of the DCGM exporter: a ConfigMap (in the operator namespace) and the path of its
   * CSV inside the exporter. The upstream default list has no throttling or ECC counters.
   * @default the exporter's built-in list
   */
  readonly dcgmExporterMetrics?: { readonly configMap: string; readonly path: string };
  /**
   * Let the operator create a ServiceMonitor for the DCGM exporter (`dcgmExporter.serviceMonitor.enabled`,
   * true in the chart's values). Off: the monitoring component scrapes the exporter with a VMServiceScrape,
   * and the VictoriaMetrics operator converts ServiceMonitors into scrapes too, so both would collect every
   * series twice. Rendered explicitly: an adopted ClusterPolicy keeps a field the manifest leaves out.
   * @default false
   */
  readonly dcgmExporterServiceMonitor?: boolean;
  /**
   * Run the standalone DCGM host engine (the exporter embeds one otherwise).
   * @default false
   */
  readonly dcgm?: boolean;
  /**
   * Run the MIG manager.
   * @default true
   */
  readonly migManager?: boolean;
  /**
   * How MIG devices are advertised. `mixed` needs the MIG manager.
   * @default "single"
   */
  readonly migStrategy?: MigStrategy;
  /**
   * Run the node status exporter.
   * @default false
   */
  readonly nodeStatusExporter?: boolean;
  /**
   * Inject devices through CDI (`cdi.enabled`). `cdi.default` always stays false.
   * @default true
   */
  readonly cdi?: boolean;
  /**
   * The managed container toolkit's `accept-nvidia-visible-devices-envvar-when-unprivileged`. true (the toolkit's own
   * default) lets any unprivileged container get GPUs by naming them in NVIDIA_VISIBLE_DEVICES, or by an image that
   * sets `ENV NVIDIA_VISIBLE_DEVICES=all` (every CUDA base image), without a GPU request. false hands an unprivileged
   * container only the GPUs the device plugin allocated: through CDI with `cdi: true`; as volume mounts with
   * `cdi: false` (the device plugin's DEVICE_LIST_STRATEGY becomes volume-mounts and the toolkit accepts them). The
   * operator's own operands are privileged and keep their access. Only for `toolkit: "managed"`: a node image's
   * toolkit is set in its /etc/nvidia-container-runtime/config.toml.
   * @default false with a managed toolkit
   */
  readonly acceptVisibleDevicesEnvvarWhenUnprivileged?: boolean;
  /**
   * Extra environment of the device plugin.
   * @default []
   */
  readonly devicePluginEnv?: readonly EnvVarSpec[];
  /**
   * Extra environment of the container toolkit.
   * @default []
   */
  readonly toolkitEnv?: readonly EnvVarSpec[];
  /**
   * Why the cluster needs no GPU node of its own (annotation LABELS.gpuNodesOptional): the ClusterPolicy health check
   * then takes the operator's "ready" without GPU nodes (Ready reason NoGPUNodes) as Healthy instead of waiting for them.
   * @default - GPU nodes are needed: without them the ClusterPolicy is Progressing
   */
  readonly gpuNodesOptional?: string;
  /**
   * PriorityClass of every operand DaemonSet.
   * @default "system-node-critical"
   */
  readonly priorityClassName?: string;
  /**
   * Operand images, all from one GPU Operator release.
   * @default VERSIONS.gpuOperator.images
   */
  readonly images?: ClusterPolicyImages;
}

/**
 * The toolkit and device plugin environment that gives an unprivileged container only the GPUs the device plugin
 * allocated (container toolkit v1.20 `nvidia-ctk-installer` flags; k8s-device-plugin DEVICE_LIST_STRATEGY). With CDI
 * the plugin already hands devices over as CDI names (the operator sets cdi-annotations,cdi-cri); without it, the
 * plugin must pass them as volume mounts, which the toolkit then has to accept.
 */
export function unprivilegedGpuAccessEnv(cdi: boolean): { readonly toolkit: EnvVarSpec[]; readonly devicePlugin: EnvVarSpec[] } {
  return {
    toolkit: [
      { name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED', value: 'false' },
      ...(cdi ? [] : [{ name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS', value: 'true' }]),
    ],
    devicePlugin: cdi ? [] : [{ name: 'DEVICE_LIST_STRATEGY', value: 'volume-mounts' }],
  };
}

/** Extra env from the props after the derived one; the props may not set a derived variable themselves. */
function withDerivedEnv(prop: string, given: readonly EnvVarSpec[], derived: readonly EnvVarSpec[]): EnvVarSpec[] {
  const clash = given.find((g) => derived.some((d) => d.name === g.name));
  if (clash) {
    throw new Error(`ClusterPolicy: ${prop} sets ${clash.name}, which acceptVisibleDevicesEnvvarWhenUnprivileged already sets; use that option instead`);
  }
  return [...derived, ...given];
}

/**
 * A field of the ClusterPolicy the description decides: its path in the object, the description field that sets it
 * and the value of that field that renders a given value there (undefined: none does). What preflight names when it
 * would change a ClusterPolicy it takes over: the field that keeps the cluster's value (test/gpu-operator renders each).
 */
export interface DescribedField {
  readonly path: string;
  readonly field: string;
  readonly keep: (value: unknown) => unknown;
}

const switchOf = (path: string, field: string): DescribedField => ({ path, field, keep: (v) => (typeof v === 'boolean' ? v : undefined) });
const installOf = (path: string, field: string): DescribedField => ({ path, field, keep: (v) => (v === true ? 'managed' : v === false ? 'preinstalled' : undefined) });

/** The ClusterPolicy's fields the description's gpuOperator section decides. */
export const CLUSTER_POLICY_FIELDS: readonly DescribedField[] = [
  installOf('spec.driver.enabled', 'gpuOperator.driver'),
  installOf('spec.toolkit.enabled', 'gpuOperator.toolkit'),
  switchOf('spec.devicePlugin.enabled', 'gpuOperator.devicePlugin'),
  switchOf('spec.gfd.enabled', 'gpuOperator.gfd'),
  switchOf('spec.dcgmExporter.enabled', 'gpuOperator.dcgmExporter'),
  switchOf('spec.dcgm.enabled', 'gpuOperator.dcgm'),
  switchOf('spec.migManager.enabled', 'gpuOperator.migManager'),
  switchOf('spec.nodeStatusExporter.enabled', 'gpuOperator.nodeStatusExporter'),
  switchOf('spec.cdi.enabled', 'gpuOperator.cdi'),
  { path: 'spec.mig.strategy', field: 'gpuOperator.migStrategy', keep: (v) => (typeof v === 'string' && ['none', 'single', 'mixed'].includes(v) ? v : undefined) },
];

/** Values the CRD fills in when they are missing; rendered explicitly so that Argo CD sees no drift. */
const CRD_DEFAULTS = {
  operatorRuntimeClass: NVIDIA_RUNTIME_CLASSES.operator,
  toolkitInstallDir: '/usr/local/nvidia',
  kernelModuleType: nvidia.ClusterPolicySpecDriverKernelModuleType.AUTO,
  updateStrategy: nvidia.ClusterPolicySpecDaemonsetsUpdateStrategy.ROLLING_UPDATE,
} as const;

const MIG_STRATEGIES: Record<MigStrategy, nvidia.ClusterPolicySpecMigStrategy> = {
  none: nvidia.ClusterPolicySpecMigStrategy.NONE,
  single: nvidia.ClusterPolicySpecMigStrategy.SINGLE,
  mixed: nvidia.ClusterPolicySpecMigStrategy.MIXED,
};

/**
 * The GPU Operator's ClusterPolicy `cluster-policy`: which operands run on the GPU workers and with
 * which pinned images. Every section the CRD requires is rendered, and so is every field the CRD
 * would default, so the object in the cluster equals the rendered one.
 */
export class ClusterPolicy extends Construct {
  readonly name: string = SINGLETONS.clusterPolicy;

  constructor(scope: Construct, id: string, props: ClusterPolicyProps) {
    super(scope, id);
    const driverManaged = (props.driver ?? 'preinstalled') === 'managed';
    const toolkitManaged = (props.toolkit ?? 'preinstalled') === 'managed';
    const gpuDirectRdma = props.gpuDirectRdma ?? 'off';
    const devicePlugin = props.devicePlugin ?? true;
    const gfd = props.gfd ?? true;
    const dcgmExporter = props.dcgmExporter ?? true;
    const dcgm = props.dcgm ?? false;
    const migManager = props.migManager ?? true;
    const migStrategy = props.migStrategy ?? 'single';
    const nodeStatusExporter = props.nodeStatusExporter ?? false;
    const cdi = props.cdi ?? true;
    if (!toolkitManaged && props.acceptVisibleDevicesEnvvarWhenUnprivileged !== undefined) {
      throw new Error('ClusterPolicy: acceptVisibleDevicesEnvvarWhenUnprivileged configures a managed toolkit only; a node image\'s toolkit reads '
        + 'accept-nvidia-visible-devices-envvar-when-unprivileged from /etc/nvidia-container-runtime/config.toml');
    }
    const hardening = toolkitManaged && !(props.acceptVisibleDevicesEnvvarWhenUnprivileged ?? false)
      ? unprivilegedGpuAccessEnv(props.cdi ?? true)
      : { toolkit: [], devicePlugin: [] };
    const devicePluginEnv = withDerivedEnv('devicePluginEnv', props.devicePluginEnv ?? [], hardening.devicePlugin);
    const toolkitEnv = withDerivedEnv('toolkitEnv', props.toolkitEnv ?? [], hardening.toolkit);
    const priorityClassName = props.priorityClassName ?? 'system-node-critical';
    const images = props.images ?? VERSIONS.gpuOperator.images;

    if (migStrategy === 'mixed' && !migManager) {
      throw new Error('ClusterPolicy: migStrategy "mixed" needs migManager: true (mixed MIG layouts are applied by the MIG manager)');
    }
    for (const [operand, image] of Object.entries(images)) {
      if (!image.version || image.version === 'latest') {
        throw new Error(`ClusterPolicy: images.${operand}.version must pin a release, got "${image.version}"`);
      }
    }
    const pinned = (image: OperandImage) => ({ repository: image.repository, image: image.image, version: image.version });
    const env = (vars: readonly EnvVarSpec[]) => (vars.length > 0 ? vars.map((v) => ({ name: v.name, value: v.value })) : undefined);

    const driver: nvidia.ClusterPolicySpecDriver = driverManaged
      ? {
        enabled: true,
        kernelModuleType: CRD_DEFAULTS.kernelModuleType,
        ...pinned(images.driver),
        manager: pinned(images.driverManager),
        rdma: gpuDirectRdma === 'off' ? undefined : { enabled: true, useHostMofed: gpuDirectRdma === 'hostMofed' },
        // The CRD's own defaults, spelled out (an upgradePolicy object the CRD completes would drift).
        upgradePolicy: {
          autoUpgrade: false,
          maxParallelUpgrades: 1,
          maxUnavailable: nvidia.ClusterPolicySpecDriverUpgradePolicyMaxUnavailable.fromString('25%'),
          drain: { enable: false, force: false, deleteEmptyDir: false, timeoutSeconds: 300 },
          podDeletion: { force: false, deleteEmptyDir: false, timeoutSeconds: 300 },
          waitForCompletion: { timeoutSeconds: 0 },
        },
      }
      : { enabled: false, kernelModuleType: CRD_DEFAULTS.kernelModuleType };

    new nvidia.ClusterPolicy(this, 'Resource', {
      metadata: { name: this.name, ...(props.gpuNodesOptional ? { annotations: { [LABELS.gpuNodesOptional]: props.gpuNodesOptional } } : {}) },
      spec: {
        operator: { runtimeClass: CRD_DEFAULTS.operatorRuntimeClass },
        daemonsets: {
          priorityClassName,
          tolerations: props.tolerations.map((t) => ({ ...t })),
          updateStrategy: CRD_DEFAULTS.updateStrategy,
        },
        cdi: { enabled: cdi, default: false, nriPluginEnabled: false },
        mig: { strategy: MIG_STRATEGIES[migStrategy] },
        driver,
        toolkit: {
          enabled: toolkitManaged,
          installDir: CRD_DEFAULTS.toolkitInstallDir,
          ...pinned(images.toolkit),
          env: env(toolkitEnv),
        },
        devicePlugin: { enabled: devicePlugin, ...pinned(images.devicePlugin), env: env(devicePluginEnv) },
        gfd: { enabled: gfd, ...pinned(images.gfd) },
        dcgm: { enabled: dcgm, ...pinned(images.dcgm) },
        dcgmExporter: {
          enabled: dcgmExporter,
          ...pinned(images.dcgmExporter),
          ...(props.dcgmExporterMetrics && {
            config: { name: props.dcgmExporterMetrics.configMap },
            env: [{ name: 'DCGM_EXPORTER_COLLECTORS', value: props.dcgmExporterMetrics.path }],
          }),
          serviceMonitor: { enabled: props.dcgmExporterServiceMonitor ?? false },
        },
        migManager: { enabled: migManager, ...pinned(images.migManager) },
        nodeStatusExporter: { enabled: nodeStatusExporter, ...pinned(images.nodeStatusExporter) },
        validator: pinned(images.validator),
      },
    });
  }
}
