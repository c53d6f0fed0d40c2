import { ComponentDefinition, WiringDefinition } from './component';
import { gitops } from './gitops/chart';
import { gpuOperator } from './gpu-operator/chart';
import { networkOperator } from './network-operator/chart';
import { storage } from './storage/chart';

/**
 * Every component, in dependency order (the order of their Argo CD sync waves). Each renders
 * into dist/<cluster>/<folder>/.
 */
export const COMPONENTS: readonly ComponentDefinition[] = [
  storage,
  gpuOperator,
  networkOperator,
];

/** Steps that wire the rendered components together (Argo CD), after all components. */
export const WIRING: readonly WiringDefinition[] = [
  gitops,
];
