import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkCluster, checkClusterRendered, ClusterView, Finding, RULES, SchemaOf, ScopeOf } from '../../src/check';
import { APPLIED_SIZE_RULES } from '../../src/check/applied-size';
import { CRD_ORDER_RULES } from '../../src/check/crd-order';
import { DETERMINISM_RULES } from '../../src/check/determinism';
import { UPSTREAM_RULES } from '../../src/check/upstream';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { SchemaStore } from '../../src/validate/schemas';
import { HAS_SCHEMAS, HAS_UPSTREAM, modelOf, RULES_WITHOUT_RERUNS } from '../helpers';

const FIXTURES = path.join(__dirname, 'fixtures');
const model = modelOf();

/** A fixture: its folders, checked with the reference description (its `description:` fields, when it has them, set over it). */
function fixture(file: string): ClusterView {
  const doc = parse(readFileSync(path.join(FIXTURES, file), 'utf8')) as { folders: Record<string, Manifest[]>; description?: Record<string, unknown> };
  const described = doc.description ? modelOf((d) => Object.assign(d, doc.description)) : model;
  return { name: model.name, model: described, folders: Object.entries(doc.folders).map(([folder, objects]) => ({ folder, objects })) };
}

const store = HAS_SCHEMAS ? SchemaStore.open(DEFAULT_SCHEMAS) : undefined;
const scopeOf: ScopeOf | undefined = store && ((apiVersion, kind) => store.lookup(apiVersion, kind)?.scope);
const schemaOf: SchemaOf | undefined = store && ((apiVersion, kind) => store.lookup(apiVersion, kind)?.schema);

/** Words each failing fixture's findings must say: both objects' names, and the fact that is wrong. */
const SAYS: Record<string, readonly RegExp[]> = {
  'queue-label-target': [/Job default\/hello/, /"default" names no LocalQueue in namespace "default"/, /LocalQueues there: none/],
  'tenant-localqueue': [/^Namespace research: tenant namespace of "research" has no LocalQueue/, /quota of ClusterQueue research goes unused/],
  'localqueue-clusterqueue': [/LocalQueue research\/default/, /"reserach" is no rendered ClusterQueue/, /ClusterQueues: research/],
  'clusterqueue-flavor': [/ClusterQueue default/, /"a100" is no rendered ResourceFlavor/, /ResourceFlavors: h100/],
  'queue-resource-coverage': [/Job default\/train/, /rdma\/rdma_shared_device_a/, /ClusterQueue default/, /LocalQueue default\/default/],
  'quota-capacity': [/cohort gpu-cohort/, /quota 20 \(default 8, research 12\)/, /16 GPUs/],
  'quota-node-reserve': [
    /^DaemonSet monitoring\/gpu-agent: the DaemonSet pods on every GPU worker \(DaemonSet monitoring\/gpu-agent\) request 3 CPU and 1Gi memory, more than nodes.gpuWorkers.reserved keeps out of the quotas \(2 CPU, 4Gi\)/,
    /^ResourceFlavor h100: the nominal quotas of ClusterQueue default, ClusterQueue research on this flavor add up to 384 CPU, more than its nodes keep for workloads \(2 x \(192 - 2\) CPU/m,
  ],
  'priorityclass-no-global-default': [/^PriorityClass normal: globalDefault: true/, /every pod of the cluster/, /refuses a second/],
  'mpijob-ranks': [/MPIJob default\/nccl-all-reduce/, /-np 12/, /2 worker\(s\) x slotsPerWorker 8 = 16/],
  'mpijob-fit': [/MPIJob default\/nccl-all-reduce/, /3 workers x 8 GPUs = 24/, /cluster's 16/],
  'nic-cluster-policy-singleton': [/NicClusterPolicy nic-policy/, /"nic-cluster-policy"/],
  'cluster-policy-singleton': [/2 ClusterPolicys/, /ClusterPolicy cluster-policy-2/],
  'rdma-resource-name': [/Pod default\/rdma-check/, /rdma\/rdma_shared_device_b/, /NicClusterPolicy nic-cluster-policy advertises rdma\/rdma_shared_device_a/],
  'default-storage-class': [/2 StorageClasses/, /StorageClass local-path/],
  'pvc-storage-class': [/PersistentVolumeClaim research\/datasets/, /"fast-ssd"/, /StatefulSet research\/cache/, /"nvme"/],
  'application-path': [/Application argocd\/instant-cluster-kueue/, /"dist\/instant-cluster\/kueu" names no rendered folder/, /outside the cluster's folder/],
  'sync-wave-order': [/Application argocd\/instant-cluster-kueue/, /Application instant-cluster-kueue-install \(wave 1\)/, /Widget one/, /SkipDryRunOnMissingResource/],
  'application-folder-owner': [/Application argocd\/instant-cluster-kueue/, /folder kueue\/ is synced by 2 Applications/, /instant-cluster-queues/],
  'application-project': [/Application argocd\/instant-cluster-kueue/, /namespace "default"/, /cluster-scoped ClusterQueue default/, /AppProject instant-cluster forbids/],
  'no-privileged': [/Job default\/nccl-node-check/, /is privileged/, /allowPrivilegeEscalation: true/],
  'image-pinned': [/nccl-tests:latest/, /"latest" tag/, /Pod default\/probe/, /has no tag/, /NVIDIADriver default: spec.version/],
  'no-secret-data': [/Secret research\/registry-pull/, /data.token, stringData.user/],
  'no-credentials': [/^ConfigMap kueue-system\/lab-a-kubeconfig: data.kubeconfig holds a JSON Web Token \(a service-account token\)/, /never goes into the rendered tree/],
  'multikueue-manager-job-managed-by': [/^AdmissionCheck multikueue: kubernetesVersion 1.31/, /JobManagedBy/, /The owner is not managed by Kueue/],
  'image-matches-upstream': [
    /ClusterPolicy cluster-policy: spec.validator.repository is "nvcr.io\/nvidia\/cloud-native"/, /spec.validator.image is "gpu-operator-validator"/,
    /the gpu-operator v26.7.0 chart renders "gpu-operator"/, /spec.devicePlugin.version is "v0.17.0"/, /spec.sidecar sets an image .* no upstream default/,
    /NicClusterPolicy nic-cluster-policy: spec.global.version is "network-operator-v25.10.0"/, /images in nvcr.io\/nvidia\/mellanox are tagged network-operator-v26.4.1/,
  ],
  'appproject-permits-install-footprint': [
    /Application argocd\/instant-cluster-kueue-install: chart kueue 0.19.2 writes into namespace "kube-system"/,
    /\(RoleBinding kueue-visibility-server-auth-reader\)/,
    /Application argocd\/instant-cluster-network-operator-install: chart network-operator 26.4.1 creates nfd.k8s-sigs.io\/NodeFeatureRule/,
    /NodeFeatureRule nvidia-nics-rules/, /AppProject instant-cluster/,
  ],
  'application-renders': [
    /Application argocd\/instant-cluster-dynamo-platform-install: chart dynamo-platform 1.4.0 does not render: the values enable dependency kai-scheduler \(global.kai-scheduler.install: true\)/,
    /Application argocd\/instant-cluster-mpi-operator-install: kubeflow\/mpi-operator\/manifests\/overlays\/standalone v0.8.2 does not render: exit 1: .*Unable to remove nonexistent key: priorityClassName/,
  ],
  'released-versions': [
    /Application argocd\/instant-cluster-dynamo-platform-install: chart dynamo-platform 1.5.0 has no vendored release/,
    /Application argocd\/instant-cluster-mpi-operator-install: kubeflow\/mpi-operator\/manifests\/overlays\/standalone v0.8.1 has no vendored release/,
    /Job default\/kueue-debug: spec.template.spec.containers\[0\].image is registry.k8s.io\/kueue\/kueue:v0.18.0; the vendored releases ship registry.k8s.io\/kueue\/kueue only as v0.19.2/,
    /Job default\/vllm-bench: spec.template.spec.containers\[0\].image is nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime:1.2.0-post.1; the vendored releases ship nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime only as 1.4.0, 1.4.0-efa/,
  ],
  'dynamo-image-release': [
    /^DynamoGraphDeployment default\/vllm-agg: runs nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime:1.2.0-post.1 \(spec.components\[0\].podTemplate.spec.containers\[0\].image\), but the Dynamo platform is release 1.4.0 \(Application instant-cluster-dynamo-platform-install installs chart dynamo-platform 1.4.0\)/m,
    /runs nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime:1.4.0-post.1 \(spec.components\[1\].*\), .* whose nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime is tagged 1.4.0, 1.4.0-efa: operator and runtime must be one release; use nvcr.io\/nvidia\/ai-dynamo\/vllm-runtime:1.4.0/,
  ],
  'crd-before-cr': [
    /Application argocd\/instant-cluster-network-operator-install: \(wave 0\) applies NodeFeatureRule nvidia-nics-rules \(nfd.k8s-sigs.io\/NodeFeatureRule\)/,
    /CRD comes with Application instant-cluster-gpu-operator-install \(wave 0; chart gpu-operator v26.7.0, crds\/\)/,
    /give it a later sync-wave than 0: the Applications of one wave sync together, so its apply races the CRD \(SkipDryRunOnMissingResource=true skips only the dry run\)/,
  ],
  'applied-size-limit': [
    /^Application argocd\/instant-cluster-kueue-install: chart kueue 0.19.2 applies CustomResourceDefinition workloads.kueue.x-k8s.io \(\d{6} bytes\), over the 262144 bytes/,
    /^Application argocd\/instant-cluster-mpi-operator-install: kubeflow\/mpi-operator\/manifests\/overlays\/standalone v0.8.2 applies CustomResourceDefinition mpijobs.kubeflow.org \(\d{6} bytes\)/m,
    /last-applied-configuration annotation: the sync fails .* add ServerSideApply=true to the Application's syncOptions/,
  ],
  'storage-before-claims': [
    /Application argocd\/instant-cluster-monitoring-stack-install: \(wave 0\) claims a volume of the default StorageClass local-path \(VMSingle monitoring\/vm-victoria-metrics-k8s-stack spec.storage\)/,
    /Application instant-cluster-storage brings in wave 1/,
  ],
  'tenant-guardrails-admit': [/Pod research\/probe/, /refused by ValidatingAdmissionPolicy tenant-pod-guardrails: tenant pods may not use the host network/,
    /Deployment research\/web: a pod of spec.template.spec, created by ReplicaSet controller/],
  'placement': [
    /Deployment local-path-storage\/local-path-provisioner: spec.template.spec fits no node.*service node: taint node-role.kubernetes.io\/control-plane:NoSchedule not tolerated/,
    /Deployment default\/a100-inference: .*nodeSelector nvidia.com\/gpu.product=NVIDIA-A100-SXM4-80GB \(node: nvidia.com\/gpu.product=NVIDIA-H100-80GB-HBM3\)/,
    /Job default\/blackwell-only: .*required node affinity \(nvidia.com\/gpu.family In \[blackwell\]\)/,
    /Pod default\/nine-gpus: spec fits no node.*GPU worker: requests 9 nvidia.com\/gpu, allocatable 8/,
    /DaemonSet default\/gpu-agent: .*must run on every GPU worker but not on the GPU worker with MIG enabled: nodeSelector nvidia.com\/gpu.product=NVIDIA-H100-80GB-HBM3 \(node: nvidia.com\/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-/,
    /ResourceFlavor nvidia-h100-80gb-hbm3: its nodeLabels .*select no GPU worker with MIG enabled/,
    /ConfigMap local-path-storage\/local-path-config: data\["helperPod.yaml"\] \(helper pod of local-path, pinned to the volume's node\) must run wherever a volume lands but not on the service node: nodeSelector nvidia.com\/gpu.present=true/,
  ],
  'namespace-set': [/ConfigMap settings/, /namespace is unset/, /ClusterQueue research\/research/, /cluster-scoped/],
  'nodeport-unique': [
    /Service kubernetes-dashboard\/kubernetes-dashboard-nodeport: spec.ports\[0\].nodePort 32443 is already allocated to Service kubernetes-dashboard\/kubernetes-dashboard-kong-proxy \(pre-installed Dashboard\)/,
    /Service default\/api: spec.ports\[0\].nodePort 30080 is also claimed by Service default\/web/,
  ],
  'adopted-no-cascade-delete': [
    /StorageClass local-path: is adopted .* lacks Delete=false \(deleting Application instant-cluster-storage, which carries the resources finalizer/,
    /StorageClass shared-path: .* lacks Prune=false .* and Delete=false/,
  ],
  'kept-queue-flavors': [
    /^ResourceFlavor h100: is named by ClusterQueue default, and ClusterQueue default is spared by its Application's cascading delete \(Delete=false\); deleting Application instant-cluster-kueue deletes this one/m,
    /^Topology default: is named by ResourceFlavor h100 \(spec.topologyName\)/m, /finalizer kueue.x-k8s.io\/resource-in-use/,
  ],
  'render-deterministic': [
    /^Application argocd\/instant-cluster-monitoring-stack-install: chart victoria-metrics-k8s-stack 0.54.0 renders differently each time with the Application's values/,
    /Secret monitoring\/vm-grafana data.admin-password/, /Deployment monitoring\/vm-grafana spec.template.metadata.annotations\["checksum\/secret"\]/,
    /OutOfSync on every refresh/,
  ],
  'wave-health': [
    /^Application argocd\/instant-cluster-kueue: \(wave 1\) applies ClusterQueue research, and wave 2 waits for it to be Healthy, but Argo CD has no health check for kueue.x-k8s.io\/ClusterQueue \(its status reports readiness\)/m,
    /applies AdmissionCheck capacity, .* no health check for kueue.x-k8s.io\/AdmissionCheck/,
    /Add resource.customizations.health.kueue.x-k8s.io_ClusterQueue to ConfigMap argocd\/argocd-cm \(argocd\/\)/,
  ],
  'application-destination': [
    /^Application argocd\/instant-cluster: applies the gitops folder's AppProject and Applications to https:\/\/10.0.0.1:6443, namespace argocd, but they belong to the Argo CD that runs them: its own API server \(https:\/\/kubernetes.default.svc\), namespace argocd$/m,
    /^Application argocd\/instant-cluster-kueue: deploys to https:\/\/10.0.0.2:6443, but gitops.destinationServer is https:\/\/kubernetes.default.svc: its objects would land in another cluster$/m,
  ],
  'image-mirror': [/^Job default\/nccl-node-check: pulls busybox:1.37.0 \(docker.io -> harbor.lab\/dockerhub\) from the registry, not its mirror/],
  'argocd-install-kept': [
    /^Application argocd\/instant-cluster-argocd: installs Argo CD, and Namespace argocd lacks Prune=false and Delete=false/m,
    /CustomResourceDefinition applications.argoproj.io lacks Prune=false and Delete=false .* is kept only because Argo CD sets no tracking annotation on a CRD: one that carries it .* is pruned, and with it every object of its kind/,
  ],
  'self-tracking-application': [
    /^Application argocd\/instant-cluster: applies itself in wave 0 of its own sync, which waits for that wave to be Healthy before wave 1/,
    /; the toolkit's Application health check \(what the argocd-cm of the Argo CD that syncs this cluster carries\) reads status.operationState/, /never completes/,
  ],
  'data-prune-confirm': [
    /Namespace research: holds data but its argocd.argoproj.io\/sync-options annotation lacks Prune=confirm and Delete=confirm \(or false\)/,
    /PersistentVolumeClaim research\/datasets: holds data but .* lacks Delete=confirm \(or false\): Argo CD would delete it/,
  ],
};

const needsSchemas = new Set(['namespace-set', 'wave-health']);
/**
 * Rules that must fire on another rule's failing fixture too. A custom resource in the same wave as the Application that
 * installs its CRD is an error for sync-wave-order (the tree's provides annotation) and crd-before-cr (the renders) alike.
 */
const ALSO_FIRES: Record<string, readonly string[]> = { 'sync-wave-order': ['crd-before-cr'] };
/** Rules that read what the engines render from ../shared/upstream-installs (they report nothing without renders). */
const needsUpstream = new Set([...UPSTREAM_RULES, ...CRD_ORDER_RULES, ...APPLIED_SIZE_RULES, ...DETERMINISM_RULES].map((r) => r.id));

/**
 * Every rule over a fixture, the Applications in it rendered with the real engines (when the upstream folder is there).
 * The second, fresh render of each Helm source that render-deterministic compares is made for that rule's own fixtures
 * only: elsewhere it would be one more helm run of a chart per fixture (check of the examples' trees, installs.test.ts,
 * makes it for every chart the toolkit pins).
 */
async function checkFixture(file: string): Promise<Finding[]> {
  const view = fixture(file);
  if (!HAS_UPSTREAM) return checkCluster(view, { scopeOf, schemaOf });
  const reruns = file.startsWith('render-deterministic.');
  const rules = reruns ? RULES : RULES_WITHOUT_RERUNS;
  return (await checkClusterRendered(view, { scopeOf, schemaOf, upstream: DEFAULT_UPSTREAM, reruns, rules })).findings;
}

describe('cross-object rules', () => {
  it('every rule has an id, a passing and a failing fixture, and expectations', () => {
    const ids = RULES.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml'));
    for (const id of ids) {
      expect(files, id).toContain(`${id}.pass.yaml`);
      expect(files, id).toContain(`${id}.fail.yaml`);
    }
    expect(Object.keys(SAYS).sort()).toEqual([...ids].sort());
    expect(files).toHaveLength(ids.length * 2);
  });

  for (const rule of RULES) {
    describe.skipIf((needsSchemas.has(rule.id) && !HAS_SCHEMAS) || (needsUpstream.has(rule.id) && !HAS_UPSTREAM))(rule.id, () => {
      it('passes its passing fixture (and so does every other rule)', async () => {
        expect(await checkFixture(`${rule.id}.pass.yaml`)).toEqual([]);
      });

      it('reports the failing fixture under its own id only, naming the objects', async () => {
        const all: Finding[] = await checkFixture(`${rule.id}.fail.yaml`);
        // the same mistake seen twice: from the tree (sync-wave-order, which synth runs) and from the renders
        const alsoBy = (ALSO_FIRES[rule.id] ?? []).filter(() => HAS_UPSTREAM);
        for (const other of alsoBy) expect(all.some((f) => f.rule === other), other).toBe(true);
        const findings = all.filter((f) => !alsoBy.includes(f.rule));
        expect(findings.length).toBeGreaterThan(0);
        expect([...new Set(findings.map((f) => f.rule))]).toEqual([rule.id]);
        for (const f of findings) {
          expect(f.severity).toBe(rule.severity);
          expect(f.cluster).toBe(model.name);
          expect(f.objects.length).toBeGreaterThan(0);
          expect(f.message.startsWith(f.objects[0])).toBe(true);
        }
        const text = findings.map((f) => f.message).join('\n');
        for (const says of SAYS[rule.id]) expect(text).toMatch(says);
      });
    });
  }

  it('checks an unlabelled workload as Kueue\'s LocalQueue defaulting queues it: to "default" where a LocalQueue of that name exists', () => {
    const kueue = fixture('quota-capacity.pass.yaml').folders[0].objects;
    const lq = (name: string, namespace: string, clusterQueue: string) => ({ apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'LocalQueue', metadata: { name, namespace }, spec: { clusterQueue } });
    const fpga = (namespace: string): Manifest => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'debug', namespace },
      spec: { containers: [{ name: 'c', image: 'busybox:1.37.0', resources: { limits: { 'example.com/fpga': '1' } } }] },
    } as Manifest);
    const view = (queues: Manifest[], pod: Manifest): ClusterView => ({ name: model.name, folders: [{ folder: 'kueue', objects: [...kueue, ...queues] }, { folder: 'samples', objects: [pod] }] });
    const coverage = (v: ClusterView) => checkCluster(v).filter((f) => f.rule === 'queue-resource-coverage').map((f) => f.message);
    // "default" namespace, LocalQueue "default": the pod is queued there, and its FPGA is covered by no ClusterQueue
    expect(coverage(view([lq('default', 'default', 'default') as Manifest], fpga('default')))).toEqual([expect.stringMatching(/^Pod default\/debug: spec requests example.com\/fpga, which ClusterQueue default \(behind LocalQueue default\/default\)/)]);
    // a tenant namespace whose LocalQueue is named after the tenant: not queued, so not Kueue's business
    expect(coverage(view([lq('research', 'research', 'research') as Manifest], fpga('research')))).toEqual([]);
  });

  it('without a model, MPIJob fit falls back to the quota of the job\'s cohort', () => {
    const view = fixture('mpijob-fit.fail.yaml');
    const job = view.folders[0].objects[0] as Manifest & { metadata: { labels?: Record<string, string> } };
    const queued = { ...job, metadata: { ...job.metadata, labels: { 'kueue.x-k8s.io/queue-name': 'default' } } };
    const kueue = fixture('quota-capacity.pass.yaml').folders[0].objects;
    const lq = { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'LocalQueue', metadata: { name: 'default', namespace: 'default' }, spec: { clusterQueue: 'default' } };
    const noModel: ClusterView = { name: 'no-model', folders: [{ folder: 'samples', objects: [queued] }, { folder: 'kueue', objects: [...kueue, lq] }] };
    const fit = checkCluster(noModel).filter((f) => f.rule === 'mpijob-fit');
    expect(fit.map((f) => f.message)).toEqual([expect.stringMatching(/24 nvidia.com\/gpu, more than the 16 GPUs of cohort gpu-cohort/)]);
  });

  it('applied-size-limit: a folder\'s oversized object, unless the object itself (or its Application) skips the last-applied annotation', async () => {
    const big = (name: string, syncOptions?: string): Manifest => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'monitoring', ...(syncOptions ? { annotations: { 'argocd.argoproj.io/sync-options': syncOptions } } : {}) },
      data: { 'dashboard.json': 'x'.repeat(270_000) },
    } as Manifest);
    const view = (objects: Manifest[], appOptions: string[] = []): ClusterView => ({
      name: model.name,
      model,
      folders: [
        {
          folder: 'gitops',
          objects: [{
            apiVersion: 'argoproj.io/v1alpha1',
            kind: 'Application',
            metadata: { name: 'instant-cluster-dashboards', namespace: 'argocd' },
            spec: {
              project: 'instant-cluster',
              source: { repoURL: model.description.gitops.repoURL, targetRevision: 'main', path: 'dist/instant-cluster/dashboards' },
              destination: { server: 'https://kubernetes.default.svc', namespace: 'monitoring' },
              syncPolicy: { syncOptions: appOptions },
            },
          } as Manifest],
        },
        { folder: 'dashboards', objects },
      ],
    });
    const found = async (v: ClusterView) => (await checkClusterRendered(v, { rules: APPLIED_SIZE_RULES })).findings.map((f) => f.message);
    expect(await found(view([{ ...big('small'), data: { 'dashboard.json': '{}' } } as Manifest]))).toEqual([]);
    expect(await found(view([big('node-exporter-full'), big('replaced', 'Replace=true')]))).toEqual([
      expect.stringMatching(/^Application argocd\/instant-cluster-dashboards: folder dist\/instant-cluster\/dashboards applies ConfigMap monitoring\/node-exporter-full \(270\d{3} bytes\), over the 262144 bytes/),
    ]);
    expect(await found(view([big('node-exporter-full', 'ServerSideApply=true')]))).toEqual([]);
    expect(await found(view([big('node-exporter-full')], ['ServerSideApply=true']))).toEqual([]);
    // the object's own option wins over its Application's
    expect(await found(view([big('node-exporter-full', 'ServerSideApply=false')], ['ServerSideApply=true']))).toHaveLength(1);
  });
});
