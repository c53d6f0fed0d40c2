import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { samples } from '../../src/components/samples/chart';
import { loadDescription } from '../../src/model/load';
import { buildModel, ClusterModel } from '../../src/model/model';
import { parseQuantity } from '../../src/model/quantity';
import { Manifest } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { modelOf, TRAINING_FILE } from '../helpers';

/**
 * An independent check of the rendered samples: it reads only the rendered objects and the raw
 * description/model facts, never the constructs' own values.
 */

interface PodSet {
  readonly job: string;
  readonly role: string;
  readonly replicas: number;
  readonly spec: any;
}

function podSets(o: any): PodSet[] {
  const job = `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
  if (o.kind === 'Job') return [{ job, role: 'Job', replicas: o.spec.parallelism ?? 1, spec: o.spec.template.spec }];
  const specs = o.kind === 'MPIJob' ? o.spec.mpiReplicaSpecs : o.kind === 'PyTorchJob' ? o.spec.pytorchReplicaSpecs : undefined;
  if (!specs) return [];
  return Object.entries(specs).map(([role, r]: [string, any]) => ({ job, role, replicas: r.replicas ?? 1, spec: r.template.spec }));
}

const gpusOf = (set: PodSet) => set.spec.containers.reduce((n: number, c: any) => n + Number(c.resources?.limits?.['nvidia.com/gpu'] ?? 0), 0);

/** Every problem the checker finds in the samples of one model. */
function check(model: ClusterModel, objects: readonly Manifest[]): string[] {
  const problems: string[] = [];
  const d = model.description;
  const workloads = objects.filter((o) => ['MPIJob', 'PyTorchJob', 'Job'].includes(o.kind));
  // What the cohort of all ClusterQueues holds, per resource (Kueue admits nothing larger).
  const cohort: Record<string, number> = {
    'cpu': model.queueing.queues.reduce((s, q) => s + parseQuantity(q.quota.cpu), 0),
    'memory': model.queueing.queues.reduce((s, q) => s + parseQuantity(q.quota.memory), 0),
    'nvidia.com/gpu': model.queueing.queues.reduce((s, q) => s + q.quota.gpus, 0),
  };
  const rdmaName = d.network.infiniband && `rdma/${d.network.infiniband.rdmaSharedDevice.name}`;
  if (rdmaName && d.queueing.rdma === 'covered') cohort[rdmaName] = model.queueing.queues.reduce((s, q) => s + q.quota.rdma, 0);

  for (const o of workloads as any[]) {
    const job = `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
    const queueName = o.metadata.labels?.['kueue.x-k8s.io/queue-name'];
    const queue = model.queueing.queues.find((q) => q.namespace === o.metadata.namespace && q.localQueue === queueName);
    if (!queue) problems.push(`${job}: no LocalQueue "${queueName}" in namespace ${o.metadata.namespace}`);
    // Only Kueue may start it: a Kueue without the kind's integration must leave it suspended, not run it outside the quota.
    const suspended = o.kind === 'Job' ? o.spec.suspend : o.spec.runPolicy?.suspend;
    if (suspended !== true) problems.push(`${job}: not created suspended`);

    const sets = podSets(o);
    const total: Record<string, number> = {};
    for (const set of sets) {
      for (const c of [...set.spec.containers, ...(set.spec.initContainers ?? [])]) {
        const sc = c.securityContext ?? {};
        if (sc.privileged) problems.push(`${job} ${set.role}/${c.name}: privileged`);
        if (sc.allowPrivilegeEscalation === true) problems.push(`${job} ${set.role}/${c.name}: allows privilege escalation`);
        if (!/:[^/:@]+(@sha256:[a-f0-9]{64})?$|@sha256:[a-f0-9]{64}$/.test(c.image) || /:latest(@|$)/.test(c.image)) {
          problems.push(`${job} ${set.role}/${c.name}: image "${c.image}" is not pinned`);
        }
        const requests = c.resources?.requests ?? {};
        const limits = c.resources?.limits ?? {};
        for (const [name, value] of Object.entries<string>(limits)) {
          if (name.includes('/') && requests[name] !== value) problems.push(`${job} ${set.role}/${c.name}: ${name} request ${requests[name]} != limit ${value}`);
          total[name] = (total[name] ?? 0) + set.replicas * parseQuantity(value);
        }
        const ib = Object.keys(limits).some((n) => n.startsWith('rdma/'));
        if (ib && !sc.capabilities?.add?.includes('IPC_LOCK')) problems.push(`${job} ${set.role}/${c.name}: RDMA without IPC_LOCK`);
        if (ib && rdmaName && !(rdmaName in limits)) problems.push(`${job} ${set.role}/${c.name}: RDMA resource is not ${rdmaName}`);
      }
      if (set.spec.hostNetwork) problems.push(`${job} ${set.role}: hostNetwork`);
      if (gpusOf(set) > d.nodes.gpuWorkers.gpusPerNode) problems.push(`${job} ${set.role}: ${gpusOf(set)} GPUs in one pod, a node has ${d.nodes.gpuWorkers.gpusPerNode}`);
      if (gpusOf(set) > 0 && !set.spec.volumes?.some((v: any) => v.emptyDir?.medium === 'Memory') && o.kind !== 'Job') {
        problems.push(`${job} ${set.role}: no memory-backed /dev/shm`);
      }
    }
    for (const [name, amount] of Object.entries(total)) {
      const excluded = name.startsWith('rdma/') && d.queueing.rdma === 'excluded';
      if (excluded) continue;
      if (!(name in cohort)) problems.push(`${job}: requests ${name}, which no ClusterQueue covers`);
      else if (amount > cohort[name]) problems.push(`${job}: requests ${amount} ${name}, the cohort has ${cohort[name]}`);
    }

    // Ranks: one per GPU, and as many as mpirun / torchrun start.
    const gpus = sets.reduce((n, s) => n + s.replicas * gpusOf(s), 0);
    if (o.kind === 'MPIJob') {
      const args: string[] = o.spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].args;
      const np = Number(args[args.indexOf('-np') + 1]);
      const workers = o.spec.mpiReplicaSpecs.Worker.replicas;
      if (np !== workers * o.spec.slotsPerWorker) problems.push(`${job}: -np ${np} != ${workers} workers x ${o.spec.slotsPerWorker} slots`);
      if (np !== gpus) problems.push(`${job}: -np ${np} != ${gpus} GPUs`);
      if (gpusOf(sets.find((s) => s.role === 'Launcher')!) > 0) problems.push(`${job}: the launcher takes GPUs`);
    }
    if (o.kind === 'PyTorchJob') {
      const pods = sets.reduce((n, s) => n + s.replicas, 0);
      const world = pods * Number(o.spec.nprocPerNode);
      if (world !== gpus) problems.push(`${job}: world size ${world} != ${gpus} GPUs`);
    }
  }

  // The multi-node tests span every GPU worker: ranks = workers x GPUs per node.
  const ranks = d.nodes.gpuWorkers.count * d.nodes.gpuWorkers.gpusPerNode;
  const allReduce: any = (workloads as any[]).find((o) => o.kind === 'MPIJob' && o.spec.mpiReplicaSpecs.Worker.replicas === d.nodes.gpuWorkers.count && !o.metadata.name.includes('node-check'));
  if (!allReduce) problems.push('no NCCL test over all GPU workers');
  else if (!allReduce.spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].args.join(' ').startsWith(`-np ${ranks} `)) problems.push(`the NCCL test does not run ${ranks} ranks`);
  // A PyTorchJob exactly where a Training Operator serves the kind.
  const torch: any = workloads.find((o) => o.kind === 'PyTorchJob');
  const trainingOperator = d.installs.trainingOperator !== 'none';
  if (torch && !trainingOperator) problems.push('a PyTorchJob, but installs.trainingOperator is "none"');
  if (!torch && trainingOperator) problems.push('no PyTorchJob');
  else if (torch && podSets(torch).reduce((n, s) => n + s.replicas, 0) * Number(torch.spec.nprocPerNode) !== ranks) problems.push(`the PyTorchJob does not span ${ranks} GPUs`);
  return problems;
}

const samplesOf = (model: ClusterModel) => renderCluster(model, [samples], []).folders[0].objects;

describe('independent check of the samples', () => {
  it('passes for the reference cluster', () => {
    const model = modelOf();
    expect(check(model, samplesOf(model))).toEqual([]);
  });

  it('passes for the training cluster', () => {
    const model = buildModel(loadDescription(TRAINING_FILE));
    expect(check(model, samplesOf(model))).toEqual([]);
  });

  it.each([[1, 4], [2, 8], [16, 8], [128, 4], [128, 8]])('passes for %i workers x %i GPUs', (count, gpus) => {
    const model = modelOf((d) => {
      d.nodes.gpuWorkers.count = count;
      d.nodes.gpuWorkers.gpusPerNode = gpus;
      d.tenants = [];
    });
    expect(check(model, samplesOf(model))).toEqual([]);
  });

  it('passes with the RDMA prefix excluded from Kueue and with node names', () => {
    const model = modelOf((d) => {
      d.installs = { kueue: 'managed' };
      d.queueing = { ...d.queueing, rdma: 'excluded' };
      d.samples.nodeNames = ['gpu-1', 'gpu-2'];
    });
    expect(check(model, samplesOf(model))).toEqual([]);
  });

  it('passes where a Training Operator is pre-installed (the PyTorchJob sample is rendered)', () => {
    const model = modelOf((d) => { d.installs = { trainingOperator: 'preinstalled' }; });
    expect(samplesOf(model).map((o) => o.kind)).toContain('PyTorchJob');
    expect(check(model, samplesOf(model))).toEqual([]);
  });

  it('catches what it is meant to catch', () => {
    const model = modelOf((d) => { d.installs = { trainingOperator: 'preinstalled' }; });
    const objects = structuredClone(samplesOf(model)) as any[];
    const job = objects.find((o) => o.metadata.name === 'nccl-all-reduce');
    job.spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].args[1] = '8';
    job.spec.mpiReplicaSpecs.Worker.template.spec.containers[0].securityContext = { privileged: true };
    job.metadata.labels['kueue.x-k8s.io/queue-name'] = 'missing';
    delete job.spec.runPolicy.suspend;
    const torch = objects.find((o) => o.kind === 'PyTorchJob');
    torch.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].image = 'nvcr.io/nvidia/pytorch:latest';
    torch.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.limits['example.com/fpga'] = '1';
    expect(check(model, objects)).toEqual([
      'MPIJob default/nccl-all-reduce: no LocalQueue "missing" in namespace default',
      'MPIJob default/nccl-all-reduce: not created suspended',
      'MPIJob default/nccl-all-reduce Worker/worker: privileged',
      'MPIJob default/nccl-all-reduce Worker/worker: RDMA without IPC_LOCK',
      'MPIJob default/nccl-all-reduce: -np 8 != 2 workers x 8 slots',
      'MPIJob default/nccl-all-reduce: -np 8 != 16 GPUs',
      'PyTorchJob default/pytorch-ddp Master/pytorch: image "nvcr.io/nvidia/pytorch:latest" is not pinned',
      'PyTorchJob default/pytorch-ddp Worker/pytorch: example.com/fpga request undefined != limit 1',
      'PyTorchJob default/pytorch-ddp: requests example.com/fpga, which no ClusterQueue covers',
      'the NCCL test does not run 16 ranks',
    ]);
    const none = modelOf();
    expect(check(none, [...samplesOf(none), torch])).toContain('a PyTorchJob, but installs.trainingOperator is "none"');
  });
});
