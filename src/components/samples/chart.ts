import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel } from '../../model/model';
import { LABELS, NAMESPACES, NODE_NAME_PLACEHOLDER } from '../../model/names';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { DcgmDiagnostic, DcgmDiagLevel } from './dcgm-diagnostic';
import { NcclTest } from './nccl-test';
import { PyTorchTrainingJob } from './pytorch-training-job';
import { DDP_SMOKE_TEST } from '../ddp-smoke-test';

/**
 * Stands for the node name in the per-node checks when the description lists no node names.
 * It is replaced at launch (`sed 's/<placeholder>/<node>/g'`), in the object name and in the
 * kubernetes.io/hostname selector alike, so checks of several nodes can run side by side.
 */

const NODE_CHECK_PREFIX = 'nccl-node-check-';
const DCGM_DIAG_PREFIX = 'dcgm-diag-';

/** Description field of each construct prop the samples set from `samples` (for error messages). */
const QUEUE_FIELDS = {
  namespace: 'samples.namespace',
  queue: 'samples.queue',
  priority: 'samples.priority',
  ttlSecondsAfterFinished: 'samples.ttlSecondsAfterFinished',
};
const NCCL_FIELDS: Record<string, string> = {
  ...QUEUE_FIELDS,
  ...Object.fromEntries(['image', 'binaryDir', 'minBytes', 'maxBytes', 'stepFactor', 'iterations', 'shmSize', 'ncclDebug', 'benchmark']
    .map((prop) => [prop, `samples.ncclTests.${prop}`])),
};
const PYTORCH_FIELDS: Record<string, string> = { ...QUEUE_FIELDS, image: 'samples.pytorch.image', shmSize: 'samples.ncclTests.shmSize' };
const DCGM_FIELDS: Record<string, string> = { ...QUEUE_FIELDS, image: 'samples.dcgmDiag.image', level: 'samples.dcgmDiag.level' };

/** Marks every object of a construct as a template (LABELS.template): rendered, never applied as it is. */
function markTemplate(construct: Construct): void {
  for (const child of construct.node.findAll()) if (child instanceof ApiObject) child.metadata.addAnnotation(LABELS.template, 'true');
}

/**
 * Builds a construct; an error it throws about a prop (`shmSize: ...`) is re-thrown naming the
 * description field the prop came from (`samples.ncclTests.shmSize: ...`).
 */
function fromDescription<T>(fields: Record<string, string>, build: () => T): T {
  try {
    return build();
  } catch (e) {
    const m = /^([A-Za-z]+): ([\s\S]*)$/.exec((e as Error).message);
    if (m && fields[m[1]]) throw new Error(`${fields[m[1]]}: ${m[2]}`);
    throw e;
  }
}

/**
 * Samples: the workloads a user runs first on a new cluster, sized from the description and
 * queued through Kueue. Applied by hand (`kubectl create -f`), never synced by Argo CD: a sync
 * would start them again.
 */
export class SamplesChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const model = props.model;
    const s = model.description.samples;
    const nccl = s.ncclTests;
    const queueing = { model, namespace: s.namespace, queue: s.queue, priority: s.priority, ttlSecondsAfterFinished: s.ttlSecondsAfterFinished };
    // DCGM's diagnostic needs SYS_ADMIN, which a tenant namespace's guardrails refuse on purpose (it lets a pod reach the
    // node): a node health check is the platform's, so it stays in "default", queued through queueing.defaultQueue,
    // wherever the other samples go.
    const diagQueueing = s.namespace === NAMESPACES.default ? queueing : { ...queueing, namespace: NAMESPACES.default, queue: undefined };
    const ncclOptions = {
      image: nccl.image,
      binaryDir: nccl.binaryDir,
      minBytes: nccl.minBytes,
      maxBytes: nccl.maxBytes,
      stepFactor: nccl.stepFactor,
      iterations: nccl.iterations,
      shmSize: nccl.shmSize,
      ncclDebug: nccl.ncclDebug,
    };

    // Every GPU worker, one rank per GPU: the fabric test.
    fromDescription(NCCL_FIELDS, () => new NcclTest(this, 'NcclTest', {
      ...queueing,
      ...ncclOptions,
      name: `nccl-${nccl.benchmark.replace(/_perf$/, '').replace(/_/g, '-')}`,
      benchmark: nccl.benchmark,
    }));

    // Only where a Training Operator serves PyTorchJob: the Instant Cluster ships none (installs.trainingOperator: none).
    if (model.description.installs.trainingOperator !== 'none') {
      fromDescription(PYTORCH_FIELDS, () => new PyTorchTrainingJob(this, 'PyTorchJob', {
        ...queueing,
        name: 'pytorch-ddp',
        image: s.pytorch.image,
        script: DDP_SMOKE_TEST,
        env: [{ name: 'STEPS', value: String(s.pytorch.steps) }],
        shmSize: nccl.shmSize,
      }));
    }

    // Per-node health checks: the GPUs of one node (over NVLink only where the product has an NVLink fabric,
    // else NCCL's own path: PCIe peer to peer or shared memory), and DCGM's diagnostic.
    const targets = s.nodeNames.length > 0
      ? s.nodeNames.map((node, i) => ({ node, field: `samples.nodeNames[${i}]` }))
      : [{ node: NODE_NAME_PLACEHOLDER, field: 'samples.nodeNames' }];
    for (const { node, field } of targets) {
      // Object names are DNS labels (the MPIJob names a Service): dots of a node FQDN become dashes.
      const suffix = node.replace(/\./g, '-');
      const longest = NODE_CHECK_PREFIX.length + suffix.length;
      if (longest > 63) {
        throw new Error(`${field}: "${node}" makes the check name ${NODE_CHECK_PREFIX}${suffix} longer than 63 characters`);
      }
      const checks = [fromDescription(NCCL_FIELDS, () => new NcclTest(this, `NodeCheck-${suffix}`, {
        ...queueing,
        ...ncclOptions,
        name: `${NODE_CHECK_PREFIX}${suffix}`,
        benchmark: 'all_reduce_perf',
        workers: 1,
        nodeName: node,
        fabric: model.gpuProduct.nvlink ? 'nvlink' : 'node',
        backoffLimit: 0,
        activeDeadlineSeconds: 1800,
      })), fromDescription(DCGM_FIELDS, () => new DcgmDiagnostic(this, `DcgmDiag-${suffix}`, {
        ...diagQueueing,
        name: `${DCGM_DIAG_PREFIX}${suffix}`,
        image: s.dcgmDiag.image,
        level: s.dcgmDiag.level as DcgmDiagLevel,
        nodeName: node,
      }))];
      // A placeholder node name must be filled in first: never applied by kustomize or Argo CD.
      if (node === NODE_NAME_PLACEHOLDER) for (const c of checks) markTemplate(c);
    }
  }
}

export const samples: ComponentDefinition = {
  folder: 'samples',
  description: 'Workloads applied by hand, never synced: a multi-node NCCL test (MPIJob), a PyTorchJob where a Training Operator is installed, per-node NCCL and DCGM health checks',
  // A MultiKueue manager runs no jobs of its own: its queues dispatch to the workers, whose hardware the samples would not fit.
  build: (scope: Construct, model: ClusterModel) => (model.multiKueue?.role === 'manager' ? undefined : new SamplesChart(scope, 'samples', { model })),
};
