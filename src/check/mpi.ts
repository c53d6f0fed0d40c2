import { ClusterIndex, PodTemplate, requestedCount } from './cluster-index';
import { cohortOf, nominalQuota, queueOf } from './kueue';
import { Rule, Violation } from './rule';
import { RESOURCES } from '../model/names';
import { Manifest } from '../render/manifest';

interface MpiReplicaSpec {
  readonly replicas?: number;
}

interface MpiJobSpec {
  readonly slotsPerWorker?: number;
  readonly runLauncherAsWorker?: boolean;
  readonly mpiReplicaSpecs?: Readonly<Record<string, MpiReplicaSpec>>;
}

/** The `-np N` / `--np N` of a launcher command line (mpirun options), or undefined. */
export function launcherRanks(template: PodTemplate | undefined): number | undefined {
  if (!template) return undefined;
  for (const c of template.spec.containers) {
    const line = [...(c.command ?? []), ...(c.args ?? [])].join(' ');
    const m = /(?:^|\s)--?np(?:=|\s+)(\d+)/.exec(line);
    if (m) return Number(m[1]);
  }
  return undefined;
}

/** Workers, slots, ranks and GPUs of one MPIJob. */
export function mpiJobShape(index: ClusterIndex, job: Manifest) {
  const spec = (job.spec ?? {}) as MpiJobSpec;
  const templates = index.podTemplates(job);
  const launcher = templates.find((t) => t.path.includes('.Launcher.'));
  const worker = templates.find((t) => t.path.includes('.Worker.'));
  const workers = spec.mpiReplicaSpecs?.Worker?.replicas ?? (worker ? 1 : 0);
  const slotsPerWorker = spec.slotsPerWorker ?? 1;
  const hosts = workers + (spec.runLauncherAsWorker ? 1 : 0);
  const gpusPerWorker = worker ? requestedCount(worker.spec, RESOURCES.gpu) : 0;
  return { workers, slotsPerWorker, hosts, ranks: launcherRanks(launcher), gpusPerWorker, gpus: workers * gpusPerWorker };
}

const ranks: Rule = {
  id: 'mpijob-ranks',
  severity: 'error',
  summary: 'an MPIJob launches workers x slotsPerWorker ranks (mpirun -np)',
  check(index) {
    const out: Violation[] = [];
    for (const job of index.ofKind('MPIJob', 'kubeflow.org')) {
      const s = mpiJobShape(index, job);
      if (s.ranks === undefined || s.ranks === s.hosts * s.slotsPerWorker) continue;
      out.push({
        message: `the launcher runs mpirun -np ${s.ranks} but the job has ${s.hosts} worker(s) x slotsPerWorker ${s.slotsPerWorker} = ${s.hosts * s.slotsPerWorker} slots`,
        objects: [job],
      });
    }
    return out;
  },
};

const fit: Rule = {
  id: 'mpijob-fit',
  severity: 'error',
  summary: 'an MPIJob fits the cluster: GPUs per worker <= GPUs per node, all GPUs <= the cluster (or its cohort quota)',
  check(index) {
    const out: Violation[] = [];
    const capacity = index.model?.capacity;
    for (const job of index.ofKind('MPIJob', 'kubeflow.org')) {
      const s = mpiJobShape(index, job);
      if (capacity && s.gpusPerWorker > capacity.gpusPerNode) {
        out.push({ message: `each worker requests ${s.gpusPerWorker} ${RESOURCES.gpu} but a GPU node has ${capacity.gpusPerNode}; no node fits a worker`, objects: [job] });
      }
      if (capacity && s.gpus > capacity.gpus) {
        out.push({ message: `${s.workers} workers x ${s.gpusPerWorker} GPUs = ${s.gpus} ${RESOURCES.gpu}, more than the cluster's ${capacity.gpus}`, objects: [job] });
      }
      if (!capacity && s.gpus > 0) {
        // Without the model, the quota of the job's cohort is what the cluster offers it.
        const q = queueOf(index, job);
        if (!q) continue;
        const cohort = cohortOf(q.clusterQueue);
        const queues = cohort === undefined ? [q.clusterQueue] : index.ofKind('ClusterQueue').filter((cq) => cohortOf(cq) === cohort);
        const quota = queues.reduce((sum, cq) => sum + nominalQuota(cq, RESOURCES.gpu), 0);
        if (s.gpus > quota) {
          out.push({
            message: `${s.workers} workers x ${s.gpusPerWorker} GPUs = ${s.gpus} ${RESOURCES.gpu}, more than the ${quota} GPUs of ${cohort === undefined ? 'its ClusterQueue' : `cohort ${cohort}`}`,
            objects: [job, q.clusterQueue],
          });
        }
      }
    }
    return out;
  },
};

export const MPI_RULES: readonly Rule[] = [ranks, fit];
