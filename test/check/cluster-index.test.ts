import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ClusterIndex } from '../../src/check/cluster-index';
import { Manifest } from '../../src/render/manifest';

// Where the checks look for Kueue's manager configuration: the kinds Kueue reads one from, not every string rendered.

const configuration = (prefix: string) => ({ apiVersion: 'config.kueue.x-k8s.io/v1beta2', kind: 'Configuration', resources: { excludeResourcePrefixes: [prefix] } });
const holders: Manifest[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kueue-manager-config', namespace: 'kueue-system' }, data: { 'controller_manager_config.yaml': stringify(configuration('configmap/')) } },
  {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'kueue-install', namespace: 'argocd' },
    spec: { source: { helm: { valuesObject: { managerConfig: { controllerManagerConfigYaml: stringify(configuration('application/')) } } } } },
  },
  {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: 'kueue', namespace: 'argocd' },
    spec: { template: { spec: { source: { helm: { valuesObject: { managerConfig: configuration('applicationset/') } } } } } },
  },
  { ...configuration('configuration/'), metadata: { name: 'kueue' } } as unknown as Manifest,
] as Manifest[];
// a CRD's description or a workload's script that holds a configuration's text is nothing Kueue reads
const others: Manifest[] = [
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'kueue-system' }, stringData: { config: stringify(configuration('secret/')) } },
  {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'j', namespace: 'default' },
    spec: { template: { spec: { containers: [{ name: 'c', image: 'x@sha256:0', args: [stringify(configuration('job/'))] }] } } },
  },
] as Manifest[];

describe('ClusterIndex.kueueConfigurations', () => {
  it('reads a ConfigMap, an Application\'s and an ApplicationSet\'s Helm values and a bare Configuration; no other kind', () => {
    const index = new ClusterIndex({ name: 'x', folders: [{ folder: 'kueue', objects: [...holders, ...others] }] });
    expect(index.kueueConfigurations().map((c) => c.owner.kind)).toEqual(['ConfigMap', 'Application', 'ApplicationSet', 'Configuration']);
    expect(index.excludedResourcePrefixes()).toEqual(['configmap/', 'application/', 'applicationset/', 'configuration/']);
  });
});
