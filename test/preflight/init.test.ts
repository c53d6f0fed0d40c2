import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { kubeconfigFor, serveState } from './api-server';
import { changedSnapshot, SNAPSHOT, snapshotObjects } from './snapshots';
import { main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { judgeAddOns } from '../../src/init/add-ons';
import { parseQuantity } from '../../src/model/quantity';
import { readSnapshot } from '../../src/preflight/snapshot';
import { ClusterState } from '../../src/preflight/state';
import { HAS_SCHEMAS, serviceMonitorCrd } from '../helpers';

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
    const nodes = snapshotObjects().filter((o) => o.kind === 'Node');
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
    expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'lab2', '--out', '-'], { out: (l) => lines.push(l), err: () => {} })).toBe(EXIT.ok);
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
      expect(await main(['init', '--kubeconfig', '--name', 'lab', '--out', '-'], { out: (l) => live.push(l), err: () => {} })).toBe(EXIT.ok);
      const snap: string[] = [];
      expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'lab', '--out', '-'], { out: (l) => snap.push(l), err: () => {} })).toBe(EXIT.ok);
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
    expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'Not_A_Label', '--out', '-'], { out: () => {}, err: (l) => err.push(l) })).toBe(EXIT.badInput);
    expect(err[0]).toContain('--name');
  });

  it.each([
    [['--path', '../../../etc'], /^error: --path: expected a path inside the repository: "\.\." leads out of it/],
    [['--path', '/etc'], /^error: --path: expected a path relative to the repository's top \(dist\/<name>\): no leading "\/"/],
    [['--path', 'dist/a\nb'], /^error: --path: expected a path relative to the repository's top/],
    [['--repo=--upload-pack=touch /tmp/pwned'], /^error: --repo: expected a Git repository URL: https:\/\/HOST\/PATH, ssh:\/\/\[USER@\]HOST\/PATH or USER@HOST:PATH/],
    // parseArgs' own refusal of a value that looks like an option: one line too
    [['--repo', '--upload-pack=touch /tmp/pwned'], /^error: Option '--repo' argument is ambiguous\. Did you forget .*; see --help$/],
    [['--repo', 'ext::sh -c touch% /tmp/pwned'], /^error: --repo: expected a Git repository URL/],
    [['--repo', 'file:///etc'], /^error: --repo: expected a Git repository URL/],
    [['--repo', 'https://git.example.com/lab.git\nevil: true'], /^error: --repo: expected a Git repository URL/],
  ])('%j exits 2 in one line naming the option, as the description\'s own field refuses it; nothing is written', (given, says) => {
    const out = path.join(dir, 'refused.yaml');
    const err: string[] = [];
    expect(main(['init', '--snapshot', SNAPSHOT, '--name', 'lab', ...given, '--out', out], { out: () => {}, err: (l) => err.push(l) })).toBe(EXIT.badInput);
    expect(err).toEqual([expect.stringMatching(says)]);
    expect(err[0]).not.toContain('\n');
    expect(existsSync(out)).toBe(false);
  });
});

describe('init describes what it sees, marks what it cannot decide, refuses what it cannot describe', () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'init-cases-')); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const snapshot = (name: string, change: (objects: any[]) => void) => changedSnapshot(dir, name, change);
  const gpuNodes = (objects: any[]) => objects.filter((o) => o.kind === 'Node' && o.status.allocatable['nvidia.com/gpu']);

  /** init, printing the description (--out -) unless the case names an --out: this repository is a project too. */
  function init(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = main(['init', ...args, ...(args.includes('--out') ? [] : ['--out', '-'])], { out: (l) => out.push(l), err: (l) => err.push(l) }) as number;
    return { code, out, err, text: out.join('\n') };
  }

  it('no node at all, or no GPU worker: exit 2 saying why and what to do', () => {
    const noNodes = init('--snapshot', snapshot('no-nodes', (o) => o.splice(0, o.length, ...o.filter((x) => x.kind !== 'Node'))));
    expect(noNodes.code).toBe(EXIT.badInput);
    expect(noNodes.err).toEqual([expect.stringMatching(/no-nodes\.yaml holds no Node: init describes the nodes it sees; add the output of kubectl get nodes -o yaml/)]);
    const noGpu = init('--snapshot', snapshot('no-gpu', (o) => gpuNodes(o).forEach((n) => { delete n.status.allocatable['nvidia.com/gpu']; })));
    expect(noGpu.code).toBe(EXIT.badInput);
    expect(noGpu.err).toEqual([expect.stringMatching(/no node advertises nvidia\.com\/gpu \(4 node\(s\): service-0, gpu-worker-0, .*\), so there are no GPU workers to describe: is the GPU Operator's device plugin running/)]);
    expect(noGpu.out).toEqual([]);
  });

  it('mixed GPU products: the largest group, with a TODO naming every product and its nodes', () => {
    const r = init('--snapshot', snapshot('mixed-products', (o) => o.filter((x) => x.metadata.name === 'gpu-worker-1').forEach((n) => {
      n.metadata.labels['nvidia.com/gpu.product'] = 'NVIDIA-A100-SXM4-80GB';
    })), '--name', 'lab');
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    const d = parse(r.text);
    expect(d.nodes.gpuWorkers).toMatchObject({ count: 2, gpuProduct: 'NVIDIA-H100-80GB-HBM3' });
    expect(r.text).toMatch(/gpuProduct: NVIDIA-H100-80GB-HBM3 # TODO\(init\): the GPU workers carry different products: NVIDIA-H100-80GB-HBM3 on 2 node\(s\) \(gpu-worker-0, gpu-worker-2\); NVIDIA-A100-SXM4-80GB on 1 node\(s\) \(gpu-worker-1\)\. A description has one GPU node group: the 2 node\(s\) of NVIDIA-H100-80GB-HBM3 are described/);
  });

  it('mixed GPU counts: the smallest, with a TODO naming each count and its nodes', () => {
    const r = init('--snapshot', snapshot('mixed-counts', (o) => o.filter((x) => x.metadata.name === 'gpu-worker-2').forEach((n) => {
      n.status.allocatable['nvidia.com/gpu'] = '7';
    })), '--name', 'lab');
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    expect(parse(r.text).nodes.gpuWorkers.gpusPerNode).toBe(7);
    expect(r.text).toMatch(/gpusPerNode: 7 # TODO\(init\): the nodes advertise different nvidia\.com\/gpu counts: 8 on gpu-worker-0, gpu-worker-1; 7 on gpu-worker-2\. The smallest is taken/);
  });

  it('a value the description cannot take (a NUL in the product label) exits 2; comments never carry control characters', () => {
    const nul = init('--snapshot', snapshot('nul', (o) => gpuNodes(o).forEach((n) => { n.metadata.labels['nvidia.com/gpu.product'] = 'NVIDIA\u0000H100'; })));
    expect(nul.code).toBe(EXIT.badInput);
    expect(nul.err).toEqual([expect.stringMatching(/nul\.yaml: what the cluster shows does not fit a description: nodes\.gpuWorkers\.gpuProduct: expected a label value .*got "NVIDIA\\u0000H100"/)]);
    expect(nul.err[0]).not.toContain('\u0000');
    const names = init('--snapshot', snapshot('names', (o) => gpuNodes(o).forEach((n, i) => { n.metadata.name = `gpu\u0007${i}\nevil: true`; })), '--name', 'lab');
    expect(names.code, names.err.join('\n')).toBe(EXIT.ok);
    expect(names.text).not.toMatch(/[\u0000-\u0008\u000b-\u001f]|^evil:/m);
    expect(names.text).toContain('gpu\\u00070\\nevil: true');
  });

  // taints the node lifecycle controller, the kubelet or the cloud controller set on a node in trouble: never described
  it.each([
    ['node.kubernetes.io/not-ready', 'NoExecute'], ['node.kubernetes.io/unreachable', 'NoExecute'], ['node.kubernetes.io/not-ready', 'NoSchedule'],
    ['node.kubernetes.io/memory-pressure', 'NoSchedule'], ['node.kubernetes.io/disk-pressure', 'NoSchedule'], ['node.kubernetes.io/pid-pressure', 'NoSchedule'],
    ['node.kubernetes.io/network-unavailable', 'NoSchedule'], ['node.kubernetes.io/unschedulable', 'NoSchedule'], ['node.cloudprovider.kubernetes.io/uninitialized', 'NoSchedule'],
  ])('every node tainted %s:%s (a cluster in trouble): described without it, the nodes named', (key, effect) => {
    const r = init('--snapshot', snapshot(`transient-${key.split('/')[1]}-${effect}`, (o) => o.filter((x) => x.kind === 'Node').forEach((n) => {
      n.spec = { ...n.spec, taints: [...(n.spec?.taints ?? []), { key, effect, timeAdded: '2026-01-01T00:00:00Z' }] };
    })), '--name', 'lab');
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    expect(r.text).not.toContain(`key: ${key}`);
    const d = parse(r.text);
    expect(d.nodes.service.taints).toEqual([{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]);
    expect(d.nodes.gpuWorkers.taints).toBeUndefined();
    expect(r.text).toContain(`# TODO(init): node(s) service-0, gpu-worker-0, gpu-worker-1, gpu-worker-2 carry ${key}:${effect}, taints Kubernetes sets on a node in trouble`);
  });

  it('one GPU worker not ready: the others describe the group, the one is named', () => {
    const r = init('--snapshot', snapshot('one-not-ready', (o) => o.filter((x) => x.metadata.name === 'gpu-worker-1').forEach((n) => {
      n.spec = { ...n.spec, taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }, { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }] };
    })), '--name', 'lab');
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    expect(parse(r.text).nodes.gpuWorkers.count).toBe(3);
    expect(r.text).toContain('# TODO(init): node(s) gpu-worker-1 carry node.kubernetes.io/unreachable:NoExecute, node.kubernetes.io/unreachable:NoSchedule, taints');
  });

  it('a combination the components refuse (every node, the service node too, with the same taint of its own): exit 2 in one line, never an internal error', () => {
    const r = init('--snapshot', snapshot('shared-taint', (o) => o.filter((x) => x.kind === 'Node').forEach((n) => {
      n.spec = { ...n.spec, taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] };
    })), '--name', 'lab');
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(/^error: .*shared-taint\.yaml: what the cluster shows does not fit a description: nodes\.gpuWorkers\.taints: the GPU operands would tolerate the service node taint/)]);
  });

  it('more Nodes than a description describes: refused while the state is read (snapshot, live), before init describes them', async () => {
    // (preflight reads them all: it reports the count a description cannot take as a finding, test/preflight/output.test.ts)
    const objects = snapshotObjects();
    const [node] = gpuNodes(objects);
    for (let i = 0; i < 5001; i++) objects.push({ ...structuredClone(node), metadata: { ...structuredClone(node.metadata), name: `gpu-extra-${i}` } });
    // JSON is YAML, and written at once
    const file = path.join(dir, 'too-many.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    const says = /more than 5000 Nodes, the largest cluster Kubernetes supports and a description describes: is this one cluster\?/;
    const err: string[] = [];
    expect(main(['init', '--snapshot', file, '--out', '-'], { out: () => {}, err: (l) => err.push(l) })).toBe(EXIT.badInput);
    expect(err).toEqual([expect.stringMatching(new RegExp(`^error: --snapshot .*too-many\\.json: ${says.source}`))]);
    const server = await serveState(new ClusterState('large', objects));
    try {
      const kubeconfig = path.join(dir, 'too-many.kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(server.url));
      const live: string[] = [];
      expect(await main(['init', '--kubeconfig', kubeconfig, '--out', '-'], { out: () => {}, err: (l) => live.push(l) })).toBe(EXIT.badInput);
      expect(live).toEqual([expect.stringMatching(new RegExp(`^error: ${server.url}: ${says.source}`))]);
    } finally {
      await server.close();
    }
  }, 120_000);

  it('a large cluster: the comments name a few nodes and count the rest', () => {
    const r = init('--snapshot', snapshot('large', (o) => {
      const [node] = gpuNodes(o);
      for (let i = 0; i < 1200; i++) o.push({ ...structuredClone(node), metadata: { ...structuredClone(node.metadata), name: `gpu-extra-${i}` } });
    }), '--name', 'lab');
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    expect(parse(r.text).nodes.gpuWorkers.count).toBe(1203);
    expect(r.text).toMatch(/from nodes gpu-extra-0, gpu-extra-1, gpu-extra-10, gpu-extra-100, gpu-extra-1000 and 1198 more/);
    expect(Math.max(...r.text.split('\n').map((l) => l.length))).toBeLessThan(400);
  });

  it('--out "" is refused as synth refuses it; an existing name is named for what it is', () => {
    const empty = init('--snapshot', SNAPSHOT, '--out', '');
    expect(empty.code).toBe(EXIT.badInput);
    expect(empty.err).toEqual(['error: --out "": empty path; name the file to write, or --out - to print the description; nothing was written']);
    const dangling = path.join(dir, 'dangling.yaml');
    symlinkSync(path.join(dir, 'nowhere', 'x.yaml'), dangling);
    const link = init('--snapshot', SNAPSHOT, '--out', dangling);
    expect(link.code).toBe(EXIT.badInput);
    expect(link.err[0]).toMatch(/--out .*dangling\.yaml: a symbolic link to .*nowhere\/x\.yaml, which does not exist; init never overwrites and never writes through a link/);
    const folder = init('--snapshot', SNAPSHOT, '--out', dir);
    expect(folder.err[0]).toMatch(/--out .*: a folder; init never overwrites/);
    expect(lstatSync(dangling).isSymbolicLink()).toBe(true);
    expect(existsSync(path.join(dir, 'nowhere'))).toBe(false);
  });

  it('monitoring.serviceMonitorCrd from the CRDs: absent, served, or a TODO when the state holds no CRD', () => {
    const absent = init('--snapshot', SNAPSHOT, '--name', 'lab');
    expect(parse(absent.text).monitoring).toEqual({ serviceMonitorCrd: false });
    expect(absent.text).toContain('serviceMonitorCrd: false # from the CRDs (servicemonitors.monitoring.coreos.com absent)');
    const served = init('--snapshot', snapshot('service-monitors', (o) => o.push(serviceMonitorCrd())), '--name', 'lab');
    expect(parse(served.text).monitoring).toEqual({ serviceMonitorCrd: true });
    expect(served.text).toContain('serviceMonitorCrd: true # from the CRDs (servicemonitors.monitoring.coreos.com served)');
    const unread = init('--snapshot', snapshot('no-crds', (o) => o.splice(0, o.length, ...o.filter((x) => x.kind !== 'CustomResourceDefinition'))), '--name', 'lab');
    expect(unread.code, unread.err.join('\n')).toBe(EXIT.ok);
    expect(unread.text).toMatch(/serviceMonitorCrd: false # TODO\(init\): the state holds no CustomResourceDefinition: true if kubectl get crd servicemonitors.monitoring.coreos.com finds it/);
  });

  it('a cluster without Argo CD (the Instant Cluster): no TODO for Argo CD\'s CRDs, which the bootstrap of gitops.argocd: managed installs', () => {
    const noArgo = snapshot('no-argocd', (o) => o.splice(0, o.length, ...o.filter((x) => !(x.kind === 'CustomResourceDefinition' && /\.argoproj\.io$/.test(x.metadata.name)))));
    const r = init('--snapshot', noArgo, '--name', 'lab');
    expect(r.code, r.err.join('\n')).toBe(EXIT.ok);
    expect(parse(r.text).gitops.argocd).toBeUndefined();
    expect(r.text).not.toMatch(/argoproj/);
    expect(r.text.split('\n').filter((l) => l.includes('TODO(init): the cluster has no CRD'))).toEqual([]);
    // the check fires: an external Argo CD is no bootstrap of the description's, so its CRDs are the cluster's to have
    const external = { ...parse(r.text), gitops: { ...parse(r.text).gitops, argocd: 'external' } };
    expect(judgeAddOns(readSnapshot(noArgo), external).todos).toEqual(expect.arrayContaining([expect.stringMatching(/^the cluster has no CRD for argoproj\.io\/Application, /)]));
  });

  it('without --name: the name it chose, said on stderr, and the TODO to change it', () => {
    const r = init('--snapshot', SNAPSHOT);
    expect(r.code).toBe(EXIT.ok);
    expect(parse(r.text).name).toBe('my-cluster');
    expect(r.err).toEqual(['init: no --name: the cluster is named my-cluster (its name: line, dist/my-cluster/); pass --name NAME to choose another']);
    expect(init('--snapshot', SNAPSHOT, '--name', 'lab').err).toEqual([]);
  });
});
