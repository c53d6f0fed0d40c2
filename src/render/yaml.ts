import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import { version as YAML_VERSION } from 'yaml/package.json';
import { CompiledCache, resolveCacheDir } from '../validate/compiled-cache';

const OPTIONS = { lineWidth: 0, minContentWidth: 0, aliasDuplicateObjects: false, indentSeq: true } as const;

/** Entries kept across processes: enough for a few clusters' objects, small enough to read in a few ms. */
const MAX_CACHED_BYTES = 8 * 2 ** 20;

/**
 * Serialised documents of earlier runs, by a digest of the value's JSON. YAML serialisation is
 * the largest cost of a warm `synth` (the yaml package's code runs cold in every process), while
 * most objects are the same as last time. The key covers the yaml version and the options, and
 * JSON cannot tell apart only values that never occur in a manifest (non-finite numbers, -0,
 * BigInt): those are never cached.
 */
class YamlCache {
  private entries: Record<string, string> | undefined;
  private readonly used = new Map<string, string>();
  private added = 0;
  private readonly store: CompiledCache | undefined;
  private readonly key: string;

  constructor() {
    const dir = resolveCacheDir(undefined);
    this.store = dir ? new CompiledCache(dir) : undefined;
    this.key = this.store?.key('yaml', [YAML_VERSION, OPTIONS]) ?? '';
  }

  get(json: string, make: () => string): string {
    const digest = createHash('sha1').update(json).digest('base64');
    if (this.entries === undefined) {
      this.entries = this.store?.readJson<Record<string, string>>(this.key) ?? {};
      if (this.store) process.once('exit', () => this.save());
    }
    let text = this.used.get(digest) ?? this.entries[digest];
    if (text === undefined) {
      text = make();
      this.added += 1;
    }
    this.used.set(digest, text);
    return text;
  }

  /** This run's documents first, then older ones while they fit. */
  private save(): void {
    if (!this.store || this.added === 0) return;
    const out: Record<string, string> = {};
    let bytes = 0;
    for (const [digest, text] of [...this.used, ...Object.entries(this.entries ?? {})]) {
      if (digest in out) continue;
      bytes += text.length + digest.length;
      if (bytes > MAX_CACHED_BYTES) break;
      out[digest] = text;
    }
    this.store.writeJson(this.key, out);
  }
}

let cache: YamlCache | undefined;

function cacheableJson(value: unknown): string | undefined {
  let plain = true;
  let json: string | undefined;
  try {
    json = JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))) plain = false;
      return v;
    });
  } catch {
    return undefined;
  }
  return plain ? json : undefined;
}

/** One YAML document, stable and diff-friendly (no line folding, no anchors). */
export function toYaml(value: unknown): string {
  const json = cacheableJson(value);
  if (json === undefined) return stringify(value, OPTIONS);
  cache ??= new YamlCache();
  return cache.get(json, () => stringify(value, OPTIONS));
}
