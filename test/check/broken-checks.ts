import type { ClusterView } from '../../src/check';
import type * as Engine from '../../src/check/engine';

/**
 * The rendered clusters are consistent, so a broken rule is simulated (for vi.mock of src/check/engine's
 * checkCluster): the StorageClasses of every cluster but those `passes` names checked as if a second default had been
 * rendered (the real rule, default-storage-class, fires). No import of src/ at run time: a mock factory loads it.
 */
export function withSecondDefaultClass(c: ClusterView, passes: (name: string) => boolean): ClusterView {
  if (passes(c.name)) return c;
  return {
    ...c,
    folders: c.folders.map((f) => ({
      ...f,
      objects: f.objects.map((m) => (m.kind === 'StorageClass'
        ? { ...m, metadata: { ...m.metadata, annotations: { ...m.metadata.annotations, 'storageclass.kubernetes.io/is-default-class': 'true' } } }
        : m)),
    })),
  };
}

/**
 * The check engine with its checkCluster over withSecondDefaultClass: what a vi.mock factory of src/check/engine
 * answers, given the real module (importOriginal's).
 */
export function brokenEngine(real: typeof Engine, passes: (name: string) => boolean): typeof Engine {
  return { ...real, checkCluster: (c, opts) => real.checkCluster(withSecondDefaultClass(c, passes), opts) };
}
