import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { isDnsLabel } from '../../model/k8s-syntax';
import { LABELS, NAMESPACES, RESOURCES } from '../../model/names';
import {
  assertGpusPerNode, assertNodeName, assertPinnedImage, gpuNodeSelector, gpuTolerations, kueueLabels, podPriorityClassName, QueuedJobProps,
} from '../gpu-workload';

/** dcgmi diag run levels: 1 quick (seconds), 2 medium (minutes), 3 long (about half an hour), 4 extended (an hour or more). */
export type DcgmDiagLevel = 1 | 2 | 3 | 4;

/** Default run-time bound per level: generous for the level, short enough to free a hung node's GPUs. */
const DEADLINE_SECONDS: Record<DcgmDiagLevel, number> = { 1: 900, 2: 1800, 3: 7200, 4: 14400 };

/** The diagnostic needs the GPUs, not the node's CPU or memory. */
const DIAG_CPU = '2';
const DIAG_MEMORY = '8Gi';

/** A DCGM diagnostic; `image` ships nv-hostengine and dcgmi. */
export interface DcgmDiagnosticProps extends QueuedJobProps {
  /** The node to check. @default any GPU worker */
  readonly nodeName?: string;
  /** dcgmi diag run level. @default 2 */
  readonly level?: DcgmDiagLevel;
  /** GPUs to test. @default model.capacity.gpusPerNode (the whole node) */
  readonly gpus?: number;
  /** Upper bound on the run time from admission. @default 900, 1800, 7200 or 14400 s for levels 1 to 4 */
  readonly activeDeadlineSeconds?: number;
}

/**
 * A DCGM diagnostic (`dcgmi diag -r <level>`) of the GPUs of one node, as a Job queued through
 * Kueue. The Job fails when the diagnostic fails, and is never retried: a failure is the result.
 */
export class DcgmDiagnostic extends Construct {
  public readonly name: string;
  public readonly namespace: string;
  public readonly level: DcgmDiagLevel;
  public readonly job: k8s.KubeJob;

  constructor(scope: Construct, id: string, props: DcgmDiagnosticProps) {
    super(scope, id);
    const model = props.model;
    this.name = props.name;
    this.namespace = props.namespace ?? NAMESPACES.default;
    this.level = props.level ?? 2;
    const gpus = props.gpus ?? model.capacity.gpusPerNode;

    // The Job controller labels its pods with the Job name, so it must fit a label value.
    if (!isDnsLabel(this.name)) {
      throw new Error(`name: expected a DNS-1123 label of at most 63 characters, got "${this.name}"`);
    }
    assertPinnedImage('image', props.image);
    if (![1, 2, 3, 4].includes(this.level)) throw new Error(`level: expected a dcgmi diag run level from 1 to 4, got ${this.level}`);
    assertGpusPerNode(model, 'gpus', gpus);
    if (props.nodeName !== undefined) assertNodeName('nodeName', props.nodeName);

    const resources = { [RESOURCES.cpu]: DIAG_CPU, [RESOURCES.memory]: DIAG_MEMORY, [RESOURCES.gpu]: String(gpus) };
    const quantities = Object.fromEntries(Object.entries(resources).map(([k, v]) => [k, k8s.Quantity.fromString(v)]));

    const labels = kueueLabels(model, this.namespace, props.queue, props.priority);
    this.job = new k8s.KubeJob(this, 'Resource', {
      metadata: { name: this.name, namespace: this.namespace, labels },
      spec: {
        // Created suspended: only Kueue starts it (a Kueue without the batch/job integration never does).
        suspend: true,
        backoffLimit: 0,
        activeDeadlineSeconds: props.activeDeadlineSeconds ?? DEADLINE_SECONDS[this.level],
        ttlSecondsAfterFinished: props.ttlSecondsAfterFinished ?? 86400,
        template: {
          metadata: { labels: { [LABELS.name]: this.name, [LABELS.component]: 'health-check' } },
          spec: {
            restartPolicy: 'Never',
            nodeSelector: gpuNodeSelector(model, props.nodeName),
            tolerations: gpuTolerations(model),
            priorityClassName: podPriorityClassName(model, labels),
            containers: [{
              name: 'dcgm-diag',
              image: props.image,
              // dcgmi talks to a host engine: start one in the pod (it daemonizes), then run the diagnostic;
              // the container's exit code is dcgmi's.
              command: ['/bin/bash', '-c', `set -e\nnv-hostengine\ndcgmi diag -r ${this.level}\n`],
              resources: { requests: quantities, limits: quantities },
              // NVIDIA runs the DCGM container with --cap-add SYS_ADMIN (the host engine's profiling and
              // diagnostic plugins need it); a capability, never privileged.
              securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ['SYS_ADMIN'] } },
            }],
          },
        },
      },
    });
  }
}
