import { NodeObject } from './control-plane';
import { KubeClient, KubeObject } from './kube-client';
import { poll } from './poll';
import { ClusterIndex } from '../check/cluster-index';
import { SimNode, simulatedNodes } from '../check/placement/nodes';
import { clusterPolicyOperands, nicClusterPolicyOperands, OperandDaemonSet } from '../check/placement/operands';
import { gpuOnlyKeys, selectedKeys } from '../check/placement/rule';
import { fitOn, SchedulingSpec } from '../check/placement/scheduling';
import { TRUSTED_REQUESTERS } from '../components/tenants/trusted-requesters';
import { ClusterModel } from '../model/model';
import { LABELS, NAMESPACES, RESOURCES } from '../model/names';
import { apiGroup, Manifest } from '../render/manifest';

/**
 * Placement for real: the nodes of a described cluster registered as Node objects (as the model of
 * src/check/placement/nodes.ts describes them: labels, taints, allocatable), then what the controller manager makes
 * of the applied workloads (ReplicaSets, pods of Deployments, DaemonSets, StatefulSets and Jobs) and where the
 * scheduler binds each pod, against what the description means: the platform (operators, Argo CD, monitoring,
 * storage) on the service node, user workloads on the GPU workers, DaemonSets that select the GPU workers' labels
 * on every GPU worker.
 *
 * No kubelet runs: a pod is bound and never starts, so a StatefulSet (OrderedReady) creates its first pod only, and
 * a Job stays active. What only an operator would create (the GPU and Network Operators' operand DaemonSets, the
 * pods of MPIJobs, PyTorchJobs, VictoriaMetrics and Dynamo resources) does not exist here, and a Job Kueue keeps
 * suspended creates no pod without Kueue: those are listed as waiting, not placed.
 */

/** A Node of the hermetic cluster and the kind of node of the description it stands for. */
export interface HermeticNode {
  readonly kind: SimNode;
  readonly node: NodeObject;
}

/**
 * What the description does not give, as a kubelet would report it: the service node's (and CPU workers') cpu and
 * memory when not described (the model never compares them), ephemeral storage, and the kubelet's default of 110
 * pods per node.
 */
const UNDESCRIBED: Readonly<Record<string, string>> = { 'cpu': '64', 'memory': '256Gi', 'ephemeral-storage': '1Ti', 'pods': '110' };

/** A quantity as the API writes it: integers as they are, fractions of a core in millicores. */
function quantity(n: number): string {
  return Number.isInteger(n) ? String(n) : `${Math.round(n * 1000)}m`;
}

/**
 * The Nodes of a described cluster: one per host name of each kind of node the placement model simulates (the service
 * node, the GPU workers, a GPU worker with MIG enabled under the MIG strategy `single`, the CPU workers), with the
 * model's labels (plus kubernetes.io/hostname), taints and allocatable amounts (the GPUs and the RDMA device of a GPU
 * worker; none on the other nodes).
 */
export function nodesOf(model: ClusterModel): HermeticNode[] {
  return simulatedNodes(model).flatMap((kind) => kind.hostnames.map((hostname): HermeticNode => {
    // the MIG-enabled variant is a node of its own beside the plain GPU worker of the same host name
    const name = kind.migEnabled ? `${hostname}-mig-enabled` : hostname;
    const capacity: Record<string, string> = { ...UNDESCRIBED };
    for (const [resource, amount] of Object.entries(kind.allocatable)) {
      if (amount > 0 || resource === RESOURCES.cpu || resource === RESOURCES.memory) capacity[resource] = quantity(amount);
    }
    return {
      kind,
      node: {
        metadata: { name, labels: { ...kind.labels, [LABELS.hostname]: name } },
        spec: { taints: kind.taints.map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect })) },
        status: { capacity },
      },
    };
  }));
}

/** A DaemonSet that runs the pod spec an operator's operand gets, as the model derives it (operands.ts). */
function operandDaemonSet(namespace: string, o: OperandDaemonSet): KubeObject {
  const labels = { 'app.kubernetes.io/name': o.name };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: o.name, namespace, labels, annotations: { 'hermetic.test/operand-of': o.field } },
    spec: {
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { ...o.spec, containers: [{ name: 'operand', image: 'registry.k8s.io/pause:3.10' }] } },
    },
  };
}

/**
 * The operand DaemonSets the GPU Operator and the Network Operator would create from the rendered ClusterPolicy and
 * NicClusterPolicy, with the scheduling fields the model derives for them (src/check/placement/operands.ts): no
 * operator runs here, so the real DaemonSet controller and scheduler place the model's reading of them.
 */
export function operandDaemonSets(objects: readonly Manifest[]): { readonly object: KubeObject; readonly migCapableOnly: boolean }[] {
  const out: { object: KubeObject; migCapableOnly: boolean }[] = [];
  for (const m of objects) {
    if (m.kind === 'ClusterPolicy' && m.apiVersion.startsWith('nvidia.com/')) {
      for (const o of clusterPolicyOperands(m)) out.push({ object: operandDaemonSet(NAMESPACES.gpuOperator, o), migCapableOnly: o.migCapableOnly });
    }
    if (m.kind === 'NicClusterPolicy' && m.apiVersion.startsWith('mellanox.com/')) {
      for (const o of nicClusterPolicyOperands(m)) out.push({ object: operandDaemonSet(NAMESPACES.networkOperator, o), migCapableOnly: false });
    }
  }
  return out;
}

type Obj = Record<string, any>;

/** The workloads and pods of the cluster, as the server has them. */
export interface ClusterState {
  readonly pods: KubeObject[];
  readonly deployments: KubeObject[];
  readonly replicaSets: KubeObject[];
  readonly daemonSets: KubeObject[];
  readonly statefulSets: KubeObject[];
  readonly jobs: KubeObject[];
  /** What has not settled when the wait ended (empty: everything did). */
  readonly unsettled: string[];
}

const key = (o: { kind: string; metadata: { name: string; namespace?: string } }) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const spec = (o: KubeObject): Obj => (o.spec ?? {}) as Obj;
const status = (o: KubeObject): Obj => (o.status ?? {}) as Obj;
const observed = (o: KubeObject) => (status(o).observedGeneration ?? 0) >= (o.metadata.generation as number ?? 0);

/** The PodScheduled condition of a pod. */
function scheduledCondition(pod: KubeObject): Obj | undefined {
  return ((status(pod).conditions ?? []) as Obj[]).find((c) => c.type === 'PodScheduled');
}

/** What of one state has not settled yet: a controller behind its object, a pod neither bound nor found unschedulable. */
function unsettledIn(s: Omit<ClusterState, 'unsettled'>): string[] {
  const out: string[] = [];
  for (const r of s.replicaSets) if (!observed(r) || (status(r).replicas ?? 0) !== (spec(r).replicas ?? 1)) out.push(`${key(r)}: ${status(r).replicas ?? 0} of ${spec(r).replicas ?? 1} pods created`);
  for (const d of s.deployments) if (!observed(d) || (status(d).replicas ?? 0) < (spec(d).replicas ?? 1)) out.push(`${key(d)}: ${status(d).replicas ?? 0} of ${spec(d).replicas ?? 1} pods created`);
  for (const d of s.daemonSets) {
    if (!observed(d) || status(d).desiredNumberScheduled === undefined || status(d).currentNumberScheduled !== status(d).desiredNumberScheduled) {
      out.push(`${key(d)}: ${status(d).currentNumberScheduled ?? 0} of ${status(d).desiredNumberScheduled ?? '?'} pods created`);
    }
  }
  for (const t of s.statefulSets) {
    // OrderedReady (the default) creates the next pod when the previous one is Ready, which no pod here becomes
    const want = (spec(t).replicas ?? 1) === 0 ? 0 : spec(t).podManagementPolicy === 'Parallel' ? spec(t).replicas ?? 1 : 1;
    if (!observed(t) || (status(t).replicas ?? 0) < want) out.push(`${key(t)}: ${status(t).replicas ?? 0} of ${want} pods created`);
  }
  for (const j of s.jobs) {
    if (spec(j).suspend === true) continue;
    const st = status(j);
    if ((st.active ?? 0) + (st.succeeded ?? 0) + (st.failed ?? 0) === 0 && !((st.conditions ?? []) as Obj[]).some((c) => c.status === 'True')) out.push(`${key(j)}: no pod created`);
  }
  for (const p of s.pods) {
    if (spec(p).nodeName) continue;
    const c = scheduledCondition(p);
    if (c?.status !== 'False') out.push(`${key(p)}: not scheduled yet`);
  }
  return out;
}

async function readState(client: KubeClient): Promise<Omit<ClusterState, 'unsettled'>> {
  // the workloads first, their pods after: a pod a controller counted in its status was created before that status was
  // written, so a list of pods read after the workloads holds it (read together, a pod could be counted yet not listed)
  const [deployments, replicaSets, daemonSets, statefulSets, jobs] = await Promise.all([
    '/apis/apps/v1/deployments', '/apis/apps/v1/replicasets', '/apis/apps/v1/daemonsets', '/apis/apps/v1/statefulsets', '/apis/batch/v1/jobs',
  ].map((p) => client.list(p)));
  const pods = await client.list('/api/v1/pods');
  return { pods, deployments, replicaSets, daemonSets, statefulSets, jobs };
}

/**
 * Waits until the controllers have created the pods of every workload and the scheduler has decided each pod (bound,
 * or PodScheduled False), at most `timeoutMs`; answers the state then, with what had not settled.
 */
export async function settledState(client: KubeClient, timeoutMs = 120_000): Promise<ClusterState> {
  return poll(async () => {
    const state = await readState(client);
    return { ...state, unsettled: unsettledIn(state) };
  }, (state) => state.unsettled.length === 0, timeoutMs);
}

/** Where the pods of a workload belong. */
export type Intent =
  /** The service node: the platform (operators, Argo CD, monitoring, storage, hooks). */
  | 'service-node'
  /** A GPU worker: user workloads (the samples), pods requesting GPUs or the RDMA device. */
  | 'gpu-worker'
  /** Every GPU worker (every MIG-capable one for `migCapableOnly`): a DaemonSet that selects the GPU workers' labels. */
  | 'every-gpu-worker'
  /** A DaemonSet for any node: somewhere at least. */
  | 'some-node';

/** The workload of a pod: its controller, through a ReplicaSet to its Deployment. */
function ownersIn(state: ClusterState): (pod: KubeObject) => KubeObject | undefined {
  const byUid = new Map<string, KubeObject>();
  const workloads = [...state.deployments, ...state.replicaSets, ...state.daemonSets, ...state.statefulSets, ...state.jobs];
  for (const o of workloads) byUid.set(o.metadata.uid as string, o);
  const controllerOf = (o: KubeObject): KubeObject | undefined => {
    const ref = ((o.metadata.ownerReferences ?? []) as Obj[]).find((r) => r.controller === true);
    return ref ? byUid.get(ref.uid as string) : undefined;
  };
  return (pod) => {
    let owner = controllerOf(pod);
    for (let next = owner && controllerOf(owner); next; next = controllerOf(next)) owner = next;
    return owner;
  };
}

const requestsDevices = (podSpec: Obj) => [...(podSpec.containers ?? []), ...(podSpec.initContainers ?? [])].some((c: Obj) => {
  const r = { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
  return Object.keys(r).some((k) => k === RESOURCES.gpu || k.startsWith(RESOURCES.rdmaPrefix));
});

export interface PlacementInput {
  readonly nodes: readonly HermeticNode[];
  readonly state: ClusterState;
  /** `Kind namespace/name` of the user workloads of the tree (the samples folder): their pods belong on GPU workers. */
  readonly userWorkloads: ReadonlySet<string>;
  /** `Kind namespace/name` of the operand DaemonSets that run on MIG-capable GPU workers only. */
  readonly migCapableOnly?: ReadonlySet<string>;
}

/** The intent for a workload (a DaemonSet, or the owner of a pod), from what the description means. */
export function intentOf(workload: KubeObject, input: PlacementInput): Intent {
  const template = (spec(workload).template?.spec ?? spec(workload)) as Obj;
  if (workload.kind === 'DaemonSet') {
    const gpuKeys = gpuOnlyKeys(input.nodes.map((n) => n.kind));
    return selectedKeys(template as SchedulingSpec).some((k) => gpuKeys.has(k)) ? 'every-gpu-worker' : 'some-node';
  }
  if (input.userWorkloads.has(key(workload)) || requestsDevices(template)) return 'gpu-worker';
  return 'service-node';
}

/**
 * What is wrong with the placement of the settled cluster, one line each: a workload whose controller did not
 * create its pods (with the events that say why), a pod the scheduler could not place (PodScheduled's reason and
 * message), a pod bound to the wrong kind of node, a GPU DaemonSet missing from a GPU worker (with the model's reason,
 * when it knows one).
 */
export function placementFindings(input: PlacementInput, events: readonly KubeObject[] = []): string[] {
  const { state, nodes } = input;
  const out: string[] = [];
  const kindOf = new Map(nodes.map((n) => [n.node.metadata.name, n.kind]));
  const ownerOf = ownersIn(state);
  const why = (o: KubeObject) => events.filter((e) => (e.involvedObject as Obj)?.uid === o.metadata.uid && e.type === 'Warning').map((e) => `${e.reason}: ${e.message}`);
  for (const u of state.unsettled) out.push(`not settled within the wait: ${u}`);
  for (const o of [...state.deployments, ...state.replicaSets, ...state.daemonSets, ...state.statefulSets, ...state.jobs]) {
    const w = why(o).filter((m) => m.startsWith('FailedCreate'));
    if (w.length > 0) out.push(`${key(o)}: ${[...new Set(w)].join('; ')}`);
  }
  for (const pod of state.pods) {
    const owner = ownerOf(pod);
    const of = owner ? ` (${key(owner)})` : '';
    const nodeName = spec(pod).nodeName as string | undefined;
    if (!nodeName) {
      const c = scheduledCondition(pod);
      out.push(`${key(pod)}${of} is not bound: PodScheduled ${c?.status ?? 'unknown'} ${c?.reason ?? ''}: ${c?.message ?? ''}`);
      continue;
    }
    const kind = kindOf.get(nodeName);
    const intent = owner ? intentOf(owner, input) : requestsDevices(spec(pod)) ? 'gpu-worker' : 'service-node';
    if (intent === 'service-node' && kind?.role !== 'service') out.push(`${key(pod)}${of} belongs on the service node, but is bound to ${nodeName} (${kind?.name ?? 'no node of the description'})`);
    if ((intent === 'gpu-worker' || intent === 'every-gpu-worker') && kind?.role !== 'gpu') out.push(`${key(pod)}${of} belongs on a GPU worker, but is bound to ${nodeName} (${kind?.name ?? 'no node of the description'})`);
  }
  for (const ds of state.daemonSets) {
    if (intentOf(ds, input) !== 'every-gpu-worker') {
      if ((status(ds).desiredNumberScheduled ?? 0) === 0) out.push(`${key(ds)} runs on no node: it fits none (${nodes.map((n) => `${n.node.metadata.name}: ${fitOn(spec(ds).template?.spec ?? {}, n.kind).reasons.join(', ') || 'the model sees no reason'}`).join('; ')})`);
      continue;
    }
    const migOnly = input.migCapableOnly?.has(key(ds)) ?? false;
    const meant = nodes.filter((n) => n.kind.role === 'gpu' && (!migOnly || n.kind.migEnabled));
    const on = new Set(state.pods.filter((p) => ownerOf(p) === ds).map((p) => spec(p).nodeName as string | undefined));
    const missing = meant.filter((n) => !on.has(n.node.metadata.name));
    if (missing.length === 0) continue;
    const reasons = missing.map((n) => {
      const fit = fitOn(spec(ds).template?.spec ?? {}, n.kind);
      return `${n.node.metadata.name} (${n.kind.name}${fit.reasons.length > 0 ? `; the model says: ${fit.reasons.join(', ')}` : '; the model says it fits'})`;
    });
    out.push(`${key(ds)} must run on every ${migOnly ? 'MIG-capable ' : ''}GPU worker, but runs on ${meant.length - missing.length} of ${meant.length}: not on ${reasons.join(', ')}`);
  }
  return out;
}

/** The Jobs that wait for Kueue (suspended, with the queue label): no pod until Kueue admits them. */
export function waitingForKueue(state: ClusterState): string[] {
  return state.jobs.filter((j) => spec(j).suspend === true).map((j) => `${key(j)}${(j.metadata.labels as Obj | undefined)?.[LABELS.queueName] ? ` (queue ${(j.metadata.labels as Obj)[LABELS.queueName]})` : ''}`);
}

/**
 * Where the scheduler puts the pods of each sample once Kueue admits it, without Kueue or the training operators
 * running: for each sample with pod templates in turn (Kueue runs them one after the other where they do not fit
 * together), one pod per template, owned by the sample and sent as the identity that creates it in a cluster (the Job
 * controller, the MPI Operator, the Training Operator: src/components/tenants/trusted-requesters.ts), then removed. A
 * stand-in for the tests that start a control plane without the twin (apply-as-argocd.test.ts): on a twin the real MPI
 * Operator makes an admitted MPIJob's pods (mpi-operator.ts), and the real Training Operator a PyTorchJob's where the
 * description manages it (training-operator.ts); a pre-installed Training Operator does not run on a twin.
 * Answers, one line each, a pod not bound (PodScheduled's reason and message) or bound to a node that is not a GPU
 * worker; and `placed`, the pods bound. A sample of an operator that list does not know (Dynamo) is `skipped`.
 */
export async function placeSamples(
  client: KubeClient, index: ClusterIndex, samples: readonly Manifest[], nodes: readonly HermeticNode[], timeoutMs = 60_000,
): Promise<{ findings: string[]; placed: string[]; skipped: string[] }> {
  const kindOf = new Map(nodes.map((n) => [n.node.metadata.name, n.kind]));
  const out = { findings: [] as string[], placed: [] as string[], skipped: [] as string[] };
  for (const m of samples) {
    const templates = index.podTemplates(m);
    // the controller manager makes the pods of these itself (and of a Job that runs), in the cluster's state
    if (templates.length === 0 || m.apiVersion.startsWith('apps/')) continue;
    const creator = TRUSTED_REQUESTERS.find((r) => r.createsPodsOf.includes(`${apiGroup(m.apiVersion)}/${m.kind}`));
    if (!creator) {
      out.skipped.push(key(m));
      continue;
    }
    const live = await client.get(await client.pathOf(m as unknown as KubeObject));
    if (!live) throw new Error(`${key(m)}: not on the server`);
    if (m.kind === 'Job' && spec(live).suspend !== true) continue;
    const namespace = live.metadata.namespace!;
    const owner = { apiVersion: m.apiVersion, kind: m.kind, name: m.metadata.name, uid: live.metadata.uid as string, controller: true };
    const as = client.as(creator.username, ['system:masters']);
    const pods = templates.map((t) => {
      const role = t.path.split('.').filter((p) => p !== 'spec' && p !== 'template').pop()?.toLowerCase();
      const name = `${m.metadata.name}-${role ?? 'pod'}-0`;
      return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels: { ...t.labels }, ownerReferences: [owner] }, spec: t.spec } as unknown as KubeObject;
    });
    for (const pod of pods) await as.create(pod);
    const deadline = Date.now() + timeoutMs;
    for (const pod of pods) {
      // bound, or the scheduler's decision that it cannot be
      const now = await poll(async () => client.get(await client.pathOf(pod)), (p) => p !== undefined && (spec(p).nodeName !== undefined || scheduledCondition(p)?.status === 'False'),
        Math.max(0, deadline - Date.now()), 200);
      const nodeName = now && spec(now).nodeName as string | undefined;
      const c = now && scheduledCondition(now);
      if (nodeName) {
        const kind = kindOf.get(nodeName);
        if (kind?.role === 'gpu') out.placed.push(`${key(pod)} on ${nodeName}`);
        else out.findings.push(`${key(pod)} (${key(m)}) belongs on a GPU worker, but is bound to ${nodeName} (${kind?.name ?? 'no node of the description'})`);
      } else {
        out.findings.push(`${key(pod)} (${key(m)}) is not bound: PodScheduled ${c?.status ?? 'unknown'} ${c?.reason ?? ''}: ${c?.message ?? 'not decided in time'}`);
      }
    }
    // no kubelet confirms a bound pod's end: a grace period of 0 removes it now
    for (const pod of pods) await client.request('DELETE', await client.pathOf(pod), { query: { gracePeriodSeconds: '0' } });
  }
  return out;
}
