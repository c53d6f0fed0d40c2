import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { gpuContainer, kueueGated, kueueSuspended, outside, pod, policyDenials, queued, queuePolicyOf, Request } from './admission-eval';
import { MpiJob } from '../../imports/mpijob-kubeflow.org';
import { PyTorchJob } from '../../imports/pytorchjob-kubeflow.org';
import { checkCluster } from '../../src/check';
import { toleratesCel } from '../../src/components/tenants/lane-rules';
import { QUEUED_JOB_KINDS } from '../../src/components/tenants/tenant-guardrails';
import { TRUSTED_REQUESTERS } from '../../src/components/tenants/trusted-requesters';
import { tolerates } from '../../src/model/model';
import { KUBEFLOW_JOB_GVK, LABELS, RESOURCES, TENANCY } from '../../src/model/names';
import { parseQuantity } from '../../src/model/quantity';
import { Manifest } from '../../src/render/manifest';
import { Edit, findObject, folderObjects, issuesOf, modelOf, renderOf, seededRandom } from '../helpers';

/**
 * Tenants stay in their lane outside Kueue: each guardrail of lane-rules.ts evaluated, with the project's CEL engine,
 * on probe pods it must refuse and on the legitimate ones it must admit, and the ResourceQuota and LimitRange that
 * bound what a tenant runs outside Kueue.
 */

type Obj = Record<string, any>;
const render = (edit?: Edit) => folderObjects(renderOf(edit), 'tenants');
const tenants = render();
const podDenials = (p: Obj, req?: Request, objects = tenants) => policyDenials(objects, 'tenant-pod-guardrails', p, req);
const jobDenials = (j: Obj, req?: Request, objects = tenants) => policyDenials(objects, queuePolicyOf(j), j, req);
const userOf = (who: string) => TRUSTED_REQUESTERS.find((r) => r.who === who)!.username;
const JOB_CONTROLLER = userOf('Job controller');
const MPI_OPERATOR = userOf('MPI Operator');
const cpu = (name = 'c', extra: Obj = {}) => ({ name, image: 'busybox:1.37.0', resources: { requests: { cpu: '1', memory: '1Gi' } }, ...extra });
/** A CPU pod outside Kueue, at the unqueued priority: the debug pod a tenant may run. */
const debugPod = (spec: Obj = {}) => pod(outside({ containers: [cpu()], ...spec }));
/** A GPU pod queued through the tenant's LocalQueue, as Kueue's pod webhook leaves it. */
const queuedGpuPod = (spec: Obj = {}, labels: Obj = {}) => kueueGated(pod({ containers: [gpuContainer()], ...spec }, { labels: { ...queued('research'), ...labels } }));

describe('placement: no toleration of a reserved taint, no nodeName, no node selection onto the service node', () => {
  const TOLERATION = /^tenant pods may not tolerate the taints the platform keeps \(node-role.kubernetes.io\/control-plane:NoSchedule, node.kubernetes.io\/unschedulable:NoSchedule, /;
  const SELECTION = /^tenant pods may not select the service node \(node-role.kubernetes.io\/control-plane=\)/;
  const CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';

  it.each<[string, Obj]>([
    ['the service node\'s taint (Exists)', { key: CONTROL_PLANE, operator: 'Exists', effect: 'NoSchedule' }],
    ['the service node\'s taint, any effect', { key: CONTROL_PLANE, operator: 'Exists' }],
    ['the service node\'s taint (Equal, no value: the taint has none)', { key: CONTROL_PLANE, effect: 'NoSchedule' }],
    ['every taint (empty key, Exists)', { operator: 'Exists' }],
    ['every NoSchedule taint', { operator: 'Exists', effect: 'NoSchedule' }],
    ['a cordoned node', { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
    ['a node under memory pressure', { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' }],
  ])('refuse a toleration of %s, from a tenant and from a controller', (_what, toleration) => {
    expect(podDenials(debugPod({ tolerations: [toleration] }))).toEqual([expect.stringMatching(TOLERATION)]);
    const workerPod = pod({ containers: [gpuContainer()], tolerations: [toleration] });
    expect(podDenials(workerPod, { user: MPI_OPERATOR })).toEqual([expect.stringMatching(TOLERATION)]);
  });

  it('admit what queued GPU pods carry: the GPU taint\'s toleration, the API server\'s not-ready and unreachable ones, a toleration of another effect or value', () => {
    const tolerations = [
      { key: RESOURCES.gpu, operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: CONTROL_PLANE, operator: 'Exists', effect: 'NoExecute' },
      { key: CONTROL_PLANE, operator: 'Equal', value: 'other', effect: 'NoSchedule' },
      { operator: 'Exists', effect: 'NoExecute' },
    ];
    expect(podDenials(queuedGpuPod({ tolerations }))).toEqual([]);
  });

  it('on an update, only an added toleration counts: a pod created before the policy is not stranded', () => {
    const old = debugPod({ tolerations: [{ operator: 'Exists' }] });
    const relabelled = { ...old, metadata: { ...old.metadata, labels: { note: 'x' } } };
    expect(podDenials(relabelled, { operation: 'UPDATE', oldObject: old })).toEqual([]);
    const before = debugPod();
    const added = { ...before, spec: { ...before.spec, tolerations: [{ operator: 'Exists' }] } };
    expect(podDenials(added, { operation: 'UPDATE', oldObject: before })).toEqual([expect.stringMatching(TOLERATION)]);
  });

  it('take the reserved taints from the description: the service node\'s and nodes.reservedTaints', () => {
    const objects = render((d) => {
      d.nodes.service.taints = [{ key: 'dedicated', value: 'platform', effect: 'NoExecute' }];
      d.nodes.reservedTaints = [{ key: 'maintenance', effect: 'NoSchedule' }];
    });
    const refused = (t: Obj) => podDenials(debugPod({ tolerations: [t] }), {}, objects);
    expect(refused({ key: 'dedicated', operator: 'Equal', value: 'platform' })).toEqual([expect.stringMatching(/\(dedicated=platform:NoExecute, maintenance:NoSchedule\)/)]);
    expect(refused({ key: 'maintenance', operator: 'Exists' })).toHaveLength(1);
    expect(refused({ key: 'dedicated', operator: 'Equal', value: 'other' })).toEqual([]);
    expect(refused({ key: CONTROL_PLANE, operator: 'Exists' })).toEqual([]);
  });

  it('the CEL decides tolerations as the scheduler does (model.ts tolerates), over generated tolerations and taints', () => {
    const next = seededRandom(20261201);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
    const keys = ['', 'a', 'b'];
    for (let i = 0; i < 500; i++) {
      const taint = { key: pick(['a', 'b']), effect: pick(['NoSchedule', 'NoExecute', 'PreferNoSchedule']), ...(next() < 0.5 ? {} : { value: pick(['x', 'y']) }) };
      const t: Obj = {};
      const key = pick(keys);
      if (key !== '' || next() < 0.5) t.key = key;
      const operator = pick([undefined, 'Exists', 'Equal']);
      if (operator) t.operator = operator;
      if (next() < 0.5) t.value = pick(['', 'x', 'y']);
      const effect = pick([undefined, '', 'NoSchedule', 'NoExecute']);
      if (effect !== undefined) t.effect = effect;
      const scheduler = tolerates({ ...t, operator: t.operator ?? 'Equal' }, taint);
      expect(evaluate(toleratesCel('t', taint), { t }), JSON.stringify({ t, taint })).toBe(scheduler);
    }
  });

  it('refuse spec.nodeName at creation, whoever creates the pod; admit updates of a pod the scheduler bound', () => {
    const NODE_NAME = /^tenant pods may not set spec.nodeName/;
    expect(podDenials(debugPod({ nodeName: 'service-0' }))).toEqual([expect.stringMatching(NODE_NAME)]);
    expect(podDenials(pod({ containers: [gpuContainer()], nodeName: 'gpu-worker-0' }), { user: JOB_CONTROLLER })).toEqual([expect.stringMatching(NODE_NAME)]);
    const bound = debugPod({ nodeName: 'gpu-worker-0' });
    expect(podDenials({ ...bound, metadata: { ...bound.metadata, labels: { note: 'x' } } }, { operation: 'UPDATE', oldObject: bound })).toEqual([]);
  });

  it('refuse a nodeSelector or required node affinity onto the service node; admit one that keeps a pod off it', () => {
    const required = (expression: Obj) => ({
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [expression] }] } },
    });
    expect(podDenials(debugPod({ nodeSelector: { [CONTROL_PLANE]: '' } }))).toEqual([expect.stringMatching(SELECTION)]);
    expect(podDenials(debugPod({ affinity: required({ key: CONTROL_PLANE, operator: 'Exists' }) }))).toEqual([expect.stringMatching(SELECTION)]);
    expect(podDenials(debugPod({ affinity: required({ key: CONTROL_PLANE, operator: 'In', values: [''] }) }))).toEqual([expect.stringMatching(SELECTION)]);
    for (const operator of ['NotIn', 'DoesNotExist']) {
      expect(podDenials(debugPod({ affinity: required({ key: CONTROL_PLANE, operator, values: operator === 'NotIn' ? [''] : undefined }) }))).toEqual([]);
    }
    // the GPU flavor's node labels, which Kueue adds on admission
    expect(podDenials(queuedGpuPod({ nodeSelector: { [LABELS.gpuPresent]: 'true' } }))).toEqual([]);
  });
});

describe('priorities: a queued pod names only its tenant\'s, a pod outside Kueue only the unqueued class', () => {
  const samples = folderObjects(renderOf((d) => { d.samples = { ...d.samples, namespace: 'research' }; }), 'samples');
  const mpiJob = findObject(samples, 'MPIJob', 'nccl-all-reduce') as Manifest & { spec: any };
  const QUEUED_CLASS = /^a queued pod may name only a priority class its tenant may use \(tenants\[\]\.priorities/;
  const OUTSIDE = /^a pod outside Kueue \(no kueue.x-k8s.io\/queue-name label, or one Kueue did not gate\) must set priorityClassName: unqueued/;
  const JOB_CLASS = /^the pods of a job may name only a priority class its tenant may use/;
  const LABEL = /^the kueue.x-k8s.io\/priority-class label must name a priority its tenant may use/;
  /** The research tenant restricted to low and normal. */
  const restricted = render((d) => { d.tenants[0].priorities = ['low', 'normal']; });

  // The MPIJob itself, its worker pods from the MPI Operator and its launcher's pod from the Job controller: admitted by
  // the real API server (test/cluster/apply-as-argocd.test.ts). What it does not try: a tenant restricted to some classes.
  it('admit the worker pods of an MPIJob with the normal class for a tenant restricted to low and normal', () => {
    expect(mpiJob.spec.mpiReplicaSpecs.Worker.template.spec.priorityClassName).toBe('normal');
    const template = structuredClone(mpiJob.spec.mpiReplicaSpecs.Worker.template);
    expect(podDenials(pod(template.spec, { labels: template.metadata?.labels }), { user: MPI_OPERATOR }, restricted)).toEqual([]);
  });

  it('refuse a pod outside Kueue that names a priority (the issue\'s "high": it would preempt admitted jobs) or none', () => {
    for (const priorityClassName of ['high', 'normal', 'system-node-critical']) {
      expect(podDenials(pod({ containers: [cpu()], priorityClassName }))).toEqual([expect.stringMatching(OUTSIDE)]);
    }
    expect(podDenials(pod({ containers: [cpu()] }))).toEqual([expect.stringMatching(OUTSIDE)]);
    // queue-labelled but not gated: Kueue's pod integration did not take it, so it runs outside the quota
    expect(podDenials(pod({ containers: [cpu()], priorityClassName: 'high' }, { labels: queued('research') }))).toEqual([expect.stringMatching(OUTSIDE)]);
    expect(podDenials(debugPod())).toEqual([]);
  });

  it('refuse, on a queued pod or a job\'s pods, a class the tenant may not use: system ones, unqueued, one left out of tenants[].priorities', () => {
    expect(podDenials(queuedGpuPod({ priorityClassName: 'normal' }))).toEqual([]);
    for (const priorityClassName of ['system-node-critical', 'system-cluster-critical', TENANCY.unqueuedPriorityClass, 'nonexistent']) {
      expect(podDenials(queuedGpuPod({ priorityClassName }))).toEqual([expect.stringMatching(QUEUED_CLASS)]);
      const controllers = pod({ containers: [gpuContainer()], priorityClassName });
      expect(podDenials(controllers, { user: JOB_CONTROLLER })).toEqual([expect.stringMatching(QUEUED_CLASS)]);
    }
    expect(podDenials(queuedGpuPod({ priorityClassName: 'high' }), {}, restricted)).toEqual([expect.stringMatching(QUEUED_CLASS)]);
    expect(podDenials(queuedGpuPod({ priorityClassName: 'low' }), {}, restricted)).toEqual([]);
    // the other tenant keeps all three
    expect(podDenials({ ...queuedGpuPod({ priorityClassName: 'high' }), metadata: { name: 'p', namespace: 'inference', labels: queued('inference') } }, {}, restricted)
      .filter((m) => QUEUED_CLASS.test(m))).toEqual([]);
  });

  it('refuse a job whose pods or WorkloadPriorityClass label name a class the tenant may not use, at submission', () => {
    const job = (template: Obj, labels: Obj = {}) => kueueSuspended({
      apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j', namespace: 'research', labels: { ...queued('research'), ...labels } }, spec: { template },
    });
    expect(jobDenials(job({ spec: { priorityClassName: 'system-node-critical', containers: [cpu()] } }))).toEqual([expect.stringMatching(JOB_CLASS)]);
    expect(jobDenials(job({ spec: { containers: [cpu()] } }, { [LABELS.priorityClass]: 'high' }), {}, restricted)).toEqual([expect.stringMatching(LABEL)]);
    expect(jobDenials(job({ spec: { priorityClassName: 'high', containers: [cpu()] } }), {}, restricted)).toEqual([expect.stringMatching(JOB_CLASS)]);
    expect(jobDenials(job({ spec: { priorityClassName: 'normal', containers: [cpu()] } }, { [LABELS.priorityClass]: 'normal' }), {}, restricted)).toEqual([]);
    const mpi = structuredClone(mpiJob);
    mpi.spec.mpiReplicaSpecs.Worker.template.spec.priorityClassName = TENANCY.unqueuedPriorityClass;
    expect(jobDenials(kueueSuspended(mpi))).toEqual([expect.stringMatching(JOB_CLASS)]);
    expect(podDenials(queuedGpuPod({}, { [LABELS.priorityClass]: 'high' }), {}, restricted)).toEqual([expect.stringMatching(LABEL)]);
  });

  it('say the tenant\'s priorities on its namespace, where the one policy for every tenant reads them', () => {
    const ns = (objects: readonly Manifest[], name: string) => findObject(objects, 'Namespace', name).metadata.labels ?? {};
    const prefixed = (labels: Record<string, string>) => Object.keys(labels).filter((k) => k.startsWith(TENANCY.priorityLabelPrefix)).sort();
    expect(prefixed(ns(tenants, 'research'))).toEqual(['high', 'low', 'normal'].map((p) => `${TENANCY.priorityLabelPrefix}${p}`));
    expect(prefixed(ns(restricted, 'research'))).toEqual(['low', 'normal'].map((p) => `${TENANCY.priorityLabelPrefix}${p}`));
    expect(tenants.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata.name)).toEqual([
      'tenant-pod-guardrails', ...QUEUED_JOB_KINDS.map((k) => `tenant-queue-required-${k.resource}`), 'tenant-service-guardrails',
    ].sort());
    expect(issuesOf((d) => { d.tenants[0].priorities = ['urgent']; })).toEqual([{ path: 'tenants[0].priorities[0]', message: 'unknown priority "urgent"; queueing.priorities has low, normal, high' }]);
    expect(issuesOf((d) => { d.tenants[0].labels = { [`${TENANCY.priorityLabelPrefix}high`]: 'allowed' }; })).toEqual([
      { path: 'tenants[0].labels.priority.gpu-cluster.dev/high', message: expect.stringContaining('use tenants[0].priorities') },
    ]);
    expect(issuesOf((d) => { d.queueing.priorities.push({ name: TENANCY.unqueuedPriorityClass, value: 1 }); }).map((i) => i.path)).toEqual(['queueing.priorities[3].name']);
  });
});

describe('the job kinds Kueue admits as a whole', () => {
  it('are typed at the versions the typed imports declare (the guardrails read them without loading the imports)', () => {
    expect(KUBEFLOW_JOB_GVK).toEqual({ mpiJob: MpiJob.GVK, pyTorchJob: PyTorchJob.GVK });
    const versions = Object.fromEntries(QUEUED_JOB_KINDS.map((k) => [k.resource, `${k.apiGroup}/${k.version}`]));
    expect(versions.mpijobs).toBe(MpiJob.GVK.apiVersion);
    expect(versions.pytorchjobs).toBe(PyTorchJob.GVK.apiVersion);
  });
});

describe('devices: no GPU past the device plugin through env, envFrom or the legacy-image switches', () => {
  const ENV_FROM = /^envFrom could set NVIDIA_VISIBLE_DEVICES, NVIDIA_IMEX_CHANNELS, CUDA_VERSION, NVIDIA_REQUIRE_CUDA from keys admission cannot see/;
  const LEGACY = /^a container that sets CUDA_VERSION \(or empties NVIDIA_REQUIRE_CUDA\) without requesting nvidia.com\/gpu must also set NVIDIA_VISIBLE_DEVICES=void/;
  const fromConfigMap = (prefix?: string) => ({ configMapRef: { name: 'settings' }, ...(prefix === undefined ? {} : { prefix }) });
  const pinned = [{ name: 'NVIDIA_VISIBLE_DEVICES', value: 'void' }, { name: 'NVIDIA_IMEX_CHANNELS', value: 'void' }];

  it('refuse envFrom without a prefix, or with one a device variable starts with, in every kind of container; a ConfigMap\'s keys are not visible to admission', () => {
    for (const prefix of [undefined, '', 'N', 'NVIDIA_', 'NVIDIA_VISIBLE', 'CUDA']) {
      expect(podDenials(debugPod({ containers: [cpu('c', { envFrom: [fromConfigMap(prefix)] })] })), String(prefix)).toEqual([expect.stringMatching(ENV_FROM)]);
    }
    expect(podDenials(debugPod({ containers: [cpu('c', { envFrom: [{ secretRef: { name: 'tokens' } }] })] }))).toEqual([expect.stringMatching(ENV_FROM)]);
    expect(podDenials(debugPod({ initContainers: [cpu('init', { envFrom: [fromConfigMap()] })] }))).toEqual([expect.stringMatching(ENV_FROM)]);
    expect(podDenials(queuedGpuPod({ containers: [{ ...gpuContainer(1), envFrom: [fromConfigMap()] }] }))).toEqual([expect.stringMatching(ENV_FROM)]);
    const running = queuedGpuPod();
    const debugged = { ...running, spec: { ...running.spec, ephemeralContainers: [{ name: 'debug', image: 'i', envFrom: [fromConfigMap()] }] } };
    expect(podDenials(debugged, { operation: 'UPDATE', oldObject: running })).toEqual([expect.stringMatching(ENV_FROM)]);
  });

  it('admit envFrom with a prefix no device variable starts with, or with the device variables pinned in env (env wins over envFrom)', () => {
    expect(podDenials(debugPod({ containers: [cpu('c', { envFrom: [fromConfigMap('APP_'), { secretRef: { name: 'tokens' }, prefix: 'HF_' }] })] }))).toEqual([]);
    expect(podDenials(debugPod({ containers: [cpu('c', { envFrom: [fromConfigMap()], env: pinned })] }))).toEqual([]);
    expect(podDenials(debugPod({ containers: [cpu('c', { envFrom: [fromConfigMap()], env: pinned.slice(0, 1) })] }))).toEqual([expect.stringMatching(ENV_FROM)]);
    // one key of a Secret, named: visible, and allowed
    expect(podDenials(debugPod({ containers: [cpu('c', { env: [{ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'HF_TOKEN' } } }] })] }))).toEqual([]);
  });

  it('refuse the legacy-image switches in a container without GPUs unless NVIDIA_VISIBLE_DEVICES is pinned (an unset one means every GPU then)', () => {
    for (const env of [[{ name: 'CUDA_VERSION', value: '12.4' }], [{ name: 'NVIDIA_REQUIRE_CUDA', value: '' }], [{ name: 'CUDA_VERSION', valueFrom: { configMapKeyRef: { name: 'v', key: 'v' } } }]]) {
      expect(podDenials(debugPod({ containers: [cpu('c', { env })] }))).toEqual([expect.stringMatching(LEGACY)]);
      expect(podDenials(debugPod({ containers: [cpu('c', { env: [...env, pinned[0]] })] }))).toEqual([]);
      expect(podDenials(queuedGpuPod({ containers: [{ ...gpuContainer(1), env }] }))).toEqual([]);
    }
    expect(podDenials(debugPod({ containers: [cpu('c', { env: [{ name: 'CUDA_VERSION', value: '' }, { name: 'NVIDIA_REQUIRE_CUDA', value: 'cuda>=12.0' }] })] }))).toEqual([]);
  });
});

describe('what a tenant runs outside Kueue: the unqueued PriorityClass, a ResourceQuota and a LimitRange per tenant', () => {
  const quota = (objects: readonly Manifest[], ns: string) => findObject(objects, 'ResourceQuota', TENANCY.unqueuedQuota, ns) as Manifest & { spec: any };
  const limits = (objects: readonly Manifest[], ns: string) => findObject(objects, 'LimitRange', TENANCY.limitRange, ns) as Manifest & { spec: any };

  it('a PriorityClass below every described priority and below 0 (a pod without a class), that never preempts', () => {
    const pc = findObject(tenants, 'PriorityClass', TENANCY.unqueuedPriorityClass) as Manifest & Obj;
    expect(pc).toMatchObject({ value: -1, preemptionPolicy: 'Never', globalDefault: false });
    const negative = findObject(render((d) => { d.queueing.priorities[0].value = -50; }), 'PriorityClass', TENANCY.unqueuedPriorityClass) as Manifest & Obj;
    expect(negative.value).toBe(-51);
  });

  it('a ResourceQuota per tenant, scoped to exactly the pods the guardrails send outside Kueue, from tenants[].unqueued (defaults 4 CPU, 16Gi, 10 pods)', () => {
    for (const ns of ['research', 'inference']) {
      expect(quota(tenants, ns).spec).toEqual({
        hard: { 'requests.cpu': '4', 'requests.memory': '16Gi', 'pods': 10 },
        scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: [TENANCY.unqueuedPriorityClass] }] },
      });
      expect(limits(tenants, ns).spec).toEqual({ limits: [{ type: 'Container', defaultRequest: { cpu: '250m', memory: '256Mi' } }] });
    }
    const custom = render((d) => { d.tenants[1].unqueued = { cpu: '500m', memory: '2Gi', pods: 2 }; d.tenants[1].defaultRequest = { cpu: '100m' }; });
    expect(quota(custom, 'inference').spec.hard).toEqual({ 'requests.cpu': '500m', 'requests.memory': '2Gi', 'pods': 2 });
    expect(limits(custom, 'inference').spec.limits[0].defaultRequest).toEqual({ cpu: '100m', memory: '256Mi' });
  });

  it('admit a tenant CPU pod within its ResourceQuota: the guardrails let it through, and its requests (with the LimitRange defaults) fit the quota the guardrails point it to', () => {
    const p = debugPod({ containers: [{ name: 'main', image: 'busybox:1.37.0' }, cpu('helper')] });
    expect(podDenials(p)).toEqual([]);
    const q = quota(tenants, 'research').spec;
    expect(q.scopeSelector.matchExpressions[0].values).toContain(p.spec.priorityClassName);
    const defaults = limits(tenants, 'research').spec.limits[0].defaultRequest;
    const requests = (r: string) => p.spec.containers.reduce((n: number, c: Obj) => n + parseQuantity(c.resources?.requests?.[r] ?? defaults[r]), 0);
    expect(requests('cpu')).toBeLessThanOrEqual(parseQuantity(q.hard['requests.cpu']));
    expect(requests('memory')).toBeLessThanOrEqual(parseQuantity(q.hard['requests.memory']));
    // a queued pod is not in the quota's scope: it may not name the class
    expect(podDenials(queuedGpuPod({ priorityClassName: TENANCY.unqueuedPriorityClass }))).toHaveLength(1);
  });

  it('keep the tenants\' allowances out of the Kueue quotas, so the workers\' reserve stays with the DaemonSets', () => {
    const shared = (m: ReturnType<typeof modelOf>) => m.queueing.queues.reduce((n, q) => n + parseQuantity(q.quota.cpu), 0);
    const w = modelOf().description.nodes.gpuWorkers;
    const forWorkloads = w.count * (parseQuantity(w.cpu) - parseQuantity(w.reserved.cpu));
    expect(shared(modelOf())).toBe(forWorkloads - 2 * 4);
    expect(shared(modelOf((d) => { d.tenants.forEach((t: Obj) => { t.unqueued = { cpu: '0', memory: '0' }; }); }))).toBe(forWorkloads);
    expect(issuesOf((d) => { d.tenants[1].unqueued = { cpu: '400' }; })).toEqual([{
      path: 'tenants[1].unqueued.cpu',
      message: 'the tenants\' cpu outside Kueue adds up to 404 here, and the GPU workers keep 380 for the quotas (2 x (192 - reserved 2)): nothing would be left for Kueue; lower tenants[].unqueued.cpu, got "400"',
    }]);
  });

  it('pass the tenant-guardrails-admit check with every rendered workload, samples in a tenant namespace included', () => {
    const c = renderOf((d) => { d.samples = { ...d.samples, namespace: 'research' }; });
    expect(checkCluster(c).filter((f) => f.rule === 'tenant-guardrails-admit' && !f.message.includes('dcgm-diag'))).toEqual([]);
  });
});

describe('Argo CD (the argocd component) and the tenant guardrails agree', () => {
  const c = renderOf();
  const project = findObject(folderObjects(c, 'gitops'), 'AppProject', c.model.name) as Manifest & { spec: any };

  it('Argo CD\'s namespace is no tenant\'s: no tenant label (the guardrails\' bindings select by it), and no tenant may take it', () => {
    const ns = findObject(folderObjects(c, 'argocd'), 'Namespace', c.model.description.gitops.namespace);
    expect(Object.keys(ns.metadata.labels ?? {})).not.toContain(LABELS.tenant);
    const bindings = tenants.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding') as (Manifest & { spec: any })[];
    for (const b of bindings) expect(b.spec.matchResources.namespaceSelector.matchExpressions).toEqual([{ key: LABELS.tenant, operator: 'Exists' }]);
    expect(issuesOf((d) => { d.tenants[1].namespace = 'argocd'; })).toEqual([{ path: 'tenants[1].namespace', message: 'tenant namespace "argocd" collides with a system namespace' }]);
    expect(issuesOf((d) => { d.gitops.namespace = 'gitops'; d.tenants[1].namespace = 'gitops'; }))
      .toEqual([{ path: 'tenants[1].namespace', message: 'tenant namespace "gitops" collides with a system namespace' }]);
  });

  it('the AppProject lets the tenants Application write the unqueued PriorityClass, and the ResourceQuota and LimitRange into every tenant namespace', () => {
    expect(project.spec.clusterResourceWhitelist).toContainEqual({ group: 'scheduling.k8s.io', kind: 'PriorityClass' });
    // no namespaced whitelist: every namespaced kind, in the listed destinations only
    expect(project.spec.namespaceResourceWhitelist).toBeUndefined();
    const destinations = project.spec.destinations.map((d: Obj) => d.namespace);
    for (const q of tenants.filter((o) => o.kind === 'ResourceQuota' || o.kind === 'LimitRange')) expect(destinations).toContain(q.metadata.namespace);
  });
});
