import { code, table } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { DYNAMO_FOLDER, dynamoTarget } from '../components/dynamo/chart';
import { gpuPodResources } from '../components/gpu-workload';
import { kueueManagedNamespaces, kueuePodIntegrationRequirements } from '../components/kueue/manager-config';
import {
  skypilotAccelerator, skypilotContext, skypilotTaskNodes, SKYPILOT_FOLDER, SKYPILOT_IDENTITY, SKYPILOT_WORKLOAD_IDENTITY,
} from '../components/skypilot/client-files';
import { NAMESPACES, RESOURCES } from '../model/names';
import { formatBytes, parseQuantity } from '../model/quantity';
import { CLIENT_FILES_FOLDER } from '../render/client-files';
import { Manifest, manifestFileName, RenderedCluster } from '../render/manifest';

/** Resource totals of a set of pods, in integer units. */
interface Totals {
  pods: number;
  gpus: number;
  rdma: number;
  cpu: number;
  memory: number;
}

function quota(t: Totals): string {
  const parts = [`${t.gpus} GPU${t.gpus === 1 ? '' : 's'}`, `${Math.round(t.cpu * 1000) / 1000} CPU`, `${formatBytes(t.memory)} memory`];
  if (t.rdma > 0) parts.push(`${t.rdma} RDMA`);
  return parts.join(', ');
}

function kueueLine(c: RenderedCluster): string {
  if (c.model.description.installs.kueue === 'managed') {
    return `The managed Kueue configuration has the ${code('pod')} integration on, with ${code('manageJobsWithoutQueueName: false')}, `
      + `in the namespaces ${kueueManagedNamespaces(c.model).map(code).join(', ')} only (${code('managedJobsNamespaceSelector')}).`;
  }
  return ['Kueue is pre-installed: its manager configuration (ConfigMap `kueue-manager-config` in `kueue-system`) must have, '
    + 'or the tutorials\' pods run outside the quota or never start:', '', ...kueuePodIntegrationRequirements(c.model).map((l) => `- ${l}`)].join('\n');
}

function skypilotPart(c: RenderedCluster, index: ClusterIndex): string {
  const m = c.model;
  if (!m.description.tutorials.skypilot.enabled) return 'Not rendered (`tutorials.skypilot.enabled: false`).';
  const per = gpuPodResources(m, m.capacity.gpusPerNode, m.rdma !== undefined);
  const rows = m.queueing.queues.map((q) => {
    const nodes = skypilotTaskNodes(m, q);
    const t: Totals = {
      pods: nodes,
      gpus: nodes * m.capacity.gpusPerNode,
      rdma: m.rdma ? nodes : 0,
      cpu: nodes * parseQuantity(per[RESOURCES.cpu]),
      memory: nodes * parseQuantity(per[RESOURCES.memory]),
    };
    const dir = `${CLIENT_FILES_FOLDER}/${SKYPILOT_FOLDER}/${q.namespace}`;
    const borrow = t.gpus > q.quota.gpus ? `; borrows ${t.gpus - q.quota.gpus} GPUs from the cohort` : '';
    return [
      code(q.namespace),
      `${code(q.localQueue)} -> ${code(q.clusterQueue)} (${q.quota.gpus} GPUs nominal)`,
      `[config.yaml](${dir}/config.yaml), [train.yaml](${dir}/train.yaml)`,
      `${nodes} pods x ${code(`${skypilotAccelerator(m)}:${m.capacity.gpusPerNode}`)}, one pod group`,
      `${quota(t)}${borrow}`,
    ];
  });
  const launchers = index.ofKind('ServiceAccount').filter((sa) => index.folderOf(sa) === 'skypilot' && sa.metadata.name === SKYPILOT_IDENTITY).length;
  const guarded = index.ofKind('ValidatingAdmissionPolicy', 'admissionregistration.k8s.io').some((p) => index.folderOf(p) === 'skypilot');
  const ns = NAMESPACES.default;
  const files = `${m.description.gitops.path.replace(/\/+$/, '')}/${CLIENT_FILES_FOLDER}/${SKYPILOT_FOLDER}/${ns}`;
  const context = skypilotContext(m);
  return [
    `Multi-node ${code('torchrun')} submitted with SkyPilot: SkyPilot labels its pods with the LocalQueue and forms one Kueue pod group `
      + 'per cluster, so the whole gang is admitted at once or waits. '
      + `In each of the ${launchers} namespaces, skypilot/ holds two identities: ${code(SKYPILOT_IDENTITY)}, the launcher `
      + `(run ${code('sky launch')} with a kubeconfig for it: SkyPilot's documented minimum in the namespace and the read-only `
      + `ClusterRole ${code('skypilot-node-reader')}), and ${code(SKYPILOT_WORKLOAD_IDENTITY)}, which SkyPilot's pods run as `
      + `(${code('remote_identity')}; autodown only: list and delete the cluster's pods and Services).`
      + (guarded
        ? ` Admission policies keep both with SkyPilot: no pod runs as ${code(SKYPILOT_IDENTITY)}, only ${code(SKYPILOT_IDENTITY)} creates pods `
          + `that run as ${code(SKYPILOT_WORKLOAD_IDENTITY)}, and no token Secret names either.`
        : ' Below Kubernetes 1.30 nothing stops a tenant from running a pod as either identity (no ValidatingAdmissionPolicy).'),
    '',
    kueueLine(c),
    '',
    table(['Namespace', 'Queue', 'Files', 'Gang', 'Quota it takes while it runs'], rows),
    '',
    'The files are for SkyPilot v0.10 (they validate against its released schema). The namespace comes from the kubeconfig context '
      + `${code(context)} (${code('kubernetes.allowed_contexts')}); ${code('sky check')} needs ${code('kubectl')}, ${code('socat')} and `
      + `${code('nc')} (GNU netcat) on your machine.`,
    '',
    '```sh',
    `kubectl config set-credentials ${SKYPILOT_IDENTITY}-${ns} --token="$(kubectl create token ${SKYPILOT_IDENTITY} -n ${ns} --duration=24h)"   # an administrator issues the token`,
    `kubectl config set-context ${context} --cluster=<your cluster entry> --user=${SKYPILOT_IDENTITY}-${ns} --namespace=${ns}`,
    `cp ${files}/config.yaml ~/.sky/config.yaml   # or your tenant's folder (and namespace)`,
    'sky check kubernetes',
    `sky launch -c ddp ${files}/train.yaml`,
    `kubectl get workloads -n ${ns}   # one Workload for the pod group: QUOTA RESERVED, then ADMITTED True`,
    'sky down ddp',
    '```',
  ].join('\n');
}

function totalsOf(dgd: Manifest): Totals {
  const t: Totals = { pods: 0, gpus: 0, rdma: 0, cpu: 0, memory: 0 };
  type Container = { resources?: { requests?: Record<string, string> } };
  type Component = { replicas?: number; podTemplate?: { spec?: { containers?: Container[] } } };
  const components = (dgd.spec as { components?: Component[] } | undefined)?.components ?? [];
  for (const comp of components) {
    const replicas = comp.replicas ?? 1;
    t.pods += replicas;
    for (const ct of comp.podTemplate?.spec?.containers ?? []) {
      for (const [k, v] of Object.entries(ct.resources?.requests ?? {})) {
        const n = replicas * parseQuantity(v);
        if (k === RESOURCES.gpu) t.gpus += n;
        else if (k === RESOURCES.cpu) t.cpu += n;
        else if (k === RESOURCES.memory) t.memory += n;
        else if (k.startsWith(RESOURCES.rdmaPrefix)) t.rdma += n;
      }
    }
  }
  return t;
}

function dynamoPart(c: RenderedCluster, index: ClusterIndex): string {
  const m = c.model;
  const mode = m.description.installs.dynamo;
  if (!m.description.tutorials.dynamo.enabled) return `Not rendered (${code('tutorials.dynamo.enabled: false')}).`;
  const target = dynamoTarget(m);
  const graphs = index.ofKind('DynamoGraphDeployment', 'nvidia.com');
  const root = m.description.gitops.path.replace(/\/+$/, '');
  const rows = graphs.map((g) => [
    `[${g.metadata.name}](${DYNAMO_FOLDER}/${manifestFileName(g)})`,
    `${code(g.metadata.namespace ?? '')} / ${code(target.queue)}`,
    totalsOf(g).pods,
    quota(totalsOf(g)),
  ]);
  const platform = mode === 'managed'
    ? `Argo CD installs the Dynamo platform chart into ${code(NAMESPACES.dynamo)}; the operator's ${code('crd-apply')} init container applies `
      + 'the CRDs shipped in its image before the operator starts, so the samples can be created once the operator runs.'
    : 'The Dynamo platform (its operator, which applies the CRDs shipped in its image) must already be installed (`installs.dynamo: preinstalled`).';
  const first = graphs[0];
  return [
    `${platform} The samples run in ${target.tenant ? `tenant ${code(target.tenant)}'s` : 'the'} namespace ${code(target.namespace)}; `
      + 'every component pod carries the queue label, so Kueue admits the pods one by one (no gang) within its quota. '
      + 'They are never synced automatically: each holds its GPUs until it is deleted.',
    '',
    table(['Sample', 'Namespace / LocalQueue', 'Pods', 'Quota it takes while it runs'], rows),
    ...(first ? [
      '',
      '```sh',
      `kubectl create -f ${root}/${DYNAMO_FOLDER}/${manifestFileName(first)}`,
      `kubectl get workloads,pods -n ${first.metadata.namespace}`,
      `kubectl port-forward -n ${first.metadata.namespace} svc/${first.metadata.name}-frontend 8000:8000 &`,
      'curl -s localhost:8000/v1/chat/completions -H "Content-Type: application/json" \\',
      `  -d '{"model": "${m.description.tutorials.dynamo.model}", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 64}'`,
      `kubectl delete -f ${root}/${DYNAMO_FOLDER}/${manifestFileName(first)}`,
      '```',
    ] : []),
  ].join('\n');
}

/** The report's tutorials section: what each tutorial renders, its files and the quota it takes. */
export function tutorialsSection(c: RenderedCluster, index: ClusterIndex): string {
  return [
    '### SkyPilot + Kueue: gang-scheduled multi-node training',
    '',
    skypilotPart(c, index),
    '',
    '### NVIDIA Dynamo: inference',
    '',
    dynamoPart(c, index),
  ].join('\n');
}
