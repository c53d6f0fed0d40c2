import { Construct } from 'constructs';
import {
  ClusterQueueV1Beta2,
  ClusterQueueV1Beta2SpecFairSharingWeight,
  ClusterQueueV1Beta2SpecFlavorFungibilityWhenCanBorrow,
  ClusterQueueV1Beta2SpecFlavorFungibilityWhenCanPreempt,
  ClusterQueueV1Beta2SpecPreemptionBorrowWithinCohortPolicy,
  ClusterQueueV1Beta2SpecPreemptionReclaimWithinCohort,
  ClusterQueueV1Beta2SpecPreemptionWithinClusterQueue,
  ClusterQueueV1Beta2SpecQueueingStrategy,
  ClusterQueueV1Beta2SpecResourceGroupsFlavorsResourcesBorrowingLimit,
  ClusterQueueV1Beta2SpecResourceGroupsFlavorsResourcesLendingLimit,
  ClusterQueueV1Beta2SpecResourceGroupsFlavorsResourcesNominalQuota,
  ClusterQueueV1Beta2SpecStopPolicy,
} from '../../../imports/kueue-clusterqueue-kueue.x-k8s.io';
import { LABELS } from '../../model/names';
import { formatMillis, parseQuantity } from '../../model/quantity';

/** Quota of one resource on one flavor, as canonical quantities. */
export interface ResourceQuota {
  /** Resource name (one of the ClusterQueue's coveredResources). */
  readonly name: string;
  /** Nominal quota (`"8"`, `"384"`, `"3600Gi"`). */
  readonly nominalQuota: string;
  /**
   * How much more the queue may borrow from the cohort.
   * @default - unlimited
   */
  readonly borrowingLimit?: string;
  /**
   * How much of its nominal quota the queue lends to the cohort (at most nominalQuota).
   * @default - all of it
   */
  readonly lendingLimit?: string;
}

/** The quotas of one flavor, one entry per covered resource in the same order. */
export interface FlavorQuotas {
  /** ResourceFlavor name. */
  readonly flavor: string;
  readonly resources: readonly ResourceQuota[];
}

export type WithinClusterQueuePreemption = 'Never' | 'LowerPriority' | 'LowerOrNewerEqualPriority';
export type ReclaimWithinCohortPreemption = 'Never' | 'LowerPriority' | 'Any';

export interface KueueClusterQueueProps {
  /** ClusterQueue name. */
  readonly name: string;
  /** Cohort the queue shares idle quota in (`spec.cohortName` in v1beta2). */
  readonly cohort: string;
  /** The one namespace whose LocalQueues may point at this ClusterQueue. */
  readonly namespace: string;
  /** Resources the queue accounts for; a workload requesting any other resource is never admitted. */
  readonly coveredResources: readonly string[];
  /** Quotas per flavor, tried in this order. */
  readonly flavors: readonly FlavorQuotas[];
  /**
   * Preempt lower-priority workloads of the same queue when the queue is at its quota.
   * @default "LowerPriority"
   */
  readonly withinClusterQueue?: WithinClusterQueuePreemption;
  /**
   * Reclaim quota this queue lent to other queues of the cohort.
   * @default "Any"
   */
  readonly reclaimWithinCohort?: ReclaimWithinCohortPreemption;
  /**
   * Fair-sharing weight; set it only when fair sharing is on in the Kueue configuration.
   * @default - no fairSharing block
   */
  readonly fairSharingWeight?: number;
  /**
   * The AdmissionCheck every Workload of the queue passes before it is admitted (a MultiKueue manager's: the Workload
   * runs on a worker), as v1beta2 writes it (spec.admissionChecksStrategy; the v1beta1 spec.admissionChecks is gone).
   * @default - none
   */
  readonly admissionCheck?: string;
  /**
   * The queue's hold: "Hold" admits no new workload, "HoldAndDrain" also evicts the admitted ones. Always written (the
   * CRD default when "None"), so that a hold made by hand shows as drift and self-heal lifts it: a hold is the
   * description's.
   * @default "None"
   */
  readonly stopPolicy?: 'None' | 'Hold' | 'HoldAndDrain';
}

const STOP_POLICIES = {
  None: ClusterQueueV1Beta2SpecStopPolicy.NONE,
  Hold: ClusterQueueV1Beta2SpecStopPolicy.HOLD,
  HoldAndDrain: ClusterQueueV1Beta2SpecStopPolicy.HOLD_AND_DRAIN,
} as const;

const nominal = ClusterQueueV1Beta2SpecResourceGroupsFlavorsResourcesNominalQuota.fromString;
const borrowing = ClusterQueueV1Beta2SpecResourceGroupsFlavorsResourcesBorrowingLimit.fromString;
const lending = ClusterQueueV1Beta2SpecResourceGroupsFlavorsResourcesLendingLimit.fromString;

/**
 * A Kueue ClusterQueue (v1beta2) in a cohort, restricted to one namespace, with one resource group
 * and preemption written out (the CRD defaults are "Never", which would leave a tenant unable to
 * get its own quota back).
 */
export class KueueClusterQueue extends Construct {
  readonly name: string;
  /** The ResourceFlavors it names. */
  readonly flavorNames: readonly string[];

  constructor(scope: Construct, id: string, props: KueueClusterQueueProps) {
    super(scope, id);
    this.name = props.name;
    this.flavorNames = props.flavors.map((f) => f.flavor);
    const covered = props.coveredResources;
    if (covered.length === 0) throw new Error(`KueueClusterQueue ${props.name}: coveredResources is empty`);
    if (props.flavors.length === 0) throw new Error(`KueueClusterQueue ${props.name}: flavors is empty`);
    for (const f of props.flavors) {
      const names = f.resources.map((r) => r.name);
      if (names.join('\n') !== covered.join('\n')) {
        throw new Error(`KueueClusterQueue ${props.name}: flavors[${f.flavor}].resources must list ${covered.join(', ')} in that order, got ${names.join(', ')}`);
      }
      for (const r of f.resources) checkQuota(props.name, f.flavor, r);
    }
    const weight = props.fairSharingWeight;
    if (weight !== undefined && (!(weight >= 0) || Math.abs(weight * 1000 - Math.round(weight * 1000)) > 1e-9)) {
      throw new Error(`KueueClusterQueue ${props.name}: fairSharingWeight must be a non-negative multiple of 0.001, got ${weight}`);
    }
    const fairSharingWeight = weight === undefined
      ? undefined
      : ClusterQueueV1Beta2SpecFairSharingWeight.fromString(formatMillis(Math.round(weight * 1000)));

    new ClusterQueueV1Beta2(this, 'Resource', {
      metadata: { name: props.name },
      spec: {
        cohortName: props.cohort,
        namespaceSelector: { matchLabels: { [LABELS.namespaceName]: props.namespace } },
        resourceGroups: [{
          coveredResources: [...covered],
          flavors: props.flavors.map((f) => ({
            name: f.flavor,
            resources: f.resources.map((r) => ({
              name: r.name,
              nominalQuota: nominal(r.nominalQuota),
              borrowingLimit: r.borrowingLimit === undefined ? undefined : borrowing(r.borrowingLimit),
              lendingLimit: r.lendingLimit === undefined ? undefined : lending(r.lendingLimit),
            })),
          })),
        }],
        preemption: {
          withinClusterQueue: (props.withinClusterQueue ?? 'LowerPriority') as ClusterQueueV1Beta2SpecPreemptionWithinClusterQueue,
          reclaimWithinCohort: (props.reclaimWithinCohort ?? 'Any') as ClusterQueueV1Beta2SpecPreemptionReclaimWithinCohort,
          borrowWithinCohort: { policy: ClusterQueueV1Beta2SpecPreemptionBorrowWithinCohortPolicy.NEVER },
        },
        fairSharing: fairSharingWeight && { weight: fairSharingWeight },
        admissionChecksStrategy: props.admissionCheck === undefined ? undefined : { admissionChecks: [{ name: props.admissionCheck }] },
        // CRD defaults, written out so that Argo CD sees no drift.
        queueingStrategy: ClusterQueueV1Beta2SpecQueueingStrategy.BEST_EFFORT_FIFO,
        flavorFungibility: {
          whenCanBorrow: ClusterQueueV1Beta2SpecFlavorFungibilityWhenCanBorrow.MAY_STOP_SEARCH,
          whenCanPreempt: ClusterQueueV1Beta2SpecFlavorFungibilityWhenCanPreempt.TRY_NEXT_FLAVOR,
        },
        stopPolicy: STOP_POLICIES[props.stopPolicy ?? 'None'],
      },
    });
  }
}

function checkQuota(queue: string, flavor: string, r: ResourceQuota): void {
  const at = `KueueClusterQueue ${queue}: flavors[${flavor}].${r.name}`;
  const value = (what: string, q: string) => {
    let v: number;
    try {
      v = parseQuantity(q);
    } catch {
      throw new Error(`${at}.${what}: "${q}" is not a quantity`);
    }
    if (v < 0) throw new Error(`${at}.${what}: must not be negative, got "${q}"`);
    return v;
  };
  const n = value('nominalQuota', r.nominalQuota);
  if (r.borrowingLimit !== undefined) value('borrowingLimit', r.borrowingLimit);
  if (r.lendingLimit !== undefined && value('lendingLimit', r.lendingLimit) > n) {
    throw new Error(`${at}.lendingLimit: "${r.lendingLimit}" exceeds nominalQuota "${r.nominalQuota}" (Kueue rejects it)`);
  }
}
