import { isJsonObject, JsonObject } from '../json';

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

/** How a prefix of `mirrors` matches a value. */
type Matches = (value: string, prefix: string) => boolean;

/**
 * Whether `value` is an image reference under `prefix`: more path segments follow it, or (a prefix with a path: a whole
 * repository, `nvcr.io/nvidia/gpu-operator`) it is the whole name, with a tag or a digest or none. After a bare registry a
 * `:` is its port.
 */
const underPath: Matches = (value, prefix) => value.startsWith(`${prefix}/`)
  || (prefix.includes('/') && value.startsWith(prefix) && /^([:@]|$)/.test(value.slice(prefix.length)));

/**
 * The entry of `map` whose upstream prefix (with `reverse`: whose mirror) `matches` the longest part of `value`, as
 * [what matched, what stands for it]; undefined when none does.
 */
function longestEntry(map: MirrorMap, value: string, matches: Matches, reverse = false): [string, string] | undefined {
  return Object.entries(map).map(([upstream, mirror]): [string, string] => (reverse ? [mirror, upstream] : [upstream, mirror]))
    .filter(([from]) => matches(value, from)).sort((a, b) => b[0].length - a[0].length)[0];
}

/** `value` with its longest matching prefix replaced by what stands for it; `otherwise` when none matches. */
function replacePrefix(value: string, map: MirrorMap, matches: Matches, reverse: boolean, otherwise: string): string {
  const entry = longestEntry(map, value, matches, reverse);
  return entry === undefined ? otherwise : entry[1] + value.slice(entry[0].length);
}

/** The mirror of a URL (a chart repository, a Git repository): its longest mirrored prefix replaced; the URL when none is. */
export function mirrorUrl(url: string, map: MirrorMap): string {
  return replacePrefix(url, map, startsAt, false, url);
}

/** The upstream URL a mirrored one stands for (the reverse of mirrorUrl); the URL when it is no mirror's. */
export function unmirrorUrl(url: string, map: MirrorMap): string {
  return replacePrefix(url, map, startsAt, true, url);
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
  return longestEntry(map, fullImageName(ref), underPath)?.[0];
}

/** An image reference pulled from its registry's mirror instead; unchanged when its registry is not mirrored. */
export function mirrorImage(ref: string, map: MirrorMap): string {
  return replacePrefix(fullImageName(ref), map, underPath, false, ref);
}

/** The upstream image reference a mirrored one stands for (the reverse of mirrorImage); unchanged when it is no mirror's. */
export function unmirrorImage(ref: string, map: MirrorMap): string {
  return replacePrefix(fullImageName(ref), map, underPath, true, ref);
}

/**
 * Whether an object holds image coordinates as the operators' CRs spell them (ClusterPolicy, NicClusterPolicy): a
 * non-empty `repository` with an image name (`image`) or a `version` beside it, for `repository/image:version`. Its
 * `image` is then a name under the repository, not a whole reference. The one reading of mirrorImagesIn and of the image
 * rules (upstream/images.ts imageRefsOf).
 */
export function isImageCoordinates(o: Readonly<Record<string, unknown>>): boolean {
  return typeof o.repository === 'string' && o.repository !== '' && (typeof o.image === 'string' || typeof o.version === 'string');
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
    const coordinates = isImageCoordinates(o);
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

/** A registry (or a registry and a path in it) pulled through its mirror: its longest mirrored prefix replaced; unchanged when none is. */
export function mirrorRegistry(registry: string, map: MirrorMap): string {
  return replacePrefix(registry, map, (v, p) => v === p || underPath(v, p), false, registry);
}

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** A string that is a whole image reference (no template, no spaces): `busybox:1.36`, `ghcr.io/org/name@sha256:...`. */
function isImageReference(v: string): boolean {
  return /^[a-z0-9]+([._:/-][a-z0-9]+)*(:[\w][\w.-]*)?(@sha256:[0-9a-f]{64})?$/.test(v);
}

/**
 * Image coordinates of a chart's values, pulled from the mirror: `repository` with, where the object has them, a
 * `registry` before it and an image name after it (`image` or `name`: the GPU and Network Operator's
 * `{repository: nvcr.io/nvidia, image: driver}`, `{repository, name, tag}`). The mirrored reference is split back into
 * the same fields, changing as few as it can (the registry alone where the repository still follows it; never the
 * name: a mirrored prefix is whole path segments, so the name still ends the mirrored reference). An empty
 * registry is none: the repository is then the whole reference (Docker Hub's `bitnami/kubectl`), and takes the mirror.
 */
function mirrorCoordinates(o: JsonObject, map: MirrorMap): JsonObject {
  const name = nonEmpty(o.image) ? o.image : nonEmpty(o.name) ? o.name : undefined;
  const registry = nonEmpty(o.registry) ? o.registry : undefined;
  const repository = o.repository as string;
  const ref = [registry, repository, name].filter((p) => p !== undefined).join('/');
  if (!isImageReference(ref)) return {};
  const mirrored = mirrorImage(ref, map);
  if (mirrored === ref) return {};
  // a mirrored prefix is whole path segments short of the reference: the image name still ends it
  const rest = name === undefined ? mirrored : mirrored.slice(0, -name.length - 1);
  if (registry === undefined) return { repository: rest };
  if (rest.endsWith(`/${repository}`)) return { registry: rest.slice(0, -repository.length - 1) };
  return { registry: rest.slice(0, rest.indexOf('/')), repository: rest.slice(rest.indexOf('/') + 1) };
}

/**
 * Whether the string `image` of an object is a name that a registry given elsewhere goes before, not a whole
 * reference: beside a repository or registry (GPU Operator coordinates), or beside a tag, digest or version without a
 * registry host of its own (ingress-nginx's `{image: ingress-nginx/controller, tag}` under `global.image.registry`).
 */
function relativeName(o: JsonObject, image: string): boolean {
  if ('repository' in o || 'registry' in o) return true;
  const hasHost = image.includes('/') && fullImageName(image) === image;
  return !hasHost && ['tag', 'digest', 'version'].some((k) => k in o);
}

/**
 * A chart's values with every image they name pulled from its registry's mirror (`mirrors.images`), the values
 * otherwise as they are. The shapes charts use: image coordinates (mirrorCoordinates: `repository`, with a `registry`
 * and an image name beside it), whole references in a string field whose key ends in `image` (`image: busybox:1.36`,
 * `cleanupImage`; not a name under another registry: relativeName) or in a mapping named `images`
 * (`images: {operator: ghcr.io/...}`), and registries alone
 * (`imageRegistry`, `global.image.registry`). A field that holds no image reference (a template, an empty string) is
 * left alone, and no field is added: what a chart does not name it does not read.
 */
export function mirrorValueImages<T>(values: T, map: MirrorMap): T {
  if (Object.keys(map).length === 0) return values;
  const walk = (v: unknown, inImages: boolean): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, inImages));
    if (!isJsonObject(v)) return v;
    const coordinates = nonEmpty(v.repository) ? mirrorCoordinates(v, map) : undefined;
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      if (coordinates !== undefined) {
        out[k] = k in coordinates ? coordinates[k] : walk(x, false);
      } else if (typeof x !== 'string') {
        out[k] = walk(x, /images$/i.test(k));
      } else if (/imageRegistry$/i.test(k) || (k === 'registry' && !('repository' in v))) {
        out[k] = x === '' ? x : mirrorRegistry(x, map);
      } else if (((inImages && !/pull|policy/i.test(k)) || (/image$/i.test(k) && !relativeName(v, x))) && isImageReference(x)) {
        out[k] = mirrorImage(x, map);
      } else {
        out[k] = x;
      }
    }
    return out;
  };
  return walk(values, false) as T;
}

/**
 * The values a Helm source sets so that the chart pulls its images from the mirrors: the fields mirrorValueImages
 * changes in `values` (the chart's defaults with the toolkit's values over them), and nothing else; a list that
 * changes is set whole (Helm replaces lists). Empty when no image of the values is from a mirrored registry.
 */
export function mirroredValueOverrides(values: JsonObject, map: MirrorMap): JsonObject {
  const changed = (before: unknown, after: unknown): unknown => {
    if (isJsonObject(before) && isJsonObject(after)) {
      const out: JsonObject = {};
      for (const [k, v] of Object.entries(after)) {
        const c = changed(before[k], v);
        if (c !== undefined) out[k] = c;
      }
      return Object.keys(out).length > 0 ? out : undefined;
    }
    return JSON.stringify(before) === JSON.stringify(after) ? undefined : after;
  };
  return (changed(values, mirrorValueImages(values, map)) ?? {}) as JsonObject;
}
