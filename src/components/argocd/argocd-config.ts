import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { LABELS } from '../../model/names';

/**
 * The label every object of Argo CD's install carries (all 59 of the cluster-install at the pinned tag): argocd-cm
 * needs it (Argo CD reads its settings only from ConfigMaps so labelled), and the folder's Namespace has it too.
 */
export const ARGOCD_PART_OF = { [LABELS.partOf]: 'argocd' } as const;

/** argocd-cm's name and the labels Argo CD finds its settings by (it watches ConfigMaps labelled part-of: argocd). */
export const ARGOCD_CM = { name: 'argocd-cm', labels: { [LABELS.name]: 'argocd-cm', ...ARGOCD_PART_OF } } as const;

export interface ArgocdConfigProps {
  /** Namespace Argo CD runs in. */
  readonly namespace: string;
  /** Entries of argocd-cm (`resource.customizations.health.<group>_<kind>` scripts). */
  readonly data: Readonly<Record<string, string>>;
}

/**
 * The argocd-cm entries this toolkit sets. In the argocd folder it is a strategic-merge patch of the upstream
 * install's argocd-cm, whose own entries (resource.exclusions, resource.customizations.ignoreResourceUpdates.*) stay;
 * on a fleet hub it is applied on top of the hub's own argocd-cm.
 */
export class ArgocdConfig extends Construct {
  constructor(scope: Construct, id: string, props: ArgocdConfigProps) {
    super(scope, id);
    const cm = new k8s.KubeConfigMap(this, 'Resource', {
      metadata: { name: ARGOCD_CM.name, namespace: props.namespace },
      data: { ...props.data },
    });
    // After the chart's labels: Argo CD reads argocd-cm only with its own part-of label.
    for (const [k, v] of Object.entries(ARGOCD_CM.labels)) cm.metadata.addLabel(k, v);
  }
}
