import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { descriptionJsonSchemaText, withDescriptionReference } from '../../src/model/json-schema';
import { floorToMebibytes, formatBytes, formatCpu, formatMillis, parseMillis, parseQuantity, sumAsWritten } from '../../src/model/quantity';
import { PACKAGE_ROOT, PACKAGED_SCHEMA_FILE } from '../../src/paths';
import { modelOf } from '../helpers';

describe('quantities', () => {
  it.each([
    ['192', 192], ['500m', 0.5], ['1800Gi', 1800 * 2 ** 30], ['1k', 1000], ['1e3', 1000], ['1.5Gi', 1.5 * 2 ** 30], [64, 64],
  ] as const)('parses %s', (q, v) => expect(parseQuantity(q)).toBe(v));

  it('rejects garbage', () => {
    expect(() => parseQuantity('lots')).toThrow(/invalid quantity/);
    expect(() => parseQuantity('1.2.3Gi')).toThrow();
  });

  it.each([
    [1000, '1'], [1500, '1500m'], [96000, '96'], [2_000_000, '2k'], [0, '0'], [192_000, '192'],
  ])('formats %d thousandths canonically as %s', (m, s) => expect(formatMillis(m)).toBe(s));

  it.each([
    ['500m', 500], ['2', 2000], [96, 96000], ['1.5', 1500], ['0.3333', 333],
  ] as const)('reads %s as %d thousandths', (q, m) => expect(parseMillis(q)).toBe(m));

  it('formats CPU and bytes canonically', () => {
    expect(formatCpu(96)).toBe('96');
    expect(formatCpu(0.25)).toBe('250m');
    expect(formatBytes(1800 * 2 ** 30)).toBe('1800Gi');
    expect(formatBytes(2 ** 40)).toBe('1Ti');
    expect(formatBytes(1536 * 2 ** 20)).toBe('1536Mi');
    expect(formatBytes(1000)).toBe('1k');
    expect(floorToMebibytes(2 ** 20 + 5)).toBe(2 ** 20);
  });

  it('sums quantities as written: one as it is, several in the coarsest of their units where the sum is whole', () => {
    expect(sumAsWritten(['1500m'])).toBe('1500m');
    expect(sumAsWritten([8])).toBe('8');
    expect(sumAsWritten(['344', '1'])).toBe('345');
    expect(sumAsWritten(['3240Gi', '2Gi'])).toBe('3242Gi');
    expect(sumAsWritten(['1500m', '3'])).toBe('4500m');
    expect(sumAsWritten(['1500m', '1500m'])).toBe('3');
    expect(sumAsWritten(['2Gi', '512Mi'])).toBe('2560Mi');
    expect(sumAsWritten(['1Gi', '1G'])).toBe('2073741824');
    expect(sumAsWritten([])).toBeUndefined();
    expect(sumAsWritten(['lots', '1'])).toBeUndefined();
  });
});

describe('model', () => {
  it('derives the reference cluster\'s capacity and shared names once', () => {
    const m = modelOf();
    expect(m.capacity).toMatchObject({ gpuNodes: 2, gpusPerNode: 8, gpus: 16, cpuCores: 384, memoryBytes: 3600 * 2 ** 30, rdmaDevices: 126 });
    expect(m.rdma).toEqual({ resourceName: 'rdma/rdma_shared_device_a', deviceName: 'rdma_shared_device_a', hcaMax: 63, hcas: ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7'] });
    // not the product label: GPU Feature Discovery renames it under MIG single
    expect(m.gpuWorkers.selector).toEqual({ 'nvidia.com/gpu.present': 'true' });
    // Kueue's LocalQueue defaulting queues every unlabelled pod of "default" (its pre-wired queue is named so), none of a tenant's
    expect(m.queueing.defaultQueue).toMatchObject({ clusterQueue: 'default', localQueue: 'default', namespace: 'default', defaulting: true });
    expect(m.tenants.map((t) => [t.name, t.namespace, t.localQueue, t.defaulting, t.group])).toEqual([
      ['research', 'research', 'research', false, 'tenant-research'], ['inference', 'inference', 'inference', false, 'tenant-inference'],
    ]);
    const optIn = modelOf((d) => { d.tenants[1].queue = 'default'; });
    expect(optIn.tenants.map((t) => [t.localQueue, t.defaulting])).toEqual([['research', false], ['default', true]]);
    expect(m.queueing.defaultPriority?.name).toBe('normal');
  });

  it('has no RDMA facts without InfiniBand', () => {
    const m = modelOf((d) => { delete d.network.infiniband; });
    expect(m.rdma).toBeUndefined();
    expect(m.capacity.rdmaDevices).toBe(0);
  });

  it('renames the RDMA resource everywhere from one field', () => {
    expect(modelOf((d) => { d.network.infiniband.rdmaSharedDevice.name = 'ib_fabric'; }).rdma?.resourceName).toBe('rdma/ib_fabric');
  });

  it('tolerates the GPU taint once when the workers carry it', () => {
    const m = modelOf((d) => { d.nodes.gpuWorkers.taints = [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }]; });
    expect(m.gpuWorkers.tolerations).toEqual([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
  });

  it('tolerates the GPU workers\' taints and the GPU taint', () => {
    const m = modelOf((d) => { d.nodes.gpuWorkers.taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]; });
    expect(m.gpuWorkers.tolerations).toEqual([
      { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' },
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ]);
  });
});

describe('JSON Schema of the description', () => {
  it('is committed and current, where the package ships it (npm run schema regenerates it)', () => {
    expect(readFileSync(PACKAGED_SCHEMA_FILE, 'utf8')).toBe(descriptionJsonSchemaText());
  });

  it('is documented field by field in docs/description.md (npm run schema regenerates the section)', () => {
    const readme = readFileSync(`${PACKAGE_ROOT}/docs/description.md`, 'utf8');
    expect(readme).toBe(withDescriptionReference(readme));
    expect(readme).toContain('| `nodes.gpuWorkers.gpusPerNode` | integer | **required** |');
  });

  it('documents fields and rejects unknown ones, for editors', () => {
    const schema = JSON.parse(descriptionJsonSchemaText());
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(expect.arrayContaining(['name', 'nodes', 'storage', 'samples']));
    expect(schema.properties.nodes.properties.gpuWorkers.properties.gpusPerNode.description).toMatch(/nvidia.com\/gpu/);
  });
});
