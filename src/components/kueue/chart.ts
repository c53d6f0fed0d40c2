import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { refersTo } from '../../model/adoption';
import { mergeSyncOptions } from '../../model/data-safety';
import { ClusterModel, QueueModel, ResourceAmounts, tolerationsFor } from '../../model/model';
import { coveredResources } from '../../model/multikueue';
import { MultiKueueManagerRole } from '../../model/multikueue-role';
import { LABELS, RESOURCES } from '../../model/names';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { FlavorQuotas, KueueClusterQueue, ResourceQuota } from './cluster-queue';
import { KueueLocalQueue } from './local-queue';
import { PodPriorityClass } from './pod-priority-class';
import { KueueResourceFlavor } from './resource-flavor';
import { KueueTopology } from './topology';
import { KueueWorkloadPriorityClass } from './workload-priority-class';

/** The sync option of what an adopted ClusterQueue needs (spareWhatKeptQueuesUse): its Application's cascading delete spares it. */
const KEPT_WITH_ADOPTED = 'Delete=false';

/** Name of the CPU-only workers' flavor. */
export const CPU_FLAVOR = 'cpu-only';

/** ResourceFlavor name of a GPU product (`NVIDIA-H100-80GB-HBM3` -> `nvidia-h100-80gb-hbm3`). */
export function gpuFlavorName(gpuProduct: string): string {
  const name = gpuProduct.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '').slice(0, 253);
  if (name === '' || name === CPU_FLAVOR) throw new Error(`gpuFlavorName: GPU product "${gpuProduct}" gives no usable flavor name`);
  return name;
}


/**
 * The flavors of a MultiKueue manager's ClusterQueues: one that selects no node (the Workloads run on the workers), and
 * a topology-aware one for queues whose workers all schedule by topology (Kueue admits a topology request only on a
 * topology-aware flavor, and leaves the placement to the worker).
 */
export const DISPATCH_FLAVORS = { plain: 'multikueue', topology: 'multikueue-topology' } as const;
/** The Topology the manager's topology-aware flavor names. */
export const DISPATCH_TOPOLOGY = 'multikueue';

/**
 * Kueue: flavors, the cohort's ClusterQueues (default + one per tenant), the default LocalQueue,
 * priorities and, as an option, the Topology. Tenant namespaces and their LocalQueues are the
 * tenants component's.
 */
export class KueueChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const model = props.model;
    const d = model.description;
    const q = d.queueing;
    const role = model.multiKueue;
    if (role?.role === 'manager') this.dispatchingQueues(model, role);
    else this.localQueues(model);
    this.spareWhatKeptQueuesUse(model);

    const defaultQueue = model.queueing.defaultQueue;
    new KueueLocalQueue(this, 'DefaultLocalQueue', {
      name: defaultQueue.localQueue,
      namespace: defaultQueue.namespace,
      clusterQueue: defaultQueue.clusterQueue,
    });

    // No PriorityClass is globalDefault: it would apply to every pod of the cluster (the pre-installed stack's
    // DaemonSets included, which "high" could then preempt), and the API server refuses a second one. The default
    // priority is what the queued work rendered here names when the description names none.
    for (const p of model.queueing.priorities) {
      const note = p.default
        ? 'Default: the queued work rendered for this cluster (samples, tutorials) carries this class when it names none.'
        : undefined;
      new KueueWorkloadPriorityClass(this, `WorkloadPriorityClass-${p.name}`, { name: p.name, value: p.value, description: note });
      if (q.podPriorityClasses) {
        new PodPriorityClass(this, `PriorityClass-${p.name}`, { name: p.name, value: p.value, description: note });
      }
    }
  }

  /**
   * The ResourceFlavors an adopted ClusterQueue names, and the Topologies of those, say Delete=false as the queue does:
   * Argo CD's cascading delete (the kueue Application deleted, a dropped cluster's take-down) spares the adopted queue,
   * and Kueue keeps a ResourceFlavor while a ClusterQueue names it and a Topology while a flavor names it (their
   * `kueue.x-k8s.io/resource-in-use` finalizer; kueue v0.19.2 pkg/controller/core/resourceflavor_controller.go:106-121,
   * pkg/controller/tas/topology_controller.go:107-126). Deleted, they would stay Terminating for ever, the kueue
   * Application's cascade would never end (it waits for every object it deleted: seen on the twin), and the kept queue
   * would have no flavor. A prune (the flavor left the description) is unchanged: the queue's new flavors come in the
   * same sync.
   */
  private spareWhatKeptQueuesUse(model: ClusterModel): void {
    const adopted = (name: string) => model.adopted.some((a) => refersTo(a, { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'ClusterQueue', metadata: { name } }));
    const all = this.node.findAll();
    const flavors = new Set(all.flatMap((c) => (c instanceof KueueClusterQueue && adopted(c.name) ? c.flavorNames : [])));
    const kept = all.filter((c): c is KueueResourceFlavor => c instanceof KueueResourceFlavor && flavors.has(c.name));
    const topologies = new Set(kept.flatMap((f) => (f.topologyName === undefined ? [] : [f.topologyName])));
    for (const c of [...kept, ...all.filter((t): t is KueueTopology => t instanceof KueueTopology && topologies.has(t.name))]) {
      const o = ApiObject.of(c.node.findChild('Resource'));
      const own = (o.metadata.toJson() as { annotations?: Record<string, string> }).annotations?.[LABELS.syncOptions];
      o.metadata.addAnnotation(LABELS.syncOptions, mergeSyncOptions(own, [KEPT_WITH_ADOPTED]));
    }
  }

  /**
   * A MultiKueue manager's ClusterQueues: each passes the AdmissionCheck of its workers (MultiKueue dispatches the
   * admitted Workload to them) and holds, per resource, what its workers' mirrored queues hold together, on one flavor
   * (as Kueue's own quota automation requires). The manager's own nodes run none of it.
   */
  private dispatchingQueues(model: ClusterModel, role: MultiKueueManagerRole): void {
    const q = model.description.queueing;
    const levels = role.queues.find((x) => x.topologyLevels)?.topologyLevels;
    const topologyAware = (x: MultiKueueManagerRole['queues'][number]) => levels !== undefined && x.topologyLevels?.join('\n') === levels.join('\n');
    if (role.queues.some((x) => !topologyAware(x))) {
      new KueueResourceFlavor(this, 'DispatchFlavor', { name: DISPATCH_FLAVORS.plain, nodeLabels: {}, dispatchOnly: true });
    }
    if (levels) {
      const topology = new KueueTopology(this, 'DispatchTopology', { name: DISPATCH_TOPOLOGY, levels });
      // the workers' GPU flavors select their GPU nodes by this label (model.gpuWorkers)
      new KueueResourceFlavor(this, 'DispatchTopologyFlavor', {
        name: DISPATCH_FLAVORS.topology, nodeLabels: { [LABELS.gpuPresent]: 'true' }, topologyName: topology.name, dispatchOnly: true,
      });
    }
    for (const queue of model.queueing.queues) {
      const dispatch = role.queues.find((x) => x.clusterQueue === queue.clusterQueue);
      if (!dispatch) throw new Error(`ClusterQueue ${queue.clusterQueue}: the MultiKueue manager has no dispatch for it`);
      new KueueClusterQueue(this, `ClusterQueue-${queue.clusterQueue}`, {
        name: queue.clusterQueue,
        cohort: model.queueing.cohort,
        namespace: queue.namespace,
        coveredResources: dispatch.resources.map((r) => r.name),
        flavors: [{
          flavor: topologyAware(dispatch) ? DISPATCH_FLAVORS.topology : DISPATCH_FLAVORS.plain,
          resources: dispatch.resources.map((r) => ({ ...r })),
        }],
        withinClusterQueue: q.preemption.withinClusterQueue,
        reclaimWithinCohort: q.preemption.reclaimWithinCohort,
        fairSharingWeight: q.fairSharing ? queue.fairSharingWeight : undefined,
        admissionCheck: dispatch.group,
        stopPolicy: queue.stopPolicy,
      });
    }
  }

  /** The ClusterQueues of a cluster that runs its own jobs: its GPU (and CPU-only) flavors and the quotas of its description. */
  private localQueues(model: ClusterModel): void {
    const d = model.description;
    const q = d.queueing;
    const covered = coveredResources(model);

    const topology = q.topology && new KueueTopology(this, 'Topology', { name: q.topology.name, levels: q.topology.levels });
    const gpuFlavor = new KueueResourceFlavor(this, 'GpuFlavor', {
      name: gpuFlavorName(d.nodes.gpuWorkers.gpuProduct),
      nodeLabels: model.gpuWorkers.selector,
      // the workers' own taints only (model.gpuWorkers also tolerates an nvidia.com/gpu taint they may not carry)
      tolerations: tolerationsFor(d.nodes.gpuWorkers.taints),
      topologyName: topology?.name,
    });
    const cpuFlavor = model.cpuWorkers && new KueueResourceFlavor(this, 'CpuFlavor', {
      name: CPU_FLAVOR,
      nodeLabels: model.cpuWorkers.selector,
      tolerations: model.cpuWorkers.tolerations,
    });

    const flavorsOf = (queue: QueueModel): FlavorQuotas[] => {
      const gpu: FlavorQuotas = { flavor: gpuFlavor.name, resources: covered.map((r) => gpuFlavorQuota(queue, r)) };
      const cpuOnly = queue.quota.cpuOnly;
      if (!cpuFlavor || !cpuOnly) return [gpu];
      // CPU-only flavor first: CPU jobs land on CPU workers; GPU jobs find no GPU quota there and move on.
      const cpu: FlavorQuotas = {
        flavor: cpuFlavor.name,
        resources: covered.map((r) => ({ name: r, nominalQuota: r === RESOURCES.cpu ? cpuOnly.cpu : r === RESOURCES.memory ? cpuOnly.memory : '0' })),
      };
      return [cpu, gpu];
    };

    for (const queue of model.queueing.queues) {
      new KueueClusterQueue(this, `ClusterQueue-${queue.clusterQueue}`, {
        name: queue.clusterQueue,
        cohort: model.queueing.cohort,
        namespace: queue.namespace,
        coveredResources: covered,
        flavors: flavorsOf(queue),
        withinClusterQueue: q.preemption.withinClusterQueue,
        reclaimWithinCohort: q.preemption.reclaimWithinCohort,
        fairSharingWeight: q.fairSharing ? queue.fairSharingWeight : undefined,
        stopPolicy: queue.stopPolicy,
      });
    }
  }
}

function gpuFlavorQuota(queue: QueueModel, resource: string): ResourceQuota {
  const pick = (a: ResourceAmounts): string => {
    switch (resource) {
      case RESOURCES.cpu: return a.cpu;
      case RESOURCES.memory: return a.memory;
      case RESOURCES.gpu: return String(a.gpus);
      default: return String(a.rdma);
    }
  };
  const { borrowingLimit, lendingLimit } = queue.quota;
  return {
    name: resource,
    nominalQuota: pick(queue.quota),
    borrowingLimit: borrowingLimit && pick(borrowingLimit),
    lendingLimit: lendingLimit && pick(lendingLimit),
  };
}

export const kueue: ComponentDefinition = {
  folder: 'kueue',
  description: 'Kueue ResourceFlavors, the cohort\'s ClusterQueues (default + one per tenant), the default LocalQueue, WorkloadPriorityClasses and PriorityClasses, optional Topology',
  build: (scope: Construct, model: ClusterModel) => new KueueChart(scope, 'kueue', { model }),
};
