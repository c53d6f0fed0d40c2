import { RenderedSource } from './render';
import { apiGroup } from '../render/manifest';

/** Scope of a kind: namespaced or cluster-scoped. */
export type Scope = 'Namespaced' | 'Cluster';

/** One object an install creates. */
export interface FootprintObject {
  readonly apiVersion: string;
  readonly kind: string;
  /** API group ('' for core). */
  readonly group: string;
  readonly name?: string;
  /** Namespace of a namespaced object (the Application's destination namespace when the object names none). */
  readonly namespace?: string;
  /** Undefined when nothing knows the kind (counted as cluster-scoped, and said so). */
  readonly scope?: Scope;
  /** Where it comes from: the render, or why the render does not show it. */
  readonly source: string;
}

/**
 * What an install creates, by kind, scope and namespace: every object of its render, and the CRDs it brings
 * that the render does not show (a `crds/` folder the vendored copy lacks, or CRDs its operator applies).
 */
export function footprintOf(r: RenderedSource, scope: (apiVersion: string, kind: string) => Scope | undefined): FootprintObject[] {
  const rendered = r.objects.map((o) => {
    const s = scope(o.apiVersion, o.kind);
    return {
      apiVersion: o.apiVersion,
      kind: o.kind,
      group: apiGroup(o.apiVersion),
      name: o.metadata?.name,
      ...(s !== 'Cluster' ? { namespace: o.metadata?.namespace ?? r.namespace } : {}),
      ...(s ? { scope: s } : {}),
      source: r.what,
    };
  });
  const crds = r.unrenderedCrds.map((c) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    group: 'apiextensions.k8s.io',
    name: `${c.kind.toLowerCase()} of ${c.group}`,
    scope: 'Cluster' as const,
    source: c.from === 'operator' ? `${r.what}, applied by its operator` : `${r.what}, crds/ (not vendored)`,
  }));
  return [...rendered, ...crds];
}
