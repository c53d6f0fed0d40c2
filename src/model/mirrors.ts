/**
 * The description's mirrors (`mirrors.charts`, `mirrors.git`, `mirrors.images`): upstream prefixes and the mirrors
 * that stand in for them. The longest prefix wins; a prefix matches a whole URL or a whole path segment of it.
 */
export type MirrorMap = Readonly<Record<string, string>>;

/** Whether `value` starts with `prefix` at a boundary: the prefix ends in `/` or `:`, or the value goes on with `/`. */
function startsAt(value: string, prefix: string): boolean {
  if (!value.startsWith(prefix)) return false;
  return value.length === prefix.length || /[/:]$/.test(prefix) || value[prefix.length] === '/';
}

/** The mirror of a URL (a chart repository, a Git repository): its longest mirrored prefix replaced; the URL when none is. */
export function mirrorUrl(url: string, map: MirrorMap): string {
  const prefix = Object.keys(map).filter((p) => startsAt(url, p)).sort((a, b) => b.length - a.length)[0];
  return prefix === undefined ? url : map[prefix] + url.slice(prefix.length);
}

/** The upstream URL a mirrored one stands for (the reverse of mirrorUrl); the URL when it is no mirror's. */
export function unmirrorUrl(url: string, map: MirrorMap): string {
  const entry = Object.entries(map).filter(([, m]) => startsAt(url, m)).sort((a, b) => b[1].length - a[1].length)[0];
  return entry === undefined ? url : entry[0] + url.slice(entry[1].length);
}

/**
 * An image reference as a container runtime resolves it: a first path segment that is no host (no `.` or `:`, not
 * `localhost`) is Docker Hub's, `docker.io`, and a single name is `docker.io/library/<name>`.
 */
export function fullImageName(ref: string): string {
  const first = ref.split('/')[0];
  if (ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')) return ref;
  return ref.includes('/') ? `docker.io/${ref}` : `docker.io/library/${ref}`;
}

/** The registry prefix of `mirrors.images` an image reference is pulled through, if any (the longest). */
export function mirroredRegistry(ref: string, map: MirrorMap): string | undefined {
  const full = fullImageName(ref);
  return Object.keys(map).filter((p) => full.startsWith(`${p}/`)).sort((a, b) => b.length - a.length)[0];
}

/** An image reference pulled from its registry's mirror instead; unchanged when its registry is not mirrored. */
export function mirrorImage(ref: string, map: MirrorMap): string {
  const registry = mirroredRegistry(ref, map);
  return registry === undefined ? ref : map[registry] + fullImageName(ref).slice(registry.length);
}

/** The upstream image reference a mirrored one stands for (the reverse of mirrorImage); unchanged when it is no mirror's. */
export function unmirrorImage(ref: string, map: MirrorMap): string {
  if (Object.keys(map).length === 0) return ref;
  const full = fullImageName(ref);
  const entry = Object.entries(map).filter(([, m]) => full.startsWith(`${m}/`)).sort((a, b) => b[1].length - a[1].length)[0];
  return entry === undefined ? ref : entry[0] + full.slice(entry[1].length);
}

/**
 * A rendered object with every image reference it names pulled from its registry's mirror: `image` strings
 * (containers, CRs that name a whole reference), `repository` of the image coordinates of an operator's CR (with an
 * `image` or a `version` beside it: ClusterPolicy, NicClusterPolicy) and environment variables named `*_IMAGE`. The same
 * references the image rules read (upstream/images.ts imageRefsOf).
 */
export function mirrorImagesIn<T>(node: T, map: MirrorMap): T {
  if (Object.keys(map).length === 0) return node;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const coordinates = typeof o.repository === 'string' && (typeof o.image === 'string' || typeof o.version === 'string');
    for (const [k, x] of Object.entries(o)) {
      if (k === 'repository' && coordinates) out[k] = mirrorImage(x as string, map);
      else if (k === 'image' && typeof x === 'string' && !coordinates) out[k] = mirrorImage(x, map);
      else if (k === 'value' && typeof x === 'string' && typeof o.name === 'string' && /_IMAGE$/.test(o.name)) out[k] = mirrorImage(x, map);
      else out[k] = walk(x);
    }
    return out;
  };
  return walk(node) as T;
}
