import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { kueueHelmValues, kueueManagerConfig } from '../../src/components/kueue/manager-config';
import { parseDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { ownSyncOptions, syncOptionValue } from '../../src/model/names';
import { Manifest, RenderedCluster } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { findObject, folderObjects, HAS_SCHEMAS, modelOf, renderOf, schemaErrors, TRAINING_FILE } from '../helpers';

const trainingInput = () => parse(readFileSync(TRAINING_FILE, 'utf8'));
const renderTraining = (edit: (d: any) => void = () => {}) => {
  const d = trainingInput();
  edit(d);
  return renderCluster(buildModel(parseDescription(d)));
};

const kueueOf = (edit?: Parameters<typeof renderOf>[0]) => folderObjects(renderOf(edit), 'kueue');
const all = (c: RenderedCluster): Manifest[] => c.folders.flatMap((f) => [...f.objects]);
const ofKind = (objects: readonly Manifest[], kind: string) => objects.filter((o) => o.kind === kind);
const spec = (o: Manifest) => (o as any).spec;

/**
 * Cross-object facts of a rendered cluster, checked from the YAML alone (nothing from the model):
 * returns every broken fact as a sentence.
 */
function crossCheck(c: RenderedCluster, expectedGpus: number): string[] {
  const objects = all(c);
  const problems: string[] = [];
  const clusterQueues = ofKind(objects, 'ClusterQueue');
  const cqNames = new Set(clusterQueues.map((q) => q.metadata.name));
  const flavors = new Set(ofKind(objects, 'ResourceFlavor').map((f) => f.metadata.name));
  const topologies = new Set(ofKind(objects, 'Topology').map((t) => t.metadata.name));
  for (const lq of ofKind(objects, 'LocalQueue')) {
    if (!cqNames.has(spec(lq).clusterQueue)) problems.push(`LocalQueue ${lq.metadata.namespace}/${lq.metadata.name} points at missing ClusterQueue ${spec(lq).clusterQueue}`);
    const cq = clusterQueues.find((q) => q.metadata.name === spec(lq).clusterQueue);
    const allowed = cq && spec(cq).namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'];
    if (cq && allowed !== lq.metadata.namespace) problems.push(`ClusterQueue ${cq.metadata.name} does not admit namespace ${lq.metadata.namespace}`);
  }
  for (const f of ofKind(objects, 'ResourceFlavor')) {
    if (spec(f).topologyName && !topologies.has(spec(f).topologyName)) problems.push(`ResourceFlavor ${f.metadata.name} names missing Topology ${spec(f).topologyName}`);
  }
  const cohorts = new Set(clusterQueues.map((q) => spec(q).cohortName));
  if (cohorts.size !== 1) problems.push(`ClusterQueues are in cohorts ${[...cohorts].join(', ')}`);
  let gpus = 0;
  for (const cq of clusterQueues) {
    for (const group of spec(cq).resourceGroups) {
      if (!group.coveredResources.includes('nvidia.com/gpu')) problems.push(`ClusterQueue ${cq.metadata.name} does not cover nvidia.com/gpu`);
      for (const f of group.flavors) {
        if (!flavors.has(f.name)) problems.push(`ClusterQueue ${cq.metadata.name} uses missing ResourceFlavor ${f.name}`);
        if (f.resources.map((r: any) => r.name).join() !== group.coveredResources.join()) problems.push(`ClusterQueue ${cq.metadata.name} flavor ${f.name} resources differ from coveredResources`);
        for (const r of f.resources) if (r.name === 'nvidia.com/gpu') gpus += Number(r.nominalQuota);
      }
    }
  }
  if (gpus !== expectedGpus) problems.push(`nominal GPU quota over the cohort is ${gpus}, expected ${expectedGpus}`);
  return problems;
}

describe('kueue', () => {
  it('renders the reference cluster\'s Kueue objects', () => {
    expect(kueueOf()).toMatchSnapshot();
  });

  it('renders the training cluster\'s Kueue objects (16 workers, five tenants, topology)', () => {
    expect(folderObjects(renderTraining(), 'kueue')).toMatchSnapshot();
  });

  it('holds the cross-object facts for the reference and the training cluster', () => {
    expect(crossCheck(renderOf(), 16)).toEqual([]);
    expect(crossCheck(renderTraining(), 128)).toEqual([]);
    expect(crossCheck(renderOf((d: any) => { d.nodes.cpuWorkers = { count: 2, cpu: '64', memory: '256Gi' }; d.queueing.topology = {}; }), 16)).toEqual([]);
  });

  it('catches a LocalQueue without its ClusterQueue (the checker can fail)', () => {
    const c = renderOf();
    const broken: RenderedCluster = { ...c, folders: c.folders.map((f) => ({ ...f, objects: f.objects.filter((o) => !(o.kind === 'ClusterQueue' && o.metadata.name === 'research')) })) };
    expect(crossCheck(broken, 16)).toEqual([
      'LocalQueue research/research points at missing ClusterQueue research',
      'nominal GPU quota over the cohort is 8, expected 16',
    ]);
  });

  it('pre-wires the default queue: LocalQueue default/default on ClusterQueue default, restricted to namespace default', () => {
    const objects = kueueOf();
    expect(spec(findObject(objects, 'LocalQueue', 'default', 'default')).clusterQueue).toBe('default');
    const cq = findObject(objects, 'ClusterQueue', 'default');
    expect(spec(cq).namespaceSelector).toEqual({ matchLabels: { 'kubernetes.io/metadata.name': 'default' } });
    expect(ofKind(objects, 'LocalQueue')).toHaveLength(1);
  });

  it('selects the GPU workers by a label that survives MIG and covers cpu, memory, GPUs and the RDMA device', () => {
    const objects = kueueOf();
    const flavor = findObject(objects, 'ResourceFlavor', 'nvidia-h100-80gb-hbm3');
    expect(spec(flavor)).toEqual({ nodeLabels: { 'nvidia.com/gpu.present': 'true' } });
    const research = spec(findObject(objects, 'ClusterQueue', 'research'));
    expect(research.cohortName).toBe('gpu-cohort');
    expect(research.resourceGroups).toEqual([{
      coveredResources: ['cpu', 'memory', 'nvidia.com/gpu', 'rdma/rdma_shared_device_a'],
      flavors: [{
        name: 'nvidia-h100-80gb-hbm3',
        resources: [
          { name: 'cpu', nominalQuota: '186' }, { name: 'memory', nominalQuota: '1780Gi' },
          { name: 'nvidia.com/gpu', nominalQuota: '8' }, { name: 'rdma/rdma_shared_device_a', nominalQuota: '63' },
        ],
      }],
    }]);
    expect(research.preemption).toEqual({ withinClusterQueue: 'LowerPriority', reclaimWithinCohort: 'Any', borrowWithinCohort: { policy: 'Never' } });
    expect(research.fairSharing).toBeUndefined();
  });

  it('tolerates tainted workers in the flavor and adds the topology when asked', () => {
    const objects = folderObjects(renderTraining(), 'kueue');
    const flavor = spec(findObject(objects, 'ResourceFlavor', 'nvidia-h200'));
    expect(flavor.tolerations).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(flavor.topologyName).toBe('gpu-topology');
    expect(spec(findObject(objects, 'Topology', 'gpu-topology')).levels).toEqual([
      { nodeLabel: 'network.topology.nvidia.com/block' }, { nodeLabel: 'kubernetes.io/hostname' },
    ]);
    expect(ofKind(kueueOf(), 'Topology')).toEqual([]);
  });

  it('spares with the adopted default ClusterQueue the flavor and Topology it names (Delete=false): Kueue keeps them while it names them, so a cascade would never end', () => {
    const deleteOption = (o: Manifest) => syncOptionValue(ownSyncOptions(o), 'Delete');
    const withTopology = kueueOf((d: any) => { d.queueing.topology = { levels: ['network.topology.nvidia.com/block', 'kubernetes.io/hostname'] }; });
    expect(deleteOption(findObject(withTopology, 'ClusterQueue', 'default'))).toBe('false');
    for (const kind of ['ResourceFlavor', 'Topology']) {
      expect(ofKind(withTopology, kind).map(deleteOption), kind).toEqual(['false']);
      // a prune is left as it is: the queue's new flavor comes in the same sync
      expect(ofKind(withTopology, kind).map((o) => syncOptionValue(ownSyncOptions(o), 'Prune')), kind).toEqual([undefined]);
    }
    // managed, Kueue adopts nothing and its Application's cascade deletes every flavor
    const objects = folderObjects(renderTraining(), 'kueue');
    expect(objects.filter((o) => ['ResourceFlavor', 'Topology', 'ClusterQueue'].includes(o.kind)).map(deleteOption).filter((v) => v !== undefined)).toEqual([]);
  });

  it('gives a borrowing-only tenant no nominal GPUs but a borrowing limit', () => {
    const interns = spec(findObject(folderObjects(renderTraining(), 'kueue'), 'ClusterQueue', 'interns'));
    const gpu = interns.resourceGroups[0].flavors[0].resources.find((r: any) => r.name === 'nvidia.com/gpu');
    expect(gpu).toEqual({ name: 'nvidia.com/gpu', nominalQuota: '0', borrowingLimit: '8' });
  });

  it('puts a CPU-only flavor first when the cluster has CPU workers', () => {
    const objects = kueueOf((d: any) => { d.nodes.cpuWorkers = { count: 2, cpu: '64', memory: '256Gi', taints: [{ key: 'cpu-only', value: 'yes', effect: 'NoSchedule' }] }; });
    expect(spec(findObject(objects, 'ResourceFlavor', 'cpu-only'))).toEqual({
      nodeLabels: { 'node-role.kubernetes.io/cpu-worker': '' },
      tolerations: [{ key: 'cpu-only', operator: 'Equal', value: 'yes', effect: 'NoSchedule' }],
    });
    const flavors = spec(findObject(objects, 'ClusterQueue', 'default')).resourceGroups[0].flavors;
    expect(flavors.map((f: any) => f.name)).toEqual(['cpu-only', 'nvidia-h100-80gb-hbm3']);
    // 2 x (64 - 1) CPU and 2 x (256Gi - 2Gi) memory after the CPU workers' reserve, 4 of 16 GPUs' share
    expect(flavors[0].resources.map((r: any) => r.nominalQuota)).toEqual(['31500m', '127Gi', '0', '0']);
  });

  it('leaves RDMA out of the queues when the cluster has no InfiniBand or Kueue excludes rdma/', () => {
    const noIb = spec(findObject(kueueOf((d: any) => { delete d.network.infiniband; }), 'ClusterQueue', 'default'));
    expect(noIb.resourceGroups[0].coveredResources).toEqual(['cpu', 'memory', 'nvidia.com/gpu']);
    const excluded = spec(findObject(kueueOf((d: any) => { d.queueing.rdma = 'excluded'; d.installs = { kueue: 'managed' }; }), 'ClusterQueue', 'default'));
    expect(excluded.resourceGroups[0].coveredResources).toEqual(['cpu', 'memory', 'nvidia.com/gpu']);
  });

  it('writes borrowing and lending limits per resource, in proportion', () => {
    const cq = spec(findObject(kueueOf((d: any) => { d.queueing.borrowingLimit = 4; d.tenants[0].lendingLimit = 2; }), 'ClusterQueue', 'research'));
    expect(cq.resourceGroups[0].flavors[0].resources).toEqual([
      { name: 'cpu', nominalQuota: '186', borrowingLimit: '93', lendingLimit: '46500m' },
      { name: 'memory', nominalQuota: '1780Gi', borrowingLimit: '890Gi', lendingLimit: '445Gi' },
      { name: 'nvidia.com/gpu', nominalQuota: '8', borrowingLimit: '4', lendingLimit: '2' },
      { name: 'rdma/rdma_shared_device_a', nominalQuota: '63', borrowingLimit: '31', lendingLimit: '15' },
    ]);
  });

  it('sets preemption and fair-sharing weights from the description', () => {
    const objects = kueueOf((d: any) => {
      d.installs = { kueue: 'managed' };
      d.queueing.fairSharing = true;
      d.queueing.preemption = { withinClusterQueue: 'LowerOrNewerEqualPriority', reclaimWithinCohort: 'LowerPriority' };
      d.tenants[1].fairSharingWeight = 0.5;
    });
    expect(spec(findObject(objects, 'ClusterQueue', 'inference')).fairSharing).toEqual({ weight: '500m' });
    expect(spec(findObject(objects, 'ClusterQueue', 'research')).fairSharing).toEqual({ weight: '1' });
    expect(spec(findObject(objects, 'ClusterQueue', 'default')).preemption).toMatchObject({ withinClusterQueue: 'LowerOrNewerEqualPriority', reclaimWithinCohort: 'LowerPriority' });
  });

  it('renders a WorkloadPriorityClass and a PriorityClass per priority, none of them globalDefault', () => {
    const objects = kueueOf();
    expect(ofKind(objects, 'WorkloadPriorityClass').map((w) => [w.metadata.name, (w as any).value])).toEqual([['high', 1000], ['low', 100], ['normal', 500]]);
    const classes = ofKind(objects, 'PriorityClass') as any[];
    // a globalDefault would give "normal" to every pod of the cluster, the pre-installed DaemonSets included
    expect(classes.map((p) => [p.metadata.name, p.value, p.globalDefault])).toEqual([['high', 1000, false], ['low', 100, false], ['normal', 500, false]]);
    expect((findObject(objects, 'WorkloadPriorityClass', 'normal') as any).description).toMatch(/queued work rendered for this cluster .* carries this class when it names none/);
    const without = kueueOf((d: any) => { d.queueing.podPriorityClasses = false; });
    expect(ofKind(without, 'PriorityClass')).toEqual([]);
    expect(ofKind(without, 'WorkloadPriorityClass')).toHaveLength(3);
  });

  it('holds a ClusterQueue as described (tenants[].stopPolicy, queueing.defaultStopPolicy), and writes "None" otherwise, so that a hold by hand is drift', () => {
    const stopPolicies = (objects: readonly Manifest[]) => Object.fromEntries(ofKind(objects, 'ClusterQueue').map((cq) => [cq.metadata.name, spec(cq).stopPolicy]));
    const plain = stopPolicies(kueueOf());
    expect(Object.values(plain).length).toBeGreaterThan(1);
    expect(new Set(Object.values(plain))).toEqual(new Set(['None']));
    const held = stopPolicies(kueueOf((d) => {
      d.tenants[0].stopPolicy = 'HoldAndDrain';
      d.queueing = { ...d.queueing, defaultStopPolicy: 'Hold' };
    }));
    const tenant = modelOf().tenants[0].clusterQueue;
    expect(held).toEqual({ ...plain, [tenant]: 'HoldAndDrain', [modelOf().queueing.defaultQueue.clusterQueue]: 'Hold' });
    expect(() => kueueOf((d) => { d.tenants[0].stopPolicy = 'Paused'; })).toThrow(/tenants\[0\]\.stopPolicy/);
  });

  it('writes canonical quantities as strings everywhere', () => {
    for (const cq of ofKind(all(renderTraining()), 'ClusterQueue')) {
      for (const f of spec(cq).resourceGroups[0].flavors) {
        for (const r of f.resources) {
          for (const v of [r.nominalQuota, r.borrowingLimit, r.lendingLimit].filter((x) => x !== undefined)) expect(typeof v).toBe('string');
        }
      }
    }
  });

  it.skipIf(!HAS_SCHEMAS)('passes strict v1beta2 validation in every variant', () => {
    // Only this component's folders: the others have tests of their own.
    const errors = (c: RenderedCluster) => schemaErrors(c).filter((e) => e.source === 'kueue' || e.source === 'tenants');
    expect(ofKind(all(renderOf()), 'ClusterQueue').every((o) => o.apiVersion === 'kueue.x-k8s.io/v1beta2')).toBe(true);
    expect(errors(renderOf())).toEqual([]);
    expect(errors(renderTraining())).toEqual([]);
    expect(errors(renderOf((d: any) => {
      d.installs = { kueue: 'managed' };
      d.queueing.fairSharing = true;
      d.queueing.topology = { levels: ['rack', 'kubernetes.io/hostname'] };
      d.queueing.borrowingLimit = 4;
      d.queueing.lendingLimit = 2;
      d.nodes.cpuWorkers = { count: 1, cpu: '32', memory: '128Gi' };
    }))).toEqual([]);
  });

  it.skipIf(!HAS_SCHEMAS)('the validator rejects a Kueue object with an unknown field (the check can fail)', () => {
    const c = renderOf();
    const broken: RenderedCluster = {
      ...c,
      folders: c.folders.map((f) => (f.folder !== 'kueue' ? f : {
        ...f,
        objects: f.objects.map((o) => (o.kind === 'ClusterQueue' && o.metadata.name === 'default' ? { ...o, spec: { ...spec(o), cohort: 'gpu-cohort' } } as Manifest : o)),
      })),
    };
    expect(schemaErrors(broken).filter((e) => e.source === 'kueue').map((e) => e.object)).toEqual(['ClusterQueue default']);
  });
});

describe('kueue manager configuration', () => {
  const managed = (edit: (d: any) => void = () => {}) => modelOf((d: any) => { d.installs = { kueue: 'managed' }; edit(d); });

  it('enables Job, MPIJob, PyTorchJob and plain pods (SkyPilot, Dynamo) and keeps RDMA covered by default', () => {
    const config = kueueManagerConfig(managed());
    expect(config.apiVersion).toBe('config.kueue.x-k8s.io/v1beta2');
    expect(config.kind).toBe('Configuration');
    expect(config.integrations.frameworks).toEqual(['batch/job', 'kubeflow.org/mpijob', 'kubeflow.org/pytorchjob', 'pod']);
    expect(config.resources).toBeUndefined();
    expect(config.fairSharing).toBeUndefined();
  });

  it('manages only labelled jobs and pods, in the namespaces with a LocalQueue and nowhere else', () => {
    const model = managed();
    const config = kueueManagerConfig(model);
    expect(config.manageJobsWithoutQueueName).toBe(false);
    const localQueueNamespaces = renderCluster(model).folders.flatMap((f) => f.objects).filter((m) => m.kind === 'LocalQueue').map((m) => m.metadata.namespace).sort();
    expect(config.managedJobsNamespaceSelector).toEqual({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: expect.arrayContaining(localQueueNamespaces) }],
    });
    const selected = config.managedJobsNamespaceSelector.matchExpressions[0].values;
    expect([...selected].sort()).toEqual([...new Set(localQueueNamespaces)]);
    for (const system of ['kube-system', 'kueue-system', 'gpu-operator', 'nvidia-network-operator']) expect(selected).not.toContain(system);
  });

  it('excludes the rdma/ prefix and switches fair sharing on when asked', () => {
    const config = kueueManagerConfig(managed((d: any) => { d.queueing.rdma = 'excluded'; d.queueing.fairSharing = true; }));
    expect(config.resources).toEqual({ excludeResourcePrefixes: ['rdma/'] });
    expect(config.fairSharing).toEqual({ preemptionStrategies: ['LessThanOrEqualToFinalShare', 'LessThanInitialShare'] });
  });

  it('gives Helm values with the configuration as YAML under managerConfig.controllerManagerConfigYaml, on the service node', () => {
    const values = kueueHelmValues(managed((d: any) => { d.queueing.rdma = 'excluded'; }));
    const yaml = values.managerConfig.controllerManagerConfigYaml;
    expect(parse(yaml)).toEqual(JSON.parse(JSON.stringify(kueueManagerConfig(managed((d: any) => { d.queueing.rdma = 'excluded'; })))));
    expect(yaml).not.toMatch(/null/);
    expect(values.controllerManager.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
    expect(values.controllerManager.tolerations).toEqual([{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }]);
  });

  it('refuses a preinstalled Kueue, naming the field', () => {
    expect(() => kueueManagerConfig(modelOf())).toThrow('installs.kueue is "preinstalled"');
    expect(() => kueueHelmValues(modelOf())).toThrow('installs.kueue is "preinstalled"');
  });
});
