import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigFor, serveState } from './api-server';
import { SNAPSHOT, snapshotObjects } from './snapshots';
import { main } from '../../src/cli';
import { EXIT } from '../../src/commands/io';
import { MULTIKUEUE } from '../../src/model/names';
import { formatPreflightFinding, preflight, PREFLIGHT_RULES } from '../../src/preflight/engine';
import { kueueFramework } from '../../src/preflight/foreign-config';
import { PreflightFinding } from '../../src/preflight/rule';
import { parseSnapshot, readSnapshot } from '../../src/preflight/snapshot';
import { ClusterState } from '../../src/preflight/state';
import { Manifest, RenderedCluster } from '../../src/render/manifest';
import { loadModels, renderModel } from '../../src/synth/pipeline';
import { FLEET_FIXTURE, REFERENCE_FILE, renderOf, Edit, serviceMonitorCrd } from '../helpers';

const FIXTURES = path.join(__dirname, 'fixtures');
const ADOPTED = path.join(FIXTURES, 'instant-cluster.adopted.yaml');

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

/** The fixture's objects (fresh copies) with `change` applied, as a cluster state. */
function stateOf(change: (objects: any[]) => void = () => {}): ClusterState {
  const objects = snapshotObjects();
  change(objects);
  return new ClusterState('edited', objects);
}

function findingsOf(opts: { edit?: Edit; state?: ClusterState; cluster?: RenderedCluster } = {}): PreflightFinding[] {
  return preflight(opts.cluster ?? renderOf(opts.edit), opts.state ?? stateOf());
}

const rules = (fs: readonly PreflightFinding[]) => [...new Set(fs.map((f) => f.rule))].sort();
const blocking = (fs: readonly PreflightFinding[]) => fs.filter((f) => f.severity === 'error');

describe('preflight on the pre-installed Instant Cluster fixture', () => {
  it('reports every class of finding with its fix, and exits 1', () => {
    const c = capture();
    expect(main(['preflight', '--config', REFERENCE_FILE, '--snapshot', SNAPSHOT], c.io)).toBe(EXIT.failed);
    const text = [...c.out, ...c.err].join('\n');
    for (const rule of ['immutable-field', 'quota-outside-cohort', 'drift-node-count', 'drift-allocatable', 'kueue-clusterqueue-metrics', 'argocd-takeover']) {
      expect(text).toContain(`[${rule}]`);
    }
    expect(text).toContain('fix: set queueing.defaultClusterQueue: cluster-queue');
    expect(text).toContain('fix: set nodes.gpuWorkers.count: 3');
    expect(c.out[c.out.length - 1]).toMatch(/^BLOCKED: instant-cluster .* 4 blocking finding\(s\)/);
  });

  it('blocks only on the fixture\'s deliberate conflicts, nothing the reference description brings by itself', () => {
    // The fixture differs from the reference on purpose in its node count, allocatable CPU and the name of the
    // pre-wired ClusterQueue; everything else the reference renders must find the pre-installed cluster ready:
    // no PyTorchJob without a Training Operator, no second globalDefault PriorityClass, no integration Kueue lacks.
    const deliberate = ['immutable-field', 'quota-outside-cohort', 'drift-node-count', 'drift-allocatable'];
    expect(rules(blocking(findingsOf()))).toEqual([...deliberate].sort());
    const withGlobalDefault = stateOf((objects) => objects.push({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'cluster-default' }, value: 1000, globalDefault: true }));
    expect(rules(blocking(findingsOf({ state: withGlobalDefault })))).toEqual([...deliberate].sort());
  });

  it('a declared pre-installed Training Operator on a Kueue without the pytorchjob integration blocks (the job would run outside the quota)', () => {
    const fs = findingsOf({ edit: (d) => { d.installs = { trainingOperator: 'preinstalled' }; } });
    const integrations = fs.find((f) => f.rule === 'kueue-integrations');
    expect(integrations?.severity).toBe('error');
    expect(integrations?.message).toMatch(/lacks kubeflow.org\/pytorchjob; Kueue ignores PyTorchJob default\/pytorch-ddp/);
    // and the cluster has no PyTorchJob CRD at all
    expect(fs.find((f) => f.rule === 'api-missing')?.message).toContain('no CRD for PyTorchJob.kubeflow.org');
  });

  it('api-missing names the install that brings the kind: Dynamo\'s for a DynamoGraphDeployment, though its group is the GPU Operator\'s too', () => {
    const fs = findingsOf({ edit: (d) => { d.installs = { dynamo: 'preinstalled' }; d.tutorials = { dynamo: { enabled: true } }; } }).filter((f) => f.rule === 'api-missing');
    const dgd = fs.find((f) => f.object === 'CustomResourceDefinition nvidia.com/DynamoGraphDeployment');
    // least invasive first: render without the samples; the managed platform last (the fixture runs no Dynamo: no second copy)
    expect(dgd?.fix).toBe('set tutorials.dynamo.enabled: false in the description (renders no DynamoGraphDeployment; the cluster then lacks the Dynamo samples); '
      + 'or set installs.dynamo: managed in the description (the same sync installs the CRD)');
    const pytorch = findingsOf({ edit: (d) => { d.installs = { trainingOperator: 'preinstalled' }; } }).find((f) => f.rule === 'api-missing');
    // the cluster runs no Training Operator: leaving the sample out comes first, a managed one (no second copy) last
    expect(pytorch?.fix).toMatch(/^set installs.trainingOperator: none in the description .*; or set installs.trainingOperator: managed in the description \(the same sync installs the CRD\)$/);
  });

  it('drift-service-monitor-crd: monitoring.serviceMonitorCrd against the cluster\'s CRDs, each way, with a fix that validates', () => {
    const crd = serviceMonitorCrd();
    const drift = (opts: Parameters<typeof findingsOf>[0]) => findingsOf(opts).filter((f) => f.rule === 'drift-service-monitor-crd');
    // the fixture has no such CRD, and the default description says so
    expect(drift({})).toEqual([]);
    expect(drift({ state: stateOf((o) => o.push(crd)), edit: (d) => { d.monitoring = { serviceMonitorCrd: true }; } })).toEqual([]);
    expect(drift({ state: stateOf((o) => o.push(crd)) })).toEqual([{
      rule: 'drift-service-monitor-crd',
      severity: 'warning',
      object: 'CustomResourceDefinition servicemonitors.monitoring.coreos.com',
      message: expect.stringMatching(/description says monitoring.serviceMonitorCrd: false: GPU Operator v26.7.0 creates ServiceMonitors .* a second time$/),
      fix: 'set monitoring.serviceMonitorCrd: true in the description',
    }]);
    expect(drift({ edit: (d) => { d.monitoring = { serviceMonitorCrd: true }; } })).toEqual([expect.objectContaining({
      message: expect.stringMatching(/says monitoring.serviceMonitorCrd: true but the cluster has no servicemonitors.monitoring.coreos.com: .* nothing scrapes it$/),
      fix: 'set monitoring.serviceMonitorCrd: false in the description',
    })]);
    // a state without CRDs (not read) tells nothing
    expect(drift({ state: stateOf((o) => o.splice(0, o.length, ...o.filter((x) => x.kind !== 'CustomResourceDefinition'))), edit: (d) => { d.monitoring = { serviceMonitorCrd: true }; } })).toEqual([]);
  });

  it('--format json gives the same findings as objects with stable rule ids', () => {
    const text = capture();
    expect(main(['preflight', '--config', REFERENCE_FILE, '--snapshot', SNAPSHOT], text.io)).toBe(EXIT.failed);
    const json = capture();
    expect(main(['preflight', '--config', REFERENCE_FILE, '--snapshot', SNAPSHOT, '--format', 'json'], json.io)).toBe(EXIT.failed);
    const parsed = JSON.parse(json.out.join('\n'));
    expect(parsed.errors).toBe(4);
    const lines = [...text.out, ...text.err].filter((l) => /^(error|warning) \[/.test(l));
    expect(parsed.findings).toHaveLength(lines.length);
    const ids = new Set(PREFLIGHT_RULES.map((r) => r.id));
    for (const f of parsed.findings) {
      expect(ids).toContain(f.rule);
      // argocd-takeover also lists the fields it changes
      expect(Object.keys(f).sort()).toEqual([...f.rule === 'argocd-takeover' ? ['changes'] : [], 'fix', 'message', 'object', 'rule', 'severity']);
      expect(lines).toContain(`${f.severity} [${f.rule}] ${f.object}: ${f.message}`);
    }
  });

  it('nodeport-allocated: a Service of ours on a node port another Service holds', () => {
    // The reference leaves the Dashboard's 32443 to the pre-installed Service (monitoring.dashboard.service: preinstalled);
    // a separate Service of ours on a port the cluster already allocates is refused by the API server.
    const fs = findingsOf({
      edit: (d) => { d.monitoring = { dashboard: { service: 'own', nodePort: 30100 } }; },
      state: stateOf((objects) => objects.push({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'grafana', namespace: 'monitoring' },
        spec: { type: 'NodePort', selector: { app: 'grafana' }, ports: [{ port: 80, targetPort: 3000, nodePort: 30100 }] },
      })),
    });
    const hit = fs.find((f) => f.rule === 'nodeport-allocated');
    expect(hit?.severity).toBe('error');
    expect(hit?.message).toMatch(/node port 30100 is already allocated to Service monitoring\/grafana/);
    expect(hit?.fix).toMatch(/monitoring\.dashboard/);
    expect(rules(findingsOf())).not.toContain('nodeport-allocated');
  });

  it('namespace-isolated: the first tenant\'s default deny in the pre-installed default namespace is named, with the Services it cuts off', () => {
    const isolated = (fs: readonly PreflightFinding[]) => fs.filter((f) => f.rule === 'namespace-isolated');
    const [hit, ...more] = isolated(findingsOf());
    expect(more).toEqual([]);
    expect(hit).toMatchObject({ severity: 'warning', object: 'NetworkPolicy default/default-deny-ingress' });
    expect(hit.message).toMatch(/^the first sync of tenants\/ isolates the pre-installed namespace default: its pods then accept connections only from pods in default and in monitoring /);
    expect(hit.fix).toMatch(/move it to a namespace of its own, or add a NetworkPolicy in default that lets its clients in/);
    // a Service there that other namespaces use is named (the API server's own is not)
    const withService = stateOf((objects) => objects.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'jupyter', namespace: 'default' }, spec: { ports: [{ port: 8888 }] } }));
    expect(isolated(findingsOf({ state: withService }))[0].message).toMatch(/; its Services jupyter stop answering clients in any other namespace$/);
    // a tenant namespace the cluster has already is isolated the same way; a new one is not pre-installed
    const withResearch = stateOf((objects) => objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'research' } }));
    expect(isolated(findingsOf({ state: withResearch })).map((f) => f.object)).toEqual(['NetworkPolicy default/default-deny-ingress', 'NetworkPolicy research/default-deny-ingress']);
    // no tenant: nothing rendered in default; default isolated already (or synced before): nothing changes
    expect(isolated(findingsOf({ edit: (d) => { d.tenants = []; } }))).toEqual([]);
    const denied = stateOf((objects) => objects.push({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny-all', namespace: 'default' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } }));
    expect(isolated(findingsOf({ state: denied }))).toEqual([]);
  });

  it('exits 0 once the description adopts what preflight suggests', () => {
    const c = capture();
    expect(main(['preflight', '--config', ADOPTED, '--snapshot', SNAPSHOT], c.io)).toBe(EXIT.ok);
    expect(c.err).toEqual([]);
    expect(c.out[c.out.length - 1]).toMatch(/^ok: .* 0 blocking finding/);
  });

  it('lists every rule with its family', () => {
    const c = capture();
    expect(main(['preflight', '--list-rules'], c.io)).toBe(EXIT.ok);
    expect(c.out).toHaveLength(PREFLIGHT_RULES.length);
    expect(new Set(PREFLIGHT_RULES.map((r) => r.family))).toEqual(new Set(['state', 'immutable', 'quota', 'api', 'release', 'drift', 'foreign-config', 'takeover']));
  });
});

describe('fix texts name the Kueue objects the description names', () => {
  it('a renamed default LocalQueue and ClusterQueue: the fixes follow the description, not the usual names', () => {
    // the pre-wired LocalQueue of the fixture, under the name the description now gives the default queue
    const state = stateOf((objects) => objects
      .filter((o) => o.kind === 'LocalQueue' && o.metadata.name === 'default' && o.metadata.namespace === 'default')
      .forEach((o) => { o.metadata.name = 'main'; }));
    const fs = findingsOf({ edit: (d) => { d.queueing = { ...d.queueing, defaultQueue: 'main', defaultClusterQueue: 'shared-gpus' }; }, state });
    const immutable = fs.find((f) => f.rule === 'immutable-field' && f.object.includes('LocalQueue'));
    expect(immutable?.object).toContain('default/main');
    expect(immutable?.message).toContain('"cluster-queue" in the cluster and "shared-gpus" in the render');
    expect(immutable?.fix).toMatch(/^set queueing\.defaultClusterQueue: cluster-queue in the description \(adopt the pre-wired ClusterQueue\)/);
    // the pre-wired LocalQueue is found under its new name: the quota fix adopts its ClusterQueue too
    expect(fs.find((f) => f.rule === 'quota-outside-cohort')?.fix).toMatch(/^set queueing\.defaultClusterQueue: cluster-queue in the description \(the pre-wired default LocalQueue/);
    // renamed only in the description: the live default/default is a LocalQueue the render does not own, named as it is
    const lone = findingsOf({ edit: (d) => { d.queueing = { ...d.queueing, defaultQueue: 'main' }; } });
    const defaulting = lone.find((f) => f.rule === 'localqueue-defaulting');
    expect(defaulting?.message).toContain('not to the rendered LocalQueue main');
    expect(defaulting?.fix).toContain('kubectl -n default delete localqueue default once no workload uses it, or set queueing.defaultQueue: default');
  });
});

describe('each rule fires on its conflict', () => {
  const set = (kind: string, name: string, f: (o: any) => void) => (objects: any[]) => {
    objects.filter((o) => o.kind === kind && o.metadata.name === name).forEach(f);
  };

  it('immutable-field: StorageClass provisioner, parameters, reclaimPolicy, volumeBindingMode', () => {
    const state = stateOf(set('StorageClass', 'local-disk', (o) => {
      o.reclaimPolicy = 'Retain';
      o.volumeBindingMode = 'Immediate';
      o.parameters = { nodePath: '/mnt/nvme' };
      o.provisioner = 'example.com/other';
    }));
    const f = findingsOf({ state }).filter((x) => x.rule === 'immutable-field' && x.object === 'StorageClass local-disk');
    expect(f).toHaveLength(1);
    for (const field of ['provisioner', 'parameters', 'reclaimPolicy', 'volumeBindingMode']) expect(f[0].message).toContain(`${field} is`);
    expect(f[0].fix).toContain('kubectl delete storageclass local-disk');
    const onlyReclaim = stateOf((objects) => objects.filter((o) => o.kind === 'StorageClass').forEach((o) => { o.reclaimPolicy = 'Retain'; }));
    const g = findingsOf({ state: onlyReclaim }).filter((x) => x.rule === 'immutable-field' && x.object.startsWith('StorageClass'));
    expect(g).toHaveLength(3);
    expect(g[0].fix).toContain('storage.reclaimPolicy: Retain');
    expect(blocking(findingsOf({ state: onlyReclaim, edit: (d) => { d.storage.reclaimPolicy = 'Retain'; } })).filter((x) => x.object.startsWith('StorageClass'))).toEqual([]);
  });

  it('immutable-field: mixed reclaim policies get one per-class fix that, followed, leaves no StorageClass differing (no loop)', () => {
    const mixed = stateOf(set('StorageClass', 'local-disk', (o) => { o.reclaimPolicy = 'Retain'; }));
    const [f, ...more] = findingsOf({ state: mixed }).filter((x) => x.rule === 'immutable-field' && x.object.startsWith('StorageClass'));
    expect(more).toEqual([]);
    expect(f.fix).toMatch(/^set storage.reclaimPolicy: \{ local-path: Delete, shared-path: Delete, local-disk: Retain \} in the description, or kubectl delete storageclass local-disk/);
    const followed = findingsOf({ state: mixed, edit: (d) => { d.storage.reclaimPolicy = { 'local-path': 'Delete', 'shared-path': 'Delete', 'local-disk': 'Retain' }; } });
    expect(followed.filter((x) => x.rule === 'immutable-field' && x.object.startsWith('StorageClass'))).toEqual([]);
    // a class left out of the mapping deletes its volumes, as the single value's default does
    const rendered = renderOf((d) => { d.storage.reclaimPolicy = { 'local-disk': 'Retain' }; }).folders.flatMap((x) => x.objects).filter((o) => o.kind === 'StorageClass');
    expect(Object.fromEntries(rendered.map((o: any) => [o.metadata.name, o.reclaimPolicy]))).toEqual({ 'local-path': 'Delete', 'shared-path': 'Delete', 'local-disk': 'Retain' });
  });

  it('api-missing orders its fixes from the least invasive: render without the kind, its one CRD, a managed install (a second stack) last', () => {
    const noPodScrapes = stateOf((objects) => objects.splice(objects.findIndex((o) => o.metadata.name === 'vmpodscrapes.operator.victoriametrics.com'), 1));
    const crdFileOf = (apiVersion: string, kind: string) => (kind === 'VMPodScrape' ? `/schemas/${apiVersion.split('/')[0]}_vmpodscrapes.yaml` : undefined);
    const f = preflight(renderOf(), noPodScrapes, undefined, { crdFileOf }).find((x) => x.rule === 'api-missing');
    expect(f?.fix.split('; or ')).toEqual([
      'set monitoring.scrape.networkOperator: false in the description (renders no VMPodScrape; the cluster then lacks the Network Operator\'s metrics)',
      'install its CRD alone: kubectl apply --server-side -f /schemas/operator.victoriametrics.com_vmpodscrapes.yaml (the running operator must be one that watches VMPodScrape)',
      'set installs.monitoring: managed in the description (the same sync installs the CRD; a second copy of the add-on beside the one the cluster runs, so remove that first)',
    ]);
    expect(blocking(findingsOf({ state: noPodScrapes, edit: (d) => { d.monitoring = { scrape: { networkOperator: false } }; } })).map((x) => x.rule)).not.toContain('api-missing');
  });

  it('immutable-field: a tenant LocalQueue pointing elsewhere', () => {
    const state = stateOf((objects) => objects.push({ apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'LocalQueue', metadata: { name: 'research', namespace: 'research' }, spec: { clusterQueue: 'cluster-queue' } }));
    const f = findingsOf({ state }).find((x) => x.rule === 'immutable-field' && x.object === 'LocalQueue research/research');
    expect(f?.fix).toContain('kubectl -n research delete localqueue research');
  });

  it('localqueue-defaulting: a LocalQueue "default" left in a tenant namespace queues every unlabelled pod there', () => {
    const state = stateOf((objects) => objects.push({ apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'LocalQueue', metadata: { name: 'default', namespace: 'research' }, spec: { clusterQueue: 'research' } }));
    const f = findingsOf({ state }).filter((x) => x.rule === 'localqueue-defaulting');
    expect(f.map((x) => [x.severity, x.object])).toEqual([['warning', 'LocalQueue research/default']]);
    expect(f[0].message).toContain('queues every pod and job created in namespace research without a queue label to this queue (ClusterQueue research), CPU-only pods included, not to the rendered LocalQueue research');
    expect(f[0].fix).toBe('kubectl -n research delete localqueue default once no workload uses it, or set tenants[0].queue: default to keep queueing everything there');
    // the tenant that keeps "default" renders it: nothing to say
    expect(findingsOf({ state, edit: (d) => { d.tenants[0].queue = 'default'; } }).filter((x) => x.rule === 'localqueue-defaulting')).toEqual([]);
    // the pre-wired default/default is the render's own
    expect(findingsOf().filter((x) => x.rule === 'localqueue-defaulting')).toEqual([]);
  });

  it('priorityclass-global-default: a rendered globalDefault beside the cluster\'s (the reference renders none)', () => {
    const state = stateOf((objects) => objects.push({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'cluster-default' }, value: 1000, globalDefault: true }));
    expect(findingsOf({ state }).filter((x) => x.rule === 'priorityclass-global-default')).toEqual([]);
    const base = renderOf();
    const ours: Manifest = { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'batch-default' }, value: 10, globalDefault: true };
    const cluster: RenderedCluster = { ...base, folders: [...base.folders, { folder: 'extra', description: 'test', objects: [ours] }] };
    const f = findingsOf({ cluster, state }).filter((x) => x.rule === 'priorityclass-global-default');
    expect(f.map((x) => x.object)).toEqual(['PriorityClass cluster-default']);
  });

  it('storageclass-default: another default StorageClass', () => {
    const state = stateOf((objects) => objects.push({
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'standard', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }, provisioner: 'kubernetes.io/no-provisioner',
    }));
    const f = findingsOf({ state }).filter((x) => x.rule === 'storageclass-default');
    expect(f.map((x) => x.object)).toEqual(['StorageClass standard']);
    expect(f[0].fix).toContain('kubectl annotate storageclass standard storageclass.kubernetes.io/is-default-class=false --overwrite');
  });

  it('quota-outside-cohort: a ClusterQueue the default LocalQueue does not use', () => {
    const state = stateOf(set('LocalQueue', 'default', (o) => { o.spec.clusterQueue = 'default'; }));
    const f = findingsOf({ state }).filter((x) => x.rule === 'quota-outside-cohort');
    expect(f[0].fix).toContain('kubectl delete clusterqueue cluster-queue');
    const inCohort = stateOf(set('ClusterQueue', 'cluster-queue', (o) => { o.spec.cohortName = 'gpu-cohort'; }));
    expect(findingsOf({ state: inCohort }).filter((x) => x.rule === 'quota-outside-cohort')).toEqual([]);
  });

  it('api-version-not-served: the Kueue CRDs serve only v1beta1', () => {
    const state = stateOf((objects) => objects.filter((o) => o.kind === 'CustomResourceDefinition' && o.spec.group === 'kueue.x-k8s.io')
      .forEach((o) => { o.spec.versions = [{ name: 'v1beta1', served: true, storage: true }]; }));
    const f = findingsOf({ state }).filter((x) => x.rule === 'api-version-not-served');
    expect(f.map((x) => x.message).join('\n')).toContain('kueue.x-k8s.io/v1beta2 for 3 ClusterQueue');
    expect(f.every((x) => x.severity === 'error')).toBe(true);
    // a managed Kueue brings its CRDs in the same sync
    expect(findingsOf({ state, edit: (d) => { d.installs = { kueue: 'managed' }; } }).filter((x) => x.rule.startsWith('api-'))
      .filter((x) => x.message.includes('kueue'))).toEqual([]);
  });

  it('drift: GPUs per node, product label, taints, RDMA name and rdmaHcaMax', () => {
    const state = stateOf(set('Node', 'gpu-worker-2', (o) => {
      o.status.allocatable['nvidia.com/gpu'] = '4';
      o.metadata.labels['nvidia.com/gpu.product'] = 'NVIDIA-A100-SXM4-80GB';
      o.spec.taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }];
      delete o.status.allocatable['rdma/rdma_shared_device_a'];
      o.status.allocatable['rdma/hca_shared_devices_a'] = '63';
    }));
    const f = findingsOf({ state });
    expect(f.find((x) => x.rule === 'drift-gpus-per-node')?.fix).toContain('nodes.gpuWorkers.gpusPerNode: 4');
    expect(f.find((x) => x.rule === 'drift-gpu-product')?.fix).toContain('nodes.gpuWorkers.gpuProduct: NVIDIA-A100-SXM4-80GB');
    expect(f.find((x) => x.rule === 'drift-taints')?.message).toContain('dedicated=gpu:NoSchedule');
    expect(f.find((x) => x.rule === 'drift-rdma')?.fix).toContain('rdmaSharedDevice.name: hca_shared_devices_a');
    const hca = stateOf((objects) => objects.filter((o) => o.kind === 'Node' && o.status.allocatable['nvidia.com/gpu']).forEach((o) => { o.status.allocatable['rdma/rdma_shared_device_a'] = '16'; }));
    expect(findingsOf({ state: hca }).find((x) => x.rule === 'drift-rdma')?.fix).toContain('hcaMax: 16');
  });

  it('drift-rdma: the NicClusterPolicy config when no node advertises RDMA yet', () => {
    const state = stateOf((objects) => {
      objects.filter((o) => o.kind === 'Node').forEach((o) => { delete o.status.allocatable['rdma/rdma_shared_device_a']; });
      set('NicClusterPolicy', 'nic-cluster-policy', (o) => { o.spec.rdmaSharedDevicePlugin.config = JSON.stringify({ configList: [{ resourceName: 'rdma_ib', rdmaHcaMax: 1000 }] }); })(objects);
    });
    const f = findingsOf({ state }).find((x) => x.rule === 'drift-rdma');
    expect(f?.fix).toContain('set network.infiniband.rdmaSharedDevice.name: rdma_ib and network.infiniband.rdmaSharedDevice.hcaMax: 1000 in the description');
  });

  it('kueue-integrations: plain pods with the queue label need the pod integration (data-driven)', () => {
    const base = renderOf();
    const pod: Manifest = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'sky-head', namespace: 'default', labels: { 'kueue.x-k8s.io/queue-name': 'default' } }, spec: {} };
    const cluster: RenderedCluster = { ...base, folders: [...base.folders, { folder: 'tutorials', description: 'test', objects: [pod] }] };
    expect(kueueFramework(pod)).toBe('pod');
    // the chart's default configuration has the pod integration; this Kueue does not
    const state = stateOf(set('ConfigMap', 'kueue-manager-config', (o) => {
      o.data['controller_manager_config.yaml'] = o.data['controller_manager_config.yaml'].replace(/^\s*- pod\n/m, '');
    }));
    const config = state.list('', 'ConfigMap').find((c) => c.metadata.name === 'kueue-manager-config')!;
    expect((config.data as Record<string, string>)['controller_manager_config.yaml']).not.toMatch(/^\s*- pod$/m);
    const f = findingsOf({ cluster, state }).find((x) => x.rule === 'kueue-integrations');
    expect(f?.message).toContain('lacks pod;');
    expect(f?.message).toContain('Pod default/sky-head');
  });

  it('kueue-integrations orders its fixes from the least invasive: render without what needs it, add it to the running Kueue, a Kueue of ours last', () => {
    const f = findingsOf({ edit: (d) => { d.installs = { trainingOperator: 'preinstalled' }; } }).find((x) => x.rule === 'kueue-integrations');
    expect(f?.fix.split('; or ')).toEqual([
      'set installs.trainingOperator: none in the description (the cluster then lacks the PyTorchJob sample)',
      expect.stringMatching(/^add kubeflow.org\/pytorchjob to integrations.frameworks: kubectl -n kueue-system edit configmap kueue-manager-config && kubectl .* rollout restart/),
      'set installs.kueue: managed in the description (the toolkit then renders the manager configuration; a second Kueue beside the pre-installed one, so remove that first)',
    ]);
  });

  it('argocd-prune: a live object tracked by a rendered Application but not rendered', () => {
    const state = stateOf((objects) => objects.push({
      apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'ClusterQueue', metadata: { name: 'old-team', labels: { 'app.kubernetes.io/instance': 'instant-cluster-kueue' } }, spec: { cohortName: 'gpu-cohort' },
    }));
    const f = findingsOf({ state }).filter((x) => x.rule === 'argocd-prune');
    expect(f.map((x) => [x.object, x.severity])).toEqual([['ClusterQueue old-team', 'error']]);
    expect(f[0].fix).toContain('kubectl label clusterqueue old-team app.kubernetes.io/instance-');
  });

  it('argocd-prune: what an Application syncs from beyond the render (the argocd folder\'s upstream install) is never taken for pruned', () => {
    const cluster = renderOf();
    const appOf = (folder: string) => cluster.folders.flatMap((f) => f.objects)
      .find((o) => o.kind === 'Application' && (o.spec as { source?: { path?: string } }).source?.path?.endsWith(`/${folder}`))!.metadata.name;
    const folder = cluster.folders.find((f) => f.folder === 'argocd')!;
    expect(folder.kustomization?.bases.length).toBeGreaterThan(0);
    // Argo CD's own server, as a synced cluster shows it: tracked by the Application of the argocd folder, built
    // from the upstream install the folder's kustomization names, so in no rendered file
    const tracked = (app: string, name: string) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: 'argocd', annotations: { 'argocd.argoproj.io/tracking-id': `${app}:apps/Deployment:argocd/${name}` } },
      spec: {},
    });
    const state = stateOf((objects) => objects.push(tracked(appOf('argocd'), 'argocd-server'), tracked(appOf('storage'), 'left-behind')));
    const f = findingsOf({ cluster, state }).filter((x) => x.rule === 'argocd-prune');
    // the folder of own files only still fires (the fixture that proves the rule is not switched off)
    expect(f.map((x) => x.object)).toEqual(['Deployment argocd/left-behind']);
  });

  it('snapshot-incomplete and kueue-config-unread: what the state lacks is said, not taken as missing APIs', () => {
    const state = stateOf((objects) => objects.splice(0, objects.length, ...objects.filter((o) => !['Node', 'CustomResourceDefinition', 'ConfigMap'].includes(o.kind))));
    const f = findingsOf({ state });
    expect(f.filter((x) => x.rule === 'snapshot-incomplete').map((x) => x.object)).toEqual(['Node (none)', 'CustomResourceDefinition (none)']);
    expect(f.find((x) => x.rule === 'kueue-config-unread')?.severity).toBe('warning');
    expect(f.filter((x) => x.rule.startsWith('api-') || x.rule.startsWith('drift-'))).toEqual([]);
    expect(f.find((x) => x.rule === 'kueue-config-unread')?.fix).toMatch(/to the snapshot$/);
  });

  it('a state read live: no advice about a snapshot (a live read lists every kind the rules need, or fails)', () => {
    const snapshot = stateOf((objects) => objects.splice(0, objects.length, ...objects.filter((o) => !['StorageClass', 'ConfigMap'].includes(o.kind))));
    const live = new ClusterState('https://127.0.0.1:6443', snapshot.objects, true);
    const f = findingsOf({ state: live });
    expect(f.filter((x) => x.rule === 'snapshot-incomplete')).toEqual([]);
    expect(f.find((x) => x.rule === 'kueue-config-unread')?.fix).toMatch(/^the cluster's Kueue reads its configuration from elsewhere/);
    expect(f.map((x) => `${x.message} ${x.fix}`).filter((x) => /snapshot/.test(x))).toEqual([]);
    // the same objects from a snapshot: both say what to add to it
    expect(findingsOf({ state: snapshot }).filter((x) => x.rule === 'snapshot-incomplete').map((x) => x.object)).toEqual(['StorageClass (none)']);
  });

  it('argocd-takeover: blocking when a controller owns the object', () => {
    const state = stateOf(set('ClusterPolicy', 'cluster-policy', (o) => { o.metadata.ownerReferences = [{ kind: 'GPUCluster', name: 'main', controller: true }]; }));
    const f = findingsOf({ state }).find((x) => x.rule === 'argocd-takeover' && x.object === 'ClusterPolicy cluster-policy');
    expect(f?.severity).toBe('error');
    expect(f?.message).toContain('managed by controller GPUCluster main');
  });

  it('argocd-takeover of the ClusterPolicy: every field it changes, old and new value, and the description field that keeps the old one', () => {
    const state = stateOf(set('ClusterPolicy', 'cluster-policy', (o) => {
      o.spec.cdi = { enabled: false };
      o.spec.dcgm = { enabled: true };
      o.spec.mig = { strategy: 'mixed' };
    }));
    const f = findingsOf({ state }).find((x) => x.rule === 'argocd-takeover' && x.object === 'ClusterPolicy cluster-policy')!;
    const changes = f.changes!;
    expect(f.message).toMatch(new RegExp(`changes ${changes.length} field\\(s\\), 3 of them decided by the description$`));
    expect(changes).toEqual(expect.arrayContaining([
      { path: 'spec.cdi.enabled', from: false, to: true, keep: { field: 'gpuOperator.cdi', value: false } },
      { path: 'spec.dcgm.enabled', from: true, to: false, keep: { field: 'gpuOperator.dcgm', value: true } },
      { path: 'spec.mig.strategy', from: 'mixed', to: 'single', keep: { field: 'gpuOperator.migStrategy', value: 'mixed' } },
      // what the description does not decide: old and new value, no field
      { path: 'spec.dcgm.version', to: expect.any(String) },
    ]));
    // every change of the apply, none cut off (leaves of sections the live object lacks included)
    expect(changes.length).toBeGreaterThan(20);
    const text = formatPreflightFinding(f);
    expect(text).toHaveLength(changes.length + 2);
    expect(text).toContain('  spec.cdi.enabled: false -> true (keeps false: gpuOperator.cdi: false)');
    expect(text).toContain('  spec.mig.strategy: "mixed" -> "single" (keeps "mixed": gpuOperator.migStrategy: "mixed")');
    expect(text.at(-1)).toMatch(/^ {2}fix: set the description field named on a change to keep the cluster's value; compare: kubectl get clusterpolicy/);
  });
});

describe('bad snapshots exit 2 with a one-line reason', () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'preflight-bad-')); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const cases: [string, string, RegExp][] = [
    ['not-yaml', 'a: [b\n', /invalid YAML/],
    ['scalar', 'hello\n', /not a Kubernetes object/],
    ['no-kind', 'metadata: { name: x }\n', /not a Kubernetes object/],
    ['empty', '\n---\n', /empty snapshot/],
    ['list-without-items', 'apiVersion: v1\nkind: List\nmetadata: {}\n', /a List without items/],
    ['bad-item', 'apiVersion: v1\nkind: List\nitems: [42]\n', /items\[0\]: not a Kubernetes object/],
  ];
  for (const [name, text, reason] of cases) {
    it(name, () => {
      const file = path.join(dir, `${name}.yaml`);
      writeFileSync(file, text);
      const c = capture();
      expect(main(['preflight', '--config', REFERENCE_FILE, '--snapshot', file], c.io)).toBe(EXIT.badInput);
      expect(c.err).toHaveLength(1);
      expect(c.err[0]).toMatch(reason);
      expect(c.out).toEqual([]);
    });
  }

  it('a folder, a missing file', () => {
    mkdirSync(path.join(dir, 'folder'), { recursive: true });
    for (const [file, reason] of [[path.join(dir, 'folder'), /not a regular file/], [path.join(dir, 'missing.yaml'), /no such file/]] as const) {
      const c = capture();
      expect(main(['preflight', '--config', REFERENCE_FILE, '--snapshot', file], c.io)).toBe(EXIT.badInput);
      expect(c.err.join('\n')).toMatch(reason);
    }
  });

  it('arguments: both sources, neither, --context without --kubeconfig', () => {
    for (const args of [['--snapshot', SNAPSHOT, '--kubeconfig', 'x'], [], ['--snapshot', SNAPSHOT, '--context', 'x']]) {
      const c = capture();
      expect(main(['preflight', '--config', REFERENCE_FILE, ...args], c.io)).toBe(EXIT.badInput);
      expect(c.err).toHaveLength(1);
    }
  });

  it('plain objects and List documents mix', () => {
    const state = parseSnapshot('apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems: []\n', 'mixed');
    expect(state.objects.map((o) => o.metadata.name)).toEqual(['a']);
  });
});

describe('preflight --kubeconfig reads the same state live (GET only)', () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'preflight-live-')); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers from a fake API server as from the snapshot', async () => {
    const server = await serveState(readSnapshot(SNAPSHOT));
    try {
      const kubeconfig = path.join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(server.url));
      const live = capture();
      expect(await main(['preflight', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig, '--context', 'test', '--format', 'json'], live.io)).toBe(EXIT.failed);
      const snap = capture();
      expect(main(['preflight', '--config', REFERENCE_FILE, '--snapshot', SNAPSHOT, '--format', 'json'], snap.io)).toBe(EXIT.failed);
      expect(JSON.parse(live.out.join('\n')).findings).toEqual(JSON.parse(snap.out.join('\n')).findings);
      expect(server.requests.length).toBeGreaterThan(5);
      expect(server.requests.every((r) => r.method === 'GET' && r.authorization === 'Bearer preflight-test-token')).toBe(true);
      expect(server.requests.some((r) => r.path.includes('/secrets'))).toBe(false);
    } finally {
      await server.close();
    }
  }, 120_000); // loading the client library on a busy machine; never a speed assertion

  it('a server that does not answer exits 2 naming it', async () => {
    const server = await serveState(new ClusterState('none', []));
    const url = server.url;
    await server.close(); // the port is closed now
    const kubeconfig = path.join(dir, 'closed');
    writeFileSync(kubeconfig, kubeconfigFor(url));
    const c = capture();
    expect(await main(['preflight', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig, '--timeout', '5'], c.io)).toBe(EXIT.badInput);
    expect(c.err).toHaveLength(1);
    expect(c.err[0]).toContain(url);
  }, 120_000);

  it('an unknown context exits 2', async () => {
    const kubeconfig = path.join(dir, 'ctx');
    writeFileSync(kubeconfig, kubeconfigFor('http://127.0.0.1:9'));
    const c = capture();
    expect(await main(['preflight', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig, '--context', 'nope'], c.io)).toBe(EXIT.badInput);
    expect(c.err[0]).toContain('--context nope');
  }, 120_000);
});

describe('preflight: a cluster that already runs Argo CD', () => {
  const argocd = (fs: readonly PreflightFinding[]) => fs.filter((f) => f.rule === 'argocd-present');
  const app = (namespace: string) => ({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'legacy', namespace }, spec: {} });

  it('tells it to adopt or keep it, a warning when the description renders Argo CD into the same namespace', () => {
    expect(argocd(findingsOf({ state: stateOf((o) => o.push(app('argocd'))) }))).toEqual([{
      rule: 'argocd-present',
      severity: 'warning',
      object: 'CustomResourceDefinition applications.argoproj.io',
      message: expect.stringMatching(/^the cluster already runs Argo CD \(Applications in argocd\), and gitops.argocd is "managed": bootstrapping argocd\/ takes it over \(Argo CD v3.5.1/),
      fix: expect.stringMatching(/^keep it: set gitops.argocd: external and merge the health checks into its argocd-cm .*; or adopt it: gitops.namespace: argocd/),
    }]);
  });

  it('blocks a second Argo CD beside one in another namespace', () => {
    const [f] = argocd(findingsOf({ state: stateOf((o) => o.push(app('gitops-system'))) }));
    expect(f.severity).toBe('error');
    expect(f.message).toMatch(/its Applications live in gitops-system, not argocd: a second Argo CD would share the cluster-wide CRDs and roles/);
    expect(f.fix).toMatch(/adopt it: gitops.namespace: gitops-system/);
  });

  it('says nothing with gitops.argocd: external, or without Argo CD', () => {
    expect(argocd(findingsOf({ edit: (d) => { d.gitops.argocd = 'external'; } }))).toEqual([]);
    expect(argocd(findingsOf({ state: stateOf((o) => o.splice(0, o.length, ...o.filter((x) => x.spec?.group !== 'argoproj.io'))) }))).toEqual([]);
  });
});

describe('multikueue-clusterprofile-api: a fleet manager needs the ClusterProfile CRD for its ClusterProfile workers', () => {
  const [hub] = loadModels([path.join(FLEET_FIXTURE, 'hub.yaml')]);
  const cluster = renderModel(hub);
  const { group, kind, crd: crdName } = MULTIKUEUE.clusterProfile;
  const crd = (g: string, k: string, plural: string) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${g}` },
    spec: { group: g, names: { kind: k, plural }, scope: 'Namespaced', versions: [{ name: 'v1alpha1', served: true, storage: true }] },
  });
  const kueueCrd = crd('kueue.x-k8s.io', 'ClusterQueue', 'clusterqueues');
  const rule = PREFLIGHT_RULES.filter((r) => r.id === 'multikueue-clusterprofile-api');
  const profileWorkers = hub.multiKueue?.role === 'manager' ? hub.multiKueue.workers.filter((w) => w.clusterProfile !== undefined).map((w) => w.cluster) : [];

  it('without the CRD: blocked, naming the workers reached through a ClusterProfile', () => {
    expect(profileWorkers.length).toBeGreaterThan(0);
    expect(preflight(cluster, new ClusterState('t', [kueueCrd]), rule)).toEqual([expect.objectContaining({
      rule: 'multikueue-clusterprofile-api',
      severity: 'error',
      object: `CustomResourceDefinition ${crdName}`,
      message: expect.stringContaining(`the fleet reaches ${profileWorkers.join(', ')} through a ClusterProfile`),
    })]);
  });

  it('with the CRD, for a cluster that is no manager, or without the CRDs read: nothing', () => {
    expect(preflight(cluster, new ClusterState('t', [kueueCrd, crd(group, kind, crdName.split('.')[0])]), rule)).toEqual([]);
    expect(preflight(renderOf(), new ClusterState('t', [kueueCrd]), rule)).toEqual([]);
    expect(preflight(cluster, new ClusterState('t', []), rule)).toEqual([]);
  });
});
