import { descriptionEdit, withWhy } from './fixes';
import { PreflightFinding, PreflightRule } from './rule';
import { describeObject } from './util';
import { isDefaultClass } from '../check/storage';
import { valueAt } from '../json';
import { LABELS } from '../model/names';
import { apiGroup, Manifest } from '../render/manifest';

function renderedOf(kind: string, group: string, rendered: readonly { manifest: Manifest }[]): Manifest[] {
  return rendered.map((r) => r.manifest).filter((m) => m.kind === kind && apiGroup(m.apiVersion) === group);
}

/** Resources a ClusterQueue covers (v1beta1 and v1beta2 spell resourceGroups the same). */
function coveredResources(cq: Manifest): string[] {
  const groups = valueAt(cq, ['spec', 'resourceGroups']);
  if (!Array.isArray(groups)) return [];
  return groups.flatMap((g) => {
    const covered = (g as { coveredResources?: unknown }).coveredResources;
    return Array.isArray(covered) ? covered.map(String) : [];
  });
}

/** Cohort of a ClusterQueue: v1beta2 `cohortName`, v1beta1 `cohort`. */
function cohortOf(cq: Manifest): string | undefined {
  const v = valueAt(cq, ['spec', 'cohortName']) ?? valueAt(cq, ['spec', 'cohort']);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

const clusterQueueOutsideCohort: PreflightRule = {
  id: 'quota-outside-cohort',
  family: 'quota',
  summary: 'an existing ClusterQueue outside the rendered cohort covers the same resources: the GPUs would be admitted twice',
  check: ({ rendered, state, model }) => {
    const ours = renderedOf('ClusterQueue', 'kueue.x-k8s.io', rendered);
    if (ours.length === 0) return [];
    const covered = new Set(ours.flatMap(coveredResources));
    const cohort = model.queueing.cohort;
    const defaultLq = state.get('kueue.x-k8s.io', 'LocalQueue', model.queueing.defaultQueue.localQueue, model.queueing.defaultQueue.namespace);
    const out: PreflightFinding[] = [];
    for (const cq of state.list('kueue.x-k8s.io', 'ClusterQueue')) {
      if (ours.some((o) => o.metadata.name === cq.metadata.name) || cohortOf(cq) === cohort) continue;
      const both = coveredResources(cq).filter((r) => covered.has(r));
      if (both.length === 0) continue;
      const preWired = valueAt(defaultLq, ['spec', 'clusterQueue']) === cq.metadata.name;
      out.push({
        rule: 'quota-outside-cohort',
        severity: 'error',
        object: describeObject(cq),
        message: `covers ${both.join(', ')} outside cohort "${cohort}" (its cohort: ${cohortOf(cq) ?? 'none'}); with the rendered ClusterQueues the same capacity is admitted twice`,
        fix: (preWired ? withWhy(descriptionEdit(model.description, { 'queueing.defaultClusterQueue': cq.metadata.name }),
          `the pre-wired default LocalQueue points at it; it joins cohort "${cohort}" with the default quota`) : undefined)
          ?? `kubectl delete clusterqueue ${cq.metadata.name} (after moving its LocalQueues), or describe its team as a tenant`,
      });
    }
    return out;
  },
};

const secondGlobalDefaultPriority: PreflightRule = {
  id: 'priorityclass-global-default',
  family: 'quota',
  summary: 'the render adds a globalDefault PriorityClass while another one exists (the API server refuses a second)',
  check: ({ rendered, state }) => {
    const ours = renderedOf('PriorityClass', 'scheduling.k8s.io', rendered).find((p) => p.globalDefault === true);
    if (!ours) return [];
    return state.list('scheduling.k8s.io', 'PriorityClass')
      .filter((p) => p.globalDefault === true && p.metadata.name !== ours.metadata.name)
      .map((p): PreflightFinding => ({
        rule: 'priorityclass-global-default',
        severity: 'error',
        object: describeObject(p),
        message: `is the cluster's globalDefault PriorityClass; the render adds ${describeObject(ours)} as a second one, which the API server refuses`,
        // the toolkit's own PriorityClasses are never globalDefault (check rule priorityclass-no-global-default): ours came from outside the description
        fix: `drop globalDefault from ${describeObject(ours)} where it is defined, `
          + `or kubectl patch priorityclass ${p.metadata.name} --type merge -p '{"globalDefault":false}'`,
      }));
  },
};

const secondDefaultStorageClass: PreflightRule = {
  id: 'storageclass-default',
  family: 'quota',
  summary: 'another StorageClass the render does not own is marked default: two defaults',
  check: ({ rendered, state }) => {
    const ours = renderedOf('StorageClass', 'storage.k8s.io', rendered);
    const ourDefault = ours.find(isDefaultClass);
    if (!ourDefault) return [];
    return state.list('storage.k8s.io', 'StorageClass')
      .filter((sc) => isDefaultClass(sc) && !ours.some((o) => o.metadata.name === sc.metadata.name))
      .map((sc): PreflightFinding => ({
        rule: 'storageclass-default',
        severity: 'error',
        object: describeObject(sc),
        message: `is marked default; the render marks ${describeObject(ourDefault)} default too, and claims without a class would land on either`,
        fix: `kubectl annotate storageclass ${sc.metadata.name} ${LABELS.defaultStorageClass}=false --overwrite`,
      }));
  },
};

export const QUOTA_RULES: readonly PreflightRule[] = [clusterQueueOutsideCohort, secondGlobalDefaultPriority, secondDefaultStorageClass];
