import { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SyncPlan } from './argocd-sync';
import { GoBinary, twinBinary } from './binary';
import { ControlPlane, freePorts, httpGet } from './control-plane';
import { KubeObject } from './kube-client';
import { planOf } from './kueue';
import { deploymentOf, OperatorDeployment, OperatorProcess, startOperatorProcess, untilOnServer } from './operator-process';

/**
 * The MPI Operator for real on a twin: `github.com/kubeflow/mpi-operator` v0.8.2's command (cmd/mpi-operator), built
 * into the twin's binary (`twin mpi-operator`, src/twin/twin/mpioperator.go), run out of cluster as the rendered or
 * installed Deployment runs it (its container's arguments: `-alsologtostderr --lock-namespace=mpi-operator`), with a
 * token of that Deployment's ServiceAccount, so it acts with exactly the rights its install's RBAC gives it. It creates
 * what it creates in a cluster for an MPIJob Kueue admits: the launcher Job, the worker pods, their Service, hostfile
 * ConfigMap and SSH Secret, and writes the MPIJob's status; the scheduler binds the pods, KWOK runs them.
 *
 * What a pod would have given it, supplied instead: the kubeconfig (`--kubeConfig`, also `$KUBECONFIG`, which its
 * Run prefers) in place of the in-cluster configuration, and its health check's port (a constant 8080 of its
 * cmd/mpi-operator/app/server.go, moved to a free port of 127.0.0.1's by `MPI_OPERATOR_HEALTH_CHECK_PORT`: several
 * twins run on one machine). It dies with the test process (setpriv's parent-death signal).
 */

type Json = Record<string, any>;

/** The operator's container in its Deployment (manifests/base/deployment.yaml at v0.8.2). */
const CONTAINER = 'mpi-operator';
/** Its leader lease (cmd/mpi-operator/app/server.go: controllerName), in the namespace of `--lock-namespace`. */
const LEASE = 'mpi-operator';
/** The Applications that apply its install (a managed MPI Operator's: Argo CD's; a pre-installed one's: the twin's render of it). */
export const MPI_OPERATOR_INSTALL = /-mpi-operator-install$/;

/** The MPI Operator's install as a sync plan has it: the Deployment's namespace, ServiceAccount and arguments. */
export type MpiOperatorInstall = OperatorDeployment;

/** The MPI Operator's install in a sync plan (its Application's objects); throws when the plan has none. */
export function mpiOperatorInstallOf(plan: SyncPlan): MpiOperatorInstall {
  const objects = planOf(plan, MPI_OPERATOR_INSTALL).steps.flatMap((s) => s.objects).filter((o) => o.application !== 'pre-installed').map((o) => o.object);
  return deploymentOf(objects, CONTAINER, 'the MPI Operator');
}

/** The namespace of its leader lease: `--lock-namespace` of its arguments (its default: mpi-operator). */
export const lockNamespace = (args: readonly string[]): string => {
  const i = args.findIndex((a) => /^--?lock-namespace(=|$)/.test(a));
  if (i < 0) return 'mpi-operator';
  return args[i].includes('=') ? args[i].slice(args[i].indexOf('=') + 1) : args[i + 1];
};

/** Its name: its log and kubeconfig in its folder are `mpi-operator.log`, `mpi-operator.kubeconfig` (startOperatorProcess). */
const NAME = 'mpi-operator';

/** A running MPI Operator (startMpiOperator). */
export class MpiOperatorProcess extends OperatorProcess {
  constructor(dir: string, readonly binary: GoBinary, child: ChildProcess, logFile: string, readonly install: MpiOperatorInstall) {
    super(NAME, dir, child, logFile);
  }

  /** The kubeconfig it runs with (a token of its install's ServiceAccount). */
  get kubeconfig(): string {
    return path.join(this.dir, `${NAME}.kubeconfig`);
  }
}

/**
 * Starts the MPI Operator of `install` once what it needs is on the server (its ServiceAccount and bindings: a managed
 * one's are Argo CD's to sync, waited for up to `syncedTimeoutMs`), with a token of its ServiceAccount, until its
 * health check answers and it holds its leader lease. Fails, the process stopped, naming what was missing or with its log.
 */
export async function startMpiOperator(
  cp: ControlPlane, install: MpiOperatorInstall,
  opts: { readonly syncedTimeoutMs?: number; readonly readyTimeoutMs?: number; readonly stopped?: () => boolean } = {},
): Promise<MpiOperatorProcess> {
  const admin = cp.client();
  await untilOnServer(admin, install.needs, 'the MPI Operator\'s install', { timeoutMs: opts.syncedTimeoutMs ?? 0, stopped: opts.stopped });
  const binary = await twinBinary();
  const dir = mkdtempSync(path.join(tmpdir(), 'mpi-operator-'));
  const [health] = await freePorts(1);
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${lockNamespace(install.args)}/leases/${LEASE}`;
  return startOperatorProcess(cp, {
    name: NAME,
    title: 'the MPI Operator',
    dir,
    namespace: install.namespace,
    serviceAccount: install.serviceAccount,
    argv: (kubeconfig) => [binary.path, 'mpi-operator', ...install.args, `--kubeConfig=${kubeconfig}`],
    env: { MPI_OPERATOR_HEALTH_CHECK_PORT: String(health) },
  }, (child, logFile) => new MpiOperatorProcess(dir, binary, child, logFile, install), {
    check: async () => {
      const healthy = (await httpGet(`http://127.0.0.1:${health}/healthz`))?.status === 200;
      const lease = (await admin.get(leasePath)) as KubeObject | undefined;
      return healthy && typeof (lease?.spec as Json | undefined)?.holderIdentity === 'string';
    },
    notUp: 'the MPI Operator did not answer its health check and take its leader lease in time',
    timeoutMs: opts.readyTimeoutMs ?? 120_000,
    stopped: opts.stopped,
  });
}
