import { argocd } from './argocd/chart';
import { ComponentDefinition, WiringDefinition } from './component';
import { dashboard } from './dashboard/chart';
import { dynamo } from './dynamo/chart';
import { gitops } from './gitops/chart';
import { gpuOperator } from './gpu-operator/chart';
import { kueue } from './kueue/chart';
import { monitoring } from './monitoring/chart';
import { multiKueue } from './multikueue/chart';
import { networkOperator } from './network-operator/chart';
import { samples } from './samples/chart';
import { skypilot } from './skypilot/chart';
import { storage } from './storage/chart';
import { tenants } from './tenants/chart';

/**
 * Every component, in dependency order: Argo CD itself, operators' custom resources, then queues, then what uses
 * them (tenants, monitoring), samples last. Each renders into dist/<cluster>/<folder>/; the
 * Argo CD wiring derives the sync waves from what the folders contain, not from this order.
 */
export const COMPONENTS: readonly ComponentDefinition[] = [
  argocd,
  storage,
  gpuOperator,
  networkOperator,
  kueue,
  multiKueue,
  tenants,
  monitoring,
  dashboard,
  skypilot,
  samples,
  dynamo,
];

/** Steps that wire the rendered components together (Argo CD), after all components. */
export const WIRING: readonly WiringDefinition[] = [
  gitops,
];
