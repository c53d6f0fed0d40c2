import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { locateOverlay } from './chart';
import { VENDORED_RELEASES, VendoredOverlay } from './releases';
import { isJsonObject } from '../json';
import { VENDORED_FOLDER } from '../render/vendored';

/** A release of a git repository as kustomize reads it remotely: repository, path in it, tag. */
export interface RemoteRef {
  readonly repoURL: string;
  readonly path: string;
  readonly version: string;
}

/** Kustomize's remote-base form of a release: `https://github.com/<org>/<repo>//<path>?ref=<tag>`. */
export function remoteBase(release: RemoteRef): string {
  return `${release.repoURL.replace(/\.git$/, '')}//${release.path}?ref=${release.version}`;
}

/**
 * A release's remote base on any host (a mirror of its repository): `<repo>.git//<path>?ref=<tag>`, the `.git` telling
 * kustomize that the URL is a repository whatever its host.
 */
export function repositoryBase(release: RemoteRef): string {
  return `${release.repoURL.replace(/\.git$/, '')}.git//${release.path}?ref=${release.version}`;
}

/**
 * A remote base on any https or http host (`<repo>[.git]//<path>?ref=<tag>`: mirrors.git accepts an http:// mirror),
 * parsed (repoURL with `.git`); undefined for any other resource.
 */
export function parseRepositoryBase(resource: string): RemoteRef | undefined {
  const m = /^(https?:\/\/[^?]+?)(?:\.git)?\/\/([\w./-]+?)\/*\?ref=([\w.-]+)$/.exec(resource);
  return m ? { repoURL: `${m[1]}.git`, path: m[2], version: m[3] } : undefined;
}

/**
 * A remote base of a kustomization's resources, parsed; undefined for a resource that is no remote base (a local
 * file or folder). Only GitHub repositories at a tag or branch of plain characters, paths without `..`.
 */
export function parseRemoteBase(resource: string): RemoteRef | undefined {
  const m = /^(https:\/\/github\.com\/[\w.-]+\/[\w.-]+?)(?:\.git)?\/\/([\w./-]+?)\/*\?ref=([\w.-]+)$/.exec(resource);
  if (!m || m[2].split('/').some((s) => s === '..' || s === '.' || s === '')) return undefined;
  return { repoURL: `${m[1]}.git`, path: m[2], version: m[3] };
}

/** Whether a kustomization resource is remote (kustomize would fetch it: a URL, or `host/org/repo` git form). */
export function isRemoteResource(resource: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(resource) || /^(github\.com|gitlab\.com|bitbucket\.org)\//.test(resource) || resource.startsWith('git@');
}

/** The kustomization file of a folder (the names kustomize accepts), or undefined. */
function kustomizationFile(dir: string): string | undefined {
  return ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].map((f) => path.join(dir, f)).find((f) => existsSync(f));
}

/** A kustomization's text, parsed (undefined: it is no YAML object: the build says why). */
function parseKustomization(text: string): Record<string, unknown> | undefined {
  try {
    const k = parseYaml(text) as unknown;
    return isJsonObject(k) ? k : undefined;
  } catch {
    return undefined;
  }
}

/** A folder's kustomization, parsed (undefined: it has none, or it is no YAML object: the build says why). */
export function readKustomization(dir: string): Record<string, unknown> | undefined {
  const file = kustomizationFile(dir);
  return file === undefined ? undefined : parseKustomization(readFileSync(file, 'utf8'));
}

/** The remote resources of the (small) kustomizations read last, by their text (alike clusters' folders have the same). */
const remotesByText = new Map<string, readonly string[]>();
const REMEMBERED_KUSTOMIZATIONS = 256;
const REMEMBERED_CHARS = 64 * 1024;

/** The remote resources a folder's kustomization lists (empty: it builds from the folder alone). */
export function remoteResourcesOf(dir: string): string[] {
  const file = kustomizationFile(dir);
  if (file === undefined) return [];
  const text = readFileSync(file, 'utf8');
  let remotes = remotesByText.get(text);
  if (remotes === undefined) {
    const resources = parseKustomization(text)?.resources;
    remotes = Array.isArray(resources) ? resources.filter((r): r is string => typeof r === 'string' && isRemoteResource(r)) : [];
    if (remotesByText.size >= REMEMBERED_KUSTOMIZATIONS) remotesByText.clear();
    if (text.length <= REMEMBERED_CHARS) remotesByText.set(text, remotes);
  }
  return [...remotes];
}

/** A remote base mapped to its vendored copy. */
export interface VendoredBase {
  readonly resource: string;
  readonly release: VendoredOverlay;
  /** The vendored folder of the base (`<upstream>/<release folder>/<path>`). */
  readonly dir: string;
  /** The release's whole vendored folder (the base refers to siblings in it). */
  readonly releaseDir: string;
}

/**
 * Maps each remote resource of a folder to the vendored copy of a registered release (the same repository, path
 * and tag) under `upstream`; a resource that is no release this toolkit pins, or whose copy is missing, is returned
 * as unmapped. The vendored folder always lies inside `upstream`.
 */
export function vendoredBases(resources: readonly string[], upstream: string): { bases: VendoredBase[]; unmapped: string[] } {
  const bases: VendoredBase[] = [];
  const unmapped: string[] = [];
  const root = path.resolve(upstream);
  for (const resource of resources) {
    const ref = parseRemoteBase(resource);
    const release = ref && VENDORED_RELEASES.find((r): r is VendoredOverlay => r.type === 'kustomize'
      && r.repoURL.replace(/\.git$/, '') === ref.repoURL.replace(/\.git$/, '') && r.path === ref.path && r.version === ref.version);
    const dir = release && locateOverlay(root, release.repoURL, release.version, release.path, release);
    if (!release || !dir || path.relative(root, dir).startsWith('..')) {
      unmapped.push(resource);
      continue;
    }
    bases.push({ resource, release, dir, releaseDir: path.join(root, release.folder) });
  }
  return { bases, unmapped };
}

/**
 * The kustomization of `dir` rewritten to build in `scratch` (a copy of the folder's files) with every remote base
 * replaced by the relative path of its vendored copy: kustomize then reads nothing from the network.
 */
export function offlineKustomization(dir: string, scratch: string, bases: readonly VendoredBase[]): Record<string, unknown> {
  const k = readKustomization(dir) ?? {};
  const resources = Array.isArray(k.resources) ? k.resources : [];
  return {
    ...k,
    resources: resources.map((r) => {
      const base = bases.find((b) => b.resource === r);
      return base ? path.relative(scratch, base.dir) : r;
    }),
  };
}

/** The regular files at the top of a folder (a rendered folder is flat), names sorted. */
export function folderFiles(dir: string): string[] {
  return readdirSync(dir).sort().filter((n) => statSync(path.join(dir, n)).isFile());
}

/** A folder's copy of an upstream release (gitops.argocdInstall: vendored): the release, and the copy of its top folder. */
export interface VendoredCopy {
  readonly resource: string;
  readonly release: VendoredOverlay;
  /** The release's top folder the copy holds (`manifests`). */
  readonly top: string;
  /** The copy in the folder: `<dir>/upstream/<release folder>/<top>`. */
  readonly copy: string;
}

/**
 * The local resources of a folder's kustomization that are a folder of a copy of a pinned release inside it
 * (`upstream/<release folder>/<path>`, render/vendored.ts): each with its release. Empty: the folder has none.
 */
export function vendoredResourcesOf(dir: string): VendoredCopy[] {
  const resources = readKustomization(dir)?.resources;
  if (!Array.isArray(resources)) return [];
  const out: VendoredCopy[] = [];
  for (const r of resources) {
    if (typeof r !== 'string' || isRemoteResource(r)) continue;
    const parts = r.replace(/^\.\//, '').split('/');
    if (parts[0] !== VENDORED_FOLDER || parts.includes('..')) continue;
    const release = VENDORED_RELEASES.find((v): v is VendoredOverlay => v.type === 'kustomize' && v.folder === parts[1] && parts.slice(2).join('/') === v.path);
    if (!release) continue;
    const top = release.path.split('/')[0];
    out.push({ resource: r, release, top, copy: path.join(dir, VENDORED_FOLDER, release.folder, top) });
  }
  return out;
}
