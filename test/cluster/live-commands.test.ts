import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { describedNodes, registerNodes } from './described-nodes';
import { documentedClusterRole } from './documented-rbac';
import { defaultCacheDir } from '../../src/cache/compiled-cache';
import { ClusterView, readClusters, renderClusterSources } from '../../src/check';
import { EXIT, main } from '../../src/cli';
import { EngineBudget } from '../../src/engines';
import { ClusterModel } from '../../src/model/model';
import { MAX_NODES } from '../../src/model/schema-types';
import { DEFAULT_SCHEMAS, DEFAULT_UPSTREAM } from '../../src/paths';
import { clusterSource, readClusterState } from '../../src/preflight/command';
import { BUILT_IN_RESOURCES, PREFLIGHT_CLUSTER_ROLE } from '../../src/preflight/reads';
import { loadModels } from '../../src/synth/pipeline';
import { applySteps, planSync, refusalText, SyncPlan, vendoredCrds } from '../../src/twin/argocd-sync';
import { controlPlaneBinary } from '../../src/twin/binary';
import { nodesFromCluster } from '../../src/twin/cluster-nodes';
import { bindClusterRole, ControlPlane, startControlPlane } from '../../src/twin/control-plane';
import { RenderSession } from '../../src/upstream/render-session';
import { VerifyFinding } from '../../src/verify/dry-run';
import { runMain } from '../helpers';
import { REFERENCE_FILE } from '../paths';

/*
 * The commands that read or dry-run a live cluster (preflight, init, verify) against the hermetic control plane
 * (test/cluster/README.md), each as the identity the docs give it: the reference cluster's render, applied as Argo CD
 * applies it, is what they read and verify. One control plane for the file; the API server's audit log says which
 * requests each identity made.
 */

const VERIFY_ROLE = 'gpu-cluster-manifests-verify';
const VERIFY_GROUP = 'gpu-cluster-manifests:verify';

const work = mkdtempSync(path.join(tmpdir(), 'live-commands-'));
const dist = path.join(work, 'dist');
const auditLog = path.join(work, 'audit.log');
let cp: ControlPlane;
let view: ClusterView;
let model: ClusterModel;
let plan: SyncPlan;

/** The CLI in this process: exit code, stdout and stderr lines. */
const cli = runMain;

interface VerifyReport {
  readonly counts: Record<string, number>;
  readonly errors: number;
  readonly findings: VerifyFinding[];
}

/** verify of a rendered cluster folder as the verify identity, its JSON report. */
async function verify(dir: string): Promise<{ code: number; report: VerifyReport; err: string[] }> {
  const r = await cli('verify', dir, '--kubeconfig', cp.identities.verify.kubeconfig, '--format', 'json');
  if (r.code === EXIT.badInput) throw new Error(`verify exited 2: ${r.err.join('\n')}`);
  return { code: r.code, report: JSON.parse(r.out.join('\n')), err: r.err };
}

beforeAll(async () => {
  await controlPlaneBinary();
  expect(await main(['synth', '--config', REFERENCE_FILE, '--out', dist, '--quiet'])).toBe(EXIT.ok);
  [model] = loadModels([REFERENCE_FILE]);
  view = { ...readClusters(dist).find((c) => c.name === model.name)!, model };
  // every request of the command identities, at the metadata level
  const policy = path.join(work, 'audit-policy.yaml');
  writeFileSync(policy, stringify({
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [{ level: 'Metadata', users: ['preflight', 'verify'] }, { level: 'None' }],
  }));
  cp = await startControlPlane({
    identities: {
      tenant: { user: 'tenant', groups: [model.tenants[0].group] },
      verify: { user: 'verify', groups: [VERIFY_GROUP] },
    },
    apiserverArgs: [`--audit-policy-file=${policy}`, `--audit-log-path=${auditLog}`],
  });
  const admin = cp.client();
  // the verify identity: the ClusterRole docs/commands.md gives, bound to its group
  await bindClusterRole(admin, VERIFY_ROLE, documentedClusterRole(VERIFY_ROLE), VERIFY_GROUP, 'test');
  // what the cluster has before Argo CD: the pre-installed add-ons' CRDs, the namespaces nothing of the tree creates
  const session = new RenderSession(defaultCacheDir(), new EngineBudget());
  const renders = await renderClusterSources(view, { upstream: DEFAULT_UPSTREAM, session, reruns: false });
  plan = planSync(view, renders, vendoredCrds(DEFAULT_SCHEMAS), await admin.servedKinds(), { tracking: true });
  const preinstalled = await applySteps(admin, plan.steps.filter((s) => s.manager === 'pre-installed'));
  expect(preinstalled.refused.map(refusalText)).toEqual([]);
}, 30 * 60 * 1000);

afterAll(async () => {
  if (process.env.CLUSTER_TEST_TIMINGS === '1' && cp) process.stderr.write(`live-commands: control plane CPU s ${JSON.stringify(cp.cpuSeconds())}; this process ${JSON.stringify(process.cpuUsage())}\n`);
  await cp?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** The audit log's events of a user: verb, request URI, response code. */
function audited(user: string): { verb: string; requestURI: string; code: number }[] {
  return readFileSync(auditLog, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l))
    .filter((e) => e.user?.username === user && e.stage === 'ResponseComplete')
    .map((e) => ({ verb: e.verb, requestURI: e.requestURI, code: e.responseStatus?.code }));
}

describe('verify: the rendered cluster dry-run against the live one as Argo CD syncs it', () => {
  const clusterDir = () => path.join(dist, model.name);

  it('before Argo CD: nothing refused; what the bootstrap\'s CRDs and the render\'s namespaces bring is named with the bootstrap or its wave; nothing persists', async () => {
    const { code, report } = await verify(clusterDir());
    expect(report.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(code).toBe(EXIT.ok);
    // Argo CD's own kinds: their CRDs come with the bootstrap's argocd folder
    const pending = report.findings.filter((f) => f.type === 'crd-pending');
    expect(pending.length).toBeGreaterThan(0);
    expect(pending.filter((f) => !f.apiVersion.startsWith('argoproj.io/'))).toEqual([]);
    for (const f of pending) expect(f.message).toMatch(/its CRD arrives with the bootstrap \(kubectl apply --server-side -k \S+\/argocd\), which applies it first$/);
    // the root Application, applied by hand, is verified too (here: after Argo CD's CRDs)
    expect(pending.map((f) => f.object)).toContain(`Application argocd/${model.name}`);
    expect(report.findings.filter((f) => f.type === 'namespace-pending').length).toBeGreaterThan(0);
    expect(report.counts.created).toBeGreaterThan(0);
    // a dry run: the objects it was sent are not there
    const admin = cp.client();
    expect(await admin.get('/apis/storage.k8s.io/v1/storageclasses')).toMatchObject({ items: [] });
    // every write of the verify identity was a dry run
    const writes = audited('verify').filter((e) => e.verb !== 'get' && e.verb !== 'list');
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.filter((e) => !e.requestURI.includes('dryRun=All'))).toEqual([]);
    // as Argo CD sends them: server-side applies as argocd-controller (every child Application has ServerSideApply=true),
    // and never a fieldValidation from Argo CD (gitops-engine v3.5.1 sets none); only what the bootstrap's kubectl
    // applies goes with kubectl's Strict
    const byArgo = writes.filter((e) => e.requestURI.includes('fieldManager=argocd-controller'));
    expect(byArgo.filter((e) => e.verb === 'patch').length).toBeGreaterThan(0);
    expect(byArgo.filter((e) => e.requestURI.includes('fieldValidation'))).toEqual([]);
    expect(writes.filter((e) => e.requestURI.includes('fieldValidation') && !/fieldManager=kubectl(-client-side-apply)?&/.test(e.requestURI))).toEqual([]);
  });

  it('once Argo CD has synced it: every object accepted and unchanged (no drift)', async () => {
    const report = await applySteps(cp.client(), plan.steps.filter((s) => s.manager !== 'pre-installed'));
    expect(report.refused.map(refusalText)).toEqual([]);
    const r = await verify(clusterDir());
    // what the API server advises (info): Argo CD's own finalizer name on an Application it creates (the one applied by hand)
    const advice = r.report.findings.filter((f) => f.type === 'server-warning' && f.severity === 'info');
    for (const f of advice) expect(f).toMatchObject({ apiVersion: 'argoproj.io/v1alpha1', warnings: [expect.stringMatching(/^metadata\.finalizers: "resources-finalizer\.argocd\.argoproj\.io": prefer a domain-qualified finalizer name/)] });
    expect(r.report.findings.filter((f) => !advice.includes(f))).toEqual([]);
    expect(r.code).toBe(EXIT.ok);
    expect(r.report.counts).toMatchObject({ refused: 0, pending: 0, changed: 0 });
    expect(r.report.counts.unchanged).toBeGreaterThan(r.report.counts.checked / 2);
  });

  it('a broken render: an invalid custom resource, an immutable change, a CRD that comes only after its object or in its wave, an unknown field applied server-side; one line each, exit 1; an unknown field applied client-side warned', async () => {
    const broken = path.join(work, 'broken', model.name);
    cpSync(clusterDir(), broken, { recursive: true });
    const edit = (rel: string, fn: (o: any) => void) => {
      const file = path.join(broken, rel);
      const o = parse(readFileSync(file, 'utf8'));
      fn(o);
      writeFileSync(file, stringify(o));
    };
    const add = (folder: string, name: string, o: object) => {
      writeFileSync(path.join(broken, folder, name), stringify(o));
      appendFileSync(path.join(broken, folder, 'kustomization.yaml'), `  - ${name}\n`);
    };
    const app = (folder: string) => view.folders.find((f) => f.folder === 'gitops')!.objects
      .find((o) => o.kind === 'Application' && (o.spec as { source?: { path?: string } }).source?.path?.endsWith(`/${folder}`))!;
    const wave = (folder: string) => app(folder).metadata.annotations?.['argocd.argoproj.io/sync-wave'] ?? '0';
    const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const queue = view.folders.find((f) => f.folder === 'kueue')!.objects.find((o) => o.kind === 'ClusterQueue')!;
    edit(`kueue/clusterqueue.${queue.metadata.name}.yaml`, (o) => { o.spec.queueingStrategy = 'Sideways'; });
    const sc = view.folders.find((f) => f.folder === 'storage')!.objects.find((o) => o.kind === 'StorageClass')!;
    edit(`storage/storageclass.${sc.metadata.name}.yaml`, (o) => { o.parameters = { ...o.parameters, changed: 'yes' }; });
    const crd = (kind: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${kind.toLowerCase()}s.example.com` },
      spec: {
        group: 'example.com',
        names: { kind, plural: `${kind.toLowerCase()}s`, singular: kind.toLowerCase(), listKind: `${kind}List` },
        scope: 'Cluster',
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { 'type': 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    // Widget: its CRD in storage (wave 1), the object in samples (wave 3); Gadget the other way round
    add('storage', 'crd.widgets.yaml', crd('Widget'));
    add('samples', 'widget.yaml', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } });
    add('samples', 'crd.gadgets.yaml', crd('Gadget'));
    add('storage', 'gadget.yaml', { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g' } });
    // Sprocket: its CRD in storage, the object in kueue, the same wave: the race, an error even though kueue's Application
    // retries (crd-order's rule: both sync at once; the retry syncs it at best)
    expect(wave('kueue')).toBe(wave('storage'));
    expect((app('kueue').spec as { syncPolicy?: { retry?: object } }).syncPolicy?.retry).toBeDefined();
    add('storage', 'crd.sprockets.yaml', crd('Sprocket'));
    add('kueue', 'sprocket.yaml', { apiVersion: 'example.com/v1', kind: 'Sprocket', metadata: { name: 's' } });
    // an unknown field: Argo CD's client-side apply sends no fieldValidation, so the server drops it with a warning (the
    // kueue Application edited by hand to apply client-side: every rendered child applies server-side)
    const lq = view.folders.find((f) => f.folder === 'kueue')!.objects.find((o) => o.kind === 'LocalQueue')!;
    edit(`kueue/localqueue.${lq.metadata.namespace}.${lq.metadata.name}.yaml`, (o) => { o.spec.sideways = true; });
    edit(`gitops/application.${app('kueue').metadata.namespace}.${app('kueue').metadata.name}.yaml`, (o) => {
      o.spec.syncPolicy.syncOptions = o.spec.syncPolicy.syncOptions.filter((x: string) => x !== 'ServerSideApply=true');
    });
    // where Argo CD applies server-side (ServerSideApply=true) no fieldValidation either, but the API server refuses
    // an unknown field of a server-side apply whatever the fieldValidation: that sync fails
    edit('argocd/configmap.argocd.argocd-cm.yaml', (o) => { o.sideways = true; });

    const r = await cli('verify', broken, '--kubeconfig', cp.identities.verify.kubeconfig);
    expect(r.code, r.err.join('\n')).toBe(EXIT.failed);
    const [storage, samples, kueue] = ['storage', 'samples', 'kueue'].map((f) => `${app(f).metadata.name} (wave ${wave(f)})`);
    const [storageRe, kueueRe] = [storage, kueue].map(esc);
    expect(r.err).toHaveLength(5);
    expect(r.err).toEqual(expect.arrayContaining([
      expect.stringMatching(new RegExp(`^error: ${kueueRe}: Sprocket s: its CRD arrives with wave ${wave('storage')} `
        + `\\(Application ${esc(app('storage').metadata.name)}\\), the same sync wave: .*Argo CD's retry .*give it a later sync wave`)),
      expect.stringMatching(/^error: \S+-argocd \(bootstrap\): ConfigMap argocd\/argocd-cm: refused \(HTTP 500\): .*\.sideways: field not declared in schema$/),
      expect.stringMatching(new RegExp(`^error: ${kueueRe}: ClusterQueue ${queue.metadata.name}: refused \\(HTTP 422 Invalid\\): .*spec\\.queueingStrategy: Unsupported value: "Sideways"`)),
      expect.stringMatching(new RegExp(`^error: ${storageRe}: Gadget g: its CRD arrives only in wave ${wave('samples')} \\(Application ${app('samples').metadata.name}\\)`)),
      expect.stringMatching(new RegExp(`^error: ${storageRe}: StorageClass ${sc.metadata.name}: refused \\(HTTP 422 Invalid\\): .*parameters: Invalid value: .*field is immutable`)),
    ]));
    expect(r.out).toContainEqual(expect.stringMatching(new RegExp(`^not verified yet: \\d+ object\\(s\\) whose CRD or namespace .*\\d+ after wave ${wave('storage')} \\(Application ${esc(app('storage').metadata.name)}\\)`)));
    const verbose = await cli('verify', broken, '--kubeconfig', cp.identities.verify.kubeconfig, '--verbose');
    expect(verbose.out).toContainEqual(`info: ${samples}: Widget w: not verified yet: its CRD arrives with wave ${wave('storage')} (Application ${app('storage').metadata.name}), which syncs before it`);
    expect(r.out).toContainEqual(expect.stringMatching(new RegExp(`^warning: ${kueueRe}: LocalQueue ${esc(`${lq.metadata.namespace}/${lq.metadata.name}`)}: `
      + 'accepted with a warning of the API server, as Argo CD \\(client-side apply\\) applies it .*unknown field "spec\\.sideways"')));
    expect(r.out.filter((l) => !l.startsWith('info: ') && !l.startsWith('warning: ') && !l.startsWith('REFUSED: ') && !l.startsWith('not verified yet: '))).toEqual([]);
    expect(r.out.filter((l) => l.startsWith('warning: '))).toHaveLength(1);
    expect(r.out.filter((l) => l.startsWith('info: ') && l.includes('the API server warns'))).toEqual(r.out.filter((l) => l.includes('prefer a domain-qualified finalizer name')));
  });

  it('an identity without the write verbs (the preflight one): exit 2, one line naming what verify needs', async () => {
    const r = await cli('verify', clusterDir(), '--kubeconfig', cp.identities.preflight.kubeconfig);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(/user "preflight" may not do it .*verify needs (get|create|patch) on [a-z]+: docs\/commands\.md#verify gives the ClusterRole/);
  });
});

describe('preflight and init live, as the read-only identity the docs give', () => {
  it('the documented ClusterRole allows get and list on exactly what preflight reads, and nothing else: no Secret, no write', async () => {
    const admin = cp.client();
    const can = async (verb: string, group: string, resource: string) => {
      const review = await admin.call('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'preflight', groups: [cp.identities.preflight.groups[0]], resourceAttributes: { verb, group, resource } } },
      });
      return (review.status as { allowed: boolean }).allowed;
    };
    for (const r of BUILT_IN_RESOURCES) {
      for (const verb of ['get', 'list']) expect(await can(verb, r.group, r.plural), `${verb} ${r.plural}`).toBe(true);
      for (const verb of ['create', 'update', 'patch', 'delete', 'watch']) expect(await can(verb, r.group, r.plural), `${verb} ${r.plural}`).toBe(false);
    }
    for (const verb of ['get', 'list', 'watch']) expect(await can(verb, '', 'secrets'), `${verb} secrets`).toBe(false);
    // and the server refuses the read itself
    expect((await cp.client('preflight').request('GET', '/api/v1/secrets')).status).toBe(403);
    expect((await cp.client('preflight').request('GET', '/api/v1/namespaces/kube-system/secrets/anything')).status).toBe(403);
    expect(documentedClusterRole(PREFLIGHT_CLUSTER_ROLE).flatMap((r) => r.verbs).every((v) => v === 'get' || v === 'list')).toBe(true);
  });

  it('against the synced reference cluster with Nodes from its description: preflight exits 0, init describes it as a snapshot of the same lists would', async () => {
    const earlier = audited('preflight').length;
    await registerNodes(cp, describedNodes(model));
    const kubeconfig = cp.identities.preflight.kubeconfig;
    const pre = await cli('preflight', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig, '--format', 'json');
    const report = JSON.parse(pre.out.join('\n'));
    expect(report.findings.filter((f: { severity: string }) => f.severity === 'error'), pre.err.join('\n')).toEqual([]);
    expect(pre.code).toBe(EXIT.ok);
    expect(report.source).toBe(cp.server);

    // init, with a bare --kubeconfig: $KUBECONFIG, as kubectl
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = kubeconfig;
    let live;
    try {
      live = await cli('init', '--kubeconfig', '--name', 'lab', '--out', '-');
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
    expect(live.code, live.err.join('\n')).toBe(EXIT.ok);
    expect(live.out.join('\n')).toContain(`count: ${model.description.nodes.gpuWorkers.count}`);
    expect(live.out.join('\n')).toContain(`gpusPerNode: ${model.description.nodes.gpuWorkers.gpusPerNode}`);
    // the same lists, read as kubectl get -o yaml would write them, give the same description
    const admin = cp.client();
    const served = await admin.servedKinds();
    const kindOf = (p: string) => [...served].find(([k, r]) => k.startsWith(`${apiVersionOf(p)}/`) && k.split('/').length === apiVersionOf(p).split('/').length + 1 && r.plural === p.split('/').pop())![0].split('/').pop()!;
    const lists = await Promise.all(audited('preflight').slice(earlier).filter((e) => e.verb === 'list').map((e) => e.requestURI.split('?')[0])
      .filter((p, i, all) => all.indexOf(p) === i)
      .map(async (p) => ({ apiVersion: 'v1', kind: 'List', items: (await admin.list(p)).map((o) => ({ ...o, apiVersion: apiVersionOf(p), kind: kindOf(p) })) })));
    const snapshot = path.join(work, 'snapshot.yaml');
    writeFileSync(snapshot, lists.map((l) => stringify(l)).join('---\n'));
    const snap = await cli('init', '--snapshot', snapshot, '--name', 'lab', '--out', '-');
    expect(snap.code, snap.err.join('\n')).toBe(EXIT.ok);
    const body = (lines: string[]) => lines.join('\n').split('\n').filter((l) => !l.startsWith('# Written by'));
    expect(body(live.out)).toEqual(body(snap.out));

    // what the read-only identity asked for preflight and init: lists only, each answered, never a Secret
    const requests = audited('preflight').slice(earlier);
    expect(requests.length).toBeGreaterThan(10);
    expect([...new Set(requests.map((e) => e.verb))]).toEqual(['list']);
    expect(requests.filter((e) => e.code !== 200 || e.requestURI.includes('/secrets'))).toEqual([]);
  });

  it('rehearse --kubeconfig: the twin\'s Nodes read live as init reads them (names, labels, taints, allocatable), before the binaries are looked for', async () => {
    const nodes = describedNodes(model);
    const registered = new Set((await cp.client().list('/api/v1/nodes')).map((n) => n.metadata.name));
    await registerNodes(cp, nodes.filter((n) => !registered.has(n.metadata.name)));
    const kubeconfig = cp.identities.preflight.kubeconfig;
    const state = await readClusterState(clusterSource({ kubeconfig }, 'rehearse'), [], MAX_NODES);
    const twin = nodesFromCluster(state, model);
    expect(twin.map((n) => [n.node.metadata.name, n.kind.role]).sort()).toEqual(nodes.map((n) => [n.metadata.name, n.metadata.name.startsWith('gpu-') ? 'gpu' : 'service']).sort());
    for (const n of nodes) {
      const t = twin.find((x) => x.node.metadata.name === n.metadata.name)!.node;
      expect(t.metadata.labels, n.metadata.name).toEqual(n.metadata.labels);
      expect(t.spec, n.metadata.name).toEqual(n.spec);
      expect(Object.keys(t.status?.allocatable ?? {}).sort(), n.metadata.name).toEqual(Object.keys(n.status.capacity).sort());
    }
    // the command: the live read passes, and the rehearsal stops at the (empty) binaries folder, exit 2
    const empty = mkdtempSync(path.join(work, 'binaries-'));
    const r = await cli('rehearse', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig, '--binaries', empty);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.err).toEqual([expect.stringMatching(/no executable control-plane/)]);
    const bad = await cli('rehearse', '--config', REFERENCE_FILE, '--kubeconfig', kubeconfig, '--context', 'no-such-context', '--binaries', empty);
    expect(bad.code).toBe(EXIT.badInput);
    expect(bad.err).toEqual([expect.stringMatching(/no-such-context/)]);
  });
});

/** The apiVersion of a list path (`/api/v1/nodes`: v1; `/apis/g/v/...`: g/v). */
function apiVersionOf(p: string): string {
  const parts = p.split('/').filter((x) => x !== '');
  return parts[0] === 'api' ? parts[1] : `${parts[1]}/${parts[2]}`;
}
