import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { CLUSTER_POLICY_FIELDS, ClusterPolicy, ClusterPolicyProps } from '../../src/components/gpu-operator/cluster-policy';
import { gpuOperatorHelmValues } from '../../src/components/gpu-operator/helm-values';
import { setValueAt, valueAt } from '../../src/json';
import { VERSIONS } from '../../src/versions';
import { Edit, findObject, folderObjects, HAS_SCHEMAS, issuesOf, modelOf, referenceInput, renderOf, strictErrors } from '../helpers';

const FOLDER = 'gpu-operator';

function clusterPolicyOf(edit?: Edit): any {
  return findObject(folderObjects(renderOf(edit), FOLDER), 'ClusterPolicy', 'cluster-policy');
}

/** The spec of a ClusterPolicy construct rendered alone, with `props` over a minimal base. */
function specOf(props: Partial<ClusterPolicyProps> = {}): any {
  const chart = Testing.chart();
  new ClusterPolicy(chart, 'cp', { tolerations: [], ...props });
  return Testing.synth(chart)[0].spec;
}


const VARIANTS: Record<string, Edit | undefined> = {
  'reference cluster': undefined,
  'no InfiniBand': (d) => { delete d.network.infiniband; },
  'MIG mixed': (d) => { d.gpuOperator = { migStrategy: 'mixed' }; },
  'driver and toolkit managed': (d) => { d.gpuOperator = { driver: 'managed', toolkit: 'managed' }; },
};

describe('ClusterPolicy cluster-policy', () => {
  it.each(Object.keys(VARIANTS))('renders one cluster-policy for the %s', (variant) => {
    const objects = folderObjects(renderOf(VARIANTS[variant]), FOLDER);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['ConfigMap/dcgm-exporter-metrics', 'ClusterPolicy/cluster-policy']);
    expect(objects.filter((o) => o.kind === 'ClusterPolicy')).toMatchSnapshot();
  });

  it('for the reference cluster: driver and toolkit off, device plugin, GFD, DCGM exporter and MIG manager on', () => {
    const { spec } = clusterPolicyOf();
    expect(spec.driver.enabled).toBe(false);
    expect(spec.toolkit.enabled).toBe(false);
    expect(spec.devicePlugin.enabled).toBe(true);
    expect(spec.gfd.enabled).toBe(true);
    expect(spec.dcgmExporter.enabled).toBe(true);
    expect(spec.migManager.enabled).toBe(true);
    expect(spec.dcgm.enabled).toBe(false);
    expect(spec.nodeStatusExporter.enabled).toBe(false);
    expect(spec.mig).toEqual({ strategy: 'single' });
    expect(spec.cdi).toEqual({ enabled: true, default: false, nriPluginEnabled: false });
    expect(spec.validator).toEqual(VERSIONS.gpuOperator.images.validator);
  });

  it('points the DCGM exporter at its metrics list, rendered and synced beside the ClusterPolicy', () => {
    const { spec } = clusterPolicyOf();
    const configMap = findObject(folderObjects(renderOf(), FOLDER), 'ConfigMap', spec.dcgmExporter.config.name, 'gpu-operator');
    const file = spec.dcgmExporter.env.find((e: { name: string }) => e.name === 'DCGM_EXPORTER_COLLECTORS').value;
    expect(Object.keys(configMap.data as object)).toEqual([file.split('/').pop()]);
  });

  it('renders no metrics list when the DCGM exporter is off', () => {
    const objects = folderObjects(renderOf((d) => { d.gpuOperator = { dcgmExporter: false }; }), FOLDER);
    expect(objects.map((o) => o.kind)).toEqual(['ClusterPolicy']);
    expect((objects[0] as any).spec.dcgmExporter).toMatchObject({ enabled: false });
    expect((objects[0] as any).spec.dcgmExporter.config).toBeUndefined();
  });

  it('renders every section the CRD requires', () => {
    const { spec } = clusterPolicyOf();
    for (const section of ['daemonsets', 'dcgm', 'dcgmExporter', 'devicePlugin', 'driver', 'gfd', 'nodeStatusExporter', 'operator', 'toolkit']) {
      expect(spec, section).toHaveProperty(section);
    }
  });

  it('renders the values the CRD would default, so the live object equals the rendered one', () => {
    const { spec } = clusterPolicyOf();
    expect(spec.operator.runtimeClass).toBe('nvidia');
    expect(spec.daemonsets.updateStrategy).toBe('RollingUpdate');
    expect(spec.driver.kernelModuleType).toBe('auto');
    expect(spec.toolkit.installDir).toBe('/usr/local/nvidia');
    expect(spec.cdi.default).toBe(false);
    expect(spec.cdi.nriPluginEnabled).toBe(false);
  });

  it('places the operands: system-node-critical, tolerating the GPU workers and not the service node', () => {
    const { spec } = clusterPolicyOf((d) => { d.nodes.gpuWorkers.taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoExecute' }]; });
    expect(spec.daemonsets.priorityClassName).toBe('system-node-critical');
    expect(spec.daemonsets.tolerations).toEqual([
      { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoExecute' },
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    const serviceTaint = referenceInput().nodes.service!.taints![0].key;
    expect(JSON.stringify(spec.daemonsets.tolerations)).not.toContain(serviceTaint);
  });

  it('refuses GPU worker taints that would let the operands onto the service node', () => {
    expect(() => renderOf((d) => { d.nodes.gpuWorkers.taints = [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]; }))
      .toThrow(/nodes\.gpuWorkers\.taints: .*service node taint node-role\.kubernetes\.io\/control-plane:NoSchedule/);
  });

  it('pins every operand image to the one release in versions.ts', () => {
    const { spec } = clusterPolicyOf();
    const images = VERSIONS.gpuOperator.images;
    for (const operand of ['toolkit', 'devicePlugin', 'gfd', 'dcgm', 'dcgmExporter', 'migManager', 'nodeStatusExporter', 'validator'] as const) {
      expect(spec[operand], operand).toMatchObject(images[operand]);
      expect(spec[operand].version, operand).not.toBe('latest');
    }
    expect(images.validator.version).toBe(VERSIONS.gpuOperator.version);
  });

  describe('each description option lands in its field', () => {
    const cases: [string, Edit, (spec: any) => void][] = [
      ['gpuOperator.driver: managed', (d) => { d.gpuOperator = { driver: 'managed' }; }, (s) => {
        expect(s.driver).toMatchObject({ enabled: true, kernelModuleType: 'auto', ...VERSIONS.gpuOperator.images.driver, manager: VERSIONS.gpuOperator.images.driverManager });
        expect(s.driver.upgradePolicy).toEqual({
          autoUpgrade: false,
          maxParallelUpgrades: 1,
          maxUnavailable: '25%',
          drain: { enable: false, force: false, deleteEmptyDir: false, timeoutSeconds: 300 },
          podDeletion: { force: false, deleteEmptyDir: false, timeoutSeconds: 300 },
          waitForCompletion: { timeoutSeconds: 0 },
        });
      }],
      ['gpuOperator.driver: managed, InfiniBand with the host NIC driver', (d) => { d.gpuOperator = { driver: 'managed' }; },
        (s) => expect(s.driver.rdma).toEqual({ enabled: true, useHostMofed: true })],
      ['gpuOperator.driver: managed, InfiniBand with DOCA driver containers', (d) => { d.gpuOperator = { driver: 'managed' }; d.networkOperator = { docaDriver: true }; },
        (s) => expect(s.driver.rdma).toEqual({ enabled: true, useHostMofed: false })],
      ['gpuOperator.driver: managed without InfiniBand', (d) => { d.gpuOperator = { driver: 'managed' }; delete d.network.infiniband; },
        (s) => expect(s.driver.rdma).toBeUndefined()],
      ['gpuOperator.toolkit: managed', (d) => { d.gpuOperator = { toolkit: 'managed' }; }, (s) => expect(s.toolkit.enabled).toBe(true)],
      // A managed toolkit hands an unprivileged container only the GPUs the device plugin allocated (CDI: nothing else to change) ...
      ['gpuOperator.toolkit: managed hardens NVIDIA_VISIBLE_DEVICES', (d) => { d.gpuOperator = { toolkit: 'managed' }; }, (s) => {
        expect(s.toolkit.env).toEqual([{ name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED', value: 'false' }]);
        expect(s.devicePlugin.env).toBeUndefined();
      }],
      // ... without CDI the device plugin must pass its devices as volume mounts, which the toolkit then accepts
      ['gpuOperator.toolkit: managed without CDI', (d) => { d.gpuOperator = { toolkit: 'managed', cdi: false }; }, (s) => {
        expect(s.toolkit.env).toEqual([
          { name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED', value: 'false' },
          { name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS', value: 'true' },
        ]);
        expect(s.devicePlugin.env).toEqual([{ name: 'DEVICE_LIST_STRATEGY', value: 'volume-mounts' }]);
      }],
      ['gpuOperator.acceptVisibleDevicesEnvvarWhenUnprivileged: true (the toolkit\'s own default)', (d) => {
        d.gpuOperator = { toolkit: 'managed', acceptVisibleDevicesEnvvarWhenUnprivileged: true, toolkitEnv: [{ name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS', value: 'true' }] };
      }, (s) => expect(s.toolkit.env).toEqual([{ name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS', value: 'true' }])],
      ['a preinstalled toolkit: nothing rendered, the node image decides', () => {}, (s) => {
        expect(s.toolkit.env).toBeUndefined();
        expect(s.devicePlugin.env).toBeUndefined();
      }],
      ['gpuOperator.devicePlugin: false', (d) => { d.gpuOperator = { devicePlugin: false }; }, (s) => expect(s.devicePlugin.enabled).toBe(false)],
      ['gpuOperator.gfd: false', (d) => { d.gpuOperator = { gfd: false }; }, (s) => expect(s.gfd.enabled).toBe(false)],
      ['gpuOperator.dcgmExporter: false', (d) => { d.gpuOperator = { dcgmExporter: false }; }, (s) => expect(s.dcgmExporter.enabled).toBe(false)],
      ['gpuOperator.dcgm: true', (d) => { d.gpuOperator = { dcgm: true }; }, (s) => expect(s.dcgm.enabled).toBe(true)],
      ['gpuOperator.migManager: false', (d) => { d.gpuOperator = { migManager: false }; }, (s) => expect(s.migManager.enabled).toBe(false)],
      ['gpuOperator.migStrategy: none', (d) => { d.gpuOperator = { migStrategy: 'none' }; }, (s) => expect(s.mig.strategy).toBe('none')],
      ['gpuOperator.migStrategy: mixed', (d) => { d.gpuOperator = { migStrategy: 'mixed' }; }, (s) => expect(s.mig.strategy).toBe('mixed')],
      ['gpuOperator.nodeStatusExporter: true', (d) => { d.gpuOperator = { nodeStatusExporter: true }; }, (s) => expect(s.nodeStatusExporter.enabled).toBe(true)],
      ['gpuOperator.cdi: false', (d) => { d.gpuOperator = { cdi: false }; }, (s) => expect(s.cdi).toEqual({ enabled: false, default: false, nriPluginEnabled: false })],
      ['gpuOperator.devicePluginEnv', (d) => { d.gpuOperator = { devicePluginEnv: [{ name: 'DEVICE_LIST_STRATEGY', value: 'cdi-cri' }] }; },
        (s) => expect(s.devicePlugin.env).toEqual([{ name: 'DEVICE_LIST_STRATEGY', value: 'cdi-cri' }])],
      ['gpuOperator.toolkitEnv', (d) => { d.gpuOperator = { toolkitEnv: [{ name: 'CONTAINERD_SOCKET', value: '/run/k3s/containerd/containerd.sock' }] }; },
        (s) => expect(s.toolkit.env).toEqual([{ name: 'CONTAINERD_SOCKET', value: '/run/k3s/containerd/containerd.sock' }])],
    ];
    it.each(cases)('%s', (_name, edit, check) => check(clusterPolicyOf(edit).spec));
  });

  describe('construct props', () => {
    it('applies its documented defaults', () => {
      const spec = specOf();
      expect(spec.driver).toEqual({ enabled: false, kernelModuleType: 'auto' });
      expect(spec.toolkit.enabled).toBe(false);
      expect(spec.mig.strategy).toBe('single');
      expect(spec.daemonsets.priorityClassName).toBe('system-node-critical');
      expect(spec.devicePlugin.env).toBeUndefined();
    });

    it('takes images and a priority class', () => {
      const images = { ...VERSIONS.gpuOperator.images, dcgmExporter: { repository: 'registry.example.com/nvidia', image: 'dcgm-exporter', version: '4.6.0-4.8.3-distroless' } };
      const spec = specOf({ images, priorityClassName: 'gpu-agents' });
      expect(spec.dcgmExporter).toMatchObject(images.dcgmExporter);
      expect(spec.daemonsets.priorityClassName).toBe('gpu-agents');
    });

    it('rejects migStrategy mixed without the MIG manager, naming both props', () => {
      expect(() => specOf({ migStrategy: 'mixed', migManager: false })).toThrow(/migStrategy "mixed" needs migManager: true/);
    });

    it('hardens a managed toolkit unless told otherwise, and refuses to configure a preinstalled one', () => {
      expect(specOf({ toolkit: 'managed' }).toolkit.env).toEqual([{ name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED', value: 'false' }]);
      expect(specOf({ toolkit: 'managed', acceptVisibleDevicesEnvvarWhenUnprivileged: true }).toolkit.env).toBeUndefined();
      expect(() => specOf({ acceptVisibleDevicesEnvvarWhenUnprivileged: false })).toThrow(/configures a managed toolkit only/);
      expect(() => specOf({ toolkit: 'managed', toolkitEnv: [{ name: 'ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED', value: 'true' }] }))
        .toThrow(/toolkitEnv sets ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED, which acceptVisibleDevicesEnvvarWhenUnprivileged already sets/);
    });

    it('rejects an unpinned image, naming the operand', () => {
      const images = { ...VERSIONS.gpuOperator.images, gfd: { repository: 'nvcr.io/nvidia', image: 'k8s-device-plugin', version: 'latest' } };
      expect(() => specOf({ images })).toThrow(/images\.gfd\.version must pin a release, got "latest"/);
    });
  });

  describe('description errors', () => {
    it('MIG strategy mixed without the MIG manager', () => {
      expect(issuesOf((d) => { d.gpuOperator = { migStrategy: 'mixed', migManager: false }; }))
        .toContainEqual({ path: 'gpuOperator.migStrategy', message: expect.stringMatching(/"mixed" needs the MIG manager/) });
    });

    it('the NVIDIA_VISIBLE_DEVICES setting of a toolkit the node image ships, or set twice', () => {
      expect(issuesOf((d) => { d.gpuOperator = { acceptVisibleDevicesEnvvarWhenUnprivileged: false }; })).toEqual([{
        path: 'gpuOperator.acceptVisibleDevicesEnvvarWhenUnprivileged',
        message: expect.stringMatching(/set accept-nvidia-visible-devices-envvar-when-unprivileged in its \/etc\/nvidia-container-runtime\/config.toml/),
      }]);
      expect(issuesOf((d) => { d.gpuOperator = { toolkit: 'managed', cdi: false, devicePluginEnv: [{ name: 'DEVICE_LIST_STRATEGY', value: 'envvar' }] }; })).toEqual([{
        path: 'gpuOperator.devicePluginEnv[0].name',
        message: 'DEVICE_LIST_STRATEGY follows gpuOperator.acceptVisibleDevicesEnvvarWhenUnprivileged with a managed toolkit; set that instead',
      }]);
    });

    it('an unknown MIG strategy', () => {
      expect(issuesOf((d) => { (d as any).gpuOperator = { migStrategy: 'all' }; }))
        .toContainEqual({ path: 'gpuOperator.migStrategy', message: expect.stringMatching(/expected "none", "single" or "mixed"/) });
    });

    it('two Node Feature Discovery deployments (a preinstalled GPU Operator already runs one)', () => {
      const issues = issuesOf((d) => { d.nodeFeatureDiscovery = { deployedBy: 'network-operator' }; d.installs = { networkOperator: 'managed' }; });
      expect(issues).toEqual([{ path: 'nodeFeatureDiscovery.deployedBy', message: expect.stringMatching(/two Node Feature Discovery deployments.*installs\.gpuOperator: preinstalled/) }]);
    });

    it('no Node Feature Discovery (a preinstalled Network Operator is not told to deploy one)', () => {
      const issues = issuesOf((d) => { d.nodeFeatureDiscovery = { deployedBy: 'network-operator' }; d.installs = { gpuOperator: 'managed' }; });
      expect(issues).toEqual([{ path: 'nodeFeatureDiscovery.deployedBy', message: expect.stringMatching(/needs installs\.networkOperator: managed/) }]);
    });
  });
});

describe('the ClusterPolicy fields the description decides (what preflight names to keep a cluster\'s value)', () => {
  const values: Record<string, readonly unknown[]> = { 'spec.mig.strategy': ['none', 'single', 'mixed'] };
  it.each(CLUSTER_POLICY_FIELDS.map((f) => [f.path, f]))('%s: the field it names, set as it says, renders each value there', (_, f) => {
    for (const v of values[f.path] ?? [true, false]) {
      const keep = f.keep(v);
      expect(keep, `${f.path} = ${JSON.stringify(v)}`).toBeDefined();
      const policy = clusterPolicyOf((d) => setValueAt(d as Record<string, unknown>, f.field, keep));
      expect(valueAt(policy, f.path), `${f.field}: ${JSON.stringify(keep)}`).toEqual(v);
    }
    // a value no setting of the field renders: none named
    expect(f.keep('no such value')).toBeUndefined();
  });
});

describe('gpuOperatorHelmValues (managed install)', () => {
  const managed: Edit = (d) => { d.installs = { gpuOperator: 'managed', networkOperator: 'managed' }; };

  it('switches the chart\'s own ClusterPolicy off: the rendered cluster-policy is the only one', () => {
    expect(gpuOperatorHelmValues(modelOf(managed)).clusterPolicy).toEqual({ deployCR: false });
  });

  it('mirrors driver and toolkit, and places the operator on the service node', () => {
    const model = modelOf(managed);
    const values = gpuOperatorHelmValues(model);
    expect(values.driver).toEqual({ enabled: false });
    expect(values.toolkit).toEqual({ enabled: false });
    expect(values.operator).toEqual({
      nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
      tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
    });
    expect(gpuOperatorHelmValues(modelOf((d) => { managed(d); d.gpuOperator = { driver: 'managed' }; })).driver).toEqual({ enabled: true });
  });

  it('deploys Node Feature Discovery exactly when the description says so', () => {
    const byGpu = gpuOperatorHelmValues(modelOf(managed));
    expect(byGpu.nfd).toEqual({ enabled: true });
    expect(byGpu['node-feature-discovery']?.worker.tolerations).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(byGpu['node-feature-discovery']?.master.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
    const byNetwork = gpuOperatorHelmValues(modelOf((d) => { managed(d); d.nodeFeatureDiscovery = { deployedBy: 'network-operator' }; }));
    expect(byNetwork.nfd).toEqual({ enabled: false });
    expect(byNetwork['node-feature-discovery']).toBeUndefined();
  });
});

describe.skipIf(!HAS_SCHEMAS)('strict validation against the v26.7.0 CRD', () => {
  it.each(Object.keys(VARIANTS))('%s: no schema errors', (variant) => {
    const objects = folderObjects(renderOf(VARIANTS[variant]), FOLDER);
    expect(strictErrors(objects)).toEqual([]);
  });

  it('every option turned on at once still validates', () => {
    const objects = folderObjects(renderOf((d) => {
      d.gpuOperator = {
        driver: 'managed',
        toolkit: 'managed',
        dcgm: true,
        nodeStatusExporter: true,
        migStrategy: 'mixed',
        devicePluginEnv: [{ name: 'A', value: '1' }],
        toolkitEnv: [{ name: 'B', value: '2' }],
      };
    }), FOLDER);
    expect(strictErrors(objects)).toEqual([]);
  });
});
