import { PreflightFinding, PreflightRule } from './rule';

/** Kinds every rule family needs; a state without any of them was read incompletely. */
const NEEDED: readonly { group: string; kind: string; command: string; rules: string }[] = [
  { group: '', kind: 'Node', command: 'kubectl get nodes -o yaml', rules: 'drift-*' },
  { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', command: 'kubectl get customresourcedefinitions -o yaml', rules: 'api-*' },
  { group: 'storage.k8s.io', kind: 'StorageClass', command: 'kubectl get storageclasses -o yaml', rules: 'immutable-field, storageclass-default' },
  { group: '', kind: 'Service', command: 'kubectl get services -A -o yaml', rules: 'nodeport-allocated' },
];

const snapshotIncomplete: PreflightRule = {
  id: 'snapshot-incomplete',
  family: 'state',
  summary: 'the cluster state has no objects of a kind the rules need (nodes, CRDs, StorageClasses, Services): those rules could not check anything',
  // a live read lists every kind (or fails): a kind with no object is the cluster's, not a snapshot's gap
  check: ({ state }) => (state.live ? [] : NEEDED).filter((n) => !state.has(n.group, n.kind)).map((n): PreflightFinding => ({
    rule: 'snapshot-incomplete',
    severity: 'warning',
    object: `${n.kind} (none)`,
    message: `${state.source} holds no ${n.kind}: ${n.rules} checked nothing`,
    fix: `add the output of ${n.command} to the snapshot (docs/pre-installed-cluster.md)`,
  })),
};

export const STATE_RULES: readonly PreflightRule[] = [snapshotIncomplete];
