import { parse as parseYaml } from 'yaml';
import { SimNode, simulatedNodes } from './nodes';
import { clusterPolicyOperands, nicClusterPolicyOperands } from './operands';
import { Fit, fitOn, FitOptions, SchedulingSpec, TolerationLike } from './scheduling';
import { ContentMemo, exactJsonKey } from '../../cache/content-memo';
import { isJsonObject } from '../../json';
import { RESOURCES } from '../../model/names';
import { apiGroup, describeObject, Manifest } from '../../render/manifest';
import { VERSIONS } from '../../versions';
import { ClusterIndex } from '../cluster-index';
import { queueOf } from '../kueue';
import { Rule, Violation } from '../rule';

type Json = Record<string, unknown>;

/** Where a pod template must land. */
type Reach =
  /** Some node: the scheduler finds one. */
  | 'some-node'
  /** Every GPU worker, MIG-enabled too (GPU operands and agents). */
  | 'every-gpu-worker'
  /** Every MIG-capable GPU worker (the MIG manager). */
  | 'every-mig-worker'
  /** Pinned by nodeName to whichever node a volume lands on: only labels and NoExecute taints apply there. */
  | 'pinned-anywhere'
  /** The service node and no other (Argo CD: add-on management, outside the workers' reserve and quotas). */
  | 'service-node-only';

/** One pod template the cluster will run, and the object that causes it. */
interface Target {
  readonly object: Manifest;
  readonly what: string;
  readonly spec: SchedulingSpec;
  readonly reach: Reach;
  /**
   * Queued through Kueue: the ResourceFlavors Kueue may admit it on. Kueue adds the flavor's nodeLabels to
   * the pods' nodeSelector and its tolerations to theirs, so the pods must fit with one of them.
   */
  readonly flavors?: readonly QueueFlavor[];
}

/** What Kueue adds to the pods it admits on a ResourceFlavor. */
interface QueueFlavor {
  readonly name: string;
  readonly nodeLabels: Readonly<Record<string, string>>;
  readonly tolerations: readonly TolerationLike[];
}

function hostnamesNote(fit: Fit): string {
  return fit.of > 1 ? ` (fits ${fit.fits} of ${fit.of} host names)` : '';
}

/** Label keys only GPU workers carry: a DaemonSet that selects on one of them is meant for the GPU workers. */
export function gpuOnlyKeys(nodes: readonly SimNode[]): Set<string> {
  const others = new Set(nodes.filter((n) => n.role !== 'gpu').flatMap((n) => Object.keys(n.labels)));
  return new Set(nodes.filter((n) => n.role === 'gpu').flatMap((n) => Object.keys(n.labels)).filter((k) => !others.has(k)));
}

/** The node label keys a pod spec selects on: its nodeSelector and its required node affinity. */
export function selectedKeys(spec: SchedulingSpec): string[] {
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return [...Object.keys(spec.nodeSelector ?? {}), ...terms.flatMap((t) => (t.matchExpressions ?? []).map((e) => e.key))];
}

/** JSON text with JSON.parse (a tenth of the YAML parser's time), anything else as YAML. */
function parseJsonOrYaml(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return parseYaml(text);
  }
}

/**
 * The helper pod templates parsed, by their text (every cluster of a fleet holds the same one), kept as the JSON text
 * of what they parse to: each caller gets its own copy. A template that parses to more than JSON holds is parsed each time.
 */
const helperPods = new ContentMemo<string | undefined>(256 * 1024);
const helperPodOf = (template: string): unknown => {
  const json = helperPods.get(template, () => exactJsonKey(parseYaml(template)));
  return json === undefined ? parseYaml(template) : JSON.parse(json);
};

/** The helper pod template in the local-path-provisioner ConfigMap, and how the provisioner places it. */
function localPathHelper(cm: Manifest): Target[] {
  const data = (cm as { data?: Record<string, string> }).data ?? {};
  const template = data['helperPod.yaml'];
  if (template === undefined) return [];
  let pod: unknown;
  let config: unknown;
  try {
    pod = helperPodOf(template);
    config = parseJsonOrYaml(data['config.json'] ?? '{}');
  } catch {
    return [];
  }
  const spec = (isJsonObject(pod) && isJsonObject(pod.spec) ? pod.spec : {}) as SchedulingSpec;
  const classes = isJsonObject(config) && isJsonObject(config.storageClassConfigs) ? Object.entries(config.storageClassConfigs) : [];
  const shared = classes.filter(([, c]) => isJsonObject(c) && typeof c.sharedFileSystemPath === 'string').map(([n]) => n);
  const local = classes.filter(([, c]) => !(isJsonObject(c) && typeof c.sharedFileSystemPath === 'string')).map(([n]) => n);
  const out: Target[] = [];
  // local-path-provisioner v0.0.37 pins a node-local class's helper with nodeName; a shared-filesystem
  // class's helper has no node, so the scheduler places it with the template's tolerations alone.
  if (shared.length > 0) out.push({ object: cm, what: `data["helperPod.yaml"] (helper pod of ${shared.join(', ')}, scheduled)`, spec, reach: 'some-node' });
  if (local.length > 0) out.push({ object: cm, what: `data["helperPod.yaml"] (helper pod of ${local.join(', ')}, pinned to the volume's node)`, spec, reach: 'pinned-anywhere' });
  return out;
}

/** The flavors of the ClusterQueue a queued object is admitted through (undefined: not queued, or unresolved). */
function flavorsOf(index: ClusterIndex, m: Manifest): Target['flavors'] {
  const queue = queueOf(index, m);
  if (!queue) return undefined;
  const groups = ((queue.clusterQueue.spec as Json | undefined)?.resourceGroups ?? []) as { flavors?: { name?: string }[] }[];
  const names = [...new Set(groups.flatMap((g) => (g.flavors ?? []).map((f) => f.name)).filter((n): n is string => typeof n === 'string'))];
  const found = names.map((name) => index.find('ResourceFlavor', name)).filter((f): f is Manifest => f !== undefined);
  const flavors = found.map((f) => {
    const spec = (f.spec ?? {}) as { nodeLabels?: Record<string, string>; tolerations?: TolerationLike[] };
    return { name: f.metadata.name, nodeLabels: spec.nodeLabels ?? {}, tolerations: spec.tolerations ?? [] };
  });
  return flavors.length > 0 ? flavors : undefined;
}

/** Every pod template the cluster will run: rendered workloads, the helper pod, operator operands, upstream Deployments. */
function targetsOf(index: ClusterIndex, nodes: readonly SimNode[]): Target[] {
  const gpuKeys = gpuOnlyKeys(nodes);
  const out: Target[] = [];
  for (const m of index.objects) {
    const vm = vmPodSettings(m);
    if (vm) {
      out.push({ object: m, what: `${vm.path} (the pods its operator creates)`, spec: vm.spec, reach: 'some-node' });
      continue;
    }
    const flavors = flavorsOf(index, m);
    for (const t of index.podTemplates(m)) {
      const spec = t.spec as unknown as SchedulingSpec;
      const forGpus = m.kind === 'DaemonSet' && selectedKeys(spec).some((k) => gpuKeys.has(k));
      out.push({ object: m, what: t.path, spec, reach: forGpus ? 'every-gpu-worker' : 'some-node', flavors });
    }
  }
  for (const cm of index.ofKind('ConfigMap')) out.push(...localPathHelper(cm));
  for (const cp of index.ofKind('ClusterPolicy', 'nvidia.com')) {
    for (const o of clusterPolicyOperands(cp)) {
      out.push({ object: cp, what: `operand DaemonSet ${o.name} (${o.field})`, spec: o.spec, reach: o.migCapableOnly ? 'every-mig-worker' : 'every-gpu-worker' });
    }
  }
  for (const ncp of index.ofKind('NicClusterPolicy', 'mellanox.com')) {
    for (const o of nicClusterPolicyOperands(ncp)) out.push({ object: ncp, what: `operand DaemonSet ${o.name} (${o.field})`, spec: o.spec, reach: 'every-gpu-worker' });
  }
  // What the managed installs run, as helm and kustomize render it: their Application answers for it.
  for (const { object, source } of index.installObjects()) {
    // Argo CD itself (the argocd folder, built on the pinned install) manages the add-ons: the service node's work.
    const argocd = source.release?.type === 'kustomize' && source.release.repoURL === VERSIONS.argocd.repoURL;
    const what = `${source.what}: ${describeObject(object)}`;
    const vm = vmPodSettings(object);
    if (vm) {
      out.push({ object: source.application, what: `${what} ${vm.path} (the pods its operator creates)`, spec: vm.spec, reach: 'some-node' });
      continue;
    }
    for (const t of index.podTemplates(object)) {
      const spec = t.spec as unknown as SchedulingSpec;
      const forGpus = object.kind === 'DaemonSet' && selectedKeys(spec).some((k) => gpuKeys.has(k));
      out.push({ object: source.application, what: `${what} ${t.path}`, spec, reach: forGpus ? 'every-gpu-worker' : argocd ? 'service-node-only' : 'some-node' });
    }
  }
  return out;
}

/** A pod that belongs on the service node: it fits there, and nowhere else. */
function serviceNodeOnly(t: Target, nodes: readonly SimNode[]): Violation[] {
  const fits = nodes.map((node) => ({ node, ...fitOn(t.spec, node) }));
  const service = fits.filter((r) => r.node.role === 'service');
  const elsewhere = fits.filter((r) => r.node.role !== 'service' && r.fits > 0);
  if (service.length > 0 && service.every((r) => r.fits === 0)) {
    return [{ message: `${t.what} must run on the service node but does not fit it: ${service.map((r) => `${r.node.name}: ${r.reasons.join(', ')}`).join('; ')}`, objects: [t.object] }];
  }
  if (elsewhere.length > 0) {
    return [{
      message: `${t.what} must run on the service node only, but the scheduler may also place it on ${elsewhere.map((r) => r.node.name).join(', ')}: `
        + 'select the service node\'s labels (nodeSelector) and tolerate its taints',
      objects: [t.object],
    }];
  }
  return [];
}

/** VictoriaMetrics custom resources whose spec carries the pod settings of what the operator runs for them. */
const VM_POD_KINDS = new Set(['VMSingle', 'VMAgent', 'VMAlert', 'VMAlertmanager', 'VMAuth']);

/**
 * The scheduling fields of a VictoriaMetrics CR (operator.victoriametrics.com): the operator copies
 * `spec.nodeSelector`, `spec.tolerations`, `spec.affinity` and `spec.resources` into the pods it runs.
 */
function vmPodSettings(m: Manifest): { path: string; spec: SchedulingSpec } | undefined {
  if (!VM_POD_KINDS.has(m.kind) || apiGroup(m.apiVersion) !== 'operator.victoriametrics.com') return undefined;
  const spec = (m.spec ?? {}) as Json;
  return {
    path: 'spec',
    spec: {
      nodeSelector: spec.nodeSelector as SchedulingSpec['nodeSelector'],
      tolerations: spec.tolerations as SchedulingSpec['tolerations'],
      affinity: spec.affinity as SchedulingSpec['affinity'],
      containers: [{ resources: spec.resources as never }],
    },
  };
}

function checkTarget(t: Target, nodes: readonly SimNode[]): Violation[] {
  if (t.reach === 'service-node-only') return serviceNodeOnly(t, nodes);
  if (t.reach === 'some-node') {
    // Queued: Kueue admits the pods on one flavor and adds its node labels and tolerations.
    const variants = t.flavors
      ? t.flavors.map((f) => ({
        label: `with flavor ${f.name}: `,
        spec: {
          ...t.spec,
          nodeSelector: { ...t.spec.nodeSelector, ...f.nodeLabels },
          tolerations: [...(t.spec.tolerations ?? []), ...f.tolerations],
        },
      }))
      : [{ label: '', spec: t.spec }];
    const results = variants.map((v) => ({ ...v, nodes: nodes.map((n) => ({ node: n, ...fitOn(v.spec, n) })) }));
    if (results.some((v) => v.nodes.some((r) => r.fits > 0))) return [];
    const why = results.map((v) => `${v.label}${v.nodes.map((r) => `${r.node.name}: ${r.reasons.join(', ')}`).join('; ')}`).join(' | ');
    return [{ message: `${t.what} fits no node of the cluster: ${why}`, objects: [t.object] }];
  }
  const pinned = t.reach === 'pinned-anywhere';
  const must = nodes.filter((n) => (t.reach === 'every-gpu-worker' ? n.role === 'gpu' : t.reach === 'every-mig-worker' ? n.migEnabled : true));
  // A pinned pod skips the scheduler: the kubelet still checks labels, and NoExecute taints evict it.
  const opts: FitOptions = pinned ? { effects: ['NoExecute'], resources: false } : {};
  const spec = pinned ? { ...t.spec, nodeName: undefined } : t.spec;
  const out: Violation[] = [];
  for (const n of must) {
    const r = fitOn(spec, n, opts);
    if (r.fits === r.of) continue;
    const meant = t.reach === 'every-gpu-worker' ? 'must run on every GPU worker' : t.reach === 'every-mig-worker' ? 'must run on every MIG-capable GPU worker' : 'must run wherever a volume lands';
    out.push({ message: `${t.what} ${meant} but not on the ${n.name}${hostnamesNote(r)}: ${r.reasons.join(', ')}`, objects: [t.object] });
  }
  return out;
}

/** ResourceFlavors that hold GPU quota: Kueue puts their nodeLabels on admitted pods, so they must select every GPU worker. */
function gpuFlavorViolations(index: ClusterIndex, nodes: readonly SimNode[]): Violation[] {
  const out: Violation[] = [];
  const gpuNodes = nodes.filter((n) => n.role === 'gpu');
  const seen = new Set<string>();
  for (const cq of index.ofKind('ClusterQueue', 'kueue.x-k8s.io')) {
    type FlavorQuota = { name?: string; resources?: { name?: string; nominalQuota?: string | number }[] };
    const groups = ((cq.spec as Json | undefined)?.resourceGroups ?? []) as { flavors?: FlavorQuota[] }[];
    for (const g of groups) {
      for (const f of g.flavors ?? []) {
        // A flavor listing nvidia.com/gpu with no quota (the cpu-only flavor) holds no GPUs.
        const gpuQuota = (f.resources ?? []).some((r) => r.name === RESOURCES.gpu && Number(r.nominalQuota ?? 0) > 0);
        if (!f.name || seen.has(f.name) || !gpuQuota) continue;
        seen.add(f.name);
        const flavor = index.find('ResourceFlavor', f.name);
        const nodeLabels = ((flavor?.spec as Json | undefined)?.nodeLabels ?? {}) as Record<string, string>;
        if (!flavor) continue;
        for (const n of gpuNodes) {
          const r = fitOn({ nodeSelector: nodeLabels, tolerations: [{ operator: 'Exists' }] }, n, { resources: false });
          if (r.fits > 0) continue;
          out.push({
            message: `its nodeLabels (Kueue adds them to every admitted pod's nodeSelector) select no ${n.name}: ${r.reasons.join(', ')}; GPU quota of this flavor cannot be used there`,
            objects: [flavor, cq],
          });
        }
      }
    }
  }
  return out;
}

export const placement: Rule = {
  id: 'placement',
  severity: 'error',
  summary: 'every pod template (workloads, local-path helper pod, ClusterPolicy/NicClusterPolicy operands, the managed installs\' workloads and VictoriaMetrics CRs as the engines render them) fits a described node: taints, nodeSelector, required node affinity, allocatable; GPU DaemonSets and GPU ResourceFlavors reach every GPU worker, MIG-enabled too; the pods of the cluster\'s own Argo CD fit the service node and no other',
  check(index) {
    // The nodes come from the description: without the model there is nothing to simulate.
    if (!index.model) return [];
    const nodes = simulatedNodes(index.model);
    return [...targetsOf(index, nodes).flatMap((t) => checkTarget(t, nodes)), ...gpuFlavorViolations(index, nodes)];
  },
};

export const PLACEMENT_RULES: readonly Rule[] = [placement];
