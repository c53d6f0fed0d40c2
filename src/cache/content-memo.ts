/**
 * The results of a pure function kept by the content of its input, in memory, for the life of a process (each render
 * thread has its own). A fleet renders the same objects and texts once per cluster: what depends only on their content
 * (a YAML text of a value, a policy's verdict on an object) is then worked out once. The key is the input itself, whole
 * (never a digest of it), so an entry is only ever found by an equal input; inputs that a key cannot tell apart
 * exactly (exactJsonKey) are not kept. The entries are bounded by the characters of their keys: once past the bound,
 * the memo starts again empty.
 */
export class ContentMemo<T> {
  private readonly entries = new Map<string, T>();
  private chars = 0;

  /** @param maxKeyChars the characters of all the keys kept at once */
  constructor(private readonly maxKeyChars: number) {}

  /** `compute()`'s result for `key`: kept from an earlier call with an equal key, else computed and kept. A throw is never kept. */
  get(key: string | undefined, compute: () => T): T {
    if (key === undefined) return compute();
    if (this.entries.has(key)) return this.entries.get(key)!;
    const value = compute();
    if (key.length > this.maxKeyChars) return value;
    if (this.chars + key.length > this.maxKeyChars) this.clear();
    this.entries.set(key, value);
    this.chars += key.length;
    return value;
  }

  /** Entries kept. */
  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.chars = 0;
  }
}

/**
 * The JSON text of a value when it tells the value apart from every other exactly: plain objects and arrays of
 * strings, booleans, null and finite numbers only. Undefined for anything JSON would drop or change (undefined,
 * a function, a symbol, a BigInt, NaN or Infinity, -0, a Map, a Date, a class instance, a sparse array).
 */
export function exactJsonKey(value: unknown): string | undefined {
  let exact = true;
  const text = JSON.stringify(value, function (this: Record<string, unknown>, key, v: unknown) {
    // a value's toJSON has already run: what it was is the holder's
    if (v !== this[key]) exact = false;
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        if (!Number.isFinite(v) || Object.is(v, -0)) exact = false;
        return v;
      case 'object': {
        if (v === null) return v;
        const proto = Object.getPrototypeOf(v);
        if (Array.isArray(v)) {
          if (proto !== Array.prototype || Object.keys(v).length !== v.length) exact = false;
        } else if (proto !== Object.prototype && proto !== null) {
          exact = false;
        }
        return v;
      }
      default:
        exact = false;
        return null;
    }
  });
  return exact && text !== undefined ? text : undefined;
}
