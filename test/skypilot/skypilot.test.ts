import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { skypilotPodGroup } from './pod-shape';
import { checkCluster } from '../../src/check/engine';
import { readClusterFolder } from '../../src/check/tree';
import { diffTrees } from '../../src/commands/diff';
import { clusterFiles } from '../../src/render/layout';
import { Manifest } from '../../src/render/manifest';
import { RenderedCluster } from '../../src/render/render';
import { manifestFiles } from '../../src/validate/tree';
import { Edit, folderObjects, renderOf } from '../helpers';

const clientFile = (c: RenderedCluster, p: string): any => {
  const f = (c.clientFiles ?? []).find((x) => x.path === p);
  if (!f) throw new Error(`no client file ${p} among ${(c.clientFiles ?? []).map((x) => x.path).join(', ')}`);
  return parse(f.content);
};
const ref = renderOf();
const queueNamespaces = ref.model.queueing.queues.map((q) => q.namespace);

describe('SkyPilot identity', () => {
  const objects = folderObjects(ref, 'skypilot') as (Manifest & { rules?: any[]; roleRef?: any; subjects?: any[] })[];

  it('has a ServiceAccount, Role and RoleBinding in "default" and in every tenant namespace', () => {
    expect(queueNamespaces).toEqual(['default', 'research', 'inference']);
    for (const kind of ['ServiceAccount', 'Role', 'RoleBinding']) {
      expect(objects.filter((m) => m.kind === kind).map((m) => `${m.metadata.namespace}/${m.metadata.name}`).sort())
        .toEqual(queueNamespaces.map((ns) => `${ns}/skypilot`).sort());
    }
  });

  it('grants SkyPilot\'s documented minimum in the namespace, and reads nodes, RuntimeClasses and StorageClasses cluster-wide, nothing else', () => {
    const role = objects.find((m) => m.kind === 'Role')!;
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['pods', 'pods/status', 'pods/exec', 'pods/portforward', 'services', 'secrets'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'] },
      { apiGroups: [''], resources: ['events'], verbs: ['get', 'list', 'watch'] },
    ]);
    const clusterScoped = objects.filter((m) => m.metadata.namespace === undefined);
    expect(clusterScoped.filter((m) => m.kind === 'ClusterRole').map((m) => m.metadata.name)).toEqual(['skypilot-node-reader']);
    expect(clusterScoped.every((m) => ['ClusterRole', 'ClusterRoleBinding'].includes(m.kind))).toBe(true);
    const reader = clusterScoped.find((m) => m.kind === 'ClusterRole')!;
    expect(reader.rules!.flatMap((r) => r.resources.map((res: string) => `${r.apiGroups[0]}/${res}`)).sort())
      .toEqual(['/nodes', 'node.k8s.io/runtimeclasses', 'storage.k8s.io/storageclasses']);
    expect(new Set(reader.rules!.flatMap((r) => r.verbs))).toEqual(new Set(['get', 'list', 'watch']));
    for (const b of clusterScoped.filter((m) => m.kind === 'ClusterRoleBinding')) {
      expect(b.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'skypilot-node-reader' });
      expect(b.subjects![0]).toMatchObject({ kind: 'ServiceAccount', name: 'skypilot' });
    }
  });

  it('binds the ServiceAccount only: tenant groups get nothing new, and nothing cluster-scoped', () => {
    for (const b of objects.filter((m) => m.kind === 'RoleBinding' || m.kind === 'ClusterRoleBinding')) {
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'skypilot', namespace: b.metadata.namespace ?? b.metadata.name.replace('skypilot-node-reader-', '') }]);
    }
  });

  it('is not rendered when the tutorial is off', () => {
    const off = renderOf((d) => { d.tutorials = { skypilot: { enabled: false } }; });
    expect(off.folders.map((f) => f.folder)).not.toContain('skypilot');
    expect(off.clientFiles ?? []).toEqual([]);
  });
});

describe('SkyPilot client files', () => {
  it('configure each namespace\'s context, namespace, identity and LocalQueue', () => {
    for (const q of ref.model.queueing.queues) {
      const k = clientFile(ref, `skypilot/${q.namespace}/config.yaml`).kubernetes;
      expect(k.allowed_contexts).toEqual(['instant-cluster']);
      expect(k.namespace).toBe(q.namespace);
      expect(k.remote_identity).toBe('skypilot');
      expect(folderObjects(ref, 'skypilot').some((m) => m.kind === 'ServiceAccount' && m.metadata.name === k.remote_identity && m.metadata.namespace === q.namespace)).toBe(true);
      expect(k.kueue).toEqual({ local_queue_name: q.localQueue });
      expect(folderObjects(ref, 'tenants').concat(folderObjects(ref, 'kueue'))
        .some((m) => m.kind === 'LocalQueue' && m.metadata.name === q.localQueue && m.metadata.namespace === q.namespace)).toBe(true);
      expect(k.provision_timeout).toBe(-1);
    }
    const other = renderOf((d) => { d.tutorials = { skypilot: { context: 'admin@lab' } }; });
    expect(clientFile(other, 'skypilot/default/config.yaml').kubernetes.allowed_contexts).toEqual(['admin@lab']);
  });

  it('give SkyPilot\'s pods the RDMA device, IPC_LOCK, a memory-backed /dev/shm and the NCCL fabric settings', () => {
    const spec = clientFile(ref, 'skypilot/research/config.yaml').kubernetes.pod_config.spec;
    const [container] = spec.containers;
    expect(container.name).toBe('ray-node');
    expect(container.resources).toEqual({ requests: { 'rdma/rdma_shared_device_a': '1' }, limits: { 'rdma/rdma_shared_device_a': '1' } });
    expect(container.securityContext.capabilities.add).toEqual(['IPC_LOCK']);
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value]));
    expect(env).toMatchObject({ NCCL_IB_HCA: `=${ref.model.rdma!.hcas.join(',')}`, NCCL_SOCKET_IFNAME: 'eth0', NCCL_IB_DISABLE: '0' });
    expect(spec.volumes).toEqual([{ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '64Gi' } }]);
    const noIb = renderOf((d) => { delete d.network.infiniband; });
    const plain = clientFile(noIb, 'skypilot/research/config.yaml').kubernetes.pod_config.spec.containers[0];
    expect(plain.resources).toBeUndefined();
    expect(plain.env.find((e: any) => e.name === 'NCCL_IB_DISABLE').value).toBe('1');
  });

  it('size the torchrun task from the cluster: whole nodes of this GPU, at least two, at most the workers', () => {
    const task = clientFile(ref, 'skypilot/research/train.yaml');
    expect(task.num_nodes).toBe(2);
    expect(task.resources.accelerators).toBe('H100:8');
    expect(ref.model.description.nodes.gpuWorkers.gpuProduct).toContain(task.resources.accelerators.split(':')[0]);
    expect(task.resources.infra).toBe('k8s/instant-cluster');
    expect(task.run).toContain('torchrun --nnodes="$SKYPILOT_NUM_NODES"');
    const big: Edit = (d) => { d.nodes.gpuWorkers.count = 16; d.nodes.gpuWorkers.gpuProduct = 'NVIDIA-H200'; d.tenants[0].gpus = 48; };
    const c = renderOf(big);
    expect(clientFile(c, 'skypilot/research/train.yaml').num_nodes).toBe(6);
    expect(clientFile(c, 'skypilot/research/train.yaml').resources.accelerators).toBe('H200:8');
    expect(clientFile(c, 'skypilot/inference/train.yaml').num_nodes).toBe(2);
  });

  it('are written under tutorials/, never into a kustomization, never read as manifests or as an Argo CD folder', () => {
    const files = clusterFiles(ref);
    const tutorial = files.filter(([p]) => p.startsWith('instant-cluster/tutorials/'));
    expect(tutorial.map(([p]) => p).sort()).toEqual(queueNamespaces.flatMap((ns) => [
      `instant-cluster/tutorials/skypilot/${ns}/config.yaml`, `instant-cluster/tutorials/skypilot/${ns}/train.yaml`,
    ]).sort());
    for (const [p, content] of files) if (p.endsWith('kustomization.yaml')) expect(content).not.toContain('tutorials');
    expect(JSON.stringify(folderObjects(ref, 'gitops'))).not.toContain('/tutorials');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'skypilot-'));
    try {
      for (const [p, content] of files) {
        mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
        writeFileSync(path.join(dir, p), content);
      }
      expect(manifestFiles(dir).some((f) => f.includes(`${path.sep}tutorials${path.sep}`))).toBe(false);
      expect(readClusterFolder(path.join(dir, 'instant-cluster')).folders.map((f) => f.folder)).not.toContain('tutorials');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('diff of client files', () => {
  it('compares them as files, never as objects', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'skypilot-diff-'));
    const write = (tree: string, file: string, content: string) => {
      mkdirSync(path.dirname(path.join(root, tree, file)), { recursive: true });
      writeFileSync(path.join(root, tree, file), content);
    };
    try {
      for (const [tree, queue] of [['before', 'default'], ['after', 'research']]) {
        write(tree, 'c/kueue/namespace.x.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n');
        write(tree, 'c/tutorials/skypilot/default/config.yaml', `kubernetes:\n  kueue:\n    local_queue_name: ${queue}\n`);
      }
      expect(diffTrees(path.join(root, 'before'), path.join(root, 'after'))).toEqual({
        objects: [],
        files: [{ change: 'changed', file: 'c/tutorials/skypilot/default/config.yaml' }],
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('SkyPilot\'s pods, as it creates them from the rendered files', () => {
  it('form one pod group per namespace that names its LocalQueue and asks only for resources its ClusterQueue covers', () => {
    // research's gang: 2 nodes on the reference, 6 (its 48 GPUs / 8 per node) on the larger cluster
    for (const [c, gang] of [[ref, 2], [renderOf((d) => { d.nodes.gpuWorkers.count = 16; d.tenants[0].gpus = 48; }), 6]] as const) {
      const pods = c.model.queueing.queues.flatMap((q) => skypilotPodGroup(c, q.namespace));
      const folders = [...c.folders, { folder: 'skypilot-pods', description: '', objects: pods }];
      const rules = ['queue-label-target', 'queue-resource-coverage', 'no-privileged', 'image-pinned'];
      expect(checkCluster({ ...c, folders }).filter((f) => rules.includes(f.rule))).toEqual([]);
      const research = skypilotPodGroup(c, 'research');
      expect(research).toHaveLength(gang);
      expect(new Set(research.map((p) => p.metadata.annotations!['kueue.x-k8s.io/pod-group-total-count']))).toEqual(new Set([String(gang)]));
    }
  });

  it('would not be admitted with a queue that does not exist (the rules can fail)', () => {
    const pods = skypilotPodGroup(ref, 'research').map((p) => ({ ...p, metadata: { ...p.metadata, labels: { ...p.metadata.labels, 'kueue.x-k8s.io/queue-name': 'nope' } } }));
    const folders = [...ref.folders, { folder: 'skypilot-pods', description: '', objects: pods }];
    expect(checkCluster({ ...ref, folders }).filter((f) => f.rule === 'queue-label-target')).toHaveLength(pods.length);
  });
});
