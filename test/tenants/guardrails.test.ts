import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { Manifest } from '../../src/render/manifest';
import { findObject, folderObjects, renderOf } from '../helpers';

/**
 * The admission policies are CEL: evaluate them with a CEL implementation against pods and jobs,
 * as the API server would, instead of only snapshotting their text.
 */
const tenants = folderObjects(renderOf(), 'tenants');

interface PolicySpec {
  variables?: { name: string; expression: string }[];
  validations: { expression: string; message: string }[];
}

/** Messages of the validations `object` fails under the named policy (empty: admitted). */
function denials(policy: string, object: unknown): string[] {
  const spec = findObject(tenants, 'ValidatingAdmissionPolicy', policy).spec as PolicySpec;
  const variables: Record<string, unknown> = {};
  for (const v of spec.variables ?? []) variables[v.name] = evaluate(v.expression, { object, variables });
  return spec.validations.filter((v) => evaluate(v.expression, { object, variables }) !== true).map((v) => v.message);
}

const OWNED = { ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'train', uid: '1', controller: true }] };

function pod(spec: Record<string, unknown>, metadata: Record<string, unknown> = OWNED) {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'research', ...metadata }, spec };
}

/** The rendered NCCL test's worker pod, as the MPI Operator would create it in a tenant namespace. */
function ncclWorkerPod() {
  const job = findObject(folderObjects(renderOf(), 'samples'), 'MPIJob', 'nccl-all-reduce') as Manifest & { spec: any };
  return pod(job.spec.mpiReplicaSpecs.Worker.template.spec, { ownerReferences: [{ kind: 'MPIJob', name: 'nccl-all-reduce', uid: '2' }] });
}

describe('tenant admission guardrails', () => {
  it('bind both policies to every tenant namespace, denying', () => {
    for (const name of ['tenant-pod-guardrails', 'tenant-queue-required']) {
      const binding = findObject(tenants, 'ValidatingAdmissionPolicyBinding', name) as Manifest & { spec: any };
      expect(binding.spec).toEqual({
        policyName: name,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchExpressions: [{ key: 'gpu-cluster.dev/tenant', operator: 'Exists' }] } },
      });
    }
  });

  it('admit the NCCL test workers: GPUs, the RDMA device and IPC_LOCK', () => {
    expect(denials('tenant-pod-guardrails', ncclWorkerPod())).toEqual([]);
  });

  it.each([
    ['a privileged container', { containers: [{ name: 'c', securityContext: { privileged: true } }] }, /may not be privileged/],
    ['SYS_ADMIN', { containers: [{ name: 'c', securityContext: { capabilities: { add: ['IPC_LOCK', 'SYS_ADMIN'] } } }] }, /may add only/],
    ['a privileged init container', { containers: [{ name: 'c' }], initContainers: [{ name: 'i', securityContext: { privileged: true } }] }, /may not be privileged/],
    ['a hostPath volume', { containers: [{ name: 'c' }], volumes: [{ name: 'root', hostPath: { path: '/' } }] }, /hostPath/],
    ['the host network', { containers: [{ name: 'c' }], hostNetwork: true }, /host network/],
    ['the host PID namespace', { containers: [{ name: 'c' }], hostPID: true }, /host PID/],
  ])('deny %s', (_what, spec, says) => {
    expect(denials('tenant-pod-guardrails', pod(spec))).toEqual([expect.stringMatching(says)]);
  });

  it('deny a pod no controller owns that takes GPUs outside Kueue, but not a CPU-only one', () => {
    const gpus = { containers: [{ name: 'c', resources: { limits: { 'nvidia.com/gpu': '8' } } }] };
    expect(denials('tenant-pod-guardrails', pod(gpus, {}))).toEqual([expect.stringMatching(/may not request nvidia.com\/gpu/)]);
    expect(denials('tenant-pod-guardrails', pod(gpus))).toEqual([]);
    expect(denials('tenant-pod-guardrails', pod({ containers: [{ name: 'debug', resources: { limits: { cpu: '1' } } }] }, {}))).toEqual([]);
  });

  it('require a queue label on jobs tenants submit, not on jobs a controller creates', () => {
    const job = (metadata: Record<string, unknown>) => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j', namespace: 'research', ...metadata }, spec: {} });
    expect(denials('tenant-queue-required', job({}))).toEqual([expect.stringMatching(/kueue.x-k8s.io\/queue-name/)]);
    expect(denials('tenant-queue-required', job({ labels: { 'kueue.x-k8s.io/queue-name': 'default' } }))).toEqual([]);
    expect(denials('tenant-queue-required', job({ ownerReferences: [{ kind: 'MPIJob', name: 'x', uid: '3' }] }))).toEqual([]);
  });

  it('are not rendered before Kubernetes 1.30 (ValidatingAdmissionPolicy v1)', () => {
    const old = folderObjects(renderOf((d) => { d.kubernetesVersion = '1.29'; }), 'tenants');
    expect(old.map((o) => o.kind)).not.toContain('ValidatingAdmissionPolicy');
  });
});
