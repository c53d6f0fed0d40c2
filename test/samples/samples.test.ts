import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Testing } from 'cdk8s';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { checkCluster, ClusterView, readClusters } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { samples } from '../../src/components/samples/chart';
import { DcgmDiagnostic } from '../../src/components/samples/dcgm-diagnostic';
import { NcclTest, NcclTestProps } from '../../src/components/samples/nccl-test';
import { PyTorchTrainingJob, PyTorchTrainingJobProps } from '../../src/components/samples/pytorch-training-job';
import { gpuProductFacts } from '../../src/model/gpu-products';
import { DescriptionError, loadDescription } from '../../src/model/load';
import { buildModel, ClusterModel } from '../../src/model/model';
import { NODE_NAME_PLACEHOLDER } from '../../src/model/names';
import { Manifest, RenderedCluster } from '../../src/render/manifest';
import { toYaml } from '../../src/render/yaml';
import { renderCluster } from '../../src/synth/render';
import { findObject, HAS_SCHEMAS, HAS_UPSTREAM, modelOf, referenceInput, ROOT, schemaErrors, TRAINING_FILE } from '../helpers';

type Edit = Parameters<typeof modelOf>[0];

/** Only the samples component, so that these tests depend on nothing else being rendered. */
const renderSamples = (model: ClusterModel): RenderedCluster => renderCluster(model, [samples], []);
const samplesOf = (edit?: Edit): readonly Manifest[] => renderSamples(modelOf(edit)).folders[0].objects;
const trainingCluster = () => buildModel(loadDescription(TRAINING_FILE));

const sized = (count: number, gpusPerNode: number): Edit => (d) => {
  d.nodes.gpuWorkers.count = count;
  d.nodes.gpuWorkers.gpusPerNode = gpusPerNode;
  d.tenants = [];
};

const IMAGE = 'ghcr.io/coreweave/nccl-tests:12.9.1-devel-ubuntu22.04-nccl2.28.3-1-8b67957';
const container = (o: any, replica: string) => o.spec[o.kind === 'MPIJob' ? 'mpiReplicaSpecs' : 'pytorchReplicaSpecs'][replica].template.spec.containers[0];
const podSpec = (o: any, replica: string) => o.spec[o.kind === 'MPIJob' ? 'mpiReplicaSpecs' : 'pytorchReplicaSpecs'][replica].template.spec;
const envOf = (c: any) => Object.fromEntries((c.env ?? []).map((e: any) => [e.name, e.value]));

function ncclTest(props: Partial<NcclTestProps> & { model?: ClusterModel } = {}) {
  const chart = Testing.chart();
  const test = new NcclTest(chart, 'Test', { model: props.model ?? modelOf(), name: 'nccl', image: IMAGE, ...props });
  return { test, objects: Testing.synth(chart) as Manifest[] };
}

function pytorchJob(props: Partial<PyTorchTrainingJobProps> & { model?: ClusterModel } = {}) {
  const chart = Testing.chart();
  const job = new PyTorchTrainingJob(chart, 'Job', {
    model: props.model ?? modelOf(), name: 'train', image: 'nvcr.io/nvidia/pytorch:25.01-py3', entrypoint: ['/workspace/train.py'], ...props,
  });
  return { job, objects: Testing.synth(chart) as Manifest[] };
}

describe('samples: the reference cluster', () => {
  it('renders the samples folder', () => {
    expect(samplesOf()).toMatchSnapshot();
  });

  it('renders the 16-worker training cluster', () => {
    expect(renderSamples(trainingCluster()).folders[0].objects).toMatchSnapshot();
  });

  it('runs pods at the Kubernetes priority named like the Kueue priority, when the cluster renders those', () => {
    const high = samplesOf((d) => { d.samples.priority = 'high'; d.installs = { trainingOperator: 'preinstalled' }; });
    const job = findObject(high, 'MPIJob', 'nccl-all-reduce', 'default') as any;
    expect(job.metadata.labels['kueue.x-k8s.io/priority-class']).toBe('high');
    expect(podSpec(job, 'Worker').priorityClassName).toBe('high');
    expect(podSpec(findObject(high, 'PyTorchJob', 'pytorch-ddp', 'default'), 'Master').priorityClassName).toBe('high');
    const off = samplesOf((d) => { d.queueing.podPriorityClasses = false; });
    expect(podSpec(findObject(off, 'MPIJob', 'nccl-all-reduce', 'default'), 'Launcher').priorityClassName).toBeUndefined();
  });

  it('runs a 2-node all_reduce NCCL test over InfiniBand: 2 workers x 8 GPUs = 16 ranks', () => {
    const job = findObject(samplesOf(), 'MPIJob', 'nccl-all-reduce', 'default') as any;
    expect(job.spec.slotsPerWorker).toBe(8);
    expect(job.spec.mpiReplicaSpecs.Worker.replicas).toBe(2);
    expect(job.spec.launcherCreationPolicy).toBe('WaitForWorkersReady');
    expect(job.spec.runPolicy).toEqual({ suspend: true, cleanPodPolicy: 'Running', backoffLimit: 2, ttlSecondsAfterFinished: 86400 });
    const launcher = container(job, 'Launcher');
    expect(launcher.command).toEqual(['mpirun']);
    expect(launcher.args.slice(0, 2)).toEqual(['-np', '16']);
    expect(launcher.args.join(' ')).toContain('/opt/nccl_tests/build/all_reduce_perf -b 512M -e 8G -f 2 -g 1 -n 20');
    expect(launcher.resources.limits).toEqual({ cpu: '1', memory: '2Gi' });
    expect(envOf(launcher)).toMatchObject({
      NCCL_IB_HCA: '=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7',
      NCCL_SOCKET_IFNAME: 'eth0',
      NCCL_DEBUG: 'INFO',
      NCCL_IB_DISABLE: '0',
    });
    // Every NCCL variable reaches the ranks on the workers.
    for (const name of Object.keys(envOf(launcher)).filter((n) => n.startsWith('NCCL_'))) {
      expect(launcher.args.join(' ')).toContain(`-x ${name}`);
    }
    const worker = container(job, 'Worker');
    const expected = { 'cpu': '172', 'memory': '1620Gi', 'nvidia.com/gpu': '8', 'rdma/rdma_shared_device_a': '1' };
    expect(worker.resources).toEqual({ requests: expected, limits: expected });
    expect(worker.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { add: ['IPC_LOCK'] } });
    expect(worker.volumeMounts).toEqual([{ name: 'dshm', mountPath: '/dev/shm' }]);
    const pod = podSpec(job, 'Worker');
    expect(pod.volumes).toEqual([{ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '64Gi' } }]);
    expect(pod.nodeSelector).toEqual({ 'nvidia.com/gpu.present': 'true' });
    expect(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey).toBe('kubernetes.io/hostname');
    expect(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels)
      .toEqual(job.spec.mpiReplicaSpecs.Worker.template.metadata.labels);
    expect(job.metadata.labels).toMatchObject({ 'kueue.x-k8s.io/queue-name': 'default', 'kueue.x-k8s.io/priority-class': 'normal' });
  });

  it('renders the PyTorchJob only where a Training Operator serves it (the Instant Cluster has none)', () => {
    expect(samplesOf().filter((o) => o.kind === 'PyTorchJob' || o.metadata.name === 'pytorch-ddp-script')).toEqual([]);
    for (const mode of ['preinstalled', 'managed']) {
      expect(samplesOf((d) => { d.installs = { trainingOperator: mode }; }).map((o) => `${o.kind}/${o.metadata.name}`)).toContain('PyTorchJob/pytorch-ddp');
    }
  });

  it('queues a PyTorchJob: master + workers across the GPU nodes, torchrun with one process per GPU', () => {
    const objects = samplesOf((d) => { d.installs = { trainingOperator: 'preinstalled' }; });
    const job = findObject(objects, 'PyTorchJob', 'pytorch-ddp', 'default') as any;
    // created suspended: a Kueue without the pytorchjob integration never starts it outside the quota
    expect(job.spec.runPolicy.suspend).toBe(true);
    expect(job.spec.nprocPerNode).toBe('8');
    expect(job.spec.pytorchReplicaSpecs.Master.replicas).toBe(1);
    expect(job.spec.pytorchReplicaSpecs.Worker.replicas).toBe(1);
    expect(job.spec.elasticPolicy).toBeUndefined();
    expect(job.metadata.labels['kueue.x-k8s.io/queue-name']).toBe('default');
    for (const replica of ['Master', 'Worker']) {
      const c = container(job, replica);
      expect(c.name).toBe('pytorch');
      expect(c.command).toEqual(['torchrun']);
      expect(c.args).toEqual(['/opt/training/train.py']);
      expect(c.resources.limits).toMatchObject({ 'nvidia.com/gpu': '8', 'rdma/rdma_shared_device_a': '1' });
      expect(c.securityContext.capabilities.add).toEqual(['IPC_LOCK']);
      expect(envOf(c)).toMatchObject({ NCCL_IB_HCA: expect.stringMatching(/^=mlx5_0,/), NCCL_SOCKET_IFNAME: 'eth0', STEPS: '200' });
      expect(podSpec(job, replica).volumes[0]).toEqual({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '64Gi' } });
    }
    const script = findObject(objects, 'ConfigMap', 'pytorch-ddp-script', 'default') as any;
    expect(script.data['train.py']).toContain('DistributedDataParallel');
  });

  it('renders per-node checks pinned to a placeholder node that one substitution fills in', () => {
    const objects = samplesOf();
    const check = findObject(objects, 'MPIJob', `nccl-node-check-${NODE_NAME_PLACEHOLDER}`, 'default') as any;
    const dcgm = findObject(objects, 'Job', `dcgm-diag-${NODE_NAME_PLACEHOLDER}`, 'default') as any;
    // What `sed 's/<placeholder>/gpu-worker-7/g' <file> | kubectl create -f -` does to the files.
    const filled = [check, dcgm].map((o) => parse(toYaml(o).split(NODE_NAME_PLACEHOLDER).join('gpu-worker-7')));
    expect(filled.map((o) => o.metadata.name)).toEqual(['nccl-node-check-gpu-worker-7', 'dcgm-diag-gpu-worker-7']);
    expect(filled[0].spec.mpiReplicaSpecs.Worker.template.spec.nodeSelector['kubernetes.io/hostname']).toBe('gpu-worker-7');
    expect(filled[1].spec.template.spec.nodeSelector['kubernetes.io/hostname']).toBe('gpu-worker-7');
  });

  it('checks one node over NVLink only: 8 ranks, no InfiniBand, bounded run time', () => {
    const check = findObject(samplesOf(), 'MPIJob', `nccl-node-check-${NODE_NAME_PLACEHOLDER}`, 'default') as any;
    expect(check.spec.mpiReplicaSpecs.Worker.replicas).toBe(1);
    expect(check.spec.slotsPerWorker).toBe(8);
    expect(container(check, 'Launcher').args.slice(0, 2)).toEqual(['-np', '8']);
    expect(envOf(container(check, 'Launcher'))).toMatchObject({ NCCL_IB_DISABLE: '1', NCCL_P2P_LEVEL: 'NVL', NCCL_SHM_DISABLE: '1' });
    expect(envOf(container(check, 'Launcher')).NCCL_IB_HCA).toBeUndefined();
    expect(Object.keys(container(check, 'Worker').resources.limits)).toEqual(['cpu', 'memory', 'nvidia.com/gpu']);
    expect(check.spec.runPolicy).toMatchObject({ activeDeadlineSeconds: 1800, backoffLimit: 0 });
  });

  it('checks a node without an NVLink fabric (L40S) with a plain single-node run: NCCL picks PCIe or shared memory', () => {
    const check = findObject(samplesOf((d) => { d.nodes.gpuWorkers.gpuProduct = 'NVIDIA-L40S'; }), 'MPIJob', `nccl-node-check-${NODE_NAME_PLACEHOLDER}`, 'default') as any;
    const env = envOf(container(check, 'Launcher'));
    expect(env).toMatchObject({ NCCL_IB_DISABLE: '1' });
    expect(env.NCCL_P2P_LEVEL).toBeUndefined();
    expect(env.NCCL_SHM_DISABLE).toBeUndefined();
    expect(container(check, 'Launcher').args.slice(0, 2)).toEqual(['-np', '8']);
  });

  it('keeps NCCL on its built-in transports: the nccl-tests image ships HPC-X\'s net plugin', () => {
    for (const job of samplesOf().filter((o) => o.kind === 'MPIJob') as any[]) {
      const launcher = container(job, 'Launcher');
      expect(envOf(launcher).NCCL_NET_PLUGIN, job.metadata.name).toBe('none');
      expect(launcher.args.join(' '), job.metadata.name).toContain('-x NCCL_NET_PLUGIN');
    }
  });

  it('knows which GPU products share an NVLink fabric (unknown ones do not, MIG suffixes ignored)', () => {
    const nvlink = (product: string) => gpuProductFacts(product).nvlink;
    for (const p of ['NVIDIA-H100-80GB-HBM3', 'NVIDIA-H200', 'NVIDIA-H200-141GB-HBM3e', 'NVIDIA-B200', 'NVIDIA-A100-SXM4-80GB', 'NVIDIA-H100-80GB-HBM3-MIG-1g.10gb']) {
      expect(nvlink(p), p).toBe(true);
    }
    for (const p of ['NVIDIA-L40S', 'NVIDIA-L4', 'NVIDIA-A10', 'NVIDIA-L40', 'NVIDIA-H100-PCIe', 'NVIDIA-H100-NVL', 'NVIDIA-A100-PCIE-40GB', 'NVIDIA-A100-80GB-PCIe', 'Tesla-T4']) {
      expect(nvlink(p), p).toBe(false);
    }
    expect(gpuProductFacts('Tesla-T4').family).toBeUndefined();
    expect(() => ncclTest({ model: modelOf((d) => { d.nodes.gpuWorkers.gpuProduct = 'NVIDIA-L40S'; }), workers: 1, fabric: 'nvlink' }))
      .toThrow(/^fabric: "nvlink" needs GPUs on an NVLink fabric, and NVIDIA-L40S \(nodes.gpuWorkers.gpuProduct\) is L40S, without one/);
  });

  it('runs the DCGM diagnostic at the described level, never retried', () => {
    const job = findObject(samplesOf((d) => { d.samples.dcgmDiag = { level: 3 }; }), 'Job', `dcgm-diag-${NODE_NAME_PLACEHOLDER}`, 'default') as any;
    expect(job.spec.backoffLimit).toBe(0);
    expect(job.spec.suspend).toBe(true);
    expect(job.spec.activeDeadlineSeconds).toBe(7200);
    const c = job.spec.template.spec.containers[0];
    expect(c.command.join(' ')).toContain('dcgmi diag -r 3');
    expect(c.resources.limits['nvidia.com/gpu']).toBe('8');
    // the DCGM of the pinned GPU Operator release, and the capability its host engine needs (never privileged)
    expect(c.image).toBe('nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04');
    expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { add: ['SYS_ADMIN'] } });
    expect(job.metadata.labels['kueue.x-k8s.io/queue-name']).toBe('default');
  });

  it('renders one check per node when the description names the nodes', () => {
    const objects = samplesOf((d) => { d.samples.nodeNames = ['gpu-a', 'gpu-b.cluster.local']; });
    const names = objects.filter((o) => o.kind !== 'ConfigMap').map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(names).toEqual([
      'Job/dcgm-diag-gpu-a', 'Job/dcgm-diag-gpu-b-cluster-local',
      'MPIJob/nccl-all-reduce', 'MPIJob/nccl-node-check-gpu-a', 'MPIJob/nccl-node-check-gpu-b-cluster-local',
    ]);
    const b = findObject(objects, 'Job', 'dcgm-diag-gpu-b-cluster-local') as any;
    expect(b.spec.template.spec.nodeSelector['kubernetes.io/hostname']).toBe('gpu-b.cluster.local');
  });

  it('follows the description: benchmark, sizes, namespace, priority', () => {
    const objects = samplesOf((d) => {
      d.samples.namespace = 'research';
      d.samples.priority = 'high';
      d.samples.ncclTests = { ...d.samples.ncclTests, benchmark: 'alltoall_perf', minBytes: '8', maxBytes: '1G', stepFactor: 4, iterations: 50, ncclDebug: 'WARN', shmSize: '32Gi' };
    });
    const job = findObject(objects, 'MPIJob', 'nccl-alltoall', 'research') as any;
    expect(container(job, 'Launcher').args.join(' ')).toContain('/opt/nccl_tests/build/alltoall_perf -b 8 -e 1G -f 4 -g 1 -n 50');
    expect(envOf(container(job, 'Launcher')).NCCL_DEBUG).toBe('WARN');
    expect(podSpec(job, 'Worker').volumes[0].emptyDir.sizeLimit).toBe('32Gi');
    for (const o of objects.filter((m) => m.kind !== 'ConfigMap')) {
      // the DCGM diagnostic (SYS_ADMIN, refused in a tenant namespace) stays in "default", through its LocalQueue
      const diag = o.kind === 'Job';
      expect(o.metadata.namespace).toBe(diag ? 'default' : 'research');
      // the tenant namespace's own LocalQueue (named after the tenant)
      expect(o.metadata.labels).toMatchObject({ 'kueue.x-k8s.io/queue-name': diag ? 'default' : 'research', 'kueue.x-k8s.io/priority-class': 'high' });
    }
  });

  it('uses sockets and no RDMA on a cluster without InfiniBand', () => {
    const objects = samplesOf((d) => { delete d.network.infiniband; });
    const job = findObject(objects, 'MPIJob', 'nccl-all-reduce') as any;
    expect(envOf(container(job, 'Launcher'))).toMatchObject({ NCCL_IB_DISABLE: '1' });
    expect(Object.keys(container(job, 'Worker').resources.limits)).toEqual(['cpu', 'memory', 'nvidia.com/gpu']);
    expect(container(job, 'Worker').securityContext).toEqual({ allowPrivilegeEscalation: false });
  });

  it.skipIf(!HAS_SCHEMAS)('passes strict validation against MPIJob v2beta1, PyTorchJob v1 and batch/v1', () => {
    expect(schemaErrors(renderSamples(modelOf()))).toEqual([]);
    expect(schemaErrors(renderSamples(trainingCluster()))).toEqual([]);
    expect(schemaErrors(renderSamples(modelOf((d) => { d.samples.nodeNames = ['gpu-a', 'gpu-b']; delete d.network.infiniband; })))).toEqual([]);
    const elastic = Testing.chart();
    new PyTorchTrainingJob(elastic, 'Elastic', {
      model: modelOf(), name: 'elastic', image: 'nvcr.io/nvidia/pytorch:25.01-py3', script: 'print(1)', elastic: { minNodes: 1, maxNodes: 2 },
    });
    const objects = Testing.synth(elastic) as Manifest[];
    expect(schemaErrors({ name: 'x', model: modelOf(), folders: [{ folder: 'samples', description: '', objects }] })).toEqual([]);
  });
});

describe('samples: sizes follow the description', () => {
  const sizes = [1, 2, 16, 128].flatMap((count) => [4, 8].map((gpus) => [count, gpus] as const));

  it.each(sizes)('%i workers x %i GPUs', (count, gpus) => {
    const model = modelOf((d) => { d.nodes.gpuWorkers.count = count; d.nodes.gpuWorkers.gpusPerNode = gpus; d.tenants = []; d.installs = { trainingOperator: 'preinstalled' }; });
    const objects = renderSamples(model).folders[0].objects;
    const nccl = findObject(objects, 'MPIJob', 'nccl-all-reduce') as any;
    expect(nccl.spec.mpiReplicaSpecs.Worker.replicas).toBe(count);
    expect(nccl.spec.slotsPerWorker).toBe(gpus);
    expect(container(nccl, 'Launcher').args.slice(0, 2)).toEqual(['-np', String(count * gpus)]);
    expect(container(nccl, 'Worker').resources.limits['nvidia.com/gpu']).toBe(String(gpus));
    const check = findObject(objects, 'MPIJob', `nccl-node-check-${NODE_NAME_PLACEHOLDER}`) as any;
    expect(container(check, 'Launcher').args.slice(0, 2)).toEqual(['-np', String(gpus)]);
    const torch = findObject(objects, 'PyTorchJob', 'pytorch-ddp') as any;
    expect(torch.spec.nprocPerNode).toBe(String(gpus));
    expect(torch.spec.pytorchReplicaSpecs.Master.replicas).toBe(1);
    expect(torch.spec.pytorchReplicaSpecs.Worker?.replicas ?? 0).toBe(count - 1);
    if (HAS_SCHEMAS) expect(schemaErrors(renderSamples(model))).toEqual([]);
  });

  it('sizes a worker\'s CPU and memory as its share of the node', () => {
    const { objects } = ncclTest({ model: modelOf(sized(2, 8)), gpusPerWorker: 4 });
    const worker = container(objects[0], 'Worker');
    // 90% of 192 cores and 1800Gi, halved for 4 of 8 GPUs.
    expect(worker.resources.limits).toMatchObject({ 'cpu': '86', 'memory': '810Gi', 'nvidia.com/gpu': '4' });
    expect((objects[0] as any).spec.slotsPerWorker).toBe(4);
    expect(container(objects[0], 'Launcher').args.slice(0, 2)).toEqual(['-np', '8']);
  });

  it('runs a smaller NCCL test on fewer workers than the cluster has', () => {
    const { test } = ncclTest({ model: modelOf(sized(16, 8)), workers: 4 });
    expect([test.workers, test.gpusPerWorker, test.ranks]).toEqual([4, 8, 32]);
  });

  it('makes an elastic PyTorchJob of workers only, within the bounds', () => {
    const { objects } = pytorchJob({ model: modelOf(sized(16, 8)), nodes: 8, elastic: { minNodes: 4, maxNodes: 16 } });
    const job = objects.find((o) => o.kind === 'PyTorchJob') as any;
    expect(job.spec.elasticPolicy).toEqual({ rdzvBackend: 'c10d', minReplicas: 4, maxReplicas: 16, maxRestarts: 3 });
    expect(Object.keys(job.spec.pytorchReplicaSpecs)).toEqual(['Worker']);
    expect(job.spec.pytorchReplicaSpecs.Worker.replicas).toBe(8);
    expect(objects.map((o) => o.kind)).toEqual(['PyTorchJob']);
  });
});

describe('samples: errors', () => {
  it.each<[string, Partial<NcclTestProps> & { model?: ClusterModel }, RegExp]>([
    ['more nodes than the cluster has', { workers: 3 }, /^workers: 3 nodes requested but the cluster has 2 GPU workers/],
    ['more GPUs per worker than a node has', { gpusPerWorker: 9 }, /^gpusPerWorker: 9 GPUs per node requested but a node has 8/],
    ['no InfiniBand when it is required', { fabric: 'socket' }, /^fabric: a multi-node NCCL job without InfiniBand, but network.infiniband.required is true/],
    ['InfiniBand on a cluster without it', { model: modelOf((d) => { delete d.network.infiniband; }), fabric: 'infiniband' }, /^fabric: "infiniband" needs network.infiniband/],
    ['NVLink across nodes', { fabric: 'nvlink' }, /^fabric: "nvlink" connects the GPUs of one node only, got 2 nodes/],
    ['a queue no LocalQueue has', { queue: 'fast' }, /^queue: no LocalQueue "fast" in namespace "default"/],
    ['a namespace without a LocalQueue', { namespace: 'kube-system' }, /^namespace: "kube-system" has no LocalQueue; use one of default, research, inference/],
    ['an unknown priority', { priority: 'urgent' }, /^priority: unknown priority class "urgent"/],
    ['an image tagged latest', { image: 'ghcr.io/coreweave/nccl-tests:latest' }, /^image: image tag "latest" is not allowed/],
    ['an image without a tag', { image: 'ghcr.io/coreweave/nccl-tests' }, /^image: expected a pinned image reference/],
    ['a node name for several workers', { nodeName: 'gpu-1' }, /^nodeName: pins one worker to a node, but workers is 2/],
    ['min above max bytes', { minBytes: '16G' }, /^minBytes: 16G is larger than maxBytes 8G/],
    ['a malformed size', { maxBytes: '8GB' }, /^maxBytes: expected a message size/],
    ['/dev/shm larger than the pod', { shmSize: '2000Gi' }, /^shmSize: \/dev\/shm of 2000Gi must be positive and smaller than the pod's memory limit 1620Gi/],
  ])('NcclTest: %s', (_, props, message) => {
    expect(() => ncclTest(props)).toThrow(message);
  });

  it('NcclTest passes the 1-worker case without InfiniBand even when IB is required', () => {
    expect(ncclTest({ workers: 1, fabric: 'socket' }).test.ranks).toBe(8);
  });

  it.each<[string, Partial<PyTorchTrainingJobProps>, RegExp]>([
    ['more nodes than the cluster has', { nodes: 5 }, /^nodes: 5 nodes requested but the cluster has 2 GPU workers/],
    ['more GPUs per node than a node has', { gpusPerNode: 16 }, /^gpusPerNode: 16 GPUs per node requested/],
    ['an image tagged latest', { image: 'nvcr.io/nvidia/pytorch:latest' }, /^image: image tag "latest"/],
    ['a queue no LocalQueue has', { queue: 'other' }, /^queue: no LocalQueue "other"/],
    ['both a script and an entrypoint', { script: 'print(1)' }, /^script, entrypoint: give exactly one/],
    ['elastic bounds above the cluster', { elastic: { minNodes: 1, maxNodes: 3 } }, /^elastic.maxNodes: 3 nodes requested but the cluster has 2/],
    ['nodes outside the elastic bounds', { nodes: 1, elastic: { minNodes: 2, maxNodes: 2 } }, /^nodes: 1 lies outside elastic.minNodes..elastic.maxNodes \(2..2\)/],
  ])('PyTorchTrainingJob: %s', (_, props, message) => {
    expect(() => pytorchJob(props)).toThrow(message);
  });

  it('DcgmDiagnostic: more GPUs than a node has, an unpinned image', () => {
    const model = modelOf();
    expect(() => new DcgmDiagnostic(Testing.chart(), 'D', { model, name: 'd', image: 'nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04', gpus: 9 })).toThrow(/^gpus: 9 GPUs per node requested but a node has 8/);
    expect(() => new DcgmDiagnostic(Testing.chart(), 'D', { model, name: 'd', image: 'nvcr.io/nvidia/cloud-native/dcgm' })).toThrow(/^image: expected a pinned image reference/);
  });

  it.each<[string, Edit, string, RegExp]>([
    ['a queue no LocalQueue has', (d) => { d.samples.queue = 'fast'; }, 'samples.queue', /no LocalQueue "fast" in namespace "default": its LocalQueue is "default"/],
    ['the default namespace\'s queue in a tenant namespace', (d) => { d.samples.namespace = 'research'; d.samples.queue = 'default'; }, 'samples.queue', /no LocalQueue "default" in namespace "research": its LocalQueue is "research"/],
    ['a namespace without a LocalQueue', (d) => { d.samples.namespace = 'scratch'; }, 'samples.namespace', /namespace "scratch" has no LocalQueue; use one of default, research, inference/],
    ['an unknown priority', (d) => { d.samples.priority = 'urgent'; }, 'samples.priority', /unknown priority "urgent"/],
    ['more node names than nodes', (d) => { d.samples.nodeNames = ['a', 'b', 'c']; }, 'samples.nodeNames', /3 node names but nodes.gpuWorkers.count is 2/],
    ['a duplicate node name', (d) => { d.samples.nodeNames = ['a', 'a']; }, 'samples.nodeNames[1]', /duplicate node name "a"/],
    ['a malformed message size', (d) => { d.samples.ncclTests.maxBytes = '8 GB'; }, 'samples.ncclTests.maxBytes', /expected a message size/],
    ['a sample image tagged latest', (d) => { d.samples.pytorch = { image: 'nvcr.io/nvidia/pytorch:latest' }; }, 'samples.pytorch.image', /latest/],
  ])('description: %s', (_, edit, field, message) => {
    let error: unknown;
    try {
      modelOf(edit);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DescriptionError);
    const issue = (error as DescriptionError).issues.find((i) => i.path === field);
    expect(issue?.message).toMatch(message);
  });

  it('names the node whose check name would be too long', () => {
    const model = modelOf((d) => { d.samples.nodeNames = ['gpu-node-with-a-very-long-name-that-goes-on-and-on-and-on']; });
    expect(() => renderSamples(model)).toThrow(/^samples.nodeNames\[0\]: "gpu-node-with-a-very-long-name-that-goes-on-and-on-and-on" makes the check name/);
  });
});

describe('samples in a tenant namespace (the reference cluster with samples.namespace research)', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'tenant-samples-'));
  const out = path.join(work, 'dist');
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const file = path.join(work, 'tenant-samples.yaml');
  const d = referenceInput();
  writeFileSync(file, stringify({ ...d, name: 'tenant-samples', gitops: { ...d.gitops, path: 'dist/tenant-samples' }, samples: { ...d.samples, namespace: 'research' } }));
  const rendered = () => {
    expect(main(['synth', '--config', file, '--out', out, '--no-validate', '--quiet'])).toBe(EXIT.ok);
    return readClusters(out)[0];
  };
  const inSamples = (view: ClusterView) => view.folders.find((f) => f.folder === 'samples')!.objects;
  const queueOf = (o: Manifest) => o.metadata.labels?.['kueue.x-k8s.io/queue-name'];

  it('renders: the queued samples in the tenant namespace through its LocalQueue; the DCGM diagnostic in "default" through queueing.defaultQueue, with SYS_ADMIN', () => {
    const view = rendered();
    const objects = inSamples(view);
    const placed = objects.filter((o) => o.kind !== 'ConfigMap').map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name} queue ${queueOf(o)}`);
    expect(placed.sort()).toEqual([
      'Job default/dcgm-diag-replace-with-node-name queue default',
      'MPIJob research/nccl-all-reduce queue research',
      'MPIJob research/nccl-node-check-replace-with-node-name queue research',
    ]);
    const dcgm = findObject(objects, 'Job', 'dcgm-diag-replace-with-node-name', 'default') as any;
    expect(dcgm.spec.template.spec.containers[0].securityContext.capabilities.add).toEqual(['SYS_ADMIN']);
    // the cluster's README says where it runs and why
    expect(readFileSync(path.join(out, view.name, 'README.md'), 'utf8'))
      .toContain('In `default`, not in the samples\' namespace `research`: it needs SYS_ADMIN, which a tenant namespace refuses. Queued through LocalQueue `default/default`.');
    // the cross-object rules pass; in the tenant namespace the same Job would be refused by its guardrails (why it stays out)
    expect(checkCluster(view).filter((f) => f.severity === 'error')).toEqual([]);
    const moved: ClusterView = {
      ...view,
      folders: view.folders.map((f) => (f.folder !== 'samples' ? f : {
        ...f,
        objects: f.objects.map((o) => (o.kind === 'Job' ? { ...o, metadata: { ...o.metadata, namespace: 'research', labels: { ...o.metadata.labels, 'kueue.x-k8s.io/queue-name': 'research' } } } : o)),
      })),
    };
    expect(checkCluster(moved).filter((f) => f.severity === 'error').map((f) => `${f.rule}: ${f.message}`)).toEqual([
      expect.stringMatching(/^tenant-guardrails-admit: Job research\/dcgm-diag-replace-with-node-name: .* is refused by ValidatingAdmissionPolicy tenant-pod-guardrails: tenant containers may add only these capabilities: /),
    ]);
  });

  it.skipIf(!HAS_UPSTREAM || !HAS_SCHEMAS)('passes check (every Application source rendered by the real engines)', async () => {
    rendered();
    const err: string[] = [];
    expect(await main(['check', out], { out: () => {}, err: (l) => err.push(l) }), err.join('\n')).toBe(EXIT.ok);
  });
});
