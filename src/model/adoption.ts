import type { ClusterDescription } from './description';
import { ADOPTED_SYNC_OPTIONS, DASHBOARD, HELM, LABELS, NAMESPACES, parseSyncOptions, SINGLETONS, STORAGE_CLASSES } from './names';

/** One rendered object, by API group, kind, name and namespace (none: cluster-scoped). */
export interface ObjectRef {
  /** API group ('' for the core group). */
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

/** An object the Instant Cluster already runs and this toolkit takes over, with the reason. */
export interface AdoptedObject extends ObjectRef {
  readonly why: string;
  /**
   * The operator's Helm release renders it too (the GPU Operator chart's `cluster-policy`): rendered with
   * `helm.sh/resource-policy: keep`, so that the owner's `helm upgrade` that lets go of it (clusterPolicy.deployCR=false)
   * or a `helm uninstall` leaves Argo CD's copy in place.
   */
  readonly helmRelease?: boolean;
}

/** A node port something outside the rendered tree already holds on the cluster. */
export interface AllocatedNodePort {
  readonly port: number;
  /** The Service holding it. */
  readonly service: { readonly name: string; readonly namespace: string };
  /** What it is, for messages (`pre-installed Dashboard`). */
  readonly what: string;
}

/**
 * The objects a description adopts: what the pre-installed add-ons already created, which the rendered
 * objects of the same name replace. An add-on installed here ("managed") creates nothing beforehand, so its
 * objects are not adopted.
 */
export function adoptedObjects(d: ClusterDescription): AdoptedObject[] {
  const out: AdoptedObject[] = [];
  if (d.installs.gpuOperator === 'preinstalled') {
    out.push({ group: 'nvidia.com', kind: 'ClusterPolicy', name: SINGLETONS.clusterPolicy, why: 'the pre-installed GPU Operator\'s Helm release created it', helmRelease: true });
  }
  if (d.network.infiniband && d.installs.networkOperator === 'preinstalled') {
    out.push({ group: 'mellanox.com', kind: 'NicClusterPolicy', name: d.networkOperator.nicClusterPolicyName, why: 'the Instant Cluster image applied it' });
  }
  if (d.installs.localPathProvisioner === 'preinstalled') {
    const why = 'the pre-installed local-path-provisioner came with it';
    out.push({ group: '', kind: 'ConfigMap', name: SINGLETONS.localPathConfig, namespace: NAMESPACES.localPathStorage, why });
    for (const name of Object.values(STORAGE_CLASSES)) out.push({ group: 'storage.k8s.io', kind: 'StorageClass', name, why: 'the Instant Cluster ships it' });
  }
  if (d.installs.kueue === 'preinstalled') {
    const why = 'the pre-installed Kueue comes with the default queue pre-wired';
    out.push({ group: 'kueue.x-k8s.io', kind: 'LocalQueue', name: d.queueing.defaultQueue, namespace: NAMESPACES.default, why });
    out.push({ group: 'kueue.x-k8s.io', kind: 'ClusterQueue', name: d.queueing.defaultClusterQueue, why });
  }
  const dash = d.monitoring.dashboard;
  if (dash.enabled && dash.service === 'adopt') {
    out.push({ group: '', kind: 'Service', name: DASHBOARD.kongProxyService(dash.release), namespace: dash.namespace, why: 'the pre-installed Dashboard chart created it' });
  }
  return out;
}

/** Node ports already taken on the cluster by objects this description does not render. */
export function allocatedNodePorts(d: ClusterDescription): AllocatedNodePort[] {
  const dash = d.monitoring.dashboard;
  // Adopted, the Dashboard's Service is rendered (and so counted among the rendered Services).
  if (dash.enabled && dash.service === 'adopt') return [];
  const port = dash.service === 'preinstalled' ? dash.nodePort : DASHBOARD.preinstalledNodePort;
  return [{ port, service: { name: DASHBOARD.kongProxyService(dash.release), namespace: dash.namespace }, what: 'pre-installed Dashboard' }];
}

/** The identity of a rendered object, as refersTo() compares it. */
interface ObjectIdentity {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}

/** True when `ref` names the object `m`. */
export function refersTo(ref: ObjectRef, m: ObjectIdentity): boolean {
  const group = m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : '';
  return ref.group === group && ref.kind === m.kind && ref.name === m.metadata.name && ref.namespace === m.metadata.namespace;
}

/**
 * The annotations that mark an object adopted: LABELS.adopted and the sync options of ADOPTED_SYNC_OPTIONS,
 * merged into the object's existing sync options (an existing `Prune=`/`Delete=` option is replaced).
 */
export function adoptionAnnotations(existingSyncOptions: string | undefined, adopted?: Pick<AdoptedObject, 'helmRelease'>): Record<string, string> {
  const keys = new Set(ADOPTED_SYNC_OPTIONS.map((o) => o.split('=')[0]));
  const kept = parseSyncOptions(existingSyncOptions).filter((o) => !keys.has(o.split('=')[0]));
  return {
    [LABELS.adopted]: 'true',
    [LABELS.syncOptions]: [...kept, ...ADOPTED_SYNC_OPTIONS].join(','),
    ...(adopted?.helmRelease ? { [HELM.resourcePolicy]: HELM.keep } : {}),
  };
}
