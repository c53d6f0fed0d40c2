import { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SyncPlan } from './argocd-sync';
import { GoBinary, twinBinary } from './binary';
import { ClusterNetwork } from './cluster-network';
import { ControlPlane, freePorts, httpGet } from './control-plane';
import { KubeObject } from './kube-client';
import { planOf } from './kueue';
import { deploymentOf, OperatorDeployment, OperatorProcess, startOperatorProcess, untilOnServer } from './operator-process';

/**
 * The Training Operator for real on a twin: `github.com/kubeflow/training-operator` v1.9.4's command
 * (cmd/training-operator.v1), built into the twin's binary (`twin training-operator`, src/twin/twin/trainingoperator.go),
 * run out of cluster as its install's Deployment runs it (its container's arguments: the schemes the toolkit enables),
 * with a token of that Deployment's ServiceAccount, once Argo CD has synced its install. It creates a PyTorchJob's
 * (TFJob's, ...) pods and Services once Kueue admits the job, and writes the job's status; the scheduler binds the
 * pods, KWOK runs them. Its validating webhook is served as in a cluster: its certificate rotator writes its Secret and
 * injects the CA into `validator.training-operator.kubeflow.org`, the API server dials the webhook Service's ClusterIP,
 * which the twin's cluster network (cluster-network.ts) carries to the process's webhook port.
 *
 * What a pod would have given it, supplied instead: the kubeconfig (`--kubeconfig`), its namespace (`MY_POD_NAMESPACE`,
 * the Deployment's downward API), the Secret's files in its certificate folder (the kubelet's mount: written when the
 * rotator has filled the Secret), that folder itself (`TRAINING_OPERATOR_CERT_DIR`, a constant of its pkg/cert moved by
 * the one change of ours: several twins run on one machine), and free ports of 127.0.0.1 for its metrics and probes
 * (flags). It dies with the test process (setpriv's parent-death signal).
 */

type Json = Record<string, any>;

/** The operator's container in its Deployment (manifests/base/deployment.yaml at v1.9.4). */
const CONTAINER = 'training-operator';
/** Its name: its log and kubeconfig in its folder (startOperatorProcess). */
const NAME = 'training-operator';
/** The webhook Secret and Service its command defaults to (`--webhook-secret-name`, `--webhook-service-name`). */
const SECRET = 'training-operator-webhook-cert';
const SERVICE = 'training-operator';
/** The Applications that apply its install. */
export const TRAINING_OPERATOR_INSTALL = /-training-operator-install$/;

/** The Training Operator's install as a sync plan has it: its Deployment's, and its webhook's Service. */
export interface TrainingOperatorInstall extends OperatorDeployment {
  /** The webhook Service's path (its ClusterIP is routed to the process). */
  readonly service: string;
}

/**
 * The Training Operator's install in a sync plan (its Application's objects); throws when the plan has none. What it
 * needs on the server before it starts: its ServiceAccount, the bindings of its rights, its webhook's Service, Secret and
 * configuration (its certificate rotator reads and updates the last two).
 */
export function trainingOperatorInstallOf(plan: SyncPlan): TrainingOperatorInstall {
  const objects = planOf(plan, TRAINING_OPERATOR_INSTALL).steps.flatMap((s) => s.objects).filter((o) => o.application !== 'pre-installed').map((o) => o.object);
  const deployment = deploymentOf(objects, CONTAINER, 'the Training Operator');
  const webhooks = [...objects, ...plan.webhooks.map((w) => w.object)].filter((o) => o.kind === 'ValidatingWebhookConfiguration'
    && ((o.webhooks ?? []) as Json[]).some((w) => w.clientConfig?.service?.name === SERVICE))
    .map((o) => `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${o.metadata.name}`);
  const service = `/api/v1/namespaces/${deployment.namespace}/services/${SERVICE}`;
  return { ...deployment, needs: [...deployment.needs, service, `/api/v1/namespaces/${deployment.namespace}/secrets/${SECRET}`, ...new Set(webhooks)], service };
}

/** A running Training Operator (startTrainingOperator). */
export class TrainingOperatorProcess extends OperatorProcess {
  constructor(dir: string, readonly binary: GoBinary, child: ChildProcess, logFile: string, readonly install: TrainingOperatorInstall) {
    super(NAME, dir, child, logFile);
  }
}

/**
 * Starts the Training Operator of `install` once what it needs is on the server (Argo CD's to sync, waited for up to
 * `syncedTimeoutMs`), its webhook Service's ClusterIP routed to its webhook port, until it answers ready (its
 * certificates made and mounted, its webhook server started). Fails, the process stopped, naming what was missing or
 * with its log.
 */
export async function startTrainingOperator(
  cp: ControlPlane, install: TrainingOperatorInstall, network: ClusterNetwork,
  opts: { readonly syncedTimeoutMs?: number; readonly readyTimeoutMs?: number; readonly stopped?: () => boolean } = {},
): Promise<TrainingOperatorProcess> {
  const admin = cp.client();
  const found = await untilOnServer(admin, install.needs, 'the Training Operator\'s install', { timeoutMs: opts.syncedTimeoutMs ?? 0, stopped: opts.stopped });
  const service = found[install.needs.indexOf(install.service)];
  const binary = await twinBinary();
  const dir = mkdtempSync(path.join(tmpdir(), 'training-operator-'));
  const certDir = path.join(dir, 'serving-certs');
  mkdirSync(certDir);
  const [webhook, health, metrics] = await freePorts(3);
  const spec = service.spec as Json;
  for (const p of (spec.ports ?? []) as Json[]) if (p.name === 'webhook-server' || p.targetPort === 9443) network.route(spec.clusterIP, p.port, webhook);
  const secretPath = `/api/v1/namespaces/${install.namespace}/secrets/${SECRET}`;
  // the kubelet's part: the Secret's files in the certificate folder, once the rotator has filled it (and again when it rotates)
  const mount = async () => {
    const data = ((await admin.get(secretPath)) as KubeObject | undefined)?.data as Json | undefined;
    if (!data?.['tls.crt'] || !data?.['tls.key']) return;
    const crt = Buffer.from(data['tls.crt'], 'base64');
    const file = path.join(certDir, 'tls.crt');
    if (existsSync(file) && readFileSync(file).equals(crt)) return;
    writeFileSync(path.join(certDir, 'tls.key'), Buffer.from(data['tls.key'], 'base64'), { mode: 0o600 });
    writeFileSync(file, crt);
  };
  return startOperatorProcess(cp, {
    name: NAME,
    title: 'the Training Operator',
    dir,
    namespace: install.namespace,
    serviceAccount: install.serviceAccount,
    argv: (kubeconfig) => [binary.path, 'training-operator', ...install.args,
      `--metrics-bind-address=127.0.0.1:${metrics}`, `--health-probe-bind-address=127.0.0.1:${health}`, `--webhook-server-port=${webhook}`, `--kubeconfig=${kubeconfig}`],
    env: { MY_POD_NAMESPACE: install.namespace, TRAINING_OPERATOR_CERT_DIR: certDir },
  }, (child, logFile) => new TrainingOperatorProcess(dir, binary, child, logFile, install), {
    check: async () => {
      await mount();
      return (await httpGet(`http://127.0.0.1:${health}/readyz`))?.status === 200;
    },
    notUp: 'the Training Operator did not become ready (its webhook certificates made and mounted, its webhook server started) in time',
    timeoutMs: opts.readyTimeoutMs ?? 120_000,
    stopped: opts.stopped,
  });
}
