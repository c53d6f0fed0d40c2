import { relative } from 'node:path';
import { allContainers } from './cluster-index';
import { Rule, Violation } from './rule';
import { ContentMemo } from '../cache/content-memo';
import { credentialKind, credentialLines } from '../errors';
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

/** What credential a text holds (errors.ts credentialKind: the shapes every printed and written text is masked of). */
export { credentialKind };

/** Keys of a kubeconfig's users[].user that hold a credential. */
const KUBECONFIG_USER_SECRETS = ['token', 'client-key-data', 'password'];

/**
 * What credential a long text of an object holds, by the text: the same dashboards, scripts and configuration files
 * are in every cluster of a fleet (a lookup by the text is a fraction of a search through it).
 */
const longTextKinds = new ContentMemo<string | undefined>(4 * 1024 * 1024);
const LONG_TEXT = 256;

/** The first credential in a JSON value, as `path: what`, or undefined. */
function credentialIn(node: unknown, path: string): string | undefined {
  if (typeof node === 'string') {
    // the shortest credential a shape knows: a user-info `https://u:p@h`
    if (node.length < 8) return undefined;
    const what = node.length < LONG_TEXT ? credentialKind(node) : longTextKinds.get(node, () => credentialKind(node));
    return what && `${path || '(value)'} holds ${what}`;
  }
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const found = credentialIn(node[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof node !== 'object' || node === null) return undefined;
  const o = node as Json;
  // a kubeconfig written out as YAML or JSON fields
  if (o.kind === 'Config' && Array.isArray(o.users)) {
    for (const [i, u] of (o.users as Json[]).entries()) {
      const user = (u?.user ?? {}) as Json;
      const key = KUBECONFIG_USER_SECRETS.find((k) => typeof user[k] === 'string' && user[k] !== '');
      if (key) return `${path}.users[${i}].user.${key} holds a kubeconfig user credential`;
    }
  }
  for (const k in o) {
    const found = credentialIn(o[k], path ? `${path}.${k}` : k);
    if (found) return found;
  }
  return undefined;
}

/**
 * dist/ is committed to git and synced by Argo CD: no credential may ever be in it, whatever object carries it. A
 * MultiKueue manager names its workers' kubeconfig Secrets, created by hand (dist/fleet/README.md), never their content.
 * A Secret's data is no-secret-data's.
 */
const noCredentials: Rule = {
  id: 'no-credentials',
  severity: 'error',
  summary: 'no file of the rendered tree carries a credential (a private key, a service-account token, a kubeconfig user, a cloud or Git key, a URL\'s user-info)',
  check(index) {
    const out: Violation[] = [];
    for (const m of index.objects) {
      const { data, stringData, ...rest } = m as Json;
      const found = credentialIn(m.kind === 'Secret' && m.apiVersion === 'v1' ? rest : { ...rest, data, stringData }, '');
      if (found) out.push({ message: `${found}; ${NEVER}`, objects: [m] });
    }
    // what a tree read from disk holds besides its objects: the report, the kustomizations, the client files and the
    // fleet page whole, and the comments of the manifest files (the objects above are what the files parse to)
    const rel = (file: string) => (index.dir === undefined ? file : relative(index.dir, file));
    const texts = [...index.texts, ...index.files.map((f) => ({ file: f.file, text: yamlComments(f.bytes.toString('utf8')) }))];
    for (const { file, text } of texts) {
      for (const c of credentialLines(text)) out.push({ message: `${rel(file)}:${c.line} holds ${c.what}; ${NEVER}`, objects: [] });
    }
    return out;
  },
};

/** What to do about a credential in the rendered tree. */
const NEVER = 'a credential never goes into the rendered tree (dist/ is committed): create it in the cluster by hand or with a secret store, '
  + 'a repository\'s in Argo CD\'s repository Secret';

/** The comment lines of a YAML text (each at its own line: the others left empty). */
function yamlComments(text: string): string {
  return text.split('\n').map((l) => (/^\s*#/.test(l) ? l : '')).join('\n');
}

export const SECURITY_RULES: readonly Rule[] = [noPrivileged, pinnedImages, noSecretData, noCredentials];
