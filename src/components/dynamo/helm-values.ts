import { ClusterModel, TolerationSpec } from '../../model/model';

/** A required node affinity onto a set of node labels (the chart's operator has `affinity`, no `nodeSelector`). */
interface NodeAffinity {
  readonly nodeAffinity: {
    readonly requiredDuringSchedulingIgnoredDuringExecution: {
      readonly nodeSelectorTerms: ReadonlyArray<{
        readonly matchExpressions: ReadonlyArray<{ readonly key: string; readonly operator: 'In' | 'Exists'; readonly values?: readonly string[] }>;
      }>;
    };
  };
}

/**
 * Values of the dynamo-platform chart (VERSIONS.dynamoPlatform) this toolkit sets; every other value
 * keeps the chart's default (../shared/upstream-installs/dynamo-platform-1.4.0-branchpoint/.../values.yaml):
 * the operator watches the whole cluster, discovers workers through Kubernetes, and runs without NATS
 * and etcd. The chart renders no CRD and no hook: with `upgradeCRD: true` (the default for a cluster-wide
 * operator) the operator Deployment's `crd-apply` init container applies the CRDs shipped in the operator
 * image, wired to the operator's conversion webhook, before the operator starts.
 */
export interface DynamoPlatformHelmValues {
  readonly 'dynamo-operator': {
    readonly controllerManager: {
      readonly tolerations: readonly TolerationSpec[];
      readonly affinity: NodeAffinity;
    };
  };
  readonly 'global': {
    readonly nats: { readonly install: false };
    readonly etcd: { readonly install: false };
  };
}

function requireManaged(model: ClusterModel): void {
  const mode = model.description.installs.dynamo;
  if (mode !== 'managed') throw new Error(`dynamoPlatformHelmValues: installs.dynamo is "${mode}"; the platform chart is installed only with installs.dynamo: managed`);
}

/** Helm values for the managed Dynamo platform: the operator on the service node. */
export function dynamoPlatformHelmValues(model: ClusterModel): DynamoPlatformHelmValues {
  requireManaged(model);
  const matchExpressions = Object.entries(model.serviceNode.selector).map(([key, value]) => (value === ''
    ? { key, operator: 'Exists' as const }
    : { key, operator: 'In' as const, values: [value] }));
  return {
    'dynamo-operator': {
      controllerManager: {
        tolerations: model.serviceNode.tolerations.map((t) => ({ ...t })),
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions }] } } },
      },
    },
    // The chart's defaults, stated: the operator's Kubernetes discovery needs neither (Dynamo >= 1.0).
    'global': { nats: { install: false }, etcd: { install: false } },
  };
}
