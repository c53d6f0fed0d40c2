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
      /** Replicas of the operator (DYNAMO_OPERATOR_REPLICAS). */
      readonly replicas: number;
    };
  };
  readonly 'global': {
    readonly nats: { readonly install: false };
    readonly etcd: { readonly install: false };
  };
}

/**
 * Two operators, not the chart's one. The Dynamo 1.4.0 CRD stores v1alpha1 and serves v1beta1 through the operator's
 * conversion webhook: with DynamoGraphDeployments in the cluster and the webhook down, Argo CD's cluster cache cannot
 * list them and every Application of the cluster goes Unknown (argoproj/argo-cd#20828). The webhook server runs in every
 * replica (controller-runtime serves webhooks outside leader election); the controllers run in the leader only, the
 * chart always enabling leader election (templates/operator-config.yaml: leaderElection.enabled: true, one lease
 * "dynamo.nvidia.com" in kube-system). So one operator restarting or rolling out leaves the webhook served. The chart
 * has no PodDisruptionBudget, and none is rendered here: both replicas run on the one service node, where a budget would
 * only block that node's drain (the evicted replica has nowhere else to go), and a service node that is down takes the
 * API server with it.
 */
export const DYNAMO_OPERATOR_REPLICAS = 2;

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
        replicas: DYNAMO_OPERATOR_REPLICAS,
      },
    },
    // The chart's defaults, stated: the operator's Kubernetes discovery needs neither (Dynamo >= 1.0).
    'global': { nats: { install: false }, etcd: { install: false } },
  };
}
