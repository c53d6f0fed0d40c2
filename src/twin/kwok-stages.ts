import { parse, stringify } from 'yaml';
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
 * The label the MPI Operator v0.8.2 puts on the pod template of an MPIJob's launcher Job, `launcher` (kubeflow/mpi-operator
 * tag v0.8.2: pkg/apis/kubeflow/v2beta1/constants.go JobRoleLabel, set by pkg/controller/mpi_job_controller.go
 * newLauncherPodTemplate from defaultLabels).
 */
export const MPI_JOB_ROLE_LABEL = 'training.kubeflow.org/job-role';

/**
 * KWOK's own pod-complete stage (binary.ts KWOK_STAGES.podComplete: the pod of a Job Succeeded as soon as it runs), but
 * for the pod of an MPIJob's launcher, which stays Running, as `mpirun` runs on a cluster until the job's work is done:
 * no work runs on a twin, so the launcher runs until the MPIJob is deleted, suspended or evicted (its Job's pod deleted
 * then). Completed at once, every MPIJob Kueue admits would be Succeeded and its Workload Finished a second later, and
 * a change could never be rehearsed against an admitted job (rehearse --from: kept over its quota, evicted by
 * HoldAndDrain). Every other pod of a Job completes as KWOK's stage says (a hook's Job, a sample Job, the Job controller's
 * pods of a CronJob).
 */
export function podCompleteButMpiLaunchers(podComplete: string): string {
  const stage = parse(podComplete) as { spec: { selector: { matchExpressions: Record<string, unknown>[] } } };
  stage.spec.selector.matchExpressions.push({ key: `.metadata.labels["${MPI_JOB_ROLE_LABEL}"]`, operator: 'NotIn', values: ['launcher'] });
  return stringify(stage).trim();
}

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
