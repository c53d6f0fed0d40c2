import { Construct } from 'constructs';
import { RdmaSharedDevice, rdmaSharedDevicePluginConfig } from './rdma-shared-device-config';
import * as mellanox from '../../../imports/network-operator-mellanox.com';
import { TolerationSpec } from '../../model/model';
import { SINGLETONS } from '../../model/names';
import { VERSIONS } from '../../versions';

/** Secondary network pieces of the Network Operator (all need Multus to attach to pods). */
export interface SecondaryNetworkOptions {
  /**
   * Multus CNI with the reference CNI plugins.
   * @default false
   */
  readonly multus?: boolean;
  /**
   * The IPoIB CNI (needs multus).
   * @default false
   */
  readonly ipoib?: boolean;
  /**
   * nv-ipam, the IP address manager of secondary networks.
   * @default false
   */
  readonly nvIpam?: boolean;
}

export interface NicClusterPolicyProps {
  /** The RDMA shared devices the device plugin advertises (the `config` JSON is built from them). */
  readonly rdmaSharedDevices: readonly RdmaSharedDevice[];
  /** Labels of the nodes the NIC DaemonSets run on (required node affinity: the GPU workers). */
  readonly nodeSelector: Readonly<Record<string, string>>;
  /** Tolerations of the NIC DaemonSets (the GPU workers' taints). */
  readonly tolerations: readonly TolerationSpec[];
  /**
   * Object name. The operator reconciles only `nic-cluster-policy`: any other name is an Error.
   * @default "nic-cluster-policy"
   */
  readonly name?: string;
  /**
   * Run DOCA/OFED driver containers (for node images without the driver).
   * @default false
   */
  readonly docaDriver?: boolean;
  /**
   * Secondary network pieces.
   * @default all off
   */
  readonly secondaryNetwork?: SecondaryNetworkOptions;
  /**
   * Default image repository and tag of every component (`spec.global`).
   * @default VERSIONS.networkOperator.global
   */
  readonly global?: { readonly repository: string; readonly version: string };
  /**
   * Whether the release's CRD has `spec.global` (Network Operator 26.4 and later). Without it, every component names
   * its repository and version itself (the CRD requires both).
   * @default true
   */
  readonly specGlobal?: boolean;
  /**
   * DOCA driver image name and tag (a DOCA release, not the operator's tag).
   * @default VERSIONS.networkOperator.docaDriver
   */
  readonly docaDriverImage?: { readonly image: string; readonly version: string };
}

/**
 * The Network Operator's NicClusterPolicy `nic-cluster-policy`: the RDMA shared device plugin on the
 * GPU workers, optionally DOCA driver containers and secondary networks. Image repository and tag
 * come from `spec.global`; every field the CRD would default is rendered.
 */
export class NicClusterPolicy extends Construct {
  readonly name: string;
  /** The rendered rdma-shared-dev-plugin configuration. */
  readonly rdmaConfig: string;

  constructor(scope: Construct, id: string, props: NicClusterPolicyProps) {
    super(scope, id);
    this.name = props.name ?? SINGLETONS.nicClusterPolicy;
    const docaDriver = props.docaDriver ?? false;
    const multus = props.secondaryNetwork?.multus ?? false;
    const ipoib = props.secondaryNetwork?.ipoib ?? false;
    const nvIpam = props.secondaryNetwork?.nvIpam ?? false;
    const global = props.global ?? VERSIONS.networkOperator.global;
    const doca = props.docaDriverImage ?? VERSIONS.networkOperator.docaDriver;
    const images = VERSIONS.networkOperator.images;

    if (this.name !== SINGLETONS.nicClusterPolicy) {
      throw new Error(`NicClusterPolicy: name must be "${SINGLETONS.nicClusterPolicy}" (the operator reconciles no other), got "${this.name}"`);
    }
    if (ipoib && !multus) throw new Error('NicClusterPolicy: secondaryNetwork.ipoib needs secondaryNetwork.multus (IPoIB networks attach through Multus)');
    if (Object.keys(props.nodeSelector).length === 0) throw new Error('NicClusterPolicy: nodeSelector must name the GPU workers\' labels');
    for (const v of [global.version, doca.version]) {
      if (!v || v === 'latest') throw new Error(`NicClusterPolicy: image versions must pin a release, got "${v}"`);
    }
    this.rdmaConfig = rdmaSharedDevicePluginConfig(props.rdmaSharedDevices);

    const nodeAffinity: mellanox.NicClusterPolicySpecNodeAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{
          matchExpressions: Object.entries(props.nodeSelector).sort(([a], [b]) => a.localeCompare(b))
            .map(([key, value]) => ({ key, operator: 'In', values: [value] })),
        }],
      },
    };
    const specGlobal = props.specGlobal ?? true;
    // `imagePullSecrets: []` is what the CRD defaults each component to; without spec.global each names its coordinates.
    const coordinates = specGlobal ? {} : { repository: global.repository, version: global.version };
    const component = (image: string) => ({ image, ...coordinates, imagePullSecrets: [] });

    new mellanox.NicClusterPolicy(this, 'Resource', {
      metadata: { name: this.name },
      spec: {
        global: specGlobal ? { repository: global.repository, version: global.version } : undefined,
        nodeAffinity,
        tolerations: props.tolerations.map((t) => ({ ...t })),
        rdmaSharedDevicePlugin: { ...component(images.rdmaSharedDevicePlugin), config: this.rdmaConfig },
        ofedDriver: docaDriver
          ? {
            ...component(doca.image),
            ...coordinates,
            version: doca.version,
            forcePrecompiled: false,
            terminationGracePeriodSeconds: 300,
            startupProbe: { initialDelaySeconds: 10, periodSeconds: 10 },
            livenessProbe: { initialDelaySeconds: 30, periodSeconds: 30 },
            readinessProbe: { initialDelaySeconds: 10, periodSeconds: 30 },
            upgradePolicy: {
              autoUpgrade: true,
              maxParallelUpgrades: 1,
              safeLoad: false,
              drain: { enable: true, force: true, deleteEmptyDir: true, timeoutSeconds: 300 },
              waitForCompletion: { timeoutSeconds: 0 },
            },
          }
          : undefined,
        secondaryNetwork: multus
          ? {
            multus: component(images.multus),
            cniPlugins: component(images.cniPlugins),
            ipoib: ipoib ? component(images.ipoib) : undefined,
          }
          : undefined,
        nvIpam: nvIpam ? { ...component(images.nvIpam), enableWebhook: false } : undefined,
      },
    });
  }
}
