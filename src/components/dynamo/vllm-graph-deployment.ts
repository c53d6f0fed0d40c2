import { Construct } from 'constructs';
import {
  DynamoGraphDeploymentV1Beta1, DynamoGraphDeploymentV1Beta1SpecBackendFramework, DynamoGraphDeploymentV1Beta1SpecComponents,
  DynamoGraphDeploymentV1Beta1SpecComponentsPodTemplate, DynamoGraphDeploymentV1Beta1SpecComponentsType as ComponentType,
  DynamoGraphDeploymentV1Beta1SpecComponentsPodTemplateSpecContainersResourcesLimits as Limits,
  DynamoGraphDeploymentV1Beta1SpecComponentsPodTemplateSpecContainersResourcesRequests as Requests,
} from '../../../imports/dynamo-nvidia.com';
import { ClusterModel } from '../../model/model';
import { RESOURCES } from '../../model/names';
import {
  assertPinnedImage, gpuNodeSelector, gpuPodResources, gpuTolerations, kueueLabels, podPriorityClassName, quantitiesOf,
} from '../gpu-workload';

/** How the vLLM workers split the work. */
export type DynamoServing = 'aggregated' | 'disaggregated';

export interface VllmGraphDeploymentProps {
  /** The cluster: sizes, placement, fabric and queues come from it. */
  readonly model: ClusterModel;
  /** DynamoGraphDeployment name. */
  readonly name: string;
  /** Namespace (must have a LocalQueue). */
  readonly namespace: string;
  /** LocalQueue the component pods join. */
  readonly queue: string;
  /** Kueue priority class. @default the description's default priority */
  readonly priority?: string;
  /** Dynamo vLLM runtime image, pinned. */
  readonly image: string;
  /** Hugging Face id of the served model. */
  readonly servedModel: string;
  /**
   * "aggregated": one worker does prefill and decode. "disaggregated": a prefill and a decode worker,
   * which move the KV cache between them over RDMA (NIXL), so they request the RDMA device and IPC_LOCK.
   */
  readonly serving: DynamoServing;
}

/** CPU and memory of the frontend (OpenAI-compatible HTTP server and router; no GPU). */
const FRONTEND_RESOURCES = { [RESOURCES.cpu]: '2', [RESOURCES.memory]: '8Gi' };
/**
 * Secret with HF_TOKEN for gated models; optional, so a public model needs none. Upstream's examples take the whole
 * Secret with envFrom; here only its HF_TOKEN key: the tenant guardrails refuse an envFrom without a prefix, whose
 * keys admission cannot see (one could be NVIDIA_VISIBLE_DEVICES).
 */
const HF_TOKEN_SECRET = { name: 'hf-token-secret', key: 'HF_TOKEN' } as const;
/** Where upstream's examples run the workers: the image's copy of examples/backends/vllm. */
const WORKER_DIR = '/workspace/examples/backends/vllm';
/**
 * vLLM's KV connector for disaggregated serving, on both the prefill and the decode worker: Dynamo's
 * vLLM backend has no default connector (only prefill refuses to start without one), and a decode
 * worker without NIXL never receives the prefill worker's KV cache.
 */
const NIXL_KV_TRANSFER = ['--kv-transfer-config', JSON.stringify({ kv_connector: 'NixlConnector', kv_role: 'kv_both' })];

/**
 * A Dynamo vLLM inference graph (DynamoGraphDeployment nvidia.com/v1beta1): an OpenAI-compatible
 * frontend and one GPU worker (aggregated), or a prefill and a decode worker (disaggregated). The
 * Dynamo operator has no Kueue integration: every component pod carries the queue label, so Kueue's
 * pod integration admits the pods one by one within the namespace's quota.
 */
export class VllmGraphDeployment extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: VllmGraphDeploymentProps) {
    super(scope, id);
    const { model } = props;
    assertPinnedImage('image', props.image);
    if (props.servedModel.trim() === '') throw new Error('servedModel: expected a Hugging Face model id, got ""');
    const rdma = props.serving === 'disaggregated';
    if (rdma && !model.rdma) throw new Error('serving: "disaggregated" moves the KV cache over RDMA, but the cluster has no InfiniBand (network.infiniband)');
    const labels = kueueLabels(model, props.namespace, props.queue, props.priority);
    const priorityClassName = podPriorityClassName(model, labels);
    this.name = props.name;

    const pod = (resources: Record<string, string>, gpu: boolean, args?: string[]): DynamoGraphDeploymentV1Beta1SpecComponentsPodTemplate => ({
      metadata: { labels: { ...labels } },
      spec: {
        ...(priorityClassName ? { priorityClassName } : {}),
        ...(gpu ? { nodeSelector: gpuNodeSelector(model) } : {}),
        tolerations: gpuTolerations(model),
        containers: [{
          name: 'main',
          image: props.image,
          ...(args ? { command: ['python3', '-m', 'dynamo.vllm'], args, workingDir: WORKER_DIR } : {}),
          env: [{ name: HF_TOKEN_SECRET.key, valueFrom: { secretKeyRef: { name: HF_TOKEN_SECRET.name, key: HF_TOKEN_SECRET.key, optional: true } } }],
          resources: { requests: quantitiesOf(resources, Requests.fromString), limits: quantitiesOf(resources, Limits.fromString) },
          // RDMA memory registration needs unlimited locked memory: IPC_LOCK, never privileged.
          securityContext: { allowPrivilegeEscalation: false, ...(gpu && rdma ? { capabilities: { add: ['IPC_LOCK'] } } : {}) },
        }],
      },
    });
    const worker = (name: string, type: ComponentType, extraArgs: string[]): DynamoGraphDeploymentV1Beta1SpecComponents => ({
      name,
      type,
      replicas: 1,
      podTemplate: pod(gpuPodResources(model, 1, rdma), true, ['--model', props.servedModel, ...extraArgs]),
    });

    const components: DynamoGraphDeploymentV1Beta1SpecComponents[] = [
      { name: 'Frontend', type: ComponentType.FRONTEND, replicas: 1, podTemplate: pod(FRONTEND_RESOURCES, false) },
      ...(rdma
        ? [
          worker('VllmDecodeWorker', ComponentType.DECODE, ['--disaggregation-mode', 'decode', ...NIXL_KV_TRANSFER]),
          worker('VllmPrefillWorker', ComponentType.PREFILL, ['--disaggregation-mode', 'prefill', ...NIXL_KV_TRANSFER]),
        ]
        : [worker('VllmDecodeWorker', ComponentType.WORKER, [])]),
    ];
    new DynamoGraphDeploymentV1Beta1(this, 'Resource', {
      metadata: { name: props.name, namespace: props.namespace },
      spec: { backendFramework: DynamoGraphDeploymentV1Beta1SpecBackendFramework.VLLM, components },
    });
  }
}
