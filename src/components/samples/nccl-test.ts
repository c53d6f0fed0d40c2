import { Construct } from 'constructs';
import {
  MpiJob,
  MpiJobSpecMpiReplicaSpecsTemplateSpecContainersResourcesLimits as Limits,
  MpiJobSpecMpiReplicaSpecsTemplateSpecContainersResourcesRequests as Requests,
  MpiJobSpecMpiReplicaSpecsTemplateSpecVolumesEmptyDirSizeLimit as SizeLimit,
} from '../../../imports/mpijob-kubeflow.org';
import { LABELS, NAMESPACES } from '../../model/names';
import {
  assertFabric, assertGpusPerNode, assertNodeCount, assertNodeName, assertPinnedImage, assertShmFits, gpuNodeSelector,
  gpuPodResources, gpuTolerations, kueueLabels, podPriorityClassName, QueuedJobProps, NcclFabric, ncclEnv, onePodPerNode, quantitiesOf,
  workloadSecurityContext, SHM_PATH, SHM_VOLUME,
} from '../gpu-workload';

/** The nccl-tests binaries a test can run. */
export type NcclBenchmark = 'all_reduce_perf' | 'all_gather_perf' | 'reduce_scatter_perf' | 'alltoall_perf' | 'sendrecv_perf';

export const NCCL_BENCHMARKS: readonly NcclBenchmark[] = ['all_reduce_perf', 'all_gather_perf', 'reduce_scatter_perf', 'alltoall_perf', 'sendrecv_perf'];

export type NcclDebug = 'VERSION' | 'WARN' | 'INFO' | 'TRACE';

/** An nccl-tests run; `name` names the MPIJob and its headless Service (a DNS-1035 label), `image` holds nccl-tests. */
export interface NcclTestProps extends QueuedJobProps {
  /** Worker pods, one per GPU node. @default model.capacity.gpuNodes (every GPU worker) */
  readonly workers?: number;
  /** GPUs of each worker; also `slotsPerWorker`, the MPI ranks per worker. @default model.capacity.gpusPerNode */
  readonly gpusPerWorker?: number;
  /** Pins the (single) worker to this node, for a per-node check. @default any GPU worker */
  readonly nodeName?: string;
  /** @default "all_reduce_perf" */
  readonly benchmark?: NcclBenchmark;
  /** Folder of the nccl-tests binaries in the image. @default "/opt/nccl_tests/build" */
  readonly binaryDir?: string;
  /** Smallest message size (-b), a count with an optional K, M or G. @default "512M" */
  readonly minBytes?: string;
  /** Largest message size (-e). @default "8G" */
  readonly maxBytes?: string;
  /** Message size multiplication factor (-f). @default 2 */
  readonly stepFactor?: number;
  /** Iterations per message size (-n). @default 20 */
  readonly iterations?: number;
  /**
   * Transport between ranks: "infiniband" (RDMA shared device), "socket" (pod network), "nvlink" (one
   * node, NVLink only: GPUs on an NVLink fabric) or "node" (one node, NCCL's own choice, shared memory allowed).
   * @default "infiniband" when the cluster has InfiniBand, else "socket"
   */
  readonly fabric?: NcclFabric;
  /** NCCL_DEBUG. @default "INFO" */
  readonly ncclDebug?: NcclDebug;
  /** Size of the memory-backed /dev/shm of each worker. @default "64Gi" */
  readonly shmSize?: string;
  /** Launcher retries. @default 2 */
  readonly backoffLimit?: number;
  /** Upper bound on the run time from admission. @default no bound */
  readonly activeDeadlineSeconds?: number;
}

const SIZE = /^([1-9][0-9]*)([KMG]?)$/;
const SIZE_UNITS: Record<string, number> = { '': 1, 'K': 2 ** 10, 'M': 2 ** 20, 'G': 2 ** 30 };

/** Bytes of an nccl-tests message size ("512M"), which counts K, M and G in powers of 1024. */
function messageBytes(prop: string, size: string): number {
  const m = SIZE.exec(size);
  if (!m) throw new Error(`${prop}: expected a message size such as "512M" or "8G", got "${size}"`);
  return Number(m[1]) * SIZE_UNITS[m[2]];
}

/** Resources of the launcher: it runs mpirun only, on a CPU, and never takes a GPU. */
const LAUNCHER_RESOURCES = { cpu: '1', memory: '2Gi' };

/**
 * An nccl-tests run as an MPIJob (kubeflow.org/v2beta1): one launcher that runs
 * `mpirun -np <workers x gpusPerWorker>` and one worker per GPU node holding all its GPUs (one
 * rank per GPU), wired for InfiniBand, queued through Kueue.
 */
export class NcclTest extends Construct {
  public readonly name: string;
  public readonly namespace: string;
  public readonly workers: number;
  public readonly gpusPerWorker: number;
  /** MPI ranks: workers x GPUs per worker. */
  public readonly ranks: number;
  public readonly fabric: NcclFabric;
  public readonly mpiJob: MpiJob;

  constructor(scope: Construct, id: string, props: NcclTestProps) {
    super(scope, id);
    const model = props.model;
    this.name = props.name;
    this.namespace = props.namespace ?? NAMESPACES.default;
    this.workers = props.workers ?? model.capacity.gpuNodes;
    this.gpusPerWorker = props.gpusPerWorker ?? model.capacity.gpusPerNode;
    this.fabric = props.fabric ?? (model.rdma ? 'infiniband' : 'socket');
    const benchmark = props.benchmark ?? 'all_reduce_perf';
    const binaryDir = props.binaryDir ?? '/opt/nccl_tests/build';
    const minBytes = props.minBytes ?? '512M';
    const maxBytes = props.maxBytes ?? '8G';
    const stepFactor = props.stepFactor ?? 2;
    const iterations = props.iterations ?? 20;
    const ncclDebug = props.ncclDebug ?? 'INFO';
    const shmSize = props.shmSize ?? '64Gi';

    if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(this.name) || this.name.length > 63) {
      throw new Error(`name: expected a DNS-1035 label of at most 63 characters (it names the job's Service), got "${this.name}"`);
    }
    assertPinnedImage('image', props.image);
    assertNodeCount(model, 'workers', this.workers);
    assertGpusPerNode(model, 'gpusPerWorker', this.gpusPerWorker);
    assertFabric(model, this.fabric, this.workers);
    assertShmFits(model, 'shmSize', shmSize, this.gpusPerWorker);
    if (props.nodeName !== undefined) {
      assertNodeName('nodeName', props.nodeName);
      if (this.workers !== 1) throw new Error(`nodeName: pins one worker to a node, but workers is ${this.workers}`);
    }
    if (!NCCL_BENCHMARKS.includes(benchmark)) throw new Error(`benchmark: expected one of ${NCCL_BENCHMARKS.join(', ')}, got "${benchmark}"`);
    if (messageBytes('minBytes', minBytes) > messageBytes('maxBytes', maxBytes)) {
      throw new Error(`minBytes: ${minBytes} is larger than maxBytes ${maxBytes}`);
    }
    if (!Number.isInteger(stepFactor) || stepFactor < 2) throw new Error(`stepFactor: expected an integer of at least 2, got ${stepFactor}`);
    if (!Number.isInteger(iterations) || iterations < 1) throw new Error(`iterations: expected a positive integer, got ${iterations}`);
    this.ranks = this.workers * this.gpusPerWorker;

    const kueue = kueueLabels(model, this.namespace, props.queue, props.priority);
    const env = [
      ...ncclEnv(model, this.fabric, ncclDebug),
      // The nccl-tests image (ghcr.io/coreweave/nccl-tests, Dockerfile.ubuntu22) ships HPC-X with its NCCL
      // RDMA/SHARP net plugin (/opt/hpcx/nccl_rdma_sharp_plugin/lib on LD_LIBRARY_PATH, which mpirun exports),
      // so NCCL would load that external plugin instead of its built-in IB verbs transport; the image's own
      // non-SHARP MPIJob examples set NCCL_NET_PLUGIN=none for that reason. "none" only skips loading a plugin,
      // so it is harmless for an image without one.
      { name: 'NCCL_NET_PLUGIN', value: 'none' },
    ];
    const workerLabels = { [LABELS.name]: this.name, [LABELS.component]: 'worker' };
    const workerResources = gpuPodResources(model, this.gpusPerWorker, this.fabric === 'infiniband');
    const mpirun = [
      '-np', String(this.ranks),
      '-bind-to', 'none',
      // mpirun starts the ranks over ssh, which does not carry the pod's environment: export it.
      '-x', 'LD_LIBRARY_PATH',
      ...env.flatMap((e) => ['-x', e.name]),
      `${binaryDir}/${benchmark}`,
      '-b', minBytes, '-e', maxBytes, '-f', String(stepFactor), '-g', '1', '-n', String(iterations),
    ];

    this.mpiJob = new MpiJob(this, 'Resource', {
      metadata: { name: this.name, namespace: this.namespace, labels: kueue },
      spec: {
        slotsPerWorker: this.gpusPerWorker,
        launcherCreationPolicy: 'WaitForWorkersReady',
        runPolicy: {
          // Created suspended: only Kueue starts it (a Kueue without the mpijob integration never does).
          suspend: true,
          cleanPodPolicy: 'Running',
          backoffLimit: props.backoffLimit ?? 2,
          ttlSecondsAfterFinished: props.ttlSecondsAfterFinished ?? 86400,
          activeDeadlineSeconds: props.activeDeadlineSeconds,
        },
        mpiReplicaSpecs: {
          Launcher: {
            replicas: 1,
            restartPolicy: 'Never',
            template: {
              metadata: { labels: { [LABELS.name]: this.name, [LABELS.component]: 'launcher' } },
              spec: {
                tolerations: gpuTolerations(model),
                priorityClassName: podPriorityClassName(model, kueue),
                containers: [{
                  name: 'launcher',
                  image: props.image,
                  command: ['mpirun'],
                  args: mpirun,
                  env: [
                    { name: 'OMPI_ALLOW_RUN_AS_ROOT', value: '1' },
                    { name: 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', value: '1' },
                    ...env,
                  ],
                  resources: {
                    requests: quantitiesOf(LAUNCHER_RESOURCES, Requests.fromString),
                    limits: quantitiesOf(LAUNCHER_RESOURCES, Limits.fromString),
                  },
                  securityContext: { allowPrivilegeEscalation: false },
                }],
              },
            },
          },
          Worker: {
            replicas: this.workers,
            template: {
              metadata: { labels: workerLabels },
              spec: {
                nodeSelector: gpuNodeSelector(model, props.nodeName),
                tolerations: gpuTolerations(model),
                priorityClassName: podPriorityClassName(model, kueue),
                affinity: onePodPerNode(workerLabels),
                containers: [{
                  // No command: the MPI Operator starts sshd in workers (mpirun reaches them over ssh).
                  name: 'worker',
                  image: props.image,
                  securityContext: workloadSecurityContext(this.fabric),
                  resources: {
                    requests: quantitiesOf(workerResources, Requests.fromString),
                    limits: quantitiesOf(workerResources, Limits.fromString),
                  },
                  volumeMounts: [{ name: SHM_VOLUME, mountPath: SHM_PATH }],
                }],
                volumes: [{ name: SHM_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: SizeLimit.fromString(shmSize) } }],
              },
            },
          },
        },
      },
    });
  }
}

