import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { skypilotPodGroup } from './pod-shape';
import { checkCluster } from '../../src/check/engine';
import { readClusterFolder } from '../../src/check/tree';
import { diffTrees } from '../../src/commands/diff';
import { loadDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { Manifest, RenderedCluster } from '../../src/render/manifest';
import { manifestFiles } from '../../src/render/tree';
import { clusterFiles } from '../../src/synth/layout';
import { renderCluster } from '../../src/synth/render';
import { Edit, findObject, folderObjects, renderOf, TRAINING_FILE } from '../helpers';

const clientFile = (c: RenderedCluster, p: string): any => {
  const f = (c.clientFiles ?? []).find((x) => x.path === p);
  if (!f) throw new Error(`no client file ${p} among ${(c.clientFiles ?? []).map((x) => x.path).join(', ')}`);
  return parse(f.content);
};
/** The reference with the SkyPilot tutorial on (it is opt-in), and `edit` applied. */
const skypilot = (edit: Edit = () => {}): Edit => (d) => {
  d.tutorials = { ...d.tutorials, skypilot: { ...d.tutorials?.skypilot, enabled: true } };
  edit(d);
};
const ref = renderOf(skypilot());
const queueNamespaces = ref.model.queueing.queues.map((q) => q.namespace);

describe('SkyPilot identities', () => {
  const objects = folderObjects(ref, 'skypilot') as (Manifest & { rules?: any[]; roleRef?: any; subjects?: any[] })[];
  const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

  it('are a launcher and a workload identity (ServiceAccount, Role, RoleBinding each) in "default" and in every tenant namespace', () => {
    expect(queueNamespaces).toEqual(['default', 'research', 'inference']);
    for (const kind of ['ServiceAccount', 'Role', 'RoleBinding']) {
      expect(objects.filter((m) => m.kind === kind).map((m) => `${m.metadata.namespace}/${m.metadata.name}`).sort())
        .toEqual(queueNamespaces.flatMap((ns) => [`${ns}/skypilot`, `${ns}/skypilot-workload`]).sort());
    }
  });

  it('the launcher holds SkyPilot\'s documented minimum in the namespace and reads nodes, RuntimeClasses and StorageClasses cluster-wide', () => {
    const role = findObject(objects, 'Role', 'skypilot', 'research') as any;
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['pods', 'pods/status', 'pods/exec', 'pods/portforward', 'services', 'secrets'], verbs: ALL },
      { apiGroups: [''], resources: ['events'], verbs: ['get', 'list', 'watch'] },
    ]);
    const clusterScoped = objects.filter((m) => m.metadata.namespace === undefined);
    expect(clusterScoped.filter((m) => m.kind === 'ClusterRole').map((m) => m.metadata.name)).toEqual(['skypilot-node-reader']);
    expect(new Set(clusterScoped.map((m) => m.kind))).toEqual(new Set(['ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']));
    const reader = clusterScoped.find((m) => m.kind === 'ClusterRole')!;
    expect(reader.rules!.flatMap((r) => r.resources.map((res: string) => `${r.apiGroups[0]}/${res}`)).sort())
      .toEqual(['/nodes', 'node.k8s.io/runtimeclasses', 'storage.k8s.io/storageclasses']);
    expect(new Set(reader.rules!.flatMap((r) => r.verbs))).toEqual(new Set(['get', 'list', 'watch']));
    for (const b of clusterScoped.filter((m) => m.kind === 'ClusterRoleBinding')) {
      expect(b.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'skypilot-node-reader' });
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'skypilot', namespace: b.metadata.name.replace('skypilot-node-reader-', '') }]);
    }
  });

  it('the workload identity holds what autodown does in v0.10 and nothing else: list and delete its pods and Services, list Deployments', () => {
    // sky/provision/kubernetes/instance.py (v0.10.4) terminate_instances, run by the head pod's skylet:
    // filter_pods (list pods), is_high_availability_cluster_by_kubectl (list deployments),
    // _terminate_node (delete services <pod> and <pod>-ssh, then delete the pod).
    expect((findObject(objects, 'Role', 'skypilot-workload', 'research') as any).rules).toEqual([
      { apiGroups: [''], resources: ['pods', 'services'], verbs: ['get', 'list', 'delete'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] },
    ]);
  });

  it('binds each Role to its own ServiceAccount only: tenant groups get nothing new', () => {
    for (const b of objects.filter((m) => m.kind === 'RoleBinding')) {
      expect(b.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: b.metadata.name });
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: b.metadata.name, namespace: b.metadata.namespace }]);
    }
  });

  it('no tenant, SkyPilot identity or sample can bind, escalate, impersonate, write RBAC or request a token', () => {
    // The RBAC doors to another identity's rights (Kubernetes RBAC: privilege escalation prevention).
    const all = ref.folders.flatMap((f) => f.objects) as (Manifest & { rules?: any[] })[];
    const roles = all.filter((m) => m.kind === 'Role' || m.kind === 'ClusterRole');
    expect(roles.length).toBeGreaterThan(6);
    for (const r of roles) {
      for (const rule of r.rules ?? []) {
        const where = `${r.kind} ${r.metadata.namespace ?? ''}/${r.metadata.name}`;
        expect(rule.verbs, where).not.toContain('*');
        for (const v of ['bind', 'escalate', 'impersonate']) expect(rule.verbs, where).not.toContain(v);
        expect(rule.apiGroups ?? [], where).not.toContain('rbac.authorization.k8s.io');
        expect(rule.resources ?? [], where).not.toContain('serviceaccounts/token');
      }
    }
  });

  it('is not rendered unless the tutorial is on (tutorials.skypilot.enabled, default false)', () => {
    const off = renderOf();
    expect(off.folders.map((f) => f.folder)).not.toContain('skypilot');
    expect(off.clientFiles ?? []).toEqual([]);
  });
});

describe('the tutorials are opt-in', () => {
  const tutorialObjects = (c: RenderedCluster) => [
    ...folderObjects(c, 'skypilot'), ...folderObjects(c, 'dynamo'),
    ...folderObjects(c, 'gitops').filter((a) => /-(skypilot|dynamo)$/.test(a.metadata.name)),
  ];

  it('the reference renders no tutorial object and no client file', () => {
    const c = renderOf();
    expect(c.model.description.tutorials.skypilot.enabled).toBe(false);
    expect(c.model.description.tutorials.dynamo.enabled).toBe(false);
    expect(tutorialObjects(c)).toEqual([]);
    expect(c.clientFiles ?? []).toEqual([]);
  });

  it('the training cluster (as the example of the same name) turns both on and renders both', () => {
    const c = renderCluster(buildModel(loadDescription(TRAINING_FILE)));
    expect(folderObjects(c, 'skypilot').length).toBeGreaterThan(0);
    expect(folderObjects(c, 'dynamo').map((g) => g.kind)).toEqual(['DynamoGraphDeployment', 'DynamoGraphDeployment']);
    expect((c.clientFiles ?? []).map((f) => f.path)).toContain('skypilot/research/train.yaml');
  });
});

describe('SkyPilot identity guard (admission policies, evaluated with CEL)', () => {
  const objects = folderObjects(ref, 'skypilot');
  const LAUNCHER = 'system:serviceaccount:research:skypilot';
  const TENANT = 'oidc:alice@example.com';
  const JOB_CONTROLLER = 'system:serviceaccount:kube-system:job-controller';

  /** Messages of the validations `object` fails under the named policy (empty: admitted). */
  function denials(policy: string, object: any, user: string, operation: 'CREATE' | 'UPDATE' = 'CREATE'): string[] {
    const spec = findObject(objects, 'ValidatingAdmissionPolicy', policy).spec as { variables?: { name: string; expression: string }[]; validations: { expression: string; message: string }[] };
    const request = { operation, namespace: object.metadata.namespace, userInfo: { username: user, groups: ['system:authenticated'] } };
    const context: Record<string, unknown> = { object, request, variables: {} };
    const variables: Record<string, unknown> = {};
    for (const v of spec.variables ?? []) variables[v.name] = evaluate(v.expression, { ...context, variables });
    return spec.validations.filter((v) => evaluate(v.expression, { ...context, variables }) !== true).map((v) => v.message);
  }
  const pod = (serviceAccountName?: string, field = 'serviceAccountName') => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'research' },
    spec: { ...(serviceAccountName ? { [field]: serviceAccountName } : {}), containers: [{ name: 'c', image: 'busybox:1.37.0' }] },
  });

  it('binds both policies to the namespaces that hold SkyPilot identities', () => {
    for (const name of ['skypilot-identities-pods', 'skypilot-identities-tokens']) {
      expect((findObject(objects, 'ValidatingAdmissionPolicyBinding', name) as any).spec).toEqual({
        policyName: name,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: queueNamespaces }] } },
      });
    }
  });

  it('admits SkyPilot\'s own pods, created by the launcher and running as the workload identity', () => {
    const pods = skypilotPodGroup(ref, 'research');
    expect(pods.map((p) => p.spec && (p.spec as any).serviceAccountName)).toEqual(pods.map(() => 'skypilot-workload'));
    for (const p of pods) expect(denials('skypilot-identities-pods', p, LAUNCHER)).toEqual([]);
  });

  it('refuses a tenant\'s pod (directly or through a Job) running as either SkyPilot identity', () => {
    expect(denials('skypilot-identities-pods', pod('skypilot-workload'), TENANT)).toEqual([
      'only SkyPilot (the ServiceAccount skypilot of this namespace) creates pods that run as skypilot-workload',
    ]);
    expect(denials('skypilot-identities-pods', pod('skypilot-workload'), JOB_CONTROLLER)).toHaveLength(1);
    expect(denials('skypilot-identities-pods', pod('skypilot-workload'), 'system:serviceaccount:inference:skypilot')).toHaveLength(1);
    for (const user of [TENANT, LAUNCHER]) {
      expect(denials('skypilot-identities-pods', pod('skypilot'), user)).toEqual([
        'no pod runs as the ServiceAccount skypilot: it is SkyPilot\'s launcher identity (Secrets, exec, reading nodes); SkyPilot\'s pods run as skypilot-workload',
      ]);
      expect(denials('skypilot-identities-pods', pod('skypilot', 'serviceAccount'), user)).toHaveLength(1);
    }
    expect(denials('skypilot-identities-pods', pod(), TENANT)).toEqual([]);
    expect(denials('skypilot-identities-pods', pod('trainer'), TENANT)).toEqual([]);
  });

  it('refuses a long-lived token Secret for either SkyPilot identity, and only that', () => {
    const secret = (account: string, type = 'kubernetes.io/service-account-token') => ({
      apiVersion: 'v1', kind: 'Secret', type, metadata: { name: 't', namespace: 'research', annotations: { 'kubernetes.io/service-account.name': account } },
    });
    for (const account of ['skypilot', 'skypilot-workload']) {
      for (const op of ['CREATE', 'UPDATE'] as const) expect(denials('skypilot-identities-tokens', secret(account), TENANT, op)).toHaveLength(1);
    }
    expect(denials('skypilot-identities-tokens', secret('trainer'), TENANT)).toEqual([]);
    expect(denials('skypilot-identities-tokens', secret('skypilot', 'Opaque'), TENANT)).toEqual([]);
    expect(denials('skypilot-identities-tokens', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x', namespace: 'research' } }, TENANT)).toEqual([]);
  });

  it('is left out below Kubernetes 1.30 (no ValidatingAdmissionPolicy v1)', () => {
    const old = renderOf(skypilot((d) => { d.kubernetesVersion = '1.29'; }));
    expect(folderObjects(old, 'skypilot').some((m) => m.kind === 'ValidatingAdmissionPolicy')).toBe(false);
  });
});

describe('SkyPilot client files', () => {
  it('configure each namespace\'s context, workload identity and LocalQueue', () => {
    for (const q of ref.model.queueing.queues) {
      const k = clientFile(ref, `skypilot/${q.namespace}/config.yaml`).kubernetes;
      expect(k.allowed_contexts).toEqual(['instant-cluster']);
      // Released SkyPilot (v0.10) refuses kubernetes.namespace: the kubeconfig context carries it.
      expect(k.namespace).toBeUndefined();
      expect(k.remote_identity).toBe('skypilot-workload');
      expect(folderObjects(ref, 'skypilot').some((m) => m.kind === 'ServiceAccount' && m.metadata.name === k.remote_identity && m.metadata.namespace === q.namespace)).toBe(true);
      expect(k.kueue).toEqual({ local_queue_name: q.localQueue });
      expect(folderObjects(ref, 'tenants').concat(folderObjects(ref, 'kueue'))
        .some((m) => m.kind === 'LocalQueue' && m.metadata.name === q.localQueue && m.metadata.namespace === q.namespace)).toBe(true);
      expect(k.provision_timeout).toBe(-1);
    }
    const other = renderOf(skypilot((d) => { d.tutorials.skypilot.context = 'admin@lab'; }));
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
    const noIb = renderOf(skypilot((d) => { delete d.network.infiniband; }));
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
    const c = renderOf(skypilot(big));
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
    for (const [c, gang] of [[ref, 2], [renderOf(skypilot((d) => { d.nodes.gpuWorkers.count = 16; d.tenants[0].gpus = 48; })), 6]] as const) {
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
