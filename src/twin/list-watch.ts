import { KubeObject, WatchEnd, WatchEvent, WatchHandle, WatchOptions } from './kube-client';
import { backoffMs, wakeableSleep } from './poll';

/**
 * A list and a watch of one collection, kept as client-go's reflector keeps them: list (its resourceVersion), watch from
 * there, watch again from the last version seen when the server ends the stream, list again when the version is gone
 * (410) or the stream failed. Every change is told to `onChange`, a relist as one `SYNC` (its objects may have changed
 * meanwhile): what the harness's waits react to instead of reading every second.
 *
 * A collection that is not served (yet: its CRD is not Established) is tried again after a backoff, or at once on
 * `kick()` (a CRD came).
 *
 * Imports no test framework.
 */

/** What a ListWatch needs of its client (kube-client.ts's KubeClient; a stub in unit tests). */
export interface ListWatchClient {
  listAt(path: string): Promise<{ items: KubeObject[]; resourceVersion: string }>;
  watch(path: string, opts: WatchOptions): WatchHandle;
}

export type ListWatchChange = WatchEvent['type'] | 'SYNC';

/**
 * What interrupted list-and-watches since a mark (PodWatch, JobWatch): the lists after each one's first (a failed stream
 * or an expired version made it list again) and the failures said meanwhile. What changed and changed back while a
 * watch was down was not seen: the report says so instead of reading as complete.
 */
export class Interruptions {
  private readonly listed = new Set<string>();
  private relists = 0;
  private readonly failures: string[] = [];

  /** A ListWatch's failure (its onError). */
  readonly failed = (message: string): void => {
    this.failures.push(message);
  };

  /** A `SYNC` of the ListWatch `source`: a list again after its first. */
  synced(source: string): void {
    if (this.listed.has(source)) this.relists++;
    else this.listed.add(source);
  }

  /** From now on. */
  mark(): void {
    this.relists = 0;
    this.failures.length = 0;
  }

  /** What interrupted `what`'s watch since the mark and what was not seen then; undefined when nothing did. */
  describe(what: string, unseen: string): string | undefined {
    if (this.relists === 0 && this.failures.length === 0) return undefined;
    const last = this.failures.at(-1);
    return `the watch of ${what} was interrupted (${this.relists} list(s) again${last ? `; the last failure: ${last}` : ''}): ${unseen}`;
  }
}

export interface ListWatchOptions {
  /**
   * The first wait before a failed or unserved list is tried again; it doubles on each failure in a row.
   * @default 500
   */
  readonly retryMs?: number;
  /** @default 30_000 */
  readonly maxRetryMs?: number;
  /** Told each failure (a list or watch refused, a connection lost), once per distinct message in a row. */
  readonly onError?: (message: string) => void;
}

const key = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class ListWatch {
  /** The objects as last listed or watched, by namespace/name. */
  readonly objects = new Map<string, KubeObject>();
  /** Listed at least once (objects is the collection, not an empty start). */
  synced = false;
  /** The last failure, while lists or watches fail (undefined once one succeeds). */
  lastError?: string;
  private running = false;
  private loop?: Promise<void>;
  private current?: WatchHandle;
  private wake?: () => void;
  /** This round's list succeeded. */
  private listed = false;
  private kicked = false;

  /** `path`: the collection, or a function answering it (undefined while its kind is not served). */
  constructor(
    private readonly client: ListWatchClient,
    private readonly path: string | (() => Promise<string | undefined>),
    private readonly onChange: (type: ListWatchChange, o?: KubeObject) => void,
    private readonly opts: ListWatchOptions = {},
  ) {}

  start(): this {
    if (this.running) return this;
    this.running = true;
    this.loop = this.run();
    return this;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.current?.close();
    this.wake?.();
    await this.loop;
  }

  /** Tries a waiting list again now, its backoff from the start (its kind may be served now, or in a moment). */
  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let error: string | undefined;
      this.listed = false;
      try {
        const path = typeof this.path === 'string' ? this.path : await this.path();
        if (path === undefined) {
          error = undefined;
          failures++;
        } else {
          await this.listAndWatch(path);
          failures = 0;
          continue;
        }
      } catch (e) {
        error = (e as Error).message;
        // a stream that failed after a list that worked starts the backoff anew
        failures = this.listed ? 1 : failures + 1;
      }
      if (!this.running) break;
      if (error !== undefined && error !== this.lastError) this.opts.onError?.(error);
      this.lastError = error;
      if (!this.kicked) await wakeableSleep(backoffMs(failures, this.opts.retryMs ?? 500, this.opts.maxRetryMs ?? 30_000), (w) => { this.wake = w; });
      if (this.kicked) failures = 0;
      this.kicked = false;
    }
  }

  /** One list, then watches from its version until the version is gone (returns: list again) or a failure (throws). */
  private async listAndWatch(path: string): Promise<void> {
    const listed = await this.client.listAt(path);
    this.objects.clear();
    for (const o of listed.items) this.objects.set(key(o), o);
    this.synced = true;
    this.listed = true;
    this.lastError = undefined;
    this.onChange('SYNC');
    let version = listed.resourceVersion;
    while (this.running) {
      const handle = this.client.watch(path, {
        resourceVersion: version,
        onEvent: (e) => {
          const rv = (e.object?.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
          if (rv) version = rv;
          if (e.type === 'BOOKMARK') return;
          if (e.type === 'DELETED') this.objects.delete(key(e.object));
          else this.objects.set(key(e.object), e.object);
          this.onChange(e.type, e.object);
        },
      });
      this.current = handle;
      const opened = Date.now();
      const end: WatchEnd = await handle.done;
      this.current = undefined;
      if (!this.running || end.reason === 'gone') return;
      if (end.reason === 'error') throw end.error;
      // a server that ends every stream at once would make this a busy loop: list again after the backoff instead
      if (Date.now() - opened < 1000) throw new Error(`watch of ${path}: ended as soon as opened`);
    }
  }
}
