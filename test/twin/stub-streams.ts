import { expect } from 'vitest';
import { KubeObject, WatchEnd, WatchEvent, WatchHandle, WatchOptions } from '../../src/twin/kube-client';
import { ListWatchClient } from '../../src/twin/list-watch';

/**
 * The lists and watch streams of a stub API server, driven by the test: what each list answers (`itemsOf`, by
 * collection path), each event sent on a collection's open stream, each stream ended as the server ends it.
 */
export class StubStreams implements ListWatchClient {
  /** The collections listed, in order. */
  readonly lists: string[] = [];
  /** The versions each watch was opened from, in order. */
  readonly watches: (string | undefined)[] = [];
  listVersion = '10';
  failList?: Error;
  private readonly open = new Map<string, { opts: WatchOptions; end: (e: WatchEnd) => void }>();
  /** What a list answers, by collection path. */
  itemsOf: (path: string) => KubeObject[] = () => [];

  async listAt(p: string): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    this.lists.push(p);
    if (this.failList) throw this.failList;
    return { items: this.itemsOf(p).map((i) => structuredClone(i)), resourceVersion: this.listVersion };
  }

  watch(p: string, opts: WatchOptions): WatchHandle {
    this.watches.push(opts.resourceVersion);
    let end!: (e: WatchEnd) => void;
    const done = new Promise<WatchEnd>((r) => { end = r; });
    this.open.set(p, { opts, end });
    return {
      done,
      close: () => {
        if (this.open.get(p)?.end === end) this.open.delete(p);
        end({ reason: 'closed' });
      },
    };
  }

  /** Sends an event on the open stream of `p` (the only one open when not given). */
  send(e: WatchEvent, p?: string): void {
    this.stream(p).opts.onEvent(structuredClone(e));
  }

  /** Ends the open stream of `p` (the only one open when not given) as the server would. */
  end(e: WatchEnd, p?: string): void {
    const path = p ?? this.only();
    const o = this.stream(path);
    this.open.delete(path);
    o.end(e);
  }

  /** Whether a stream of `p` is open (any, when not given). */
  watching(p?: string): boolean {
    return p === undefined ? this.open.size > 0 : this.open.has(p);
  }

  private only(): string {
    if (this.open.size !== 1) throw new Error(`${this.open.size} streams open: name the one`);
    return [...this.open.keys()][0];
  }

  private stream(p?: string): { opts: WatchOptions; end: (e: WatchEnd) => void } {
    const o = this.open.get(p ?? this.only());
    if (!o) throw new Error(`no stream of ${p} open`);
    return o;
  }
}

/** Waits until `ok` holds (at most about 2.5 s), then asserts it. */
export async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(ok()).toBe(true);
}
