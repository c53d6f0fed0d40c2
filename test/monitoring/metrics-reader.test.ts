import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { vmAgentServiceAccount } from '../../src/components/monitoring/metrics-reader';
import { ClusterDescriptionSchema } from '../../src/model/description';
import { helmFullname } from '../../src/model/helm-names';
import { findObject, folderObjects, renderOf, SHARED } from '../helpers';

const CHART = path.join(SHARED, 'upstream-installs', 'victoria-metrics-k8s-stack-0.54.0', 'charts', 'victoria-metrics-k8s-stack');

describe('helmFullname (the charts\' fullname helper)', () => {
  it.each([
    ['vm', 'victoria-metrics-k8s-stack', {}, 'vm-victoria-metrics-k8s-stack'],
    ['kueue', 'kueue', {}, 'kueue'],
    ['my-kueue-prod', 'kueue', {}, 'my-kueue-prod'],
    ['vm', 'victoria-metrics-k8s-stack', { nameOverride: 'stack' }, 'vm-stack'],
    ['vm', 'victoria-metrics-k8s-stack', { fullnameOverride: 'monitoring' }, 'monitoring'],
    ['r'.repeat(60), 'chart', {}, 'r'.repeat(60) + '-ch'],
    ['r'.repeat(62), 'chart', {}, 'r'.repeat(62)],
  ])('%s + %s %o -> %s', (release, chart, values, name) => {
    expect(helmFullname(release, chart, values)).toBe(name);
  });
});

describe.skipIf(!existsSync(CHART))('the VMAgent ServiceAccount of the pinned victoria-metrics-k8s-stack chart', () => {
  const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8'));
  const chartName = parse(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')).name;

  it('is what the managed release creates: vmagent-<fullname>, the chart setting no other name', () => {
    // The VMAgent is named vmagent.name or the fullname; the operator names the ServiceAccount after
    // the VMAgent unless spec.serviceAccountName is set.
    expect(values.vmagent.name).toBeUndefined();
    expect(values.vmagent.spec.serviceAccountName).toBeUndefined();
    const gitops = folderObjects(renderOf((d) => { d.installs = { ...d.installs, monitoring: 'managed' }; }), 'gitops');
    const release = (gitops.find((o) => o.kind === 'Application' && o.metadata.name.endsWith('-monitoring-stack-install')) as any).spec.source.helm.releaseName;
    const expected = `vmagent-${helmFullname(release, chartName, values)}`;
    expect(vmAgentServiceAccount(release, chartName)).toBe(expected);
    const binding = findObject(folderObjects(renderOf(), 'monitoring'), 'ClusterRoleBinding', 'monitoring-metrics-reader') as any;
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: expected, namespace: 'monitoring' }]);
    // The description documents the same default.
    const field = (ClusterDescriptionSchema.shape.monitoring as any).unwrap().shape.scraperServiceAccount;
    expect(field.description).toContain(expected);
  });
});
