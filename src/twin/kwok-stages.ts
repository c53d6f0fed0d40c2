import { stringify } from 'yaml';
import { helmFullname } from '../model/helm-names';
import { RELEASES } from '../model/names';
import { VERSIONS } from '../versions';

/**
 * KWOK stages of the twin besides KWOK's own (binary.ts KWOK_STAGES): what an operator that does not run in the twin
 * writes into the status of the objects Argo CD syncs, where the status depends on the object alone (a stage reads
 * the one object it acts on; operator-stand-ins.ts writes what depends on other objects).
 *
 * Imports no test framework.
 */

/**
 * The VictoriaMetrics operator v0.74.1 (VictoriaMetrics/operator tag v0.74.1, commit
 * 5e62d6bf559fc63d556d16e8c8081643227a248c), for the scrape objects and rules a cluster's pre-installed monitoring
 * stack picks up: once its VMAgent (scrapes) or VMAlert (rules) has parsed and applied a child object,
 * internal/controller/operator/factory/reconcile/status.go (`applyChildStatusCondition`,
 * `updateChildStatusConditions`, `writeAggregatedStatus`) writes the child's status: a condition
 * `<parent>.<namespace>.<kind>.victoriametrics.com/Applied` True with reason ConfigParsedAndApplied and the child's
 * generation, status.observedGeneration the child's generation, and updateStatus `operational` (applied on at least
 * one parent). Stands in for the pre-installed stack's VMAgent and VMAlert (victoria-metrics-k8s-stack, release
 * RELEASES.monitoring, named by the chart's fullname in the monitoring namespace) selecting every such object, and for
 * the operator's parsing of it: an object the operator could not parse would be `failed` there, and is `operational`
 * here. Fires on every generation the status has not observed yet. Only for the kinds `served` (KWOK exits on a stage
 * of a kind the API server does not serve).
 */
export function victoriaMetricsStages(monitoringNamespace: string, served: (kind: string) => boolean): string[] {
  const fullname = helmFullname(RELEASES.monitoring, VERSIONS.victoriaMetricsK8sStack.chart);
  const parents: Record<string, string> = {
    VMServiceScrape: 'vmagent',
    VMPodScrape: 'vmagent',
    VMNodeScrape: 'vmagent',
    VMProbe: 'vmagent',
    VMScrapeConfig: 'vmagent',
    VMStaticScrape: 'vmagent',
    VMRule: 'vmalert',
  };
  return Object.entries(parents).filter(([kind]) => served(kind)).map(([kind, parent]) => stringify({
    apiVersion: 'kwok.x-k8s.io/v1alpha1',
    kind: 'Stage',
    metadata: { name: `victoriametrics-${kind.toLowerCase()}-applied` },
    spec: {
      resourceRef: { apiGroup: 'operator.victoriametrics.com/v1beta1', kind },
      selector: {
        matchExpressions: [
          { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' },
          { key: '.status.observedGeneration == .metadata.generation', operator: 'In', values: ['false'] },
        ],
      },
      next: {
        statusTemplate: [
          '{{ $now := Now }}',
          'updateStatus: operational',
          'observedGeneration: {{ .metadata.generation }}',
          'conditions:',
          `- type: ${fullname}.${monitoringNamespace}.${parent}.victoriametrics.com/Applied`,
          '  status: "True"',
          '  reason: ConfigParsedAndApplied',
          '  observedGeneration: {{ .metadata.generation }}',
          '  lastTransitionTime: {{ $now | Quote }}',
          '  lastUpdateTime: {{ $now | Quote }}',
        ].join('\n'),
      },
    },
  }));
}

/**
 * The kubelet of a Node that comes back (kubernetes v1.36.3, pkg/kubelet/status/status_manager.go `syncBatch` at :1131,
 * `needsReconcile` at :1269-1295): a pod status in the API that differs from the kubelet's own is written again, so a
 * Running pod whose containers are ready and that the node lifecycle controller marked not ready while the Node was
 * NotReady (pkg/controller/util/node/controller_utils.go `MarkPodsNotReady`: the Ready condition False, nothing else)
 * turns Ready again once its Node is back. KWOK's own pod stages act on Pending pods only, and KWOK plays no stage for
 * the pods of a Node whose Lease it does not hold (a Node made NotReady by taking its Lease: the kubelet gone).
 */
export function kubeletPodReadyAgainStage(): string {
  const condition = (type: string) => `.status.conditions.[] | select( .type == "${type}" ) | .status`;
  return stringify({
    apiVersion: 'kwok.x-k8s.io/v1alpha1',
    kind: 'Stage',
    metadata: { name: 'pod-ready-again' },
    spec: {
      resourceRef: { apiGroup: 'v1', kind: 'Pod' },
      selector: {
        matchExpressions: [
          { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' },
          // a pod held back by a readiness gate stays not ready: the kubelet turns it Ready only once its gates are true
          { key: '.spec.readinessGates', operator: 'DoesNotExist' },
          { key: '.status.phase', operator: 'In', values: ['Running'] },
          { key: condition('Ready'), operator: 'In', values: ['False'] },
          { key: condition('ContainersReady'), operator: 'In', values: ['True'] },
        ],
      },
      next: {
        statusTemplate: [
          '{{ $now := Now }}',
          'conditions:',
          '{{ range .status.conditions }}',
          '- type: {{ .type | Quote }}',
          '{{ if eq .type "Ready" }}',
          '  status: "True"',
          '  lastTransitionTime: {{ $now | Quote }}',
          '{{ else }}',
          '  status: {{ .status | Quote }}',
          '  lastTransitionTime: {{ .lastTransitionTime | Quote }}',
          '{{ end }}',
          '{{ end }}',
        ].join('\n'),
      },
    },
  });
}
