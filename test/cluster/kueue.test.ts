import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { readClusters, renderClusterSources } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { EngineBudget } from '../../src/engines';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { loadModels } from '../../src/synth/pipeline';
import { applySteps, ARGOCD_MANAGER, planSync, refusalText, SyncPlan, vendoredCrds } from '../../src/twin/argocd-sync';
import { KUEUE_MODULE, KUEUE_MODULE_DIR, kueueBinary, requiredVersion } from '../../src/twin/binary';
import { ControlPlane, startControlPlane } from '../../src/twin/control-plane';
import { KubeClient, KubeObject } from '../../src/twin/kube-client';
import { conditionOf, KueueProcess, loopbackKueue, planOf, startKueue, workloadOwnedBy } from '../../src/twin/kueue';
import { poll } from '../../src/twin/poll';
import { RenderSession } from '../../src/upstream/render-session';
import { REFERENCE_FILE } from '../paths';

/**
 * Kueue for real (issue 39): the queues of the reference description (its ClusterQueues in one cohort, its tenants'
 * LocalQueues, flavors and priorities) and the Kueue install the toolkit renders when it manages Kueue (the reference
 * says `installs.kueue: preinstalled`, so the same description with `managed` renders the chart, its Configuration and
 * RBAC), applied as Argo CD applies them to a hermetic control plane, with Kueue's manager of the pinned release
 * (kueue.ts) serving its webhooks on loopback. The rendered MPIJob sample, synced as Argo CD syncs it: suspended by
 * Kueue's webhook, admitted whole (launcher and workers) by its LocalQueue's ClusterQueue, let run. Jobs of a tenant,
 * created as that tenant: suspended at creation by Kueue's webhook, admitted within the ClusterQueue's nominal quota,
 * admitted beyond it by borrowing the cohort's idle quota (the description lets a tenant borrow), and left pending
 * beyond what the cohort has.
 */

const work = mkdtempSync(path.join(tmpdir(), 'kueue-test-'));
let cp: ControlPlane;
let plan: SyncPlan;
let kueue: KueueProcess | undefined;
let tenantNamespace: string;
let tenantQueue: string;
let tenantGpus: number;
let cohortGpus: number;

type Json = Record<string, any>;

const GPU = 'nvidia.com/gpu';
const QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';
/** How long Kueue may take to act on one object (it acts within a second here; bounds a Kueue that never does). */
const ACT_MS = 20_000;

/** The applications of the plan Kueue needs: its install, its queues, the tenants (their namespaces and LocalQueues). */
const KUEUE_APPS = /-(kueue-install|kueue|tenants)$/;
let sampleMpiJob: KubeObject;

beforeAll(async () => {
  // the binaries first: a Kueue that does not build fails these tests with that one line
  await kueueBinary();
  const description = parse(readFileSync(REFERENCE_FILE, 'utf8')) as Json;
  description.installs = { ...description.installs, kueue: 'managed' };
  const file = path.join(work, 'instant-cluster.yaml');
  writeFileSync(file, stringify(description));
  const out = path.join(work, 'dist');
  expect(await main(['synth', '--config', file, '--out', out, '--quiet'])).toBe(EXIT.ok);
  const [model] = loadModels([file]);
  const raw = readClusters(out).find((c) => c.name === model.name)!;
  const view = { ...raw, model };
  const renders = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, session: new RenderSession(defaultCacheDir(), new EngineBudget()) });

  const tenant = model.tenants[0];
  tenantNamespace = tenant.name;
  cp = await startControlPlane({ identities: { tenant: { user: 'tenant', groups: [tenant.group] } } });
  const full = planSync(view, renders, vendoredCrds(DEFAULT_SCHEMAS), await cp.client().servedKinds());
  plan = planOf(full, KUEUE_APPS);
  const loopback = await loopbackKueue(plan);
  const admin = cp.client();
  const applied = await applySteps(admin, [...plan.steps, { label: 'admission webhooks of the installs', manager: ARGOCD_MANAGER, objects: plan.webhooks }]);
  expect(applied.refused.map(refusalText)).toEqual([]);
  kueue = await startKueue(cp, loopback);

  sampleMpiJob = view.folders.find((f) => f.folder === 'samples')!.objects.find((o) => o.kind === 'MPIJob') as KubeObject;
  const queues = plan.steps.flatMap((s) => s.objects).map((o) => o.object);
  const localQueue = queues.find((o) => o.kind === 'LocalQueue' && o.metadata.namespace === tenantNamespace)!;
  tenantQueue = localQueue.metadata.name;
  const clusterQueues = queues.filter((o) => o.kind === 'ClusterQueue');
  const own = clusterQueues.find((q) => q.metadata.name === (localQueue.spec as Json).clusterQueue)!;
  const gpusOf = (q: KubeObject) => Number(((q.spec as Json).resourceGroups as Json[]).flatMap((g) => g.flavors as Json[])
    .flatMap((f) => f.resources as Json[]).find((r) => r.name === GPU)?.nominalQuota ?? 0);
  tenantGpus = gpusOf(own);
  cohortGpus = clusterQueues.filter((q) => (q.spec as Json).cohortName === (own.spec as Json).cohortName).reduce((n, q) => n + gpusOf(q), 0);
}, 10 * 60 * 1000);

afterAll(async () => {
  await kueue?.stop();
  await cp?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A sample Job of the tenant: one pod asking for `gpus` GPUs, in the tenant's LocalQueue, created unsuspended. */
function sampleJob(name: string, gpus: number): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: tenantNamespace, labels: { [QUEUE_LABEL]: tenantQueue } },
    spec: {
      suspend: false,
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'train', image: 'busybox:1.36', command: ['true'], resources: { requests: { [GPU]: String(gpus) }, limits: { [GPU]: String(gpus) } } }],
        },
      },
    },
  } as KubeObject;
}

/** The Workload Kueue made for a Job, once `ready` says it is what is waited for; fails with Kueue's log after ACT_MS. */
async function workloadOf(client: KubeClient, job: KubeObject, ready: (w: Json) => boolean): Promise<Json> {
  const w = await poll(() => workloadOwnedBy(client, job), (x) => x !== undefined && ready(x), ACT_MS);
  if (w === undefined || !ready(w)) throw new Error(`${job.metadata.name}: its Workload is ${JSON.stringify(w?.status ?? 'not there')}; Kueue's log:\n${kueue?.log()}`);
  return w;
}

/** Waits until a deleted Workload is gone. */
async function workloadGone(client: KubeClient, w: Json): Promise<void> {
  const url = `/apis/kueue.x-k8s.io/v1beta2/namespaces/${w.metadata.namespace}/workloads/${w.metadata.name}`;
  if (await poll(() => client.get(url), (x) => x === undefined, ACT_MS)) {
    throw new Error(`Workload ${w.metadata.namespace}/${w.metadata.name} still there ${ACT_MS} ms after its owner was deleted`);
  }
}

const admitted = (w: Json) => conditionOf(w, 'Admitted')?.status === 'True';

async function suspended(client: KubeClient, job: KubeObject): Promise<boolean> {
  return ((await client.read(job))!.spec as Json).suspend === true;
}

describe(`Kueue ${requiredVersion(KUEUE_MODULE, KUEUE_MODULE_DIR)} on the reference cluster's queues`, () => {
  it('the rendered MPIJob sample, synced as Argo CD syncs it, is suspended, admitted whole by its LocalQueue\'s ClusterQueue, and let run', async () => {
    const admin = cp.client();
    const job = structuredClone(sampleMpiJob);
    const runPolicy = (o: KubeObject) => ((o.spec as Json).runPolicy ?? {}) as Json;
    const created = await admin.apply(job, { fieldManager: ARGOCD_MANAGER });
    expect(runPolicy(created).suspend, 'Kueue\'s webhook suspends a queued MPIJob at creation').toBe(true);
    const w = await workloadOf(admin, job, admitted);
    const queueName = (job.metadata.labels as Record<string, string>)[QUEUE_LABEL];
    const queue = plan.steps.flatMap((s) => s.objects).map((o) => o.object)
      .find((o) => o.kind === 'LocalQueue' && o.metadata.namespace === job.metadata.namespace && o.metadata.name === queueName)!;
    expect(w.status.admission.clusterQueue).toBe((queue.spec as Json).clusterQueue);
    // every replica of the sample in the admission: the launcher and all the workers, with their GPUs
    type Replica = { replicas?: number; template: { spec: { containers: Json[] } } };
    const replicas = (job.spec as { mpiReplicaSpecs: Record<string, Replica> }).mpiReplicaSpecs;
    const gpusOf = (r: Replica) => (r.replicas ?? 1) * r.template.spec.containers.reduce((n, c) => n + Number(c.resources?.limits?.[GPU] ?? 0), 0);
    const assigned = (w.status.admission.podSetAssignments as Json[]);
    const pods = Object.values(replicas).reduce((n, r) => n + (r.replicas ?? 1), 0);
    expect(assigned.map((a) => a.count).reduce((n: number, c: number) => n + c, 0)).toBe(pods);
    expect(assigned.reduce((n, a) => n + Number(a.resourceUsage?.[GPU] ?? 0), 0)).toBe(Object.values(replicas).reduce((n, r) => n + gpusOf(r), 0));
    await poll(() => admin.read(job), (o) => runPolicy(o!).suspend === false, ACT_MS);
    expect(runPolicy((await admin.read(job))!).suspend, 'admitted: Kueue unsuspends the MPIJob').toBe(false);
    // its quota back for the tenants' Jobs below: the MPIJob and its Workload gone. The test bed's cleanup, not
    // Kueue's: the garbage collector would delete the Workload only once its discovery sees the new CRD's kinds (up to
    // 30 s), so the Workload is deleted here, its finalizer lifted
    await admin.delete(job, 'Background');
    await admin.request('PATCH', `/apis/kueue.x-k8s.io/v1beta2/namespaces/${w.metadata.namespace}/workloads/${w.metadata.name}`,
      { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' });
    await admin.delete(w as KubeObject, 'Background');
    await workloadGone(admin, w);
  });

  it('a tenant\'s Job is suspended at creation, then admitted within its ClusterQueue\'s nominal quota and unsuspended', async () => {
    const tenant = cp.client('tenant');
    const job = sampleJob('within-quota', tenantGpus);
    const created = await tenant.create(job);
    expect((created.spec as Json).suspend, 'Kueue\'s webhook suspends a queued Job at creation').toBe(true);
    const w = await workloadOf(tenant, job, admitted);
    expect(w.status.admission.clusterQueue).toBe(((plan.steps.flatMap((s) => s.objects).find((o) => o.object.kind === 'LocalQueue' && o.object.metadata.namespace === tenantNamespace)!.object.spec) as Json).clusterQueue);
    const usage = (w.status.admission.podSetAssignments as Json[])[0].resourceUsage as Json;
    expect(usage[GPU]).toBe(String(tenantGpus));
    await poll(() => suspended(tenant, job), (s) => !s, ACT_MS);
    expect(await suspended(tenant, job), 'admitted: Kueue unsuspends the Job').toBe(false);
  });

  it('a second Job beyond the nominal quota borrows the cohort\'s idle GPUs; one beyond the cohort stays pending', async () => {
    const tenant = cp.client('tenant');
    const borrowing = Math.min(tenantGpus, cohortGpus - tenantGpus);
    expect(borrowing, 'the cohort has GPUs to lend').toBeGreaterThan(0);
    const second = sampleJob('borrows', borrowing);
    await tenant.create(second);
    const w = await workloadOf(tenant, second, admitted);
    // the ClusterQueue's status follows the admission a moment later
    const expected = [String(tenantGpus + borrowing), String(borrowing)];
    const reserved = async () => {
      const cq = (await cp.client().get(`/apis/kueue.x-k8s.io/v1beta2/clusterqueues/${w.status.admission.clusterQueue}`))!;
      const reservations = ((cq.status as Json | undefined)?.flavorsReservation ?? []) as Json[];
      const gpu = reservations.flatMap((f) => f.resources as Json[]).find((r) => r.name === GPU);
      return [gpu?.total, gpu?.borrowed];
    };
    await poll(reserved, (r) => JSON.stringify(r) === JSON.stringify(expected), ACT_MS);
    expect(await reserved()).toEqual(expected);
    expect(await suspended(tenant, second)).toBe(false);

    const third = sampleJob('beyond-the-cohort', cohortGpus - tenantGpus - borrowing + 1);
    await tenant.create(third);
    const pending = await workloadOf(tenant, third, (x) => conditionOf(x, 'QuotaReserved')?.status === 'False');
    expect(admitted(pending)).toBe(false);
    expect(conditionOf(pending, 'QuotaReserved')?.message).toMatch(/insufficient|couldn't assign/i);
    expect(await suspended(tenant, third)).toBe(true);
  });
});
