import { isImageCoordinates } from '../model/mirrors';

/** Image coordinates as the operators' CRs spell them. */
export interface ImageCoordinates {
  readonly repository?: string;
  readonly image?: string;
  readonly version?: string;
}

/** The fields of an image reference in the GPU Operator's values and ClusterPolicy. */
export const IMAGE_FIELDS = ['repository', 'image', 'version'] as const;

/** Image coordinate objects inside a CR's spec: every object with a string repository, image or version. */
export function imageObjects(
  node: unknown, path: string, out: { path: string; value: ImageCoordinates }[] = [],
): { path: string; value: ImageCoordinates }[] {
  if (Array.isArray(node)) {
    node.forEach((v, i) => imageObjects(v, `${path}[${i}]`, out));
    return out;
  }
  if (typeof node !== 'object' || node === null) return out;
  const o = node as Record<string, unknown>;
  const fields = Object.fromEntries(IMAGE_FIELDS.filter((f) => typeof o[f] === 'string').map((f) => [f, o[f] as string]));
  // `image` alone under a container-like object is a full reference, not CR coordinates; CRs pair it with the others.
  if (Object.keys(fields).length > 0 && (fields.repository !== undefined || fields.version !== undefined || typeof o.image === 'string')) out.push({ path, value: fields });
  for (const [k, v] of Object.entries(o)) imageObjects(v, path ? `${path}.${k}` : k, out);
  return out;
}

/** An image reference split into repository (registry and path) and tag. */
export interface ImageRef {
  readonly repository: string;
  readonly tag?: string;
  readonly digest?: string;
  /** Field path it was found at. */
  readonly path: string;
}

/** `registry/path/name:tag@digest` split; undefined for what is no image reference (spaces, templates, empty). */
export function parseImageRef(ref: string, path = ''): ImageRef | undefined {
  if (ref === '' || /[\s{}$]/.test(ref)) return undefined;
  const at = ref.indexOf('@');
  const name = at >= 0 ? ref.slice(0, at) : ref;
  const colon = name.lastIndexOf(':');
  const tagged = colon > name.lastIndexOf('/');
  return {
    repository: tagged ? name.slice(0, colon) : name,
    ...(tagged ? { tag: name.slice(colon + 1) } : {}),
    ...(at >= 0 ? { digest: ref.slice(at + 1) } : {}),
    path,
  };
}

/**
 * Every complete image reference in an object: string `image` fields (containers, and CRs that name a whole
 * reference), environment variables whose name ends in `_IMAGE` (operators pass their operands' images so),
 * and CR coordinates (isImageCoordinates: `repository/image:version`, untagged without a version). The references
 * mirrorImagesIn rewrites.
 */
export function imageRefsOf(node: unknown, path = '', out: ImageRef[] = []): ImageRef[] {
  if (Array.isArray(node)) {
    node.forEach((v, i) => imageRefsOf(v, `${path}[${i}]`, out));
    return out;
  }
  if (typeof node !== 'object' || node === null) return out;
  const o = node as Record<string, unknown>;
  const at = (k: string) => (path ? `${path}.${k}` : k);
  if (isImageCoordinates(o)) {
    const name = typeof o.image === 'string' && o.image !== '' ? `/${o.image}` : '';
    const version = typeof o.version === 'string' && o.version !== '' ? `:${o.version}` : '';
    const ref = parseImageRef(`${(o.repository as string).replace(/\/+$/, '')}${name}${version}`, path);
    if (ref) out.push(ref);
  } else if (typeof o.image === 'string') {
    const ref = parseImageRef(o.image, at('image'));
    if (ref) out.push(ref);
  }
  if (typeof o.name === 'string' && /_IMAGE$/.test(o.name) && typeof o.value === 'string') {
    const ref = parseImageRef(o.value, at('value'));
    if (ref) out.push(ref);
  }
  for (const [k, v] of Object.entries(o)) if (typeof v === 'object') imageRefsOf(v, at(k), out);
  return out;
}

const refsByObject = new WeakMap<object, readonly ImageRef[]>();

/**
 * imageRefsOf of a whole object, remembered for the object: the renders of a chart are shared by every cluster
 * of a command that installs it, and walked by the image rules of each. The object must not change afterwards.
 */
export function objectImageRefs(o: object): readonly ImageRef[] {
  let refs = refsByObject.get(o);
  if (!refs) {
    refs = imageRefsOf(o);
    refsByObject.set(o, refs);
  }
  return refs;
}
