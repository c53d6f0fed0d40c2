import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import {
  assertFabric, assertGpusPerNode, assertNodeCount, assertPinnedImage, assertShmFits, WorkloadEnvVar, gpuNodeSelector, gpuPodResources,
  gpuTolerations, kueueLabels, podPriorityClassName, ncclEnv, QueuedJobProps, onePodPerNode, quantitiesOf,
  workloadSecurityContext, SHM_PATH, SHM_VOLUME,
} from '../gpu-workload';
import { NcclDebug } from './nccl-test';
import {
  PyTorchJob,
  PyTorchJobSpecPytorchReplicaSpecs,
  PyTorchJobSpecPytorchReplicaSpecsTemplateSpecContainersResourcesLimits as Limits,
  PyTorchJobSpecPytorchReplicaSpecsTemplateSpecContainersResourcesRequests as Requests,
  PyTorchJobSpecPytorchReplicaSpecsTemplateSpecVolumesEmptyDirSizeLimit as SizeLimit,
} from '../../../imports/pytorchjob-kubeflow.org';
import { LABELS, NAMESPACES } from '../../model/names';

/** Elastic training: the job may run on any number of nodes between the bounds. */
export interface PyTorchElasticProps {
  /** Fewest nodes the job runs on. */
  readonly minNodes: number;
  /** Most nodes the job runs on. */
  readonly maxNodes: number;
  /** Restarts of the worker group before the job fails. @default 3 */
  readonly maxRestarts?: number;
}

/** A PyTorch training job; `name` names the PyTorchJob and its Services (a DNS-1035 label), `image` holds PyTorch. */
export interface PyTorchTrainingJobProps extends QueuedJobProps {
  /**
   * Python source of the training script: rendered into a ConfigMap `<name>-script` and run as
   * `torchrun <script> <scriptArgs>`. Give either `script` or `entrypoint`.
   * @default none
   */
  readonly script?: string;
  /** Arguments of `script`. @default [] */
  readonly scriptArgs?: readonly string[];
  /** torchrun arguments for a script already in the image (e.g. ["/workspace/train.py", "--epochs=1"]). @default none */
  readonly entrypoint?: readonly string[];
  /** Extra environment of the training containers. @default [] */
  readonly env?: readonly WorkloadEnvVar[];
  /** GPU nodes of the job (one pod per node: the master and nodes - 1 workers). @default model.capacity.gpuNodes */
  readonly nodes?: number;
  /** GPUs of each pod; torchrun starts one process per GPU (nprocPerNode). @default model.capacity.gpusPerNode */
  readonly gpusPerNode?: number;
  /** Elastic training (workers only, c10d rendezvous); `nodes` must lie within the bounds. @default not elastic */
  readonly elastic?: PyTorchElasticProps;
  /** NCCL_DEBUG. @default "WARN" */
  readonly ncclDebug?: NcclDebug;
  /** Size of the memory-backed /dev/shm (DataLoader workers and NCCL use it). @default "64Gi" */
  readonly shmSize?: string;
  /** Job retries. @default 2 */
  readonly backoffLimit?: number;
}

/** The Training Operator finds the rendezvous port by this container port name. */
const PYTORCH_PORT = { name: 'pytorchjob-port', containerPort: 23456, protocol: 'TCP' };
/** The Training Operator injects its environment into the container of this name. */
const PYTORCH_CONTAINER = 'pytorch';
const SCRIPT_DIR = '/opt/training';
const SCRIPT_FILE = 'train.py';

/**
 * A distributed PyTorch training job as a PyTorchJob (kubeflow.org/v1): one pod per GPU node
 * holding all its GPUs, `torchrun` starting one process per GPU, wired for InfiniBand, queued
 * through Kueue.
 */
export class PyTorchTrainingJob extends Construct {
  public readonly name: string;
  public readonly namespace: string;
  public readonly nodes: number;
  public readonly gpusPerNode: number;
  /** Training processes: nodes x GPUs per node. */
  public readonly worldSize: number;
  public readonly pytorchJob: PyTorchJob;

  constructor(scope: Construct, id: string, props: PyTorchTrainingJobProps) {
    super(scope, id);
    const model = props.model;
    this.name = props.name;
    this.namespace = props.namespace ?? NAMESPACES.default;
    this.nodes = props.nodes ?? model.capacity.gpuNodes;
    this.gpusPerNode = props.gpusPerNode ?? model.capacity.gpusPerNode;
    const shmSize = props.shmSize ?? '64Gi';
    const fabric = model.rdma ? 'infiniband' : 'socket';

    if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(this.name) || this.name.length > 56) {
      // "-script" (7 characters) is appended for the ConfigMap; Services are named after the pods.
      throw new Error(`name: expected a DNS-1035 label of at most 56 characters, got "${this.name}"`);
    }
    assertPinnedImage('image', props.image);
    assertNodeCount(model, 'nodes', this.nodes);
    assertGpusPerNode(model, 'gpusPerNode', this.gpusPerNode);
    assertFabric(model, fabric, this.nodes);
    assertShmFits(model, 'shmSize', shmSize, this.gpusPerNode);
    if ((props.script === undefined) === (props.entrypoint === undefined)) {
      throw new Error('script, entrypoint: give exactly one (a script to mount, or torchrun arguments for a script in the image)');
    }
    if (props.elastic) {
      const { minNodes, maxNodes } = props.elastic;
      assertNodeCount(model, 'elastic.maxNodes', maxNodes);
      if (!Number.isInteger(minNodes) || minNodes < 1 || minNodes > maxNodes) {
        throw new Error(`elastic.minNodes: expected an integer from 1 to elastic.maxNodes (${maxNodes}), got ${minNodes}`);
      }
      if (this.nodes < minNodes || this.nodes > maxNodes) {
        throw new Error(`nodes: ${this.nodes} lies outside elastic.minNodes..elastic.maxNodes (${minNodes}..${maxNodes})`);
      }
    }
    this.worldSize = this.nodes * this.gpusPerNode;

    let scriptVolume: { name: string; configMap: { name: string } } | undefined;
    if (props.script !== undefined) {
      const configMap = new k8s.KubeConfigMap(this, 'Script', {
        metadata: { name: `${this.name}-script`, namespace: this.namespace },
        data: { [SCRIPT_FILE]: props.script },
      });
      scriptVolume = { name: 'script', configMap: { name: configMap.name } };
    }
    const torchrunArgs = props.entrypoint ?? [`${SCRIPT_DIR}/${SCRIPT_FILE}`, ...(props.scriptArgs ?? [])];

    const podLabels = { [LABELS.name]: this.name, [LABELS.component]: 'worker' };
    const jobLabels = kueueLabels(model, this.namespace, props.queue, props.priority);
    const resources = gpuPodResources(model, this.gpusPerNode, fabric === 'infiniband');
    const replica = (replicas: number): PyTorchJobSpecPytorchReplicaSpecs => ({
      replicas,
      restartPolicy: 'OnFailure',
      template: {
        metadata: { labels: podLabels },
        spec: {
          nodeSelector: gpuNodeSelector(model),
          tolerations: gpuTolerations(model),
          priorityClassName: podPriorityClassName(model, jobLabels),
          // Master and workers share the labels: one training pod per node.
          affinity: onePodPerNode(podLabels),
          containers: [{
            name: PYTORCH_CONTAINER,
            image: props.image,
            // torchrun reads the node count, rank and rendezvous from the PET_* variables the Training Operator sets.
            command: ['torchrun'],
            args: [...torchrunArgs],
            env: [...ncclEnv(model, fabric, props.ncclDebug ?? 'WARN'), ...(props.env ?? [])],
            ports: [{ ...PYTORCH_PORT }],
            securityContext: workloadSecurityContext(fabric),
            resources: {
              requests: quantitiesOf(resources, Requests.fromString),
              limits: quantitiesOf(resources, Limits.fromString),
            },
            volumeMounts: [
              { name: SHM_VOLUME, mountPath: SHM_PATH },
              ...(scriptVolume ? [{ name: scriptVolume.name, mountPath: SCRIPT_DIR, readOnly: true }] : []),
            ],
          }],
          volumes: [
            { name: SHM_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: SizeLimit.fromString(shmSize) } },
            ...(scriptVolume ? [scriptVolume] : []),
          ],
        },
      },
    });

    // Elastic jobs rendezvous among workers (c10d); fixed-size jobs have one master and nodes - 1 workers.
    const replicaSpecs: Record<string, PyTorchJobSpecPytorchReplicaSpecs> = props.elastic
      ? { Worker: replica(this.nodes) }
      : { Master: replica(1), ...(this.nodes > 1 ? { Worker: replica(this.nodes - 1) } : {}) };

    this.pytorchJob = new PyTorchJob(this, 'Resource', {
      metadata: { name: this.name, namespace: this.namespace, labels: jobLabels },
      spec: {
        nprocPerNode: String(this.gpusPerNode),
        elasticPolicy: props.elastic && {
          rdzvBackend: 'c10d',
          minReplicas: props.elastic.minNodes,
          maxReplicas: props.elastic.maxNodes,
          maxRestarts: props.elastic.maxRestarts ?? 3,
        },
        runPolicy: {
          // Created suspended: only Kueue starts it. A Kueue without the pytorchjob integration leaves it
          // suspended instead of letting it run outside the quota.
          suspend: true,
          cleanPodPolicy: 'Running',
          backoffLimit: props.backoffLimit ?? 2,
          ttlSecondsAfterFinished: props.ttlSecondsAfterFinished ?? 86400,
        },
        pytorchReplicaSpecs: replicaSpecs,
      },
    });
  }
}
