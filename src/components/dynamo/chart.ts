import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { VllmGraphDeployment } from './vllm-graph-deployment';
import { ClusterModel } from '../../model/model';
import { NAMESPACES } from '../../model/names';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';

/** Folder of the Dynamo samples (synced by hand only, like samples/). */
export const DYNAMO_FOLDER = 'dynamo';

/** Tenant name the Dynamo samples use by default, when a tenant has it. */
export const INFERENCE_TENANT = 'inference';

/** Where the Dynamo samples run: the inference tenant's namespace and queue, else namespace "default". */
export interface DynamoTarget {
  readonly namespace: string;
  readonly queue: string;
  /** The tenant, when the samples run in a tenant's namespace. */
  readonly tenant?: string;
}

/**
 * The inference tenant: tutorials.dynamo.tenant, else the tenant named "inference"; without one the
 * samples run in namespace "default" on the default queue.
 */
export function dynamoTarget(model: ClusterModel): DynamoTarget {
  const wanted = model.description.tutorials.dynamo.tenant ?? INFERENCE_TENANT;
  const t = model.tenants.find((x) => x.name === wanted);
  if (t) return { namespace: t.namespace, queue: t.localQueue, tenant: t.name };
  if (model.description.tutorials.dynamo.tenant !== undefined) throw new Error(`tutorials.dynamo.tenant: no tenant is named "${wanted}"`);
  return { namespace: NAMESPACES.default, queue: model.queueing.defaultQueue.localQueue };
}

/** Names of the two samples. */
export const DYNAMO_SAMPLES = { aggregated: 'vllm-agg', disaggregated: 'vllm-disagg' } as const;

/**
 * NVIDIA Dynamo serving samples: an aggregated vLLM graph (frontend + one GPU worker) and, with
 * InfiniBand, a disaggregated one (prefill + decode worker over RDMA). Applied by hand, never synced
 * automatically: each holds GPUs of the inference tenant's quota while it runs.
 */
export class DynamoSamplesChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const model = props.model;
    const t = model.description.tutorials.dynamo;
    const target = dynamoTarget(model);
    const common = { model, namespace: target.namespace, queue: target.queue, image: t.image, servedModel: t.model };
    new VllmGraphDeployment(this, 'Aggregated', { ...common, name: DYNAMO_SAMPLES.aggregated, serving: 'aggregated' });
    if (model.rdma) new VllmGraphDeployment(this, 'Disaggregated', { ...common, name: DYNAMO_SAMPLES.disaggregated, serving: 'disaggregated' });
  }
}

export const dynamo: ComponentDefinition = {
  folder: DYNAMO_FOLDER,
  description: 'NVIDIA Dynamo samples applied by hand, never synced: aggregated and disaggregated (RDMA) vLLM DynamoGraphDeployments, queued through Kueue',
  build: (scope: Construct, model: ClusterModel) =>
    (model.description.tutorials.dynamo.enabled && model.description.installs.dynamo !== 'none' ? new DynamoSamplesChart(scope, DYNAMO_FOLDER, { model }) : undefined),
};
