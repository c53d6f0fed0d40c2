import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { gpuContainer, kueueGated, kueueSuspended, outside, pod, policyDenials, queued, queuePolicyOf, Request } from './admission-eval';
import { checkCluster } from '../../src/check';
import { TRUSTED_REQUESTERS } from '../../src/components/tenants/trusted-requesters';
import { helmFullname, serviceAccountUser } from '../../src/model/helm-names';
import { KUEUE_POD, LABELS, NAMESPACES, RESOURCES, TENANCY } from '../../src/model/names';
import { OPERATOR_SERVICE_ACCOUNTS } from '../../src/model/operator-accounts';
import { Manifest } from '../../src/render/manifest';
import { findObject, folderObjects, renderOf, SHARED } from '../helpers';

/** The admission policies are CEL: evaluated with the project's CEL engine (admission-eval.ts). */
const tenants = folderObjects(renderOf(), 'tenants');
const samples = folderObjects(renderOf(), 'samples');

const userOf = (who: string) => TRUSTED_REQUESTERS.find((r) => r.who === who)!.username;
/** SkyPilot's per-tenant identity: a ServiceAccount in the tenant's namespace, trusted with nothing. */
const SKYPILOT = serviceAccountUser('research', 'skypilot-research');
const JOB_CONTROLLER = userOf('Job controller');
const REPLICASET_CONTROLLER = userOf('ReplicaSet controller');
const MPI_OPERATOR = userOf('MPI Operator');
const TRAINING_OPERATOR = userOf('Training Operator');
const KUEUE = userOf('Kueue');

type Obj = Record<string, any>;
const denials = (policy: string, object: Obj, req?: Request) => policyDenials(tenants, policy, object, req);
const podDenials = (p: Obj, req?: Request) => denials('tenant-pod-guardrails', p, req);
const jobDenials = (job: Obj, req?: Request) => denials(queuePolicyOf(job), job, req);

const clone = <T>(o: T): T => structuredClone(o);

/** The rendered NCCL test's worker pod spec (GPUs, the RDMA device, IPC_LOCK). */
function ncclWorkerSpec(): Obj {
  const job = findObject(samples, 'MPIJob', 'nccl-all-reduce') as Manifest & { spec: any };
  return clone(job.spec.mpiReplicaSpecs.Worker.template.spec);
}

/**
 * A SkyPilot-shaped multi-node cluster: plain pods, one per node, each with the queue label and
 * Kueue's pod-group label and total-count annotation (a gang), GPUs, the RDMA device and IPC_LOCK.
 */
function skyPilotPodGroup(nodes: number): Obj[] {
  return Array.from({ length: nodes }, (_, i) => pod(ncclWorkerSpec(), {
    name: `train-${i === 0 ? 'head' : `worker${i}`}`,
    labels: { ...queued(), [KUEUE_POD.groupNameLabel]: 'train-2ea4', 'skypilot-cluster': 'train' },
    annotations: { [KUEUE_POD.groupTotalCountAnnotation]: String(nodes) },
  }));
}

describe('tenant admission guardrails: binding', () => {
  it('bind every policy to every tenant namespace, denying', () => {
    for (const name of tenants.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata.name)) {
      const binding = findObject(tenants, 'ValidatingAdmissionPolicyBinding', name) as Manifest & { spec: any };
      expect(binding.spec).toEqual({
        policyName: name,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchExpressions: [{ key: LABELS.tenant, operator: 'Exists' }] } },
      });
    }
  });

  it('are not rendered before Kubernetes 1.30 (ValidatingAdmissionPolicy v1)', () => {
    const old = folderObjects(renderOf((d) => { d.kubernetesVersion = '1.29'; }), 'tenants');
    expect(old.map((o) => o.kind)).not.toContain('ValidatingAdmissionPolicy');
  });
});

describe('tenant admission guardrails: Pod Security baseline (+ IPC_LOCK), whoever creates the pod', () => {
  const c = (securityContext: Obj, extra: Obj = {}) => ({ containers: [{ name: 'c', image: 'i', securityContext, ...extra }] });
  const refused: [string, Obj, Obj, RegExp][] = [
    ['a privileged container', c({ privileged: true }), {}, /may not be privileged/],
    ['a privileged init container', { containers: [{ name: 'c' }], initContainers: [{ name: 'i', securityContext: { privileged: true } }] }, {}, /may not be privileged/],
    ['a privileged ephemeral container', { containers: [{ name: 'c' }], ephemeralContainers: [{ name: 'debug', securityContext: { privileged: true } }] }, {}, /may not be privileged/],
    ['SYS_ADMIN', c({ capabilities: { add: ['IPC_LOCK', 'SYS_ADMIN'] } }), {}, /may add only/],
    ['NET_RAW (dropped from baseline)', c({ capabilities: { add: ['NET_RAW'] } }), {}, /may add only/],
    ['a hostPath volume', { containers: [{ name: 'c' }], volumes: [{ name: 'root', hostPath: { path: '/' } }] }, {}, /hostPath/],
    ['the host network', { containers: [{ name: 'c' }], hostNetwork: true }, {}, /host network/],
    ['the host PID namespace', { containers: [{ name: 'c' }], hostPID: true }, {}, /host PID/],
    ['the host IPC namespace', { containers: [{ name: 'c' }], hostIPC: true }, {}, /host IPC/],
    ['a host port', { containers: [{ name: 'c', ports: [{ containerPort: 22, hostPort: 2222 }] }] }, {}, /host ports/],
    ['a host port on an init container', { containers: [{ name: 'c' }], initContainers: [{ name: 'i', ports: [{ containerPort: 80, hostPort: 80 }] }] }, {}, /host ports/],
    ['seccomp Unconfined on the pod', { containers: [{ name: 'c' }], securityContext: { seccompProfile: { type: 'Unconfined' } } }, {}, /seccomp/],
    ['seccomp Unconfined on a container', c({ seccompProfile: { type: 'Unconfined' } }), {}, /seccomp/],
    ['an unmasked /proc', c({ procMount: 'Unmasked' }), {}, /unmask \/proc/],
    ['an unsafe sysctl', { containers: [{ name: 'c' }], securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] } }, {}, /safe sysctls/],
    ['a node-wide sysctl', { containers: [{ name: 'c' }], securityContext: { sysctls: [{ name: 'vm.overcommit_memory', value: '1' }] } }, {}, /safe sysctls/],
    ['AppArmor unconfined (annotation)', { containers: [{ name: 'c' }] }, { annotations: { 'container.apparmor.security.beta.kubernetes.io/c': 'unconfined' } }, /AppArmor/],
    ['AppArmor Unconfined (pod field)', { containers: [{ name: 'c' }], securityContext: { appArmorProfile: { type: 'Unconfined' } } }, {}, /AppArmor/],
    ['AppArmor Unconfined (container field)', c({ appArmorProfile: { type: 'Unconfined' } }), {}, /AppArmor/],
    ['an SELinux type that escapes the container', c({ seLinuxOptions: { type: 'spc_t' } }), {}, /SELinux/],
    ['an SELinux user on the pod', { containers: [{ name: 'c' }], securityContext: { seLinuxOptions: { user: 'system_u' } } }, {}, /SELinux/],
    ['a Windows host process', c({ windowsOptions: { hostProcess: true } }), {}, /Windows host process/],
  ];
  it.each(refused)('refuse %s, from a tenant and from the Job controller', (_what, spec, metadata, says) => {
    expect(podDenials(pod(outside(spec), metadata))).toEqual([expect.stringMatching(says)]);
    expect(podDenials(pod(spec, metadata), { user: JOB_CONTROLLER })).toEqual([expect.stringMatching(says)]);
  });

  const admitted: [string, Obj, Obj][] = [
    ['a container port without a host port', { containers: [{ name: 'c', ports: [{ containerPort: 22 }, { containerPort: 80, hostPort: 0 }] }] }, {}],
    ['seccomp RuntimeDefault and Localhost', { containers: [{ name: 'c', securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } } }], securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }, {}],
    ['procMount Default', c({ procMount: 'Default' }), {}],
    ['the safe sysctls', { containers: [{ name: 'c' }], securityContext: { sysctls: [{ name: 'net.ipv4.tcp_keepalive_time', value: '60' }, { name: 'net.ipv4.ip_local_port_range', value: '1024 65000' }] } }, {}],
    ['AppArmor runtime/default and localhost/ annotations', { containers: [{ name: 'c' }, { name: 'd' }] }, { annotations: { 'container.apparmor.security.beta.kubernetes.io/c': 'runtime/default', 'container.apparmor.security.beta.kubernetes.io/d': 'localhost/k8s-nccl' } }],
    ['AppArmor RuntimeDefault and Localhost fields', { containers: [{ name: 'c', securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'x' } } }], securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }, {}],
    ['SELinux level and the container type', c({ seLinuxOptions: { type: 'container_t', level: 's0:c123,c456' } }), {}],
    ['IPC_LOCK and the baseline capabilities', c({ capabilities: { add: ['IPC_LOCK', 'NET_BIND_SERVICE', 'CHOWN'], drop: ['ALL'] } }), {}],
    ['the NCCL test workers: GPUs, the RDMA device and IPC_LOCK', ncclWorkerSpec(), {}],
  ];
  it.each(admitted)('admit %s', (_what, spec, metadata) => {
    expect(podDenials(pod(spec, metadata), { user: JOB_CONTROLLER })).toEqual([]);
  });
});

describe('tenant admission guardrails: no GPUs without a GPU request (NVIDIA_VISIBLE_DEVICES, the NVIDIA runtime, RDMA)', () => {
  const env = (value: string | undefined, extra: Obj = {}) => ({ name: 'NVIDIA_VISIBLE_DEVICES', ...(value === undefined ? {} : { value }), ...extra });
  const cpu = (e: Obj[], name = 'c') => ({ name, image: 'i', env: e, resources: { limits: { cpu: '1' } } });
  const withGpus = (e: Obj[], gpus = '1') => ({ name: 'gpu', image: 'i', env: e, resources: { limits: { [RESOURCES.gpu]: gpus } } });
  const ENV = /^no container may set NVIDIA_VISIBLE_DEVICES, NVIDIA_IMEX_CHANNELS to anything but "", "void", "none", nor from a ConfigMap or Secret/;
  const RUNTIME = /^only pods whose every container and init container requests nvidia.com\/gpu, and that have no ephemeral container, may use the NVIDIA runtime classes \(nvidia, nvidia-cdi, nvidia-legacy\)/;
  const NO_LABEL = /must name a LocalQueue/;
  const queuedGated = (spec: Obj) => kueueGated(pod(spec, { labels: queued('research') }));

  it.each<[string, Obj]>([
    ['NVIDIA_VISIBLE_DEVICES=all in a CPU-only container', { containers: [cpu([env('all')])] }],
    ['GPU indices', { containers: [cpu([env('0,1')])] }],
    ['a GPU UUID', { containers: [cpu([env('GPU-7c1b3a66-0000-0000-0000-000000000000')])] }],
    ['a CDI device name', { containers: [cpu([env('nvidia.com/gpu=all')])] }],
    ['a value read from a ConfigMap (unknown at admission)', { containers: [cpu([env(undefined, { valueFrom: { configMapKeyRef: { name: 'gpus', key: 'list' } } })])] }],
    ['a request for zero GPUs', { containers: [withGpus([env('all')], '0')] }],
    ['"all" in a container that requests one GPU (its pod, admitted for 1 GPU, would see 8)', { containers: [withGpus([env('all')], '1')] }],
    ['IMEX channels', { containers: [cpu([{ name: 'NVIDIA_IMEX_CHANNELS', value: '0' }])] }],
    ['an init container', { containers: [cpu([])], initContainers: [cpu([env('all')], 'init')] }],
    ['a sidecar beside a GPU container', { containers: [withGpus([]), cpu([env('all')], 'sidecar')] }],
    ['an ephemeral (debug) container, which can request nothing', { containers: [withGpus([])], ephemeralContainers: [{ name: 'debug', image: 'i', env: [env('all')] }] }],
  ])('refuse %s, whoever creates the pod, queued or not', (_what, spec) => {
    expect(podDenials(pod(spec)).filter((m) => ENV.test(m))).toHaveLength(1);
    expect(podDenials(pod(spec), { user: JOB_CONTROLLER }).filter((m) => ENV.test(m))).toHaveLength(1);
    expect(podDenials(queuedGated(spec)).filter((m) => ENV.test(m))).toHaveLength(1);
  });

  it('refuse a debug container that names GPUs, added to a running GPU pod', () => {
    const running = queuedGated({ containers: [withGpus([])] });
    const debugged = clone(running);
    debugged.spec.ephemeralContainers = [{ name: 'debug', image: 'i', env: [env('all')] }];
    expect(podDenials(debugged, { operation: 'UPDATE', oldObject: running })).toEqual([expect.stringMatching(ENV)]);
  });

  it('admit "no device" values, CUDA_VISIBLE_DEVICES, and a GPU container that leaves the variable to the device plugin', () => {
    for (const value of ['', 'void', 'none', undefined]) expect(podDenials(pod(outside({ containers: [cpu([env(value)])] })))).toEqual([]);
    expect(podDenials(pod(outside({ containers: [cpu([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }])] })))).toEqual([]);
    expect(podDenials(queuedGated({ containers: [withGpus([env('void')], '8')] }))).toEqual([]);
    expect(podDenials(queuedGated({ containers: [withGpus([], '8')] }))).toEqual([]);
  });

  it('refuse the NVIDIA runtime classes to a pod with a container, init container or debug container without GPUs; admit them to a queued all-GPU pod', () => {
    for (const runtimeClassName of ['nvidia', 'nvidia-cdi', 'nvidia-legacy']) {
      expect(podDenials(pod(outside({ runtimeClassName, containers: [cpu([])] })))).toEqual([expect.stringMatching(RUNTIME)]);
      expect(podDenials(pod({ runtimeClassName, containers: [withGpus([], '0')] }))).toEqual([expect.stringMatching(NO_LABEL), expect.stringMatching(RUNTIME)]);
      expect(podDenials(queuedGated({ runtimeClassName, containers: [withGpus([])] }))).toEqual([]);
      // the issue's escape: a GPU pod's CPU sidecar would get every GPU its image names (CUDA images: all)
      expect(podDenials(queuedGated({ runtimeClassName, containers: [withGpus([]), cpu([], 'sidecar')] }))).toEqual([expect.stringMatching(RUNTIME)]);
      expect(podDenials(queuedGated({ runtimeClassName, containers: [withGpus([])], initContainers: [cpu([], 'init')] }))).toEqual([expect.stringMatching(RUNTIME)]);
      const running = queuedGated({ runtimeClassName, containers: [withGpus([])] });
      const debugged = { ...clone(running), spec: { ...clone(running.spec), ephemeralContainers: [{ name: 'debug', image: 'i' }] } };
      expect(podDenials(debugged, { operation: 'UPDATE', oldObject: running })).toEqual([expect.stringMatching(RUNTIME)]);
    }
    expect(podDenials(pod(outside({ runtimeClassName: 'kata', containers: [cpu([])] })))).toEqual([]);
  });

  it('take the runtime classes from the props (a cluster whose operator.runtimeClass is another)', () => {
    const spec = findObject(tenants, 'ValidatingAdmissionPolicy', 'tenant-pod-guardrails').spec as { validations: { expression: string }[] };
    expect(spec.validations.map((v) => v.expression).join('\n')).toContain('["nvidia", "nvidia-cdi", "nvidia-legacy"]');
  });

  it('send a pod requesting the RDMA device through Kueue, like a GPU pod', () => {
    const rdma = { containers: [{ name: 'c', image: 'i', resources: { limits: { 'rdma/rdma_shared_device_a': '1' } } }] };
    expect(podDenials(pod(rdma))).toEqual([expect.stringMatching(NO_LABEL)]);
    expect(podDenials(pod(rdma, { labels: queued('research') }))).toEqual([expect.stringMatching(/Kueue did not gate this queued GPU or RDMA pod/)]);
    expect(podDenials(queuedGated(rdma))).toEqual([]);
    expect(podDenials(pod(rdma), { user: JOB_CONTROLLER })).toEqual([]);
    const requestOnly = { containers: [{ name: 'c', image: 'i', resources: { requests: { 'rdma/hca_shared_devices_b': '1' } } }] };
    expect(podDenials(pod(requestOnly))).toEqual([expect.stringMatching(NO_LABEL)]);
  });
});

describe('tenant admission guardrails: GPUs only through Kueue, trusted by requester', () => {
  const gpuPod = (metadata: Obj = {}) => pod({ containers: [gpuContainer()] }, metadata);
  const forgedOwner = { ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'train', uid: '1', controller: true }] };
  const NO_LABEL = /must name a LocalQueue/;
  const NOT_GATED = /Kueue did not gate/;

  it('admit a SkyPilot-shaped pod group once Kueue gated it, and refuse it where Kueue did not', () => {
    const group = skyPilotPodGroup(2);
    for (const p of group) {
      expect(podDenials(kueueGated(p), { user: SKYPILOT })).toEqual([]);
      expect(podDenials(p, { user: SKYPILOT })).toEqual([expect.stringMatching(NOT_GATED)]);
    }
  });

  it('refuse an unlabelled GPU pod, from a tenant user or SkyPilot', () => {
    expect(podDenials(kueueGated(gpuPod()))).toEqual([expect.stringMatching(NO_LABEL)]);
    expect(podDenials(kueueGated(gpuPod()), { user: SKYPILOT })).toEqual([expect.stringMatching(NO_LABEL)]);
    expect(podDenials(kueueGated(gpuPod({ labels: { [LABELS.queueName]: '' } })))).toEqual([expect.stringMatching(NO_LABEL)]);
  });

  it('refuse a GPU pod with forged ownerReferences from a tenant user, admit the same pod from the Job controller', () => {
    expect(podDenials(gpuPod(forgedOwner))).toEqual([expect.stringMatching(NO_LABEL)]);
    expect(podDenials(gpuPod(forgedOwner), { user: JOB_CONTROLLER })).toEqual([]);
  });

  it('admit the pods the MPI and Training Operators create for queued MPIJobs and PyTorchJobs', () => {
    expect(podDenials(pod(ncclWorkerSpec()), { user: MPI_OPERATOR })).toEqual([]);
    expect(podDenials(gpuPod(), { user: TRAINING_OPERATOR })).toEqual([]);
  });

  it('queue the GPU pods of Deployments one by one (Dynamo components): the label is required, then admitted', () => {
    expect(podDenials(gpuPod(), { user: REPLICASET_CONTROLLER })).toEqual([expect.stringMatching(NO_LABEL)]);
    expect(podDenials(kueueGated(gpuPod({ labels: queued() })), { user: REPLICASET_CONTROLLER })).toEqual([]);
  });

  it('admit a CPU-only pod without a label (debugging, data preparation) at the unqueued priority', () => {
    expect(podDenials(pod(outside({ containers: [{ name: 'debug', image: 'i', resources: { limits: { cpu: '1' } } }] })))).toEqual([]);
  });

  it('let only Kueue lift its scheduling gates', () => {
    const gated = kueueGated(gpuPod({ labels: queued() }));
    const ungated = { ...clone(gated), spec: { ...gated.spec, schedulingGates: [] } };
    expect(podDenials(ungated, { operation: 'UPDATE', oldObject: gated })).toEqual([expect.stringMatching(/only Kueue lifts/)]);
    expect(podDenials(ungated, { operation: 'UPDATE', oldObject: gated, user: SKYPILOT })).toEqual([expect.stringMatching(/only Kueue lifts/)]);
    expect(podDenials(ungated, { operation: 'UPDATE', oldObject: gated, user: KUEUE })).toEqual([]);
    // Other updates of a gated pod (labels) and of a controller's unlabelled GPU pod go through.
    const relabelled = { ...clone(gated), metadata: { ...gated.metadata, labels: { ...gated.metadata.labels, note: 'x' } } };
    expect(podDenials(relabelled, { operation: 'UPDATE', oldObject: gated })).toEqual([]);
    expect(podDenials(gpuPod({ labels: { note: 'x' } }), { operation: 'UPDATE', oldObject: gpuPod() })).toEqual([]);
  });

  it('trust no operator by name alone: a tenant ServiceAccount named like the MPI Operator\'s is a tenant', () => {
    const impostor = serviceAccountUser('research', OPERATOR_SERVICE_ACCOUNTS.mpiOperator.name);
    expect(podDenials(gpuPod(forgedOwner), { user: impostor })).toEqual([expect.stringMatching(NO_LABEL)]);
  });
});

describe('tenant admission guardrails: jobs', () => {
  const job = (metadata: Obj = {}, spec: Obj = {}) => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j', namespace: 'research', ...metadata }, spec });
  const inResearch = (o: Obj): Obj => ({ ...o, metadata: { ...o.metadata, namespace: 'research' } });
  const NO_LABEL = /must name a LocalQueue/;

  it('require a queue label on jobs a tenant submits, and that Kueue took them (suspended)', () => {
    expect(jobDenials(kueueSuspended(job()))).toEqual([expect.stringMatching(/kueue.x-k8s.io\/queue-name/)]);
    expect(jobDenials(kueueSuspended(job({ labels: queued() })))).toEqual([]);
    expect(jobDenials(job({ labels: queued() }))).toEqual([expect.stringMatching(/Kueue did not suspend/)]);
  });

  it('refuse an unlabelled job with forged ownerReferences, admit the MPI Operator\'s launcher Job', () => {
    const launcher = job({ ownerReferences: [{ apiVersion: 'kubeflow.org/v2beta1', kind: 'MPIJob', name: 'x', uid: '3', controller: true }] }, { suspend: true });
    expect(jobDenials(launcher)).toEqual([expect.stringMatching(NO_LABEL)]);
    expect(jobDenials(launcher, { user: MPI_OPERATOR })).toEqual([]);
    expect(jobDenials(launcher, { user: JOB_CONTROLLER })).toEqual([expect.stringMatching(NO_LABEL)]);
  });

  it('admit the rendered samples in a tenant namespace once Kueue suspended them', () => {
    for (const s of samples.filter((o) => ['Job', 'MPIJob', 'PyTorchJob'].includes(o.kind))) {
      expect(jobDenials(kueueSuspended({ ...clone(s), metadata: { ...s.metadata, namespace: 'research' } }))).toEqual([]);
    }
  });

  it('let only Kueue start a suspended job, and keep the queue label on', () => {
    const waiting = kueueSuspended(job({ labels: queued() }));
    const started = { ...clone(waiting), spec: { suspend: false } };
    expect(jobDenials(started, { operation: 'UPDATE', oldObject: waiting })).toEqual([expect.stringMatching(/only Kueue starts/)]);
    expect(jobDenials(started, { operation: 'UPDATE', oldObject: waiting, user: KUEUE })).toEqual([]);
    const unlabelled = { ...clone(waiting), metadata: { name: 'j', namespace: 'research' } };
    expect(jobDenials(unlabelled, { operation: 'UPDATE', oldObject: waiting })).toEqual([expect.stringMatching(/may be changed but not removed/)]);
    const moved = { ...clone(waiting), metadata: { ...waiting.metadata, labels: queued('other') } };
    expect(jobDenials(moved, { operation: 'UPDATE', oldObject: waiting })).toEqual([]);
    // Kubeflow jobs suspend with spec.runPolicy.suspend.
    const mpiJob = inResearch(kueueSuspended(clone(findObject(samples, 'MPIJob', 'nccl-all-reduce')) as Obj));
    const mpiStarted = { ...clone(mpiJob), spec: { ...mpiJob.spec, runPolicy: { ...mpiJob.spec.runPolicy, suspend: false } } };
    expect(jobDenials(mpiStarted, { operation: 'UPDATE', oldObject: mpiJob })).toEqual([expect.stringMatching(/only Kueue starts/)]);
    expect(jobDenials(mpiStarted, { operation: 'UPDATE', oldObject: mpiJob, user: KUEUE })).toEqual([]);
  });
});

describe('tenant admission guardrails: Services', () => {
  const service = (spec: Obj) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'inference' }, spec: { ports: [{ port: 8000 }], ...spec } });
  it.each([
    ['ClusterIP', { type: 'ClusterIP' }, []],
    ['a headless Service', { clusterIP: 'None' }, []],
    ['NodePort', { type: 'NodePort' }, [/must be ClusterIP/]],
    ['LoadBalancer', { type: 'LoadBalancer' }, [/must be ClusterIP/]],
    ['externalIPs', { externalIPs: ['10.0.0.1'] }, [/externalIPs/]],
  ] as [string, Obj, RegExp[]][])('%s', (_what, spec, says) => {
    expect(denials('tenant-service-guardrails', service(spec))).toEqual(says.map((s) => expect.stringMatching(s)));
  });
});

describe('the tenant-guardrails-admit check on rendered clusters', () => {
  const findings = (c: ReturnType<typeof renderOf>) => checkCluster(c).filter((f) => f.rule === 'tenant-guardrails-admit').map((f) => f.message);

  it('admits the samples rendered into a tenant namespace: the DCGM diagnostic (SYS_ADMIN: an administrator\'s check) stays in default', () => {
    const inTenant = renderOf((d) => { d.samples = { ...d.samples, namespace: 'research' }; });
    expect(findings(inTenant)).toEqual([]);
    const jobs = inTenant.folders.flatMap((f) => f.objects).filter((o) => o.kind === 'Job' && o.metadata.name.startsWith('dcgm-diag'));
    expect(jobs.map((j) => j.metadata.namespace)).toEqual(['default']);
    expect(findings(renderOf())).toEqual([]);
  });

  it('reports an unqueued GPU pod and an unqueued GPU Deployment in a tenant namespace, not in default', () => {
    const c = renderOf();
    const gpuPod = pod({ containers: [gpuContainer()] }, { name: 'stray' });
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'vllm', namespace: 'inference' },
      spec: { selector: { matchLabels: { app: 'vllm' } }, template: { metadata: { labels: { app: 'vllm' } }, spec: { containers: [gpuContainer()] } } },
    };
    const inDefault = { ...clone(gpuPod), metadata: { name: 'stray', namespace: 'default' } };
    const extra = { folder: 'extra', description: '', objects: [gpuPod, deployment, inDefault] as unknown as Manifest[] };
    expect(findings({ ...c, folders: [...c.folders, extra] })).toEqual([
      expect.stringMatching(/^Pod research\/stray: the object, as a tenant submits it, is refused .* must name a LocalQueue/),
      expect.stringMatching(/^Deployment inference\/vllm: a pod of spec.template.spec, created by ReplicaSet controller, is refused .* must name a LocalQueue/),
    ]);
  });
});

const UPSTREAM = path.join(SHARED, 'upstream-installs');
describe.skipIf(!existsSync(UPSTREAM))('trusted requesters match the pinned upstream installs', () => {
  const yaml = (rel: string) => parse(readFileSync(path.join(UPSTREAM, rel), 'utf8'));
  it('the MPI Operator\'s ServiceAccount and namespace (kustomize base + standalone overlay)', () => {
    expect(OPERATOR_SERVICE_ACCOUNTS.mpiOperator).toEqual({
      name: yaml('mpi-operator-v0.8.2/manifests/base/service-account.yaml').metadata.name,
      namespace: yaml('mpi-operator-v0.8.2/manifests/overlays/standalone/kustomization.yaml').namespace,
    });
    expect(yaml('mpi-operator-v0.8.2/manifests/base/deployment.yaml').spec.template.spec.serviceAccountName).toBe(OPERATOR_SERVICE_ACCOUNTS.mpiOperator.name);
  });
  it('the Training Operator\'s ServiceAccount and namespace', () => {
    expect(OPERATOR_SERVICE_ACCOUNTS.trainingOperator).toEqual({
      name: yaml('training-operator-v1.9.4/manifests/base/rbac/service-account.yaml').metadata.name,
      namespace: yaml('training-operator-v1.9.4/manifests/overlays/standalone/kustomization.yaml').namespace,
    });
  });
  it('Kueue\'s controller-manager ServiceAccount (chart fullname + suffix)', () => {
    const chart = 'kueue-v0.19.2/charts/kueue';
    const manager = readFileSync(path.join(UPSTREAM, chart, 'templates/manager/manager.yaml'), 'utf8');
    const suffix = /serviceAccountName: \{\{ include "kueue.fullname" \. \}\}(\S+)/.exec(manager)?.[1];
    const values = yaml(`${chart}/values.yaml`);
    const gitops = folderObjects(renderOf((d) => { d.installs = { ...d.installs, kueue: 'managed' }; }), 'gitops');
    const release = (gitops.find((o) => o.kind === 'Application' && o.metadata.name.endsWith('-kueue-install')) as any).spec.source.helm.releaseName;
    expect(OPERATOR_SERVICE_ACCOUNTS.kueue).toEqual({
      namespace: NAMESPACES.kueue,
      name: `${helmFullname(release, yaml(`${chart}/Chart.yaml`).name, values)}${suffix}`,
    });
  });
});
