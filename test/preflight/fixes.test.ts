import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { snapshotObjects } from './snapshots';
import { DescriptionError, parseDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { preflight } from '../../src/preflight/engine';
import { PreflightFinding } from '../../src/preflight/rule';
import { ClusterState } from '../../src/preflight/state';
import { renderCluster } from '../../src/synth/render';
import { Edit, referenceInput, serviceMonitorCrd } from '../helpers';

/*
 * Every description edit a preflight fix suggests ("set a.b: value [and c.d: value] in the
 * description") is itself a valid value of the description: a scenario per rule that suggests
 * one, including clusters whose values the description cannot take (no GPU worker, a label with a
 * NUL, a reclaim policy Kubernetes does not know), where the fix must suggest something else.
 */

const ADOPTED = parse(readFileSync(path.join(__dirname, 'fixtures', 'instant-cluster.adopted.yaml'), 'utf8'));

type Objects = any[];

interface Scenario {
  readonly name: string;
  readonly state?: (objects: Objects) => void;
  readonly edit?: Edit;
  /** Start from the adopted description instead of the reference. */
  readonly adopted?: boolean;
}

const nodes = (objects: Objects) => objects.filter((o) => o.kind === 'Node');
const gpuNodes = (objects: Objects) => nodes(objects).filter((o) => o.status.allocatable['nvidia.com/gpu']);
const named = (objects: Objects, kind: string, name: string) => objects.filter((o) => o.kind === kind && o.metadata.name === name);

const SCENARIOS: Scenario[] = [
  { name: 'the pre-installed Instant Cluster, reference description' },
  { name: 'the pre-installed Instant Cluster, adopted description', adopted: true },
  { name: 'every StorageClass Retain', state: (o) => o.filter((x) => x.kind === 'StorageClass').forEach((x) => { x.reclaimPolicy = 'Retain'; }) },
  { name: 'a reclaim policy Kubernetes does not know', state: (o) => o.filter((x) => x.kind === 'StorageClass').forEach((x) => { x.reclaimPolicy = 'Bogus'; }) },
  { name: 'a second globalDefault PriorityClass', state: (o) => o.push({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'cluster-default' }, value: 1000, globalDefault: true }) },
  {
    name: 'a GPU worker with 4 GPUs, another product, a taint and another RDMA name',
    state: (o) => named(o, 'Node', 'gpu-worker-2').forEach((n) => {
      n.status.allocatable['nvidia.com/gpu'] = '4';
      n.metadata.labels['nvidia.com/gpu.product'] = 'NVIDIA-A100-SXM4-80GB';
      n.spec.taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }];
      delete n.status.allocatable['rdma/rdma_shared_device_a'];
      n.status.allocatable['rdma/hca_shared_devices_a'] = '63';
    }),
  },
  { name: 'rdmaHcaMax 16', state: (o) => gpuNodes(o).forEach((n) => { n.status.allocatable['rdma/rdma_shared_device_a'] = '16'; }) },
  {
    name: 'RDMA from the NicClusterPolicy only',
    state: (o) => {
      nodes(o).forEach((n) => { delete n.status.allocatable['rdma/rdma_shared_device_a']; });
      named(o, 'NicClusterPolicy', 'nic-cluster-policy').forEach((p) => { p.spec.rdmaSharedDevicePlugin.config = JSON.stringify({ configList: [{ resourceName: 'rdma_ib', rdmaHcaMax: 1000 }] }); });
    },
  },
  { name: 'a Training Operator declared pre-installed that the cluster lacks', edit: (d) => { d.installs = { ...d.installs, trainingOperator: 'preinstalled' }; } },
  { name: 'described taints no node carries', edit: (d) => { d.nodes.gpuWorkers.taints = [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }]; } },
  { name: 'a cluster serving the ServiceMonitor CRD, described without', state: (o) => o.push(serviceMonitorCrd()) },
  { name: 'a ServiceMonitor CRD described that the cluster lacks', edit: (d) => { d.monitoring = { serviceMonitorCrd: true }; } },
  { name: 'no GPU worker at all', state: (o) => nodes(o).forEach((n) => { delete n.status.allocatable['nvidia.com/gpu']; }) },
  { name: 'a product label with a NUL', state: (o) => gpuNodes(o).forEach((n) => { n.metadata.labels['nvidia.com/gpu.product'] = 'NVIDIA\u0000H100'; }) },
  { name: 'a product label too long for a label value', state: (o) => gpuNodes(o).forEach((n) => { n.metadata.labels['nvidia.com/gpu.product'] = 'X'.repeat(100); }) },
  { name: 'allocatable memory under 1 MiB', state: (o) => gpuNodes(o).forEach((n) => { n.status.allocatable.memory = '512Ki'; }) },
  { name: 'more GPUs per node than the schema allows', state: (o) => gpuNodes(o).forEach((n) => { n.status.allocatable['nvidia.com/gpu'] = '1000'; }) },
  { name: 'an RDMA resource name the description cannot take', state: (o) => gpuNodes(o).forEach((n) => { n.status.allocatable['rdma/Bad Name!'] = '63'; delete n.status.allocatable['rdma/rdma_shared_device_a']; }) },
  {
    name: 'a Dashboard Service of our own on a port another Service holds',
    edit: (d) => { d.monitoring = { dashboard: { service: 'own', nodePort: 30555 } }; },
    state: (o) => o.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'other', namespace: 'default' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: 30555 }] } }),
  },
];

/** The description edits of a fix text: every `set ... in the description`, split into its fields. */
function editsOf(fix: string): { path: string; value: unknown }[] {
  const out: { path: string; value: unknown }[] = [];
  for (const m of fix.matchAll(/\bset (.+?) in the description/g)) {
    for (const part of m[1].split(/ and (?=[a-z][\w.]*: )/)) {
      const at = part.indexOf(': ');
      out.push({ path: part.slice(0, at), value: parse(`v: ${part.slice(at + 2)}`).v });
    }
  }
  return out;
}

function setPath(target: Record<string, any>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let at = target;
  for (const k of keys.slice(0, -1)) at = (at[k] ??= {});
  at[keys[keys.length - 1]] = value;
}

/** The description's problems at a path after setting it (problems elsewhere do not concern the fix). */
function problemsAt(input: Record<string, any>, edit: { path: string; value: unknown }): string[] {
  const d = structuredClone(input);
  setPath(d, edit.path, edit.value);
  try {
    parseDescription(d);
    return [];
  } catch (e) {
    if (!(e instanceof DescriptionError)) throw e;
    return e.issues.filter((i) => i.path === edit.path || i.path.startsWith(`${edit.path}.`) || i.path.startsWith(`${edit.path}[`)).map((i) => `${i.path}: ${i.message}`);
  }
}

function run(s: Scenario): { input: Record<string, any>; findings: PreflightFinding[] } {
  const input = s.adopted ? structuredClone(ADOPTED) : referenceInput();
  s.edit?.(input);
  const objects = snapshotObjects() as Objects;
  s.state?.(objects);
  const cluster = renderCluster(buildModel(parseDescription(structuredClone(input))));
  return { input, findings: preflight(cluster, new ClusterState('scenario', objects)) };
}

describe('every description edit preflight suggests is valid in the description', () => {
  const seen = new Map<string, string[]>();

  it.each(SCENARIOS)('$name', (s) => {
    const { input, findings } = run(s);
    for (const f of findings) {
      for (const edit of editsOf(f.fix)) {
        expect(problemsAt(input, edit), `[${f.rule}] ${f.fix}`).toEqual([]);
        seen.set(f.rule, [...(seen.get(f.rule) ?? []), `${edit.path}: ${JSON.stringify(edit.value)}`]);
      }
    }
  });

  it('the scenarios reach every rule that suggests description edits', () => {
    expect([...seen.keys()].sort()).toEqual([
      'api-missing', 'drift-allocatable', 'drift-gpu-product', 'drift-gpus-per-node', 'drift-node-count', 'drift-rdma', 'drift-service-monitor-crd', 'drift-taints',
      'immutable-field', 'kueue-clusterqueue-metrics', 'kueue-integrations', 'nodeport-allocated', 'quota-outside-cohort',
    ]);
  });
});

describe('fixes name what to do where the description cannot take the cluster\'s value', () => {
  const fixOf = (s: Scenario, rule: string) => run(s).findings.filter((f) => f.rule === rule).map((f) => f.fix);

  it('no GPU worker: repair the cluster, never count: 0', () => {
    expect(fixOf(SCENARIOS.find((s) => s.name === 'no GPU worker at all')!, 'drift-node-count'))
      .toEqual(['no node advertises nvidia.com/gpu: check the GPU Operator\'s device plugin (kubectl -n gpu-operator get pods) and that the state holds every node (kubectl get nodes -o yaml)']);
  });

  it('memory as a readable quantity, rounded down (1843Gi for 1932735284Ki), which then matches', () => {
    expect(fixOf(SCENARIOS[0], 'drift-allocatable')).toContain('set nodes.gpuWorkers.memory: 1843Gi in the description');
    const adopted = run({ name: 'adopted with 1843Gi', adopted: true, edit: (d) => { d.nodes.gpuWorkers.memory = '1843Gi'; } });
    expect(adopted.findings.filter((f) => f.rule === 'drift-allocatable')).toEqual([]);
  });

  it('a product label the description cannot take: check GPU Feature Discovery', () => {
    for (const name of ['a product label with a NUL', 'a product label too long for a label value']) {
      expect(fixOf(SCENARIOS.find((s) => s.name === name)!, 'drift-gpu-product')).toEqual(['check GPU Feature Discovery on these nodes (kubectl -n gpu-operator get pods)']);
    }
  });
});
