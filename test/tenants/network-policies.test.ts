import { describe, expect, it } from 'vitest';
import { Manifest } from '../../src/render/manifest';
import { folderObjects, renderOf } from '../helpers';
import { Endpoint, Flow, ingressAllowed, selects } from './network-policy-eval';

/**
 * The tenant NetworkPolicies, evaluated on flows between pods (a small NetworkPolicy evaluator over
 * the rendered objects) rather than only snapshotted.
 */
const policiesOf = (edit?: Parameters<typeof renderOf>[0]) => folderObjects(renderOf(edit), 'tenants').filter((o) => o.kind === 'NetworkPolicy');
const reference = policiesOf();

const launcher: Endpoint = { namespace: 'research', labels: { 'training.kubeflow.org/job-role': 'launcher' } };
const worker: Endpoint = { namespace: 'research', labels: { 'training.kubeflow.org/job-role': 'worker' } };
const inferencePod: Endpoint = { namespace: 'inference', labels: { app: 'vllm' } };
const samplePod: Endpoint = { namespace: 'default', labels: { 'training.kubeflow.org/job-name': 'nccl-all-reduce' } };
const vmagent: Endpoint = { namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'vmagent' } };
const grafana: Endpoint = { namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'grafana' } };
const stranger: Endpoint = { namespace: 'some-app', labels: {} };

const flow = (from: Endpoint, to: Endpoint, port: number): Flow => ({ from, to, port });

describe('tenant NetworkPolicies', () => {
  it.each([
    ['MPI launcher -> worker over SSH', flow(launcher, worker, 22)],
    ['NCCL bootstrap between workers', flow(worker, worker, 40123)],
    ['torchrun rendezvous (c10d) on the master', flow(worker, launcher, 29500)],
    ['SkyPilot worker -> head (Ray GCS)', flow({ namespace: 'research', labels: { 'skypilot-cluster': 'train' } }, { namespace: 'research', labels: { 'ray-node-type': 'head' } }, 6380)],
    ['the sample MPIJob in default, launcher -> worker', flow({ ...samplePod }, samplePod, 22)],
    ['the scraper -> a tenant pod\'s metrics', flow(vmagent, worker, 8080)],
    ['the scraper -> a pod in default', flow(vmagent, samplePod, 9400)],
    ['the inference tenant\'s own frontend -> its workers', flow(inferencePod, { namespace: 'inference', labels: { role: 'decode' } }, 9090)],
  ])('allow %s', (_what, f) => {
    expect(ingressAllowed(reference, f)).toBe(true);
  });

  it.each([
    ['one tenant -> another tenant\'s workers (SSH)', flow(inferencePod, worker, 22)],
    ['one tenant -> another tenant\'s NCCL port', flow(worker, inferencePod, 40123)],
    ['a tenant -> the samples in default', flow(worker, samplePod, 22)],
    ['default -> a tenant', flow(samplePod, worker, 22)],
    ['another namespace -> a tenant', flow(stranger, worker, 8080)],
  ])('refuse %s', (_what, f) => {
    expect(ingressAllowed(reference, f)).toBe(false);
  });

  it('isolates every tenant namespace and default with a default-deny ingress policy', () => {
    const c = renderOf();
    const isolated = new Set(reference.filter((o) => (o as any).spec.ingress === undefined && (o as any).spec.policyTypes?.includes('Ingress')
      && selects((o as any).spec.podSelector, {})).map((o) => o.metadata.namespace));
    expect([...isolated].sort()).toEqual(['default', ...c.model.tenants.map((t) => t.namespace)].sort());
  });

  it('lets the monitoring namespace in, whatever it is called (the source list is derived from the description)', () => {
    const moved = policiesOf((d) => { d.monitoring = { namespace: 'observability' }; });
    expect(ingressAllowed(moved, flow({ namespace: 'observability' }, worker, 8080))).toBe(true);
    expect(ingressAllowed(moved, flow(vmagent, worker, 8080))).toBe(false);
    // Any pod of the source namespace: Grafana as well as the VMAgent (the rule is per namespace).
    expect(ingressAllowed(reference, flow(grafana, worker, 8080))).toBe(true);
  });

  it('the evaluator sees a policy that opens a namespace (the checks can fail)', () => {
    const allowAll = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'oops', namespace: 'research' },
      spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{}] },
    } as unknown as Manifest;
    expect(ingressAllowed([...reference, allowAll], flow(inferencePod, worker, 22))).toBe(true);
    // Without any policy every flow is allowed: the refusals above come from the rendered policies.
    expect(ingressAllowed([], flow(inferencePod, worker, 22))).toBe(true);
    // A port-restricted rule admits only its port.
    const sshOnly = { ...allowAll, spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{ ports: [{ port: 22, protocol: 'TCP' }] }] } } as unknown as Manifest;
    expect(ingressAllowed([...reference, sshOnly], flow(inferencePod, worker, 22))).toBe(true);
    expect(ingressAllowed([...reference, sshOnly], flow(inferencePod, worker, 23))).toBe(false);
  });

  it('renders no policies without tenants (nothing to isolate from)', () => {
    expect(renderOf((d) => { d.tenants = []; }).folders.flatMap((f) => f.objects).filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
  });
});
