/** The cluster tests' waits: what the controllers, the scheduler and the API server's informers do a moment later. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Reads until `done` holds or `ms` have passed (every `everyMs`): the last value read, whether or not it is done (the
 * caller says what did not happen in time).
 */
export async function poll<T>(read: () => Promise<T>, done: (v: T) => boolean, ms: number, everyMs = 500): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > deadline) return v;
    await sleep(everyMs);
  }
}

/**
 * A wait of `ms` that `wake` ends early: the loops that sleep until their next resync or retry, and wake on a change
 * (list-watch.ts, operator-stand-ins.ts). `wake` is set for the length of the wait only.
 */
export async function wakeableSleep(ms: number, setWake: (wake: (() => void) | undefined) => void): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    setWake(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  setWake(undefined);
}

/** The wait before attempt `failures` (1: the first retry) of a backoff from `firstMs`, doubling up to `maxMs`. */
export const backoffMs = (failures: number, firstMs: number, maxMs: number): number =>
  Math.min(maxMs, firstMs * 2 ** Math.min(Math.max(failures - 1, 0), 16));
