import { describe, expect, it } from 'vitest';
import { ClusterIndex } from '../../src/check';
import { policiesRefusing } from '../../src/check/tenancy';
import { MAX_TENANTS } from '../../src/model/description';
import { LABELS } from '../../src/model/names';
import { Manifest } from '../../src/render/manifest';
import { issuesOf } from '../helpers';

/*
 * Many tenants: the description's limit (one tenants folder is one kustomize build for Argo CD), and the admission
 * policies found for a namespace through the bindings' selectors, which the tenancy rule and the report look up per
 * namespace instead of scanning every binding.
 */

/** `n` tenants of one GPU each, on as many 8-GPU workers as they need. */
function manyTenants(n: number) {
  return (d: Record<string, any>) => {
    d.nodes.gpuWorkers.count = Math.ceil(n / d.nodes.gpuWorkers.gpusPerNode) + 1;
    delete d.samples?.nodeNames;
    d.tenants = Array.from({ length: n }, (_, i) => ({ name: `team-${i}`, gpus: 1 }));
  };
}

describe('tenants per cluster', () => {
  it(`accepts ${MAX_TENANTS} tenants and refuses one more, saying why and what to do`, () => {
    expect(issuesOf(manyTenants(MAX_TENANTS))).toEqual([]);
    expect(issuesOf(manyTenants(MAX_TENANTS + 1))).toEqual([{
      path: 'tenants',
      message: expect.stringMatching(new RegExp(`^expected at most ${MAX_TENANTS} tenants: Argo CD builds the tenants folder with one kustomize run.*share the teams out to more clusters, got ${MAX_TENANTS + 1}$`)),
    }]);
  });
});

describe('the admission policies guarding a namespace', () => {
  const policy = (name: string): Manifest => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] },
      validations: [{ expression: 'false', message: `refused by ${name}` }],
    },
  } as unknown as Manifest);
  const binding = (name: string, namespaceSelector?: Record<string, unknown>, validationActions?: string[]): Manifest => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, ...(validationActions ? { validationActions } : {}), matchResources: namespaceSelector ? { namespaceSelector } : {} },
  } as unknown as Manifest);
  const namespace = (name: string, labels: Record<string, string> = {}): Manifest => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  const names = ['everywhere', 'own-a', 'tenants', 'in-a-or-b', 'not-b', 'with-tier', 'without-tier', 'audit-only'];
  const objects: Manifest[] = [
    ...names.map(policy),
    binding('everywhere'),
    binding('own-a', { matchLabels: { [LABELS.namespaceName]: 'a' } }),
    binding('tenants', { matchLabels: { tenant: 'true' } }),
    binding('in-a-or-b', { matchExpressions: [{ key: LABELS.namespaceName, operator: 'In', values: ['a', 'b'] }] }),
    binding('not-b', { matchExpressions: [{ key: LABELS.namespaceName, operator: 'NotIn', values: ['b'] }] }),
    binding('with-tier', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }),
    binding('without-tier', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }),
    binding('audit-only', undefined, ['Audit']),
    namespace('a', { tenant: 'true' }),
    namespace('b', { tenant: 'true', tier: 'gold' }),
    namespace('c'),
  ];
  const pod = (ns: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: ns }, spec: { containers: [{ name: 'c', image: 'x:1' }] } });
  const refusing = (ns: string) => {
    const index = new ClusterIndex({ name: 'x', folders: [{ folder: 'tenants', objects }] });
    return policiesRefusing(index)(ns, pod(ns), 'someone');
  };

  it('are those whose binding selects the namespace by its labels, in binding order, whichever way the selector is written', () => {
    expect(refusing('a')).toEqual(['everywhere', 'own-a', 'tenants', 'in-a-or-b', 'not-b', 'without-tier']);
    expect(refusing('b')).toEqual(['everywhere', 'tenants', 'in-a-or-b', 'with-tier']);
    expect(refusing('c')).toEqual(['everywhere', 'not-b', 'without-tier']);
    // a namespace the tree does not render carries its name label only
    expect(refusing('elsewhere')).toEqual(['everywhere', 'not-b', 'without-tier']);
  });
});
