import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { networkOperatorHelmValues } from '../../src/components/network-operator/helm-values';
import { NicClusterPolicy, NicClusterPolicyProps } from '../../src/components/network-operator/nic-cluster-policy';
import { rdmaSharedDevicePluginConfig } from '../../src/components/network-operator/rdma-shared-device-config';
import { VERSIONS } from '../../src/versions';
import { Edit, findObject, folderObjects, HAS_SCHEMAS, issuesOf, modelOf, renderOf, strictErrors } from '../helpers';

const FOLDER = 'network-operator';
const MY_FOLDERS = ['gpu-operator', 'network-operator'];

function nicClusterPolicyOf(edit?: Edit): any {
  return findObject(folderObjects(renderOf(edit), FOLDER), 'NicClusterPolicy', 'nic-cluster-policy');
}

function configOf(edit?: Edit): any {
  return JSON.parse(nicClusterPolicyOf(edit).spec.rdmaSharedDevicePlugin.config);
}

const BASE: NicClusterPolicyProps = {
  rdmaSharedDevices: [{ resourceName: 'rdma_shared_device_a', rdmaHcaMax: 63, selectors: { vendors: ['15b3'] } }],
  nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
  tolerations: [],
};

function specOf(props: Partial<NicClusterPolicyProps> = {}): any {
  const chart = Testing.chart();
  new NicClusterPolicy(chart, 'ncp', { ...BASE, ...props });
  return Testing.synth(chart)[0].spec;
}


const VARIANTS: Record<string, Edit | undefined> = {
  'reference cluster': undefined,
  'DOCA driver managed': (d) => { d.networkOperator = { docaDriver: true }; },
  'secondary networks (Multus, IPoIB, nv-ipam)': (d) => { d.network.secondaryNetwork = { multus: true, ipoib: true, nvIpam: true }; },
};

describe('NicClusterPolicy nic-cluster-policy', () => {
  it.each(Object.keys(VARIANTS))('renders one nic-cluster-policy for the %s', (variant) => {
    const objects = folderObjects(renderOf(VARIANTS[variant]), FOLDER);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['NicClusterPolicy/nic-cluster-policy']);
    expect(objects).toMatchSnapshot();
  });

  it('is not rendered without InfiniBand (no folder at all)', () => {
    const rendered = renderOf((d) => { delete d.network.infiniband; });
    expect(rendered.folders.map((f) => f.folder)).not.toContain(FOLDER);
    expect(folderObjects(rendered, 'gpu-operator').map((o) => o.kind)).toContain('ClusterPolicy');
  });

  it('for the reference cluster: the config parses and names rdma_shared_device_a, rdmaHcaMax 63, vendor 15b3', () => {
    expect(configOf()).toEqual({
      configList: [{ resourceName: 'rdma_shared_device_a', rdmaHcaMax: 63, selectors: { vendors: ['15b3'] } }],
    });
  });

  it('leaves the DOCA driver and the secondary networks out by default', () => {
    const { spec } = nicClusterPolicyOf();
    expect(spec.ofedDriver).toBeUndefined();
    expect(spec.secondaryNetwork).toBeUndefined();
    expect(spec.nvIpam).toBeUndefined();
  });

  it('takes repository and tag from spec.global, pinned in versions.ts', () => {
    const { spec } = nicClusterPolicyOf();
    expect(spec.global).toEqual(VERSIONS.networkOperator.global);
    expect(spec.global.version).toBe(`network-operator-v${VERSIONS.networkOperator.version}`);
    expect(spec.rdmaSharedDevicePlugin).toMatchObject({ image: 'k8s-rdma-shared-dev-plugin', imagePullSecrets: [] });
    expect(spec.rdmaSharedDevicePlugin.repository).toBeUndefined();
  });

  it('runs on the GPU workers only: required node affinity to their selector, their tolerations', () => {
    const { spec } = nicClusterPolicyOf((d) => { d.nodes.gpuWorkers.taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoExecute' }]; });
    expect(spec.nodeAffinity).toEqual({
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'nvidia.com/gpu.present', operator: 'In', values: ['true'] }] }],
      },
    });
    expect(spec.tolerations).toEqual([
      { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoExecute' },
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    // a label that survives MIG: the product label changes to <product>-MIG-<profile> when MIG is on
    expect(nicClusterPolicyOf((d) => { d.nodes.gpuWorkers.gpuProduct = 'NVIDIA-H200'; }).spec.nodeAffinity).toEqual(spec.nodeAffinity);
  });

  describe('each description option lands in its field', () => {
    const cases: [string, Edit, (spec: any) => void][] = [
      ['networkOperator.docaDriver: true', (d) => { d.networkOperator = { docaDriver: true }; }, (s) => {
        expect(s.ofedDriver).toMatchObject({
          image: VERSIONS.networkOperator.docaDriver.image,
          version: VERSIONS.networkOperator.docaDriver.version,
          forcePrecompiled: false,
          imagePullSecrets: [],
          terminationGracePeriodSeconds: 300,
        });
        expect(s.ofedDriver.upgradePolicy).toEqual({
          autoUpgrade: true,
          maxParallelUpgrades: 1,
          safeLoad: false,
          drain: { enable: true, force: true, deleteEmptyDir: true, timeoutSeconds: 300 },
          waitForCompletion: { timeoutSeconds: 0 },
        });
      }],
      ['network.secondaryNetwork.multus', (d) => { d.network.secondaryNetwork = { multus: true }; }, (s) => {
        expect(s.secondaryNetwork).toEqual({ multus: { image: 'multus-cni', imagePullSecrets: [] }, cniPlugins: { image: 'plugins', imagePullSecrets: [] } });
      }],
      ['network.secondaryNetwork.ipoib', (d) => { d.network.secondaryNetwork = { multus: true, ipoib: true }; },
        (s) => expect(s.secondaryNetwork.ipoib).toEqual({ image: 'ipoib-cni', imagePullSecrets: [] })],
      ['network.secondaryNetwork.nvIpam', (d) => { d.network.secondaryNetwork = { nvIpam: true }; },
        (s) => expect(s.nvIpam).toEqual({ image: 'nvidia-k8s-ipam', imagePullSecrets: [], enableWebhook: false })],
      ['network.infiniband.rdmaSharedDevice.hcaMax', (d) => { d.network.infiniband!.rdmaSharedDevice.hcaMax = 8; },
        (s) => expect(JSON.parse(s.rdmaSharedDevicePlugin.config).configList[0].rdmaHcaMax).toBe(8)],
      ['network.infiniband.rdmaSharedDevice selectors', (d) => {
        Object.assign(d.network.infiniband!.rdmaSharedDevice, {
          vendors: ['15b3'], deviceIDs: ['101b', '1021'], drivers: ['mlx5_core'], ifNames: ['ib0', 'ib1'], linkTypes: ['infiniband'],
        });
      }, (s) => expect(JSON.parse(s.rdmaSharedDevicePlugin.config).configList[0].selectors).toEqual({
        vendors: ['15b3'], deviceIDs: ['101b', '1021'], drivers: ['mlx5_core'], ifNames: ['ib0', 'ib1'], linkTypes: ['infiniband'],
      })],
    ];
    it.each(cases)('%s', (_name, edit, check) => check(nicClusterPolicyOf(edit).spec));
  });

  it('renaming the RDMA shared device renames it everywhere, and the old name is left nowhere', () => {
    const rendered = renderOf((d) => { d.network.infiniband!.rdmaSharedDevice.name = 'rdma_ib_fabric'; });
    expect(configOf((d) => { d.network.infiniband!.rdmaSharedDevice.name = 'rdma_ib_fabric'; }).configList[0].resourceName).toBe('rdma_ib_fabric');
    for (const folder of rendered.folders.filter((f) => MY_FOLDERS.includes(f.folder))) {
      expect(JSON.stringify(folder.objects), folder.folder).not.toContain('rdma_shared_device_a');
    }
    expect(JSON.stringify(folderObjects(renderOf(), FOLDER))).toContain('rdma_shared_device_a');
  });

  describe('construct props', () => {
    it('refuses any name but nic-cluster-policy', () => {
      expect(() => specOf({ name: 'nic-policy' })).toThrow(/name must be "nic-cluster-policy".*got "nic-policy"/);
    });

    it('refuses IPoIB without Multus', () => {
      expect(() => specOf({ secondaryNetwork: { ipoib: true } })).toThrow(/secondaryNetwork\.ipoib needs secondaryNetwork\.multus/);
    });

    it('refuses an empty node selector (the DaemonSets would run on every node)', () => {
      expect(() => specOf({ nodeSelector: {} })).toThrow(/nodeSelector must name the GPU workers/);
    });

    it('refuses an unpinned global version', () => {
      expect(() => specOf({ global: { repository: 'nvcr.io/nvidia/mellanox', version: 'latest' } })).toThrow(/must pin a release, got "latest"/);
    });

    it('builds the plugin config from the typed list', () => {
      const spec = specOf({
        rdmaSharedDevices: [
          { resourceName: 'rdma_a', rdmaHcaMax: 16, selectors: { ifNames: ['ib0'] } },
          { resourceName: 'rdma_b', rdmaHcaMax: 16, selectors: { ifNames: ['ib1'], linkTypes: [] } },
        ],
      });
      expect(JSON.parse(spec.rdmaSharedDevicePlugin.config).configList).toEqual([
        { resourceName: 'rdma_a', rdmaHcaMax: 16, selectors: { ifNames: ['ib0'] } },
        { resourceName: 'rdma_b', rdmaHcaMax: 16, selectors: { ifNames: ['ib1'] } },
      ]);
    });
  });

  describe('rdmaSharedDevicePluginConfig errors', () => {
    const device = { resourceName: 'rdma_a', rdmaHcaMax: 63, selectors: { vendors: ['15b3'] } };
    it.each([
      ['no device', [], /at least one RDMA shared device/],
      ['a device selecting no HCA', [{ ...device, selectors: { vendors: [] } }], /devices\[0\]\.selectors select no HCA/],
      ['rdmaHcaMax 0', [{ ...device, rdmaHcaMax: 0 }], /devices\[0\]\.rdmaHcaMax must be a positive integer, got 0/],
      ['a name the plugin rejects', [{ ...device, resourceName: 'rdma-a' }], /devices\[0\]\.resourceName "rdma-a" may hold only/],
      ['a name used twice', [device, device], /devices\[1\]\.resourceName "rdma_a" is used twice/],
    ])('%s', (_name, devices, error) => {
      expect(() => rdmaSharedDevicePluginConfig(devices)).toThrow(error);
    });
  });

  describe('description errors', () => {
    const at = (path: string, message: RegExp) => ({ path, message: expect.stringMatching(message) });

    it('the NicClusterPolicy renamed', () => {
      expect(issuesOf((d) => { d.networkOperator = { nicClusterPolicyName: 'my-nics' }; }))
        .toContainEqual(at('networkOperator.nicClusterPolicyName', /reconciles only a NicClusterPolicy named "nic-cluster-policy", got "my-nics"/));
    });

    it('an RDMA shared device with no HCAs', () => {
      expect(issuesOf((d) => { d.network.infiniband!.hcas = []; })).toContainEqual(at('network.infiniband.hcas', /at least one HCA/));
    });

    it('an RDMA shared device with no selector', () => {
      expect(issuesOf((d) => { d.network.infiniband!.rdmaSharedDevice.vendors = []; }))
        .toContainEqual(at('network.infiniband.rdmaSharedDevice.vendors', /selects no HCA/));
    });

    it.each([0, -1, 1.5])('rdmaHcaMax %s is out of range', (hcaMax) => {
      expect(issuesOf((d) => { d.network.infiniband!.rdmaSharedDevice.hcaMax = hcaMax; }))
        .toContainEqual(at('network.infiniband.rdmaSharedDevice.hcaMax', /expected an integer from 1 to 2147483647/));
    });

    it('accepts a large rdmaHcaMax (upstream sets no upper bound below a Go int)', () => {
      expect(issuesOf((d) => { d.network.infiniband!.rdmaSharedDevice.hcaMax = 100000; })).toEqual([]);
    });

    it('a resource name the RDMA device plugin rejects', () => {
      expect(issuesOf((d) => { d.network.infiniband!.rdmaSharedDevice.name = 'rdma-shared'; }))
        .toContainEqual(at('network.infiniband.rdmaSharedDevice.name', /lower-case letters, digits and "_"/));
    });

    it('IPoIB without Multus', () => {
      expect(issuesOf((d) => { d.network.secondaryNetwork = { ipoib: true }; }))
        .toContainEqual(at('network.secondaryNetwork.ipoib', /attach through Multus/));
    });

    it('secondary networks without InfiniBand', () => {
      expect(issuesOf((d) => { delete d.network.infiniband; d.network.secondaryNetwork = { nvIpam: true }; }))
        .toContainEqual(at('network.secondaryNetwork.nvIpam', /only with network\.infiniband/));
    });
  });
});

describe('networkOperatorHelmValues (managed install)', () => {
  const managed: Edit = (d) => { d.installs = { gpuOperator: 'managed', networkOperator: 'managed' }; };

  it('leaves Node Feature Discovery to the GPU Operator by default, and places the operator on the service node', () => {
    const values = networkOperatorHelmValues(modelOf(managed));
    expect(values).toEqual({
      nfd: { enabled: false, deployNodeFeatureRules: true },
      operator: {
        nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
        tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
      },
    });
  });

  it('deploys Node Feature Discovery when the description gives it to the Network Operator', () => {
    const values = networkOperatorHelmValues(modelOf((d) => { managed(d); d.nodeFeatureDiscovery = { deployedBy: 'network-operator' }; }));
    expect(values.nfd).toEqual({ enabled: true, deployNodeFeatureRules: true });
    expect(values['node-feature-discovery']?.worker.tolerations).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
  });
});

describe.skipIf(!HAS_SCHEMAS)('strict validation against the v26.4.1 CRD', () => {
  it.each(Object.keys(VARIANTS))('%s: no schema errors', (variant) => {
    const objects = folderObjects(renderOf(VARIANTS[variant]), FOLDER);
    expect(strictErrors(objects)).toEqual([]);
  });

  it('every option turned on at once still validates', () => {
    const objects = folderObjects(renderOf((d) => {
      d.networkOperator = { docaDriver: true };
      d.network.secondaryNetwork = { multus: true, ipoib: true, nvIpam: true };
      d.nodes.gpuWorkers.taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoExecute' }];
    }), FOLDER);
    expect(objects).toHaveLength(1);
    expect(strictErrors(objects)).toEqual([]);
  });
});
