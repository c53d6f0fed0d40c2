import { isDeepStrictEqual } from 'node:util';
import { ApiError, KubeClient, KubeObject } from './kube-client';
import { ListWatch, ListWatchClient } from './list-watch';
import { backoffMs, wakeableSleep } from './poll';
import { clusterPolicyOperands, nicClusterPolicyOperands, OperandDaemonSet } from '../check/placement/operands';
import { NAMESPACES, NODE_LABELS } from '../model/names';

/**
 * Stand-ins for the two operators whose pinned releases are not served as Go modules (their module paths have no
 * `/v26` suffix, so their v26 tags are no module versions): the NVIDIA GPU Operator v26.7.0 and the NVIDIA Network
 * Operator v26.4.1. Each does the two things of its operator that decide whether an Argo CD wave becomes Healthy, and
 * nothing else:
 *
 * 1. it creates the operand DaemonSets its custom resource asks for, as the placement model derives them from the
 *    rendered resource (src/check/placement/operands.ts: names, node selectors, tolerations; the container is a pause
 *    image with the GPU Operator's per-operand `resources`), owned by the resource, in the operator's namespace: KWOK
 *    then runs their pods on the GPU workers (a pod that fits no node stays Pending, and its roll hangs);
 * 2. it writes the resource's status as the operator writes it once it has looked at those DaemonSets, from their
 *    status as the DaemonSet controller reports it (so a NotReady node or a rolling update shows as the operator shows
 *    it).
 *
 * Not a KWOK stage: a stage's selector and template read the one object it acts on, and this status depends on other
 * objects (the DaemonSets). The sources each stands in for, read at the pinned tags, are named on each function. What
 * they do not do: everything else of the operators (drivers, the container toolkit, MIG, node labelling, upgrades,
 * the operand configuration and images, the operator's other custom resources).
 *
 * Imports no test framework: `rehearse` (issue 51) runs the same stand-ins.
 */

type Json = Record<string, any>;

/** The field manager of the stand-ins' writes (the operators' own: their controllers' names). */
const MANAGERS = { gpu: 'gpu-operator', network: 'network-operator' } as const;

/** A status condition as metav1.Condition, with meta.SetStatusCondition's rule: the transition time moves with the status only. */
function setCondition(conditions: Json[], c: { type: string; status: string; reason: string; message?: string }, now: string): Json[] {
  const old = conditions.find((x) => x.type === c.type);
  const next = { type: c.type, status: c.status, reason: c.reason, message: c.message ?? '', lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : now };
  return [...conditions.filter((x) => x.type !== c.type), next];
}

/**
 * An operand DaemonSet as the stand-in creates it: the model's pod spec, owned by the custom resource (its controller);
 * its container's requests and limits those of the operand's section (`resources`) when given.
 */
function daemonSet(owner: KubeObject, namespace: string, o: OperandDaemonSet, managedBy: string, resources?: Json, env?: Json[]): KubeObject {
  const labels = { 'app': o.name, 'app.kubernetes.io/managed-by': managedBy };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: o.name,
      namespace,
      labels,
      ownerReferences: [{
        apiVersion: owner.apiVersion,
        kind: owner.kind,
        name: owner.metadata.name,
        uid: owner.metadata.uid as string,
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    spec: {
      selector: { matchLabels: { app: o.name } },
      template: { metadata: { labels: { app: o.name } }, spec: { ...o.spec, containers: [{ name: 'operand', image: 'registry.k8s.io/pause:3.10', ...(resources ? { resources } : {}), ...(env ? { env } : {}) }] } },
    },
  };
}

/**
 * GPU Operator v26.7.0 (NVIDIA/gpu-operator tag v26.7.0, commit 10ee5b3638b89e11e949412aafa5ba99279c3721),
 * controllers/object_controls.go `isDaemonSetReady`: ready when no pod is desired; not ready while any is
 * unavailable; else (RollingUpdate) ready once the DaemonSet's generation is observed and every desired pod is updated
 * and available (`isDaemonSetRollingUpdateComplete`).
 */
function gpuOperandReady(ds: KubeObject | undefined): boolean {
  if (!ds) return false;
  const st = (ds.status ?? {}) as Json;
  if ((st.desiredNumberScheduled ?? 0) === 0) return true;
  if ((st.numberUnavailable ?? 0) !== 0) return false;
  const observed = (st.observedGeneration ?? 0) >= (ds.metadata.generation as number);
  return observed && st.updatedNumberScheduled === st.desiredNumberScheduled && st.numberAvailable === st.desiredNumberScheduled;
}

/**
 * Network Operator v26.4.1 (Mellanox/network-operator tag v26.4.1, commit 85afd6d9c6978eb871a3292b9897f49746cc43cd),
 * pkg/state/state_skel.go `isDaemonSetReady`: ready when at least one pod is desired, and every desired pod is
 * available and updated.
 */
function networkOperandReady(ds: KubeObject | undefined): boolean {
  if (!ds) return false;
  const st = (ds.status ?? {}) as Json;
  const desired = st.desiredNumberScheduled ?? 0;
  return desired !== 0 && desired === st.numberAvailable && st.updatedNumberScheduled === st.numberAvailable;
}

/**
 * The requests and limits an operand's section of a ClusterPolicy gives its containers (`spec.<operand>.resources`), as
 * the GPU Operator's transforms apply them to every container of the operand's DaemonSet (controllers/object_controls.go,
 * TransformDevicePlugin and its siblings: "set resource limits"): what a roll of an operand that cannot be placed hangs on.
 */
function operandResources(policy: KubeObject, field: string): Json | undefined {
  const section = (policy.spec as Json | undefined)?.[field.replace(/^spec\./, '')] as Json | undefined;
  const r = section?.resources as Json | undefined;
  if (!r || (r.requests === undefined && r.limits === undefined)) return undefined;
  return { ...(r.requests !== undefined ? { requests: r.requests } : {}), ...(r.limits !== undefined ? { limits: r.limits } : {}) };
}

/**
 * The environment an operand's section of a ClusterPolicy gives its main container (`spec.<operand>.env`), as the GPU
 * Operator's transforms set it (controllers/object_controls.go, TransformDevicePlugin and its siblings: "update env"):
 * a change of it changes the DaemonSet's pod template, so the operand rolls on every node it runs on (what `rehearse
 * --from` reports as a DaemonSet roll on the GPU workers).
 */
function operandEnv(policy: KubeObject, field: string): Json[] | undefined {
  const section = (policy.spec as Json | undefined)?.[field.replace(/^spec\./, '')] as Json | undefined;
  const env = section?.env;
  if (!Array.isArray(env) || env.length === 0) return undefined;
  return env.map((e: Json) => ({ name: String(e.name), ...(e.value !== undefined ? { value: String(e.value) } : {}) }));
}

/** The oldest object (creation time, then name): the GPU Operator's singleton ClusterPolicy (getSingletonClusterPolicy). */
function oldest(objects: readonly KubeObject[]): KubeObject | undefined {
  const created = (o: KubeObject) => String(o.metadata.creationTimestamp);
  return [...objects].sort((a, b) => created(a).localeCompare(created(b)) || a.metadata.name.localeCompare(b.metadata.name))[0];
}

/** What a stand-in did in one pass: the resources whose status it wrote, with the state written. */
export interface StandInWrite {
  readonly kind: string;
  readonly name: string;
  readonly state: string;
  readonly at: number;
}

/** What the stand-ins need of their client (kube-client.ts's KubeClient; a stub in unit tests). */
export type StandInClient = Pick<KubeClient, 'get' | 'list' | 'apply' | 'call' | 'resource'> & ListWatchClient;

export interface OperatorStandInsOptions {
  /**
   * A pass is made after every change of what the stand-ins read (their resources, the operand DaemonSets, the Nodes'
   * NVIDIA PCI label, the two CRDs), and at the latest this long after the last one.
   * @default 20_000
   */
  readonly resyncMs?: number;
  /**
   * The first wait before a failed pass is made again; doubled on each failure in a row, up to resyncMs.
   * @default 1000
   */
  readonly retryMs?: number;
  /**
   * Watch the API server for changes (`false`: a pass every resyncMs only, the unit tests' stub clients).
   * @default true
   */
  readonly watch?: boolean;
  /**
   * The first wait of a watch before its failed or unserved list is tried again (list-watch.ts ListWatchOptions.retryMs):
   * a custom resource's list waits for its CRD, and the CRD's arrival tries it again at once.
   * @default 500
   */
  readonly watchRetryMs?: number;
  /** Told each failed pass whose message differs from the one before, and each recovery: the twin's log. */
  readonly log?: (line: string) => void;
}

/** The GPU and Network Operator stand-ins on one control plane: a pass after every change they watch, until stopped. */
export class OperatorStandIns {
  /** Every status write, in order. */
  readonly writes: StandInWrite[] = [];
  /** How many passes have completed without an error (each reads every ClusterPolicy and NicClusterPolicy once). */
  passes = 0;
  /** Passes that failed, in all. */
  failedPasses = 0;
  /** The last error of a pass, while passes fail (undefined once one succeeds; a failed pass is made again soon). */
  lastError?: string;
  /** The failures of the passes as they happened (the last 20): what a rehearsal that did not converge prints. */
  readonly errors: { readonly at: number; readonly message: string }[] = [];
  private running = false;
  private loop?: Promise<void>;
  private dirty = false;
  /** Waiting after a failed pass: a change does not cut the wait short. */
  private backingOff = false;
  private wake?: () => void;
  private readonly watches: ListWatch[] = [];
  /** The operand DaemonSets as last applied, by namespace/name: applied again only when they change or are gone. */
  private readonly applied = new Map<string, string>();
  private readonly resyncMs: number;
  private readonly retryMs: number;
  /** Passes failed since the last that succeeded. */
  private failedInRow = 0;

  constructor(private readonly client: StandInClient, private readonly opts: OperatorStandInsOptions = {}) {
    this.resyncMs = opts.resyncMs ?? 20_000;
    this.retryMs = opts.retryMs ?? 1000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    if (this.opts.watch ?? true) this.watchSources();
    this.loop = (async () => {
      let failures = 0;
      while (this.running) {
        this.dirty = false;
        failures = await this.attempt() ? 0 : failures + 1;
        if (!this.running) break;
        if (failures > 0) {
          // a failed pass waits its backoff whatever changes meanwhile (an operand roll sends events all the time)
          this.backingOff = true;
          await wakeableSleep(backoffMs(failures, this.retryMs, this.resyncMs), (w) => { this.wake = w; });
          this.backingOff = false;
        } else if (!this.dirty) {
          await wakeableSleep(this.resyncMs, (w) => { this.wake = w; });
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await Promise.all(this.watches.splice(0).map((w) => w.stop()));
    await this.loop;
  }

  /** Asks for a pass now (after the one running, if one is; after the backoff of a failed one). */
  private trigger(): void {
    this.dirty = true;
    if (!this.backingOff) this.wake?.();
  }

  /**
   * What a pass reads, watched: the two custom resources (served once their CRDs are: the CRDs are watched too, and
   * their arrival opens those watches at once), the operand DaemonSets of the two operators' namespaces, and the Nodes
   * (only their NVIDIA PCI label changes a status: their heartbeats do not make a pass).
   */
  private watchSources(): void {
    const watchOptions = (what: string) => ({
      onError: (message: string) => this.opts.log?.(`operator stand-ins: the watch of ${what}: ${message}`),
      retryMs: this.opts.watchRetryMs,
    });
    const servedPath = (apiVersion: string, kind: string) => async () => {
      const res = await this.client.resource(apiVersion, kind);
      return res ? `/apis/${apiVersion}/${res.plural}` : undefined;
    };
    const policies = [
      new ListWatch(this.client, servedPath('nvidia.com/v1', 'ClusterPolicy'), () => this.trigger(), watchOptions('ClusterPolicies')),
      new ListWatch(this.client, servedPath('mellanox.com/v1alpha1', 'NicClusterPolicy'), () => this.trigger(), watchOptions('NicClusterPolicies')),
    ];
    const crds = new ListWatch(this.client, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', (type, o) => {
      const group = ((o?.spec ?? {}) as Json).group;
      if (type !== 'SYNC' && group !== 'nvidia.com' && group !== 'mellanox.com') return;
      for (const w of policies) w.kick();
      this.trigger();
    }, watchOptions('CRDs'));
    const pci = new Map<string, unknown>();
    const pciOf = (o: KubeObject) => ((o.metadata.labels ?? {}) as Json)[NODE_LABELS.nvidiaPci];
    const nodes: ListWatch = new ListWatch(this.client, '/api/v1/nodes', (type, o) => {
      if (type === 'SYNC' || !o) {
        pci.clear();
        for (const n of nodes.objects.values()) pci.set(n.metadata.name, pciOf(n));
        this.trigger();
        return;
      }
      const label = type === 'DELETED' ? undefined : pciOf(o);
      if (type !== 'MODIFIED' || pci.get(o.metadata.name) !== label) this.trigger();
      if (type === 'DELETED') pci.delete(o.metadata.name);
      else pci.set(o.metadata.name, label);
    }, watchOptions('Nodes'));
    const daemonSets = [NAMESPACES.gpuOperator, NAMESPACES.networkOperator].map((ns) =>
      new ListWatch(this.client, `/apis/apps/v1/namespaces/${encodeURIComponent(ns)}/daemonsets`, () => this.trigger(), watchOptions(`the DaemonSets of ${ns}`)));
    this.watches.push(crds, nodes, ...policies, ...daemonSets);
    for (const w of this.watches) w.start();
  }

  /** One pass, its failure recorded (lastError, errors, the log): whether it succeeded. */
  private async attempt(): Promise<boolean> {
    try {
      await this.pass();
      this.passes++;
      if (this.lastError !== undefined) this.opts.log?.(`operator stand-ins: a pass succeeded again after ${this.failedInRow} failed`);
      this.lastError = undefined;
      this.failedInRow = 0;
      return true;
    } catch (e) {
      const message = (e as Error).message;
      this.failedPasses++;
      this.failedInRow++;
      this.errors.push({ at: Date.now(), message });
      if (this.errors.length > 20) this.errors.shift();
      if (message !== this.lastError) this.opts.log?.(`operator stand-ins: a pass failed: ${message}`);
      this.lastError = message;
      return false;
    }
  }

  /**
   * One reconciliation of every ClusterPolicy and NicClusterPolicy: each operator's, whatever the other's does (a
   * failure of one does not keep the other's status unwritten); throws naming each that failed.
   */
  async pass(): Promise<void> {
    const failures: string[] = [];
    for (const [who, reconcile] of [['GPU Operator', () => this.gpuOperator()], ['Network Operator', () => this.networkOperator()]] as const) {
      try {
        await reconcile();
      } catch (e) {
        failures.push(`the ${who} stand-in: ${(e as Error).message}`);
      }
    }
    if (failures.length > 0) throw new Error(failures.join('; '));
  }

  private async ensureNamespace(name: string, manager: string): Promise<void> {
    if (!await this.client.get(`/api/v1/namespaces/${name}`)) await this.client.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, { fieldManager: manager });
  }

  /** Lists a kind when it is served (its CRD may not be there yet). */
  private async listServed(apiVersion: string, kind: string): Promise<KubeObject[]> {
    const res = await this.client.resource(apiVersion, kind);
    if (!res) return [];
    return this.client.list(`/apis/${apiVersion}/${res.plural}`);
  }

  /**
   * Applies the operand DaemonSets (when new or changed; their namespace first, when missing) and reads them as the
   * DaemonSet controller reports them: one list of the namespace's DaemonSets a pass, not a read of each (the passes'
   * reads were most of the API server's requests while a twin waits: bench/README.md, "The twin's CPU").
   */
  private async operands(
    owner: KubeObject, namespace: string, operands: readonly OperandDaemonSet[], manager: string,
    resources: (o: OperandDaemonSet) => Json | undefined = () => undefined,
    env: (o: OperandDaemonSet) => Json[] | undefined = () => undefined,
  ): Promise<Map<string, KubeObject | undefined>> {
    const listed = new Map((await this.client.list(`/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/daemonsets`)).map((d) => [d.metadata.name, d]));
    let ensured = false;
    const out = new Map<string, KubeObject | undefined>();
    for (const o of operands) {
      const want = daemonSet(owner, namespace, o, manager, resources(o), env(o));
      const key = `${namespace}/${o.name}`;
      let live = listed.get(o.name);
      if (!live || this.applied.get(key) !== JSON.stringify(want)) {
        if (!ensured) await this.ensureNamespace(namespace, manager);
        ensured = true;
        live = await this.client.apply(want, { fieldManager: manager });
        this.applied.set(key, JSON.stringify(want));
      }
      out.set(o.name, live);
    }
    return out;
  }

  /**
   * The GPU Operator's ClusterPolicy reconcile (controllers/clusterpolicy_controller.go `Reconcile`, `updateCRState`;
   * internal/conditions/clusterpolicy.go): only the oldest ClusterPolicy is reconciled (another one's status is left
   * as it is: v26.7.0 sets it "ignored" in memory and never writes it). State "notReady" while an operand is not ready,
   * with conditions Ready False (reason Error) and Error True (reason OperandNotReady, "ClusterPolicy is not ready;
   * states not ready: [...]", naming the operand DaemonSets here where the operator names its states); else "ready",
   * with Ready True, reason NoGPUNodes ("No GPU node found, watching for new nodes to join the cluster.") when no node
   * carries the NVIDIA PCI label Node Feature Discovery sets, else reason Reconciled, and Error False (reason Ready).
   * status.namespace is the operator's namespace.
   */
  private async gpuOperator(): Promise<void> {
    const policy = oldest(await this.listServed('nvidia.com/v1', 'ClusterPolicy'));
    if (!policy) return;
    const namespace = NAMESPACES.gpuOperator;
    const operands = clusterPolicyOperands(policy as never);
    const live = await this.operands(policy, namespace, operands, MANAGERS.gpu,
      (o) => operandResources(policy, o.field), (o) => operandEnv(policy, o.field));
    const notReady = operands.filter((o) => !gpuOperandReady(live.get(o.name))).map((o) => o.name);
    const nodes = await this.client.list('/api/v1/nodes');
    const gpuNodes = nodes.some((n) => ((n.metadata.labels ?? {}) as Json)[NODE_LABELS.nvidiaPci] === 'true');
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const status = (policy.status ?? {}) as Json;
    let conditions = (status.conditions ?? []) as Json[];
    let state: string;
    if (notReady.length > 0) {
      state = 'notReady';
      conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: 'Error' }, now);
      conditions = setCondition(conditions, { type: 'Error', status: 'True', reason: 'OperandNotReady', message: `ClusterPolicy is not ready; states not ready: [${notReady.join(' ')}]` }, now);
    } else {
      state = 'ready';
      conditions = gpuNodes
        ? setCondition(conditions, { type: 'Ready', status: 'True', reason: 'Reconciled', message: 'ClusterPolicy is ready as all resources have been successfully reconciled' }, now)
        : setCondition(conditions, { type: 'Ready', status: 'True', reason: 'NoGPUNodes', message: 'No GPU node found, watching for new nodes to join the cluster.' }, now);
      conditions = setCondition(conditions, { type: 'Error', status: 'False', reason: 'Ready' }, now);
    }
    await this.writeStatus(policy, { ...status, state, namespace, conditions }, MANAGERS.gpu, state);
  }

  /**
   * The Network Operator's NicClusterPolicy reconcile (controllers/nicclusterpolicy_controller.go,
   * nic_policy_helpers.go `updatePolicyCRStatus`, pkg/state/manager.go `SyncState`): a policy not named
   * nic-cluster-policy is "ignore"d with the operator's reason; else each operand's state ("ready", "notReady") in
   * status.appliedStates (named by the operand DaemonSet here, where the operator lists every state it has, the unused
   * ones "ignore"), and state "ready" once none is "notReady".
   */
  private async networkOperator(): Promise<void> {
    for (const policy of await this.listServed('mellanox.com/v1alpha1', 'NicClusterPolicy')) {
      const status = (policy.status ?? {}) as Json;
      if (policy.metadata.name !== 'nic-cluster-policy') {
        const reason = `Unsupported NicClusterPolicy instance ${policy.metadata.name}. Only instance with name nic-cluster-policy is supported`;
        await this.writeStatus(policy, { ...status, state: 'ignore', reason }, MANAGERS.network, 'ignore');
        continue;
      }
      const operands = nicClusterPolicyOperands(policy as never);
      const live = await this.operands(policy, NAMESPACES.networkOperator, operands, MANAGERS.network);
      const appliedStates = operands.map((o) => ({ name: o.name, state: networkOperandReady(live.get(o.name)) ? 'ready' : 'notReady' }));
      const state = appliedStates.every((s) => s.state === 'ready') ? 'ready' : 'notReady';
      await this.writeStatus(policy, { ...status, state, appliedStates }, MANAGERS.network, state);
    }
  }

  /**
   * Writes a status when it differs from the live one (the operators write only a change). Compared as values, not as
   * text: the API server answers a custom resource's fields in its own key order, so a condition written
   * `{type, status, ...}` reads back `{message, reason, ...}` (compared as JSON text, every pass wrote the ClusterPolicy's
   * status again, once a second, for as long as the twin ran).
   */
  private async writeStatus(o: KubeObject, status: Json, manager: string, state: string): Promise<void> {
    const conditions = (s: Json) => (s.conditions as Json[] | undefined)?.map(({ lastTransitionTime: _t, ...c }) => c)
      .sort((a, b) => String(a.type).localeCompare(String(b.type)));
    const comparable = (s: Json) => ({ ...s, conditions: conditions(s) });
    if (isDeepStrictEqual(comparable((o.status ?? {}) as Json), comparable(status))) return;
    const res = await this.client.resource(o.apiVersion, o.kind);
    if (!res) throw new Error(`${o.kind} ${o.metadata.name}: the server no longer serves ${o.apiVersion} ${o.kind}`);
    try {
      // an update of the status as read (its resourceVersion): what the operators do (Status().Update), refused with a
      // conflict when the object changed since; the pass is made again at once, from a fresh read
      await this.client.call('PUT', `/apis/${o.apiVersion}/${res.plural}/${encodeURIComponent(o.metadata.name)}/status`, { body: { ...o, status }, query: { fieldManager: manager } });
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) this.trigger();
      throw new Error(`writing the status of ${o.kind} ${o.metadata.name} (${state}): ${e instanceof ApiError ? `${e.status} ${e.reason}: ` : ''}${(e as Error).message}`);
    }
    this.writes.push({ kind: o.kind, name: o.metadata.name, state, at: Date.now() });
  }
}
