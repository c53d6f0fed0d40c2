import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { ClusterView, readClusters, renderClusterSources } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { EngineBudget } from '../../src/engines';
import { FLEET_FILE } from '../../src/model/fleet';
import { workerIdentityName } from '../../src/model/multikueue-role';
import { MULTIKUEUE, NAMESPACES, RESOURCES } from '../../src/model/names';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { loadModels } from '../../src/synth/pipeline';
import { applySteps, ARGOCD_MANAGER, planSync, refusalText, SyncPlan, vendoredCrds } from '../../src/twin/argocd-sync';
import { kueueBinary } from '../../src/twin/binary';
import { ControlPlane, kubeconfigText, startControlPlane } from '../../src/twin/control-plane';
import { KubeObject } from '../../src/twin/kube-client';
import { conditionOf, KueueProcess, loopbackKueue, planOf, startKueue, workloadOwnedBy } from '../../src/twin/kueue';
import { serviceAccountToken } from '../../src/twin/operator-process';
import { poll } from '../../src/twin/poll';
import { RenderSession } from '../../src/upstream/render-session';
import { editYamlFile } from '../helpers';
import { FLEET_FIXTURE } from '../paths';

/**
 * MultiKueue for real (issues 39 and 42): the fleet fixture's manager (hub) and one of its workers (lab-a), each a
 * hermetic control plane with the Kueue of the pinned release running on it (kueue.ts), their Kueue installs (both
 * managed), queues, tenants and `multikueue` folders applied as Argo CD applies them. The worker's kubeconfig Secret
 * is made on the manager as the fleet page says (a token of the ServiceAccount the worker's `multikueue` folder
 * renders, with the rights of its ClusterRole only). A tenant's Job on the manager is dispatched to the worker,
 * admitted there by the worker's Kueue, and the manager's Workload is admitted through the MultiKueue check.
 */

type Json = Record<string, any>;

const work = mkdtempSync(path.join(tmpdir(), 'multikueue-test-'));
const MANAGER = 'hub';
const WORKER = 'lab-a';
/** The applications of a plan MultiKueue needs: Kueue's install, the queues, the tenants, the fleet's objects. */
const APPS = /-(kueue-install|kueue|tenants|multikueue)$/;
/** How long Kueue may take to act on one object across two clusters (it acts within seconds; bounds one that never does). */
const ACT_MS = 60_000;

interface Member {
  readonly name: string;
  cp: ControlPlane;
  plan: SyncPlan;
  kueue?: KueueProcess;
}
const members = new Map<string, Member>();
let tenantNamespace: string;
let tenantQueue: string;

/** Polls `read` until `done` says yes; fails after ACT_MS with what it saw and both Kueues' logs. */
async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const v = await poll(read, done, ACT_MS);
  if (done(v)) return v;
  const logs = [...members.values()].map((m) => `--- ${m.name}'s Kueue:\n${m.kueue?.log(30) ?? '(not started)'}`).join('\n');
  throw new Error(`${what}: not within ${ACT_MS} ms; last seen ${JSON.stringify(v)}\n${logs}`);
}


beforeAll(async () => {
  await kueueBinary();
  // the fixture with both Kueues managed (the worker's is pre-installed in the fixture: its install is then not in the
  // tree), and its kubeconfig worker only: a ClusterProfile worker needs the ClusterProfile CRD on the manager (its
  // cluster inventory's), which no pinned copy has; without it the manager's MultiKueue cluster controller does not start
  const fleet = path.join(work, 'fleet');
  cpSync(FLEET_FIXTURE, fleet, { recursive: true });
  const edit = (file: string, fn: (o: Json) => void) => editYamlFile(path.join(fleet, file), fn);
  edit(`${WORKER}.yaml`, (o) => { o.installs = { ...o.installs, kueue: 'managed' }; });
  edit(FLEET_FILE, (o) => {
    o.multiKueue.workers = (o.multiKueue.workers as Json[]).filter((w) => w.kubeconfigSecret !== undefined);
    delete o.multiKueue.clusterProfile;
  });
  const files = [MANAGER, WORKER].map((n) => path.join(fleet, `${n}.yaml`));
  const out = path.join(work, 'dist');
  expect(await main(['synth', ...files.flatMap((f) => ['--config', f]), '--out', out, '--quiet'])).toBe(EXIT.ok);
  const models = loadModels(files);
  const session = new RenderSession(defaultCacheDir(), new EngineBudget());
  const crds = vendoredCrds(DEFAULT_SCHEMAS);

  const started = await Promise.all([MANAGER, WORKER].map(async (name) => {
    const model = models.find((m) => m.name === name)!;
    const view: ClusterView = { ...readClusters(out).find((c) => c.name === name)!, model };
    const renders = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, session });
    const tenant = model.tenants[0];
    const cp = await startControlPlane({ identities: { tenant: { user: 'tenant', groups: [tenant.group] } } });
    const plan = planOf(planSync(view, renders, crds, await cp.client().servedKinds()), APPS);
    return { name, cp, plan, tenant };
  }));
  for (const s of started) members.set(s.name, { name: s.name, cp: s.cp, plan: s.plan });
  const manager = started.find((s) => s.name === MANAGER)!;
  tenantNamespace = manager.tenant.namespace;
  tenantQueue = manager.tenant.localQueue;

  for (const m of members.values()) {
    const loopback = await loopbackKueue(m.plan);
    const applied = await applySteps(m.cp.client(), [...m.plan.steps, { label: 'admission webhooks of the installs', manager: ARGOCD_MANAGER, objects: m.plan.webhooks }]);
    expect(applied.refused.map(refusalText), m.name).toEqual([]);
    m.kueue = await startKueue(m.cp, loopback);
  }

  // the worker's kubeconfig Secret on the manager, as the fleet page has it made: a token of the identity the worker's
  // multikueue folder renders for the manager, and the worker's API server with its CA
  const w = members.get(WORKER)!;
  const token = await serviceAccountToken(w.cp.client(), NAMESPACES.kueue, workerIdentityName(MANAGER));
  const clusterObject = members.get(MANAGER)!.plan.steps.flatMap((s) => s.objects).map((o) => o.object)
    .find((o) => o.kind === 'MultiKueueCluster' && o.metadata.name === WORKER)!;
  await kubeconfigSecret((clusterObject.spec as Json).clusterSource.kubeConfig.location, token);
}, 15 * 60 * 1000);

/** A kubeconfig Secret on the manager for the worker's API server (with its CA), as the fleet page has it made, with `token`. */
async function kubeconfigSecret(name: string, token: string): Promise<void> {
  const w = members.get(WORKER)!;
  const kubeconfig = kubeconfigText(w.cp.server, w.cp.caFile, workerIdentityName(MANAGER), token, { embedCa: true });
  await members.get(MANAGER)!.cp.client().apply({
    apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NAMESPACES.kueue }, data: { [MULTIKUEUE.kubeconfigKey]: Buffer.from(kubeconfig).toString('base64') },
  } as KubeObject, { fieldManager: 'kubectl' });
}

afterAll(async () => {
  for (const m of members.values()) {
    await m.kueue?.stop();
    await m.cp.stop();
  }
  rmSync(work, { recursive: true, force: true });
});

describe('MultiKueue between two API servers: the fleet fixture\'s manager and a worker, each with its Kueue', () => {
  it('the manager connects to the worker with the rendered identity\'s token (MultiKueueCluster Active)', async () => {
    const manager = members.get(MANAGER)!.cp.client();
    const cluster = await until(`MultiKueueCluster ${WORKER} Active`, () => manager.get(`/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/${WORKER}`), (c) => conditionOf(c, 'Active')?.status === 'True');
    expect(conditionOf(cluster, 'Active')?.status).toBe('True');
    // and the assertion fires: the same worker through a kubeconfig whose token the worker refuses is not Active
    await kubeconfigSecret('multikueue-refused', 'not-a-token');
    await manager.apply({ apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'MultiKueueCluster', metadata: { name: 'refused' }, spec: { clusterSource: { kubeConfig: { location: 'multikueue-refused', locationType: 'Secret' } } } } as KubeObject);
    const refused = await until('MultiKueueCluster refused: Active False', () => manager.get('/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/refused'), (c) => conditionOf(c, 'Active')?.status === 'False');
    expect(conditionOf(refused, 'Active')?.reason).toBeTruthy();
    await manager.delete(refused as KubeObject, 'Background');
  });

  it('a tenant\'s Job on the manager is dispatched to the worker, admitted by the worker\'s Kueue, and admitted on the manager through the MultiKueue check', async () => {
    const manager = members.get(MANAGER)!.cp;
    const worker = members.get(WORKER)!.cp.client();
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'dispatched', namespace: tenantNamespace, labels: { 'kueue.x-k8s.io/queue-name': tenantQueue } },
      spec: {
        backoffLimit: 0,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'train', image: 'busybox:1.36', command: ['true'], resources: { limits: { [RESOURCES.gpu]: '1' } } }] } },
      },
    } as KubeObject;
    const created = await manager.client('tenant').create(job);
    expect((created.spec as Json).suspend, 'suspended at creation by the manager\'s Kueue').toBe(true);
    expect((created.spec as Json).managedBy, 'handed to MultiKueue (its queue has the MultiKueue check)').toBe('kueue.x-k8s.io/multikueue');
    // the copy on the worker, admitted there by the worker's own Kueue
    const remote = await until(`the Job's copy on ${WORKER} admitted`, () => workloadOwnedBy(worker, job), (w) => conditionOf(w, 'Admitted')?.status === 'True');
    expect(remote?.metadata.labels?.['kueue.x-k8s.io/multikueue-origin']).toBeDefined();
    // the manager's Workload: its MultiKueue check Ready, admitted, and naming the worker it runs on
    const local = await until('the manager\'s Workload admitted', () => workloadOwnedBy(manager.client(), job), (w) => conditionOf(w, 'Admitted')?.status === 'True');
    const check = ((local!.status.admissionChecks ?? []) as Json[]).find((c) => c.name === 'multikueue');
    expect(check?.state).toBe('Ready');
    expect(local!.status.clusterName).toBe(WORKER);
  });
});
