import { allContainers } from './cluster-index';
import { Rule, Violation } from './rule';
import { Manifest } from '../render/manifest';

/** Why an image reference is not pinned, or undefined when it is (a tag other than latest, or a digest). */
export function unpinnedImage(image: string): string | undefined {
  if (image.includes('@')) return undefined;
  const last = image.slice(image.lastIndexOf('/') + 1);
  const colon = last.indexOf(':');
  if (colon < 0) return 'has no tag (it floats to latest)';
  const tag = last.slice(colon + 1);
  if (tag === '' || tag === 'latest') return `uses the "${tag || '(empty)'}" tag`;
  return undefined;
}

type Json = Record<string, unknown>;

/**
 * `{ image, version }` and `{ repository, tag }` pairs in operator resources and Helm values. The path of
 * a node is a list of segments, joined only for a pair found (most objects hold none).
 */
function versionPairs(node: unknown, path: (string | number)[], out: { path: string; version: string }[]): void {
  if (Array.isArray(node)) {
    node.forEach((v, i) => {
      path.push(i);
      versionPairs(v, path, out);
      path.pop();
    });
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const o = node as Json;
  const at = (key: string) => path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') + `.${key}`;
  if (typeof o.image === 'string' && typeof o.version === 'string') out.push({ path: at('version'), version: o.version });
  if (typeof o.repository === 'string' && typeof o.tag === 'string') out.push({ path: at('tag'), version: o.tag });
  for (const k in o) {
    path.push(k);
    versionPairs(o[k], path, out);
    path.pop();
  }
}

const noPrivileged: Rule = {
  id: 'no-privileged',
  severity: 'error',
  summary: 'no privileged container and no allowPrivilegeEscalation: true (use capabilities such as IPC_LOCK)',
  check(index) {
    const out: Violation[] = [];
    for (const m of index.objects) {
      for (const t of index.podTemplates(m)) {
        for (const c of allContainers(t.spec)) {
          const sc = c.securityContext ?? {};
          if (sc.privileged === true) out.push({ message: `${t.path} container "${c.name}" is privileged; grant the capability it needs instead`, objects: [m] });
          if (sc.allowPrivilegeEscalation === true) out.push({ message: `${t.path} container "${c.name}" sets allowPrivilegeEscalation: true`, objects: [m] });
        }
      }
    }
    return out;
  },
};

const pinnedImages: Rule = {
  id: 'image-pinned',
  severity: 'error',
  summary: 'every image is pinned: a tag other than latest, or a digest',
  check(index) {
    const out: Violation[] = [];
    for (const m of index.objects) {
      for (const t of index.podTemplates(m)) {
        for (const c of allContainers(t.spec)) {
          const why = c.image === undefined ? 'has no image' : unpinnedImage(c.image);
          if (why) out.push({ message: `${t.path} container "${c.name}" image "${c.image ?? ''}" ${why}`, objects: [m] });
        }
      }
      const pairs: { path: string; version: string }[] = [];
      versionPairs(m.spec ?? {}, ['spec'], pairs);
      for (const p of pairs) {
        if (p.version === '' || p.version === 'latest') out.push({ message: `${p.path}: "${p.version}" is not a pinned version`, objects: [m] });
      }
    }
    return out;
  },
};

const noSecretData: Rule = {
  id: 'no-secret-data',
  severity: 'error',
  summary: 'no Secret carries data or stringData (dist/ is committed to git)',
  check(index) {
    return index.ofKind('Secret', '').flatMap((s: Manifest) => {
      const keys = [...Object.keys((s.data ?? {}) as Json).map((k) => `data.${k}`), ...Object.keys((s.stringData ?? {}) as Json).map((k) => `stringData.${k}`)];
      return keys.length === 0 ? [] : [{ message: `holds ${keys.join(', ')}; secrets never go into the rendered tree (use an external secret store)`, objects: [s] }];
    });
  },
};

export const SECURITY_RULES: readonly Rule[] = [noPrivileged, pinnedImages, noSecretData];
