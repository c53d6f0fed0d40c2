import { SimNode } from './nodes';
import { tolerates } from '../../model/model';
import { LABELS } from '../../model/names';
import { parseQuantity } from '../../model/quantity';

/** A node selector requirement (`matchExpressions` / `matchFields` entry). */
export interface SelectorRequirement {
  readonly key: string;
  readonly operator: string;
  readonly values?: readonly string[];
}

export interface NodeSelectorTerm {
  readonly matchExpressions?: readonly SelectorRequirement[];
  readonly matchFields?: readonly SelectorRequirement[];
}

export interface TolerationLike {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
}

interface ContainerResources {
  readonly resources?: { readonly requests?: Readonly<Record<string, unknown>>; readonly limits?: Readonly<Record<string, unknown>> };
  readonly restartPolicy?: string;
}

/** What the scheduler reads from a pod spec. */
export interface SchedulingSpec {
  readonly nodeName?: string;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly affinity?: {
    readonly nodeAffinity?: {
      readonly requiredDuringSchedulingIgnoredDuringExecution?: { readonly nodeSelectorTerms?: readonly NodeSelectorTerm[] };
    };
  };
  readonly tolerations?: readonly TolerationLike[];
  readonly containers?: readonly ContainerResources[];
  readonly initContainers?: readonly ContainerResources[];
  readonly overhead?: Readonly<Record<string, unknown>>;
}

function requirementHolds(r: SelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In': return value !== undefined && values.includes(value);
    case 'NotIn': return value === undefined || !values.includes(value);
    case 'Exists': return value !== undefined;
    case 'DoesNotExist': return value === undefined;
    case 'Gt': return value !== undefined && values.length === 1 && Number(value) > Number(values[0]);
    case 'Lt': return value !== undefined && values.length === 1 && Number(value) < Number(values[0]);
    default: return false;
  }
}

function termHolds(term: NodeSelectorTerm, labels: Readonly<Record<string, string>>, hostname: string): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  // An empty term selects nothing (as in the API).
  if (exprs.length === 0 && fields.length === 0) return false;
  return exprs.every((r) => requirementHolds(r, labels[r.key]))
    && fields.every((r) => r.key === 'metadata.name' && requirementHolds(r, hostname));
}

function describeRequirement(r: SelectorRequirement): string {
  const values = r.values ?? [];
  return `${r.key} ${r.operator}${values.length > 0 ? ` [${values.join(', ')}]` : ''}`;
}

/** Per-resource requests of a pod: max(sum of containers and sidecars, largest init container) plus overhead. */
export function podRequests(spec: SchedulingSpec): Map<string, number> {
  const of = (c: ContainerResources): Map<string, number> => {
    const out = new Map<string, number>();
    // A limit without a request defaults the request to the limit.
    for (const [k, v] of Object.entries({ ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) })) {
      if (typeof v === 'string' || typeof v === 'number') out.set(k, parseQuantity(v));
    }
    return out;
  };
  const total = new Map<string, number>();
  const add = (m: Map<string, number>) => { for (const [k, v] of m) total.set(k, (total.get(k) ?? 0) + v); };
  for (const c of spec.containers ?? []) add(of(c));
  for (const c of spec.initContainers ?? []) if (c.restartPolicy === 'Always') add(of(c));
  for (const c of spec.initContainers ?? []) {
    if (c.restartPolicy === 'Always') continue;
    for (const [k, v] of of(c)) if (v > (total.get(k) ?? 0)) total.set(k, v);
  }
  for (const [k, v] of Object.entries(spec.overhead ?? {})) {
    if (typeof v === 'string' || typeof v === 'number') total.set(k, (total.get(k) ?? 0) + parseQuantity(v));
  }
  return total;
}

export interface FitOptions {
  /** Only taints of these effects keep the pod off (default NoSchedule and NoExecute). */
  readonly effects?: readonly string[];
  /** Compare requests with allocatable (default true). */
  readonly resources?: boolean;
}

/**
 * Why a pod with `spec` cannot run on `node` under `hostname` (empty: it fits). Follows the scheduler's
 * filters: nodeName, nodeSelector, required node affinity, untolerated NoSchedule/NoExecute taints, requests
 * over allocatable (resources whose allocatable the description does not give are not compared).
 */
export function misfits(spec: SchedulingSpec, node: SimNode, hostname: string, opts: FitOptions = {}): string[] {
  return misfitsWith(spec, node, hostname, opts, (opts.resources ?? true) ? podRequests(spec) : undefined);
}

function misfitsWith(spec: SchedulingSpec, node: SimNode, hostname: string, opts: FitOptions, requests: Map<string, number> | undefined): string[] {
  const out: string[] = [];
  const labels: Record<string, string> = { ...node.labels, [LABELS.hostname]: hostname };
  if (spec.nodeName !== undefined && spec.nodeName !== '' && spec.nodeName !== hostname) out.push(`nodeName ${spec.nodeName}`);
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) {
    if (labels[k] !== v) out.push(`nodeSelector ${k}=${v} (node: ${labels[k] === undefined ? 'no such label' : `${k}=${labels[k]}`})`);
  }
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && !terms.some((t) => termHolds(t, labels, hostname))) {
    const first = terms.flatMap((t) => [...(t.matchExpressions ?? []), ...(t.matchFields ?? [])]);
    out.push(`required node affinity (${first.map(describeRequirement).join(', ') || 'no requirement'})`);
  }
  const effects = opts.effects ?? ['NoSchedule', 'NoExecute'];
  for (const taint of node.taints) {
    if (!effects.includes(taint.effect)) continue;
    if (!(spec.tolerations ?? []).some((t) => tolerates(t, taint))) out.push(`taint ${taint.key}${taint.value !== undefined ? `=${taint.value}` : ''}:${taint.effect} not tolerated`);
  }
  for (const [resource, amount] of requests ?? []) {
    const has = node.allocatable[resource];
    // unknown allocatable (the service node's cpu and memory, unnamed device plugins): not compared
    if (has === undefined || amount <= has) continue;
    out.push(`requests ${amount} ${resource}, allocatable ${has}`);
  }
  return out;
}

/** How many host names of a node kind a pod fits on, and why it misses the others. */
export interface Fit {
  /** The number of the node kind's (distinct) host names the pod fits on. */
  readonly fits: number;
  /** The number of distinct host names of the node kind. */
  readonly of: number;
  /** Why it misses the others. */
  readonly reasons: readonly string[];
}

/**
 * The host names a pod spec tells apart: its nodeName, a hostname nodeSelector, the values of hostname
 * (label) and metadata.name (field) requirements. Every other host name of a node kind gets the same
 * answer. Undefined when a requirement compares host names as numbers (Gt, Lt): then each one is tried.
 */
function namedHosts(spec: SchedulingSpec): Set<string> | undefined {
  const named = new Set<string>();
  if (spec.nodeName) named.add(spec.nodeName);
  const selected = spec.nodeSelector?.[LABELS.hostname];
  if (selected !== undefined) named.add(selected);
  for (const term of spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []) {
    const onHost = [
      ...(term.matchExpressions ?? []).filter((r) => r.key === LABELS.hostname),
      ...(term.matchFields ?? []).filter((r) => r.key === 'metadata.name'),
    ];
    for (const r of onHost) {
      if (r.operator === 'Gt' || r.operator === 'Lt') return undefined;
      for (const v of r.values ?? []) named.add(v);
    }
  }
  return named;
}

const hostSets = new WeakMap<SimNode, ReadonlySet<string>>();
function hostSetOf(node: SimNode): ReadonlySet<string> {
  let set = hostSets.get(node);
  if (!set) {
    set = new Set(node.hostnames);
    hostSets.set(node, set);
  }
  return set;
}

/**
 * Where a pod fits among the host names of one node kind. Host names the spec does not name are
 * indistinguishable to it, so one of them stands for all: the work grows with what the spec names,
 * not with the number of nodes (a thousand described node names times a thousand per-node samples
 * stays linear).
 */
export function fitOn(spec: SchedulingSpec, node: SimNode, opts: FitOptions = {}): Fit {
  const requests = (opts.resources ?? true) ? podRequests(spec) : undefined;
  let fits = 0;
  const reasons = new Set<string>();
  const tryHost = (hostname: string, count: number) => {
    const why = misfitsWith(spec, node, hostname, opts, requests);
    if (why.length === 0) fits += count;
    else why.forEach((r) => reasons.add(r));
  };
  const hosts = hostSetOf(node);
  const named = namedHosts(spec);
  if (named === undefined) {
    for (const h of hosts) tryHost(h, 1);
    return { fits, of: hosts.size, reasons: [...reasons] };
  }
  let namedHere = 0;
  for (const h of named) {
    if (!hosts.has(h)) continue;
    namedHere += 1;
    tryHost(h, 1);
  }
  // The first host name the spec does not name stands for the rest (at most |named| + 1 steps to find).
  const others = hosts.size - namedHere;
  if (others > 0) {
    const stand = node.hostnames.find((h) => !named.has(h))!;
    tryHost(stand, others);
  }
  return { fits, of: hosts.size, reasons: [...reasons] };
}
