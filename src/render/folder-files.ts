import { FolderKustomization, KustomizeReplacement, Manifest } from './manifest';
import { HEADER, toYaml } from './yaml';
import { LABELS } from '../model/names';

/** A rendered file: path relative to the output root, and its content. */
export type RenderedFile = readonly [path: string, content: string];

/**
 * The kustomization that lets `kubectl apply -k <folder>` apply a folder without Argo CD: its object files, and a
 * folder's bases and patches (those of its files that are patches are not resources).
 */
export function kustomization(files: readonly string[], k?: FolderKustomization, replacements: readonly KustomizeReplacement[] = []): string {
  const replaced = replacements.length > 0 ? { replacements } : {};
  if (!k) return HEADER + toYaml({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: files, ...replaced });
  return HEADER + toYaml({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    ...(k.namespace ? { namespace: k.namespace } : {}),
    resources: [...k.bases, ...files.filter((f) => !k.patchFiles.some((p) => p.file === f))],
    patches: [
      ...k.patchFiles.filter((p) => files.includes(p.file)).map((p) => ({ path: p.file, target: { ...p.target } })),
      ...k.patches.map((p) => ({ target: { ...p.target }, patch: p.patch })),
    ],
    ...(k.images && k.images.length > 0 ? { images: k.images.map((i) => ({ name: i.name, newName: i.newName })) } : {}),
    ...replaced,
  });
}

/**
 * True when a folder's kustomization.yaml lists the object: every object but the templates a user fills
 * in first (LABELS.template) and the objects applied by hand only (LABELS.byHand). What the root
 * Application syncs of the gitops folder, and so what the fleet syncs in its place.
 */
export function inKustomization(m: Manifest): boolean {
  const annotations = m.metadata.annotations ?? {};
  return annotations[LABELS.template] !== 'true' && annotations[LABELS.byHand] !== 'true';
}

/** The file content of one object. */
export function manifestYaml(m: Manifest): string {
  return HEADER + toYaml(m);
}
