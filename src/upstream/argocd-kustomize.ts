import { SourceRefused } from './tree';
import { isJsonObject } from '../json';
import { Manifest } from '../render/manifest';

type Json = Record<string, unknown>;

/**
 * The commit `check` builds a folder of the tree at, where Argo CD would pass the commit it resolved the Application's
 * targetRevision to (`ARGOCD_APP_REVISION`): check reads the folder on disk, not a commit of the repository.
 */
export const CHECKED_REVISION = '0'.repeat(40);

/**
 * The build environment Argo CD's repo server gives kustomize and env substitution (argo-cd v3.5.1, commit
 * 109ca7ca71139e514114499d294a492e7910a965, reposerver/repository/repository.go newEnv): the Application's name,
 * destination namespace, project, the resolved revision (and its 7- and 8-character forms) and its source.
 */
export function argocdBuildEnv(
  app: Manifest, source: { readonly repoURL?: unknown; readonly path?: unknown; readonly targetRevision?: unknown }, revision = CHECKED_REVISION,
): Map<string, string> {
  const spec = (isJsonObject(app.spec) ? app.spec : {}) as { project?: unknown; destination?: { namespace?: unknown } };
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return new Map([
    ['ARGOCD_APP_NAME', text(app.metadata?.name)],
    ['ARGOCD_APP_NAMESPACE', text(spec.destination?.namespace)],
    ['ARGOCD_APP_PROJECT_NAME', text(spec.project)],
    ['ARGOCD_APP_REVISION', revision],
    ['ARGOCD_APP_REVISION_SHORT', revision.slice(0, 7)],
    ['ARGOCD_APP_REVISION_SHORT_8', revision.slice(0, 8)],
    ['ARGOCD_APP_SOURCE_REPO_URL', text(source.repoURL)],
    ['ARGOCD_APP_SOURCE_PATH', text(source.path)],
    ['ARGOCD_APP_SOURCE_TARGET_REVISION', text(source.targetRevision)],
  ]);
}

/**
 * Argo CD's env substitution (pkg/apis/application/v1alpha1/types.go Env.Envsubst: Go's os.Expand): `${NAME}` and
 * `$NAME` become the variable's value, empty when it is not set; `$$` is a `$`; a `$` before no name stays.
 */
export function envsubst(s: string, env: ReadonlyMap<string, string>): string {
  return s.replace(/\$(?:\{([^}]*)\}|([A-Za-z0-9_]+)|(\$))/g, (_whole: string, braced: string | undefined, plain: string | undefined, dollar: string | undefined) => {
    if (dollar !== undefined) return '$';
    const name = braced ?? plain ?? '';
    if (braced !== undefined && name === '') return '';
    return env.get(name) ?? '';
  });
}

/** Kustomize options of an Application's source that `withArgocdOptions` builds as Argo CD does. */
const BUILT_OPTIONS = new Set(['commonAnnotations', 'commonAnnotationsEnvsubst', 'forceCommonAnnotations']);

/** Whether a source names kustomize options (a non-empty `kustomize` mapping). */
export function hasKustomizeOptions(source: { kustomize?: unknown }): boolean {
  return isJsonObject(source.kustomize) && Object.keys(source.kustomize).length > 0;
}

/**
 * A folder's kustomization as Argo CD's repo server edits it before `kustomize build` (util/kustomize/kustomize.go
 * Build at v3.5.1): the source's commonAnnotations added with `kustomize edit add annotation` (substituted first with
 * commonAnnotationsEnvsubst; an annotation the kustomization already sets is refused unless forceCommonAnnotations, as
 * kustomize edit refuses it). Any other option of a folder source is refused: check would not build what Argo CD builds.
 */
export function withArgocdOptions(kustomization: Json, options: unknown, env: ReadonlyMap<string, string>): Json {
  if (!isJsonObject(options)) throw new SourceRefused('kustomize is not a mapping');
  const other = Object.keys(options).filter((k) => !BUILT_OPTIONS.has(k));
  if (other.length > 0) throw new SourceRefused(`kustomize.${other[0]} of a folder of the tree is not built by check (only commonAnnotations are)`);
  const annotations = options.commonAnnotations;
  if (annotations === undefined) return kustomization;
  if (!isJsonObject(annotations) || !Object.values(annotations).every((v) => typeof v === 'string')) throw new SourceRefused('kustomize.commonAnnotations is not a mapping of strings');
  const existing = isJsonObject(kustomization.commonAnnotations) ? kustomization.commonAnnotations : {};
  const added: Json = {};
  for (const [k, v] of Object.entries(annotations as Record<string, string>)) {
    if (k in existing && options.forceCommonAnnotations !== true) throw new SourceRefused(`kustomize.commonAnnotations: the folder's kustomization already sets ${k} (kustomize edit refuses it without forceCommonAnnotations)`);
    added[k] = options.commonAnnotationsEnvsubst === true ? envsubst(v, env) : v;
  }
  return { ...kustomization, commonAnnotations: { ...existing, ...added } };
}
