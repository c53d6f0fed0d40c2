import { ComponentName } from './types';
import { PREVIOUS_RELEASES, PreviousRelease, pinnedChart, UpgradableKey } from '../upstream/previous-releases';
import { VendoredChart } from '../upstream/releases';

/** How an operand's image change reaches a GPU node. */
export type NodeImpact = 'kernel-module-reload' | 'daemonset-roll' | 'device-plugin-restart';

/** The operator CR whose operands run on the GPU nodes, and what a new image of each does there. */
export interface OperandTable {
  readonly group: string;
  readonly kind: string;
  /** Operand (the image object's path under spec: `driver`, `driver.manager`, `secondaryNetwork.multus`) -> impact. */
  readonly impacts: Readonly<Record<string, NodeImpact>>;
  /** Why each impact happens, for the message. */
  readonly why: Readonly<Record<NodeImpact, string>>;
  /** Whether an operand is switched on by `enabled` (ClusterPolicy) or by its presence (NicClusterPolicy). */
  readonly enabledBy: 'enabled-field' | 'presence';
  /** `spec.global` gives repository and version to the operands that leave them out (NicClusterPolicy). */
  readonly globalImage?: string;
  /** The operand whose upgrade policy governs its kernel module reloads: its path under spec. */
  readonly upgradePolicy?: { readonly operand: string; readonly path: string };
}

/** A component upgrade-plan plans, and where its facts are. */
export interface UpgradeComponent {
  readonly name: ComponentName;
  /** Its key in VERSIONS, in the description's `installs` and among the managed installs. */
  readonly key: UpgradableKey;
  /** The managed install's Application name suffix (`<cluster>-<installName>`). */
  readonly installName: string;
  /** Its folder of CRD files in the pinned schemas (../shared/crds/<folder>). */
  readonly schemaFolder: string;
  readonly operands?: OperandTable;
  /**
   * A value of the chart holding a whole configuration file as YAML (Kueue's manager configuration); the manager's
   * built-in defaults for it are src/upstream/facts/<release folder>/config-defaults.json.
   */
  readonly configFile?: { readonly value: string };
  /** The vendored Go file of the manager's feature gates (src/upstream/vendored/<release folder>/<featureGates>). */
  readonly featureGates?: string;
}

const KERNEL_MODULE = 'the new image restarts the pod that loads the kernel module: it is unloaded and loaded again, every GPU pod of the node must go first (drain)';

/**
 * GPU Operator operands (ClusterPolicy spec keys; upstream's controllers/object_controls.go and the
 * k8s-driver-manager): the driver containers and their driver manager (an init container of the driver pod) load
 * the kernel modules, as do the vGPU/VFIO managers, GDS (nvidia-fs) and GDRCopy (gdrdrv); the device plugins
 * re-register with the kubelet; the rest are DaemonSets whose pods roll.
 */
const CLUSTER_POLICY: OperandTable = {
  group: 'nvidia.com',
  kind: 'ClusterPolicy',
  impacts: {
    'driver': 'kernel-module-reload',
    'driver.manager': 'kernel-module-reload',
    'vgpuManager': 'kernel-module-reload',
    'vgpuManager.driverManager': 'kernel-module-reload',
    'vfioManager': 'kernel-module-reload',
    'vfioManager.driverManager': 'kernel-module-reload',
    'gds': 'kernel-module-reload',
    'gdrcopy': 'kernel-module-reload',
    'devicePlugin': 'device-plugin-restart',
    'sandboxDevicePlugin': 'device-plugin-restart',
    'kataSandboxDevicePlugin': 'device-plugin-restart',
  },
  why: {
    'kernel-module-reload': KERNEL_MODULE,
    'device-plugin-restart': 'its DaemonSet rolls and the plugin registers with the kubelet again: running pods keep their GPUs, new GPU pods wait until it is back',
    'daemonset-roll': 'its DaemonSet rolls on every GPU node (no kernel module involved)',
  },
  enabledBy: 'enabled-field',
  upgradePolicy: { operand: 'driver', path: 'driver.upgradePolicy' },
};

/**
 * Network Operator operands (NicClusterPolicy spec keys): the DOCA/OFED driver container reloads the mlx5 modules;
 * the RDMA and SR-IOV device plugins re-register; the rest roll.
 */
const NIC_CLUSTER_POLICY: OperandTable = {
  group: 'mellanox.com',
  kind: 'NicClusterPolicy',
  impacts: {
    ofedDriver: 'kernel-module-reload',
    rdmaSharedDevicePlugin: 'device-plugin-restart',
    sriovDevicePlugin: 'device-plugin-restart',
  },
  why: {
    'kernel-module-reload': 'the new driver container unloads and loads the mlx5 kernel modules: the node\'s RDMA and network devices go down, its pods must go first (drain)',
    'device-plugin-restart': 'its DaemonSet rolls and the plugin registers with the kubelet again: running pods keep their devices, new ones wait until it is back',
    'daemonset-roll': 'its DaemonSet rolls on every node it runs on (no kernel module involved)',
  },
  enabledBy: 'presence',
  globalImage: 'global',
  upgradePolicy: { operand: 'ofedDriver', path: 'ofedDriver.upgradePolicy' },
};

export const COMPONENTS: Readonly<Record<ComponentName, UpgradeComponent>> = {
  'gpu-operator': { name: 'gpu-operator', key: 'gpuOperator', installName: 'gpu-operator-install', schemaFolder: 'gpu-operator', operands: CLUSTER_POLICY },
  'network-operator': { name: 'network-operator', key: 'networkOperator', installName: 'network-operator-install', schemaFolder: 'network-operator', operands: NIC_CLUSTER_POLICY },
  'kueue': {
    name: 'kueue',
    key: 'kueue',
    installName: 'kueue-install',
    schemaFolder: 'kueue',
    configFile: { value: 'managerConfig.controllerManagerConfigYaml' },
    featureGates: 'pkg/features/kube_features.go',
  },
};

/** A version as given (`26.1.2`, `v26.1.2`) compared without its `v`. */
export const sameVersion = (a: string, b: string): boolean => a.replace(/^v/, '') === b.replace(/^v/, '');

/** The vendored previous releases of a component. */
export function previousReleases(c: UpgradeComponent): PreviousRelease[] {
  return PREVIOUS_RELEASES.filter((p) => p.key === c.key);
}

/** The chart of a release of a component this package carries (pinned or previous), by version; undefined: none. */
export function releaseChart(c: UpgradeComponent, version: string): VendoredChart | undefined {
  const pinned = pinnedChart(c.key);
  if (sameVersion(pinned.version, version)) return pinned;
  return previousReleases(c).find((p) => sameVersion(p.version, version))?.chart;
}

export { pinnedChart };
