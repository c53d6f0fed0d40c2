import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { changedSnapshot } from './snapshots';
import { main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { managedInstalls } from '../../src/components/gitops/managed-installs';
import { parseDescription } from '../../src/model/load';
import { buildModel } from '../../src/model/model';
import { runsAddOn } from '../../src/preflight/remedies';
import { readSnapshot } from '../../src/preflight/snapshot';

/**
 * init, then preflight with the description init wrote, on the same cluster: the loop a new user is in on a
 * pre-installed cluster. Preflight must find nothing blocking but what the cluster really has, which init cannot
 * describe away (it changes descriptions, never the cluster), and init must never install a second copy of an add-on
 * the cluster runs.
 */

const FIXTURES = path.join(__dirname, 'fixtures');
const SNAPSHOTS = readdirSync(FIXTURES).filter((f) => f.endsWith('.snapshot.yaml')).sort();

interface Run {
  readonly text: string;
  readonly description: Record<string, any>;
  readonly blocking: { rule: string; object: string; fix: string }[];
}

let dir: string;
beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'init-preflight-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function initThenPreflight(snapshot: string): Run {
  const out: string[] = [];
  const err: string[] = [];
  expect(main(['init', '--snapshot', snapshot, '--name', 'lab', '--out', '-'], { out: (l) => out.push(l), err: (l) => err.push(l) }), err.join('\n')).toBe(EXIT.ok);
  const text = `${out.join('\n')}\n`;
  const file = path.join(dir, `${path.basename(snapshot, '.yaml')}.description.yaml`);
  writeFileSync(file, text);
  const json: string[] = [];
  const code = main(['preflight', '--config', file, '--snapshot', snapshot, '--format', 'json'], { out: (l) => json.push(l), err: () => {} });
  const findings = JSON.parse(json.join('\n')).findings as { rule: string; severity: string; object: string; fix: string }[];
  const blocking = findings.filter((f) => f.severity === 'error').map(({ rule, object, fix }) => ({ rule, object, fix }));
  expect(code).toBe(blocking.length === 0 ? EXIT.ok : EXIT.failed);
  return { text, description: parse(text), blocking };
}

/** Every add-on the written description installs here must be one the cluster runs none of. */
function noSecondCopy(run: Run, snapshot: string): void {
  const model = buildModel(parseDescription(run.description));
  const state = readSnapshot(snapshot);
  for (const install of managedInstalls(model)) expect(runsAddOn(state, install), `installs.${install.key}: managed`).toBe(false);
}

describe('init then preflight on every snapshot fixture: nothing blocks but what the cluster really has', () => {
  it('has the fixtures', () => {
    expect(SNAPSHOTS).toEqual(['instant-cluster.day-one.snapshot.yaml', 'instant-cluster.snapshot.yaml']);
  });

  it.each(SNAPSHOTS)('%s', (name) => {
    const snapshot = path.join(FIXTURES, name);
    const run = initThenPreflight(snapshot);
    expect(run.blocking).toEqual([]);
    noSecondCopy(run, snapshot);
    // Nothing the init descriptions render needs the pytorchjob integration the fixtures' Kueue lacks: no Kueue of ours.
    expect(run.description.installs?.kueue).toBeUndefined();
    expect(run.description.installs?.monitoring).toBeUndefined();
  });

  it('the day-one cluster: a reclaim policy per StorageClass, and the scrape its VictoriaMetrics operator cannot serve left out', () => {
    const run = initThenPreflight(path.join(FIXTURES, 'instant-cluster.day-one.snapshot.yaml'));
    expect(run.description.storage.reclaimPolicy).toEqual({ 'local-path': 'Delete', 'shared-path': 'Delete', 'local-disk': 'Retain' });
    expect(run.text).toContain('# from each StorageClass (the field is immutable: every class keeps its own)');
    expect(run.description.monitoring.scrape).toEqual({ networkOperator: false });
    expect(run.text).toMatch(/networkOperator: false # the cluster serves no VMPodScrape \(no CRD operator.victoriametrics.com\/VMPodScrape\): left out/);
  });
});

describe('init then preflight on what a cluster really lacks', () => {
  const variant = (name: string, change: (objects: any[]) => void) => changedSnapshot(dir, name, change);
  const withoutMpiJob = (config: string) => config.replace(/^\s*- kubeflow.org\/mpijob\n/m, '');
  const kueueConfig = (objects: any[]) => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'kueue-manager-config');

  it('a Kueue without the mpijob integration: the NCCL test cannot be queued; init writes a TODO, preflight blocks on exactly that', () => {
    const snapshot = variant('no-mpijob-integration', (o) => {
      const cm = kueueConfig(o);
      cm.data['controller_manager_config.yaml'] = withoutMpiJob(cm.data['controller_manager_config.yaml']);
    });
    const run = initThenPreflight(snapshot);
    expect(run.text).toMatch(/^# TODO\(init\): the pre-installed Kueue lacks the integration kubeflow.org\/mpijob \(kubeflow.org\/MPIJob would run outside the quotas\): add it/m);
    expect(run.blocking.map((b) => b.rule)).toEqual(['kueue-integrations']);
    expect(run.blocking[0].fix).toMatch(/^add kubeflow.org\/mpijob to integrations.frameworks: kubectl -n kueue-system edit configmap kueue-manager-config/);
    expect(run.description.installs?.kueue).toBeUndefined();
  });

  it('a cluster without an MPI Operator: init installs one here (none runs), and nothing blocks', () => {
    const snapshot = variant('no-mpi-operator', (o) => o.splice(o.findIndex((x) => x.metadata.name === 'mpijobs.kubeflow.org'), 1));
    const run = initThenPreflight(snapshot);
    expect(run.description.installs.mpiOperator).toBe('managed');
    expect(run.text).toMatch(/mpiOperator: managed # the cluster runs none of it \(no CRD of kubeflow.org\/MPIJob\): installed here/);
    expect(run.blocking).toEqual([]);
    noSecondCopy(run, snapshot);
  });

  it('an Argo CD whose Applications live in another namespace: kept (gitops.argocd: external, its namespace), no second Argo CD beside it', () => {
    const application = (namespace: string) => ({
      apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'platform', namespace }, spec: { project: 'default' },
    });
    const run = initThenPreflight(variant('argocd-elsewhere', (o) => o.push(application('gitops-system'))));
    expect(run.description.gitops).toMatchObject({ argocd: 'external', namespace: 'gitops-system' });
    expect(run.text).toMatch(/argocd: external # the cluster runs an Argo CD \(its Applications in gitops-system\): kept as it is/);
    expect(run.text).toMatch(/^# TODO\(init\): the running Argo CD in gitops-system must carry the health checks the sync waves wait on/m);
    expect(run.blocking).toEqual([]);
    // Applications in the namespace the description names already: the bootstrap adopts that Argo CD (a warning), nothing to change
    const same = initThenPreflight(variant('argocd-adopted', (o) => o.push(application('argocd'))));
    expect(same.description.gitops.argocd).toBeUndefined();
    expect(same.blocking).toEqual([]);
  });

  it('a Training Operator beside a Kueue without the pytorchjob integration: the PyTorchJob sample is left out, no second Kueue', () => {
    const pytorchJobs = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'pytorchjobs.kubeflow.org' },
      spec: { group: 'kubeflow.org', scope: 'Namespaced', names: { kind: 'PyTorchJob', plural: 'pytorchjobs' }, versions: [{ name: 'v1', served: true, storage: true }] },
    };
    const run = initThenPreflight(variant('training-operator', (o) => o.push(pytorchJobs)));
    expect(run.description.installs.trainingOperator).toBe('none');
    expect(run.text).toMatch(/trainingOperator: none # the pre-installed Kueue does not manage kubeflow.org\/PyTorchJob \(integrations.frameworks lacks kubeflow.org\/pytorchjob\): left out/);
    expect(run.description.installs.kueue).toBeUndefined();
    expect(run.blocking).toEqual([]);
  });
});
