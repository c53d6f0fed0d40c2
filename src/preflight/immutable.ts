import { descriptionEdit, withWhy } from './fixes';
import { PreflightFinding, PreflightRule } from './rule';
import { describeObject, isTemplate, same, show } from './util';
import { valueAt } from '../json';
import { reclaimPolicyOf } from '../model/model';
import { STORAGE_CLASSES } from '../model/names';
import { apiGroup, Manifest } from '../render/manifest';

/** StorageClass fields the API server refuses to change (the StorageClass must be deleted and recreated). */
const STORAGE_CLASS_IMMUTABLE = ['provisioner', 'parameters', 'reclaimPolicy', 'volumeBindingMode'] as const;

const immutableFields: PreflightRule = {
  id: 'immutable-field',
  family: 'immutable',
  summary: 'a rendered object changes a field the API server refuses to update (LocalQueue spec.clusterQueue, StorageClass provisioner/parameters/reclaimPolicy/volumeBindingMode)',
  check: ({ rendered, state, model }) => {
    const out: PreflightFinding[] = [];
    const livePolicies = liveReclaimPolicies(model.description, rendered.map((r) => r.manifest), state.find.bind(state));
    for (const { manifest: m } of rendered) {
      if (isTemplate(m)) continue;
      const live = state.find(m);
      if (!live) continue;
      if (m.kind === 'LocalQueue' && apiGroup(m.apiVersion) === 'kueue.x-k8s.io') {
        const want = valueAt(m, ['spec', 'clusterQueue']);
        const have = valueAt(live, ['spec', 'clusterQueue']);
        if (!same(want, have)) {
          const { defaultQueue } = model.queueing;
          const isDefault = m.metadata.namespace === defaultQueue.namespace && m.metadata.name === defaultQueue.localQueue;
          out.push({
            rule: 'immutable-field',
            severity: 'error',
            object: describeObject(live),
            message: `spec.clusterQueue is ${show(have)} in the cluster and ${show(want)} in the render; the field is immutable, so the sync fails`,
            fix: (isDefault ? withWhy(descriptionEdit(model.description, { 'queueing.defaultClusterQueue': have }), 'adopt the pre-wired ClusterQueue') : undefined)
              ?? `kubectl -n ${m.metadata.namespace} delete localqueue ${m.metadata.name} (once no workload uses it), then sync`,
          });
        }
      }
      if (m.kind === 'StorageClass' && apiGroup(m.apiVersion) === 'storage.k8s.io') {
        const diffs = STORAGE_CLASS_IMMUTABLE.filter((f) => !same(normalizedStorageField(m, f), normalizedStorageField(live, f)));
        if (diffs.length > 0) {
          const onlyReclaim = diffs.length === 1 && diffs[0] === 'reclaimPolicy';
          out.push({
            rule: 'immutable-field',
            severity: 'error',
            object: describeObject(live),
            message: diffs.map((f) => `${f} is ${show(live[f])} in the cluster and ${show(m[f])} in the render`).join('; ')
              + '; these fields are immutable, so the sync fails',
            fix: `${(onlyReclaim ? descriptionEdit(model.description, { 'storage.reclaimPolicy': livePolicies }) : undefined)?.concat(', or ') ?? ''}`
              + `kubectl delete storageclass ${m.metadata.name} and let Argo CD recreate it (bound volumes keep working; new claims wait for the sync)`,
          });
        }
      }
    }
    return out;
  },
};

/**
 * storage.reclaimPolicy as the cluster has it: each rendered StorageClass's live policy (the described one where the
 * class is not there yet), one value when all agree, else one per class. The same edit for every class that differs,
 * so following one finding's fix never makes another class differ.
 */
function liveReclaimPolicies(
  description: Parameters<typeof descriptionEdit>[0], rendered: readonly Manifest[], find: (m: Manifest) => Manifest | undefined,
): string | Record<string, string> {
  const ours: readonly string[] = Object.values(STORAGE_CLASSES);
  const policies: Record<string, string> = {};
  const classes = rendered.filter((m) => m.kind === 'StorageClass' && ours.includes(m.metadata.name))
    .sort((a, b) => ours.indexOf(a.metadata.name) - ours.indexOf(b.metadata.name));
  for (const m of classes) {
    const live = find(m);
    policies[m.metadata.name] = live ? String(normalizedStorageField(live, 'reclaimPolicy')) : reclaimPolicyOf(description.storage, m.metadata.name);
  }
  const values = [...new Set(Object.values(policies))];
  return values.length === 1 ? values[0] : policies;
}

/** The API server defaults reclaimPolicy to Delete and volumeBindingMode to Immediate; parameters absent equals empty. */
function normalizedStorageField(sc: Manifest, field: (typeof STORAGE_CLASS_IMMUTABLE)[number]): unknown {
  const v = sc[field];
  if (field === 'reclaimPolicy') return v ?? 'Delete';
  if (field === 'volumeBindingMode') return v ?? 'Immediate';
  if (field === 'parameters') return v && Object.keys(v as object).length > 0 ? v : undefined;
  return v;
}

/** Node ports of a Service. */
function nodePorts(svc: Manifest): number[] {
  const ports = valueAt(svc, ['spec', 'ports']);
  return Array.isArray(ports) ? ports.map((p) => (p as { nodePort?: unknown }).nodePort).filter((n): n is number => typeof n === 'number') : [];
}

const nodePortAllocated: PreflightRule = {
  id: 'nodeport-allocated',
  family: 'immutable',
  summary: 'a rendered Service asks for a node port another Service already holds',
  check: ({ rendered, state, model }) => {
    const live = state.list('', 'Service');
    const out: PreflightFinding[] = [];
    for (const { manifest: m } of rendered) {
      if (m.kind !== 'Service' || apiGroup(m.apiVersion) !== '' || isTemplate(m)) continue;
      for (const port of nodePorts(m)) {
        const isSelf = (s: Manifest) => s.metadata.name === m.metadata.name && s.metadata.namespace === m.metadata.namespace;
        const holder = live.find((s) => nodePorts(s).includes(port) && !isSelf(s));
        if (!holder) continue;
        const dashboard = model.description.monitoring.dashboard;
        const isDashboard = m.metadata.namespace === dashboard.namespace && port === dashboard.nodePort;
        out.push({
          rule: 'nodeport-allocated',
          severity: 'error',
          object: describeObject(m),
          message: `node port ${port} is already allocated to ${describeObject(holder)}; the API server refuses the Service`,
          fix: isDashboard
            ? `set monitoring.dashboard.service: preinstalled in the description (the Dashboard already serves port ${port} through ${describeObject(holder)}) or adopt (take that Service over), `
              + 'or monitoring.dashboard.nodePort to a free port'
            : `give ${describeObject(m)} another node port, or kubectl -n ${holder.metadata.namespace} delete service ${holder.metadata.name}`,
        });
      }
    }
    return out;
  },
};

export const IMMUTABLE_RULES: readonly PreflightRule[] = [immutableFields, nodePortAllocated];
