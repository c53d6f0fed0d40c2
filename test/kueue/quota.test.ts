import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { gpuPodSize } from '../../src/components/gpu-workload';
import { CPU_WORKER_RESERVE, GPU_WORKER_RESERVE } from '../../src/model/description';
import { proportionalShare, QueueQuota, queueQuotas, QuotaTotals } from '../../src/model/model';
import { formatBytes, parseQuantity } from '../../src/model/quantity';
import { HAS_UPSTREAM, issuesOf, modelOf, SHARED, seededRandom } from '../helpers';

const GI = 2 ** 30;
const MI = 2 ** 20;

/**
 * Canonical forms, checked without the toolkit's formatter: a decimal quantity has no suffix it
 * could still grow into (mantissa not a multiple of 1000), a binary one likewise for 1024, and
 * neither has a sign, a fraction or leading zeros.
 */
function isCanonicalCpu(q: string): boolean {
  const m = /^(0|[1-9][0-9]*)(m|k|M|G|T|P|E)?$/.exec(q);
  if (!m) return false;
  if (m[1] === '0') return m[2] === undefined;
  return m[2] === 'E' || BigInt(m[1]) % 1000n !== 0n;
}
function isCanonicalMemory(q: string): boolean {
  const binary = /^([1-9][0-9]*)(Ki|Mi|Gi|Ti|Pi|Ei)$/.exec(q);
  if (binary) return binary[2] === 'Ei' || BigInt(binary[1]) % 1024n !== 0n;
  // Not a multiple of 1 KiB: Kubernetes falls back to the decimal form.
  return q === '0' || (isCanonicalCpu(q) && !q.endsWith('m') && parseQuantity(q) % 1024 !== 0);
}

const millis = (cpu: string) => Math.round(parseQuantity(cpu) * 1000);

function sums(quotas: readonly QueueQuota[]) {
  return {
    gpus: quotas.reduce((s, q) => s + q.gpus, 0),
    cpuMillis: quotas.reduce((s, q) => s + millis(q.cpu), 0),
    memoryBytes: quotas.reduce((s, q) => s + parseQuantity(q.memory), 0),
    rdma: quotas.reduce((s, q) => s + q.rdma, 0),
  };
}

describe('proportionalShare', () => {
  it('rounds down and handles an empty whole', () => {
    expect(proportionalShare(126, 4, 16)).toBe(31);
    expect(proportionalShare(384_000, 8, 16)).toBe(192_000);
    expect(proportionalShare(10, 1, 3)).toBe(3);
    expect(proportionalShare(10, 0, 0)).toBe(0);
  });

  it('keeps precision where total x part passes 2^53', () => {
    // 1000 nodes x 2 TiB, times 8000 GPUs: far beyond Number.MAX_SAFE_INTEGER before the division.
    const bytes = 1000 * 2 * 2 ** 40;
    expect(bytes * 8000).toBeGreaterThan(Number.MAX_SAFE_INTEGER);
    expect(proportionalShare(bytes, 4001, 8000)).toBe(Number((BigInt(bytes) * 4001n) / 8000n));
  });

  it('rejects fractions and negatives, naming the values', () => {
    expect(() => proportionalShare(1.5, 1, 2)).toThrow(/1\.5/);
    expect(() => proportionalShare(10, -1, 2)).toThrow(/-1/);
  });
});

describe('queueQuotas', () => {
  const reference: QuotaTotals = { gpus: 16, cpuMillis: 384_000, memoryBytes: 3600 * GI, rdma: 126 };

  it('gives the reference tenants their share and the default queue the rest', () => {
    const [dflt, research, inference] = queueQuotas(reference, {}, [{ gpus: 8 }, { gpus: 4 }]);
    expect(research).toMatchObject({ gpus: 8, cpu: '192', memory: '1800Gi', rdma: 63 });
    expect(inference).toMatchObject({ gpus: 4, cpu: '96', memory: '900Gi', rdma: 31 });
    // 126 RDMA units: 63 + 31 leaves 32, so nothing is lost to rounding.
    expect(dflt).toMatchObject({ gpus: 4, cpu: '96', memory: '900Gi', rdma: 32 });
    expect(sums([dflt, research, inference])).toEqual(reference);
  });

  it('rounds CPU down to millicores and memory down to MiB, and the rest still adds up', () => {
    const totals: QuotaTotals = { gpus: 3, cpuMillis: 100_000, memoryBytes: 1000 * GI + 5, rdma: 10 };
    const quotas = queueQuotas(totals, {}, [{ gpus: 1 }, { gpus: 1 }]);
    expect(quotas[1]).toMatchObject({ cpu: '33333m', memory: `${Math.floor((1000 * GI + 5) / 3 / MI)}Mi`, rdma: 3 });
    expect(quotas[0].cpu).toBe('33334m');
    expect(quotas[0].rdma).toBe(4);
    expect(sums(quotas)).toEqual(totals);
    // 1000Gi + 5 bytes minus two whole-MiB shares is not a multiple of 1 KiB: decimal form.
    expect(isCanonicalMemory(quotas[0].memory)).toBe(true);
    expect(quotas[0].memory).not.toMatch(/i$/);
  });

  it('uses the largest exact suffix (2000 cores is "2k")', () => {
    const quotas = queueQuotas({ gpus: 8, cpuMillis: 4_000_000, memoryBytes: 8 * 2 ** 40, rdma: 0 }, {}, [{ gpus: 4 }]);
    expect(quotas[1]).toMatchObject({ cpu: '2k', memory: '4Ti' });
    expect(quotas[0]).toMatchObject({ cpu: '2k', memory: '4Ti', rdma: 0 });
  });

  it('scales borrowing limits and clamps lending limits to the nominal quota', () => {
    const claims = [{ gpus: 8, borrowingLimit: 4, lendingLimit: 2 }, { gpus: 0, borrowingLimit: 8, lendingLimit: 3 }];
    const [dflt, a, b] = queueQuotas(reference, { lendingLimit: 8 }, claims);
    expect(a.borrowingLimit).toEqual({ gpus: 4, cpu: '96', memory: '900Gi', rdma: 31 });
    expect(a.lendingLimit).toEqual({ gpus: 2, cpu: '48', memory: '450Gi', rdma: 15 });
    expect(b.lendingLimit).toEqual({ gpus: 0, cpu: '0', memory: '0', rdma: 0 });
    expect(b.borrowingLimit?.gpus).toBe(8);
    // The default queue has 8 GPUs: its lending limit of 8 is all of it.
    expect(dflt.gpus).toBe(8);
    expect(dflt.lendingLimit?.gpus).toBe(8);
    expect(dflt.borrowingLimit).toBeUndefined();
  });

  it('splits CPU-only workers in the same proportions', () => {
    const totals: QuotaTotals = { ...reference, cpuOnly: { cpuMillis: 4 * 64_000, memoryBytes: 4 * 512 * GI } };
    const quotas = queueQuotas(totals, {}, [{ gpus: 8 }, { gpus: 4 }]);
    expect(quotas.map((q) => q.cpuOnly)).toEqual([
      { cpu: '64', memory: '512Gi' }, { cpu: '128', memory: '1Ti' }, { cpu: '64', memory: '512Gi' },
    ]);
  });

  it('formats large byte counts that are no multiple of 1 KiB without losing digits', () => {
    expect(formatBytes(417_591_567_734_148)).toBe('417591567734148');
    expect(formatBytes(3 * 10 ** 15 + 1000)).toBe('3000000000001k');
  });

  it('refuses claims above the cluster', () => {
    expect(() => queueQuotas(reference, {}, [{ gpus: 12 }, { gpus: 5 }])).toThrow('tenants claim 17 GPUs but the cluster has 16');
  });

  it('sums to capacity with canonical quantities over many cluster sizes', () => {
    const next = seededRandom(20240611);
    const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
    for (let run = 0; run < 400; run++) {
      const nodes = int(1, 512);
      const gpusPerNode = [1, 2, 4, 8][int(0, 3)];
      const gpus = nodes * gpusPerNode;
      const totals: QuotaTotals = {
        gpus,
        cpuMillis: nodes * int(1, 512_000),
        memoryBytes: nodes * (int(1, 4096) * GI + int(0, 3) * int(0, GI)),
        rdma: nodes * int(0, 255),
        cpuOnly: run % 2 === 0 ? { cpuMillis: int(0, 2_000_000), memoryBytes: int(0, 64) * GI + int(0, 1023) } : undefined,
      };
      const claims = Array.from({ length: int(0, 8) }, () => ({ gpus: 0 }));
      let left = gpus;
      const tenants = claims.map(() => {
        const g = int(0, left);
        left -= g;
        return { gpus: g, borrowingLimit: int(0, 1) ? int(0, gpus) : undefined, lendingLimit: int(0, 1) ? int(0, gpus) : undefined };
      });
      const quotas = queueQuotas(totals, {}, tenants);
      const context = JSON.stringify({ totals, tenants });
      expect(sums(quotas), context).toEqual({ gpus: totals.gpus, cpuMillis: totals.cpuMillis, memoryBytes: totals.memoryBytes, rdma: totals.rdma });
      if (totals.cpuOnly) {
        expect(quotas.reduce((s, q) => s + millis(q.cpuOnly!.cpu), 0), context).toBe(totals.cpuOnly.cpuMillis);
        expect(quotas.reduce((s, q) => s + parseQuantity(q.cpuOnly!.memory), 0), context).toBe(totals.cpuOnly.memoryBytes);
      }
      for (const q of quotas) {
        for (const cpu of [q.cpu, q.borrowingLimit?.cpu, q.lendingLimit?.cpu, q.cpuOnly?.cpu]) if (cpu) expect(isCanonicalCpu(cpu), `${cpu} ${context}`).toBe(true);
        for (const mem of [q.memory, q.borrowingLimit?.memory, q.lendingLimit?.memory, q.cpuOnly?.memory]) if (mem) expect(isCanonicalMemory(mem), `${mem} ${context}`).toBe(true);
        expect(q.gpus).toBeGreaterThanOrEqual(0);
        expect(q.rdma).toBeGreaterThanOrEqual(0);
        if (q.lendingLimit) {
          expect(q.lendingLimit.gpus).toBeLessThanOrEqual(q.gpus);
          expect(millis(q.lendingLimit.cpu)).toBeLessThanOrEqual(millis(q.cpu));
          expect(parseQuantity(q.lendingLimit.memory)).toBeLessThanOrEqual(parseQuantity(q.memory));
          expect(q.lendingLimit.rdma).toBeLessThanOrEqual(q.rdma);
        }
      }
      tenants.forEach((t, i) => expect(quotas[i + 1].gpus).toBe(t.gpus));
    }
  });
});

describe('model quotas', () => {
  it('derives the reference quotas from the description, less what each node keeps for its DaemonSets and what tenants run outside Kueue', () => {
    const m = modelOf();
    // 2 GPU workers x (192 - 2) CPU and (1800Gi - 4Gi) memory: nodes.gpuWorkers.reserved defaults to 2 CPU and 4Gi;
    // less 2 tenants x 4 CPU and 16Gi (tenants[].unqueued, the default)
    expect(m.queueing.queues.map((q) => [q.clusterQueue, q.quota.gpus, q.quota.cpu, q.quota.memory, q.quota.rdma])).toEqual([
      ['default', 4, '93', '890Gi', 32], ['research', 8, '186', '1780Gi', 63], ['inference', 4, '93', '890Gi', 31],
    ]);
    expect(sums(m.queueing.queues.map((q) => q.quota))).toEqual({ gpus: 16, cpuMillis: 372_000, memoryBytes: 3560 * GI, rdma: 126 });
    // no reserve and nothing outside Kueue: the quotas take the whole allocatable (what the nodes have is then promised twice)
    const none = modelOf((d: any) => {
      d.nodes.gpuWorkers.reserved = { cpu: '0', memory: '0' };
      for (const t of d.tenants) t.unqueued = { cpu: '0', memory: '0' };
    });
    expect(sums(none.queueing.queues.map((q) => q.quota))).toEqual({ gpus: 16, cpuMillis: 384_000, memoryBytes: 3600 * GI, rdma: 126 });
    const unlimited = (q: (typeof m.queueing.queues)[number]) => q.quota.borrowingLimit === undefined && q.quota.lendingLimit === undefined;
    expect(m.queueing.queues.every((q) => unlimited(q) && q.quota.cpuOnly === undefined)).toBe(true);
  });

  it('gives a borrowing-only tenant no nominal GPUs and a borrowing limit of its "gpus"', () => {
    const m = modelOf((d: any) => { d.tenants.push({ name: 'interns', gpus: 24, borrowingOnly: true }); });
    const interns = m.tenants.find((t) => t.name === 'interns')!;
    expect(interns.quota).toMatchObject({ gpus: 0, cpu: '0', memory: '0', rdma: 0 });
    expect(interns.quota.borrowingLimit).toEqual({ gpus: 24, cpu: '552', memory: '5316Gi', rdma: 189 });
    expect(m.queueing.defaultQueue.quota.gpus).toBe(4);
  });

  it('applies queueing limits unless a tenant overrides them (null: unlimited)', () => {
    const m = modelOf((d: any) => {
      d.queueing.borrowingLimit = 4;
      d.queueing.lendingLimit = 2;
      d.tenants[0].borrowingLimit = null;
      d.tenants[1].lendingLimit = 0;
    });
    const [dflt, research, inference] = m.queueing.queues;
    expect(dflt.quota.borrowingLimit?.gpus).toBe(4);
    expect(dflt.quota.lendingLimit?.gpus).toBe(2);
    expect(research.quota.borrowingLimit).toBeUndefined();
    expect(research.quota.lendingLimit?.gpus).toBe(2);
    expect(inference.quota.borrowingLimit?.gpus).toBe(4);
    expect(inference.quota.lendingLimit).toEqual({ gpus: 0, cpu: '0', memory: '0', rdma: 0 });
  });

  it('splits CPU-only workers between the queues, less their own reserve (1 CPU, 2Gi per node by default)', () => {
    const m = modelOf((d: any) => { d.nodes.cpuWorkers = { count: 2, cpu: '64', memory: '256Gi' }; });
    expect(m.queueing.queues.map((q) => q.quota.cpuOnly)).toEqual([
      { cpu: '31500m', memory: '127Gi' }, { cpu: '63', memory: '254Gi' }, { cpu: '31500m', memory: '127Gi' },
    ]);
  });

  it('over many node sizes and reserves, the quotas share exactly what the nodes keep for workloads, and a full-node sample fits one node\'s share', () => {
    const next = seededRandom(20261130);
    const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
    for (let run = 0; run < 200; run++) {
      const count = int(1, 64);
      const cpuMillis = int(2, 512) * 1000 + int(0, 1) * int(1, 999);
      const memoryMi = int(2, 4096) * 1024 + int(0, 1023);
      const reservedCpu = int(0, cpuMillis - 1);
      const reservedMi = int(0, memoryMi - 1);
      // each tenant's allowance outside Kueue: up to a third of what the nodes keep for workloads
      const unqueuedCpu = int(0, Math.floor((count * (cpuMillis - reservedCpu) - 1) / 3));
      const unqueuedMi = int(0, Math.floor((count * (memoryMi - reservedMi) - 1) / 3));
      const m = modelOf((d: any) => {
        d.nodes.gpuWorkers = { ...d.nodes.gpuWorkers, count, cpu: `${cpuMillis}m`, memory: `${memoryMi}Mi`, reserved: { cpu: `${reservedCpu}m`, memory: `${reservedMi}Mi` } };
        d.tenants[0].gpus = Math.min(d.tenants[0].gpus, count * 4);
        d.tenants[1].gpus = Math.min(d.tenants[1].gpus, count * 8 - d.tenants[0].gpus);
        for (const t of d.tenants) t.unqueued = { cpu: `${unqueuedCpu}m`, memory: `${unqueuedMi}Mi` };
      });
      const context = JSON.stringify({ count, cpuMillis, memoryMi, reservedCpu, reservedMi, unqueuedCpu, unqueuedMi });
      const total = sums(m.queueing.queues.map((q) => q.quota));
      expect(total.cpuMillis, context).toBe(count * (cpuMillis - reservedCpu) - 2 * unqueuedCpu);
      expect(total.memoryBytes, context).toBe((count * (memoryMi - reservedMi) - 2 * unqueuedMi) * MI);
      const pod = gpuPodSize(m, m.capacity.gpusPerNode);
      if (cpuMillis - reservedCpu >= 1000) expect(millis(pod.cpu), context).toBeLessThanOrEqual(cpuMillis - reservedCpu);
      if (memoryMi - reservedMi >= 1024) expect(parseQuantity(pod.memory), context).toBeLessThanOrEqual((memoryMi - reservedMi) * MI);
    }
  });

  it('refuses a reserve that leaves the quotas nothing, naming the field', () => {
    expect(issuesOf((d) => { d.nodes.gpuWorkers.reserved = { cpu: '192' }; })).toEqual([
      { path: 'nodes.gpuWorkers.reserved.cpu', message: 'reserves 192 of the 192 cpu a node has: nothing would be left for the quotas' },
    ]);
    expect(issuesOf((d) => { d.nodes.cpuWorkers = { count: 1, cpu: '8', memory: '16Gi', reserved: { memory: '32Gi' } }; })).toEqual([
      { path: 'nodes.cpuWorkers.reserved.memory', message: 'reserves 32Gi of the 16Gi memory a node has: nothing would be left for the quotas' },
    ]);
    expect(issuesOf((d) => { d.nodes.gpuWorkers.reserved = { cpu: '-1' }; })).toEqual([
      { path: 'nodes.gpuWorkers.reserved.cpu', message: expect.stringMatching(/expected a non-negative cpu quantity/) },
    ]);
  });
});

describe.skipIf(!HAS_UPSTREAM)('the default node reserve', () => {
  const upstream = (file: string) => parse(readFileSync(path.join(SHARED, 'upstream-installs', file), 'utf8'));
  const requests = (resources: { requests?: Record<string, string> } | undefined) => ({
    cpu: parseQuantity(resources?.requests?.cpu ?? 0),
    memory: parseQuantity(resources?.requests?.memory ?? 0),
  });

  it('covers what the DaemonSets of the pre-installed stack request on a worker (the vendored charts\' defaults)', () => {
    const gpuOperator = upstream('gpu-operator-v26.7.0/deployments/gpu-operator/values.yaml');
    const nfd = upstream('gpu-operator-v26.7.0/deployments/gpu-operator/charts/node-feature-discovery/values.yaml');
    const nodeExporter = upstream('victoria-metrics-k8s-stack-0.54.0/charts/victoria-metrics-k8s-stack/charts/prometheus-node-exporter/values.yaml');
    // The GPU Operator's operands (the operator reads their resources from the ClusterPolicy the chart fills from these values),
    // Node Feature Discovery's worker, the monitoring stack's node exporter.
    const operands = ['validator', 'driver', 'toolkit', 'devicePlugin', 'dcgm', 'dcgmExporter', 'gfd', 'migManager', 'nodeStatusExporter'];
    const gpuWorker = [...operands.map((o) => requests(gpuOperator[o].resources)), requests(nfd.worker.resources), requests(nodeExporter.resources)];
    const cpuWorker = [requests(nfd.worker.resources), requests(nodeExporter.resources)];
    const total = (list: { cpu: number; memory: number }[]) => list.reduce((s, r) => ({ cpu: s.cpu + r.cpu, memory: s.memory + r.memory }),
      { cpu: 0, memory: 0 });
    // Node Feature Discovery's worker is the one that requests anything, so the sum cannot be zero by a misread path.
    expect(total(gpuWorker).memory).toBeGreaterThan(0);
    expect(total(gpuWorker).cpu).toBeLessThanOrEqual(parseQuantity(GPU_WORKER_RESERVE.cpu));
    expect(total(gpuWorker).memory).toBeLessThanOrEqual(parseQuantity(GPU_WORKER_RESERVE.memory));
    expect(total(cpuWorker).cpu).toBeLessThanOrEqual(parseQuantity(CPU_WORKER_RESERVE.cpu));
    expect(total(cpuWorker).memory).toBeLessThanOrEqual(parseQuantity(CPU_WORKER_RESERVE.memory));
  });
});
