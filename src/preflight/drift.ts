import { descriptionEdit } from './fixes';
import { allocatable, allocatableAmount, gpuProduct, nicClusterPolicyDevices, rdmaResources, readableAllocatable, rolesFor, taintKey, taintsOf } from './nodes';
import { servesServiceMonitors } from './reads';
import { PreflightContext, PreflightFinding, PreflightRule } from './rule';
import { describeObject, summarize } from './util';
import { ClusterDescription, Taint } from '../model/description';
import { NAMESPACES, RESOURCES, SERVICE_MONITOR_API } from '../model/names';
import { parseQuantity } from '../model/quantity';
import { Manifest } from '../render/manifest';
import { VERSIONS } from '../versions';

function distinct<T>(xs: readonly T[]): T[] {
  return [...new Set(xs)];
}

function nodeList(nodes: readonly Manifest[]): string {
  return summarize(nodes.map((n) => n.metadata.name));
}

/** Nodes-based rules need nodes; a snapshot without them reports that once, not as drift. */
function withNodes(ctx: PreflightContext, check: (ctx: PreflightContext) => PreflightFinding[]): PreflightFinding[] {
  return ctx.state.has('', 'Node') ? check(ctx) : [];
}

const nodeCount: PreflightRule = {
  id: 'drift-node-count',
  family: 'drift',
  summary: 'the number of GPU workers differs from nodes.gpuWorkers.count',
  check: (ctx) => withNodes(ctx, ({ model, state }) => {
    const { gpu } = rolesFor(model, state);
    const want = model.capacity.gpuNodes;
    if (gpu.length === want) return [];
    return [{
      rule: 'drift-node-count',
      severity: 'error',
      object: `Nodes ${nodeList(gpu) || '(none)'}`,
      message: `the cluster has ${gpu.length} GPU worker(s) and the description ${want}: quotas, the NCCL test and the DDP sample are sized for ${want}`,
      // no GPU worker at all is a cluster to repair, not a description to change (a GPU node group has at least one node)
      fix: descriptionEdit(model.description, { 'nodes.gpuWorkers.count': gpu.length }) ?? (gpu.length === 0
        ? `no node advertises ${RESOURCES.gpu}: check the GPU Operator's device plugin (kubectl -n ${NAMESPACES.gpuOperator} get pods) and that the state holds every node (kubectl get nodes -o yaml)`
        : `${gpu.length} GPU workers are more than one description takes (nodes.gpuWorkers.count): describe the cluster in parts, one description per node group`),
    }];
  }),
};

const gpusPerNode: PreflightRule = {
  id: 'drift-gpus-per-node',
  family: 'drift',
  summary: 'a GPU worker advertises another nvidia.com/gpu count than nodes.gpuWorkers.gpusPerNode',
  check: (ctx) => withNodes(ctx, ({ model, state }) => {
    const want = model.capacity.gpusPerNode;
    const off = rolesFor(model, state).gpu.filter((n) => allocatableAmount(n, RESOURCES.gpu) !== want);
    if (off.length === 0) return [];
    const counts = distinct(off.map((n) => allocatableAmount(n, RESOURCES.gpu)));
    const repair = `repair the nodes: kubectl describe node ${off[0].metadata.name}`;
    const edit = descriptionEdit(model.description, { 'nodes.gpuWorkers.gpusPerNode': Math.min(...counts, want) });
    return [{
      rule: 'drift-gpus-per-node',
      severity: 'error',
      object: `Nodes ${nodeList(off)}`,
      message: `allocatable ${RESOURCES.gpu} is ${summarize(counts.map(String))} and the description says ${want} per node`,
      fix: edit ? `${edit} (or ${repair})` : repair,
    }];
  }),
};

const product: PreflightRule = {
  id: 'drift-gpu-product',
  family: 'drift',
  summary: 'the GPU workers\' nvidia.com/gpu.product label differs from nodes.gpuWorkers.gpuProduct (the flavor and every GPU pod select it)',
  check: (ctx) => withNodes(ctx, ({ model, state }) => {
    const want = model.description.nodes.gpuWorkers.gpuProduct;
    const off = rolesFor(model, state).gpu.filter((n) => gpuProduct(n) !== want);
    if (off.length === 0) return [];
    const seen = distinct(off.map((n) => gpuProduct(n) ?? '(no label)'));
    const edit = seen.length === 1 && seen[0] !== '(no label)' ? descriptionEdit(model.description, { 'nodes.gpuWorkers.gpuProduct': seen[0] }) : undefined;
    return [{
      rule: 'drift-gpu-product',
      severity: 'error',
      object: `Nodes ${nodeList(off)}`,
      message: `nvidia.com/gpu.product is ${summarize(seen)} and the description says ${want}: GPU pods would select no node`,
      fix: edit ?? `check GPU Feature Discovery on these nodes (kubectl -n ${NAMESPACES.gpuOperator} get pods)`,
    }];
  }),
};

function allocatableFinding(ctx: PreflightContext, resource: 'cpu' | 'memory'): PreflightFinding[] {
  const { model, state } = ctx;
  const described = model.description.nodes.gpuWorkers[resource];
  const want = parseQuantity(described);
  const gpu = rolesFor(model, state).gpu;
  if (gpu.length === 0) return [];
  const smallest = gpu.reduce((a, b) => (allocatableAmount(b, resource) < allocatableAmount(a, resource) ? b : a));
  const have = allocatableAmount(smallest, resource);
  // the description may round the node's amount down to a readable quantity (1843Gi for 1932735284Ki)
  const readable = readableAllocatable(resource, have);
  if (want <= have && want >= parseQuantity(readable)) return [];
  const over = want > have;
  return [{
    rule: 'drift-allocatable',
    severity: over ? 'error' : 'warning',
    object: describeObject(smallest),
    message: `allocatable ${resource} is ${allocatable(smallest, resource)} and the description says ${String(described)} per GPU worker`
      + (over ? ': quotas promise more than the nodes have, so admitted jobs would not schedule' : ': the quotas leave part of the nodes unused'),
    fix: descriptionEdit(model.description, { [`nodes.gpuWorkers.${resource}`]: readable }) ?? `check the allocatable ${resource} of the node: kubectl describe node ${smallest.metadata.name}`,
  }];
}

const allocatableDrift: PreflightRule = {
  id: 'drift-allocatable',
  family: 'drift',
  summary: 'allocatable CPU or memory of the GPU workers differs from nodes.gpuWorkers.cpu / memory',
  check: (ctx) => withNodes(ctx, (c) => [...allocatableFinding(c, 'cpu'), ...allocatableFinding(c, 'memory')]),
};

function taintDrift(
  description: ClusterDescription, nodes: readonly Manifest[], described: readonly Taint[], field: string, ignored: (t: Taint) => boolean,
): PreflightFinding[] {
  if (nodes.length === 0) return [];
  const want = new Set(described.map(taintKey));
  const out: PreflightFinding[] = [];
  const extra = new Map<string, Manifest[]>();
  for (const n of nodes) {
    for (const t of taintsOf(n)) if (!want.has(taintKey(t)) && !ignored(t)) extra.set(taintKey(t), [...(extra.get(taintKey(t)) ?? []), n]);
  }
  const common = nodes.map((n) => taintsOf(n).filter((t) => !ignored(t)));
  const suggested = common[0].filter((t) => common.every((ts) => ts.some((u) => taintKey(u) === taintKey(t))));
  const edit = descriptionEdit(description, { [field]: suggested });
  for (const [key, ns] of extra) {
    out.push({
      rule: 'drift-taints',
      severity: 'error',
      object: `Nodes ${nodeList(ns)}`,
      message: `carry the taint ${key} that ${field} does not list: the rendered pods for these nodes do not tolerate it`,
      fix: edit ?? `remove the taint: kubectl taint nodes ${ns[0].metadata.name} ${key}-`,
    });
  }
  const missing = described.filter((t) => nodes.every((n) => !taintsOf(n).some((u) => taintKey(u) === taintKey(t))));
  if (missing.length > 0) {
    out.push({
      rule: 'drift-taints',
      severity: 'warning',
      object: `Nodes ${nodeList(nodes)}`,
      message: `${field} lists ${summarize(missing.map(taintKey))}, which no such node carries`,
      fix: edit ?? `remove ${summarize(missing.map(taintKey))} from ${field} in the description`,
    });
  }
  return out;
}

const taints: PreflightRule = {
  id: 'drift-taints',
  family: 'drift',
  summary: 'the service node\'s or GPU workers\' taints differ from nodes.service.taints / nodes.gpuWorkers.taints',
  check: (ctx) => withNodes(ctx, ({ model, state }) => {
    const roles = rolesFor(model, state);
    const d = model.description.nodes;
    // The GPU Operator may taint GPU nodes with nvidia.com/gpu:NoSchedule; every GPU pod tolerates it.
    const gpuTaint = (t: Taint) => t.key === RESOURCES.gpu && t.effect === 'NoSchedule';
    return [
      ...taintDrift(model.description, roles.service, d.service.taints, 'nodes.service.taints', () => false),
      ...taintDrift(model.description, roles.gpu, d.gpuWorkers.taints, 'nodes.gpuWorkers.taints', gpuTaint),
    ];
  }),
};

/** The fix when what the cluster advertises is no value the description takes. */
const RDMA_PLUGIN = 'check the RDMA shared device plugin\'s configuration (kubectl -n network-operator get nicclusterpolicy -o yaml)';

const rdma: PreflightRule = {
  id: 'drift-rdma',
  family: 'drift',
  summary: 'the RDMA resource name or rdmaHcaMax the GPU workers (or the NicClusterPolicy) advertise differs from network.infiniband.rdmaSharedDevice',
  check: ({ model, state }) => {
    const gpu = rolesFor(model, state).gpu;
    const fromNodes = gpu.map((n) => ({ node: n, rdma: rdmaResources(n) }));
    const fromPolicy = nicClusterPolicyDevices(state);
    const out: PreflightFinding[] = [];
    if (!model.rdma) {
      const advertised = distinct([...fromNodes.flatMap((x) => [...x.rdma.keys()]), ...fromPolicy.map((p) => `${RESOURCES.rdmaPrefix}${p.resourceName}`)]);
      if (advertised.length > 0) {
        out.push({
          rule: 'drift-rdma',
          severity: 'warning',
          object: gpu.length > 0 ? `Nodes ${nodeList(gpu)}` : `NicClusterPolicy ${model.description.networkOperator.nicClusterPolicyName}`,
          message: `the cluster advertises ${summarize(advertised)} but the description has no network.infiniband: jobs will not use InfiniBand`,
          fix: `describe network.infiniband (rdmaSharedDevice.name: ${advertised[0].slice(RESOURCES.rdmaPrefix.length)}); gpu-cluster-manifests init prints it from the cluster`,
        });
      }
      return out;
    }
    const { resourceName, deviceName, hcaMax } = model.rdma;
    const nodesAdvertising = fromNodes.filter((x) => x.rdma.size > 0);
    if (nodesAdvertising.length > 0) {
      const lacking = nodesAdvertising.filter((x) => !x.rdma.has(resourceName));
      if (lacking.length > 0) {
        const names = distinct(lacking.flatMap((x) => [...x.rdma.keys()]));
        out.push({
          rule: 'drift-rdma',
          severity: 'error',
          object: `Nodes ${nodeList(lacking.map((x) => x.node))}`,
          message: `advertise ${summarize(names)} and not ${resourceName}: jobs requesting ${resourceName} would never schedule`,
          fix: descriptionEdit(model.description, { 'network.infiniband.rdmaSharedDevice.name': names[0].slice(RESOURCES.rdmaPrefix.length) }) ?? RDMA_PLUGIN,
        });
      }
      const wrongMax = nodesAdvertising.filter((x) => x.rdma.has(resourceName) && x.rdma.get(resourceName) !== hcaMax);
      if (wrongMax.length > 0) {
        const seen = distinct(wrongMax.map((x) => x.rdma.get(resourceName)!));
        out.push({
          rule: 'drift-rdma',
          severity: 'error',
          object: `Nodes ${nodeList(wrongMax.map((x) => x.node))}`,
          message: `advertise ${summarize(seen.map(String))} units of ${resourceName} and the description says rdmaHcaMax ${hcaMax}: the RDMA quotas would not match the nodes`,
          fix: descriptionEdit(model.description, { 'network.infiniband.rdmaSharedDevice.hcaMax': Math.min(...seen) }) ?? RDMA_PLUGIN,
        });
      }
      return out;
    }
    // No node advertises RDMA (yet): compare with the live NicClusterPolicy's device plugin config.
    const policy = fromPolicy.find((p) => p.resourceName === deviceName) ?? fromPolicy[0];
    if (policy && (policy.resourceName !== deviceName || (policy.rdmaHcaMax !== undefined && policy.rdmaHcaMax !== hcaMax))) {
      out.push({
        rule: 'drift-rdma',
        severity: 'error',
        object: `NicClusterPolicy ${model.description.networkOperator.nicClusterPolicyName}`,
        message: `the RDMA shared device plugin is configured with ${policy.resourceName} (rdmaHcaMax ${policy.rdmaHcaMax ?? 'unset'}) and the description says ${deviceName} (hcaMax ${hcaMax})`,
        fix: descriptionEdit(model.description, {
          'network.infiniband.rdmaSharedDevice.name': policy.resourceName,
          ...(policy.rdmaHcaMax !== undefined ? { 'network.infiniband.rdmaSharedDevice.hcaMax': policy.rdmaHcaMax } : {}),
        }) ?? RDMA_PLUGIN,
      });
    }
    return out;
  },
};

/**
 * monitoring.serviceMonitorCrd against the cluster's CRDs. With the ServiceMonitor API, GPU Operator v26.7.0 creates
 * ServiceMonitors for itself and its node status exporter (the operator's cannot be switched off) and the
 * VictoriaMetrics operator converts them, so the toolkit renders no scrape of its own for them; without it, nothing
 * but the toolkit's scrape collects them.
 */
const serviceMonitorCrd: PreflightRule = {
  id: 'drift-service-monitor-crd',
  family: 'drift',
  summary: `monitoring.serviceMonitorCrd differs from whether the cluster serves ${SERVICE_MONITOR_API.crd} (a second scrape of the GPU Operator, or none)`,
  check: ({ model, state }) => {
    const served = servesServiceMonitors(state);
    const described = model.description.monitoring.serviceMonitorCrd;
    if (served === undefined || served === described) return [];
    const operator = `GPU Operator ${VERSIONS.gpuOperator.version}`;
    return [{
      rule: 'drift-service-monitor-crd',
      severity: 'warning',
      object: `CustomResourceDefinition ${SERVICE_MONITOR_API.crd}`,
      message: served
        ? `the cluster serves ${SERVICE_MONITOR_API.group}/${SERVICE_MONITOR_API.version} ${SERVICE_MONITOR_API.kind} and the description says monitoring.serviceMonitorCrd: false: `
          + `${operator} creates ServiceMonitors for itself and its node status exporter, the VictoriaMetrics operator converts them, `
          + 'and the rendered scrapes of the same targets collect every series a second time'
        : `the description says monitoring.serviceMonitorCrd: true but the cluster has no ${SERVICE_MONITOR_API.crd}: `
          + `${operator} creates no ServiceMonitor, and the toolkit renders no scrape of its own for the operator, so nothing scrapes it`,
      fix: descriptionEdit(model.description, { 'monitoring.serviceMonitorCrd': served })
        ?? `kubectl get crd ${SERVICE_MONITOR_API.crd}, and describe what it shows in monitoring.serviceMonitorCrd`,
    }];
  },
};

export const DRIFT_RULES: readonly PreflightRule[] = [nodeCount, gpusPerNode, product, allocatableDrift, taints, rdma, serviceMonitorCrd];
