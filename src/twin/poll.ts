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
