import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { denials, nvidiaRuntimeClasses, tenantEscapes, WARN_TWIN, warnTwins, write } from './admission';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { checkCluster, ClusterView, readClusters, renderClusterSources } from '../../src/check';
import { ClusterIndex } from '../../src/check/cluster-index';
import { gpuOnlyKeys, PLACEMENT_RULES } from '../../src/check/placement/rule';
import { policiesRefusing } from '../../src/check/tenancy';
import { EXIT, main } from '../../src/cli';
import { TRUSTED_REQUESTERS } from '../../src/components/tenants/trusted-requesters';
import { EngineBudget } from '../../src/engines';
import { isDescriptionFile } from '../../src/model/description-files';
import { LABELS, RESOURCES } from '../../src/model/names';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { Manifest } from '../../src/render/manifest';
import { loadModels } from '../../src/synth/pipeline';
import {
  applySteps, ARGOCD_MANAGER, failingWebhooks, interceptedObjects, planSync, PlannedObject, refusalText, secondApply, splitConversionRefusals,
  SyncPlan, vendoredCrds,
} from '../../src/twin/argocd-sync';
import { controlPlaneBinary } from '../../src/twin/binary';
import { ControlPlane, startControlPlane } from '../../src/twin/control-plane';
import { ApiError, describe as describeObject, KubeObject } from '../../src/twin/kube-client';
import { HermeticNode, nodesOf, operandDaemonSets, PlacementInput, placementFindings, placeSamples, settledState, waitingForKueue } from '../../src/twin/placement';
import { poll } from '../../src/twin/poll';
import { ClusterRenders } from '../../src/upstream/render';
import { RenderSession } from '../../src/upstream/render-session';
import { EXAMPLES_DIR, FIXTURE_CLUSTERS, REFERENCE_FILE } from '../paths';
import { kueueSuspended } from '../tenants/admission-eval';

/**
 * Every example (src/clusters/, whatever it holds) and every fixture cluster, rendered, then applied to a real
 * Kubernetes control plane (test/cluster/: kube-apiserver, controller manager, scheduler and etcd of the pinned
 * release) as Argo CD applies it (argocd-sync.ts): the API server must accept every object (structural schemas,
 * the CRDs' CEL rules and defaulting, immutable fields, admission, ValidatingAdmissionPolicy type checks), and a
 * second apply must change nothing. One control plane per distinct rendered cluster: a cluster is a whole cluster
 * (its cluster-scoped objects would collide with another's). A tree that examples and fixtures render alike is
 * applied once.
 */

interface Source {
  readonly file: string;
  readonly origin: 'example' | 'fixture';
}

const descriptionsIn = (dir: string, origin: Source['origin']): Source[] => readdirSync(dir).filter(isDescriptionFile).sort().map((f) => ({ file: path.join(dir, f), origin }));
const SOURCES = [...descriptionsIn(EXAMPLES_DIR, 'example'), ...descriptionsIn(FIXTURE_CLUSTERS, 'fixture')];
/** The cluster name of a description (its `name`), read at collection time to name the tests. */
const nameOf = (file: string): string => String((parse(readFileSync(file, 'utf8')) as { name?: unknown })?.name ?? path.basename(file));
const NAMES = [...new Set(SOURCES.map((s) => nameOf(s.file)))].sort();

/** One rendered tree of a cluster name, with the descriptions that render it. */
interface Tree {
  readonly name: string;
  readonly view: ClusterView;
  readonly descriptions: readonly Source[];
  renders?: ClusterRenders;
  plan?: SyncPlan;
  cp?: ControlPlane;
  /** The Nodes of the description, registered before the first sync (a cluster has its nodes before Argo CD). */
  nodes?: HermeticNode[];
  /** What placementFindings needs to know of the tree besides the nodes: its user workloads, its MIG-only operands. */
  placement?: Pick<PlacementInput, 'userWorkloads' | 'migCapableOnly'>;
}

const work = mkdtempSync(path.join(tmpdir(), 'apply-as-argocd-'));
let trees: Tree[] = [];

/** The content of a rendered tree, to apply each distinct one once. */
function digestOf(view: ClusterView): string {
  const h = createHash('sha256');
  for (const f of [...view.folders].sort((a, b) => a.folder.localeCompare(b.folder))) h.update(f.folder).update(JSON.stringify(f.objects));
  return h.digest('hex');
}

beforeAll(async () => {
  // the control plane first: without Go, or when it does not build, every test fails with this one line
  await controlPlaneBinary();
  const read: { source: Source; view: ClusterView }[] = [];
  for (const origin of ['example', 'fixture'] as const) {
    const files = SOURCES.filter((s) => s.origin === origin);
    if (files.length === 0) continue;
    const out = path.join(work, origin, 'dist');
    expect(await main(['synth', ...files.flatMap((s) => ['--config', s.file]), '--out', out, '--quiet'])).toBe(EXIT.ok);
    const models = loadModels(files.map((s) => s.file));
    for (const raw of readClusters(out)) {
      const model = models.find((m) => m.name === raw.name);
      if (!model) continue; // fleet/
      read.push({ source: files.find((s) => nameOf(s.file) === raw.name)!, view: { ...raw, model } });
    }
  }
  const byDigest = new Map<string, Tree>();
  for (const r of read) {
    const d = digestOf(r.view);
    const known = byDigest.get(d);
    if (known) (known.descriptions as Source[]).push(r.source);
    else byDigest.set(d, { name: r.view.name, view: r.view, descriptions: [r.source] });
  }
  trees = [...byDigest.values()];
  const session = new RenderSession(defaultCacheDir(), new EngineBudget());
  for (const t of trees) t.renders = await renderClusterSources(t.view, { upstream: DEFAULT_UPSTREAM, session });
}, 60 * 60 * 1000);

let vendored: ReturnType<typeof vendoredCrds> | undefined;

afterAll(async () => {
  await Promise.all(trees.map((t) => t.cp?.stop()));
  rmSync(work, { recursive: true, force: true });
});

const treesNamed = (name: string) => trees.filter((t) => t.name === name);
const label = (t: Tree) => t.descriptions.map((d) => path.relative(path.dirname(EXAMPLES_DIR), d.file)).join(' = ');

/** The webhook of a refusal by an unreachable admission webhook, if it is one. */
const webhookOf = (message: string) => /failed calling webhook "([^"]+)"/.exec(message)?.[1];

describe.each(NAMES)('cluster %s, applied as Argo CD applies it', (name) => {
  it('every object is accepted by the API server, in wave order, with Argo CD\'s field manager', async () => {
    for (const t of treesNamed(name)) {
      const tenantGroup = t.view.model?.tenants[0]?.group;
      t.cp = await startControlPlane(tenantGroup ? { identities: { tenant: { user: 'tenant', groups: [tenantGroup] } } } : {});
      t.nodes = nodesOf(t.view.model!);
      for (const n of t.nodes) await t.cp.createNode(n.node);
      vendored ??= vendoredCrds(DEFAULT_SCHEMAS);
      t.plan = planSync(t.view, t.renders!, vendored, await t.cp.client().servedKinds());
      const timings = process.env.CLUSTER_TEST_TIMINGS === '1';
      const t0 = Date.now();
      const report = await applySteps(t.cp.client(), t.plan!.steps, {
        onStep: timings ? (s, ms) => process.stderr.write(`${t.name}: ${ms} ms ${s.objects.length} objects: ${s.label}\n`) : undefined,
      });
      if (timings) process.stderr.write(`${t.name}: applied in ${Date.now() - t0} ms; CPU s ${JSON.stringify(t.cp.cpuSeconds())}\n`);
      const { conversion, rest } = splitConversionRefusals(t.plan!, report.refused);
      expect(rest.map(refusalText), label(t)).toEqual([]);
      expect(report.applied.length + conversion.length).toBe(t.plan!.steps.reduce((n, s) => n + s.objects.length, 0));
    }
  });

  it('a second apply (the next sync, or self-heal, as Argo CD\'s server-side diff predicts it) changes nothing: no drift', async () => {
    for (const t of treesNamed(name)) {
      // what Argo CD syncs again: not what the cluster had before it (the pre-installed add-ons' CRDs and namespaces)
      const { drift, refused } = await secondApply(t.cp!.client(), t.plan!.steps.filter((s) => s.manager !== 'pre-installed'));
      expect(splitConversionRefusals(t.plan!, refused).rest.map(refusalText), label(t)).toEqual([]);
      expect(drift.map((d) => `${d.object.application}: ${describeObject(d.object.object)}: ${d.paths.join(', ')}`), label(t)).toEqual([]);
    }
  });

  it('every ValidatingAdmissionPolicy type-checks without a warning (the controller manager\'s type checker)', async () => {
    for (const t of treesNamed(name)) {
      const client = t.cp!.client();
      const names = t.plan!.steps.flatMap((s) => s.objects).filter((o) => o.object.kind === 'ValidatingAdmissionPolicy').map((o) => o.object.metadata.name);
      const warnings = await Promise.all(names.map((n) => typeCheckWarnings(client, n)));
      expect(warnings.flat(), label(t)).toEqual([]);
    }
  });

  it('the controllers create the pods, and the scheduler binds each to the node kind it belongs on; the model agrees', async () => {
    for (const t of treesNamed(name)) {
      const client = t.cp!.client();
      const planned = t.plan!.steps.flatMap((s) => s.objects);
      // the operands the GPU and Network Operators would create, as the model reads them off the rendered policies
      const operands = operandDaemonSets(planned.map((o) => o.object));
      for (const ns of new Set(operands.map((o) => o.object.metadata.namespace!))) await client.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { fieldManager: 'test' });
      for (const o of operands) await client.apply(o.object, { fieldManager: 'test' });
      const samples = new Set((t.view.folders.find((f) => f.folder === 'samples')?.objects ?? []).map((m) => `${m.kind} ${m.metadata.namespace ?? ''}/${m.metadata.name}`));
      const migCapableOnly = new Set(operands.filter((o) => o.migCapableOnly).map((o) => `DaemonSet ${o.object.metadata.namespace}/${o.object.metadata.name}`));
      t.placement = { userWorkloads: samples, migCapableOnly };
      const t0 = Date.now();
      const state = await settledState(client);
      if (process.env.CLUSTER_TEST_TIMINGS === '1') process.stderr.write(`${t.name}: settled in ${Date.now() - t0} ms (${state.pods.length} pods); CPU s ${JSON.stringify(t.cp!.cpuSeconds())}\n`);
      const events = await client.list('/api/v1/events');
      if (process.env.PLACEMENT_DUMP === '1') {
        for (const p of state.pods) process.stderr.write(`${t.name}: pod ${p.metadata.namespace}/${p.metadata.name} -> ${(p.spec as any).nodeName ?? JSON.stringify((p.status as any)?.conditions)}\n`);
        for (const d of state.daemonSets) process.stderr.write(`${t.name}: ds ${d.metadata.namespace}/${d.metadata.name} desired ${(d.status as any)?.desiredNumberScheduled}\n`);
        process.stderr.write(`${t.name}: waiting ${JSON.stringify(waitingForKueue(state))}\n`);
        for (const v of await client.list('/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies')) process.stderr.write(`${t.name}: vap ${v.metadata.name} ${JSON.stringify((v.status as any)?.typeChecking)}\n`);
      }
      expect(placementFindings({ nodes: t.nodes!, state, ...t.placement }, events), label(t)).toEqual([]);
      expect(checkCluster(t.view, { rules: PLACEMENT_RULES, renders: t.renders }).map((f) => f.message), label(t)).toEqual([]);
      // the samples' pods, as their controllers would create them once Kueue admits each (the samples Argo CD syncs: not
      // the templates beside them, which are left out of the folder's kustomization)
      const synced = new Set(planned.map((o) => describeObject(o.object)));
      const sampleObjects = (t.view.folders.find((f) => f.folder === 'samples')?.objects ?? []).filter((m) => synced.has(describeObject(m as KubeObject)));
      const ofSamples = await placeSamples(client, new ClusterIndex(t.view), sampleObjects, t.nodes!);
      if (process.env.PLACEMENT_DUMP === '1') process.stderr.write(`${t.name}: samples ${JSON.stringify(ofSamples)}\n`);
      expect(ofSamples.findings, label(t)).toEqual([]);
      if (sampleObjects.some((m) => m.kind === 'MPIJob')) expect(ofSamples.placed, label(t)).not.toEqual([]);
    }
  });

  it('a tenant\'s escapes (node, priority, devices, host, GPUs outside Kueue) are refused by the API server; a queued MPIJob and its pods are admitted', async () => {
    for (const t of treesNamed(name)) {
      const model = t.view.model!;
      const tenant = model.tenants[0];
      if (!tenant) continue;
      const cp = t.cp!;
      await prepareAdmission(t);
      const asTenant = cp.client('tenant');
      const service = t.nodes!.find((n) => n.kind.role === 'service')!.node.metadata.name;
      const { allowed, escapes } = tenantEscapes(model, tenant.namespace, service);
      expect(await denials(asTenant, 'POST', allowed), label(t)).toEqual([]);
      for (const e of escapes) expect(await denials(asTenant, 'POST', e.pod), `${label(t)}: ${e.what}`).toEqual([expect.stringMatching(e.refusedBy)]);
      // check's model of the policies (src/check/tenancy.ts: the CEL library) refuses with the policies the API server refuses with
      const modelRefusing = policiesRefusing(new ClusterIndex(t.view));
      for (const e of [{ what: 'the allowed pod', pod: allowed }, ...escapes]) {
        const v = await write(asTenant, 'POST', e.pod);
        expect(modelRefusing(tenant.namespace, e.pod as Record<string, unknown>, 'tenant').sort(), `${label(t)}: ${e.what}`).toEqual([...v.failedPolicies].sort());
      }

      // a queued MPIJob: the tenant submits it (Kueue's webhook suspends it), the MPI Operator creates its workers and its
      // launcher Job, the Job controller (the controller manager's own identity) the launcher's pod
      const sample = t.view.folders.flatMap((f) => f.objects).find((m) => m.kind === 'MPIJob');
      if (!sample) continue;
      const mpiJob = kueueSuspended({ ...structuredClone(sample), metadata: { name: 'queued-mpijob', namespace: tenant.namespace, labels: { ...sample.metadata.labels, [LABELS.queueName]: tenant.localQueue } } }) as KubeObject;
      const unqueued = { ...structuredClone(mpiJob), metadata: { ...mpiJob.metadata, labels: {} } } as KubeObject;
      expect(await denials(asTenant, 'POST', unqueued), label(t)).toEqual([expect.stringMatching(/^tenant jobs must name a LocalQueue/)]);
      expect(modelRefusing(tenant.namespace, unqueued as Record<string, unknown>, 'tenant'), label(t)).toEqual((await write(asTenant, 'POST', unqueued)).failedPolicies);
      const created = await write(asTenant, 'POST', mpiJob, { dryRun: false });
      expect(created.message, label(t)).toBe('');
      const operator = cp.client().as(TRUSTED_REQUESTERS.find((r) => r.who === 'MPI Operator')!.username, ['system:masters']);
      type Replica = { replicas?: number; restartPolicy?: string; template: { metadata?: object; spec: object } };
      const replicas = (mpiJob.spec as { mpiReplicaSpecs: Record<string, Replica> }).mpiReplicaSpecs;
      const uid = created.object!.metadata.uid as string;
      const owner = { apiVersion: mpiJob.apiVersion, kind: mpiJob.kind, name: mpiJob.metadata.name, uid, controller: true };
      for (const [role, r] of Object.entries(replicas).filter(([k]) => k !== 'Launcher')) {
        const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...r.template.metadata, name: `${mpiJob.metadata.name}-${role.toLowerCase()}-0`, namespace: tenant.namespace, ownerReferences: [owner] }, spec: r.template.spec };
        expect(await denials(operator, 'POST', pod), `${label(t)}: ${role} pod`).toEqual([]);
      }
      const launcher = replicas.Launcher;
      const job = {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: `${mpiJob.metadata.name}-launcher`, namespace: tenant.namespace, ownerReferences: [owner] },
        spec: { backoffLimit: 0, template: { metadata: launcher.template.metadata, spec: { ...launcher.template.spec, restartPolicy: launcher.restartPolicy ?? 'Never' } } },
      };
      const launched = await write(operator, 'POST', job, { dryRun: false });
      expect(launched.message, label(t)).toBe('');
      const pod = await launcherPod(cp.client(), launched.object!);
      expect(pod.failed, label(t)).toEqual([]);
      expect(t.nodes!.find((n) => n.node.metadata.name === pod.nodeName)?.kind.role, `${label(t)}: the launcher's node`).toBe('gpu');
      await cp.client().request('DELETE', `/apis/batch/v1/namespaces/${tenant.namespace}/jobs/${job.metadata.name}`, { body: { propagationPolicy: 'Background' } });
      // no kubelet confirms a bound pod's end: without a grace period of 0 it would stay, Terminating, for the tests after this one
      const launcherPods = `batch.kubernetes.io/controller-uid=${String(launched.object!.metadata.uid)}`;
      await cp.client().request('DELETE', `/api/v1/namespaces/${tenant.namespace}/pods`, { query: { labelSelector: launcherPods, gracePeriodSeconds: '0' } });
      await cp.client().delete(mpiJob);
    }
  });

  it('the installs\' admission webhooks, registered last, are accepted and intercept only what syncs after their install', async () => {
    for (const t of treesNamed(name)) {
      const client = t.cp!.client();
      const registered = await applySteps(client, [{ label: 'admission webhooks of the installs', manager: ARGOCD_MANAGER, objects: t.plan!.webhooks }]);
      expect(registered.refused.map(refusalText), label(t)).toEqual([]);
      if (t.plan!.webhooks.length === 0) continue;
      // the objects they intercept again, dry run (updates: the objects exist): what a webhook whose pods do not run
      // refuses is what Argo CD must not sync before that install is Healthy; the waves order it after the install
      // (or it is the install's own object)
      const installOf = new Map<string, PlannedObject>();
      for (const w of t.plan!.webhooks) for (const hook of failingWebhooks(w.object)) installOf.set(hook, w);
      const intercepted = await interceptedObjects(client, t.plan!, t.plan!.webhooks.map((w) => w.object));
      const dry = await applySteps(client, [{ label: 'intercepted objects, dry run', manager: ARGOCD_MANAGER, objects: intercepted }], { dryRun: true });
      const refusals = splitConversionRefusals(t.plan!, dry.refused).rest;
      expect(refusals.length, `${label(t)}: the webhooks intercept something`).toBeGreaterThan(0);
      const foreign = refusals.filter((r) => {
        const hook = webhookOf(r.message);
        return hook === undefined || !installOf.has(hook);
      });
      expect(foreign.map(refusalText), label(t)).toEqual([]);
      const early = refusals.filter((r) => {
        const install = installOf.get(webhookOf(r.message)!)!;
        return r.object.application !== install.application && !(r.object.wave > install.wave);
      });
      expect(early.map((r) => `${refusalText(r)} (the webhook's install ${installOf.get(webhookOf(r.message)!)!.application} is wave ${installOf.get(webhookOf(r.message)!)!.wave})`), label(t)).toEqual([]);
    }
  });
});

/** What the API server needs before a tenant writes: the warning twins of the denying bindings, the GPU Operator's RuntimeClasses. */
async function prepareAdmission(t: Tree): Promise<void> {
  const client = t.cp!.client();
  const planned = t.plan!.steps.flatMap((s) => s.objects).map((p) => p.object);
  for (const o of nvidiaRuntimeClasses()) await client.apply(o, { fieldManager: 'test' });
  const twins = warnTwins(planned);
  const namespace = t.view.model?.tenants[0]?.namespace;
  if (!namespace) {
    for (const o of twins) await client.apply(o, { fieldManager: 'test' });
    return;
  }
  // The API server's policy informer sees the bindings in the order they are written, a moment later. The twin of the
  // binding that refuses a probe is written last: once the probe's refusal comes with its warnings, every twin is seen
  // (waiting on any other twin left the later ones unseen on a busy machine: a refusal without its warnings).
  const probe = tenantEscapes(t.view.model!, namespace, 'none').escapes.find((e) => /privileged/.test(e.what))!.pod;
  const refusing = /with binding '([^']+)' denied request/.exec((await write(client, 'POST', probe)).message)?.[1];
  if (!refusing) throw new Error(`${t.name}: the privileged probe pod is not refused by a policy`);
  const last = `${refusing}${WARN_TWIN}`;
  for (const o of [...twins.filter((b) => b.metadata.name !== last), ...twins.filter((b) => b.metadata.name === last)]) await client.apply(o, { fieldManager: 'test' });
  const warned = await poll(() => write(client, 'POST', probe), (v) => v.failures.length > 0, 60_000, 200);
  if (warned.failures.length === 0) throw new Error(`${t.name}: the warning twins of the policies gave no warning within 60 s`);
}

/**
 * The pod the Job controller creates for a Job: it exists (the controller's request was admitted) and the scheduler
 * bound it; `failed`: the controller's FailedCreate events (an admission refusal of its request).
 */
async function launcherPod(client: ReturnType<ControlPlane['client']>, job: KubeObject): Promise<{ nodeName?: string; failed: string[] }> {
  const seen = await poll(async () => {
    const pods = await client.list(`/api/v1/namespaces/${job.metadata.namespace}/pods?labelSelector=${encodeURIComponent(`batch.kubernetes.io/controller-uid=${String(job.metadata.uid)}`)}`);
    const nodeName = (pods[0]?.spec as { nodeName?: string } | undefined)?.nodeName;
    const events = nodeName ? [] : await client.list(`/api/v1/namespaces/${job.metadata.namespace}/events`);
    const failed = events.filter((e) => (e.involvedObject as { uid?: string }).uid === job.metadata.uid && e.reason === 'FailedCreate').map((e) => String(e.message));
    return { nodeName, failed, pods: pods.length };
  }, (s) => s.nodeName !== undefined || s.failed.length > 0, 60_000, 250);
  if (seen.nodeName) return { nodeName: seen.nodeName, failed: [] };
  return { failed: seen.failed.length > 0 ? seen.failed : [`no pod bound within 60 s (${seen.pods} pods)`] };
}

/**
 * The type checker's warnings of a ValidatingAdmissionPolicy once it has seen its generation: one line per expression it
 * warns about (any warning: an undefined field of a kind the policy matches, a type error, a cost over the limit).
 */
async function typeCheckWarnings(client: ReturnType<ControlPlane['client']>, name: string): Promise<string[]> {
  type Status = { observedGeneration?: number; typeChecking?: { expressionWarnings?: { fieldRef: string; warning: string }[] } };
  const checked = (vap: KubeObject | undefined) => {
    const status = vap?.status as Status | undefined;
    return vap !== undefined && status?.observedGeneration === vap.metadata.generation && status?.typeChecking !== undefined;
  };
  const vap = await poll(() => client.get(`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${name}`), checked, 60_000, 250);
  const status = vap?.status as Status | undefined;
  if (!checked(vap)) return [`ValidatingAdmissionPolicy ${name}: not type-checked within 60 s (status ${JSON.stringify(status)})`];
  return (status!.typeChecking!.expressionWarnings ?? []).map((w) => `ValidatingAdmissionPolicy ${name} ${w.fieldRef}: ${w.warning.replace(/\s+/g, ' ').trim()}`);
}

describe('the assertions fire: deliberately broken renders of the reference cluster', () => {
  const reference = () => {
    const t = trees.find((x) => x.descriptions.some((d) => d.file === REFERENCE_FILE));
    if (!t?.cp) throw new Error('the reference cluster was not applied (see its tests above)');
    return t;
  };
  const planned = (t: Tree, kind: string): PlannedObject => {
    const o = t.plan!.steps.flatMap((s) => s.objects).find((x) => x.object.kind === kind && x.application !== 'pre-installed');
    if (!o) throw new Error(`the reference cluster renders no ${kind}`);
    return { ...o, object: structuredClone(o.object) };
  };

  it('an invalid custom resource is refused (the CRD\'s structural schema, and its CEL rules)', async () => {
    const t = reference();
    const byEnum = planned(t, 'ClusterQueue');
    (byEnum.object.spec as Record<string, unknown>).queueingStrategy = 'Sideways';
    const byRule = planned(t, 'ClusterQueue');
    (byRule.object.spec as { resourceGroups: { coveredResources: string[] }[] }).resourceGroups[0].coveredResources.push('example.com/extra');
    const steps = [byEnum, byRule].map((o, i) => ({ label: `broken ${i}`, manager: ARGOCD_MANAGER, objects: [o] }));
    const report = await applySteps(t.cp!.client(), steps, { dryRun: true });
    expect(report.refused.map((r) => r.message)).toEqual([
      expect.stringMatching(/spec\.queueingStrategy: Unsupported value: "Sideways"/),
      expect.stringMatching(/flavors must have the same number of resources as the coveredResources/),
    ]);
  });

  it('a rendered change to an immutable field is refused on re-apply (StorageClass parameters, Deployment selector)', async () => {
    const t = reference();
    const sc = planned(t, 'StorageClass');
    sc.object.parameters = { ...(sc.object.parameters as Record<string, string> | undefined), changed: 'yes' };
    const deployment = planned(t, 'Deployment');
    type Labels = Record<string, string>;
    const spec = deployment.object.spec as { selector: { matchLabels: Labels }; template: { metadata: { labels: Labels } } };
    spec.selector.matchLabels = { ...spec.selector.matchLabels, broken: 'yes' };
    spec.template.metadata.labels = { ...spec.template.metadata.labels, broken: 'yes' };
    const { refused } = await secondApply(t.cp!.client(), [{ label: 'broken', manager: ARGOCD_MANAGER, objects: [sc, deployment] }]);
    expect(refused.map((r) => `${r.object.object.kind}: ${r.message}`).sort()).toEqual([
      expect.stringMatching(/^Deployment: .*spec\.selector: Invalid value: .*field is immutable/),
      expect.stringMatching(/^StorageClass: .*parameters: Invalid value: .*field is immutable/),
    ]);
  });

  it('a ValidatingAdmissionPolicy expression that does not type-check is warned about', async () => {
    const t = reference();
    const client = t.cp!.client();
    await client.apply({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'broken-type-check' },
      spec: {
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] },
        validations: [{ expression: 'object.spec.noSuchField == 1' }],
      },
    } as KubeObject);
    expect(await typeCheckWarnings(client, 'broken-type-check')).toEqual([expect.stringMatching(/^ValidatingAdmissionPolicy broken-type-check spec\.validations\[0\]\.expression: .*undefined field 'noSuchField'/)]);
  });

  it('a drifting render is caught by the second apply', async () => {
    const t = reference();
    const cm = planned(t, 'ConfigMap');
    const client = t.cp!.client();
    // another writer took over a field the render sets and changed it: the next sync puts it back, which is drift
    const data = cm.object.data as Record<string, string>;
    const key = Object.keys(data).sort()[0];
    const changed = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: cm.object.metadata.name, namespace: cm.object.metadata.namespace }, data: { [key]: `${data[key]}-drifted` } };
    await client.apply(changed as KubeObject, { fieldManager: 'someone-else', force: true });
    const { drift } = await secondApply(client, [{ label: 'drifted', manager: ARGOCD_MANAGER, objects: [cm] }]);
    // a key with dots (argocd-cm's resource.customizations...) is quoted in the path
    expect(drift.map((d) => d.paths)).toEqual([[`.data[${JSON.stringify(key)}]`]]);
  });

  it('an unplaceable Deployment, DaemonSet and sample, and a platform pod on a GPU worker, are reported by the placement assertions', async () => {
    const t = reference();
    const client = t.cp!.client();
    const model = t.view.model!;
    const namespace = 'broken-placement';
    await client.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, { fieldManager: 'test' });
    const gpuNodes = t.nodes!.filter((n) => n.kind.role === 'gpu');
    // a label only GPU workers carry, with one value on all of them
    const sameOnAll = (k: string) => new Set(gpuNodes.map((n) => n.node.metadata.labels?.[k])).size === 1;
    const gpuKey = [...gpuOnlyKeys(t.nodes!.map((n) => n.kind))].sort().find(sameOnAll)!;
    const onGpuWorkers = {
      nodeSelector: { [gpuKey]: gpuNodes[0].node.metadata.labels![gpuKey] },
      tolerations: gpuNodes.flatMap((n) => n.kind.taints).map((x) => ({ key: x.key, operator: 'Exists', effect: x.effect })),
    };
    const workload = (kind: 'Deployment' | 'DaemonSet', name: string, podSpec: object): KubeObject => ({
      apiVersion: 'apps/v1',
      kind,
      metadata: { name, namespace },
      spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }], ...podSpec } } },
    });
    const gpus = String(model.description.nodes.gpuWorkers.gpusPerNode + 1);
    const resources = (limits: Record<string, string>) => ({ containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { limits } }] });
    const broken = [
      // a platform pod that tolerates the service node, but asks for more memory than any node has
      workload('Deployment', 'unplaceable-platform', { tolerations: model.serviceNode.tolerations, ...resources({ memory: '1Pi' }) }),
      // a GPU agent that asks for one GPU more than a worker has
      workload('DaemonSet', 'unplaceable-gpu-agent', { ...onGpuWorkers, ...resources({ [RESOURCES.gpu]: gpus }) }),
      // a platform pod pinned to the GPU workers
      workload('Deployment', 'platform-on-gpu-worker', onGpuWorkers),
    ];
    for (const o of broken) await client.apply(o, { fieldManager: 'test' });
    const state = await settledState(client);
    const findings = placementFindings({ nodes: t.nodes!, state, ...t.placement! }, await client.list('/api/v1/events'));
    const of = (name: string) => findings.filter((f) => f.includes(`${namespace}/${name}`));
    expect(findings.filter((f) => !f.includes(`${namespace}/`))).toEqual([]);
    expect(of('unplaceable-platform')).toEqual([
      expect.stringMatching(/^Pod broken-placement\/unplaceable-platform-\S+ \(Deployment broken-placement\/unplaceable-platform\) is not bound: PodScheduled False Unschedulable: .*Insufficient memory/),
    ]);
    expect(of('unplaceable-gpu-agent')).toEqual([
      ...gpuNodes.map(() => expect.stringMatching(/^Pod broken-placement\/unplaceable-gpu-agent-\S+ \(DaemonSet broken-placement\/unplaceable-gpu-agent\) is not bound: PodScheduled False Unschedulable: .*Insufficient nvidia\.com\/gpu/)),
      expect.stringMatching(new RegExp(`^DaemonSet broken-placement/unplaceable-gpu-agent must run on every GPU worker, but runs on 0 of ${gpuNodes.length}`)),
    ]);
    expect(of('platform-on-gpu-worker')).toEqual([
      expect.stringMatching(/^Pod broken-placement\/platform-on-gpu-worker-\S+ \(Deployment broken-placement\/platform-on-gpu-worker\) belongs on the service node, but is bound to /),
    ]);

    // a sample whose pod no node can hold, as its controller would create it once Kueue admits the sample
    const job = {
      apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'unplaceable-sample', namespace }, spec: { suspend: true, template: { spec: { restartPolicy: 'Never', ...resources({ [RESOURCES.gpu]: gpus }) } } },
    };
    await client.apply(job, { fieldManager: 'test' });
    expect((await placeSamples(client, new ClusterIndex(t.view), [job as Manifest], t.nodes!)).findings).toEqual([
      expect.stringMatching(/^Pod broken-placement\/unplaceable-sample-pod-0 \(Job broken-placement\/unplaceable-sample\) is not bound: PodScheduled False Unschedulable: .*Insufficient nvidia\.com\/gpu/),
    ]);
  });

  it('the identities: admin, the preflight identity reads nodes and no Secret, the tenant only its namespaces', async () => {
    const t = reference();
    const cp = t.cp!;
    const statusOf = async (identity: string, p: string) => (await cp.client(identity).request('GET', p)).status;
    expect(await statusOf('admin', '/api/v1/secrets')).toBe(200);
    expect(await statusOf('preflight', '/api/v1/nodes')).toBe(200);
    expect(await statusOf('preflight', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')).toBe(200);
    expect(await statusOf('preflight', '/api/v1/secrets')).toBe(403);
    expect((await cp.client('preflight').request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } } })).status).toBe(403);
    const tenant = t.view.model!.tenants[0];
    const other = t.view.model!.tenants.find((x) => x.namespace !== tenant.namespace);
    expect(await statusOf('tenant', `/api/v1/namespaces/${tenant.namespace}/pods`)).toBe(200);
    if (other) expect(await statusOf('tenant', `/api/v1/namespaces/${other.namespace}/pods`)).toBe(403);
    expect(await statusOf('tenant', '/api/v1/nodes')).toBe(403);
    await expect(cp.client('tenant').create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-made' } })).rejects.toBeInstanceOf(ApiError);
  });
});
