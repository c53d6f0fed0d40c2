import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { kubeconfigFor, serveState } from './api-server';
import { main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { parseQuantity } from '../../src/model/quantity';
import { readSnapshot } from '../../src/preflight/snapshot';
import { HAS_SCHEMAS } from '../helpers';

const SNAPSHOT = path.join(__dirname, 'fixtures', 'instant-cluster.snapshot.yaml');

describe('init writes a description from the cluster', () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'init-')); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('whose facts match the fixture nodes, with TODO(init) placeholders, and never overwrites', () => {
    const out = path.join(dir, 'lab.yaml');
    const err: string[] = [];
    expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'lab', '--repo', 'https://git.example.com/lab.git', '--out', out], { out: () => {}, err: (l) => err.push(l) })).toBe(EXIT.ok);
    const text = readFileSync(out, 'utf8');
    expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=./cluster-description.schema.json');
    expect(text).toContain('# TODO(init)');
    const d = parse(text);
    const nodes = readSnapshot(SNAPSHOT).objects.filter((o) => o.kind === 'Node');
    const gpu = nodes.filter((n: any) => n.status.allocatable['nvidia.com/gpu']);
    const service = nodes.find((n) => n.metadata.labels?.['node-role.kubernetes.io/control-plane'] !== undefined) as any;
    expect(d.nodes.gpuWorkers.count).toBe(gpu.length);
    expect(d.nodes.gpuWorkers.gpusPerNode).toBe(Number((gpu[0] as any).status.allocatable['nvidia.com/gpu']));
    expect(d.nodes.gpuWorkers.gpuProduct).toBe(gpu[0].metadata.labels!['nvidia.com/gpu.product']);
    expect(d.nodes.gpuWorkers.cpu).toBe((gpu[0] as any).status.allocatable.cpu);
    // readable, rounded down to whole GiB: never more than the node has, less by under 1 GiB
    const memory = parseQuantity((gpu[0] as any).status.allocatable.memory);
    expect(d.nodes.gpuWorkers.memory).toMatch(/^\d+Gi$/);
    expect(parseQuantity(d.nodes.gpuWorkers.memory)).toBeLessThanOrEqual(memory);
    expect(parseQuantity(d.nodes.gpuWorkers.memory)).toBeGreaterThan(memory - 2 ** 30);
    expect(d.nodes.service.taints).toEqual(service.spec.taints);
    expect(d.network.infiniband.rdmaSharedDevice).toMatchObject({ name: 'rdma_shared_device_a', hcaMax: Number((gpu[0] as any).status.allocatable['rdma/rdma_shared_device_a']) });
    expect(d.queueing).toMatchObject({ defaultQueue: 'default', defaultClusterQueue: 'cluster-queue' });
    expect(d.storage.defaultClass).toBe('local-path');
    expect(d.gitops).toEqual({ repoURL: 'https://git.example.com/lab.git', path: 'dist/lab' });

    const again: string[] = [];
    expect(main(['init', '--snapshot', SNAPSHOT, '--out', out], { out: () => {}, err: (l) => again.push(l) })).toBe(EXIT.badInput);
    expect(again.join('\n')).toContain('the file exists');
    expect(readFileSync(out, 'utf8')).toBe(text);
  });

  it.skipIf(!HAS_SCHEMAS)('and synth renders it; preflight finds no drift against the same cluster', () => {
    const file = path.join(dir, 'lab2.yaml');
    const lines: string[] = [];
    expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'lab2'], { out: (l) => lines.push(l), err: () => {} })).toBe(EXIT.ok);
    writeFileSync(file, `${lines.join('\n')}\n`);
    const err: string[] = [];
    expect(main(['synth', '--config', file, '--out', path.join(dir, 'dist'), '--quiet'], { out: () => {}, err: (l) => err.push(l) })).toBe(EXIT.ok);
    expect(existsSync(path.join(dir, 'dist', 'lab2', 'kueue', 'clusterqueue.cluster-queue.yaml'))).toBe(true);
    const json: string[] = [];
    const code = main(['preflight', '--config', file, '--snapshot', SNAPSHOT, '--format', 'json'], { out: (l) => json.push(l), err: () => {} });
    const findings = JSON.parse(json.join('\n')).findings as { rule: string; severity: string }[];
    // The Dashboard's node port is the one conflict init leaves: monitoring.dashboard.service (default "preinstalled") resolves it.
    const blocking = findings.filter((f) => f.severity === 'error');
    expect(blocking.filter((f) => f.rule !== 'nodeport-allocated')).toEqual([]);
    expect(code).toBe(blocking.length === 0 ? EXIT.ok : EXIT.failed);
  }, 300_000); // schema compilation on a cold cache; never a speed assertion

  it('reads the same facts live; a bare --kubeconfig uses $KUBECONFIG as kubectl does', async () => {
    const server = await serveState(readSnapshot(SNAPSHOT));
    const saved = process.env.KUBECONFIG;
    try {
      const kubeconfig = path.join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(server.url));
      process.env.KUBECONFIG = kubeconfig;
      const live: string[] = [];
      expect(await main(['init', '--kubeconfig', '--name', 'lab'], { out: (l) => live.push(l), err: () => {} })).toBe(EXIT.ok);
      const snap: string[] = [];
      expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'lab'], { out: (l) => snap.push(l), err: () => {} })).toBe(EXIT.ok);
      const body = (lines: string[]) => lines.join('\n').split('\n').filter((l) => !l.startsWith('# Written by'));
      expect(body(live)).toEqual(body(snap));
      expect(server.requests.every((r) => r.method === 'GET')).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
      await server.close();
    }
  }, 120_000); // loading the client library on a busy machine; never a speed assertion

  it('a bad --name exits 2 naming the option', () => {
    const err: string[] = [];
    expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'Not_A_Label'], { out: () => {}, err: (l) => err.push(l) })).toBe(EXIT.badInput);
    expect(err[0]).toContain('--name');
  });
});
