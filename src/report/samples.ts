import { code } from './markdown';
import { ClusterIndex, requestedCount } from '../check/cluster-index';
import { queueLabels } from '../check/kueue';
import { mpiJobShape } from '../check/mpi';
import { LABELS, NODE_NAME_PLACEHOLDER, RESOURCES } from '../model/names';
import { Manifest, manifestFileName, RenderedCluster } from '../render/manifest';

/** Labels the Training Operator puts on a PyTorchJob's pods (kubeflow/common JobNameLabel, JobRoleLabel). */
const TRAINING_JOB_NAME = 'training.kubeflow.org/job-name';
const TRAINING_JOB_ROLE = 'training.kubeflow.org/job-role';

/** The workloads of the samples folder a user runs, in the order a first check goes: fabric, training, health. */
const RUNNABLE = ['MPIJob', 'PyTorchJob', 'Job'] as const;

interface Run {
  /** What it is and what it takes. */
  readonly about: string;
  /** How to follow it once admitted. */
  readonly follow: readonly string[];
  /** What the result looks like. */
  readonly reading: string;
}

function mpiRun(_c: RenderedCluster, index: ClusterIndex, job: Manifest, ns: string, name: string): Run {
  const s = mpiJobShape(index, job);
  return {
    about: `NCCL test (MPIJob): ${s.workers} worker(s) x ${s.slotsPerWorker} slots = ${s.ranks ?? s.workers * s.slotsPerWorker} ranks, ${s.gpus} GPUs.`
      + (s.workers === 1 ? ' One worker: every rank shares one node, so NCCL moves data over the node\'s GPU interconnect and never over InfiniBand; this does not test the fabric.' : ''),
    follow: ['# the launcher runs mpirun and prints the results', `kubectl logs -n ${ns} -f job/${name}-launcher`],
    reading: 'The launcher log ends with a table per message size and a `# Avg bus bandwidth` line (GB/s): compare it across runs and nodes; a low value points at a node or a link.',
  };
}

function pytorchRun(c: RenderedCluster, index: ClusterIndex, job: Manifest, ns: string, name: string): Run {
  const spec = (job.spec ?? {}) as { nprocPerNode?: string | number; pytorchReplicaSpecs?: Record<string, { replicas?: number }> };
  const pods = Object.values(spec.pytorchReplicaSpecs ?? {}).reduce((n, r) => n + (r.replicas ?? 1), 0);
  const perPod = Number(spec.nprocPerNode ?? 1);
  const templates = index.podTemplates(job);
  const gpus = Object.entries(spec.pytorchReplicaSpecs ?? {}).reduce((n, [type, r]) => {
    const t = templates.find((x) => x.path.includes(`.${type}.`));
    return n + (t ? requestedCount(t.spec, RESOURCES.gpu) * (r.replicas ?? 1) : 0);
  }, 0);
  return {
    about: `DDP smoke test (PyTorchJob): ${pods} pod(s) x ${perPod} processes (torchrun, one per GPU) = world size ${pods * perPod}, ${gpus} GPUs, `
      + `${c.model.description.samples.pytorch.steps} training steps.`,
    follow: ['# the master pod prints the training rate', `kubectl logs -n ${ns} -f -l ${TRAINING_JOB_NAME}=${name},${TRAINING_JOB_ROLE}=master`],
    reading: `The master's log ends with ${code(`world size ${pods * perPod}: <rate> steps/s, final loss <loss>`)}: all ranks joined over NCCL and trained together.`,
  };
}

function jobRun(c: RenderedCluster, index: ClusterIndex, job: Manifest, ns: string, name: string): Run {
  const templates = index.podTemplates(job);
  const gpus = templates.reduce((n, t) => n + requestedCount(t.spec, RESOURCES.gpu), 0);
  const dcgm = templates.some((t) => t.spec.containers.some((ct) => [...(ct.command ?? []), ...(ct.args ?? [])].join(' ').includes('dcgmi diag')));
  if (!dcgm) {
    return {
      about: `Job: ${gpus} GPU(s).`,
      follow: [`kubectl logs -n ${ns} -f job/${name}`],
      reading: `${code(`kubectl get job -n ${ns} ${name}`)} shows whether it completed.`,
    };
  }
  const samplesNs = c.model.description.samples.namespace;
  return {
    about: `DCGM diagnostic (Job): ${code(`dcgmi diag -r ${c.model.description.samples.dcgmDiag.level}`)} on the ${gpus} GPUs of one node.`
      + (ns === samplesNs ? '' : ` In ${code(ns)}, not in the samples' namespace ${code(samplesNs)}: it needs SYS_ADMIN, which a tenant namespace refuses.`),
    follow: [`kubectl logs -n ${ns} -f job/${name}`, `kubectl get job -n ${ns} ${name}   # COMPLETIONS 1/1: every test passed`],
    reading: 'The log lists each test with Pass, Skip or Fail. A Fail fails the Job: drain the node and have it repaired before it takes work again.',
  };
}

const RUNS: Readonly<Record<(typeof RUNNABLE)[number], typeof mpiRun>> = { MPIJob: mpiRun, PyTorchJob: pytorchRun, Job: jobRun };

/**
 * How to run each sample of the samples folder: what it is (derived from the rendered object), the
 * commands (a per-node template is filled in with sed on the way to kubectl, never created as it is),
 * how to follow it and read the result.
 */
export function samplesSection(c: RenderedCluster, index: ClusterIndex): string {
  const root = c.model.description.gitops.path.replace(/\/+$/, '');
  const jobs = RUNNABLE.flatMap((kind) => index.ofKind(kind).filter((m) => index.folderOf(m) === 'samples'));
  if (jobs.length === 0) return 'This cluster renders no samples.';
  const parts = jobs.map((job) => {
    const ns = job.metadata.namespace ?? 'default';
    const file = `${root}/${index.folderOf(job)}/${manifestFileName(job)}`;
    const queue = queueLabels(index, job)[0]?.queue;
    // A template (a placeholder node name) is filled in on the way to kubectl, never created as it is.
    const template = job.metadata.annotations?.[LABELS.template] === 'true';
    const name = template ? job.metadata.name.split(NODE_NAME_PLACEHOLDER).join('$NODE') : job.metadata.name;
    const run = RUNS[job.kind as (typeof RUNNABLE)[number]](c, index, job, ns, name);
    const create = template
      ? ['NODE=gpu-worker-1  # the GPU worker to check (kubectl get nodes)', `sed "s/${NODE_NAME_PLACEHOLDER}/$NODE/g" ${file} | kubectl create -f -`]
      : [`kubectl create -f ${file}`];
    const remove = template ? `kubectl delete -n ${ns} ${job.kind.toLowerCase()} ${name}` : `kubectl delete -f ${file}`;
    return [
      `### ${code(job.metadata.name)}`,
      '',
      `${run.about}${queue ? ` Queued through LocalQueue ${code(`${ns}/${queue}`)}.` : ''}`,
      '',
      '```sh',
      ...create,
      '# Kueue admits the job when the quota allows (ADMITTED: True)',
      `kubectl get workloads -n ${ns}`,
      ...run.follow,
      '# remove it before running it again',
      remove,
      '```',
      '',
      run.reading,
    ].join('\n');
  });
  return [
    'The samples are never synced automatically: each one holds GPUs while it runs. Run one by hand:',
    '',
    parts.join('\n\n'),
  ].join('\n');
}
