/** Image coordinates as the operators' CRs spell them. */
export interface ImageCoordinates {
  readonly repository?: string;
  readonly image?: string;
  readonly version?: string;
}

/** The chart's default for one image field of a CR, and where it comes from. */
export interface ImageDefault extends ImageCoordinates {
  /** values.yaml path the CR field is filled from (`validator`, `driver.manager`). */
  readonly valuesPath: string;
  /** The version came from the chart's appVersion (values.yaml leaves it unset). */
  readonly versionFromAppVersion: boolean;
}

/** The fields of an image reference in the GPU Operator's values and ClusterPolicy. */
export const IMAGE_FIELDS = ['repository', 'image', 'version'] as const;

/**
 * Reads a CR template (clusterpolicy.yaml) line by line and maps each CR path that sets image
 * fields from `.Values` to the values path it reads: `spec.validator` -> `validator`, with whether the
 * version falls back to `.Chart.AppVersion`. Control lines (`{{- if ... }}`) do not count as keys.
 */
export function imageFieldsOfTemplate(template: string): Map<string, { valuesPath: string; versionFromAppVersion: boolean }> {
  const out = new Map<string, { valuesPath: string; versionFromAppVersion: boolean }>();
  const stack: { indent: number; key: string }[] = [];
  for (const line of template.split('\n')) {
    const m = /^( *)([A-Za-z][\w-]*):\s*(.*)$/.exec(line);
    if (!m) continue;
    const indent = m[1].length;
    const [key, value] = [m[2], m[3]];
    while (stack.length > 0 && stack[stack.length - 1].indent >= indent) stack.pop();
    const ref = /\{\{-?\s*\.Values\.([\w.]+)\.(repository|image|version)\b([^}]*)\}\}/.exec(value);
    if ((IMAGE_FIELDS as readonly string[]).includes(key) && ref && ref[2] === key) {
      const crPath = stack.map((s) => s.key).join('.');
      const prev = out.get(crPath);
      out.set(crPath, {
        valuesPath: ref[1],
        versionFromAppVersion: (prev?.versionFromAppVersion ?? false) || (key === 'version' && /default\s+\.Chart\.AppVersion/.test(ref[3])),
      });
    }
    if (value === '') stack.push({ indent, key });
  }
  return out;
}

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
