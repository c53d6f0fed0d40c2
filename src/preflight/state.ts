import { apiGroup, Manifest } from '../render/manifest';

/**
 * What a cluster holds, as read by `kubectl get ... -o yaml` or a live list call: plain objects,
 * one per (group, kind, namespace, name). Read-only.
 */
export class ClusterState {
  private readonly byKey = new Map<string, Manifest>();

  /**
   * `source` names where the objects came from (a file, or the API server's URL), for messages. `live`: read from the
   * API server, every kind the rules need listed (a kind with no object is one the cluster has none of), not a snapshot.
   */
  constructor(readonly source: string, objects: readonly Manifest[], readonly live = false) {
    for (const o of objects) this.byKey.set(stateKey(apiGroup(o.apiVersion), o.kind, o.metadata.namespace, o.metadata.name), o);
  }

  get objects(): Manifest[] {
    return [...this.byKey.values()];
  }

  /** Every object of a kind (any version) of an API group ("" for core). */
  list(group: string, kind: string): Manifest[] {
    return this.objects.filter((o) => o.kind === kind && apiGroup(o.apiVersion) === group);
  }

  /** The live object with the identity of `m` (group, kind, namespace, name), if any. */
  find(m: Manifest): Manifest | undefined {
    return this.get(apiGroup(m.apiVersion), m.kind, m.metadata.name, m.metadata.namespace);
  }

  get(group: string, kind: string, name: string, namespace?: string): Manifest | undefined {
    return this.byKey.get(stateKey(group, kind, namespace, name));
  }

  /** Whether the snapshot holds any object of the kind: a kind with no objects may simply not have been read. */
  has(group: string, kind: string): boolean {
    return this.list(group, kind).length > 0;
  }
}

function stateKey(group: string, kind: string, namespace: string | undefined, name: string): string {
  return `${group}/${kind}/${namespace ?? ''}/${name}`;
}

/** The Node objects of a state. */
export function nodesOf(state: ClusterState): Manifest[] {
  return state.list('', 'Node').sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}
