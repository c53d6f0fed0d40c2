/**
 * The configuration of k8s-rdma-shared-dev-plugin (`rdmaSharedDevicePlugin.config` of the
 * NicClusterPolicy), as typed data. Field names are the plugin's JSON names (pkg/types UserConfig).
 */

/** Which HCAs a resource pool takes; selectors combine with AND, values within one selector with OR. */
export interface RdmaDeviceSelectors {
  /** PCI vendor ids, 4 lower-case hex digits (`15b3`). */
  readonly vendors?: readonly string[];
  /** PCI device ids. */
  readonly deviceIDs?: readonly string[];
  /** Kernel drivers (`mlx5_core`). */
  readonly drivers?: readonly string[];
  /** Network interface names. */
  readonly ifNames?: readonly string[];
  /** Link types (`infiniband`, `ether`). */
  readonly linkTypes?: readonly string[];
}

/** One resource the plugin advertises as `rdma/<resourceName>`. */
export interface RdmaSharedDevice {
  readonly resourceName: string;
  /** How many pods may share the selected HCAs of a node at a time. */
  readonly rdmaHcaMax: number;
  readonly selectors: RdmaDeviceSelectors;
}

const SELECTOR_KEYS = ['vendors', 'deviceIDs', 'drivers', 'ifNames', 'linkTypes'] as const;

/**
 * The plugin's config JSON for `devices`. Empty selectors are left out (the plugin treats a missing and
 * an empty list alike); a device that selects nothing, a bad name or a bad rdmaHcaMax is an Error.
 */
export function rdmaSharedDevicePluginConfig(devices: readonly RdmaSharedDevice[]): string {
  if (devices.length === 0) throw new Error('rdmaSharedDevicePluginConfig: at least one RDMA shared device is needed');
  const seen = new Set<string>();
  const configList = devices.map((device, i) => {
    // The plugin accepts [a-zA-Z0-9_]+ only.
    if (!/^[a-zA-Z0-9_]+$/.test(device.resourceName)) {
      throw new Error(`rdmaSharedDevicePluginConfig: devices[${i}].resourceName "${device.resourceName}" may hold only letters, digits and "_"`);
    }
    if (seen.has(device.resourceName)) throw new Error(`rdmaSharedDevicePluginConfig: devices[${i}].resourceName "${device.resourceName}" is used twice`);
    seen.add(device.resourceName);
    if (!Number.isInteger(device.rdmaHcaMax) || device.rdmaHcaMax < 1) {
      throw new Error(`rdmaSharedDevicePluginConfig: devices[${i}].rdmaHcaMax must be a positive integer, got ${device.rdmaHcaMax}`);
    }
    const selectors: Record<string, string[]> = {};
    for (const key of SELECTOR_KEYS) {
      const values = device.selectors[key] ?? [];
      if (values.length > 0) selectors[key] = [...values];
    }
    if (Object.keys(selectors).length === 0) {
      throw new Error(`rdmaSharedDevicePluginConfig: devices[${i}].selectors select no HCA (give vendors, deviceIDs, drivers, ifNames or linkTypes)`);
    }
    return { resourceName: device.resourceName, rdmaHcaMax: device.rdmaHcaMax, selectors };
  });
  return JSON.stringify({ configList }, undefined, 2);
}
