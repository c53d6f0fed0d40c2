import { ClusterState } from './state';
import { InputError } from '../errors';
import { NAMESPACES, SERVICE_MONITOR_API } from '../model/names';
import { apiGroup, Manifest } from '../render/manifest';

/** A list call: an API group/version and its resource (plural), cluster-wide (all namespaces for namespaced kinds). */
export interface ListRead {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /** Only in this namespace. */
  readonly namespace?: string;
}

/**
 * The built-in kinds preflight reads or the toolkit renders, with their resources. Custom kinds get
 * theirs from the cluster's CRDs.
 */
export const BUILT_IN_RESOURCES: readonly Omit<ListRead, 'namespace'>[] = [
  { group: '', version: 'v1', kind: 'Node', plural: 'nodes', namespaced: false },
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
  { group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true },
  { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
  { group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true },
  { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', namespaced: false },
  { group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass', plural: 'storageclasses', namespaced: false },
  { group: 'scheduling.k8s.io', version: 'v1', kind: 'PriorityClass', plural: 'priorityclasses', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', plural: 'roles', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', plural: 'rolebindings', namespaced: true },
  { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingAdmissionPolicy', plural: 'validatingadmissionpolicies', namespaced: false },
  { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingAdmissionPolicyBinding', plural: 'validatingadmissionpolicybindings', namespaced: false },
  { group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true },
  { group: 'apps', version: 'v1', kind: 'DaemonSet', plural: 'daemonsets', namespaced: true },
  { group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true },
  { group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true },
];

/**
 * Lists every rule needs, besides the rendered kinds: nodes, CRDs, StorageClasses, PriorityClasses, Services, and the
 * Deployments (the pre-installed operators' releases: their images).
 */
const BASE_KINDS: readonly { group: string; kind: string }[] = [
  { group: '', kind: 'Node' },
  { group: '', kind: 'Namespace' },
  { group: '', kind: 'Service' },
  { group: 'apps', kind: 'Deployment' },
  { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' },
  { group: 'storage.k8s.io', kind: 'StorageClass' },
  { group: 'scheduling.k8s.io', kind: 'PriorityClass' },
];

/** A custom kind and its resource (the plural of its CRD). */
export interface CustomResource {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
}

/** Custom kinds every rule needs (when their CRD exists): the Kueue queues, the operator singletons, Argo CD Applications. */
export const BASE_CUSTOM_KINDS: readonly CustomResource[] = [
  { group: 'kueue.x-k8s.io', kind: 'ClusterQueue', plural: 'clusterqueues' },
  { group: 'kueue.x-k8s.io', kind: 'LocalQueue', plural: 'localqueues' },
  { group: 'kueue.x-k8s.io', kind: 'ResourceFlavor', plural: 'resourceflavors' },
  { group: 'kueue.x-k8s.io', kind: 'WorkloadPriorityClass', plural: 'workloadpriorityclasses' },
  { group: 'nvidia.com', kind: 'ClusterPolicy', plural: 'clusterpolicies' },
  { group: 'mellanox.com', kind: 'NicClusterPolicy', plural: 'nicclusterpolicies' },
  { group: 'argoproj.io', kind: 'Application', plural: 'applications' },
];

/**
 * The other custom kinds the toolkit renders (its constructs on the typed CRDs of imports/): preflight reads those a
 * render holds, to see what Argo CD would take over. A kind a render holds that is on neither list is not read.
 */
export const RENDERED_CUSTOM_KINDS: readonly CustomResource[] = [
  { group: 'argoproj.io', kind: 'AppProject', plural: 'appprojects' },
  { group: 'argoproj.io', kind: 'ApplicationSet', plural: 'applicationsets' },
  { group: 'kueue.x-k8s.io', kind: 'AdmissionCheck', plural: 'admissionchecks' },
  { group: 'kueue.x-k8s.io', kind: 'MultiKueueCluster', plural: 'multikueueclusters' },
  { group: 'kueue.x-k8s.io', kind: 'MultiKueueConfig', plural: 'multikueueconfigs' },
  { group: 'kueue.x-k8s.io', kind: 'Topology', plural: 'topologies' },
  { group: 'kubeflow.org', kind: 'MPIJob', plural: 'mpijobs' },
  { group: 'kubeflow.org', kind: 'PyTorchJob', plural: 'pytorchjobs' },
  { group: 'nvidia.com', kind: 'DynamoGraphDeployment', plural: 'dynamographdeployments' },
  { group: 'operator.victoriametrics.com', kind: 'VMServiceScrape', plural: 'vmservicescrapes' },
  { group: 'operator.victoriametrics.com', kind: 'VMPodScrape', plural: 'vmpodscrapes' },
  { group: 'operator.victoriametrics.com', kind: 'VMNodeScrape', plural: 'vmnodescrapes' },
  { group: 'operator.victoriametrics.com', kind: 'VMRule', plural: 'vmrules' },
  { group: 'monitoring.coreos.com', kind: 'ServiceMonitor', plural: 'servicemonitors' },
];

/** The ClusterRole of the read-only identity preflight and init need (docs/commands.md gives it). */
export const PREFLIGHT_CLUSTER_ROLE = 'gpu-cluster-manifests-preflight';

/** An RBAC rule, as rbac.authorization.k8s.io/v1 writes it. */
export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

/**
 * The rules of the least-privilege identity of preflight and init: get and list on exactly the kinds they read
 * (BUILT_IN_RESOURCES, the custom kinds above), per API group, sorted; no Secret, no write.
 */
export function preflightRbacRules(): PolicyRule[] {
  const byGroup = new Map<string, Set<string>>();
  for (const r of [...BUILT_IN_RESOURCES, ...BASE_CUSTOM_KINDS, ...RENDERED_CUSTOM_KINDS]) {
    byGroup.set(r.group, (byGroup.get(r.group) ?? new Set()).add(r.plural));
  }
  return [...byGroup].sort(([a], [b]) => a.localeCompare(b)).map(([group, resources]) => ({ apiGroups: [group], resources: [...resources].sort(), verbs: ['get', 'list'] }));
}

/** The Kueue manager configuration lives in a ConfigMap in Kueue's namespace; only that namespace's ConfigMaps are read. */
export const KUEUE_CONFIG_NAMESPACE = NAMESPACES.kueue;

interface CrdFacts {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly served: readonly string[];
  readonly storage?: string;
}

/** Facts of a CustomResourceDefinition object (as read), or undefined when it is malformed. */
export function crdFacts(crd: Manifest): CrdFacts | undefined {
  const spec = crd.spec as { group?: unknown; scope?: unknown; names?: { kind?: unknown; plural?: unknown }; versions?: unknown } | undefined;
  if (!spec || typeof spec.group !== 'string' || typeof spec.names?.kind !== 'string' || typeof spec.names.plural !== 'string') return undefined;
  const versions = Array.isArray(spec.versions) ? spec.versions as { name?: unknown; served?: unknown; storage?: unknown }[] : [];
  return {
    group: spec.group,
    kind: spec.names.kind,
    plural: spec.names.plural,
    namespaced: spec.scope !== 'Cluster',
    served: versions.filter((v) => v.served === true && typeof v.name === 'string').map((v) => v.name as string),
    storage: versions.find((v) => v.storage === true && typeof v.name === 'string')?.name as string | undefined,
  };
}

/**
 * Whether a cluster serves the prometheus-operator ServiceMonitor API (monitoring.serviceMonitorCrd), from its CRDs;
 * undefined when the state holds no CRD at all (they were not read: nothing can be told).
 */
export function servesServiceMonitors(state: ClusterState): boolean | undefined {
  const crds = state.list('apiextensions.k8s.io', 'CustomResourceDefinition');
  if (crds.length === 0) return undefined;
  const { group, kind, version } = SERVICE_MONITOR_API;
  return crds.map(crdFacts).some((c) => c?.group === group && c.kind === kind && c.served.includes(version));
}

/**
 * The list calls of a live read: the base kinds, then every kind the render contains (so that what
 * Argo CD would take over is seen), custom ones through the cluster's CRDs (a kind without a CRD is
 * not read: the missing-API rule reports it). ConfigMaps only from Kueue's namespace and the
 * rendered objects' namespaces; Secrets never.
 */
export function listReads(crds: readonly Manifest[], rendered: readonly Manifest[]): ListRead[] {
  const facts = crds.map(crdFacts).filter((f): f is CrdFacts => f !== undefined);
  const reads = new Map<string, ListRead>();
  const add = (r: ListRead) => reads.set(`${r.group}/${r.kind}/${r.namespace ?? ''}`, r);
  const builtIn = (group: string, kind: string) => BUILT_IN_RESOURCES.find((b) => b.group === group && b.kind === kind);
  for (const k of BASE_KINDS) add(builtIn(k.group, k.kind)!);
  add({ ...builtIn('', 'ConfigMap')!, namespace: KUEUE_CONFIG_NAMESPACE });
  const custom = (group: string, kind: string, version?: string) => {
    const f = facts.find((c) => c.group === group && c.kind === kind);
    if (!f) return;
    const v = version && f.served.includes(version) ? version : f.storage ?? f.served[0];
    if (v) add({ group, kind, version: v, plural: f.plural, namespaced: f.namespaced });
  };
  for (const c of BASE_CUSTOM_KINDS) custom(c.group, c.kind);
  const readable = new Set(RENDERED_CUSTOM_KINDS.map((c) => `${c.group}/${c.kind}`));
  for (const m of rendered) {
    const group = apiGroup(m.apiVersion);
    const b = builtIn(group, m.kind);
    if (b && m.kind === 'ConfigMap') add({ ...b, namespace: m.metadata.namespace });
    else if (b) add(b);
    else if (readable.has(`${group}/${m.kind}`)) custom(group, m.kind, m.apiVersion.slice(m.apiVersion.indexOf('/') + 1));
  }
  return [...reads.values()];
}

/**
 * One segment of a request path, from a string the server or a file gave (a group, a version, a resource's plural, a
 * namespace, a name): percent-encoded, so that a "/", "?" or "#" in it stays in its segment, and refused when it is
 * empty, "." or "..", which a URL climbs (`/namespaces/x/configmaps/..` is `/namespaces/x`) and no object is named.
 */
export function pathSegment(value: string, what: string): string {
  if (value === '' || value === '.' || value === '..') {
    throw new InputError(`${what} ${JSON.stringify(value)} cannot be part of a request path (no API resource or object is named "", "." or ".."): `
      + 'the server or the file gives a name no Kubernetes object has');
  }
  return encodeURIComponent(value);
}

/** The URL path of a list call, each segment encoded (pathSegment: the group, version and plural of a CRD come from the server). */
export function listPath(r: ListRead): string {
  const seg = (value: string, what: string) => pathSegment(value, `the ${what} of ${r.kind}`);
  const base = r.group === '' ? `/api/${seg(r.version, 'version')}` : `/apis/${seg(r.group, 'group')}/${seg(r.version, 'version')}`;
  return r.namespaced && r.namespace ? `${base}/namespaces/${seg(r.namespace, 'namespace')}/${seg(r.plural, 'plural')}` : `${base}/${seg(r.plural, 'plural')}`;
}

/** Items of a list response, with the apiVersion and kind list items omit. */
export function listItems(r: ListRead, body: unknown): Manifest[] {
  const items = (body as { items?: unknown }).items;
  if (!Array.isArray(items)) return [];
  const apiVersion = r.group === '' ? r.version : `${r.group}/${r.version}`;
  return items.filter((i) => i && typeof i === 'object').map((i) => ({ apiVersion, kind: r.kind, ...(i as object) }) as Manifest);
}
