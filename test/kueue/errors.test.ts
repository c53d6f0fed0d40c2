import { Chart, Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { KueueClusterQueue } from '../../src/components/kueue/cluster-queue';
import { KueueResourceFlavor } from '../../src/components/kueue/resource-flavor';
import { KueueWorkloadPriorityClass } from '../../src/components/kueue/workload-priority-class';
import { issuesOf } from '../helpers';


describe('queueing and tenant errors name the field', () => {
  it('accepts the reference description', () => {
    expect(issuesOf(() => {})).toEqual([]);
  });

  it('rejects tenant quotas above the cluster\'s GPUs at the tenant that overflows', () => {
    expect(issuesOf((d) => { d.tenants.push({ name: 'vision', gpus: 8 }); })).toEqual([
      { path: 'tenants[2].gpus', message: expect.stringContaining('tenants claim 20 GPUs but the cluster has 16 (2 x 8)') },
    ]);
  });

  it('lets borrowing-only tenants exceed the cluster', () => {
    expect(issuesOf((d) => { d.tenants.push({ name: 'interns', gpus: 64, borrowingOnly: true }); })).toEqual([]);
  });

  it('rejects duplicate tenant names', () => {
    expect(issuesOf((d) => { d.tenants[1] = { name: 'research', gpus: 4, namespace: 'research-2' }; })).toEqual([
      { path: 'tenants[1].name', message: expect.stringContaining('duplicate tenant name "research"') },
    ]);
  });

  it('rejects a tenant namespace that collides with a system namespace', () => {
    expect(issuesOf((d) => { d.tenants[1].namespace = 'kueue-system'; })).toEqual([
      { path: 'tenants[1].namespace', message: 'tenant namespace "kueue-system" collides with a system namespace' },
    ]);
    expect(issuesOf((d) => { d.tenants[1].name = 'kube-tenant'; })).toEqual([
      { path: 'tenants[1].name', message: 'tenant namespace "kube-tenant" collides with a system namespace' },
    ]);
  });

  it('rejects a tenant named like the default ClusterQueue', () => {
    expect(issuesOf((d) => { d.tenants[1] = { name: 'default', gpus: 4, namespace: 'team-default' }; })).toEqual([
      { path: 'tenants[1].name', message: expect.stringContaining('is the default ClusterQueue\'s name') },
    ]);
  });

  it('rejects priority values out of range and reserved or duplicate names', () => {
    expect(issuesOf((d) => { d.queueing.priorities[2].value = 2_000_000_000; })).toEqual([
      { path: 'queueing.priorities[2].value', message: expect.stringContaining('at most 1000000000') },
    ]);
    expect(issuesOf((d) => { d.queueing.priorities[0].value = -2_147_483_649; })).toEqual([
      { path: 'queueing.priorities[0].value', message: expect.stringContaining('from -2147483648') },
    ]);
    expect(issuesOf((d) => { d.queueing.priorities[0].name = 'system-low'; })).toEqual([
      { path: 'queueing.priorities[0].name', message: expect.stringContaining('reserves') },
    ]);
    expect(issuesOf((d) => { d.queueing.priorities[2].default = true; })).toEqual([
      { path: 'queueing.priorities', message: 'at most one priority may be the default, got normal, high' },
    ]);
  });

  it('rejects a sample queue or namespace without a LocalQueue', () => {
    expect(issuesOf((d) => { d.samples.queue = 'batch'; })).toEqual([
      { path: 'samples.queue', message: 'no LocalQueue "batch" in namespace "default": its LocalQueue is "default"' },
    ]);
    expect(issuesOf((d) => { d.samples.namespace = 'scratch'; })).toEqual([
      { path: 'samples.namespace', message: expect.stringContaining('has no LocalQueue') },
    ]);
    expect(issuesOf((d) => { d.samples.namespace = 'research'; })).toEqual([]);
  });

  it('rejects limits Kueue would reject', () => {
    expect(issuesOf((d) => { d.tenants[1].lendingLimit = 5; })).toEqual([
      { path: 'tenants[1].lendingLimit', message: expect.stringContaining('exceeds the tenant\'s nominal quota of 4 GPUs') },
    ]);
    expect(issuesOf((d) => { d.tenants.push({ name: 'interns', gpus: 8, borrowingOnly: true, borrowingLimit: 4 }); })).toEqual([
      { path: 'tenants[2].borrowingLimit', message: expect.stringContaining('drop borrowingLimit') },
    ]);
  });

  it('needs a managed Kueue for what lives in its configuration', () => {
    expect(issuesOf((d) => { d.queueing.fairSharing = true; })).toEqual([
      { path: 'queueing.fairSharing', message: expect.stringContaining('installs.kueue: managed') },
    ]);
    expect(issuesOf((d) => { d.queueing.rdma = 'excluded'; })).toEqual([
      { path: 'queueing.rdma', message: expect.stringContaining('installs.kueue: managed') },
    ]);
  });

  it('rejects topologies Kueue cannot use with tainted workers', () => {
    expect(issuesOf((d) => { d.queueing.topology = { levels: ['rack', 'rack'] }; })).toEqual([
      { path: 'queueing.topology.levels[1]', message: 'duplicate topology level "rack"' },
    ]);
    expect(issuesOf((d) => {
      d.nodes.gpuWorkers.taints = [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }];
      d.queueing.topology = { levels: ['kubernetes.io/hostname', 'rack'] };
    })).toEqual([
      { path: 'queueing.topology.levels[1]', message: expect.stringContaining('lowest topology level is "kubernetes.io/hostname"') },
    ]);
  });

  it('rejects a fair-sharing weight out of range', () => {
    expect(issuesOf((d) => { d.tenants[0].fairSharingWeight = -1; })).toEqual([
      { path: 'tenants[0].fairSharingWeight', message: expect.stringContaining('from 0 to 1000') },
    ]);
  });
});

describe('construct props errors name the prop', () => {
  const chart = () => new Chart(Testing.app(), 'test');

  it('ClusterQueue: resources out of the covered order, lending above nominal, bad weight', () => {
    const base = { name: 'q', cohort: 'c', namespace: 'ns', coveredResources: ['cpu', 'nvidia.com/gpu'] };
    expect(() => new KueueClusterQueue(chart(), 'a', { ...base, flavors: [{ flavor: 'f', resources: [{ name: 'nvidia.com/gpu', nominalQuota: '1' }, { name: 'cpu', nominalQuota: '1' }] }] }))
      .toThrow('flavors[f].resources must list cpu, nvidia.com/gpu in that order');
    expect(() => new KueueClusterQueue(chart(), 'b', { ...base, flavors: [{ flavor: 'f', resources: [{ name: 'cpu', nominalQuota: '1' }, { name: 'nvidia.com/gpu', nominalQuota: '2', lendingLimit: '3' }] }] }))
      .toThrow('flavors[f].nvidia.com/gpu.lendingLimit: "3" exceeds nominalQuota "2"');
    expect(() => new KueueClusterQueue(chart(), 'c', { ...base, flavors: [{ flavor: 'f', resources: [{ name: 'cpu', nominalQuota: 'lots' }, { name: 'nvidia.com/gpu', nominalQuota: '2' }] }] }))
      .toThrow('flavors[f].cpu.nominalQuota: "lots" is not a quantity');
    expect(() => new KueueClusterQueue(chart(), 'd', { ...base, fairSharingWeight: 0.0001, flavors: [{ flavor: 'f', resources: [{ name: 'cpu', nominalQuota: '1' }, { name: 'nvidia.com/gpu', nominalQuota: '2' }] }] }))
      .toThrow('fairSharingWeight must be a non-negative multiple of 0.001');
  });

  it('ResourceFlavor without node labels, WorkloadPriorityClass out of range', () => {
    expect(() => new KueueResourceFlavor(chart(), 'f', { name: 'gpu', nodeLabels: {} })).toThrow('KueueResourceFlavor gpu: nodeLabels is empty');
    expect(() => new KueueWorkloadPriorityClass(chart(), 'p', { name: 'top', value: 1_000_000_001 })).toThrow('value must be an integer from -2147483648 to 1000000000, got 1000000001');
  });
});
