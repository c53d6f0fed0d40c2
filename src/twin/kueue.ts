import { ChildProcess, spawnSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { PlannedObject, SyncPlan } from './argocd-sync';
import { goCommand, GoBinary, kueueBinary } from './binary';
import { ClusterNetwork } from './cluster-network';
import { ControlPlane, freePorts, httpGet } from './control-plane';
import { describe, KubeClient, KubeObject } from './kube-client';
import { OperatorProcess, startOperatorProcess, untilOnServer } from './operator-process';

/**
 * Kueue for real on a hermetic control plane: the manager built from the pinned module (binary.ts, kueueBinary), run
 * as the rendered Deployment runs it (its arguments, its ServiceAccount's rights, the Configuration of the rendered
 * ConfigMap), with what a pod would have given it supplied by the test bed instead, each said where it is done:
 *
 * - **The webhooks on loopback.** The rendered webhook configurations (and the conversion webhooks of Kueue's CRDs)
 *   name the webhook Service, whose pods never run here: their clientConfig becomes
 *   `url: https://127.0.0.1:<port><the service's path>`, and the Kueue process serves its webhooks on that port.
 * - **Certificates.** Kueue's internal certificate management (the chart's default, kept on) makes a CA and a serving
 *   certificate for `<service>.<namespace>.svc` into the webhook Secret, then waits for the kubelet to mount that
 *   Secret into its certificate folder. A certificate for a DNS name does not serve `https://127.0.0.1`, so the test
 *   puts into the Secret, before Kueue starts, a certificate that is valid for both (and for the CA name Kueue checks),
 *   made by the Go distribution's own generate_cert.go; Kueue's rotator finds it valid and keeps it, injects its CA
 *   into the webhook configurations and CRDs as it does in a cluster, and the test writes the Secret's files into the
 *   certificate folder as the kubelet would.
 * - **Process-local settings** of the Configuration: the namespace and the leader lease's (a pod reads it from its
 *   service account mount), the health, metrics and webhook ports (127.0.0.1 and free ports: several Kueues run on
 *   one machine), and the certificate folder.
 * - **The on-demand visibility API** of a pre-installed Kueue is off (`VisibilityOnDemand=false`; its APIServices are
 *   not applied). A managed Kueue's (startManagedKueue: its install is Argo CD's, APIServices and all) is served: on
 *   127.0.0.1 and a free port (the Configuration's `visibilityServer`; the pod binds 8082 on every address), its
 *   certificates in a folder of the test bed's seen as `/visibility` (visibilityNamespace: the folder is a constant of
 *   Kueue's, of the pod's image), its delegated authentication told the kubeconfig by `--kubeconfig`.
 * - **Its Services' ClusterIPs** (a managed Kueue's): the webhook configurations and APIServices keep naming the
 *   Services, the API server dials their ClusterIPs through the twin's cluster network (cluster-network.ts), which
 *   carries them to the process's loopback ports where kube-proxy would carry them to the pod.
 * - **Credentials**: a token of the Deployment's ServiceAccount (TokenRequest), so Kueue acts with exactly the rights
 *   the rendered RBAC gives it.
 *
 * The process dies with the test process (setpriv's parent-death signal), and loses its leader lease, and exits,
 * when its control plane is gone.
 */

/** The Configuration's key in the manager's ConfigMap (the chart's `controller_manager_config.yaml`). */
const CONFIG_KEY = 'controller_manager_config.yaml';
/** The CA name Kueue's certificate rotator verifies its CA certificate against (pkg/util/cert: caName). */
const KUEUE_CA_NAME = 'kueue-ca';

type Json = Record<string, any>;

/** Kueue's install, as found in a sync plan: the Configuration, the Deployment that runs it, its webhook Service. */
export interface KueueInstall {
  /** The ConfigMap holding the Configuration. */
  readonly configMap: string;
  /** The namespace of the manager's Deployment (where Kueue keeps its lease, Secret and MultiKueue kubeconfigs). */
  readonly namespace: string;
  readonly serviceAccount: string;
  /** The manager container's arguments, as rendered. */
  readonly args: readonly string[];
  /** The Configuration (config.kueue.x-k8s.io) as rendered. */
  readonly configuration: Json;
  readonly webhookService: string;
  readonly webhookSecret: string;
}

const objectsOf = (plan: SyncPlan): PlannedObject[] => [...plan.steps.flatMap((s) => s.objects), ...plan.webhooks];

/** The Kueue install of a plan: the Deployment that mounts a ConfigMap with Kueue's Configuration. Throws when there is none. */
export function kueueInstallOf(plan: SyncPlan): KueueInstall {
  const objects = objectsOf(plan).map((o) => o.object);
  for (const cm of objects.filter((o) => o.kind === 'ConfigMap' && typeof (o.data as Json | undefined)?.[CONFIG_KEY] === 'string')) {
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.namespace === cm.metadata.namespace
      && ((o.spec as Json).template.spec.volumes ?? []).some((v: Json) => v.configMap?.name === cm.metadata.name));
    if (!deployment) continue;
    const pod = (deployment.spec as Json).template.spec;
    const container = (pod.containers as Json[]).find((c) => (c.args ?? []).some((a: string) => a.startsWith('--config=')));
    if (!container) continue;
    const configuration = parse((cm.data as Json)[CONFIG_KEY]) as Json;
    const certs = configuration.internalCertManagement as Json | undefined;
    if (!certs?.enable) throw new Error(`${describe(cm)}: internalCertManagement is off; the test bed serves Kueue's webhooks with the certificates of Kueue's own management`);
    return {
      configMap: cm.metadata.name,
      namespace: deployment.metadata.namespace!,
      serviceAccount: pod.serviceAccountName,
      args: container.args,
      configuration,
      webhookService: certs.webhookServiceName,
      webhookSecret: certs.webhookSecretName,
    };
  }
  throw new Error(`${plan.cluster}: the plan has no Kueue manager (a Deployment mounting a ConfigMap with ${CONFIG_KEY})`);
}

/** A self-signed CA certificate that also serves 127.0.0.1 and the webhook Service's name, and its key (PEM). */
interface WebhookCertificate {
  readonly cert: string;
  readonly key: string;
}

/**
 * A certificate for Kueue's webhook server and its CA in one (generate_cert.go of the Go distribution, `--ca`): it
 * serves `127.0.0.1` and `<service>.<namespace>.svc` (what Kueue's rotator verifies the serving certificate against),
 * and names `kueue-ca` (what it verifies its CA against). RSA 2048 (the rotator reads only PKCS #1 RSA keys), valid for a
 * year (the rotator renews what expires within 90 days).
 */
function webhookCertificate(install: KueueInstall, dir: string): WebhookCertificate {
  const go = goCommand();
  const goroot = spawnSync(go, ['env', 'GOROOT'], { encoding: 'utf8', timeout: 60_000 }).stdout.trim();
  const hosts = ['127.0.0.1', `${install.webhookService}.${install.namespace}.svc`, KUEUE_CA_NAME];
  const r = spawnSync(go, ['run', path.join(goroot, 'src', 'crypto', 'tls', 'generate_cert.go'), `--host=${hosts.join(',')}`, '--ca', '--rsa-bits=2048', '--duration=8760h'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, GOFLAGS: '', GOWORK: 'off', GO111MODULE: 'on' },
  });
  if (r.status !== 0) throw new Error(`generate_cert.go (${goroot}) failed: ${(r.error?.message ?? r.stderr).trim()}`);
  // generate_cert.go writes PKCS #8; the rotator parses its CA key as PKCS #1 (x509.ParsePKCS1PrivateKey)
  const key = createPrivateKey(readFileSync(path.join(dir, 'key.pem'))).export({ type: 'pkcs1', format: 'pem' }).toString();
  return { cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8'), key };
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A webhook client config that names the install's webhook Service, as a loopback URL on `port`. */
function loopbackClientConfig(config: Json | undefined, install: KueueInstall, port: number, ca: string): Json | undefined {
  const service = config?.service as Json | undefined;
  if (!service || service.name !== install.webhookService || (service.namespace ?? install.namespace) !== install.namespace) return undefined;
  return { url: `https://127.0.0.1:${port}${service.path ?? '/'}`, caBundle: b64(ca) };
}

/** A Kueue install of a plan, readied for loopback: its webhooks rewritten, its certificate made (startKueue runs it). */
export interface LoopbackKueue {
  readonly install: KueueInstall;
  readonly dir: string;
  /** Its ports on 127.0.0.1; `visibility` where its visibility API is served (a managed Kueue's: startManagedKueue). */
  readonly ports: { readonly webhook: number; readonly health: number; readonly metrics: number; readonly visibility?: number };
  readonly certificate: WebhookCertificate;
  /** Objects whose webhook client config was rewritten, as `Kind name`. */
  readonly rewritten: readonly string[];
}

/**
 * Readies the Kueue install of a plan for loopback, before the plan is applied: every webhook and CRD conversion webhook
 * of the plan that names Kueue's webhook Service is pointed at a free port of 127.0.0.1 (the plan's objects are changed
 * in place).
 */
export async function loopbackKueue(plan: SyncPlan): Promise<LoopbackKueue> {
  const loopback = await loopbackOf(plan, false);
  const { install, ports, certificate, rewritten } = loopback;
  for (const { object } of objectsOf(plan)) {
    if (object.kind === 'MutatingWebhookConfiguration' || object.kind === 'ValidatingWebhookConfiguration') {
      let changed = false;
      for (const hook of (object.webhooks ?? []) as Json[]) {
        const url = loopbackClientConfig(hook.clientConfig, install, ports.webhook, certificate.cert);
        if (url) {
          hook.clientConfig = url;
          changed = true;
        }
      }
      if (changed) rewritten.push(describe(object));
    }
    if (object.kind === 'CustomResourceDefinition') {
      const conversion = (object.spec as Json).conversion as Json | undefined;
      const url = loopbackClientConfig(conversion?.webhook?.clientConfig, install, ports.webhook, certificate.cert);
      if (url) {
        conversion!.webhook.clientConfig = url;
        rewritten.push(describe(object));
      }
    }
  }
  return loopback;
}

/** The install of a plan's Kueue, a folder of its own, free loopback ports (one for the visibility API if served) and its webhook certificate. */
async function loopbackOf(plan: SyncPlan, visibilityServed: boolean): Promise<LoopbackKueue & { rewritten: string[] }> {
  const install = kueueInstallOf(plan);
  const dir = mkdtempSync(path.join(tmpdir(), 'kueue-'));
  const [webhook, health, metrics, visibility] = await freePorts(visibilityServed ? 4 : 3);
  const ports = { webhook, health, metrics, ...(visibilityServed ? { visibility } : {}) };
  return { install, dir, ports, certificate: webhookCertificate(install, dir), rewritten: [] };
}

/**
 * The arguments of the rendered container, with the test bed's Configuration file, and the visibility server off, or
 * (`kubeconfig`: it is served) told the kubeconfig its delegated authentication and authorization read (a pod's
 * visibility server reads its service account mount; pkg/visibility/server.go reads the `--kubeconfig` flag only).
 */
function kueueArgs(args: readonly string[], configFile: string, kubeconfig?: string): string[] {
  const out = args.map((a) => (a.startsWith('--config=') ? `--config=${configFile}` : a));
  if (kubeconfig) return [...out, `--kubeconfig=${kubeconfig}`];
  const gates = out.findIndex((a) => a.startsWith('--feature-gates='));
  if (gates >= 0) out[gates] = `${out[gates]},VisibilityOnDemand=false`;
  else out.push('--feature-gates=VisibilityOnDemand=false');
  return out;
}


/** A running Kueue manager (startKueue). */
export class KueueProcess extends OperatorProcess {
  constructor(readonly loopback: LoopbackKueue, readonly binary: GoBinary, child: ChildProcess, logFile: string) {
    super('kueue', loopback.dir, child, logFile);
  }
}

/**
 * A command run where `/visibility` is a folder of `dir`: Kueue's visibility server writes its self-signed
 * certificates to `/visibility` (pkg/visibility/server.go certDir, a constant: no flag or Configuration field moves
 * it; a folder of the pod's image), which a test bed may not create. A user and mount namespace of its own (util-linux
 * unshare, the caller mapped to root in it) whose root is a tmpfs with every entry of `/` bound into it, and
 * `visibility` bound to `<dir>/visibility`; the command runs chrooted there, as the caller on every file it touches.
 */
function visibilityNamespace(dir: string, command: readonly string[]): string[] {
  const root = path.join(dir, 'root');
  const visibility = path.join(dir, 'visibility');
  mkdirSync(root);
  mkdirSync(visibility);
  const script = [
    'set -e', 'root=$1; visibility=$2; shift 2',
    'mount -t tmpfs tmpfs "$root"',
    'for e in /*; do n=${e#/}',
    '  if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$root/$n"',
    '  elif [ -d "$e" ]; then mkdir "$root/$n"; mount --rbind "$e" "$root/$n"',
    '  elif [ -f "$e" ]; then : > "$root/$n"; mount --bind "$e" "$root/$n"; fi',
    'done',
    'mkdir "$root/visibility"; mount --bind "$visibility" "$root/visibility"',
    'exec chroot "$root" "$@"',
  ].join('\n');
  return ['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c', script, 'sh', root, visibility, ...command];
}

/**
 * Why this machine gives no process the user and mount namespace visibilityNamespace needs (unprivileged user
 * namespaces off, Ubuntu's AppArmor restriction of them, a container without them): the first line of what refused it,
 * or undefined when a tmpfs could be mounted in one. Checked before a managed Kueue starts, so that the twin says so
 * at once instead of a Kueue that exits while it starts.
 */
export function userNamespaceRefusal(dir: string, unshare = 'unshare'): string | undefined {
  const probe = spawnSync(unshare, ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs tmpfs "$1"', 'sh', dir], { encoding: 'utf8', timeout: 10_000 });
  if (probe.status === 0) return undefined;
  const why = (probe.error?.message ?? probe.stderr ?? '').split('\n').map((l) => l.trim()).find((l) => l !== '');
  return why ?? `exit ${probe.status ?? probe.signal}`;
}

/** Throws, in one line, when this machine refuses the namespace a managed Kueue runs in (userNamespaceRefusal). */
export function requireUserNamespace(dir: string): void {
  const refused = userNamespaceRefusal(dir);
  if (refused === undefined) return;
  throw new Error('a managed Kueue (installs.kueue: managed) cannot run on this machine: its visibility server writes its certificates to /visibility, '
    + `which the twin gives it in a user and mount namespace of its own (unshare --user --mount), and this machine refuses one (${refused}; `
    + 'unprivileged user namespaces are off, or restricted as Ubuntu\'s kernel.apparmor_restrict_unprivileged_userns does)');
}

/**
 * A managed Kueue's install (the one Argo CD syncs: kueue-install of a cluster whose description says `installs.kueue:
 * managed`) readied as loopbackKueue readies a pre-installed one, but with nothing of its render changed: its webhooks
 * and its visibility API's APIServices keep naming their Services, which the API server reaches through the cluster
 * network of the twin (cluster-network.ts, routed when it starts: startManagedKueue).
 */
function managedLoopback(plan: SyncPlan): Promise<LoopbackKueue> {
  return loopbackOf(plan, true);
}

/**
 * Starts the managed Kueue of a twin once Argo CD has synced its install: waits until the objects the manager starts on
 * are in the cluster (its ConfigMap, ServiceAccount, webhook Secret and Services, the visibility API's APIServices and
 * Service, the webhook configurations), reads its Configuration from the synced ConfigMap, routes the webhook Service's
 * and the visibility Service's ClusterIPs to its loopback ports, and runs it as startKueue runs a pre-installed one,
 * with its visibility API served. `plan` is the twin's sync plan (the install's objects as rendered).
 */
export async function startManagedKueue(
  cp: ControlPlane, plan: SyncPlan, network: ClusterNetwork, opts: { readonly syncedTimeoutMs: number; readonly stopped?: () => boolean },
): Promise<KueueProcess> {
  const own = planOf(plan, /-kueue-install$/);
  const objects = objectsOf(own).map((o) => o.object);
  const loopback = await managedLoopback(own);
  const { install, ports } = loopback;
  const admin = cp.client();
  const apiServices = objects.filter((o) => o.kind === 'APIService').map((o) => (o.spec as Json).service as Json);
  const webhookConfigurations = objects.filter((o) => o.kind === 'MutatingWebhookConfiguration' || o.kind === 'ValidatingWebhookConfiguration');
  const ns = (o: { namespace?: string }) => `/api/v1/namespaces/${o.namespace ?? install.namespace}`;
  // what the manager reads as it starts; the rest is waited for only (it must be there before Kueue starts)
  const read = {
    configMap: `${ns({})}/configmaps/${install.configMap}`,
    webhookService: `${ns({})}/services/${install.webhookService}`,
    visibilityServices: apiServices.map((s) => `${ns(s)}/services/${s.name}`),
  };
  const wanted = [
    read.configMap, read.webhookService, ...read.visibilityServices,
    `${ns({})}/serviceaccounts/${install.serviceAccount}`,
    `${ns({})}/secrets/${install.webhookSecret}`,
    ...objects.filter((o) => o.kind === 'APIService').map((o) => `/apis/apiregistration.k8s.io/v1/apiservices/${o.metadata.name}`),
    ...webhookConfigurations.map((o) => `/apis/admissionregistration.k8s.io/v1/${o.kind.toLowerCase()}s/${o.metadata.name}`),
  ];
  const synced = new Map<string, KubeObject | undefined>();
  try {
    const all = await untilOnServer(admin, wanted, 'the managed Kueue\'s install', { timeoutMs: opts.syncedTimeoutMs, stopped: opts.stopped });
    wanted.forEach((u, i) => synced.set(u, all[i]));
    if (typeof ((synced.get(read.configMap)!.data ?? {}) as Json)[CONFIG_KEY] !== 'string') {
      throw new Error(`ConfigMap ${install.namespace}/${install.configMap} has no ${CONFIG_KEY}`);
    }
  } catch (e) {
    rmSync(loopback.dir, { recursive: true, force: true });
    throw e;
  }
  const text = (synced.get(read.configMap)!.data as Json)[CONFIG_KEY] as string;
  const routed = (service: Json, servicePorts: (p: Json) => boolean, local: number) => {
    const spec = service.spec as Json;
    for (const p of (spec.ports ?? []) as Json[]) if (servicePorts(p)) network.route(spec.clusterIP, p.port, local);
  };
  routed(synced.get(read.webhookService)!, () => true, ports.webhook);
  apiServices.forEach((s, i) => routed(synced.get(read.visibilityServices[i])!, (p) => p.port === (s.port ?? 443), ports.visibility!));
  return startKueue(cp, { ...loopback, install: { ...install, configuration: parse(text) as Json } }, { stopped: opts.stopped });
}

/**
 * Starts the Kueue of a readied install (loopbackKueue) on a control plane whose plan is applied (its CRDs, RBAC, the
 * webhook configurations): puts the certificate into the webhook Secret and the certificate folder, writes the
 * Configuration, and runs the manager with a token of its ServiceAccount until it answers ready and holds its leader
 * lease. Fails, the process stopped, with its log.
 */
export async function startKueue(
  cp: ControlPlane, loopback: LoopbackKueue, opts: { readonly readyTimeoutMs?: number; readonly stopped?: () => boolean } = {},
): Promise<KueueProcess> {
  const binary = await kueueBinary();
  const { install, dir, ports, certificate } = loopback;
  const admin = cp.client();
  const secret = { 'ca.crt': certificate.cert, 'ca.key': certificate.key, 'tls.crt': certificate.cert, 'tls.key': certificate.key };
  await admin.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: install.webhookSecret, namespace: install.namespace }, data: Object.fromEntries(Object.entries(secret).map(([k, v]) => [k, b64(v)])) } as KubeObject,
    { fieldManager: 'hermetic-test-bed' });
  // the kubelet's part: the Secret's files in the certificate folder
  const certDir = path.join(dir, 'serving-certs');
  mkdirSync(certDir);
  writeFileSync(path.join(certDir, 'tls.crt'), certificate.cert);
  writeFileSync(path.join(certDir, 'tls.key'), certificate.key, { mode: 0o600 });

  const configuration = structuredClone(install.configuration);
  configuration.namespace = install.namespace;
  // a pod reads its namespace from its service account mount: the lease's namespace is said here
  if (configuration.leaderElection?.leaderElect !== false) {
    configuration.leaderElection = { ...configuration.leaderElection, resourceNamespace: install.namespace };
  }
  configuration.health = { ...configuration.health, healthProbeBindAddress: `127.0.0.1:${ports.health}` };
  configuration.metrics = { ...configuration.metrics, bindAddress: `127.0.0.1:${ports.metrics}` };
  configuration.webhook = { ...configuration.webhook, host: '127.0.0.1', port: ports.webhook, certDir };
  if (ports.visibility !== undefined) configuration.visibilityServer = { ...configuration.visibilityServer, bindAddress: '127.0.0.1', bindPort: ports.visibility };
  const configFile = path.join(dir, 'config.yaml');
  writeFileSync(configFile, stringify(configuration));

  const visibility = ports.visibility !== undefined;
  if (visibility) requireUserNamespace(dir);
  const leaseName = (install.configuration.leaderElection as Json | undefined)?.resourceName as string | undefined;
  return startOperatorProcess(cp, {
    name: 'kueue',
    title: 'Kueue',
    dir,
    namespace: install.namespace,
    serviceAccount: install.serviceAccount,
    argv: (kubeconfig) => [binary.path, ...kueueArgs(install.args, configFile, visibility ? kubeconfig : undefined)],
    wrap: visibility ? (line) => visibilityNamespace(dir, line) : undefined,
  }, (child, logFile) => new KueueProcess(loopback, binary, child, logFile), {
    check: async () => {
      const ready = (await httpGet(`http://127.0.0.1:${ports.health}/readyz`))?.status === 200;
      const lease = !leaseName ? undefined : await admin.get(`/apis/coordination.k8s.io/v1/namespaces/${install.namespace}/leases/${leaseName}`);
      return ready && (!leaseName || typeof (lease?.spec as Json | undefined)?.holderIdentity === 'string');
    },
    notUp: `Kueue did not become ready${leaseName ? ' and take its lease' : ''} in time`,
    timeoutMs: opts.readyTimeoutMs ?? 180_000,
    stopped: opts.stopped,
  });
}

/** Kueue's API, as the twin's readers ask it (the release the toolkit pins serves kueue.x-k8s.io/v1beta2). */
export const KUEUE_API = '/apis/kueue.x-k8s.io/v1beta2';

/** A status condition of an object (`status.conditions[type]`), if it has one. */
export const conditionOf = (o: Json | undefined, type: string): Json | undefined => ((o?.status?.conditions ?? []) as Json[])
  .find((c) => c.type === type);

/** The Workload Kueue made for a job (owned by it), if the job and its Workload are there. */
export async function workloadOwnedBy(client: KubeClient, job: KubeObject): Promise<Json | undefined> {
  const live = await client.read(job);
  if (!live) return undefined;
  const workloads = await client.list(`${KUEUE_API}/namespaces/${job.metadata.namespace}/workloads`) as Json[];
  return workloads.find((w) => ((w.metadata.ownerReferences ?? []) as Json[]).some((r) => r.uid === live.metadata.uid));
}

/**
 * The part of a sync plan a Kueue test applies: what the cluster has before Argo CD (the namespaces, the pre-installed
 * add-ons' CRDs: Kueue turns on a job integration, and MultiKueue connects to a worker, only where its kind is served)
 * and the Applications `apps` matches (their objects and their admission webhooks).
 */
export function planOf(full: SyncPlan, apps: RegExp): SyncPlan {
  const steps = full.steps
    .map((s) => ({ ...s, objects: s.objects.filter((o) => apps.test(o.application) || o.application === 'pre-installed') }))
    .filter((s) => s.objects.length > 0);
  return { ...full, steps, webhooks: full.webhooks.filter((o) => apps.test(o.application)) };
}
