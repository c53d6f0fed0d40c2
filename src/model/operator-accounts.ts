import { helmFullname } from './helm-names';
import { NAMESPACES, RELEASES } from './names';
import { VERSIONS } from '../versions';

/**
 * ServiceAccounts of the operators, as their pinned manifests name them (a test reads them from
 * ../shared/upstream-installs): the MPI Operator's and the Training Operator's kustomize bases,
 * Kueue's chart (`<fullname>-controller-manager`).
 */
export const OPERATOR_SERVICE_ACCOUNTS = {
  mpiOperator: { namespace: NAMESPACES.mpiOperator, name: 'mpi-operator' },
  trainingOperator: { namespace: NAMESPACES.trainingOperator, name: 'training-operator' },
  kueue: { namespace: NAMESPACES.kueue, name: `${helmFullname(RELEASES.kueue, VERSIONS.kueue.chart)}-controller-manager` },
} as const;
