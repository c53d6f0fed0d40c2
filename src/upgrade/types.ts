import type { Manifest } from '../render/manifest';

/** The components upgrade-plan plans, as the command line names them. */
export const UPGRADE_COMPONENTS = ['gpu-operator', 'network-operator', 'kueue'] as const;
export type ComponentName = (typeof UPGRADE_COMPONENTS)[number];

/** The plan's sections, in the order it prints them. */
export const SECTIONS = ['crd-changes', 'revalidation', 'order', 'gpu-node-impact', 'control-plane-impact', 'config-defaults', 'ownership'] as const;
export type Section = (typeof SECTIONS)[number];

export const SECTION_TITLES: Readonly<Record<Section, string>> = {
  'crd-changes': 'CRD changes',
  'revalidation': 'Re-validation',
  'order': 'Order',
  'gpu-node-impact': 'GPU-node impact',
  'control-plane-impact': 'Control-plane impact',
  'config-defaults': 'Config defaults',
  'ownership': 'Ownership',
};

/**
 * blocker: the upgrade as rendered breaks something (exit 1); warning: it works, with a cost or a risk the plan
 * names; info: a fact of the change.
 */
export type Severity = 'blocker' | 'warning' | 'info';

/** What kind of finding, per section (the JSON's `type`). */
export type FindingType =
  // crd-changes
  | 'crd-added' | 'crd-removed' | 'crd-unchanged' | 'crd-not-vendored' | 'scope-changed'
  | 'version-added' | 'version-removed' | 'stored-version-removed' | 'served-version-disabled' | 'storage-version-changed' | 'version-deprecated'
  | 'field-added' | 'field-removed' | 'type-changed' | 'required-added-no-default' | 'required-added-defaulted'
  | 'stricter' | 'relaxed' | 'default-changed' | 'cel-compile-error' | 'crd-size'
  // revalidation
  | 'valid-under-new-crd' | 'invalid-under-new-crd' | 'valid-under-old-crd' | 'invalid-under-old-crd' | 'not-validated'
  | 'crd-first' | 'rollback-blocked'
  // order
  | 'order-step' | 'order-blocked'
  // gpu-node-impact
  | 'kernel-module-reload' | 'daemonset-roll' | 'device-plugin-restart' | 'no-node-impact' | 'upgrade-policy' | 'operands-not-compared'
  // control-plane-impact
  | 'webhook-window' | 'webhook-added' | 'webhook-removed' | 'failure-policy-changed'
  // config-defaults
  | 'default-changed-unpinned' | 'default-added' | 'pinned-below-upstream' | 'default-changed-pinned'
  | 'feature-gate-removed' | 'feature-gate-locked' | 'feature-gate-default-changed'
  // ownership
  | 'two-owners' | 'helm-owner';

/** One finding of a plan. */
export interface Finding {
  readonly section: Section;
  readonly type: FindingType;
  readonly severity: Severity;
  /** The component it belongs to ('crds' for CRDs given with --from-crds/--to-crds that no component brings). */
  readonly component: ComponentName | 'crds';
  /** What it is about: `CRD nicclusterpolicies.mellanox.com v1alpha1`, `NicClusterPolicy nic-cluster-policy`, ... */
  readonly subject: string;
  /** The field path, where there is one (`spec.global`, `spec.podSets`). */
  readonly path?: string;
  /** The kind of stricter or relaxed change (`maxItems`, `cel`, `required`, `list-type`, ...). */
  readonly change?: string;
  readonly from?: unknown;
  readonly to?: unknown;
  readonly message: string;
  /** The files it read (relative to the folder named in the plan's `roots`, or as given on the command line). */
  readonly files: readonly string[];
}

/** A reference to an object of the order: what to apply, and where it comes from. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  /** `file <path>` (a CRD file), or `render <what>` (the toolkit's render, a chart's helm render). */
  readonly source: string;
  /** The key of the object in the manifests planUpgrade returns beside the plan. */
  readonly ref: string;
}

/** One step of an upgrade, applied by one Argo CD Application in its wave (or outside Argo CD). */
export interface OrderStep {
  readonly step: number;
  /** The Argo CD sync wave; null: outside Argo CD (a pre-installed operator, upgraded by its owner). */
  readonly wave: number | null;
  /** The Application that applies it; null: outside Argo CD. */
  readonly application: string | null;
  readonly what: string;
  readonly objects: readonly ObjectRef[];
  /**
   * What the step's owner deletes (an operator's `helm upgrade` deletes what its old chart rendered and the new one
   * does not, but an object whose live copy says `helm.sh/resource-policy: keep`). Absent: nothing.
   */
  readonly deletes?: readonly ObjectRef[];
  /** The command of a step outside Argo CD, as argv (`helm upgrade gpu-operator gpu-operator --repo ... --set ...`). */
  readonly command?: readonly string[];
}

/** The order of one component's upgrade, as data a control plane test can apply. */
export interface ComponentOrder {
  readonly component: ComponentName;
  /** The cluster before: the old CRDs and the CRs rendered at the old release. */
  readonly before: readonly ObjectRef[];
  /** The planned steps, in order. */
  readonly steps: readonly OrderStep[];
  /** An order the API server refuses (the new CRs before their new CRDs), when there is one, and why. */
  readonly rejected?: { readonly steps: readonly OrderStep[]; readonly why: string };
}

/**
 * The cluster as read (`upgrade-plan --kubeconfig` or `--snapshot`): the old end of each planned component is what it
 * runs, not a render with the chart's defaults.
 */
export interface LiveCluster {
  /** The API server's URL or the snapshot file, for messages. */
  readonly source: string;
  /** What was read: the CRDs, the operators' CRs, their Deployments and DaemonSets. */
  readonly objects: readonly Manifest[];
  /** The release each operator runs, where the cluster tells (src/preflight/operator-releases.ts), and how it tells. */
  readonly releases: Readonly<Partial<Record<'gpuOperator' | 'networkOperator' | 'kueue', LiveRelease>>>;
}

/** The release an operator runs, as the cluster shows it. */
export interface LiveRelease {
  readonly version?: string;
  readonly evidence: string;
  /** The namespace it runs in (its Deployment's). */
  readonly namespace?: string;
  /** Its Helm release, from the annotations Helm writes on its Deployment. */
  readonly helmRelease?: string;
}

/** What one component goes from and to. */
export interface ComponentChange {
  readonly component: ComponentName;
  readonly from: string;
  readonly to: string;
  /** The install: an Application of this description (`managed`), or not (the chart rendered with its defaults). */
  readonly install: 'managed' | 'not-managed';
}

/** The plan: what changes, the findings of each section, the order. JSON as `upgrade-plan --format json` prints it. */
export interface UpgradePlan {
  readonly cluster?: string;
  /** `component`: one release pair per component; `toolkit`: another toolkit's render against this one's; `crds`: CRDs only. */
  readonly mode: 'component' | 'toolkit' | 'crds';
  readonly components: readonly ComponentChange[];
  /** The folders the findings' files are relative to, by prefix (`upstream-installs/`, `crds/`, `vendored/`). */
  readonly roots: Readonly<Record<string, string>>;
  readonly findings: readonly Finding[];
  readonly order: readonly ComponentOrder[];
  readonly summary: { readonly blockers: number; readonly warnings: number; readonly infos: number };
  /** What the plan could not compare, and why (a CRD not vendored, operands of component mode). */
  readonly notes: readonly string[];
}
