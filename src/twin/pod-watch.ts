import { KubeObject } from './kube-client';
import { Interruptions, ListWatch, ListWatchChange, ListWatchClient } from './list-watch';

/**
 * Every pod of a twin, watched while `rehearse --from` (issue 51) converges a change: each pod as it is created, with
 * the node it is bound to, whether or not it is still there when the change has converged (a pod a roll starts and
 * replaces a moment later is counted all the same), without listing the pods again and again.
 *
 * Imports no test framework.
 */

/** A pod as the change report reads it: where it runs and what owns it (a Deployment for a ReplicaSet's pod). */
export interface PodRecord {
  readonly name: string;
  /** The node it is bound to ('' while it is not). */
  readonly node: string;
  readonly owner: string;
}

export function podRecord(p: KubeObject): PodRecord {
  const node = String((p.spec as Record<string, any> | undefined)?.nodeName ?? '');
  const ref = ((p.metadata.ownerReferences ?? []) as { kind: string; name: string }[])[0];
  const hash = ((p.metadata.labels ?? {}) as Record<string, string>)['pod-template-hash'];
  const owner = !ref ? `Pod ${p.metadata.namespace}/${p.metadata.name}`
    : ref.kind === 'ReplicaSet' && hash && ref.name.endsWith(`-${hash}`) ? `Deployment ${p.metadata.namespace}/${ref.name.slice(0, -hash.length - 1)}`
      : `${ref.kind} ${p.metadata.namespace}/${ref.name}`;
  return { name: `${p.metadata.namespace}/${p.metadata.name}`, node, owner };
}

/** Pods by uid. */
export function podsOf(pods: Iterable<KubeObject>): Map<string, PodRecord> {
  const out = new Map<string, PodRecord>();
  for (const p of pods) out.set(String(p.metadata.uid), podRecord(p));
  return out;
}

export class PodWatch {
  private readonly watch: ListWatch;
  /** Every pod seen since the mark (before it: since the start), by uid, with the node it was bound to once it was. */
  private readonly records = new Map<string, PodRecord>();
  /** The uids of the pods there at the mark. */
  private marked = new Set<string>();
  /** Lists again and failures since the mark: a pod created and gone while the watch was down is not seen. */
  private readonly interruptions = new Interruptions();

  constructor(client: ListWatchClient) {
    this.watch = new ListWatch(client, '/api/v1/pods', (type, o) => this.changed(type, o), { onError: this.interruptions.failed });
  }

  start(): this {
    this.watch.start();
    return this;
  }

  async stop(): Promise<void> {
    await this.watch.stop();
  }

  /** The pods have been listed once. */
  get synced(): boolean {
    return this.watch.synced;
  }

  get lastError(): string | undefined {
    return this.watch.lastError;
  }

  /** From now on: `before` is the pods there now, `seen` those and every pod created after. */
  mark(): void {
    this.records.clear();
    for (const [uid, p] of podsOf(this.watch.objects.values())) this.records.set(uid, p);
    this.marked = new Set(this.records.keys());
    this.interruptions.mark();
  }

  /** Takes in pods read otherwise (the list after the change: what the watch had not delivered yet). */
  record(pods: Iterable<KubeObject>): void {
    for (const p of pods) this.note(p);
  }

  /** The pods there at the mark, each with the node it was bound to since. */
  before(): Map<string, PodRecord> {
    return new Map([...this.marked].map((uid) => [uid, this.records.get(uid)!]));
  }

  /** The pods there at the mark and every one created after, gone since or not, each with the node it was bound to. */
  seen(): Map<string, PodRecord> {
    return new Map(this.records);
  }

  /**
   * When the watch was interrupted since the mark (a list again after a failure or an expired version), what it says:
   * a pod created and gone meanwhile was not seen. Undefined when it was not.
   */
  gaps(): string | undefined {
    return this.interruptions.describe('the pods', 'a pod created and gone meanwhile is not counted');
  }

  private changed(type: ListWatchChange, o?: KubeObject): void {
    if (type === 'SYNC' || !o) {
      this.interruptions.synced('pods');
      for (const p of this.watch.objects.values()) this.note(p);
      return;
    }
    this.note(o);
  }

  /** A pod's first record, its node filled in when it is bound later (a pod is created unbound). */
  private note(p: KubeObject): void {
    const uid = String(p.metadata.uid);
    const seen = this.records.get(uid);
    const now = podRecord(p);
    if (!seen) this.records.set(uid, now);
    else if (!seen.node && now.node) this.records.set(uid, { ...seen, node: now.node });
  }
}
