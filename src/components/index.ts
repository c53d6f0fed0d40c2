import { ComponentDefinition, WiringDefinition } from './component';
import { dashboard } from './dashboard/chart';
import { gitops } from './gitops/chart';
import { gpuOperator } from './gpu-operator/chart';
import { kueue } from './kueue/chart';
import { monitoring } from './monitoring/chart';
import { networkOperator } from './network-operator/chart';
import { samples } from './samples/chart';
import { storage } from './storage/chart';
import { tenants } from './tenants/chart';

/**
 * Every component, in dependency order (the order of their Argo CD sync waves). Each renders
 * into dist/<cluster>/<folder>/.
 */
export const COMPONENTS: readonly ComponentDefinition[] = [
  storage,
  gpuOperator,
  networkOperator,
  monitoring,
  dashboard,
  samples,
  kueue,
  tenants,
];

/** Steps that wire the rendered components together (Argo CD), after all components. */
export const WIRING: readonly WiringDefinition[] = [
  gitops,
];
