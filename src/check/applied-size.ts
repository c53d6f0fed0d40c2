import { ClusterIndex } from './cluster-index';
import { ARGO } from './gitops';
import { Rule, Violation } from './rule';
import { appliedSize, CLIENT_SIDE_APPLY_LIMIT } from '../components/gitops/api-kinds';
import { LABELS, parseSyncOptions } from '../model/names';
import { apiGroup, describeObject, Manifest } from '../render/manifest';

/** How many oversized objects a finding names before it counts the rest. */
const NAMED = 3;

const sizes = new WeakMap<Manifest, number>();

/**
 * appliedSize of a rendered object, remembered for the object: a render (a chart's, Argo CD's install with its 340 KB
 * CRDs) is shared by every cluster of a command that applies it, and measured by the rule for each. Renders never change.
 */
function renderedSize(o: Manifest): number {
  let bytes = sizes.get(o);
  if (bytes === undefined) {
    bytes = appliedSize(o);
    sizes.set(o, bytes);
  }
  return bytes;
}

/**
 * Whether Argo CD applies an object without client-side apply's last-applied annotation: `ServerSideApply=true`
 * or `Replace=true`, in the object's own sync options or its Application's. The object's own setting of an option
 * wins over the Application's (Argo CD's resource-level sync options).
 */
function withoutLastApplied(own: readonly string[], application: readonly string[]): boolean {
  return ['ServerSideApply', 'Replace'].some((option) => {
    const set = (options: readonly string[]) => options.find((o) => o.startsWith(`${option}=`))?.slice(option.length + 1);
    return (set(own) ?? set(application)) === 'true';
  });
}

/**
 * Client-side apply (Argo CD's default, `kubectl apply`) stores the whole object in its
 * `kubectl.kubernetes.io/last-applied-configuration` annotation, and the API server refuses annotations over
 * 262144 bytes: an object larger than that never syncs ("metadata.annotations: Too long"), and its Application
 * never gets healthy. Checked on what the engines render, so the sizes plan.ts decides from (a hand-kept list for the
 * managed installs, which synth cannot render) are checked too.
 */
const appliedSizeLimit: Rule = {
  id: 'applied-size-limit',
  severity: 'error',
  summary: `every object an Application applies (rendered chart, overlay or folder) over ${CLIENT_SIDE_APPLY_LIMIT} bytes as compact JSON is applied `
    + 'without the last-applied annotation: ServerSideApply=true (or Replace=true) on the Application or in the object\'s own sync-options',
  check(index: ClusterIndex) {
    const out: Violation[] = [];
    for (const r of index.renders?.sources ?? []) {
      const app = r.application;
      if (apiGroup(app.apiVersion) !== ARGO) continue;
      const appOptions = ((app.spec as { syncPolicy?: { syncOptions?: string[] } } | undefined)?.syncPolicy?.syncOptions) ?? [];
      const oversized: { object: Manifest; bytes: number }[] = r.objects
        .map((object) => ({ object, bytes: renderedSize(object) }))
        .filter(({ object, bytes }) => bytes > CLIENT_SIDE_APPLY_LIMIT
          && !withoutLastApplied(parseSyncOptions(object.metadata.annotations?.[LABELS.syncOptions]), appOptions))
        .sort((a, b) => b.bytes - a.bytes);
      if (oversized.length === 0) continue;
      const named = oversized.slice(0, NAMED).map((o) => `${describeObject(o.object)} (${o.bytes} bytes)`).join(', ');
      const more = oversized.length > NAMED ? ` and ${oversized.length - NAMED} more` : '';
      out.push({
        message: `${r.what} applies ${named}${more}, over the ${CLIENT_SIDE_APPLY_LIMIT} bytes client-side apply can keep in its `
          + 'kubectl.kubernetes.io/last-applied-configuration annotation: the sync fails (metadata.annotations: Too long); '
          + `add ServerSideApply=true to the Application's syncOptions (or to the object's ${LABELS.syncOptions})`,
        objects: [app],
      });
    }
    return out;
  },
};

/** The rules that need the engines' renders of every Application (they report nothing without renders). */
export const APPLIED_SIZE_RULES: readonly Rule[] = [appliedSizeLimit];
