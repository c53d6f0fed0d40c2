import { UNKNOWN_TEXT } from './go-template';
import { apiGroup } from '../render/manifest';

/** Scope of a kind: from the install's own CRDs, the schema store, or the core list. */
export type Scope = 'Namespaced' | 'Cluster';

/** One object an install creates, as far as the static reading can tell. */
export interface FootprintObject {
  readonly apiVersion: string;
  readonly kind: string;
  /** API group ('' for core). */
  readonly group: string;
  /** Rendered name, when it could be evaluated. */
  readonly name?: string;
  /** Namespace of a namespaced object (the release/destination namespace when the template sets none). */
  readonly namespace?: string;
  /** Undefined when neither the install's CRDs nor the built-in lists know the kind (the caller asks the schema store). */
  readonly scope?: Scope;
  /** Template or manifest file it comes from, relative to the release folder. */
  readonly source: string;
}

/** What one managed install creates, with what could not be evaluated. */
export interface Footprint {
  readonly objects: readonly FootprintObject[];
  /** Why parts were over-approximated (unevaluable conditions, unknown scopes), deduplicated. */
  readonly notes: readonly string[];
  /** `fail` calls of the chart that the given values reach: Helm would refuse to render. */
  readonly failures: readonly string[];
}

/** The group of an apiVersion (`v1` -> ''). */
/** Core and well-known kinds that are cluster-scoped (the schema store answers for the rest). */
const CLUSTER_SCOPED = new Set([
  '/Namespace', '/Node', '/PersistentVolume', 'storage.k8s.io/StorageClass', 'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding', 'scheduling.k8s.io/PriorityClass', 'apiextensions.k8s.io/CustomResourceDefinition',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration', 'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy', 'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
  'admissionregistration.k8s.io/MutatingAdmissionPolicy', 'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding',
  'apiregistration.k8s.io/APIService', 'storage.k8s.io/CSIDriver', 'node.k8s.io/RuntimeClass', 'networking.k8s.io/IngressClass',
  'flowcontrol.apiserver.k8s.io/FlowSchema', 'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration', 'resource.k8s.io/DeviceClass',
  'security.openshift.io/SecurityContextConstraints', 'config.openshift.io/ClusterOperator',
  // Node Feature Discovery's CRDs (charts/node-feature-discovery/crds/ is not vendored): NodeFeatureRule and
  // NodeFeatureGroup are cluster-scoped, NodeFeature is namespaced.
  'nfd.k8s-sigs.io/NodeFeatureRule', 'nfd.k8s-sigs.io/NodeFeatureGroup',
  // The GPU Operator's ClusterPolicy (shared/crds/gpu-operator) and NVIDIADriver.
  'nvidia.com/ClusterPolicy', 'nvidia.com/NVIDIADriver', 'mellanox.com/NicClusterPolicy',
]);

const NAMESPACED = new Set(['nfd.k8s-sigs.io/NodeFeature', 'cert-manager.io/Certificate', 'cert-manager.io/Issuer', 'monitoring.coreos.com/ServiceMonitor', 'monitoring.coreos.com/PrometheusRule', 'monitoring.coreos.com/PodMonitor', 'sriovnetwork.openshift.io/SriovOperatorConfig']);

/** Scope resolver: the install's own CRDs first, then the lists above; undefined when unknown. */
export function scopeResolver(ownCrds: ReadonlyMap<string, Scope>): (apiVersion: string, kind: string) => Scope | undefined {
  return (apiVersion, kind) => {
    const gk = `${apiGroup(apiVersion)}/${kind}`;
    const own = ownCrds.get(gk);
    if (own) return own;
    if (CLUSTER_SCOPED.has(gk)) return 'Cluster';
    if (NAMESPACED.has(gk) || apiGroup(apiVersion) === '' || /\.k8s\.io$|^(apps|batch|policy|autoscaling|coordination\.k8s\.io)$/.test(apiGroup(apiVersion))) return 'Namespaced';
    return undefined;
  };
}

function unquote(s: string): string {
  const t = s.replace(/\s+#.*$/, '').trim();
  return /^(['"]).*\1$/.test(t) ? t.slice(1, -1) : t;
}

/** Head of one YAML document found by reading lines: top-level apiVersion/kind, metadata.name/namespace. */
export interface DocumentHead {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
  /** CRD documents: spec.group, spec.names.kind and spec.scope. */
  readonly crd?: { readonly group?: string; readonly kind?: string; readonly scope?: string };
}

/**
 * Splits rendered (possibly not quite valid) YAML into documents and reads each one's head by
 * indentation, so that an unevaluated value elsewhere in the document does not hide its kind.
 */
export function documentHeads(text: string): DocumentHead[] {
  const heads: DocumentHead[] = [];
  for (const doc of text.split(/^---.*$/m)) {
    const head: { apiVersion?: string; kind?: string; name?: string; namespace?: string } = {};
    const crd: { group?: string; kind?: string; scope?: string } = {};
    let section = '';
    let sub = '';
    let seenMetadata = false;
    for (let start = 0; start < doc.length;) {
      let end = doc.indexOf('\n', start);
      if (end < 0) end = doc.length;
      const line = doc.slice(start, end);
      start = end + 1;
      const m = /^( *)([A-Za-z][\w.-]*):(?:\s+(.*))?$/.exec(line);
      if (!m) continue;
      const indent = m[1].length;
      const key = m[2];
      const value = m[3] === undefined ? undefined : unquote(m[3]);
      if (indent === 0) {
        section = key;
        if (key === 'metadata') seenMetadata = true;
        if ((key === 'apiVersion' || key === 'kind') && value !== undefined && head[key] === undefined) head[key] = value;
        // The head is complete: skip the (possibly huge) rest of the document.
        const crdDone = head.kind !== 'CustomResourceDefinition' || (crd.group && crd.kind && crd.scope);
        if (seenMetadata && key !== 'metadata' && head.apiVersion && head.kind && crdDone) break;
        continue;
      }
      if (section === 'metadata' && indent === 2 && (key === 'name' || key === 'namespace') && value !== undefined && head[key] === undefined) head[key] = value;
      if (section === 'spec') {
        if (indent === 2) sub = key;
        if (indent === 2 && key === 'group' && value !== undefined) crd.group ??= value;
        if (indent === 2 && key === 'scope' && value !== undefined) crd.scope ??= value;
        if (indent === 4 && sub === 'names' && key === 'kind' && value !== undefined) crd.kind ??= value;
      }
    }
    if (head.apiVersion === undefined && head.kind === undefined) continue;
    heads.push({ ...head, ...(head.kind === 'CustomResourceDefinition' ? { crd } : {}) });
  }
  return heads;
}

/** True when a read value holds something the evaluator could not compute. */
export function isUnknownText(s: string | undefined): boolean {
  return s !== undefined && s.includes(UNKNOWN_TEXT);
}

/** CRD scopes (`group/Kind` -> scope) of the CRD documents among the heads. */
export function crdScopes(heads: readonly DocumentHead[]): Map<string, Scope> {
  const out = new Map<string, Scope>();
  for (const h of heads) {
    if (h.crd?.group && h.crd.kind && (h.crd.scope === 'Namespaced' || h.crd.scope === 'Cluster')) out.set(`${h.crd.group}/${h.crd.kind}`, h.crd.scope);
  }
  return out;
}

/** Builds footprint objects from document heads: scopes resolved, namespaced objects defaulted to `namespace`. */
export function objectsOf(
  heads: readonly { head: DocumentHead; source: string }[],
  defaultNamespace: string,
  scope: (apiVersion: string, kind: string) => Scope | undefined,
  notes: string[],
): FootprintObject[] {
  const out: FootprintObject[] = [];
  for (const { head, source } of heads) {
    if (!head.apiVersion || !head.kind || isUnknownText(head.apiVersion) || isUnknownText(head.kind)) {
      notes.push(`${source}: a document's apiVersion/kind could not be evaluated (${head.apiVersion ?? '?'} ${head.kind ?? '?'})`);
      continue;
    }
    const s = scope(head.apiVersion, head.kind);
    let namespace: string | undefined;
    if (s !== 'Cluster') {
      namespace = head.namespace ?? defaultNamespace;
      if (isUnknownText(namespace)) {
        notes.push(`${source}: namespace of ${head.kind} ${head.name ?? ''} could not be evaluated; assumed ${defaultNamespace}`);
        namespace = defaultNamespace;
      }
    }
    out.push({
      apiVersion: head.apiVersion,
      kind: head.kind,
      group: apiGroup(head.apiVersion),
      ...(head.name && !isUnknownText(head.name) ? { name: head.name } : {}),
      ...(namespace !== undefined ? { namespace } : {}),
      ...(s ? { scope: s } : {}),
      source,
    });
  }
  return out;
}
