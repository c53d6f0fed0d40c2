import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { NAMESPACES, NODE_LABELS } from '../../src/model/names';
import { ApiError, KubeObject, Resource, WatchEvent, WatchHandle, WatchOptions } from '../../src/twin/kube-client';
import { OperatorStandIns, StandInClient } from '../../src/twin/operator-stand-ins';
import { ROOT } from '../helpers';
import { StubStreams, until } from './stub-streams';

/*
 * The operator stand-ins' passes against a stub API server (the twin runs them against the real one): what they write,
 * and what a pass that fails leaves: a failure named (lastError, errors, the log), the pass made again soon (not at the
 * next resync), one operator's failure not keeping the other's status unwritten, a conflict or a 404 of the status
 * write taken as the operators take it (read again, write again).
 */

const rendered = (file: string) => parse(readFileSync(path.join(ROOT, 'dist', 'instant-cluster', file), 'utf8')) as KubeObject;

type Json = Record<string, any>;

/**
 * A stub API server of the kinds the stand-ins read and write; `onStatus` may refuse a status write; `unserved` kinds
 * (`apiVersion/kind`) are not served (their CRD not there yet). Its watch streams are the test's to drive (`event`).
 */
class StubServer implements StandInClient {
  readonly objects = new Map<string, KubeObject>();
  readonly requests: string[] = [];
  readonly streams = new StubStreams();
  readonly unserved = new Set<string>();
  onStatus?: (path: string) => void;
  private version = 1;
  private readonly plurals: Record<string, Resource> = {
    'nvidia.com/v1/ClusterPolicy': { plural: 'clusterpolicies', namespaced: false },
    'mellanox.com/v1alpha1/NicClusterPolicy': { plural: 'nicclusterpolicies', namespaced: false },
    'apps/v1/DaemonSet': { plural: 'daemonsets', namespaced: true },
    'v1/Namespace': { plural: 'namespaces', namespaced: false },
  };

  constructor(nodes: readonly { name: string; gpu: boolean }[]) {
    for (const n of nodes) {
      this.put(`/api/v1/nodes/${n.name}`, { apiVersion: 'v1', kind: 'Node', metadata: { name: n.name, labels: n.gpu ? { [NODE_LABELS.nvidiaPci]: 'true' } : {} } });
    }
  }

  put(p: string, o: KubeObject): KubeObject {
    const stored = { ...o, metadata: { uid: `uid-${o.metadata.name}`, creationTimestamp: '2026-12-07T05:00:00Z', generation: 1, ...o.metadata, resourceVersion: String(++this.version) } };
    this.objects.set(p, stored);
    return structuredClone(stored);
  }

  pathOf(o: KubeObject): string {
    const r = this.plurals[`${o.apiVersion}/${o.kind}`];
    const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
    return `${base}${r.namespaced ? `/namespaces/${o.metadata.namespace}` : ''}/${r.plural}/${o.metadata.name}`;
  }

  async resource(apiVersion: string, kind: string): Promise<Resource | undefined> {
    return this.unserved.has(`${apiVersion}/${kind}`) ? undefined : this.plurals[`${apiVersion}/${kind}`];
  }

  async get(p: string): Promise<KubeObject | undefined> {
    this.requests.push(`GET ${p}`);
    const o = this.objects.get(p);
    return o && structuredClone(o);
  }

  async list(p: string): Promise<KubeObject[]> {
    this.requests.push(`LIST ${p}`);
    return this.collection(p);
  }

  private collection(p: string): KubeObject[] {
    return [...this.objects.entries()].filter(([k]) => k.startsWith(`${p}/`) && !k.slice(p.length + 1).includes('/')).map(([, o]) => structuredClone(o));
  }

  async apply(o: KubeObject): Promise<KubeObject> {
    this.requests.push(`APPLY ${o.kind} ${o.metadata.name}`);
    return this.put(this.pathOf(o), o);
  }

  async call(method: string, p: string, opts: { body?: unknown } = {}): Promise<any> {
    this.requests.push(`${method} ${p}`);
    if (method !== 'PUT' || !p.endsWith('/status')) throw new Error(`the stub serves no ${method} ${p}`);
    this.onStatus?.(p);
    const at = p.slice(0, -'/status'.length);
    const live = this.objects.get(at);
    if (!live) throw new ApiError(404, 'NotFound', `${p} not found`, undefined);
    const body = opts.body as KubeObject;
    if (body.metadata.resourceVersion !== live.metadata.resourceVersion) throw new ApiError(409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again', undefined);
    return this.put(at, { ...live, status: body.status });
  }

  async listAt(p: string): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    this.streams.itemsOf = (c) => this.collection(c);
    return this.streams.listAt(p);
  }

  watch(p: string, o: WatchOptions): WatchHandle {
    return this.streams.watch(p, o);
  }

  /** A change made by someone else (a kubelet, an admin, Argo CD): stored, and sent on its collection's stream. */
  event(type: WatchEvent['type'], p: string, o: KubeObject): void {
    const object = type === 'DELETED' ? o : this.put(p, o);
    if (type === 'DELETED') this.objects.delete(p);
    this.streams.send({ type, object }, p.slice(0, p.lastIndexOf('/')));
  }

  status(p: string): Json | undefined {
    return this.objects.get(p)?.status as Json | undefined;
  }
}

const CP = '/apis/nvidia.com/v1/clusterpolicies/cluster-policy';
const NIC = '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy';

function cluster(gpu: boolean): StubServer {
  const s = new StubServer([{ name: 'gpu-0', gpu }, { name: 'service-0', gpu: false }]);
  s.put(`/api/v1/namespaces/${NAMESPACES.gpuOperator}`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.gpuOperator } });
  s.put(CP, rendered('gpu-operator/clusterpolicy.cluster-policy.yaml'));
  s.put(NIC, rendered('network-operator/nicclusterpolicy.nic-cluster-policy.yaml'));
  return s;
}

const readyReason = (s: Json | undefined) => (s?.conditions as Json[] | undefined)?.find((c) => c.type === 'Ready')?.reason;

describe('the GPU Operator stand-in', () => {
  it('writes "ready" with reason NoGPUNodes when no Node carries the NVIDIA PCI label (operands with nothing to schedule are ready), Reconciled when one does', async () => {
    const none = cluster(false);
    await new OperatorStandIns(none, { watch: false }).pass();
    expect(none.status(CP)?.state).toBe('ready');
    expect(readyReason(none.status(CP))).toBe('NoGPUNodes');
    expect((none.status(CP)?.conditions as Json[]).find((c) => c.type === 'Ready')?.message).toBe('No GPU node found, watching for new nodes to join the cluster.');
    const some = cluster(true);
    await new OperatorStandIns(some, { watch: false }).pass();
    expect(readyReason(some.status(CP))).toBe('Reconciled');
  });

  it('a second pass over an unchanged cluster writes nothing', async () => {
    const s = cluster(false);
    const standIns = new OperatorStandIns(s, { watch: false });
    await standIns.pass();
    const writes = standIns.writes.length;
    const requests = s.requests.length;
    await standIns.pass();
    expect(standIns.writes.length).toBe(writes);
    expect(s.requests.slice(requests).filter((r) => !r.startsWith('LIST '))).toEqual([]);
  });

  it('a conflict on the status write (the ClusterPolicy changed since it was read) fails the pass naming it; the next pass reads it again and writes', async () => {
    const s = cluster(false);
    let conflicts = 0;
    s.onStatus = (p) => {
      // another writer (Argo CD's apply of the spec) between the stand-in's read and its write, once
      if (p.startsWith(CP) && conflicts++ === 0) s.put(CP, { ...s.objects.get(CP)!, metadata: { ...s.objects.get(CP)!.metadata, labels: { touched: 'yes' } } });
    };
    const standIns = new OperatorStandIns(s, { watch: false });
    await expect(standIns.pass()).rejects.toThrow(/the GPU Operator stand-in: writing the status of ClusterPolicy cluster-policy \(ready\): 409 Conflict: /);
    // the Network Operator's status was written all the same
    expect(s.status(NIC)?.state).toBeDefined();
    expect(s.status(CP)).toBeUndefined();
    await standIns.pass();
    expect(s.status(CP)?.state).toBe('ready');
  });

  it('a 404 of the status write (the kind not served yet, the object gone) fails the pass naming it; the next one writes', async () => {
    const s = cluster(false);
    let refused = 0;
    s.onStatus = (p) => {
      if (p.startsWith(CP) && refused++ === 0) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', undefined);
    };
    const standIns = new OperatorStandIns(s, { watch: false });
    await expect(standIns.pass()).rejects.toThrow(/writing the status of ClusterPolicy cluster-policy \(ready\): 404 NotFound: the server could not find the requested resource/);
    await standIns.pass();
    expect(s.status(CP)?.state).toBe('ready');
  });
});

describe('the stand-ins\' loop', () => {
  it('a pass that throws is recorded (lastError, errors, the log) and made again within the retry, not at the next resync; the recovery is logged', async () => {
    const s = cluster(false);
    let fail = 1;
    const list = s.list.bind(s);
    s.list = async (p: string) => {
      if (p.startsWith('/api/v1/nodes') && fail-- > 0) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
      return list(p);
    };
    const log: string[] = [];
    const standIns = new OperatorStandIns(s, { watch: false, resyncMs: 60_000, retryMs: 20, log: (l) => log.push(l) });
    const t0 = Date.now();
    standIns.start();
    try {
      for (let i = 0; i < 200 && standIns.passes === 0; i++) await new Promise((r) => setTimeout(r, 10));
    } finally {
      await standIns.stop();
    }
    expect(standIns.passes).toBe(1);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(standIns.failedPasses).toBe(1);
    expect(standIns.lastError).toBeUndefined();
    expect(standIns.errors.map((e) => e.message)).toEqual(['the GPU Operator stand-in: connect ECONNREFUSED 127.0.0.1:6443']);
    expect(log).toEqual([
      'operator stand-ins: a pass failed: the GPU Operator stand-in: connect ECONNREFUSED 127.0.0.1:6443',
      'operator stand-ins: a pass succeeded again after 1 failed',
    ]);
    expect(s.status(CP)?.state).toBe('ready');
  });

  it('a pass that keeps failing stays named in lastError, its message logged once', async () => {
    const s = cluster(false);
    s.onStatus = (p) => {
      if (p.startsWith(CP)) throw new ApiError(422, 'Invalid', 'status.state: Unsupported value', undefined);
    };
    const log: string[] = [];
    const standIns = new OperatorStandIns(s, { watch: false, resyncMs: 50, retryMs: 5, log: (l) => log.push(l) });
    standIns.start();
    try {
      for (let i = 0; i < 200 && standIns.failedPasses < 4; i++) await new Promise((r) => setTimeout(r, 10));
    } finally {
      await standIns.stop();
    }
    expect(standIns.failedPasses).toBeGreaterThanOrEqual(4);
    expect(standIns.lastError).toMatch(/writing the status of ClusterPolicy cluster-policy \(ready\): 422 Invalid: status.state: Unsupported value/);
    expect(log).toHaveLength(1);
  });
});

describe('the stand-ins\' watches', () => {
  const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const POLICIES = ['/apis/nvidia.com/v1/clusterpolicies', '/apis/mellanox.com/v1alpha1/nicclusterpolicies'];
  const crd = (name: string, group: string): KubeObject => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name }, spec: { group } });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** The passes once no change has come for a while (each watch's first list asks for one). */
  const settled = async (standIns: OperatorStandIns) => {
    for (let last = -1; standIns.passes !== last;) {
      last = standIns.passes;
      await sleep(300);
    }
    return standIns.passes;
  };

  it('the policies\' CRDs arriving open the policies\' watches at once (not after their backoff) and make a pass; another group\'s CRD does neither', async () => {
    const s = cluster(false);
    s.unserved.add('nvidia.com/v1/ClusterPolicy');
    s.unserved.add('mellanox.com/v1alpha1/NicClusterPolicy');
    // the policies' watches' tries (the passes read the kinds too: none is made while this test looks)
    let tries = 0;
    const resource = s.resource.bind(s);
    s.resource = async (apiVersion: string, kind: string) => {
      if (kind === 'ClusterPolicy' || kind === 'NicClusterPolicy') tries++;
      return resource(apiVersion, kind);
    };
    // a backoff longer than the test: only a kick tries an unserved kind again
    const standIns = new OperatorStandIns(s, { resyncMs: 60_000, watchRetryMs: 60_000 });
    standIns.start();
    try {
      await until(() => s.streams.watching(CRDS) && s.streams.watching('/api/v1/nodes'));
      const passes = await settled(standIns);
      const triesBefore = tries;
      expect(s.status(CP)).toBeUndefined();
      s.event('ADDED', `${CRDS}/widgets.example.com`, crd('widgets.example.com', 'example.com'));
      await sleep(300);
      expect(tries).toBe(triesBefore);
      expect(standIns.passes).toBe(passes);
      s.unserved.clear();
      s.event('ADDED', `${CRDS}/clusterpolicies.nvidia.com`, crd('clusterpolicies.nvidia.com', 'nvidia.com'));
      await until(() => POLICIES.every((p) => s.streams.watching(p)));
      await until(() => s.status(CP)?.state === 'ready');
      expect(standIns.passes).toBeGreaterThan(passes);
    } finally {
      await standIns.stop();
    }
  });

  it('a Node\'s heartbeat makes no pass; a change of its NVIDIA PCI label does (and the ClusterPolicy reads it)', async () => {
    const s = cluster(false);
    const standIns = new OperatorStandIns(s, { resyncMs: 60_000 });
    standIns.start();
    try {
      await until(() => s.streams.watching('/api/v1/nodes') && s.streams.watching(POLICIES[0]));
      const passes = await settled(standIns);
      expect(readyReason(s.status(CP))).toBe('NoGPUNodes');
      const node = s.objects.get('/api/v1/nodes/gpu-0')!;
      // a kubelet's heartbeat: the Node's status, its labels as they were
      s.event('MODIFIED', '/api/v1/nodes/gpu-0', { ...node, status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2026-12-07T05:01:00Z' }] } });
      await sleep(500);
      expect(standIns.passes).toBe(passes);
      // Node Feature Discovery labels it a node with an NVIDIA device
      s.event('MODIFIED', '/api/v1/nodes/gpu-0', { ...node, metadata: { ...node.metadata, labels: { [NODE_LABELS.nvidiaPci]: 'true' } } });
      await until(() => standIns.passes > passes);
      await until(() => readyReason(s.status(CP)) === 'Reconciled');
    } finally {
      await standIns.stop();
    }
  });
});
