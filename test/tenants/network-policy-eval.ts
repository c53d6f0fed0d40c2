import { Manifest } from '../../src/render/manifest';

/**
 * A small evaluator of Kubernetes NetworkPolicy (networking.k8s.io/v1) ingress semantics, enough to
 * decide flows between pods: a pod no Ingress policy selects accepts everything; a selected pod
 * accepts a connection when some selecting policy has an ingress rule whose peers and ports match.
 * Peers: podSelector alone (pods of the policy's namespace), namespaceSelector alone (every pod of
 * matching namespaces), both (matching pods of matching namespaces). ipBlock peers never match a pod.
 */

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}
interface Peer { podSelector?: LabelSelector; namespaceSelector?: LabelSelector; ipBlock?: unknown }
interface Port { port?: number | string; protocol?: string; endPort?: number }
interface PolicySpec {
  podSelector: LabelSelector;
  policyTypes?: string[];
  ingress?: { from?: Peer[]; ports?: Port[] }[];
}

export interface Endpoint {
  readonly namespace: string;
  readonly labels?: Readonly<Record<string, string>>;
}
export interface Flow {
  readonly from: Endpoint;
  readonly to: Endpoint;
  readonly port: number;
  readonly protocol?: 'TCP' | 'UDP' | 'SCTP';
}

export function selects(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const ok = e.operator === 'In' ? has && (e.values ?? []).includes(labels[e.key])
      : e.operator === 'NotIn' ? !has || !(e.values ?? []).includes(labels[e.key])
        : e.operator === 'Exists' ? has : !has;
    if (!ok) return false;
  }
  return true;
}

/** Namespace labels as the API server sets them (kubernetes.io/metadata.name) plus any given. */
function namespaceLabels(namespace: string, extra: Readonly<Record<string, Readonly<Record<string, string>>>>): Record<string, string> {
  return { ...(extra[namespace] ?? {}), 'kubernetes.io/metadata.name': namespace };
}

function peerMatches(peer: Peer, policyNamespace: string, from: Endpoint, nsLabels: Record<string, string>): boolean {
  if (peer.ipBlock) return false;
  const podOk = peer.podSelector === undefined || selects(peer.podSelector, from.labels ?? {});
  const nsOk = peer.namespaceSelector === undefined ? from.namespace === policyNamespace : selects(peer.namespaceSelector, nsLabels);
  return podOk && nsOk;
}

function portMatches(ports: Port[] | undefined, port: number, protocol: string): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => (p.protocol ?? 'TCP') === protocol
    && (p.port === undefined || (typeof p.port === 'number' && (p.endPort ? port >= p.port && port <= p.endPort : port === p.port))));
}

/** Whether the rendered policies let `flow` in. `namespaces` gives extra labels of namespaces. */
export function ingressAllowed(
  objects: readonly Manifest[], flow: Flow, namespaces: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
): boolean {
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy' && o.metadata.namespace === flow.to.namespace)
    .map((o) => (o as unknown as { spec: PolicySpec }).spec)
    .filter((s) => (s.policyTypes ?? ['Ingress']).includes('Ingress') && selects(s.podSelector, flow.to.labels ?? {}));
  if (policies.length === 0) return true;
  const nsLabels = namespaceLabels(flow.from.namespace, namespaces);
  return policies.some((s) => (s.ingress ?? []).some((rule) => portMatches(rule.ports, flow.port, flow.protocol ?? 'TCP')
    && (rule.from === undefined || rule.from.length === 0 || rule.from.some((peer) => peerMatches(peer, flow.to.namespace, flow.from, nsLabels)))));
}
