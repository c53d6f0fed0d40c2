/**
 * The subfolder of a rendered folder that holds a verbatim copy of an upstream tree its kustomization builds on (the
 * argocd folder with gitops.argocdInstall: vendored: `argocd/upstream/argo-cd-<tag>/manifests/`). Its files are the
 * upstream release's, not the folder's objects: readers of a rendered tree leave it out, as they leave out tutorials/.
 */
export const VENDORED_FOLDER = 'upstream';
