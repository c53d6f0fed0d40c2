import { ClusterModel, QueueModel } from '../../model/model';
import { LABELS } from '../../model/names';
import { parseQuantity } from '../../model/quantity';
import { ClientFile, CLIENT_FILES_FOLDER } from '../../render/client-files';
import { HEADER, toYaml } from '../../render/yaml';
import { DDP_SMOKE_TEST } from '../ddp-smoke-test';
import { gpuPodSize, gpuTolerations, kueueLabels, ncclEnv, podPriorityClassName } from '../gpu-workload';

/** Folder of the SkyPilot client files under dist/<cluster>/tutorials/. */
export const SKYPILOT_FOLDER = 'skypilot';
/**
 * Name of the SkyPilot launcher's ServiceAccount, Role and RoleBinding in every queue namespace: users run
 * `sky launch` with a kubeconfig for it.
 */
export const SKYPILOT_IDENTITY = 'skypilot';
/** Name of the identity SkyPilot's pods run as (`kubernetes.remote_identity`): autodown only. */
export const SKYPILOT_WORKLOAD_IDENTITY = 'skypilot-workload';
/** Name SkyPilot gives the single container of its pods; `pod_config` must use it. */
const SKYPILOT_CONTAINER = 'ray-node';

/**
 * SkyPilot's accelerator names, most specific first: SkyPilot derives a node's GPU type from the
 * nvidia.com/gpu.product label by finding one of these in it (`NVIDIA-H100-80GB-HBM3` -> `H100`).
 */
const SKYPILOT_GPU_NAMES = ['GB200', 'B200', 'B100', 'H200', 'H100', 'GH200', 'A100-80GB', 'A100', 'L40S', 'L40', 'L4', 'A10G', 'A10', 'A40', 'V100', 'T4', 'RTX6000'];

/** The accelerator name a SkyPilot task asks for on this cluster's GPU workers. */
export function skypilotAccelerator(model: ClusterModel): string {
  const product = model.description.nodes.gpuWorkers.gpuProduct.toUpperCase();
  const known = SKYPILOT_GPU_NAMES.find((n) => product.includes(n));
  return known ?? model.description.nodes.gpuWorkers.gpuProduct.replace(/^NVIDIA-/, '');
}

/** The kubeconfig context SkyPilot may use. */
export function skypilotContext(model: ClusterModel): string {
  return model.description.tutorials.skypilot.context ?? model.name;
}

/**
 * Nodes of the tutorial's training task in one queue: as many whole nodes as the queue's nominal
 * GPUs hold, at least two (the point is a multi-node gang; a smaller queue borrows the rest from the
 * cohort) and at most the cluster's GPU workers.
 */
export function skypilotTaskNodes(model: ClusterModel, queue: QueueModel): number {
  const own = Math.floor(queue.quota.gpus / model.capacity.gpusPerNode);
  return Math.min(model.capacity.gpuNodes, Math.max(2, own));
}

/**
 * `~/.sky/config.yaml` for one queue namespace, valid for released SkyPilot (v0.10: no
 * `kubernetes.namespace`, which only later versions accept): the namespace comes from the kubeconfig
 * context named in `allowed_contexts`.
 */
export function skypilotConfig(model: ClusterModel, queue: QueueModel): Record<string, unknown> {
  const d = model.description;
  const labels = kueueLabels(model, queue.namespace, queue.localQueue);
  const priority = podPriorityClassName(model, labels);
  const fabric = model.rdma ? 'infiniband' : 'socket';
  const env = ncclEnv(model, fabric, 'WARN');
  const resources = model.rdma ? { [model.rdma.resourceName]: '1' } : undefined;
  return {
    kubernetes: {
      allowed_contexts: [skypilotContext(model)],
      remote_identity: SKYPILOT_WORKLOAD_IDENTITY,
      // A gang waits in Kueue's queue until the quota admits all of it: never give up provisioning.
      provision_timeout: -1,
      kueue: { local_queue_name: queue.localQueue },
      pod_config: {
        // SkyPilot adds kueue.x-k8s.io/queue-name and the pod-group labels itself; the priority is ours.
        ...(labels[LABELS.priorityClass] ? { metadata: { labels: { [LABELS.priorityClass]: labels[LABELS.priorityClass] } } } : {}),
        spec: {
          ...(priority ? { priorityClassName: priority } : {}),
          tolerations: gpuTolerations(model),
          containers: [{
            name: SKYPILOT_CONTAINER,
            env,
            // RDMA memory registration needs unlimited locked memory: IPC_LOCK, never privileged.
            securityContext: { allowPrivilegeEscalation: false, ...(model.rdma ? { capabilities: { add: ['IPC_LOCK'] } } : {}) },
            ...(resources ? { resources: { requests: resources, limits: resources } } : {}),
          }],
          volumes: [
            // SkyPilot mounts its "dshm" volume at /dev/shm; this sizes it (NCCL's shared-memory transport).
            { name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: d.samples.ncclTests.shmSize } },
          ],
        },
      },
    },
  };
}

/** The multi-node torchrun task for one queue namespace (`sky launch -c ddp <file>`). */
export function skypilotTask(model: ClusterModel, queue: QueueModel): Record<string, unknown> {
  const d = model.description;
  const gpus = model.capacity.gpusPerNode;
  const size = gpuPodSize(model, gpus);
  return {
    name: 'torchrun-ddp',
    num_nodes: skypilotTaskNodes(model, queue),
    resources: {
      infra: `k8s/${skypilotContext(model)}`,
      accelerators: `${skypilotAccelerator(model)}:${gpus}`,
      cpus: parseQuantity(size.cpu),
      memory: Math.floor(parseQuantity(size.memory) / 2 ** 30),
      image_id: `docker:${d.tutorials.skypilot.image ?? d.samples.pytorch.image}`,
    },
    envs: { STEPS: String(d.samples.pytorch.steps) },
    run: [
      'set -e',
      "cat > ddp_smoke_test.py <<'PY'",
      DDP_SMOKE_TEST.trimEnd(),
      'PY',
      'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)',
      'torchrun --nnodes="$SKYPILOT_NUM_NODES" --nproc_per_node="$SKYPILOT_NUM_GPUS_PER_NODE" --node_rank="$SKYPILOT_NODE_RANK" \\',
      '  --master_addr="$MASTER_ADDR" --master_port=29500 ddp_smoke_test.py',
      '',
    ].join('\n'),
  };
}


/** The client files of the SkyPilot tutorial: a config and a task per queue namespace. */
export function skypilotClientFiles(model: ClusterModel): ClientFile[] {
  if (!model.description.tutorials.skypilot.enabled) return [];
  return model.queueing.queues.flatMap((q) => {
    const dir = `${SKYPILOT_FOLDER}/${q.namespace}`;
    return [{
      path: `${dir}/config.yaml`,
      content: `${HEADER}# SkyPilot configuration for namespace ${q.namespace}: copy to ~/.sky/config.yaml.\n${toYaml(skypilotConfig(model, q))}`,
      description: `SkyPilot config (\`~/.sky/config.yaml\`) for namespace \`${q.namespace}\`, LocalQueue \`${q.localQueue}\``,
    }, {
      path: `${dir}/train.yaml`,
      content: `${HEADER}# Multi-node torchrun over ${model.rdma ? 'InfiniBand' : 'the pod network'}: sky launch -c ddp ${CLIENT_FILES_FOLDER}/${dir}/train.yaml\n${toYaml(skypilotTask(model, q))}`,
      description: `SkyPilot task: ${skypilotTaskNodes(model, q)} x ${skypilotAccelerator(model)}:${model.capacity.gpusPerNode} torchrun training in \`${q.namespace}\``,
    }];
  });
}
